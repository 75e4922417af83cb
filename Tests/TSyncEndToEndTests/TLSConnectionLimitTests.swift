import Foundation
import Testing

/// `serve --max-connections` over TLS: the client over the limit gets its 503 after
/// the handshake, encrypted, so it reads it and says the server is busy (docs/DESIGN.md §10.1);
/// a plain-text 503 on a TLS connection read as "does not speak TLS".
@Suite(.serialized) struct TLSConnectionLimitTests {
    @Test func anOverLimitTLSClientReadsA503() async throws {
        let authority = try await CertificateAuthority()
        let server = try ServerProcess(
            arguments: [
                "serve", "--db", authority.database, "--port", "0", "--no-auth", "--max-connections", "1", "--header-timeout", "60",
                "--tls-cert", authority.serverCertificate, "--tls-key", authority.serverKey,
            ], log: authority.directory.path)
        defer { server.stop() }
        let url = try await server.waitForAddress()
        let port = try #require(URLComponents(string: url)?.port)
        var environment = NetworkTests.systemTrust
        environment["SSL_CERT_FILE"] = authority.certificate
        let sandbox = try await TSyncSandbox(remote: url)
        try await sandbox.ok(["insert", "todo", #"{"id":"a"}"#])

        // One connection holds the only place, until the header timeout (60 s, far off: a probe
        // turned away on a loaded machine may need a few tries). The push's slot is taken first:
        // waiting for one under the whole suite could outlast the held connection.
        let (held, busy) = try await CommandSlots.shared.holding {
            // The held connection and the first probe race for the place: each is accepted on
            // an event loop of its own, and the one made active first takes it. A held connection
            // that lost is answered 503 and closed by the server; it is then opened again.
            var held = try RawSocket(port: port, timeout: 60)
            let probe = try await eventually {
                if held.stateNow != "open" { held = try RawSocket(port: port, timeout: 60) }
                return try await ChildProcess.curl(port: port, "/health", authority: authority.certificate)
            } until: {
                $0.status == "503"
            }
            // When it is not turned away, say what became of the held connection and what the
            // server wrote: a failure that cannot be run again must be read from its message.
            #expect(
                probe.status == "503",
                "the held connection takes the only place: \(probe); held connection: \(held.stateNow); server log:\n\(server.log)")
            return (held, try await TSyncProcess(["push"], in: sandbox.path, environment: environment).wait())
        }
        #expect(busy.status == 3, "\(busy)")
        #expect(busy.stderr.contains("answered HTTP 503: it cannot serve now"), "\(busy)")
        #expect(busy.stderr.contains("too many open connections") && busy.stderr.contains("retry after 1 s"), "\(busy)")
        #expect(!busy.stderr.contains("TLS"), "not a handshake failure: \(busy)")
        await #expect(try sandbox.ok(["status", "--porcelain"]) == "A\ttodo\ta\n")

        // Once the held connection goes, there is room again.
        held.close()
        #expect(
            try await eventually { try await ChildProcess.curl(port: port, "/health", authority: authority.certificate).status == "200" },
            "room again once the held connection goes")
        let push = try await sandbox.run(["push"], environment: environment)
        #expect(push.status == 0, "once the place is free: \(push)")
    }
}
