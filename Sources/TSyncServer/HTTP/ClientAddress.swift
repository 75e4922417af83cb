import NIOCore

/// The address a request comes from, as used for login throttling and the request log.
///
/// Behind a reverse proxy every TCP connection comes from the proxy, so throttling by the peer
/// address would let five failed logins from anyone block everyone. For a peer that is a trusted
/// proxy, the client is therefore taken from `X-Forwarded-For`: the rightmost entry that is not
/// itself a trusted proxy. Each proxy appends the address it received the request from, so the
/// entries right of (and including) that one were written by proxies we trust, while anything to
/// its left came from the client and may be forged. For any other peer the header is ignored:
/// otherwise a client could escape the limit by sending a different header with each guess.
/// A header that cannot be read falls back to the peer address, the one address that cannot lie.
enum ClientAddress {
    /// `peer`: the TCP peer's address. `forwardedFor`: every `X-Forwarded-For` field value, in the
    /// order received. `trusted`: proxy addresses in `canonical(_:)` form.
    static func resolve(peer: String?, forwardedFor: [String], trusted: Set<String>) -> String? {
        guard let peer, isTrustedProxy(peer, trusted: trusted) else { return peer }
        return forwarded(by: peer, forwardedFor, trusted: trusted)
    }

    /// Whether `peer` is one of the `trusted` proxies. With none trusted (most servers) the
    /// peer's address is not parsed to be looked up.
    static func isTrustedProxy(_ peer: String?, trusted: Set<String>) -> Bool {
        guard let peer, !trusted.isEmpty else { return false }
        return trusted.contains(canonical(peer) ?? peer)
    }

    /// `resolve` for a `peer` known to be a trusted proxy.
    static func forwarded(by peer: String, _ forwardedFor: [String], trusted: Set<String>) -> String {
        guard !forwardedFor.isEmpty else { return peer }
        let entries = forwardedFor.joined(separator: ",").split(separator: ",", omittingEmptySubsequences: false)
        var furthest: String?
        for entry in entries.reversed() {
            guard let address = canonical(entry.trimmingSpaces) else { return peer }
            if !trusted.contains(address) { return address }
            furthest = address
        }
        // Every hop is a trusted proxy: the leftmost is as far back as anyone can tell.
        return furthest ?? peer
    }

    /// The address in the form the system prints it (`::1` for `0:0:0:0:0:0:0:1`), so one address
    /// is one throttling key however it was written; nil for anything that is not an IPv4 or IPv6
    /// address. IPv6 may be in brackets (`[::1]`), as some proxies write it.
    static func canonical(_ text: some StringProtocol) -> String? {
        var text = Substring(text)
        if text.hasPrefix("[") && text.hasSuffix("]") { text = text.dropFirst().dropLast() }
        guard !text.isEmpty, let address = try? SocketAddress(ipAddress: String(text), port: 0) else { return nil }
        return address.ipAddress
    }

    /// The key a client's shares are counted under (docs/DESIGN.md §10.1): an IPv4 address itself
    /// (an IPv4-mapped IPv6 address as IPv4), an IPv6 address by its /64, the block one subscriber
    /// is usually given whole. Anything unreadable counts as itself.
    static func shareKey(_ text: String) -> String {
        guard let address = try? SocketAddress(ipAddress: text, port: 0) else { return text }
        guard case .v6(let v6) = address else { return address.ipAddress ?? text }
        let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
            return bytes[12...].map(String.init).joined(separator: ".")
        }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = firstIndex(where: { !isSpace($0) }), let end = lastIndex(where: { !isSpace($0) }) else { return "" }
        return self[start...end]
    }
}
