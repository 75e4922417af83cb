import Logging
import Testing
import TSyncModel
@testable import TSyncServer

/// Which address login throttling counts behind a reverse proxy (`--trusted-proxy`).
@Suite struct ClientAddressTests {
    static let alice = ("alice", "correct horse")

    /// Three failed logins per address, a minute's window; every guess uses its own account name so
    /// only the per-address limit can refuse.
    static func throttlingConfiguration(trustedProxies: Set<String>) -> ServerConfiguration {
        var configuration = ServerConfiguration(trustedProxies: trustedProxies)
        configuration.authentication.maximumFailures = 3
        configuration.authentication.failureWindow = .seconds(60)
        return configuration
    }

    static func login(_ http: TestHTTP, _ name: String, _ password: String, from forwardedFor: String) async throws -> Reply {
        try await http.post(
            "/.auth/login/custom", ["username": .string(name), "password": .string(password)],
            headers: ["X-Forwarded-For": forwardedFor])
    }

    @Test func behindATrustedProxyEachForwardedClientHasItsOwnLimit() async throws {
        let sink = CapturingLogHandler.Sink()
        let logger = Logger(label: "capture", factory: { _ in CapturingLogHandler(sink: sink) })
        let configuration = Self.throttlingConfiguration(trustedProxies: ["127.0.0.1"])
        try await withTestServer(configuration, accounts: [Self.alice], logger: logger) { http in
            for name in ["u1", "u2", "u3"] {
                #expect(try await Self.login(http, name, "guess123", from: "10.0.0.1").status == 401)
            }
            #expect(try await Self.login(http, "u4", "guess123", from: "10.0.0.1").status == 429)
            #expect(try await Self.login(http, "alice", "correct horse", from: "10.0.0.1").status == 429)
            // A proxy that appends its own peer: the forged left entry does not matter.
            #expect(try await Self.login(http, "alice", "correct horse", from: "10.0.0.1, 10.0.0.2").status == 200)
            #expect(try await Self.login(http, "alice", "correct horse", from: "10.0.0.2").status == 200)
            // Counted under the forwarded clients, never under the proxy.
            let addressKeys = try await http.storedStrings("SELECT key FROM tsync_login_attempts WHERE key LIKE 'address:%' ORDER BY key")
            #expect(addressKeys == ["address:10.0.0.1", "address:10.0.0.2"])
            #expect(sink.all.contains { $0.contains("10.0.0.2 POST /.auth/login/custom 200") })
        }
    }

    @Test func withoutATrustedProxyForwardedForCannotEscapeTheLimit() async throws {
        let configuration = Self.throttlingConfiguration(trustedProxies: [])
        try await withTestServer(configuration, accounts: [Self.alice]) { http in
            for (index, name) in ["u1", "u2", "u3"].enumerated() {
                #expect(try await Self.login(http, name, "guess123", from: "10.0.0.\(index + 1)").status == 401)
            }
            #expect(try await Self.login(http, "alice", "correct horse", from: "10.0.0.9").status == 429)
            let addressKeys = try await http.storedStrings("SELECT key FROM tsync_login_attempts WHERE key LIKE 'address:%'")
            #expect(addressKeys == ["address:127.0.0.1"])
        }
    }

    @Test func theRightmostUntrustedAddressIsTheClient() {
        let proxy: Set<String> = ["192.0.2.1"]
        #expect(ClientAddress.resolve(peer: "192.0.2.1", forwardedFor: ["10.0.0.1"], trusted: proxy) == "10.0.0.1")
        // The client wrote "6.6.6.6" itself; the proxy appended the address it saw.
        #expect(ClientAddress.resolve(peer: "192.0.2.1", forwardedFor: ["6.6.6.6, 10.0.0.1"], trusted: proxy) == "10.0.0.1")
        // Several header fields are one list, in order.
        #expect(ClientAddress.resolve(peer: "192.0.2.1", forwardedFor: ["6.6.6.6", "10.0.0.1"], trusted: proxy) == "10.0.0.1")
        #expect(ClientAddress.resolve(peer: "192.0.2.1", forwardedFor: [], trusted: proxy) == "192.0.2.1")
        #expect(ClientAddress.resolve(peer: nil, forwardedFor: ["10.0.0.1"], trusted: proxy) == nil)
    }

    @Test func chainsOfTrustedProxiesAreSkipped() {
        let proxies: Set<String> = ["192.0.2.1", "192.0.2.2"]
        #expect(
            ClientAddress.resolve(peer: "192.0.2.1", forwardedFor: ["6.6.6.6, 10.0.0.1,192.0.2.2"], trusted: proxies) == "10.0.0.1")
        // Only trusted hops: the leftmost is as far back as can be told.
        #expect(ClientAddress.resolve(peer: "192.0.2.1", forwardedFor: ["192.0.2.2, 192.0.2.1"], trusted: proxies) == "192.0.2.2")
    }

    @Test func anUntrustedPeerIsTheClientWhateverItSends() {
        #expect(ClientAddress.resolve(peer: "203.0.113.7", forwardedFor: ["10.0.0.1"], trusted: ["192.0.2.1"]) == "203.0.113.7")
        #expect(ClientAddress.resolve(peer: "203.0.113.7", forwardedFor: ["10.0.0.1"], trusted: []) == "203.0.113.7")
    }

    @Test func unreadableHeadersFallBackToThePeer() {
        let proxy: Set<String> = ["192.0.2.1"]
        for garbage in ["unknown", "", " , ", "10.0.0.1,", "10.0.0.1;drop", "10.0.0", "10.0.0.1:443", "999.0.0.1", "example.com"] {
            #expect(ClientAddress.resolve(peer: "192.0.2.1", forwardedFor: [garbage], trusted: proxy) == "192.0.2.1", "\(garbage)")
        }
        // Garbage left of the client is the client's own writing and does not matter.
        #expect(ClientAddress.resolve(peer: "192.0.2.1", forwardedFor: ["junk, 10.0.0.1"], trusted: proxy) == "10.0.0.1")
    }

    /// An address without `:` is its own read share without being parsed: as the general way
    /// finds, for the addresses a peer or a proxy gives and for garbage.
    @Test func readSharesOfPlainAddressesAreFoundAsInGeneral() {
        let addresses = [
            "127.0.0.1", "10.0.0.1", "999.0.0.1", "", "unknown", "::1", "2001:db8::1", "2001:DB8:0:0:1:2:3:4", "::ffff:10.0.0.1",
            "fe80::1%eth0", "[::1]", "2001:db8::g", "1:2", "10.0.0.1:443",
        ]
        for address in addresses {
            #expect(ServerRequestContext.network(address) == ServerRequestContext.networkInGeneral(address), "\(address)")
        }
        #expect(ServerRequestContext.network("2001:db8:1:2:3:4:5:6") == "2001:db8:1:2::/64")
    }

    @Test func ipv6AddressesAreCanonical() {
        let proxy: Set<String> = [ClientAddress.canonical("2001:db8:0:0:0:0:0:1") ?? ""]
        #expect(proxy == ["2001:db8::1"])
        #expect(ClientAddress.resolve(peer: "2001:db8::1", forwardedFor: ["2001:DB8:0::beef"], trusted: proxy) == "2001:db8::beef")
        #expect(
            ClientAddress.resolve(peer: "2001:db8::1", forwardedFor: ["[2001:db8::beef], 2001:db8::1"], trusted: proxy) == "2001:db8::beef")
        #expect(ClientAddress.resolve(peer: "2001:db8::1", forwardedFor: ["2001:db8::g"], trusted: proxy) == "2001:db8::1")
        #expect(ClientAddress.canonical("::1") == "::1")
        #expect(ClientAddress.canonical("10.0.0.1") == "10.0.0.1")
    }

    @Test func trustedProxiesMustBeAddresses() throws {
        try ServerConfiguration(trustedProxies: ["10.0.0.5", "fd00::5"]).validate()
        #expect(throws: TSyncError.self) { try ServerConfiguration(trustedProxies: ["proxy.example.com"]).validate() }
        #expect(throws: TSyncError.self) { try ServerConfiguration(trustedProxies: ["10.0.0.0/8"]).validate() }
    }

    /// `Link` takes its scheme from `X-Forwarded-Proto` / `Forwarded` only from a trusted proxy, and
    /// carries only the parameters a read understands.
    @Test func linkBelievesForwardedHeadersOnlyFromTrustedProxies() async throws {
        for trusted in [false, true] {
            var configuration = ServerConfiguration(requiresAuthentication: false)
            if trusted { configuration.trustedProxies = ["127.0.0.1"] }
            try await withTestServer(configuration) { http in
                try await http.insert("t", ["id": "a"])
                try await http.insert("t", ["id": "b"])
                let junk = String(repeating: "j", count: 3000)
                for header in [["X-Forwarded-Proto": "https"], ["Forwarded": "for=10.0.0.1;proto=https"]] {
                    let reply = try await http.get("/tables/t?$top=1&junk=\(junk)", headers: header)
                    let link = try #require(reply.headers[.link])
                    #expect(link.hasPrefix(trusted ? "<https://" : "<http://"), "\(header) trusted \(trusted): \(link)")
                    #expect(!link.contains("junk"), "only the read's own parameters go into Link")
                    #expect(link.contains("$top=1") || link.contains("%24top=1"))
                }
            }
        }
    }

    /// Shares are counted per IPv4 address and per IPv6 /64 (docs/DESIGN.md §10.1).
    @Test func sharesCountIPv6ByItsSlash64() {
        #expect(ClientAddress.shareKey("2001:db8:1:2:aaaa::1") == ClientAddress.shareKey("2001:db8:1:2:ffff:1:2:3"))
        #expect(ClientAddress.shareKey("2001:db8:1:2::1") != ClientAddress.shareKey("2001:db8:1:3::1"))
        #expect(ClientAddress.shareKey("2001:db8:1:2::1") == "2001:db8:1:2::/64")
        #expect(ClientAddress.shareKey("::ffff:192.0.2.7") == "192.0.2.7")
        #expect(ClientAddress.shareKey("192.0.2.7") == "192.0.2.7")
    }

    /// A client's unread answers: the first always goes, more only within the share, and a charge
    /// is given back when its answer is done with.
    @Test func unreadAnswersAreChargedWithinTheShare() {
        let unread = UnreadAnswers()
        var first: UnreadAnswers.Charge? = unread.charge("a", bytes: 50, limit: 30)
        #expect(first != nil, "one answer larger than the share still goes")
        #expect(unread.charge("a", bytes: 1, limit: 30) == nil, "past the share")
        #expect(unread.charge("b", bytes: 10, limit: 30) != nil, "another client is not held back")
        first = nil
        #expect(unread.bytes("a") == 0)
        let small = unread.charge("a", bytes: 10, limit: 30)
        #expect(unread.charge("a", bytes: 20, limit: 30) != nil && small != nil)
    }
}
