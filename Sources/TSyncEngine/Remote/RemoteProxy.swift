import Foundation
import TSyncModel

/// An HTTP proxy the requests to the remote go through. The client opens a `CONNECT` tunnel
/// through it to the server, for `https://` and `http://` remotes alike (that is how
/// AsyncHTTPClient speaks to a proxy), and sends `Proxy-Authorization: Basic` when the proxy URL
/// carries a user name.
package struct RemoteProxy: Sendable, Equatable, CustomStringConvertible {
    /// The proxy's host.
    package var host: String
    /// The proxy's port.
    package var port: Int
    /// The user for the proxy's Basic authentication, if it asks for one.
    package var username: String?
    /// The password for it.
    package var password: String?

    /// curl's default port for a proxy URL without one.
    package static let defaultPort = 1080

    /// A proxy at `host:port`, with credentials if it needs them.
    package init(host: String, port: Int, username: String? = nil, password: String? = nil) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
    }

    /// Parses `[http://][USER[:PASSWORD]@]HOST[:PORT][/]` as curl does (no scheme is http, no port
    /// is 1080, user and password percent-decoded). Other schemes (https, socks) are refused, not
    /// ignored: the user asked for a proxy and would otherwise go direct unawares. The message
    /// never repeats a password.
    package init(url text: String) throws(TSyncError) {
        var rest = Substring(text.trimmingCharacters(in: .whitespaces))
        if let range = rest.range(of: "://") {
            let scheme = rest[..<range.lowerBound].lowercased()
            guard scheme == "http" else {
                throw .usage("\(scheme):// proxies are not supported, only http:// ones")
            }
            rest = rest[range.upperBound...]
        }
        if let slash = rest.firstIndex(of: "/") {
            guard rest[slash...].allSatisfy({ $0 == "/" }) else { throw .usage("a proxy URL has no path") }
            rest = rest[..<slash]
        }
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let parts = userInfo.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            username = String(parts[0]).removingPercentEncoding ?? String(parts[0])
            password = parts.count > 1 ? (String(parts[1]).removingPercentEncoding ?? String(parts[1])) : ""
        }
        var host = rest
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw .usage("the proxy host \(rest) is not a valid address") }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty { throw .usage("the proxy host is not valid") }
        } else if let colon = rest.firstIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        }
        guard !host.isEmpty, !host.contains(where: { $0.isWhitespace || $0 == "@" }) else {
            throw .usage("a proxy URL needs a host: http://[USER:PASSWORD@]HOST[:PORT]")
        }
        self.host = String(host)
        if let portText {
            guard let port = Int(portText), (1...65535).contains(port) else {
                throw .usage("the proxy port \(portText) is not a port number (1-65535)")
            }
            self.port = port
        } else {
            port = Self.defaultPort
        }
    }

    /// `HOST:PORT`, never the credentials.
    package var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// Which proxy, if any, requests to a remote go through: one proxy per scheme of the remote, and
/// the hosts reached directly, with curl's rules (docs/DESIGN.md §3). The command line hands it the
/// process environment; the library reads none itself (§5).
public struct ProxySettings: Sendable, Equatable {
    /// For `http://` remotes.
    package var http: RemoteProxy?
    /// For `https://` remotes.
    package var https: RemoteProxy?
    /// `NO_PROXY` entries, lowercased, without leading and trailing dots.
    package var bypass: [String]

    /// No proxy at all.
    public static let direct = ProxySettings(http: nil, https: nil, noProxy: nil)

    /// The proxies to use for `http` and `https` URLs, and the hosts reached directly (`no_proxy`).
    package init(http: RemoteProxy?, https: RemoteProxy?, noProxy: String?) {
        self.http = http
        self.https = https
        bypass = Self.entries(noProxy ?? "")
    }

    /// The variables as curl reads them, each lowercase name before its uppercase one, an empty
    /// value as unset: `http_proxy` for http:// remotes (and `HTTP_PROXY`, except in a CGI
    /// program, where a request's `Proxy:` header arrives as `HTTP_PROXY`: httpoxy), `https_proxy`
    /// / `HTTPS_PROXY` for https:// ones, `all_proxy` / `ALL_PROXY` for either when its own is
    /// unset, and `no_proxy` / `NO_PROXY`.
    public init(environment: [String: String]) throws(TSyncError) {
        func value(_ names: [String]) -> (name: String, value: String)? {
            for name in names {
                if let value = environment[name], !value.trimmingCharacters(in: .whitespaces).isEmpty { return (name, value) }
            }
            return nil
        }
        func proxy(_ names: [String]) throws(TSyncError) -> RemoteProxy? {
            guard let (name, text) = value(names + ["all_proxy", "ALL_PROXY"]) else { return nil }
            do throws(TSyncError) {
                return try RemoteProxy(url: text)
            } catch {
                throw .usage("\(name) is not a usable proxy URL: \(error.message)")
            }
        }
        let isCGI = environment["REQUEST_METHOD"] != nil
        let http = try proxy(isCGI ? ["http_proxy"] : ["http_proxy", "HTTP_PROXY"])
        let https = try proxy(["https_proxy", "HTTPS_PROXY"])
        self.init(http: http, https: https, noProxy: value(["no_proxy", "NO_PROXY"])?.value)
    }

    /// The proxy for `endpoint`, nil to go direct.
    package func proxy(for endpoint: RemoteEndpoint) -> RemoteProxy? {
        guard let proxy = endpoint.isHTTPS ? https : http else { return nil }
        return bypasses(host: endpoint.host) ? nil : proxy
    }

    /// Whether `host` is reached directly: `*` matches every host; `example.com` and
    /// `.example.com` match example.com and every name under it; an address matches itself, and
    /// `ADDRESS/BITS` every address in that block (IPv4 or IPv6). Loopback is not special: as
    /// with curl, 127.0.0.1 goes through the proxy unless listed.
    package func bypasses(host: String) -> Bool {
        var name = host.lowercased()
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        while name.hasSuffix(".") { name.removeLast() }
        let address = IPAddress(name)
        for entry in bypass {
            if entry == "*" { return true }
            if let address {
                if let (block, bits) = IPAddress.block(entry), address.isIn(block, bits: bits) { return true }
            } else if name == entry || name.hasSuffix("." + entry) {
                return true
            }
        }
        return false
    }

    private static func entries(_ text: String) -> [String] {
        text.split(whereSeparator: { $0 == "," || $0.isWhitespace }).compactMap { raw in
            var entry = raw.lowercased()
            if entry.hasPrefix("["), let close = entry.firstIndex(of: "]") {
                entry = String(entry[entry.index(after: entry.startIndex)..<close]) + entry[entry.index(after: close)...]
            }
            while entry.hasPrefix(".") { entry.removeFirst() }
            while entry.hasSuffix(".") { entry.removeLast() }
            return entry.isEmpty ? nil : entry
        }
    }
}

/// An IPv4 or IPv6 address as bytes, for `NO_PROXY` blocks.
private struct IPAddress {
    var bytes: [UInt8]

    init?(_ text: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            bytes = withUnsafeBytes(of: &v6) { Array($0) }
            return
        }
        return nil
    }

    /// `ADDRESS` (all its bits) or `ADDRESS/BITS`; nil for a host name.
    static func block(_ entry: String) -> (IPAddress, Int)? {
        let parts = entry.split(separator: "/", maxSplits: 1)
        guard let first = parts.first, let address = IPAddress(String(first)) else { return nil }
        guard parts.count == 2 else { return (address, address.bytes.count * 8) }
        guard let bits = Int(parts[1]), (0...(address.bytes.count * 8)).contains(bits) else { return nil }
        return (address, bits)
    }

    func isIn(_ block: IPAddress, bits: Int) -> Bool {
        guard block.bytes.count == bytes.count else { return false }
        for index in 0..<bytes.count {
            let remaining = bits - index * 8
            if remaining <= 0 { return true }
            let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
            if bytes[index] & mask != block.bytes[index] & mask { return false }
        }
        return true
    }
}
