import Foundation
import Testing

/// Under `--tls-cert`: TLS 1.2 or newer with forward-secret ciphers only, and a
/// handshake that never comes is cut off like a request head, counted against its own address's
/// share, while other clients are served (docs/DESIGN.md §10.1).
@Suite(.serialized) struct TLSPolicyTests {
    private func serve(_ authority: CertificateAuthority, _ options: [String] = []) async throws -> (ServerProcess, Int) {
        let server = try ServerProcess(
            arguments: [
                "serve", "--db", authority.database, "--port", "0", "--no-auth", "--tls-cert", authority.serverCertificate, "--tls-key",
                authority.serverKey,
            ] + options, log: authority.directory.path)
        let url = try await server.waitForAddress()
        return (server, try #require(URLComponents(string: url)?.port))
    }

    /// `openssl s_client` with `options`: whether the handshake succeeded (s_client exits 0).
    private func handshake(port: Int, _ options: [String]) async throws -> Bool {
        let (status, _) = try await ChildProcess.run(
            "/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-servername", "localhost"] + options)
        return status == 0
    }

    @Test func onlyTLS12AndNewerWithForwardSecrecyAreAccepted() async throws {
        let authority = try await CertificateAuthority()
        let (server, port) = try await serve(authority)
        defer { server.stop() }
        #expect(try await handshake(port: port, ["-tls1_3"]), "TLS 1.3")
        #expect(try await handshake(port: port, ["-tls1_2"]), "TLS 1.2")
        #expect(try await handshake(port: port, ["-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"]), "ECDHE")
        // The client's own floor is lowered so that only the server's can refuse.
        #expect(try await !handshake(port: port, ["-tls1_1", "-cipher", "DEFAULT:@SECLEVEL=0"]), "TLS 1.1 is refused")
        #expect(try await !handshake(port: port, ["-tls1", "-cipher", "DEFAULT:@SECLEVEL=0"]), "TLS 1.0 is refused")
        #expect(try await !handshake(port: port, ["-tls1_2", "-cipher", "AES128-GCM-SHA256"]), "RSA key exchange is refused")
    }

    @Test func stalledHandshakesAreCutOffAndLeaveOthersServed() async throws {
        let authority = try await CertificateAuthority()
        let (server, port) = try await serve(
            authority, ["--max-connections", "8", "--max-client-connections", "4", "--header-timeout", "2", "--metrics"])
        defer { server.stop() }
        // One address opens connections and never says hello, and more than its share.
        let start = ContinuousClock.now
        let stalled = try (0..<6).map { _ in try RawSocket(port: port, timeout: 10, from: "127.0.0.2") }
        // The server has taken all six: four hold their places, two were refused their share.
        let refusals = #"tsync_share_refusals_total{share="client_connections",status="429"} 2"#
        let taken = try await eventually {
            try await ChildProcess.curl(port: port, "/metrics", authority: authority.certificate).body.contains(refusals)
        }
        #expect(taken, "the stalled connections are counted")
        // Another client's handshake and request go through meanwhile.
        let (status, message) = try await ChildProcess.run(
            "/usr/bin/curl", ["-sf", "-o", "/dev/null", "--cacert", authority.certificate, "https://localhost:\(port)/health"])
        #expect(status == 0, "served while the stalled handshakes are held: \(message)")
        // The stalled ones are closed at the header timeout (generous: a loaded machine).
        for socket in stalled { #expect(await socket.isClosedByPeer()) }
        #expect(ContinuousClock.now - start < .seconds(8))
    }
}
