import Foundation
import NIOHTTP1
import TSyncModel

/// A server's base URL, checked once so that every request URL built from it is well formed.
public struct RemoteEndpoint: Sendable, Equatable, CustomStringConvertible {
    /// Scheme, host, port and any path prefix, without a trailing slash.
    public let base: String

    /// Parses a server URL, `http://HOST[:PORT][/PATH]` or `https://…`; anything else is a usage error.
    public init(_ text: String) throws(TSyncError) {
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
    public var description: String { base }

    /// Whether what is sent travels unencrypted over a network: plain `http://` to a host that is
    /// not this machine (`localhost`, 127.0.0.0/8, `::1`).
    public var sendsInClear: Bool {
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
    public var isHTTPS: Bool { base.lowercased().hasPrefix("https://") }

    /// The host name or address (an IPv6 address in brackets), without port or user.
    public var host: String {
        var authority = origin.drop(while: { $0 != "/" }).dropFirst(2)
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") { return String(authority[...close]) }
        return String(authority.prefix { $0 != ":" })
    }

    /// The port: the one in the URL, else the scheme's (443, 80).
    public var port: Int {
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
            for link in value.split(separator: ",") {
                let parts = link.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
                guard let target = parts.first, target.hasPrefix("<"), target.hasSuffix(">") else { continue }
                let isNext = parts.dropFirst().contains { parameter in
                    let lower = parameter.lowercased().replacingOccurrences(of: " ", with: "")
                    return lower == "rel=next" || lower == "rel=\"next\""
                }
                if isNext { return String(target.dropFirst().dropLast()) }
            }
        }
        return nil
    }
}
