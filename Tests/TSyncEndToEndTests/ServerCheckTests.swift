import Foundation
import Testing

/// Nothing is written to a remote before it has answered as a sync server, and `login`
/// asks for no password before that (docs/DESIGN.md §4, "Not a sync server"). The wrong remote is
/// a real static web server whose log tells every request that reached it; the prompts are read on
/// a real pseudo-terminal.
@Suite(.serialized) struct ServerCheckTests {
    /// A static web server gets GETs only: push, pull, sync and login exit 3 saying what it
    /// answered, the queue is as it was and the error table empty.
    @Test func aStaticWebServerGetsNothingButGETs() async throws {
        let web = try await StaticWebServer()
        defer { web.stop() }
        let sandbox = try await TSyncSandbox(remote: web.url)
        try await sandbox.ok(["insert", "todo", #"{"id":"a","title":"one"}"#])
        let before = try await sandbox.snapshot()
        for command in [["push"], ["pull", "todo"], ["sync"], ["login", "--user", "alice", "--password-stdin"]] {
            let seen = web.requests.count
            let result = try await sandbox.run(command, stdin: "secret\n")
            #expect(result.status == 3, "\(command): \(result)")
            #expect(
                result.stderr.contains("\(web.url) does not look like a tsync or Mobile Apps v2 server (it answered GET /tables/"),
                "\(result)")
            #expect(result.stderr.contains("HTTP 404, text/html"), "it says what it answered: \(result)")
            #expect(result.stderr.contains("nothing was sent"), "\(result)")
            await #expect(try sandbox.snapshot() == before, "the queue is untouched after \(command)")
            await #expect(try sandbox.ok(["status", "--json"]).contains(#""errors":0"#), "nothing in the error table after \(command)")
            #expect(web.requests.count - seen <= 2, "the batch route's discovery and one table's GET at most: \(web.requests)")
        }
        let requests = web.requests
        #expect(!requests.isEmpty, "the server's log shows the requests")
        #expect(requests.allSatisfy { $0.hasPrefix("GET ") }, "no write reached the wrong server: \(requests)")
        #expect(requests.contains("GET /tables/todo?%24top=0"), "the table's route was tried: \(requests)")
    }

    /// A plain v2 server (no batch route, an HTML 404 for it) still takes pushes: one GET of the
    /// table proves it, at the cost of that one request.
    @Test func aPlainV2ServerIsProvenByOneGETOfATable() async throws {
        let server = try await ServeFixture(options: ["--max-batch", "0"])
        let proxy = try LossyProxy(upstream: server.url)
        proxy.replace(
            "GET", "/tables/$batch", status: 404, contentType: "text/html", body: "<html>Not Found</html>", forward: false, count: 100)
        let store = try await TSyncSandbox(remote: proxy.url)
        try await store.ok(["insert", "todo", #"{"id":"a","title":"one"}"#])
        let push = try await store.run(["push", "-v"])
        #expect(push.status == 0, "\(push)")
        let probes = push.stderr.split(separator: "\n").filter { $0.contains("/tables/todo?%24top=0") }
        #expect(probes.count == 1, "one GET of the table: \(push.stderr)")
        #expect(try await server.record("todo", "a")?["title"] == "one")

        // A page read proves it too: a pull with nothing to push sends no probe.
        let other = try await TSyncSandbox(remote: proxy.url)
        let pull = try await other.run(["pull", "todo", "-v"])
        #expect(pull.status == 0, "\(pull)")
        #expect(!pull.stderr.contains("%24top=0"), "\(pull.stderr)")
        await #expect(try other.ok(["get", "todo", "a"]).contains("one"))

        // tsync serve without the batch route answers a JSON 400 there: that is a v2 answer already.
        try await store.ok(["remote", server.url])
        try await store.ok(["insert", "todo", #"{"id":"b"}"#])
        let direct = try await store.run(["push", "-v"])
        #expect(direct.status == 0, "\(direct)")
        #expect(!direct.stderr.contains("%24top=0"), "\(direct.stderr)")
    }

    /// `login` on a terminal: an unreachable remote, a static web server and an untrusted
    /// certificate are each exit 3 with no "password for" prompt; a real server prompts and logs in.
    @Test func loginChecksTheServerBeforeAskingForAPassword() async throws {
        var environment = PseudoTerminal.environment(NetworkTests.systemTrust)
        for name in ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"] {
            environment.removeValue(forKey: name)
        }
        let web = try await StaticWebServer()
        defer { web.stop() }
        let authority = try await CertificateAuthority()
        let tls = try await authority.serve(certificate: authority.serverCertificate)
        defer { tls.stop() }
        let refusing = try LoopbackListener.refusing()
        defer { refusing.close() }
        let closed = refusing.port
        let cases: [(remote: String, says: String)] = [
            ("http://127.0.0.1:\(closed)", "connection refused"),
            (web.url, "does not look like a tsync or Mobile Apps v2 server"),
            (try await tls.waitForAddress(), "is not trusted"),
        ]
        for (remote, says) in cases {
            let sandbox = try await TSyncSandbox(remote: remote)
            let terminal = try PseudoTerminal(["login", "--user", "alice"], in: sandbox.path, environment: environment)
            let status = await terminal.wait(timeout: 30)
            #expect(status == 3, "\(remote): exit 3 without waiting for a password (nil: it waited): \(terminal.output)")
            #expect(terminal.output.contains(says), "\(remote): \(terminal.output)")
            #expect(!terminal.output.contains("password for"), "\(remote): no prompt: \(terminal.output)")
        }
        #expect(web.requests.allSatisfy { $0.hasPrefix("GET ") }, "\(web.requests)")

        let server = try await ServeFixture(authenticated: true)
        let sandbox = try await TSyncSandbox(remote: server.url)
        let terminal = try PseudoTerminal(["login", "--user", "alice"], in: sandbox.path, environment: environment)
        await #expect(terminal.read(until: "password for alice: ", timeout: 30), "a sync server: the prompt comes: \(terminal.output)")
        terminal.type(ServeFixture.password + "\n")
        await #expect(terminal.wait(timeout: 30) == 0, "\(terminal.output)")
        #expect(terminal.output.contains("logged in to \(server.url) as alice"), "\(terminal.output)")

        // Scripts keep --password-stdin.
        let scripted = try await TSyncSandbox(remote: server.url)
        let login = try await scripted.run(["login", "--user", "alice", "--password-stdin"], stdin: ServeFixture.password + "\n")
        #expect(login.status == 0, "\(login)")
        await #expect(try scripted.run(["whoami"]).stdout == "alice at \(server.url)\n")
    }
}
