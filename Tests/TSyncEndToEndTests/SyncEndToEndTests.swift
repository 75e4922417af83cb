import Foundation
import Testing
import TSyncModel

/// push, pull, conflicts and resolve with the real binaries: `tsync serve` on loopback (SQLite in a
/// temporary directory) and `tsync` stores in temporary directories. Server state is checked with
/// plain HTTP, never through tsync.
@Suite(.serialized) struct SyncEndToEndTests {
    // MARK: 1. The seeds' tour

    @Test func offlineChangesWaitForTheServerThenPush() async throws {
        let server = try await ServeFixture(authenticated: true)
        let refusing = try LoopbackListener.refusing()
        defer { refusing.close() }
        let store = try await TSyncSandbox(remote: "http://127.0.0.1:\(refusing.port)")
        try await store.ok(["insert", "todoitem", #"{"id": "milk", "text": "buy milk", "complete": false}"#])
        try await store.ok(["insert", "todoitem", #"{"id": "bread", "text": "buy bread", "complete": false}"#])
        #expect(try await store.ok(["status", "--porcelain"]) == "A\ttodoitem\tmilk\nA\ttodoitem\tbread\n")

        let offline = try await store.run(["push"])
        #expect(offline.status == 3, "\(offline)")
        #expect(offline.stderr.contains("nothing was lost"))
        #expect(offline.stderr.contains("(connection refused: nothing listens at that port)"), "\(offline.stderr)")
        #expect(try await store.ok(["status", "--porcelain"]) == "A\ttodoitem\tmilk\nA\ttodoitem\tbread\n")

        try await store.ok(["remote", server.url])
        let anonymous = try await store.run(["push"])
        #expect(anonymous.status == 4, "\(anonymous)")
        #expect(anonymous.stderr.contains("tsync login"))
        #expect(try await store.ok(["status", "--porcelain"]) == "A\ttodoitem\tmilk\nA\ttodoitem\tbread\n")

        let login = try await store.run(["login", "--user", "alice", "--password-stdin"], stdin: ServeFixture.password + "\n")
        #expect(login.status == 0, "\(login)")
        let credentials = (store.path as NSString).appendingPathComponent(".tsync/credentials")
        let permissions = try FileManager.default.attributesOfItem(atPath: credentials)[.posixPermissions] as? NSNumber
        #expect(permissions?.intValue == 0o600)
        let token = try #require(
            try JSONParser.parse(String(contentsOfFile: credentials, encoding: .utf8)).objectValue?["token"]?.stringValue)
        #expect(!login.stdout.contains(token) && !login.stderr.contains(token))

        #expect(try await store.ok(["push", "--dry-run"]) == "A\ttodoitem\tmilk\nA\ttodoitem\tbread\n")
        let dryRun = try JSONOutput.object(try await store.ok(["push", "--dry-run", "--json"]))
        #expect(dryRun["dryRun"] == true && JSONOutput.int(dryRun["pushed"]) == 0)
        #expect(try await server.records("todoitem").isEmpty, "a dry run sends nothing")
        let push = try await store.run(["push", "--json"])
        #expect(push.status == 0, "\(push)")
        #expect(JSONOutput.int(try JSONOutput.object(push.stdout)["pushed"]) == 2)
        #expect(push.stderr.contains("pushed 2"))
        #expect(!push.stdout.contains(token) && !push.stderr.contains(token))
        #expect(try await store.ok(["status", "--porcelain"]) == "")

        let onServer = try await server.records("todoitem")
        #expect(onServer["milk"]?["text"] == "buy milk")
        #expect(onServer["bread"]?["text"] == "buy bread")
        #expect(onServer.count == 2)
        // The local copies took the server's system properties.
        let local = try JSONOutput.object(try await store.ok(["get", "todoitem", "milk", "--json"]))
        #expect(local["version"] != nil && local["version"] == onServer["milk"]?["version"])

        // TSYNC_TOKEN wins over the saved token; logout forgets it.
        let wrongToken = try await store.run(["push"], environment: ["TSYNC_TOKEN": "not-a-token"])
        #expect(wrongToken.status == 0, "nothing to push needs no request: \(wrongToken)")
        try await store.ok(["update", "todoitem", "milk", "--set", "complete=true"])
        let refused = try await store.run(["push"], environment: ["TSYNC_TOKEN": "not-a-token"])
        #expect(refused.status == 4)
        #expect(refused.stderr.contains("the token comes from TSYNC_TOKEN, which `tsync login` does not replace"), "\(refused.stderr)")
        try await store.ok(["logout"])
        #expect(!FileManager.default.fileExists(atPath: credentials))
        #expect(try await store.run(["push"]).status == 4)
        #expect(try await store.ok(["status", "--porcelain"]) == "M\ttodoitem\tmilk\n")
    }

    // MARK: 2. Conflicts

    /// Two stores pull the same item; A changes `fieldA` and pushes, B changes `fieldB` and its
    /// push conflicts (exit 2).
    private func conflict(
        a fieldA: String = "text", b fieldB: String = "text"
    ) async throws -> (server: ServeFixture, a: TSyncSandbox, b: TSyncSandbox) {
        let server = try await ServeFixture()
        let a = try await TSyncSandbox(remote: server.url)
        let b = try await TSyncSandbox(remote: server.url)
        try await a.ok(["insert", "todo", #"{"id": "x", "text": "original", "note": "n0"}"#])
        try await a.ok(["push"])
        try await b.ok(["pull", "todo", "--query-id", "all"])
        try await a.ok(["update", "todo", "x", "--set", "\(fieldA)=\"from a\""])
        try await a.ok(["push"])
        try await b.ok(["update", "todo", "x", "--set", "\(fieldB)=\"from b\""])
        let push = try await b.run(["push"])
        #expect(push.status == 2, "\(push)")
        #expect(push.stderr.contains("1 conflict") && push.stderr.contains("tsync conflicts"))
        return (server, a, b)
    }

    @Test func conflictShowsBothVersions() async throws {
        let (_, _, b) = try await conflict()
        let conflicts = try JSONOutput.array(try await b.ok(["conflicts", "--json"]))
        #expect(conflicts.count == 1)
        let entry = try #require(conflicts.first?.objectValue)
        #expect(JSONOutput.int(entry["status"]) == 412)
        #expect(entry["class"] == "version-conflict")
        #expect(entry["kind"] == "update" && entry["table"] == "todo" && entry["itemId"] == "x")
        #expect(entry["ours"]?.objectValue?["text"] == "from b")
        #expect(entry["theirs"]?.objectValue?["text"] == "from a")
        #expect(entry["base"]?.objectValue?["text"] == "original")
        #expect(entry["differing"] == ["text"])
        #expect(try await b.ok(["status", "--porcelain"]) == "UM\ttodo\tx\n", "U and the kind of the failed operation")
        let show = try await b.ok(["conflicts", "show", "\(JSONOutput.int(entry["id"]) ?? 0)"])
        #expect(show.contains("both changed") && show.contains("\"from a\"") && show.contains("\"from b\""))
        // An operation with an error is not sent again until it is settled.
        #expect(try await b.run(["push"]).status == 2)
        #expect(try JSONOutput.array(try await b.ok(["conflicts", "--json"])).count == 1)
        #expect(try await b.run(["resolve", "999", "--cancel"]).status == 65)
        // The item names its error as well as the error id does; the list shows the
        // id as #N and says what happened, not "HTTP 412".
        #expect(try await b.ok(["conflicts", "show", "todo/x"]) == show)
        let id = JSONOutput.int(entry["id"]) ?? 0
        let listed = try await b.ok(["conflicts"])
        #expect(listed.hasPrefix("#\(id)\tupdate todo/x\t412 version-conflict: the server has a newer version ("), "\(listed)")
        #expect(listed.contains("it differs from yours in text") && !listed.contains("HTTP 412"), "\(listed)")
        #expect(try await b.ok(["conflicts", "show", "#\(id)"]) == show)
        let unknown = try await b.run(["conflicts", "show", "todo/nosuch"])
        #expect(unknown.status == 65 && unknown.stderr.contains("no error for todo/\"nosuch\""), "\(unknown)")
        #expect(try await b.run(["conflicts", "show", "todo"]).status == 64, "neither an id nor TABLE/ID")
    }

    @Test func resolveNamesTheErrorByItsItem() async throws {
        let (server, _, b) = try await conflict()
        #expect(try await b.run(["resolve", "todo/x", "--theirs"]).status == 0)
        #expect(try await b.ok(["get", "todo", "x"]).contains("from a"))
        #expect(try JSONOutput.array(try await b.ok(["conflicts", "--json"])).isEmpty)
        #expect(try await server.record("todo", "x")?["text"] == "from a")
    }

    @Test func resolveOursMakesTheClientWin() async throws {
        let (server, _, b) = try await conflict()
        let resolve = try await b.run(["resolve", "--all", "--ours", "--push"])
        #expect(resolve.status == 0, "\(resolve)")
        #expect(try await server.record("todo", "x")?["text"] == "from b")
        #expect(try await b.ok(["status", "--porcelain"]) == "")
        #expect(try JSONOutput.array(try await b.ok(["conflicts", "--json"])).isEmpty)
    }

    @Test func resolveTheirsMakesTheServerWin() async throws {
        let (server, _, b) = try await conflict()
        #expect(try await b.run(["resolve", "--table", "todo", "--theirs"]).status == 0)
        #expect(try JSONOutput.object(try await b.ok(["get", "todo", "x", "--json"]))["text"] == "from a")
        #expect(try await b.ok(["status", "--porcelain"]) == "")
        #expect(try await b.ok(["push"]).isEmpty)
        #expect(try await server.record("todo", "x")?["text"] == "from a")
    }

    @Test func resolveCancelKeepsTheOperationPending() async throws {
        let (_, _, b) = try await conflict()
        let id = try #require(JSONOutput.int(try JSONOutput.array(try await b.ok(["conflicts", "--json"])).first?.objectValue?["id"]))
        #expect(try await b.run(["resolve", String(id), "--cancel"]).status == 0)
        #expect(try JSONOutput.array(try await b.ok(["conflicts", "--json"])).isEmpty)
        #expect(try await b.ok(["status", "--porcelain"]) == "M\ttodo\tx\n")
        #expect(try JSONOutput.object(try await b.ok(["get", "todo", "x", "--json"]))["text"] == "from b")
    }

    @Test func resolveMergeCombinesDisjointChanges() async throws {
        let (server, _, b) = try await conflict(a: "text", b: "note")
        let merge = try await b.run(["resolve", "--all", "--merge", "--push"])
        #expect(merge.status == 0, "\(merge)")
        let onServer = try #require(try await server.record("todo", "x"))
        #expect(onServer["text"] == "from a")
        #expect(onServer["note"] == "from b")
        #expect(try await b.ok(["status", "--porcelain"]) == "")
    }

    @Test func resolveMergeRefusesTheSameFieldChangedTwice() async throws {
        let (_, _, b) = try await conflict()
        let before = try await b.snapshot()
        let merge = try await b.run(["resolve", "--all", "--merge"])
        #expect(merge.status == 2, "\(merge)")
        #expect(merge.stderr.contains("text"))
        #expect(try await b.snapshot() == before)
        #expect(try JSONOutput.array(try await b.ok(["conflicts", "--json"])).count == 1)
    }

    @Test func resolveDiscardGoesBackToTheBase() async throws {
        let (_, _, b) = try await conflict()
        #expect(try await b.run(["resolve", "--all", "--discard"]).status == 0)
        #expect(try JSONOutput.object(try await b.ok(["get", "todo", "x", "--json"]))["text"] == "original")
        #expect(try await b.ok(["status", "--porcelain"]) == "")
    }

    @Test func insertOfAnExistingIdConflictsAndOursTurnsItIntoAnUpdate() async throws {
        let server = try await ServeFixture()
        let a = try await TSyncSandbox(remote: server.url)
        let b = try await TSyncSandbox(remote: server.url)
        try await a.ok(["insert", "todo", #"{"id": "same", "text": "a"}"#])
        try await a.ok(["push"])
        try await b.ok(["insert", "todo", #"{"id": "same", "text": "b"}"#])
        #expect(try await b.run(["push"]).status == 2)
        let entry = try #require(try JSONOutput.array(try await b.ok(["conflicts", "--json"])).first?.objectValue)
        #expect(JSONOutput.int(entry["status"]) == 409)
        #expect(entry["class"] == "already-exists")
        #expect(try await b.run(["resolve", "--all", "--ours", "--push"]).status == 0)
        #expect(try await server.record("todo", "same")?["text"] == "b")
    }

    // MARK: 3. Incremental pull

    @Test func incrementalPullFetchesOnlyWhatChanged() async throws {
        let server = try await ServeFixture()
        let writer = try await TSyncSandbox(remote: server.url)
        let reader = try await TSyncSandbox(remote: server.url)
        let items = (0..<30).map { #"{"id": "r\#(String(format: "%02d", $0))", "n": \#($0)}"# }.joined(separator: "\n")
        try await writer.ok(["insert", "rows"], stdin: items)
        try await writer.ok(["push"])

        let first = try JSONOutput.object(try await reader.ok(["pull", "rows", "--query-id", "q", "--page-size", "7", "--json"]))
        #expect(JSONOutput.int(first["received"]) == 30)
        #expect(JSONOutput.int(first["upserted"]) == 30)
        #expect(JSONOutput.int(first["pages"]) == 5)

        let nothing = try JSONOutput.object(try await reader.ok(["pull", "rows", "--query-id", "q", "--json"]))
        #expect(JSONOutput.int(nothing["received"]) == 0)

        try await writer.ok(["update", "rows", "r03", "--set", "n=300"])
        try await writer.ok(["update", "rows", "r17", "--set", "n=1700"])
        try await writer.ok(["insert", "rows", #"{"id": "r30", "n": 30}"#])
        try await writer.ok(["delete", "rows", "r05"])
        try await writer.ok(["push"])

        let second = try JSONOutput.object(try await reader.ok(["pull", "rows", "--query-id", "q", "--page-size", "7", "--json"]))
        #expect(JSONOutput.int(second["received"]) == 4)
        #expect(JSONOutput.int(second["upserted"]) == 3)
        #expect(JSONOutput.int(second["deleted"]) == 1)
        #expect(try await reader.run(["get", "rows", "r05"]).status == 65)
        #expect(JSONOutput.int(try JSONOutput.object(try await reader.ok(["get", "rows", "r03", "--json"]))["n"]) == 300)
        #expect(try JSONOutput.array(try await reader.ok(["query", "rows", "--json"])).count == 30)

        let queries = try JSONOutput.array(try await reader.ok(["queries", "--json"]))
        #expect(queries.count == 1)
        #expect(queries.first?.objectValue?["queryId"] == "q")
        #expect(queries.first?.objectValue?["checkpoint"]?.objectValue?["id"] != nil)

        // --reset reads everything again.
        let reset = try JSONOutput.object(try await reader.ok(["pull", "rows", "--query-id", "q", "--reset", "--json"]))
        #expect(JSONOutput.int(reset["received"]) == 31)
    }

    /// More than a page of records with the same `updatedAt` (as one batch's writes have), written
    /// straight into the server's SQLite file with a fixed timestamp (table
    /// `t_<name>`, the server's storage layout). Every record must arrive exactly once, without
    /// looping, and a second pull must find nothing new.
    @Test func pageBoundaryInsideEqualTimestampsNeitherLoopsNorSkips() async throws {
        let server = try await ServeFixture()
        let writer = try await TSyncSandbox(remote: server.url)
        try await writer.ok(["insert", "ties", #"{"id": "seed", "n": 0}"#])
        try await writer.ok(["push"])
        var values: [String] = []
        for index in 0..<25 {
            let id = String(format: "tie-%02d", index)
            values.append("('\(id)', '2020-01-01T00:00:00.000Z', '2020-01-01T00:00:00.000Z', 'v-\(id)', 0, NULL, '{\"n\":\(index)}')")
        }
        try await server.sql(
            "INSERT INTO t_ties (id, created_at, updated_at, version, deleted, owner, body) VALUES \(values.joined(separator: ", "));")

        let reader = try await TSyncSandbox(remote: server.url)
        let pull = try await reader.run(["pull", "ties", "--query-id", "all", "--page-size", "10", "--json"])
        #expect(pull.status == 0, "\(pull)")
        let result = try JSONOutput.object(pull.stdout)
        #expect(JSONOutput.int(result["received"]) == 26)
        #expect(JSONOutput.int(result["pages"]) == 3)
        #expect(try JSONOutput.array(try await reader.ok(["query", "ties", "--json"])).count == 26)
        let again = try JSONOutput.object(try await reader.ok(["pull", "ties", "--query-id", "all", "--page-size", "10", "--json"]))
        #expect(JSONOutput.int(again["received"]) == 0)
    }

    /// A pull asks for the next page while it reads a page, at the position it guesses from the
    /// page's bytes; records whose last field looks like the start of a record mislead every
    /// guess, and the pull must still bring each record once, in as many pages.
    @Test func aWrongGuessOfTheNextPageLosesAndDoublesNothing() async throws {
        let server = try await ServeFixture()
        let writer = try await TSyncSandbox(remote: server.url)
        let items = (0..<45).map {
            #"{"id": "m\#(String(format: "%02d", $0))", "zz": {"id": "decoy", "updatedAt": "2099-01-01T00:00:00.000Z"}}"#
        }
        try await writer.ok(["insert", "decoys"], stdin: items.joined(separator: "\n"))
        try await writer.ok(["push"])

        let reader = try await TSyncSandbox(remote: server.url)
        let pull = try JSONOutput.object(try await reader.ok(["pull", "decoys", "--query-id", "all", "--page-size", "10", "--json"]))
        #expect(JSONOutput.int(pull["received"]) == 45)
        #expect(JSONOutput.int(pull["pages"]) == 5)
        let ids = try JSONOutput.array(try await reader.ok(["query", "decoys", "--json"])).compactMap { $0.objectValue?["id"]?.stringValue }
        #expect(ids.sorted() == (0..<45).map { String(format: "m%02d", $0) })
        let checkpoint = try JSONOutput.array(try await reader.ok(["queries", "--json"])).first?.objectValue?["checkpoint"]?.objectValue
        #expect(checkpoint?["id"] == "m44")
        let again = try JSONOutput.object(try await reader.ok(["pull", "decoys", "--query-id", "all", "--json"]))
        #expect(JSONOutput.int(again["received"]) == 0)
    }

    @Test func pullKeepsLocalChangesAndSyncPullsSavedQueries() async throws {
        let server = try await ServeFixture()
        let a = try await TSyncSandbox(remote: server.url)
        let b = try await TSyncSandbox(remote: server.url)
        try await a.ok(["insert", "notes"], stdin: #"[{"id": "1", "t": "one"}, {"id": "2", "t": "two"}]"#)
        try await a.ok(["push"])
        try await b.ok(["pull", "notes", "--query-id", "mine", "--filter", "t ne 'zzz'"])
        try await b.ok(["insert", "notes", #"{"id": "3", "t": "three"}"#])
        try await a.ok(["update", "notes", "1", "--set", "t=\"uno\""])
        try await a.ok(["push"])
        let sync = try await b.run(["sync", "--json"])
        #expect(sync.status == 0, "\(sync)")
        let result = try JSONOutput.object(sync.stdout)
        #expect(JSONOutput.int(result["push"]?.objectValue?["pushed"]) == 1)
        let pulls = result["pulls"].flatMap { if case .array(let a) = $0 { a } else { nil } } ?? []
        #expect(pulls.count == 1)
        #expect(try JSONOutput.object(try await b.ok(["get", "notes", "1", "--json"]))["t"] == "uno")
        #expect(try await server.record("notes", "3")?["t"] == "three")
        // A saved query keeps its filter; another one needs --reset.
        #expect(try await b.run(["pull", "notes", "--query-id", "mine", "--filter", "t eq 'x'"]).status == 64)
        // A filtered purge keeps the checkpoint: the next pull downloads nothing again.
        let kept = try await b.run(["purge", "notes", "--filter", "t eq 'uno'", "--yes"])
        #expect(kept.status == 0 && kept.stderr.contains("kept the saved queries of notes"), "\(kept)")
        let again = try JSONOutput.object(try await b.ok(["pull", "notes", "--query-id", "mine", "--json"]))
        #expect(JSONOutput.int(again["received"]) == 0, "\(again)")
        #expect(try await b.run(["get", "notes", "1"]).status == 65)
        // --forget-queries: the next pull fetches the whole table again.
        try await b.ok(["purge", "notes", "--filter", "t eq 'two'", "--forget-queries", "--yes"])
        let all = try JSONOutput.object(try await b.ok(["pull", "notes", "--query-id", "mine", "--json"]))
        #expect(JSONOutput.int(all["received"]) == 3, "\(all)")
        #expect(try JSONOutput.object(try await b.ok(["get", "notes", "1", "--json"]))["t"] == "uno")
        // Purge refuses pending work without --force.
        try await b.ok(["update", "notes", "2", "--set", "t=\"deux\""])
        let purge = try await b.run(["purge", "notes"])
        #expect(purge.status == 1 && purge.stderr.contains("--force"), "\(purge)")
        try await b.ok(["purge", "notes", "--force", "--yes"])
        #expect(try await b.ok(["status", "--porcelain"]) == "")
        #expect(try await b.run(["query", "notes", "--json"]).status == 65, "a table purged whole is forgotten")
    }

    // MARK: 4. Faults

    /// The server is killed (SIGKILL) in the middle of a push of 3,000 inserts. The store keeps its
    /// queue; after a restart, pushing again completes the job and the server holds every record
    /// exactly once.
    @Test func serverKilledDuringPushLosesAndDoublesNothing() async throws {
        // Small batches, so that the push is still under way when the server dies.
        let server = try await ServeFixture(options: ["--max-batch", "10"])
        let store = try await TSyncSandbox(remote: server.url)
        let count = 3000
        let items = (0..<count).map { #"{"id": "k\#($0)", "n": \#($0)}"# }.joined(separator: "\n")
        try await store.ok(["insert", "load"], stdin: items)
        let push = try TSyncProcess(["push"], in: store.path)
        // Kill the server once some operations have gone through.
        try await eventually(every: .milliseconds(10)) { try await server.records("load").count >= 200 }
        await server.kill()
        let interrupted = await push.wait()
        #expect(interrupted.status == 3, "\(interrupted)")
        let pending = try await store.ok(["status", "--porcelain"]).split(separator: "\n").count
        #expect(pending > 0 && pending < count)

        try await server.start()
        try await store.ok(["remote", server.url])
        let resumed = try await store.run(["push", "--json"])
        #expect(resumed.status == 0, "\(resumed)")
        #expect(try await store.ok(["status", "--porcelain"]) == "")
        let onServer = try await server.records("load")
        #expect(onServer.count == count)
        #expect(Set(onServer.keys) == Set((0..<count).map { "k\($0)" }))
    }

    /// tsync itself killed (SIGKILL) in the middle of a push: operations in flight are sent again
    /// with the same item, recognised by the server's 409 answer, and nothing is lost or doubled.
    @Test func pushKilledMidwayAndRunAgainLosesAndDoublesNothing() async throws {
        let server = try await ServeFixture()
        let store = try await TSyncSandbox(remote: server.url)
        let count = 3000
        try await store.ok(["insert", "load"], stdin: (0..<count).map { #"{"id": "k\#($0)", "n": \#($0)}"# }.joined(separator: "\n"))
        let push = try TSyncProcess(["push"], in: store.path)
        try await eventually(every: .milliseconds(10)) { try await server.records("load").count >= 300 }
        push.signal(SIGKILL)
        _ = await push.wait()
        let resumed = try await store.run(["push", "--json"])
        #expect(resumed.status == 0, "\(resumed)")
        #expect(try JSONOutput.array(try await store.ok(["conflicts", "--json"])).isEmpty)
        #expect(try await store.ok(["status", "--porcelain"]) == "")
        let onServer = try await server.records("load")
        #expect(onServer.count == count)
        #expect(Set(onServer.keys) == Set((0..<count).map { "k\($0)" }))
    }

    /// A server whose table `big` holds `count` records, `b0`… with `n` their number, pushed by a
    /// store of their own.
    private static func serverHoldingBig(_ count: Int) async throws -> ServeFixture {
        let server = try await ServeFixture()
        let writer = try await TSyncSandbox(remote: server.url)
        try await writer.ok(["insert", "big"], stdin: (0..<count).map { #"{"id": "b\#($0)", "n": \#($0)}"# }.joined(separator: "\n"))
        try await writer.ok(["push", "-q"])
        return server
    }

    /// tsync itself killed (SIGKILL) while a pull is under way, at three points of it: the store
    /// holds whole pages with the checkpoint of the last one committed, and the next pull reads
    /// exactly the rest. Twice the records the last kill needs: under load, the query that sees it
    /// pass its threshold can take as long as the rest of a pull of 3,000.
    @Test func pullKilledMidwayKeepsWhatItCommittedAndResumes() async throws {
        let count = 6000
        let server = try await Self.serverHoldingBig(count)
        for threshold in [100, 800, 1600] {
            let reader = try await TSyncSandbox(remote: server.url)
            let pull = try TSyncProcess(["pull", "big", "--query-id", "all", "--page-size", "10"], in: reader.path)
            try await eventually(every: .milliseconds(5)) {
                let query = try await reader.run(["query", "big", "--json"])  // 65 until the first page is stored
                return try query.status == 0 && JSONOutput.array(query.stdout).count >= threshold
            }
            #expect(pull.isRunning, "the pull is still running when it is killed")
            pull.signal(SIGKILL)
            _ = await pull.wait()
            let stored = try JSONOutput.array(try await reader.ok(["query", "big", "--json"])).count
            #expect(stored >= threshold && stored < count && stored % 10 == 0, "whole pages: \(stored)")
            let resumed = try JSONOutput.object(try await reader.ok(["pull", "big", "--query-id", "all", "--json"]))
            #expect(JSONOutput.int(resumed["received"]) == count - stored, "resumed after the \(stored) records already stored")
            #expect(try JSONOutput.array(try await reader.ok(["query", "big", "--json"])).count == count)
        }
    }

    /// The server killed (SIGKILL) while a pull is under way; the pull stops (exit 3) with the
    /// pages it stored and their checkpoint, and the next pull fetches exactly the rest.
    @Test func pullInterruptedByAServerCrashResumesFromItsCheckpoint() async throws {
        let count = 4000
        let server = try await Self.serverHoldingBig(count)

        let reader = try await TSyncSandbox(remote: server.url)
        let pull = try TSyncProcess(["pull", "big", "--query-id", "all", "--page-size", "10"], in: reader.path)
        try await eventually(every: .milliseconds(10)) {
            let query = try await reader.run(["query", "big", "--json"])  // 65 until the first page is stored
            return try query.status == 0 && JSONOutput.array(query.stdout).count >= 200
        }
        await server.kill()
        let interrupted = await pull.wait()
        #expect(interrupted.status == 3, "\(interrupted)")
        let stored = try JSONOutput.array(try await reader.ok(["query", "big", "--json"])).count
        #expect(stored > 0 && stored < count)

        try await server.start()
        try await reader.ok(["remote", server.url])
        let resumed = try JSONOutput.object(try await reader.ok(["pull", "big", "--query-id", "all", "--json"]))
        #expect(JSONOutput.int(resumed["received"]) == count - stored, "resumed after the \(stored) records already stored")
        #expect(try JSONOutput.array(try await reader.ok(["query", "big", "--json"])).count == count)
    }
}
