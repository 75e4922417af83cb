import Foundation
import Testing

/// An expired certificate, one not yet valid, one from a CA this machine does not
/// trust and one for other names each say which, with its own remedy, and never suggest plain
/// http://. The certificates are made with `openssl ca` (fixed dates in the past or the future).
@Suite(.serialized) struct CertificateTests {
    private static func trusting(_ authority: CertificateAuthority) -> [String: String] {
        var environment = NetworkTests.systemTrust
        environment["SSL_CERT_FILE"] = authority.certificate
        return environment
    }

    /// Pushes to a TLS server with `certificate`, expects exit 3 with nothing touched, and returns
    /// the message.
    private func refusal(
        _ authority: CertificateAuthority, certificate: String, environment: [String: String]
    ) async throws -> String {
        let server = try await authority.serve(certificate: certificate)
        defer { server.stop() }
        let url = try await server.waitForAddress()
        let sandbox = try await TSyncSandbox(remote: url)
        try await sandbox.ok(["insert", "todo", #"{"id":"a"}"#])
        let push = try await sandbox.run(["push"], environment: environment)
        #expect(push.status == 3, "\(push)")
        #expect(!push.stderr.contains("http://"), "never a hint to drop to plain HTTP: \(push)")
        #expect(push.stderr.contains("nothing was sent, nothing was lost"), "\(push)")
        await #expect(try sandbox.ok(["status", "--porcelain"]) == "A\ttodo\ta\n", "nothing queued is touched")
        return push.stderr
    }

    @Test func anExpiredCertificateSaysWhenItExpired() async throws {
        let authority = try await CertificateAuthority()
        let expired = try await authority.issue("expired.pem", from: "20200101000000Z", to: "20200102000000Z")
        let message = try await refusal(authority, certificate: expired, environment: Self.trusting(authority))
        #expect(message.contains("expired on 2020-01-02 00:00 UTC"), "\(message)")
        #expect(message.contains("renew"), "\(message)")
        #expect(!message.contains("is not trusted") && !message.contains("SSL_CERT_FILE"), "trusting a CA is not the fix: \(message)")
    }

    @Test func aCertificateNotYetValidSaysFromWhen() async throws {
        let authority = try await CertificateAuthority()
        let future = try await authority.issue("future.pem", from: "20990101000000Z", to: "20990102000000Z")
        let message = try await refusal(authority, certificate: future, environment: Self.trusting(authority))
        #expect(message.contains("is not valid before 2099-01-01 00:00 UTC") && message.contains("clock"), "\(message)")
        #expect(!message.contains("is not trusted"), "\(message)")
    }

    @Test func anUnknownCANamesTheIssuerAndHowToTrustIt() async throws {
        let authority = try await CertificateAuthority()
        let message = try await refusal(authority, certificate: authority.serverCertificate, environment: NetworkTests.systemTrust)
        #expect(
            message.contains("is not trusted: it was issued by tsync test CA, which is not a certificate authority this machine trusts"),
            "\(message)")
        #expect(message.contains("SSL_CERT_FILE") && message.contains("tsync config http.caFile"), "\(message)")
        #expect(!message.contains("expired"), "\(message)")

        // From an unknown CA and for another name: both are said.
        let both = try await refusal(authority, certificate: authority.otherNameCertificate, environment: NetworkTests.systemTrust)
        #expect(both.contains("is not trusted") && both.contains("also, it is for other.example, not 127.0.0.1"), "\(both)")
    }

    @Test func aNameMismatchListsTheNamesTheCertificateIsFor() async throws {
        let authority = try await CertificateAuthority()
        let message = try await refusal(authority, certificate: authority.otherNameCertificate, environment: Self.trusting(authority))
        #expect(message.contains("it is for other.example, not 127.0.0.1 (name mismatch)"), "\(message)")
        #expect(!message.contains("is not trusted") && !message.contains("expired"), "\(message)")
    }

    /// Through a proxy, the second look at the chain goes through the same tunnel.
    @Test func anExpiredCertificateIsToldThroughAProxyToo() async throws {
        let authority = try await CertificateAuthority()
        let expired = try await authority.issue("expired.pem", from: "20200101000000Z", to: "20200102000000Z")
        let proxy = try ForwardProxy()
        var environment = Self.trusting(authority)
        environment["https_proxy"] = proxy.address
        let message = try await refusal(authority, certificate: expired, environment: environment)
        #expect(message.contains("expired on 2020-01-02"), "\(message)")
        #expect(proxy.tunnels >= 2 && proxy.plainRequests == 0, "the push's handshake and the second look: \(proxy.tunnels)")
    }
}

extension CertificateAuthority {
    /// A certificate for 127.0.0.1 and localhost (the server key), valid from `from` to `to`
    /// (`YYYYMMDDHHMMSSZ`), signed by the CA with `openssl ca`, which takes any dates.
    func issue(_ name: String, from: String, to: String) async throws -> String {
        let root = directory.path
        let database = try directory.subdirectory("ca-db")
        let index = (database as NSString).appendingPathComponent("index.txt")
        let serial = (database as NSString).appendingPathComponent("serial")
        if !FileManager.default.fileExists(atPath: index) {
            _ = try directory.write("ca-db/index.txt", "")
            _ = try directory.write("ca-db/serial", "1000\n")
        }
        let configuration = try directory.write(
            "ca.cnf",
            """
            [ca]
            default_ca = test
            [test]
            database = \(index)
            serial = \(serial)
            new_certs_dir = \(database)
            default_md = sha256
            policy = any
            unique_subject = no
            copy_extensions = none
            [any]
            commonName = supplied
            [server]
            subjectAltName = IP:127.0.0.1,DNS:localhost

            """)
        let output = (root as NSString).appendingPathComponent(name)
        let (status, message) = try await ChildProcess.run(
            "/usr/bin/openssl",
            [
                "ca", "-batch", "-config", configuration, "-cert", certificate, "-keyfile", key, "-in",
                (root as NSString).appendingPathComponent("server.csr"), "-out", output, "-startdate", from, "-enddate", to,
                "-extensions", "server", "-notext",
            ], in: root)
        guard status == 0 else { throw TSyncTestError("openssl ca failed: \(message)") }
        return output
    }
}
