import Foundation
import Testing

/// `http_proxy`, `ALL_PROXY` and `NO_PROXY` with the real binary, the real `tsync serve` and a
/// real forwarding proxy (`ForwardProxy`), all on 127.0.0.1. Loopback goes through
/// the proxy unless `NO_PROXY` lists it, as with curl. The choice per scheme and the `NO_PROXY`
/// matcher in full are `ProxySettingsTests`. An https:// remote is a `tsync serve --tls-cert` with
/// a CA made here (`CertificateAuthority`), reached through the proxy's `CONNECT` tunnel.
@Suite(.serialized) struct ProxyTests {
    /// `https_proxy` with an https:// `tsync serve`: push and pull go through a `CONNECT` tunnel
    /// that carries TLS end to end (the proxy relays bytes it cannot read), with the CA trusted.
    @Test func anHTTPSServerIsReachedThroughAConnectTunnel() async throws {
        let authority = try await CertificateAuthority()
        let server = try await authority.serve(certificate: authority.serverCertificate)
        defer { server.stop() }
        let url = try await server.waitForAddress()
        let proxy = try ForwardProxy()
        var environment = NetworkTests.systemTrust
        environment["SSL_CERT_FILE"] = authority.certificate
        environment["https_proxy"] = "http://\(proxy.address)"

        let a = try await TSyncSandbox(remote: url)
        try await a.ok(["insert", "todo", #"{"id": "milk", "text": "buy milk"}"#])
        let push = try await a.run(["push", "-v"], environment: environment)
        #expect(push.status == 0, "\(push)")
        #expect(push.stderr.contains("POST \(url)/tables/$batch via proxy \(proxy.address) -> 200"), "-v names the proxy: \(push.stderr)")
        #expect(proxy.tunnels > 0 && proxy.encryptedTunnels == proxy.tunnels, "every tunnel carried TLS")
        #expect(proxy.plainRequests == 0 && proxy.forwarded == 0, "no plain request went to the proxy")
        let pushed = proxy.tunnels

        let b = try await TSyncSandbox(remote: url)
        let pull = try await b.run(["pull", "todo", "-v"], environment: environment)
        #expect(pull.status == 0, "\(pull)")
        #expect(pull.stderr.contains("via proxy \(proxy.address)"), "\(pull.stderr)")
        #expect(proxy.tunnels > pushed, "the pull went through the proxy too")
        await #expect(try b.ok(["get", "todo", "milk"]).contains("buy milk"))
        #expect(proxy.plainRequests == 0)
        let afterPull = proxy.tunnels

        // http_proxy is for http:// remotes only: this one then goes direct.
        environment.removeValue(forKey: "https_proxy")
        environment["http_proxy"] = "http://\(proxy.address)"
        try await a.ok(["insert", "todo", #"{"id": "bread"}"#])
        let direct = try await a.run(["push", "-v"], environment: environment)
        #expect(direct.status == 0, "\(direct)")
        #expect(!direct.stderr.contains("via proxy"), "\(direct.stderr)")
        #expect(proxy.tunnels == afterPull, "no tunnel for the direct push")
    }

    @Test func pushAndPullGoThroughTheProxy() async throws {
        let server = try await ServeFixture()
        let proxy = try ForwardProxy()
        let environment = ["http_proxy": "http://\(proxy.address)"]
        let a = try await TSyncSandbox(remote: server.url)
        try await a.ok(["insert", "todo", #"{"id": "milk", "text": "buy milk"}"#])
        let push = try await a.run(["push", "-v"], environment: environment)
        #expect(push.status == 0, "\(push)")
        #expect(push.stderr.contains("via proxy \(proxy.address) -> 20"), "-v names the proxy: \(push.stderr)")
        let pushed = proxy.forwarded
        #expect(pushed > 0)
        #expect(try await server.record("todo", "milk")?["text"] == "buy milk")

        let b = try await TSyncSandbox(remote: server.url)
        let pull = try await b.run(["pull", "todo"], environment: ["HTTP_PROXY": "http://\(proxy.address)"])
        #expect(pull.status == 0, "\(pull)")
        #expect(proxy.forwarded > pushed, "the pull went through the proxy too")
        #expect(try await b.ok(["get", "todo", "milk"]).contains("buy milk"))
    }

    @Test func allProxyIsTheFallback() async throws {
        let server = try await ServeFixture()
        let proxy = try ForwardProxy()
        let store = try await TSyncSandbox(remote: server.url)
        try await store.ok(["insert", "todo", #"{"id": "a"}"#])
        let push = try await store.run(["push"], environment: ["ALL_PROXY": proxy.address])
        #expect(push.status == 0, "\(push)")
        #expect(proxy.forwarded > 0)
    }

    @Test(arguments: ["127.0.0.1", "*", "localhost, 127.0.0.0/8"])
    func noProxyListingTheServerGoesDirect(noProxy: String) async throws {
        let server = try await ServeFixture()
        let proxy = try ForwardProxy()
        let store = try await TSyncSandbox(remote: server.url)
        try await store.ok(["insert", "todo", #"{"id": "a"}"#])
        let push = try await store.run(["push", "-v"], environment: ["http_proxy": proxy.address, "NO_PROXY": noProxy])
        #expect(push.status == 0, "\(push)")
        #expect(proxy.tunnels == 0 && proxy.forwarded == 0)
        #expect(!push.stderr.contains("via proxy"))
        #expect(try await server.record("todo", "a") != nil)
    }

    @Test func anHTTPSProxyIsNotUsedForAnHTTPRemote() async throws {
        let server = try await ServeFixture()
        let refusing = try LoopbackListener.refusing()
        defer { refusing.close() }
        let closed = refusing.port
        let store = try await TSyncSandbox(remote: server.url)
        try await store.ok(["insert", "todo", #"{"id": "a"}"#])
        let push = try await store.run(["push"], environment: ["https_proxy": "http://127.0.0.1:\(closed)"])
        #expect(push.status == 0, "\(push)")
    }

    @Test func aProxyThatCannotBeReachedIsNamedAndNothingIsLost() async throws {
        let server = try await ServeFixture()
        let refusing = try LoopbackListener.refusing()
        defer { refusing.close() }
        let closed = refusing.port
        let store = try await TSyncSandbox(remote: server.url)
        try await store.ok(["insert", "todo", #"{"id": "milk", "text": "buy milk"}"#])
        let before = try await store.snapshot()
        for command in [["push"], ["pull", "todo"], ["sync"]] {
            let run = try await store.run(command, environment: ["http_proxy": "http://127.0.0.1:\(closed)"])
            #expect(run.status == 3, "\(command): \(run)")
            #expect(run.stderr.contains("cannot reach the proxy 127.0.0.1:\(closed) (connection refused"), "\(run.stderr)")
            #expect(!run.stderr.contains("cannot reach the server"))
        }
        #expect(try await store.snapshot() == before, "nothing queued was touched")
        #expect(try await store.ok(["status", "--porcelain"]) == "A\ttodo\tmilk\n")
        #expect(try await server.record("todo", "milk") == nil)
        #expect(try await store.run(["push"]).status == 0, "direct, the same push goes through")
    }

    @Test func proxyCredentialsAreSentAndARefusalIsExit3() async throws {
        let server = try await ServeFixture()
        let proxy = try ForwardProxy(credentials: ("ann", "p@ss word"))
        let store = try await TSyncSandbox(remote: server.url)
        try await store.ok(["insert", "todo", #"{"id": "a"}"#])

        let without = try await store.run(["push"], environment: ["http_proxy": "http://\(proxy.address)"])
        #expect(without.status == 3, "\(without)")
        #expect(without.stderr.contains("the proxy \(proxy.address) asks for credentials (HTTP 407)"), "\(without.stderr)")
        let wrong = try await store.run(["push"], environment: ["http_proxy": "http://ann:hunter2@\(proxy.address)"])
        #expect(wrong.status == 3 && wrong.stderr.contains("refused the ones given"), "\(wrong)")
        #expect(!wrong.stderr.contains("hunter2"))
        #expect(proxy.refused == 2 && proxy.forwarded == 0)
        #expect(try await store.ok(["status", "--porcelain"]) == "A\ttodo\ta\n")

        let with = try await store.run(["push", "-v"], environment: ["http_proxy": "http://ann:p%40ss%20word@\(proxy.address)"])
        #expect(with.status == 0, "\(with)")
        #expect(proxy.forwarded > 0)
        #expect(!with.stderr.contains("p%40ss") && !with.stderr.contains("ann:"), "-v shows no credentials")
        #expect(try await server.record("todo", "a") != nil)
    }

    @Test func aRefusedTunnelIsExit3NamingTheProxy() async throws {
        let server = try await ServeFixture()
        let proxy = try ForwardProxy()  // tunnels to 127.0.0.1 only, so "localhost" is refused (403)
        let port = try #require(URLComponents(string: server.url)?.port)
        let store = try await TSyncSandbox(remote: "http://localhost:\(port)")
        try await store.ok(["insert", "todo", #"{"id": "a"}"#])
        let push = try await store.run(["push"], environment: ["http_proxy": proxy.address])
        #expect(push.status == 3, "\(push)")
        #expect(push.stderr.contains("the proxy \(proxy.address) refused to open a tunnel to http://localhost:\(port)"), "\(push.stderr)")
        #expect(try await store.ok(["status", "--porcelain"]) == "A\ttodo\ta\n")
        #expect(try await server.record("todo", "a") == nil)
    }

    @Test func anUnsupportedProxyIsAUsageError() async throws {
        // Were the proxy used after all, it and the server would refuse: nothing is sent anywhere.
        let refusing = try LoopbackListener.refusing()
        defer { refusing.close() }
        let store = try await TSyncSandbox(remote: "http://127.0.0.1:\(refusing.port)")
        try await store.ok(["insert", "todo", #"{"id": "a"}"#])
        let proxy = "127.0.0.1:\(refusing.port)"
        let push = try await store.run(["push"], environment: ["https_proxy": "socks5://" + proxy, "http_proxy": "socks5h://" + proxy])
        #expect(push.status == 64, "\(push)")
        #expect(push.stderr.contains("http_proxy") && push.stderr.contains("only http:// ones"), "\(push.stderr)")
        #expect(try await store.ok(["status", "--porcelain"]) == "A\ttodo\ta\n")
    }
}
