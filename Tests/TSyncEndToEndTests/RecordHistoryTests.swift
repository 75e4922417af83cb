import Foundation
import Testing
import TSyncModel

/// The client's side: `history`, `show`, `revert`, `restore`, the versions a push wrote
/// in `tsync log`, and the tombstone horizon resync, the real binary against the real server on
/// SQLite and (with TSYNC_TEST_POSTGRES_URL) on PostgreSQL.
@Suite(.serialized) struct RecordHistoryTests {
    typealias Backend = ServerBackend

    /// The backends that can run here: PostgreSQL only with TSYNC_TEST_POSTGRES_URL.
    static let backends: [Backend] = ServerBackend.available

    /// A `tsync serve --no-auth` on `backend` with `options`, for the length of `body`.
    static func withServer(_ backend: Backend, options: [String] = [], _ body: (String) async throws -> Void) async throws {
        try await backend.withServer(options: options, in: try TemporaryDirectory()) { _, url, _ in try await body(url) }
    }

    /// Every record of `table` on the server, deleted ones included, by id: user fields and the
    /// deleted flag, as a plain GET page gives them.
    static func serverRecords(_ url: String, _ table: String) async throws -> [String: [String: JSONValue]] {
        let reply = try await HTTP.send("GET", url + "/tables/\(table)?$orderby=id&$top=1000&__includeDeleted=true")
        #expect(reply.status == 200, "\(reply.body)")
        var records: [String: [String: JSONValue]] = [:]
        for item in try JSONOutput.array(reply.body) {
            guard var object = item.objectValue, let id = object["id"]?.stringValue else { continue }
            for name in ["createdAt", "updatedAt", "version"] { object.removeValue(forKey: name) }
            records[id] = object
        }
        return records
    }

    @Test(arguments: backends) func historyAndShowTellEachVersion(backend: Backend) async throws {
        try await Self.withServer(backend) { url in
            let store = try await TSyncSandbox(remote: url)
            try await store.ok(["insert", "todo", #"{"id": "a", "text": "one"}"#])
            try await store.ok(["push"])
            try await waitForTheClock(toPass: try #require(try await serverUpdatedAt(url, "todo", "a")))
            let between = Timestamp.now()
            try await waitForTheClock(toPass: between)
            try await store.ok(["update", "todo", "a", "--set", "text=two"])
            try await store.ok(["push"])
            try await store.ok(["delete", "todo", "a"])
            try await store.ok(["push"])

            let json = try JSONOutput.array(try await store.ok(["history", "todo", "a", "--json"]))
            #expect(json.count == 3, "\(json)")
            let operations = json.compactMap { $0.objectValue?["operation"]?.stringValue }
            #expect(operations == ["delete", "update", "insert"], "newest first")
            let items = json.compactMap { $0.objectValue?["item"]?.objectValue }
            #expect(items.allSatisfy { $0["id"] == "a" })
            #expect(items.first?["deleted"] == .bool(true) && items.first?["text"] == "two", "a delete keeps the body it deleted")
            #expect(json.allSatisfy { $0.objectValue?["user"] == .null }, "no accounts: null")
            let first = try #require(json.last?.objectValue?["version"]?.stringValue)

            let text = try await store.run(["history", "todo", "a"])
            #expect(text.status == 0)
            #expect(text.lines.count == 3 && text.lines[0].hasSuffix("  -  delete") && text.lines[2].hasPrefix(first), "\(text)")
            let patch = try await store.ok(["history", "todo", "a", "-p", "--limit", "2"])
            #expect(patch.contains(#"- text: "one""#) && patch.contains(#"+ text: "two""#), "\(patch)")
            #expect(!patch.contains("insert"), "--limit 2 shows two versions")

            let version = try await store.ok(["show", "todo", "a", "--version", first, "--json"])
            #expect(try JSONOutput.object(version)["text"] == "one")
            let atTime = try await store.ok(["show", "todo", "a", "--at", between.iso8601, "--json"])
            #expect(try JSONOutput.object(atTime)["text"] == "one")
            let now = try await store.ok(["show", "todo", "a", "--at", "0s", "--json"])
            #expect(try JSONOutput.object(now)["deleted"] == .bool(true), "deleted now, and shown so")
            let before = try await store.run(["show", "todo", "a", "--at", "2000-01-01T00:00:00Z"])
            #expect(before.status != 0, "\(before)")
            let unknown = try await store.run(["history", "todo", "nobody"])
            #expect(unknown.status == 65, "\(unknown)")
        }
    }

    @Test(arguments: backends) func revertQueuesAnOrdinaryChangeAndRefusesPendingWork(backend: Backend) async throws {
        try await Self.withServer(backend) { url in
            let store = try await TSyncSandbox(remote: url)
            try await store.ok(["insert", "todo", #"{"id": "a", "text": "one", "n": 1}"#])
            try await store.ok(["push"])
            let first = try #require(
                try JSONOutput.array(try await store.ok(["history", "todo", "a", "--json"])).first?.objectValue?["version"]?.stringValue)
            try await store.ok(["update", "todo", "a", "--set", "text=two", "--set", "n=2"])
            try await store.ok(["push"])

            // Pending work on the record: refused, nothing changed.
            try await store.ok(["update", "todo", "a", "--set", "n=3"])
            let before = try await store.snapshot()
            let refused = try await store.run(["revert", "todo", "a", "--to", first])
            #expect(refused.status == 1, "\(refused)")
            #expect(refused.stderr.contains("pending changes: todo/a") && refused.stderr.contains("--force"), "\(refused.stderr)")
            #expect(try await store.snapshot() == before)

            let forced = try await store.run(["revert", "todo", "a", "--to", first, "--force"])
            #expect(forced.status == 0, "\(forced)")
            #expect(forced.stdout == "update\ttodo/a\n", "\(forced.stdout)")
            #expect(try await store.ok(["status", "--porcelain"]) == "M\ttodo\ta\n", "an ordinary pending update")
            let diff = try await store.ok(["diff", "todo", "a"])
            #expect(diff.contains(#"- text: "two""#) && diff.contains(#"+ text: "one""#), "\(diff)")
            let check = try await store.run(["push", "--check"])
            #expect(check.status == 0, "\(check)")
            try await store.ok(["push"])
            let server = try await Self.serverRecords(url, "todo")
            #expect(server["a"]?["text"] == "one" && server["a"]?["n"] == .int(1), "\(server)")

            // Deleted since: an undelete, then the update.
            try await store.ok(["delete", "todo", "a"])
            try await store.ok(["push"])
            let undelete = try await store.ok(["revert", "todo", "a", "--to", first])
            #expect(undelete == "undelete\ttodo/a\n")
            try await store.ok(["push"])
            let back = try await Self.serverRecords(url, "todo")
            #expect(back["a"]?["deleted"] == .bool(false) && back["a"]?["text"] == "one", "\(back)")

            // Already as it was: nothing queued.
            let nothing = try await store.run(["revert", "todo", "a", "--to", first])
            #expect(nothing.status == 0 && nothing.stdout.isEmpty && nothing.stderr.contains("nothing to queue"), "\(nothing)")
        }
    }

    @Test(arguments: backends) func restoreUndoesAPushByteForByte(backend: Backend) async throws {
        try await Self.withServer(backend) { url in
            let store = try await TSyncSandbox(remote: url)
            let seed = (1...6).map { #"{"id": "r\#($0)", "text": "t\#($0)", "n": \#($0), "tags": ["x", {"k": \#($0)}]}"# }
            try await store.ok(["insert", "todo", "-"], stdin: seed.joined(separator: "\n") + "\n")
            try await store.ok(["delete", "todo", "r6"])  // never pushed: not on the server
            try await store.ok(["push"])
            try await store.ok(["delete", "todo", "r5"])
            try await store.ok(["push"])
            let snapshot = try await Self.serverRecords(url, "todo")

            // The bad push: an update by filter, a delete, an insert.
            try await store.ok(["update", "todo", "--filter", "n le 2", "--set", "text=oops"])
            try await store.ok(["delete", "todo", "r3"])
            try await store.ok(["insert", "todo", #"{"id": "new", "text": "late"}"#])
            try await store.ok(["push"])
            let log = try JSONOutput.array(try await store.ok(["log", "--json", "-n", "1"]))
            let entry = try #require(log.first?.objectValue)
            let push = try #require(entry["id"].flatMap(JSONOutput.int))
            let versions = try #require(entry["versions"]?.objectValue)
            #expect(versions["count"] == .int(4), "the push wrote four versions: \(versions)")
            let wrote = try await store.ok(["log", "-n", "1"])
            #expect(wrote.contains("wrote todo/"), "\(wrote)")

            // --dry-run lists and changes nothing.
            let before = try await store.snapshot()
            let dry = try await store.run(["restore", "todo", "--before-push", String(push), "--dry-run"])
            #expect(dry.status == 0, "\(dry)")
            #expect(
                Set(dry.lines) == ["update\ttodo/r1", "update\ttodo/r2", "undelete\ttodo/r3", "delete\ttodo/new"], "\(dry.stdout)")
            #expect(dry.stderr.contains("dry run") && dry.stderr.contains("nothing changed"), "\(dry.stderr)")
            #expect(try await store.snapshot() == before)

            let restore = try await store.run(["restore", "todo", "--before-push", String(push), "--json"])
            #expect(restore.status == 0, "\(restore)")
            guard case .array(let changes)? = try JSONOutput.object(restore.stdout)["changes"] else {
                Issue.record("restore --json without changes: \(restore)")
                return
            }
            #expect(changes.count == 4)
            #expect(try await store.ok(["status", "--porcelain"]).split(separator: "\n").count == 4)
            try await store.ok(["push"])

            var after = try await Self.serverRecords(url, "todo")
            #expect(after["new"]?["deleted"] == .bool(true), "the record created since is deleted")
            after.removeValue(forKey: "new")
            #expect(after == snapshot, "the server's records as they were, byte for byte")

            // Records with pending changes are refused, and listed.
            try await store.ok(["update", "todo", "r1", "--set", "text=mine"])
            let refused = try await store.run(["restore", "todo", "--at", "1s"])
            #expect(refused.status == 1 && refused.stderr.contains("todo/r1"), "\(refused)")
        }
    }

    @Test func aServerWithoutHistorySaysSoAndStillSyncs() async throws {
        let server = try await ServeFixture(options: ["--keep-history", "0"])
        let store = try await TSyncSandbox(remote: server.url)
        try await store.ok(["insert", "todo", #"{"id": "a", "text": "one"}"#])
        try await store.ok(["push"])
        for arguments in [["history", "todo", "a"], ["show", "todo", "a", "--at", "1m"], ["revert", "todo", "a", "--at", "1m"]] {
            let result = try await store.run(arguments)
            #expect(result.status == 1, "\(arguments): \(result)")
            #expect(result.stderr.contains("keeps no history"), "\(result.stderr)")
        }
        let restore = try await store.run(["restore", "todo", "--at", "1m"])
        #expect(restore.status == 1 && restore.stderr.contains("keeps no history"), "\(restore)")
        // Everything else syncs.
        let other = try await TSyncSandbox(remote: server.url)
        try await other.ok(["pull", "todo", "--query-id", "all"])
        try await other.ok(["update", "todo", "a", "--set", "text=two"])
        try await other.ok(["sync"])
        try await store.ok(["pull", "todo", "--query-id", "all"])
        #expect(try JSONOutput.object(try await store.ok(["get", "todo", "a", "--json"]))["text"] == "two")
    }

    @Test(arguments: backends) func aPullPastTheTombstoneHorizonMissesNoDeleteAndKeepsPendingChanges(backend: Backend) async throws {
        try await Self.withServer(backend, options: ["--keep-deleted", "2s"]) { url in
            let writer = try await TSyncSandbox(remote: url)
            let rows = (1...5).map { #"{"id": "d\#($0)", "n": \#($0)}"# }
            try await writer.ok(["insert", "todo", "-"], stdin: rows.joined(separator: "\n") + "\n")
            try await writer.ok(["insert", "other", #"{"id": "o1"}"#])
            try await writer.ok(["push"])
            let reader = try await TSyncSandbox(remote: url)
            try await reader.ok(["pull", "todo", "--query-id", "q", "--filter", "n le 4"])
            let watcher = try await TSyncSandbox(remote: url)
            try await watcher.ok(["pull", "todo", "--query-id", "q", "--filter", "n le 4"])
            let textWatcher = try await TSyncSandbox(remote: url)
            try await textWatcher.ok(["pull", "todo", "--query-id", "q", "--filter", "n le 4"])
            try await reader.ok(["pull", "todo", "--query-id", "five", "--filter", "n eq 5"])
            // A local change the reader has not pushed, to a record deleted on the server.
            try await reader.ok(["update", "todo", "d3", "--set", "n=33"])

            try await writer.ok(["delete", "todo", "d1", "d2", "d3"])
            try await writer.ok(["push"])
            try await writer.ok(["update", "todo", "d4", "--set", "n=0"])
            try await writer.ok(["push"])
            // Past --keep-deleted and the server's prune.
            let removed = try await eventually(timeout: .seconds(20), every: .milliseconds(500)) {
                let page = try await HTTP.send("GET", url + "/tables/todo?__includeDeleted=true&$filter=id%20eq%20'd1'")
                return (try? JSONOutput.array(page.body))?.isEmpty == true
            }
            #expect(removed, "the server removed the tombstones")

            let pull = try await reader.run(["pull", "todo", "--query-id", "q", "--on-conflict", "fail"])
            #expect(pull.stderr.contains("removed deleted records of todo"), "one line says so: \(pull)")
            let local = try await reader.ok(["query", "todo", "--json"])
            #expect(!local.contains("\"d1\"") && !local.contains("\"d2\""), "no delete missed: \(local)")
            #expect(local.contains("\"d4\"") && local.contains("\"d5\""), "the rest stays: \(local)")
            #expect(try await reader.ok(["status", "--porcelain"]).contains("todo\td3"), "the pending change is kept")
            // Nothing more the next time.
            let again = try await reader.run(["pull", "todo", "--query-id", "q"])
            #expect(!again.stderr.contains("removed deleted records"), "\(again)")

            // A watch does the same, says it, and names each record it dropped.
            let watch = try await watcher.run(["watch", "--json", "--timeout", "2"])
            #expect(watch.status == 0, "\(watch)")
            let events = watch.stdout.split(separator: "\n").compactMap { try? JSONOutput.object(String($0)) }
            let resynced = events.filter { $0["event"] == "resynced" }
            #expect(resynced.count == 1, "\(watch.stdout)")
            #expect(resynced.first?["table"] == "todo" && resynced.first?["queryId"] == "q")
            #expect(resynced.first?["dropped"] == 3 && resynced.first?["kept"] == 0, "\(watch.stdout)")
            #expect(resynced.first?["horizon"]?.stringValue != nil)
            let deleted = events.filter { $0["event"] == "deleted" }.compactMap { $0["id"]?.stringValue }.sorted()
            #expect(deleted == ["d1", "d2", "d3"], "\(watch.stdout)")
            let watched = try await watcher.ok(["query", "todo", "--json"])
            #expect(!watched.contains("\"d1\"") && watched.contains("\"d4\""), "\(watched)")
            let plain = try await watcher.run(["watch", "--timeout", "1"])
            #expect(!plain.stderr.contains("removed deleted records"), "resynced once: \(plain)")
            let text = try await textWatcher.run(["watch", "--timeout", "2"])
            #expect(text.stderr.contains("removed deleted records of todo"), "\(text)")
            #expect(text.stdout.contains("deleted todo/d1"), "\(text)")
        }
    }
}
