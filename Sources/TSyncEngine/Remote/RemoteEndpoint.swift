import Foundation
import NIOHTTP1
import TSyncModel

/// A server's base URL, checked once so that every request URL built from it is well formed.
package struct RemoteEndpoint: Sendable, Equatable, CustomStringConvertible {
    /// Scheme, host, port and any path prefix, without a trailing slash.
    package let base: String

    /// Parses a server URL, `http://HOST[:PORT][/PATH]` or `https://…`; anything else is a usage error.
    package init(_ text: String) throws(TSyncError) {
        var trimmed = text
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        let lower = trimmed.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else {
            throw .usage("invalid remote \(Identifiers.quoted(text)): it must start with http:// or https://")
        }
        let rest = trimmed.drop(while: { $0 != "/" }).dropFirst(2)
        guard let host = rest.split(separator: "/").first, !host.isEmpty,
            !trimmed.contains(where: { $0 == " " || $0 == "?" || $0 == "#" || $0.isNewline })
        else {
            throw .usage("invalid remote \(Identifiers.quoted(text)): expected http://HOST[:PORT][/PATH]")
        }
        base = trimmed
    }

    /// The base URL (`base`), as messages name the server.
    package var description: String { base }

    /// Whether what is sent travels unencrypted over a network: plain `http://` to a host that is
    /// not this machine (`localhost`, 127.0.0.0/8, `::1`).
    package var sendsInClear: Bool {
        guard base.lowercased().hasPrefix("http://") else { return false }
        var name = host.lowercased()
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name == "localhost" || name.hasSuffix(".localhost") || name == "::1" { return false }
        let octets = name.split(separator: ".", omittingEmptySubsequences: false)
        if octets.count == 4, octets.allSatisfy({ UInt8($0) != nil }), octets[0] == "127" { return false }
        return true
    }

    /// `scheme://host[:port]`, without any path prefix.
    var origin: String {
        let afterScheme = base.range(of: "://").map { base[$0.upperBound...] } ?? Substring(base)
        let host = afterScheme.prefix { $0 != "/" }
        return String(base[..<host.endIndex])
    }

    /// Whether the remote is spoken to over TLS.
    package var isHTTPS: Bool { base.lowercased().hasPrefix("https://") }

    /// The host name or address (an IPv6 address in brackets), without port or user.
    package var host: String {
        var authority = origin.drop(while: { $0 != "/" }).dropFirst(2)
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") { return String(authority[...close]) }
        return String(authority.prefix { $0 != ":" })
    }

    /// The port: the one in the URL, else the scheme's (443, 80).
    package var port: Int {
        var authority = origin.drop(while: { $0 != "/" }).dropFirst(2)
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") { authority = authority[authority.index(after: close)...] }
        if let colon = authority.lastIndex(of: ":"), let port = Int(authority[authority.index(after: colon)...]) { return port }
        return isHTTPS ? 443 : 80
    }

    /// The absolute URL of a `Link` target: a relative target (`/tables/x?...`) is resolved against
    /// the origin. A target on another origin is refused (nil), so a misbehaving server cannot make
    /// the client send its token elsewhere.
    func resolve(link: String) -> String? {
        if link.hasPrefix("/") { return origin + link }
        guard link.lowercased().hasPrefix(origin.lowercased()) else { return nil }
        let rest = link.dropFirst(origin.count)
        guard rest.isEmpty || rest.hasPrefix("/") || rest.hasPrefix("?") else { return nil }
        return link
    }

    /// The URL of the next page of `request` from the server's `Link` (`Page.nextLink`), checked
    /// before a pull without a query id follows it (docs/DESIGN.md §8): on this origin (so the
    /// token goes nowhere else), reading the same table, with the query that was asked. Only
    /// `$skip` and `$top` may change (and `$inlinecount`, which changes no record); a link to
    /// another table, or with another `$filter`, `$orderby`, `$select` or `__includeDeleted`,
    /// would store other records as this table's. `what` names the read in messages.
    func nextPage(link: String, of request: PageRequest, what: String) throws(TSyncError) -> String {
        guard let url = resolve(link: link) else {
            let scheme = { (text: String) in text.prefix { $0 != ":" }.lowercased() }
            let sameHost =
                link.contains("://") && RemoteEndpoint.hostAndPort(of: link).map { $0 == RemoteEndpoint.hostAndPort(of: base) } == true
            if sameHost, scheme(link) != scheme(base) {
                throw .failure(
                    "\(what): the server's next-page link is \(scheme(link))://, while the remote is \(scheme(base)):// (\(link)); refusing to follow it (a proxy that terminates TLS in front of tsync serve must be its --trusted-proxy, or pull with --query-id, which needs no link)"
                )
            }
            throw .failure("\(what): the server's next-page link points to another server (\(link)); refusing to follow it")
        }
        let rest = url.dropFirst(origin.count)
        let path = rest.prefix { $0 != "?" && $0 != "#" }
        let query = rest.dropFirst(path.count).drop { $0 == "?" }.prefix { $0 != "#" }
        let expected = self.url(path: ["tables", request.table]).dropFirst(origin.count)
        guard let asked = PercentEncoding.decode(expected), let linked = PercentEncoding.decode(path),
            asked.lowercased() == linked.lowercased()
        else {
            throw .failure(
                "\(what): the server's next-page link reads another table (\(link)); refusing to follow it, since its records would be stored as \(request.table)'s"
            )
        }
        let changing: Set<String> = ["$skip", "$top", "$inlinecount"]
        var given: [String: String] = [:]
        for pair in query.split(separator: "&") where !pair.isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = PercentEncoding.decode(parts[0], plus: true),
                let value = PercentEncoding.decode(parts.count > 1 ? parts[1] : "", plus: true),
                given.updateValue(value, forKey: name) == nil
            else {
                throw .failure("\(what): the server's next-page link has a query that cannot be read (\(link)); refusing to follow it")
            }
        }
        var wanted: [String: String] = [:]
        for (name, value) in request.queryItems { wanted[name] = value }
        let names = Set(given.keys).union(wanted.keys).subtracting(changing)
        if let name = names.sorted().first(where: { given[$0] != wanted[$0] }) {
            throw .failure(
                "\(what): the server's next-page link changes the query that was asked (\(name)) (\(link)); refusing to follow it, since its records would be stored as \(request.table)'s"
            )
        }
        return url
    }

    /// `host[:port]` of an absolute URL, lowercased, with the scheme's port made explicit.
    private static func hostAndPort(of url: String) -> String? {
        guard let endpoint = try? RemoteEndpoint(String(url.prefix { $0 != "?" && $0 != "#" })) else { return nil }
        return "\(endpoint.host.lowercased()):\(endpoint.port)"
    }

    /// `base/segment/segment?query`, each segment and query value percent-encoded.
    /// A first segment starting with "/" is taken verbatim (for `/.auth`).
    func url(path: [String], query: [(String, String)] = []) -> String {
        var url = base
        for segment in path {
            url += "/"
            url += segment.hasPrefix("/") ? String(segment.dropFirst()) : PercentEncoding.encode(segment)
        }
        if !query.isEmpty {
            url += "?" + query.map { PercentEncoding.encode($0.0) + "=" + PercentEncoding.encode($0.1) }.joined(separator: "&")
        }
        return url
    }
}

enum PercentEncoding {
    /// The text of `%XX`-encoded bytes (a `+` is a space when `plus`, as in a query), nil when the
    /// encoding or the UTF-8 is broken.
    static func decode(_ text: some StringProtocol, plus: Bool = false) -> String? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        func hex(_ byte: UInt8?) -> UInt8? {
            guard let byte, let value = UInt8(String(UnicodeScalar(byte)), radix: 16) else { return nil }
            return value
        }
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+") where plus: bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = hex(iterator.next()), let low = hex(iterator.next()) else { return nil }
                bytes.append(high << 4 | low)
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// RFC 3986 unreserved characters pass; everything else is %XX of its UTF-8 bytes.
    static func encode(_ text: String) -> String {
        var output = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                output.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                output += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return output
    }
}

/// Finds the `rel=next` target of a `Link` header (RFC 8288), as Mobile Apps servers send it.
enum LinkHeader {
    static func next(in headers: HTTPHeaders) -> String? {
        for value in headers["Link"] {
            // Every page of a pull has one; read through Foundation's trimming and lowercasing, it
            // was 2% of a clone's CPU. An ASCII value is read from its bytes, with the same result.
            if let target = value.utf8.allSatisfy({ $0 < 0x80 }) ? nextInASCII(value) : next(in: value) { return target }
        }
        return nil
    }

    /// The `rel=next` target of one value of the header; the general way, for any text.
    static func next(in value: String) -> String? {
        for link in value.split(separator: ",") {
            let parts = link.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let target = parts.first, target.hasPrefix("<"), target.hasSuffix(">") else { continue }
            let isNext = parts.dropFirst().contains { parameter in
                let lower = parameter.lowercased().replacingOccurrences(of: " ", with: "")
                return lower == "rel=next" || lower == "rel=\"next\""
            }
            if isNext { return String(target.dropFirst().dropLast()) }
        }
        return nil
    }

    /// The same for a value of ASCII bytes only, where a character is a byte (a CR LF pair is one
    /// character, but neither byte is one the reading looks for) and the white space trimmed is
    /// the space and the tab.
    static func nextInASCII(_ value: String) -> String? {
        let bytes = Array(value.utf8)
        func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        /// The pieces of `range` between `separator`s, empty ones left out (as `split` does), and
        /// then, when `trimmed`, each trimmed of blanks at both ends.
        func pieces(of range: Range<Int>, by separator: UInt8, trimmed: Bool) -> [Range<Int>] {
            var result: [Range<Int>] = []
            var start = range.lowerBound
            for index in range.lowerBound...range.upperBound where index == range.upperBound || bytes[index] == separator {
                if index > start {
                    var lower = start
                    var upper = index
                    while trimmed, lower < upper, isBlank(bytes[lower]) { lower += 1 }
                    while trimmed, upper > lower, isBlank(bytes[upper - 1]) { upper -= 1 }
                    result.append(lower..<upper)
                }
                start = index + 1
            }
            return result
        }
        /// `rel=next` or `rel="next"`, in any case, with spaces anywhere.
        func isNext(_ range: Range<Int>) -> Bool {
            let folded = bytes[range].lazy.filter { $0 != UInt8(ascii: " ") }.map { $0 | ($0 >= 65 && $0 <= 90 ? 0x20 : 0) }
            return folded.elementsEqual("rel=next".utf8) || folded.elementsEqual(#"rel="next""#.utf8)
        }
        for link in pieces(of: 0..<bytes.count, by: UInt8(ascii: ","), trimmed: false) {
            let parts = pieces(of: link, by: UInt8(ascii: ";"), trimmed: true)
            guard let target = parts.first, target.count >= 2, bytes[target.lowerBound] == UInt8(ascii: "<"),
                bytes[target.upperBound - 1] == UInt8(ascii: ">")
            else { continue }
            if parts.dropFirst().contains(where: isNext) {
                return String(decoding: bytes[(target.lowerBound + 1)..<(target.upperBound - 1)], as: UTF8.self)
            }
        }
        return nil
    }
}

/// An HTTP date (RFC 9110 §5.6.7), as `Date` carries it: `Sun, 06 Nov 1994 08:49:37 GMT`. The
/// obsolete forms are not read (nil), and neither is anything else.
enum HTTPDate {
    static func parse(_ value: String?) -> Timestamp? {
        guard let value else { return nil }
        let parts = value.split(separator: " ")
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard parts.count == 6, parts[0].hasSuffix(","), parts[5] == "GMT", parts[1].count == 2, parts[3].count == 4,
            let day = Int(parts[1]), let month = months.firstIndex(of: String(parts[2])), Int(parts[3]) != nil
        else { return nil }
        let time = parts[4].split(separator: ":")
        guard parts[4].count == 8, time.count == 3, time.allSatisfy({ Int($0) != nil }), day >= 1 else { return nil }
        let monthText = month < 9 ? "0\(month + 1)" : "\(month + 1)"
        return Timestamp(iso8601: "\(parts[3])-\(monthText)-\(parts[1])T\(parts[4])Z")
    }
}
