import Foundation
import Testing
import TSyncModel

/// The reading side: what a pull, a sync and a login make of answers that caches,
/// gateways and proxies rewrite, against the real `tsync` binary.
@Suite(.serialized) struct ReadFailureTests {
    static func record(_ id: String, at ms: Int64, text: String? = nil) -> String {
        let time = Timestamp(millisecondsSinceEpoch: 1_800_000_000_000 + ms).iso8601
        return
            #"{"id": "\#(id)", "text": "\#(text ?? id)", "createdAt": "\#(time)", "updatedAt": "\#(time)", "version": "v\#(ms)", "deleted": false}"#
    }

    /// `bytes` compressed by the system's gzip.
    static func gzip(_ bytes: [UInt8]) async throws -> [UInt8] {
        let directory = try TemporaryDirectory()
        let input = try directory.write("page.json", String(decoding: bytes, as: UTF8.self))
        let output = (directory.path as NSString).appendingPathComponent("page.json.gz")
        let child = try ChildProcess("/bin/gzip", ["-c", "-n", "-9"], stdin: input, stdout: output)
        await child.wait()
        return Array(try #require(FileManager.default.contents(atPath: output)))
    }

    /// A page that a proxy compressed far beyond 50:1 (records that repeat their fields do) is
    /// read: the bound is on the decoded size, not the ratio. It was refused as "cannot reach
    /// the server" (exit 3), for ever.
    @Test func aPageCompressedFarBeyondFiftyToOneIsRead() async throws {
        let text = String(repeating: "the same words again and again ", count: 200)
        let page = Array(("[" + (0..<400).map { Self.record("r\($0)", at: Int64($0), text: text) }.joined(separator: ",") + "]").utf8)
        let compressed = try await Self.gzip(page)
        #expect(page.count > 100 * compressed.count, "\(page.count) bytes to \(compressed.count)")
        let pages = ScriptedCounter()
        let server = try ScriptedServer { _, _ in
            guard pages.next() == 1 else { return .json(200, "[]") }
            return ScriptedServer.Answer(
                status: 200, headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")], body: compressed)
        }
        let store = try await TSyncSandbox(remote: server.url)
        let pull = try await store.run(["pull", "todo", "--page-size", "1000"])
        #expect(pull.status == 0, "\(pull)")
        #expect(try await store.ok(["query", "todo", "--select", "id"]).split(separator: "\n").count == 400)
    }

    /// A compressed body that does not decode is said as what it is, not as a server that
    /// cannot be reached; nothing is written (exit 3).
    @Test func anAnswerThatCannotBeDecodedSaysSo() async throws {
        let compressed = try await Self.gzip(Array(("[" + Self.record("a", at: 1) + "]").utf8))
        let damaged = Array(compressed.prefix(12)) + [UInt8](repeating: 0xFF, count: 40)
        let server = try ScriptedServer { _, _ in
            ScriptedServer.Answer(
                status: 200, headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")], body: damaged)
        }
        let store = try await TSyncSandbox(remote: server.url)
        let pull = try await store.run(["pull", "todo"])
        #expect(pull.status == 3, "\(pull)")
        #expect(pull.stderr.contains("cannot decode the answer") && pull.stderr.contains("compressed body"), "\(pull.stderr)")
        #expect(!pull.stderr.contains("cannot reach"), "\(pull.stderr)")
    }

    /// A read the server fails (5xx), or a page cut on the way, is "not now" (exit 3) as the same
    /// answer to a push is; it was exit 1. A page the JSON reader refuses keeps its position.
    @Test func aFailedReadIsNotNow() async throws {
        let failing = try ScriptedServer { _, _ in .json(500, #"{"error": "internal error"}"#) }
        let store = try await TSyncSandbox(remote: failing.url)
        let failed = try await store.run(["pull", "todo", "--query-id", "all"])
        #expect(failed.status == 3, "\(failed)")
        #expect(failed.stderr.contains("reading table todo") && failed.stderr.contains("HTTP 500"), "\(failed.stderr)")

        let page = "[" + Self.record("a", at: 1) + "," + Self.record("b", at: 2) + "]"
        let cut = String(page.prefix(page.count - 30))
        let cutting = try ScriptedServer { _, _ in .json(200, cut) }
        let other = try await TSyncSandbox(remote: cutting.url)
        let pull = try await other.run(["pull", "todo"])
        #expect(pull.status == 3, "\(pull)")
        #expect(pull.stderr.contains("not valid JSON") && pull.stderr.contains("line 1, column"), "\(pull.stderr)")
        #expect(try await other.run(["query", "todo"]).status == 65, "nothing of the page was written")

        // A 4xx is the server's refusal, as before: exit 1.
        let refusing = try ScriptedServer { _, _ in .json(403, #"{"error": "forbidden"}"#) }
        let third = try await TSyncSandbox(remote: refusing.url)
        #expect(try await third.run(["pull", "todo"]).status == 1)
    }

    /// `Retry-After` read in both forms, bounded, and said in minutes when long (it was printed
    /// raw: "retry after Wed, 21 Oct 2037 07:28:00 GMT s", "-5 s").
    @Test(arguments: [
        ("Wed, 21 Oct 2037 07:28:00 GMT", "retry in more than an hour"),
        ("Sun, 06 Nov 1994 08:49:37 GMT", "retry after 10 min"),  // 10 minutes after the answer's Date
        ("600", "retry after 10 min"),
        ("45", "retry after 45 s"),
        ("-5", ""),
        ("soon", ""),
    ])
    func retryAfterIsReadAndBounded(value: String, said: String) async throws {
        let server = try ScriptedServer { _, _ in
            .json(503, #"{"error": "busy"}"#, headers: [("Retry-After", value), ("Date", "Sun, 06 Nov 1994 08:39:37 GMT")])
        }
        let store = try await TSyncSandbox(remote: server.url)
        let pull = try await store.run(["pull", "todo"])
        #expect(pull.status == 3, "\(pull)")
        if said.isEmpty {
            #expect(!pull.stderr.contains("retry"), "\(pull.stderr)")
        } else {
            #expect(pull.stderr.contains(said), "\(pull.stderr)")
        }
        #expect(!pull.stderr.contains(value) || value.allSatisfy(\.isNumber), "the value is not repeated raw: \(pull.stderr)")
    }

    /// A login answered with another account's token, or with an empty one, is refused (exit 4)
    /// and nothing is saved; it said "logged in as bob", exit 0.
    @Test(arguments: [
        (#"{"authenticationToken": "t0k3n", "user": {"userId": "bob"}}"#, "\"bob\""),
        (#"{"authenticationToken": "", "user": {"userId": "alice"}}"#, "no token"),
    ])
    func aLoginForAnotherAccountOrWithoutATokenIsRefused(body: String, said: String) async throws {
        let server = try ScriptedServer { method, target in
            if method == "POST", target.hasPrefix("/.auth/login") { return .json(200, body) }
            return .json(200, "[]")
        }
        let store = try await TSyncSandbox(remote: server.url)
        let login = try await store.run(["login", "--user", "alice", "--password-stdin"], stdin: "secret\n")
        #expect(login.status == 4, "\(login)")
        #expect(login.stderr.contains(said), "\(login.stderr)")
        #expect(!FileManager.default.fileExists(atPath: store.path + "/.tsync/credentials"), "nothing was saved")
    }

    /// Table names are case-insensitive on the server: the store refuses a second spelling of a
    /// table it knows (`TXA` and `tXa` were two local tables of one server table), before anything
    /// is sent; a store that holds two spellings already says which and how to keep one.
    @Test func aTableIsOneTableWhateverItsCase() async throws {
        let server = try ScriptedServer { _, _ in .json(200, "[]") }
        let store = try await TSyncSandbox(remote: server.url)
        try await store.ok(["insert", "TXA", #"{"id": "a"}"#])
        let second = try await store.run(["insert", "tXa", #"{"id": "b"}"#])
        #expect(second.status == 65, "\(second)")
        #expect(second.stderr.contains("as TXA") && second.stderr.contains("case-insensitive"), "\(second.stderr)")
        let pull = try await store.run(["pull", "txa"])
        #expect(pull.status == 65, "\(pull)")
        #expect(server.requests.isEmpty, "nothing was sent: \(server.requests)")
        #expect(try await store.ok(["query", "TXA", "--select", "id"]).split(separator: "\n").count == 1)

        // A store made before the rule, with both spellings.
        let (status, errors) = try await ChildProcess.run(
            "/usr/bin/sqlite3", [store.path + "/.tsync/store.sqlite", "INSERT INTO tables (name, created_at) VALUES ('tXa', '2026-01-01')"])
        #expect(status == 0, "\(errors)")
        let both = try await store.run(["insert", "TXA", #"{"id": "c"}"#])
        #expect(both.status == 65, "\(both)")
        #expect(both.stderr.contains("also as tXa") && both.stderr.contains("tsync purge tXa"), "\(both.stderr)")
    }

    /// A store that pulls `alpha` and `beta` through `proxy` by saved queries, and a record of
    /// each on the server.
    static func twoSavedQueries(_ fixture: ServeFixture, through proxy: LossyProxy) async throws -> TSyncSandbox {
        let store = try await TSyncSandbox(remote: proxy.url)
        for table in ["alpha", "beta"] {
            let made = try await HTTP.send("POST", fixture.url + "/tables/\(table)", body: #"{"id": "\#(table)1", "text": "one"}"#)
            #expect(made.status == 201, "\(made.body)")
            try await store.ok(["pull", table, "--query-id", "all"])
        }
        return store
    }

    /// `sync` goes on past a table whose read fails, pulls the others, says each failure, and
    /// exits with the worst (1 for a refusal, 3 for "not now"); it stopped at the first.
    @Test(arguments: [(403, Int32(1)), (404, Int32(1)), (500, Int32(3))])
    func syncGoesOnPastATableWhoseReadFails(status: Int, exit: Int32) async throws {
        let fixture = try await ServeFixture()
        let proxy = try LossyProxy(upstream: fixture.url)
        let store = try await Self.twoSavedQueries(fixture, through: proxy)
        let made = try await HTTP.send("POST", fixture.url + "/tables/beta", body: #"{"id": "beta2", "text": "two"}"#)
        #expect(made.status == 201)
        proxy.replace(
            "GET", "/tables/alpha", status: status, contentType: "application/json", body: #"{"error": "no"}"#, forward: false, count: 100)
        let sync = try await store.run(["sync", "--json"])
        #expect(sync.status == exit, "\(sync)")
        #expect(sync.stderr.contains("query all of alpha") && sync.stderr.contains("HTTP \(status)"), "\(sync.stderr)")
        #expect(try await store.ok(["get", "beta", "beta2"]).contains("two"), "beta was pulled after alpha failed")
        let report = try JSONOutput.object(sync.stdout)
        guard case .array(let pulls)? = report["pulls"] else { throw TSyncTestError("no pulls: \(sync.stdout)") }
        #expect(pulls.count == 1 && pulls.first?.objectValue?["table"] == .string("beta"), "\(pulls)")
        guard case .array(let failures)? = report["failures"] else { throw TSyncTestError("no failures: \(sync.stdout)") }
        #expect(failures.count == 1, "\(failures)")
    }

    /// An item the server answers 500 every time (a poisoned record) no longer blocks the pull of
    /// its table or `sync`; `resolve --park` sets it aside as a server error, and `resolve`
    /// settles it like any error. Before, every pull and sync stopped at the push (exit 3) and
    /// nothing could set the operation aside.
    @Test func aPoisonedItemBlocksNoPullAndCanBeParked() async throws {
        let fixture = try await ServeFixture(options: ["--max-batch", "0"])
        let proxy = try LossyProxy(upstream: fixture.url)
        let store = try await Self.twoSavedQueries(fixture, through: proxy)
        try await store.ok(["update", "alpha", "alpha1", #"{"text": "mine"}"#])
        proxy.replace(
            "PATCH", "/tables/alpha/alpha1", status: 500, contentType: "application/json", body: #"{"error": "internal error"}"#,
            forward: false, count: 1000)
        _ = try await HTTP.send("POST", fixture.url + "/tables/alpha", body: #"{"id": "alpha2", "text": "theirs"}"#)

        let pull = try await store.run(["pull", "alpha", "--query-id", "all"])
        #expect(pull.status == 3, "\(pull)")
        #expect(pull.stderr.contains("HTTP 500"), "\(pull.stderr)")
        #expect(try await store.ok(["get", "alpha", "alpha2"]).contains("theirs"), "the pull ran after the push stopped")
        _ = try await HTTP.send("POST", fixture.url + "/tables/beta", body: #"{"id": "beta2", "text": "two"}"#)
        let sync = try await store.run(["sync"])
        #expect(sync.status == 3, "\(sync)")
        #expect(try await store.ok(["get", "beta", "beta2"]).contains("two"), "sync pulled after the push stopped")

        #expect(try await store.run(["resolve", "--park", "alpha/nothing"]).status == 65)
        let park = try await store.run(["resolve", "--park", "alpha/alpha1", "--json"])
        #expect(park.status == 0, "\(park)")
        #expect(try JSONOutput.array(park.stdout).first?.objectValue?["itemId"] == .string("alpha1"), "\(park.stdout)")
        let errors = try JSONOutput.array(try await store.ok(["conflicts", "--json"]))
        #expect(errors.count == 1 && errors.first?.objectValue?["class"] == .string("server-error"), "\(errors)")
        let parked = try await store.run(["sync"])
        #expect(parked.status == 2, "the error table holds it, nothing is in flight: \(parked)")
        #expect(try await store.ok(["resolve", "alpha/alpha1", "--discard"]).isEmpty)
        #expect(try await store.ok(["status", "--porcelain"]).isEmpty, "nothing queued")
        #expect(try await store.ok(["get", "alpha", "alpha1"]).contains("one"), "back to the server's copy")
    }
}
