import Foundation
import TSyncModel
import Testing

/// tsync on a real network: `tsync serve` over TLS with a certificate from a private CA
/// made here with `openssl`, the client's ways to trust that CA, and the words for a name that does
/// not resolve, a refused connection and a password about to travel in clear. All on loopback; the
/// unresolvable name is under `.invalid` (RFC 6761), which never resolves, so nothing leaves.
@Suite("Network", .serialized)
struct NetworkTests {
    /// No CA of the test's own: `SSL_CERT_FILE` and `SSL_CERT_DIR` as this machine may set them are
    /// replaced by the system bundle (or emptied, which tsync reads as unset).
    static let systemTrust: [String: String] = [
        "SSL_CERT_FILE": FileManager.default.fileExists(atPath: "/etc/ssl/certs/ca-certificates.crt")
            ? "/etc/ssl/certs/ca-certificates.crt" : "",
        "SSL_CERT_DIR": "",
    ]

    // MARK: - serve --tls-cert --tls-key

    @Test func serveRefusesAMissingOrInvalidCertificateAtStartUp() async throws {
        let authority = try await CertificateAuthority()
        let database = "sqlite:" + (authority.directory.path as NSString).appendingPathComponent("server.db")
        let missing = try await TSyncProcess.run(
            ["serve", "--db", database, "--no-auth", "--port", "0", "--tls-cert", "nowhere.pem", "--tls-key", authority.serverKey],
            in: authority.directory.path)
        #expect(missing.status == 66, "\(missing)")
        #expect(missing.stderr.contains("nowhere.pem") && missing.stderr.contains("does not exist"), "\(missing)")

        let notPEM = try authority.directory.write("not.pem", "hello\n")
        let invalid = try await TSyncProcess.run(
            ["serve", "--db", database, "--no-auth", "--port", "0", "--tls-cert", notPEM, "--tls-key", authority.serverKey],
            in: authority.directory.path)
        #expect(invalid.status == 78, "\(invalid)")
        #expect(invalid.stderr.contains("not.pem") && invalid.stderr.contains("not a PEM certificate"), "\(invalid)")

        let wrongKey = try await TSyncProcess.run(
            ["serve", "--db", database, "--no-auth", "--port", "0", "--tls-cert", authority.serverCertificate, "--tls-key", authority.key],
            in: authority.directory.path)
        #expect(wrongKey.status == 78, "\(wrongKey)")
        #expect(wrongKey.stderr.contains("does not belong to the certificate"), "\(wrongKey)")
        // What to do, and no names of the TLS library's (it said "(failedToLoadPrivateKey)").
        #expect(wrongKey.stderr.contains("give the key the certificate was made with"), "\(wrongKey)")
        let notKey = try await TSyncProcess.run(
            ["serve", "--db", database, "--no-auth", "--port", "0", "--tls-cert", authority.serverCertificate, "--tls-key", notPEM],
            in: authority.directory.path)
        #expect(notKey.status == 78 && notKey.stderr.contains("not a PEM private key: give"), "\(notKey)")
        for result in [invalid, wrongKey, notKey] {
            #expect(!result.stderr.contains("failedTo") && !result.stderr.contains("NIOSSL"), "\(result)")
        }

        let alone = try await TSyncProcess.run(
            ["serve", "--db", database, "--no-auth", "--port", "0", "--tls-cert", authority.serverCertificate],
            in: authority.directory.path)
        #expect(alone.status == 64, "\(alone)")
    }

    // MARK: - Trust

    @Test func anUntrustedCertificateIsExit3AndEachWayToTrustTheCAWorks() async throws {
        let authority = try await CertificateAuthority()
        let server = try await authority.serve(certificate: authority.serverCertificate)
        defer { server.stop() }
        let url = try await server.waitForAddress()
        #expect(url.hasPrefix("https://127.0.0.1:"))

        let sandbox = try await TSyncSandbox(remote: url)
        try await sandbox.ok(["insert", "todo", #"{"id":"a","title":"one"}"#])
        let before = try await sandbox.snapshot()
        let untrusted = try await sandbox.run(["push"], environment: Self.systemTrust)
        #expect(untrusted.status == 3, "\(untrusted)")
        #expect(untrusted.stderr.contains("is not trusted"), "\(untrusted)")
        #expect(untrusted.stderr.contains("SSL_CERT_FILE") && untrusted.stderr.contains("tsync config http.caFile"), "\(untrusted)")
        #expect(!untrusted.stderr.contains("http://"), "never a hint to drop to plain HTTP: \(untrusted)")
        #expect(try await sandbox.snapshot() == before, "nothing queued is touched")
        #expect(try await sandbox.ok(["status", "--porcelain"]).contains("todo"))

        // 1. SSL_CERT_FILE: a PEM bundle holding the CA.
        var environment = Self.systemTrust
        environment["SSL_CERT_FILE"] = authority.certificate
        let viaFile = try await sandbox.run(["push"], environment: environment)
        #expect(viaFile.status == 0, "\(viaFile)")

        // 2. SSL_CERT_DIR: a directory of hashed CA certificates (`openssl rehash`).
        try await sandbox.ok(["insert", "todo", #"{"id":"b","title":"two"}"#])
        environment = Self.systemTrust
        environment["SSL_CERT_DIR"] = try await authority.hashedDirectory()
        environment["SSL_CERT_FILE"] = ""
        let viaDirectory = try await sandbox.run(["push"], environment: environment)
        #expect(viaDirectory.status == 0, "\(viaDirectory)")

        // 3. The store's http.caFile, besides the system's CAs.
        try await sandbox.ok(["insert", "todo", #"{"id":"c","title":"three"}"#])
        try await sandbox.ok(["config", "http.caFile", authority.certificate])
        let viaSetting = try await sandbox.run(["sync"], environment: Self.systemTrust)
        #expect(viaSetting.status == 0, "\(viaSetting)")
        #expect(try await Self.ids(sandbox) == ["a", "b", "c"])
        #expect(try await sandbox.ok(["status", "--porcelain"]).isEmpty)

        // A setting that names no file is refused when set.
        let wrongSetting = try await sandbox.run(["config", "http.caFile", "/nowhere/ca.pem"])
        #expect(wrongSetting.status == 64, "\(wrongSetting)")
    }

    @Test func aCertificateForAnotherNameSaysNameMismatch() async throws {
        let authority = try await CertificateAuthority()
        let server = try await authority.serve(certificate: authority.otherNameCertificate)
        defer { server.stop() }
        let url = try await server.waitForAddress()
        let sandbox = try await TSyncSandbox(remote: url)
        try await sandbox.ok(["insert", "todo", #"{"id":"a"}"#])
        var environment = Self.systemTrust
        environment["SSL_CERT_FILE"] = authority.certificate
        let result = try await sandbox.run(["push"], environment: environment)
        #expect(result.status == 3, "\(result)")
        #expect(result.stderr.contains("name mismatch") && result.stderr.contains("127.0.0.1"), "\(result)")
        #expect(!result.stderr.contains("is not trusted"), "\(result)")
        #expect(try await sandbox.ok(["status", "--porcelain"]).contains("todo"))
    }

    // MARK: - Names and addresses

    @Test func anUnknownHostSaysCannotResolveIt() async throws {
        let sandbox = try await TSyncSandbox(remote: "http://tsync-test.invalid:8080")
        try await sandbox.ok(["insert", "todo", #"{"id":"a"}"#])
        for command in [["push"], ["pull", "todo"]] {
            let result = try await sandbox.run(command)
            #expect(result.status == 3, "\(result)")
            #expect(result.stderr.contains("cannot resolve host tsync-test.invalid"), "\(result)")
            #expect(!result.stderr.contains("SocketAddressError") && !result.stderr.contains("error -2"), "\(result)")
        }
        #expect(try await sandbox.ok(["status", "--porcelain"]).contains("todo"))
    }

    @Test func aClosedPortSaysConnectionRefused() async throws {
        let refusing = try LoopbackListener.refusing()
        defer { refusing.close() }
        let sandbox = try await TSyncSandbox(remote: "http://127.0.0.1:\(refusing.port)")
        try await sandbox.ok(["insert", "todo", #"{"id":"a"}"#])
        let result = try await sandbox.run(["push"])
        #expect(result.status == 3, "\(result)")
        #expect(result.stderr.contains("connection refused: nothing listens at that port"), "\(result)")
    }

    // MARK: - login in clear

    @Test func loginOverPlainHTTPToAnotherHostWarnsFirst() async throws {
        let remote = try await TSyncSandbox(remote: "http://tsync-test.invalid")
        let far = try await remote.run(["login", "--user", "alice", "--password-stdin"], stdin: "secret\n")
        #expect(far.status == 3, "\(far)")
        let warning = far.stderr.range(of: "warning: http://tsync-test.invalid is plain http:// to another machine")
        let failure = far.stderr.range(of: "cannot resolve host")
        #expect(warning != nil && failure != nil, "\(far)")
        if let warning, let failure { #expect(warning.lowerBound < failure.lowerBound, "the warning comes first: \(far)") }

        let refusing = try LoopbackListener.refusing()
        defer { refusing.close() }
        let near = try await TSyncSandbox(remote: "http://127.0.0.1:\(refusing.port)")
        let local = try await near.run(["login", "--user", "alice", "--password-stdin"], stdin: "secret\n")
        #expect(local.status == 3, "\(local)")
        #expect(!local.stderr.contains("warning:"), "\(local)")
    }

    @Test func loginOverHTTPSWithATrustedCAWorks() async throws {
        let authority = try await CertificateAuthority()
        let add = try await TSyncProcess.run(
            ["user", "add", "alice", "--password-stdin", "--db", authority.database], in: authority.directory.path,
            stdin: "correct horse battery staple\n")
        #expect(add.status == 0, "\(add)")
        let server = try await authority.serve(certificate: authority.serverCertificate, authenticated: true)
        defer { server.stop() }
        let url = try await server.waitForAddress()
        let sandbox = try await TSyncSandbox(remote: url.replacingOccurrences(of: "127.0.0.1", with: "localhost"))
        try await sandbox.ok(["config", "http.caFile", authority.certificate])
        let login = try await sandbox.run(
            ["login", "--user", "alice", "--password-stdin"], stdin: "correct horse battery staple\n", environment: Self.systemTrust)
        #expect(login.status == 0, "\(login)")
        #expect(!login.stderr.contains("warning:"), "\(login)")
        try await sandbox.ok(["insert", "todo", #"{"id":"a"}"#])
        let push = try await sandbox.run(["push"], environment: Self.systemTrust)
        #expect(push.status == 0, "\(push)")
    }

    // MARK: - Not a sync server

    /// A static web server (Python's http.server, as a mistyped URL might reach) is no sync
    /// server: push, pull, sync and login say so and exit 3, and nothing goes into the error table.
    @Test func aStaticWebServerIsNotASyncServer() async throws {
        let web = try await StaticWebServer()
        defer { web.stop() }
        let sandbox = try await TSyncSandbox(remote: web.url)
        try await sandbox.ok(["insert", "todo", #"{"id":"a"}"#])
        for command in [["push"], ["pull", "todo"], ["sync"], ["login", "--user", "alice", "--password-stdin"]] {
            let result = try await sandbox.run(command, stdin: "secret\n")
            #expect(result.status == 3, "\(command): \(result)")
            #expect(result.stderr.contains("does not look like a tsync or Mobile Apps v2 server"), "\(command): \(result)")
            #expect(result.stderr.contains("text/html"), "it says what it answered: \(result)")
            #expect(result.stderr.contains("HTTP 501") || result.stderr.contains("HTTP 404"), "\(result)")
            let status = try await sandbox.ok(["status", "--json"])
            #expect(status.contains(#""errors":0"#), "nothing in the error table after \(command): \(status)")
        }
    }

    /// The real server under a wrong path prefix answers its own "no such endpoint" 404: not a
    /// per-operation 404, so nothing is recorded as missing.
    @Test func aWrongPathPrefixIsNotASyncServer() async throws {
        let server = try await ServeFixture()
        let sandbox = try await TSyncSandbox(remote: server.url + "/api")
        try await sandbox.ok(["insert", "todo", #"{"id":"a"}"#])
        for command in [["push"], ["pull", "todo"], ["sync"], ["login", "--user", "alice", "--password-stdin"]] {
            let result = try await sandbox.run(command, stdin: "secret\n")
            #expect(result.status == 3, "\(command): \(result)")
            #expect(result.stderr.contains("does not look like a tsync or Mobile Apps v2 server"), "\(command): \(result)")
            #expect(result.stderr.contains("/api/"), "it names the path it tried: \(result)")
            let status = try await sandbox.ok(["status", "--json"])
            #expect(status.contains(#""errors":0"#), "nothing in the error table after \(command): \(status)")
        }
        // At the right URL the same store pushes: the write that reached nothing stays to be sent.
        try await sandbox.ok(["remote", server.url])
        try await sandbox.ok(["push"])
        #expect(try await server.records("todo")["a"] != nil)
    }

    // MARK: - Tokens for machines

    @Test func aMintedTokenWorksUntilThePasswordChangesAndWhoamiSaysWhose() async throws {
        let server = try await ServeFixture(authenticated: true)
        let database = "sqlite:" + server.databasePath
        let mint = try await TSyncProcess.run(["user", "token", "alice", "--ttl", "90m", "--db", database], in: server.directory.path)
        #expect(mint.status == 0, "\(mint)")
        let token = mint.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!token.isEmpty && !token.contains(" ") && mint.lines.count == 1, "one token on stdout: \(mint)")
        let stored = ["", "-wal"].compactMap { FileManager.default.contents(atPath: server.databasePath + $0) }
            .map { String(decoding: $0, as: UTF8.self) }.joined()
        #expect(!stored.isEmpty && !stored.contains(token), "stored hashed only")

        let sandbox = try await TSyncSandbox(remote: server.url)
        let whoami = try await sandbox.run(["whoami"], environment: ["TSYNC_TOKEN": token])
        #expect(whoami.status == 0, "\(whoami)")
        #expect(whoami.stdout == "alice at \(server.url)\n", "\(whoami)")
        try await sandbox.ok(["insert", "todo", #"{"id":"a"}"#])
        let push = try await sandbox.run(["push"], environment: ["TSYNC_TOKEN": token])
        #expect(push.status == 0, "\(push)")

        let nobody = try await sandbox.run(["whoami"])
        #expect(nobody.status == 4, "no credentials: \(nobody)")

        let passwd = try await TSyncProcess.run(
            ["user", "passwd", "alice", "--password-stdin", "--db", database], in: server.directory.path, stdin: "another long password\n")
        #expect(passwd.status == 0, "\(passwd)")
        let revoked = try await sandbox.run(["whoami"], environment: ["TSYNC_TOKEN": token])
        #expect(revoked.status == 4, "a password change revokes it: \(revoked)")

        let badTTL = try await TSyncProcess.run(["user", "token", "alice", "--ttl", "5x", "--db", database], in: server.directory.path)
        #expect(badTTL.status == 64, "\(badTTL)")
        let unknown = try await TSyncProcess.run(["user", "token", "bob", "--db", database], in: server.directory.path)
        #expect(unknown.status == 65, "\(unknown)")

        let refusing = try LoopbackListener.refusing()
        defer { refusing.close() }
        let far = try await TSyncSandbox(remote: "http://127.0.0.1:\(refusing.port)")
        let unreachable = try await far.run(["whoami"], environment: ["TSYNC_TOKEN": token])
        #expect(unreachable.status == 3, "\(unreachable)")
    }

    private static func ids(_ sandbox: TSyncSandbox) async throws -> [String] {
        try await sandbox.ok(["query", "todo", "--json"]).components(separatedBy: "\"id\":\"").dropFirst()
            .map { String($0.prefix { $0 != "\"" }) }.sorted()
    }
}

/// A private CA and server certificates made with `openssl` in a temporary directory: one for
/// 127.0.0.1 and localhost, one for another name only.
final class CertificateAuthority {
    let directory: TemporaryDirectory
    var certificate: String { path("ca.pem") }
    var key: String { path("ca.key") }
    var serverCertificate: String { path("server.pem") }
    var serverKey: String { path("server.key") }
    var otherNameCertificate: String { path("other.pem") }
    var database: String { "sqlite:" + path("server.db") }

    init() async throws {
        directory = try TemporaryDirectory()
        try await openssl([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate, "-days", "2", "-subj",
            "/CN=tsync test CA",
        ])
        try await openssl([
            "req", "-newkey", "rsa:2048", "-nodes", "-keyout", serverKey, "-out", path("server.csr"), "-subj", "/CN=localhost",
        ])
        for (name, names) in [("server.pem", "IP:127.0.0.1,DNS:localhost"), ("other.pem", "DNS:other.example")] {
            let extensions = try directory.write(name + ".ext", "subjectAltName=\(names)\n")
            try await openssl([
                "x509", "-req", "-in", path("server.csr"), "-CA", certificate, "-CAkey", key, "-CAcreateserial", "-out", path(name),
                "-days", "2", "-extfile", extensions,
            ])
        }
    }

    /// A directory holding the CA certificate under its `openssl rehash` name.
    func hashedDirectory() async throws -> String {
        let hashed = try directory.subdirectory("hashed")
        try FileManager.default.copyItem(atPath: certificate, toPath: (hashed as NSString).appendingPathComponent("ca.pem"))
        try await openssl(["rehash", hashed])
        return hashed
    }

    /// `tsync serve` over TLS with `certificate` (and the server key).
    func serve(certificate: String, authenticated: Bool = false) async throws -> ServerProcess {
        var arguments = ["serve", "--db", database, "--port", "0", "--tls-cert", certificate, "--tls-key", serverKey]
        if !authenticated { arguments.append("--no-auth") }
        return try ServerProcess(arguments: arguments, log: directory.path)
    }

    private func path(_ name: String) -> String { (directory.path as NSString).appendingPathComponent(name) }

    private func openssl(_ arguments: [String]) async throws {
        let (status, message) = try await ChildProcess.run("/usr/bin/openssl", arguments, in: directory.path)
        guard status == 0 else {
            throw TSyncError.failure("openssl \(arguments.joined(separator: " ")) failed: \(message)")
        }
    }
}

/// `python3 -m http.server` on a loopback port the system picks (port 0; it says which on
/// stdout), serving a directory with one HTML page. Its log (one line per request) tells which
/// requests reached it.
final class StaticWebServer {
    let directory: TemporaryDirectory
    let process: ChildProcess
    let url: String
    private let logPath: String

    init() async throws {
        directory = try TemporaryDirectory()
        _ = try directory.write("index.html", "<html><body>Welcome to nginx!</body></html>\n")
        logPath = try directory.write("requests.log", "")
        let announcement = (directory.path as NSString).appendingPathComponent("stdout")
        // -u: unbuffered, so the line naming the port is written when the socket listens.
        process = try ChildProcess(
            "/usr/bin/python3", ["-u", "-m", "http.server", "--bind", "127.0.0.1", "--directory", directory.path, "0"],
            stdout: announcement, stderr: logPath)
        // "Serving HTTP on 127.0.0.1 port 41234 (http://127.0.0.1:41234/) ..."
        let process = self.process
        let port = try await eventually {
            let text = String(decoding: FileManager.default.contents(atPath: announcement) ?? Data(), as: UTF8.self)
            return text.firstMatch(of: /port (\d+)/).flatMap { Int($0.1) }
        } until: {
            $0 != nil || !process.isRunning
        }
        guard let port else {
            throw TSyncError.failure("python3 -m http.server did not say its port: \(Self.log(announcement)) \(Self.log(logPath))")
        }
        url = "http://127.0.0.1:\(port)"
    }

    private static func log(_ path: String) -> String {
        String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self)
    }

    /// "METHOD /path" of every request it has received, in order (http.server logs each request
    /// line as it answers it, unsupported methods included).
    var requests: [String] {
        let log = String(decoding: FileManager.default.contents(atPath: logPath) ?? Data(), as: UTF8.self)
        return log.split(separator: "\n").compactMap { line in
            guard let open = line.firstIndex(of: "\""), let close = line[line.index(after: open)...].firstIndex(of: "\"") else {
                return nil
            }
            let words = line[line.index(after: open)..<close].split(separator: " ")
            return words.count == 3 ? "\(words[0]) \(words[1])" : nil
        }
    }

    /// SIGKILL, without waiting (`ChildProcess` reaps it).
    func stop() { process.signal(SIGKILL) }

    deinit { stop() }
}
