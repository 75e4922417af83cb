import Foundation
import Testing
import TSyncModel

/// `tsync watch` against the real `tsync serve` (docs/DESIGN.md §8.1): changes both ways as they
/// happen, `--exec`, signals, a server restart, a plain server, per-user isolation, PostgreSQL.
/// Every wait is bounded; nothing asserts a duration.
@Suite(.serialized) struct LiveSyncTests {
    /// A running `tsync watch --json`, its events read as they come.
    final class Watcher {
        let process: TSyncProcess

        init(_ store: TSyncSandbox, _ arguments: [String] = [], environment: [String: String] = [:]) throws {
            process = try TSyncProcess(["watch", "--json"] + arguments, in: store.path, environment: environment)
        }

        var events: [[String: JSONValue]] {
            process.stdoutSoFar.split(separator: "\n").compactMap { try? JSONParser.parse(String($0)).objectValue }
        }

        func events(_ kind: String) -> [[String: JSONValue]] { events.filter { $0["event"]?.stringValue == kind } }

        /// Waits (at most `seconds`) for an event of `kind` (and `id`); fails the test if none comes.
        @discardableResult
        func waitFor(
            _ kind: String, id: String? = nil, count: Int = 1, seconds: Double = 20, sourceLocation: SourceLocation = #_sourceLocation
        )
            async -> [String: JSONValue]?
        {
            let found = try? await eventually(timeout: .milliseconds(Int(seconds * 1000)), every: .milliseconds(20)) {
                events(kind).filter { id == nil || $0["id"]?.stringValue == id }
            } until: {
                $0.count >= count || !process.isRunning
            }
            if let found, found.count >= count { return found.last }
            Issue.record(
                "no \(kind) event\(id.map { " for \($0)" } ?? "") (×\(count)); stdout: \(process.stdoutSoFar) stderr: \(process.stderrSoFar)",
                sourceLocation: sourceLocation)
            return nil
        }

        func stop(_ signal: Int32 = SIGINT) async -> TSyncResult {
            process.signal(signal)
            return await process.wait(timeout: 60)
        }
    }

    /// Two stores of one server, each having pulled `todo` with a query id.
    static func twoStores(_ server: ServeFixture) async throws -> (TSyncSandbox, TSyncSandbox) {
        let a = try await TSyncSandbox(remote: server.url)
        let b = try await TSyncSandbox(remote: server.url)
        try await a.ok(["insert", "todo", #"{"id": "x1", "n": 1}"#])
        try await a.ok(["push"])
        for store in [a, b] { try await store.ok(["pull", "todo", "--query-id", "all"]) }
        return (a, b)
    }

    @Test func changesGoBothWaysAsTheyHappen() async throws {
        let server = try await ServeFixture()
        let (a, b) = try await Self.twoStores(server)
        let execOut = (b.path as NSString).appendingPathComponent("exec.out")
        let watcher = try Watcher(b, ["--exec", "cat >> '\(execOut)'"])
        await watcher.waitFor("connected")

        // A's insert reaches B's table, as an event.
        try await a.ok(["insert", "todo", #"{"id": "x2", "n": 2}"#])
        try await a.ok(["push"])
        let pulled = await watcher.waitFor("pulled", id: "x2")
        #expect(pulled?["table"] == "todo")
        #expect(pulled?["queryId"] == "all")
        #expect(pulled?["at"]?.stringValue != nil)
        await #expect(try b.ok(["get", "todo", "x2"]).contains(#""n": 2"#))

        // An insert into B's store by another command is pushed by the watcher and reaches A.
        try await b.ok(["insert", "todo", #"{"id": "y1", "n": 3}"#])
        let pushed = await watcher.waitFor("pushed", id: "y1")
        #expect(pushed?["operation"] == "insert")
        #expect(try await server.record("todo", "y1")?["n"] == 3)
        try await a.ok(["pull", "todo", "--query-id", "all"])
        await #expect(try a.ok(["get", "todo", "y1"]).contains(#""n": 3"#))

        // A delete arrives as one.
        try await a.ok(["delete", "todo", "x1"])
        try await a.ok(["push"])
        await watcher.waitFor("deleted", id: "x1")
        await #expect(try b.run(["get", "todo", "x1"]).status != 0)

        let result = await watcher.stop(SIGINT)
        #expect(result.status == 130, "\(result)")
        // Each change once: B's own push came back from the server and is no change of B's.
        #expect(watcher.events("pulled").compactMap { $0["id"]?.stringValue } == ["x2"], "\(result.stdout)")
        // --exec got every batch's events on its stdin.
        let batches = String(decoding: FileManager.default.contents(atPath: execOut) ?? Data(), as: UTF8.self)
        for id in ["x2", "y1", "x1"] { #expect(batches.contains(#""id":"\#(id)""#), "\(batches)") }
        #expect(!batches.contains(#""event":"connected""#))
        // Nothing queued, nothing failed: the store is as a finished sync leaves it.
        await #expect(try b.ok(["status", "--porcelain"]).isEmpty)
    }

    @Test func aFailingExecIsReportedAndWatchingGoesOn() async throws {
        let server = try await ServeFixture()
        let (a, b) = try await Self.twoStores(server)
        let watcher = try Watcher(b, ["--exec", "cat > /dev/null; exit 3"])
        await watcher.waitFor("connected")
        for id in ["e1", "e2"] {
            try await a.ok(["insert", "todo", #"{"id": "\#(id)"}"#])
            try await a.ok(["push"])
            await watcher.waitFor("pulled", id: id)
        }
        let result = await watcher.stop(SIGTERM)
        #expect(result.status == 143, "\(result)")
        #expect(result.stderr.contains("--exec: the command exited 3; watching goes on"), "\(result.stderr)")
    }

    @Test func timeoutEndsTheWatchWithZero() async throws {
        let server = try await ServeFixture()
        let (_, b) = try await Self.twoStores(server)
        let result = try await b.run(["watch", "--timeout", "1"])
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.contains("watching (connected)"), "\(result.stderr)")
    }

    @Test func aSignalLeavesTheStoreConsistentWithTheQueueIntact() async throws {
        let server = try await ServeFixture()
        let (_, b) = try await Self.twoStores(server)
        let watcher = try Watcher(b, ["--table", "todo"])
        await watcher.waitFor("connected")
        let result = await watcher.stop(SIGTERM)
        #expect(result.status == 143, "\(result)")
        #expect(result.stderr.contains("interrupted"), "\(result.stderr)")
        // The checkpoint is where the last written page left it: a pull finds nothing new.
        await #expect(try b.ok(["pull", "todo", "--query-id", "all", "--json"]).contains(#""received":0"#))
        await #expect(try b.ok(["status", "--porcelain"]).isEmpty)
    }

    @Test func conflictsAreReportedAndSettledByThePolicy() async throws {
        let server = try await ServeFixture()
        let (a, b) = try await Self.twoStores(server)
        // B watches another table, so its copy of todo/x1 stays the old one.
        try await a.ok(["insert", "other", #"{"id": "o1"}"#])
        try await a.ok(["push"])
        try await b.ok(["pull", "other", "--query-id", "o"])
        try await a.ok(["update", "todo", "x1", #"{"n": 10}"#])
        try await a.ok(["push"])

        let failing = try Watcher(b, ["--table", "other"])
        await failing.waitFor("connected")
        try await b.ok(["update", "todo", "x1", #"{"n": 20}"#])
        let conflict = await failing.waitFor("conflict", id: "x1")
        #expect(conflict?["operation"] == "update")
        #expect(conflict?["message"]?.stringValue?.isEmpty == false)
        await #expect(failing.stop().status == 130)

        // Under a policy the conflict left is settled at the start, and the server's copy kept.
        let settling = try Watcher(b, ["--table", "other", "--on-conflict", "theirs"])
        let settled = await settling.waitFor("settled", id: "x1")
        #expect(settled?["policy"] == "theirs")
        await #expect(settling.stop().status == 130)
        await #expect(try b.ok(["get", "todo", "x1"]).contains(#""n": 10"#))
        await #expect(try b.ok(["status", "--porcelain"]).isEmpty)
    }

    @Test func aRestartedServerIsReconnectedWithNothingLostOrDoubled() async throws {
        let server = try await ServeFixture()
        let (a, b) = try await Self.twoStores(server)
        let port = try #require(server.url.split(separator: ":").last.map(String.init))
        let watcher = try Watcher(b)
        await watcher.waitFor("connected")
        await server.kill()
        await watcher.waitFor("reconnecting")
        // Queued in B while the server is away: pushed once it is back.
        try await b.ok(["insert", "todo", #"{"id": "offline"}"#])
        let restarted = try ServerProcess(
            arguments: ["serve", "--db", "sqlite:" + server.databasePath, "--port", port, "--no-auth"], log: server.directory.path)
        defer { restarted.stop() }
        _ = try await restarted.waitForAddress()
        await watcher.waitFor("connected", count: 2)
        await watcher.waitFor("pushed", id: "offline")
        try await a.ok(["insert", "todo", #"{"id": "after"}"#])
        try await a.ok(["push"])
        await watcher.waitFor("pulled", id: "after")
        let result = await watcher.stop()
        #expect(result.status == 130, "\(result)")
        #expect(watcher.events("pulled").filter { $0["id"] == "after" }.count == 1, "applied once")
        #expect(watcher.events("pushed").filter { $0["id"] == "offline" }.count == 1)
        try await a.ok(["pull", "todo", "--query-id", "all"])
        await #expect(try a.ok(["query", "todo", "--json"]) == (try b.ok(["query", "todo", "--json"])), "both stores hold the same")
    }

    @Test func aServerDownAtTheStartIsWaitedFor() async throws {
        let server = try await ServeFixture()
        let (a, b) = try await Self.twoStores(server)
        let port = try #require(server.url.split(separator: ":").last.map(String.init))
        await server.kill()
        // --timeout ends a watch that never reached its server as any other: 0.
        let timedOut = try await b.run(["watch", "--timeout", "1"])
        #expect(timedOut.status == 0, "\(timedOut)")
        #expect(timedOut.stderr.contains("reconnecting"), "\(timedOut.stderr)")

        let watcher = try Watcher(b)
        let reconnecting = await watcher.waitFor("reconnecting")
        #expect(reconnecting?["retryIn"] != nil)
        #expect(watcher.events("connected").isEmpty)
        let restarted = try ServerProcess(
            arguments: ["serve", "--db", "sqlite:" + server.databasePath, "--port", port, "--no-auth"], log: server.directory.path)
        defer { restarted.stop() }
        _ = try await restarted.waitForAddress()
        await watcher.waitFor("connected")
        try await a.ok(["insert", "todo", #"{"id": "late"}"#])
        try await a.ok(["push"])
        await watcher.waitFor("pulled", id: "late")
        let result = await watcher.stop()
        #expect(result.status == 130, "\(result)")
    }

    /// An operation that leaves the queue because another command pushed it is reported as
    /// pushed, once, even one the watch never saw queued: it was queued and pushed by other
    /// commands while the watch was stopped (SIGSTOP), so only the delivered operations tells.
    @Test func anOperationPushedByAnotherCommandIsReportedOnce() async throws {
        let server = try await ServeFixture()
        let (_, b) = try await Self.twoStores(server)
        let watcher = try Watcher(b)
        await watcher.waitFor("connected")
        watcher.process.signal(SIGSTOP)
        try await b.ok(["insert", "todo", #"{"id": "elsewhere"}"#])
        let push = try await b.run(["push", "--json"])
        watcher.process.signal(SIGCONT)
        #expect(push.status == 0, "\(push)")
        #expect(try JSONOutput.object(push.stdout)["pushed"] == 1, "the other command pushed it: \(push.stdout)")
        let pushed = await watcher.waitFor("pushed", id: "elsewhere")
        #expect(pushed?["operation"] == "insert")
        #expect(pushed?["version"] == (try await server.record("todo", "elsewhere"))?["version"])
        // Whatever comes next, that operation is not reported again.
        try await b.ok(["insert", "todo", #"{"id": "next"}"#])
        await watcher.waitFor("pushed", id: "next")
        let result = await watcher.stop()
        #expect(result.status == 130, "\(result)")
        #expect(watcher.events("pushed").filter { $0["id"] == "elsewhere" }.count == 1, "\(result.stdout)")
    }

    /// Operations queued while the watch pushes, and pushed by another command's push while the
    /// watch runs: each is reported pushed exactly once, whoever sent it.
    @Test func everyQueuedOperationIsReportedPushedOnce() async throws {
        let server = try await ServeFixture()
        let (_, b) = try await Self.twoStores(server)
        let watcher = try Watcher(b)
        await watcher.waitFor("connected")
        let ids = (1...12).map { "q\($0)" }
        for (index, id) in ids.enumerated() {
            try await b.ok(["insert", "todo", #"{"id": "\#(id)"}"#])
            if index % 4 == 3 { try await b.ok(["push"]) }
        }
        for id in ids { await watcher.waitFor("pushed", id: id) }
        await #expect(try b.ok(["status", "--porcelain"]).isEmpty)
        let result = await watcher.stop()
        #expect(result.status == 130, "\(result)")
        for id in ids {
            #expect(watcher.events("pushed").filter { $0["id"]?.stringValue == id }.count == 1, "\(id): \(result.stdout)")
            #expect(try await server.record("todo", id) != nil)
        }
    }

    /// A server (or a proxy) that says it held the read (`Preference-Applied: wait`) but answers
    /// an empty page at once: asking again at once would be a storm of requests, so the watch
    /// waits its interval, as against a plain server.
    @Test func aWaitClaimedButNotHeldIsNoStorm() async throws {
        let server = try ScriptedServer { method, target in
            if method == "GET", target.hasPrefix("/tables/$batch") { return .json(404, #"{"error": "no"}"#) }
            return .json(200, "[]", headers: [("Preference-Applied", "wait=20")])
        }
        let store = try await TSyncSandbox(remote: server.url)
        try await store.ok(["pull", "todo", "--query-id", "all"])
        let before = server.requests.count
        let watch = try await store.run(["watch", "--timeout", "3", "--interval", "1"])
        #expect(watch.status == 0, "\(watch)")
        let reads = server.requests.dropFirst(before).filter { $0.hasPrefix("GET /tables/todo") }.count
        #expect(reads >= 2 && reads <= 10, "about one read per interval over 3 s, not a storm: \(reads)")
    }

    @Test func aPlainServerIsPolledAndThatIsSaidOnce() async throws {
        let server = try await ServeFixture(options: ["--max-watchers", "0"])
        let (a, b) = try await Self.twoStores(server)
        let watcher = try Watcher(b, ["--interval", "0.2"])
        await watcher.waitFor("connected")
        await watcher.waitFor("polling")
        try await a.ok(["insert", "todo", #"{"id": "p1"}"#])
        try await a.ok(["push"])
        await watcher.waitFor("pulled", id: "p1")
        let result = await watcher.stop()
        #expect(result.status == 130)
        let polling = watcher.events("polling")
        #expect(polling.count == 1, "said once over many reads: \(result.stdout)")
        #expect(polling.first?["interval"] == .double(0.2))
    }

    @Test func aWatcherNeverSeesAnotherUsersRecords() async throws {
        let server = try await ServeFixture(authenticated: true, options: ["--per-user", "notes"])
        let add = try await TSyncProcess.run(
            ["user", "add", "bob", "--password-stdin", "--db", "sqlite:" + server.databasePath], in: server.directory.path,
            stdin: "bob password\n")
        #expect(add.status == 0, "\(add)")
        let alice = try await TSyncSandbox(remote: server.url)
        let bob = try await TSyncSandbox(remote: server.url)
        let bobsOther = try await TSyncSandbox(remote: server.url)
        try await alice.ok(["login", "--user", "alice", "--password-stdin"], stdin: ServeFixture.password + "\n")
        for store in [bob, bobsOther] { try await store.ok(["login", "--user", "bob", "--password-stdin"], stdin: "bob password\n") }
        try await bob.ok(["pull", "notes", "--query-id", "mine"])
        let watcher = try Watcher(bob)
        await watcher.waitFor("connected")
        try await alice.ok(["insert", "notes", #"{"id": "alices"}"#])
        try await alice.ok(["push"])
        try await bobsOther.ok(["insert", "notes", #"{"id": "bobs"}"#])
        try await bobsOther.ok(["push"])
        await watcher.waitFor("pulled", id: "bobs")
        let result = await watcher.stop()
        #expect(result.status == 130)
        #expect(!result.stdout.contains("alices"), "\(result.stdout)")
        await #expect(try bob.run(["get", "notes", "alices"]).status != 0)
    }

    @Test(.enabled(if: PostgresFixture.adminURL != nil, "TSYNC_TEST_POSTGRES_URL is not set: no PostgreSQL to test against"))
    func aWriteThroughOneInstanceWakesAWatcherOnAnother() async throws {
        let directory = try TemporaryDirectory()
        try await PostgresFixture.withFreshDatabase { db in
            let first = try ServerProcess(arguments: ["serve", "--db", db, "--port", "0", "--no-auth"], log: directory.path)
            defer { first.stop() }
            let second = try ServerProcess(arguments: ["serve", "--db", db, "--port", "0", "--no-auth"], log: directory.path)
            defer { second.stop() }
            let one = try await first.waitForAddress()
            let two = try await second.waitForAddress()
            let writer = try await TSyncSandbox(remote: one)
            let reader = try await TSyncSandbox(remote: two)
            try await reader.ok(["pull", "todo", "--query-id", "all"])
            let watcher = try Watcher(reader)
            await watcher.waitFor("connected")
            // Held by instance two (it applied the wait), then woken by instance one's commit.
            try await second.waitForLog("GET /tables/todo", timeout: .seconds(5))
            try await writer.ok(["insert", "todo", #"{"id": "pg1"}"#])
            try await writer.ok(["push"])
            // Well within the 20 s the held read would last: the commit woke it, not its end.
            await watcher.waitFor("pulled", id: "pg1", seconds: 10)
            await #expect(watcher.stop().status == 130)
        }
    }
}
