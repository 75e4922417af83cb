import Foundation
import Testing
import TSyncModel

/// One client, by address or by account, cannot take what the others need: its share
/// of connections and of requests in flight is bounded, and others are still served
/// (docs/DESIGN.md §10.1). Other loopback addresses (127.0.0.2, …) stand for other clients.
@Suite(.serialized) struct ClientShareTests {
    /// Idle keep-alive connections, each after one request, as a client that sends a request a minute.
    private func keepAlive(_ count: Int, from address: String, port: Int) async throws -> [RawSocket] {
        var sockets: [RawSocket] = []
        for _ in 0..<count {
            let socket = try RawSocket(port: port, timeout: 10, from: address)
            await socket.write("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            let answer = await socket.read(until: #""ok"}"#)
            #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer.prefix(200))")
            sockets.append(socket)
        }
        return sockets
    }

    @Test func oneAddressHoldingItsShareOfConnectionsLeavesRoomForOthers() async throws {
        let server = try await ServeFixture(options: [
            "--max-connections", "16", "--max-client-connections", "6", "--idle-timeout", "60", "--header-timeout", "30", "--metrics",
        ])
        let port = try server.port
        let first = try await keepAlive(6, from: "127.0.0.2", port: port)
        // One more from the same address is refused, saying why.
        let extra = try RawSocket(port: port, timeout: 10, from: "127.0.0.2")
        await extra.write("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        let refused = await extra.readToEnd()
        #expect(refused.hasPrefix("HTTP/1.1 429"), "\(refused.prefix(200))")
        #expect(refused.contains("Retry-After: 1") && refused.contains("6 connections open"), "\(refused)")
        // Another client is served (on a connection it closes: one kept open by a shared HTTP
        // client would count against the places below).
        let other = try RawSocket(port: port, timeout: 10)
        await other.write("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let served = await other.readToEnd()
        #expect(served.hasPrefix("HTTP/1.1 200"), "\(served.prefix(200))")

        // A second address takes its share too, and a third is held back from the last places
        // (16 / 8 = 2), which stay for addresses that hold none: it is refused 503 (the server
        // is full for it) before it reaches its own share. Counted by trying, since a connection
        // the test's own HTTP client keeps open also takes a place.
        let second = try await keepAlive(6, from: "127.0.0.3", port: port)
        var third: [RawSocket] = []
        var full = ""
        while third.count < 6 {
            let socket = try RawSocket(port: port, timeout: 10, from: "127.0.0.4")
            await socket.write("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            let answer = await socket.read(until: "\r\n\r\n")
            if !answer.hasPrefix("HTTP/1.1 200") {
                full = answer
                break
            }
            _ = await socket.read(until: #""ok"}"#)
            third.append(socket)
        }
        #expect(full.hasPrefix("HTTP/1.1 503"), "\(third.count) connections, then \(full.prefix(200))")
        #expect(third.count < 6)
        let newcomer = try await keepAlive(1, from: "127.0.0.5", port: port)
        #expect(newcomer.count == 1)
        // /metrics counts both refusals by share (asked once the places are given back).
        for socket in first + second + third + newcomer { socket.close() }
        let metrics = try await Self.metrics(server)
        #expect(metrics.contains(#"tsync_share_refusals_total{share="client_connections",status="429"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"tsync_share_refusals_total{share="connections",status="503"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"tsync_share_refusals_total{share="account_requests",status="429"} 0"#), "\(metrics)")
    }

    /// `/metrics` once a request is answered 200 (the server may still be giving back places).
    private static func metrics(_ server: ServeFixture) async throws -> String {
        let answer = try await eventually(every: .milliseconds(100)) {
            try await HTTP.send("GET", server.url + "/metrics")
        } until: {
            $0.status == 200
        }
        guard answer.status == 200 else { throw TSyncError.failure("/metrics was not answered 200") }
        return answer.body
    }

    /// Waits until the server holds `count` reads (`tsync_live_waiting`; needs `--metrics`).
    private static func waitUntilHeld(_ server: ServeFixture, _ count: Int) async throws {
        let held = try await eventually {
            try await server.metric("tsync_live_waiting")
        } until: {
            $0 == count
        }
        #expect(held == count, "the server holds \(count) reads (it says \(held.map(String.init) ?? "nothing"))")
    }

    /// Behind a trusted proxy every connection comes from the proxy: the share is of requests in
    /// flight per forwarded address.
    @Test func behindATrustedProxyEachForwardedAddressHasItsShareOfRequests() async throws {
        let server = try await ServeFixture(options: ["--trusted-proxy", "127.0.0.1", "--max-client-connections", "2", "--metrics"])
        let port = try server.port
        var held: [RawSocket] = []
        for _ in 0..<2 {
            let socket = try RawSocket(port: port, timeout: 10)
            await socket.write(
                "GET /tables/todo HTTP/1.1\r\nHost: x\r\nZUMO-API-VERSION: 2.0.0\r\nX-Forwarded-For: 203.0.113.5\r\nPrefer: wait=20\r\n\r\n"
            )
            held.append(socket)
        }
        try await Self.waitUntilHeld(server, 2)
        let over = try await HTTP.send("GET", server.url + "/tables/todo", headers: ["X-Forwarded-For": "203.0.113.5"])
        #expect(over.status == 429, "\(over.status) \(over.body)")
        #expect(over.body.contains("this address has 2 requests under way"), "\(over.body)")
        let other = try await HTTP.send("GET", server.url + "/tables/todo", headers: ["X-Forwarded-For": "203.0.113.6"])
        #expect(other.status == 200, "\(other.status) \(other.body)")
        // The proxy's own connections are not held to one client's share.
        #expect(try await HTTP.send("GET", server.url + "/health").status == 200)
        withExtendedLifetime(held) {}
    }

    @Test func oneAccountHoldingItsShareOfHeldReadsLeavesOtherAccountsServed() async throws {
        let server = try await ServeFixture(authenticated: true, options: ["--max-account-requests", "3", "--metrics"])
        let add = try await TSyncProcess.run(
            ["user", "add", "bob", "--password-stdin", "--db", "sqlite:" + server.databasePath], in: server.directory.path,
            stdin: ServeFixture.password + "\n")
        #expect(add.status == 0, "\(add.stderr)")
        let alice = try #require(try await server.token())
        let login = try await HTTP.send(
            "POST", server.url + "/.auth/login/custom", body: #"{"username":"bob","password":"\#(ServeFixture.password)"}"#)
        let bob = try #require(try JSONParser.parse(login.body).objectValue?["authenticationToken"]?.stringValue)
        let port = try server.port
        // Alice's held reads come from several addresses: the share is the account's.
        var held: [RawSocket] = []
        for index in 0..<3 {
            let socket = try RawSocket(port: port, timeout: 10, from: "127.0.0.\(index + 2)")
            await socket.write(
                "GET /tables/todo HTTP/1.1\r\nHost: x\r\nZUMO-API-VERSION: 2.0.0\r\nX-ZUMO-AUTH: \(alice)\r\nPrefer: wait=20\r\n\r\n")
            held.append(socket)
        }
        try await Self.waitUntilHeld(server, 3)
        let over = try await HTTP.send("GET", server.url + "/tables/todo", token: alice)
        #expect(over.status == 429, "\(over.status) \(over.body)")
        #expect(over.body.contains("this account has 3 requests under way"), "\(over.body)")
        #expect(
            try await Self.metrics(server).contains(#"tsync_share_refusals_total{share="account_requests",status="429"} 1"#))
        let other = try await HTTP.send("GET", server.url + "/tables/todo", token: bob)
        #expect(other.status == 200, "\(other.status) \(other.body)")
        // Answered while alice's reads still hold her share, not once their 20 s wait ended.
        #expect(try await server.metric("tsync_live_waiting") == 3, "alice's reads are still held")
        // Once alice's reads end, she is served again.
        for socket in held { socket.close() }
        #expect(try await eventually { try await HTTP.send("GET", server.url + "/tables/todo", token: alice).status == 200 })
    }
}
