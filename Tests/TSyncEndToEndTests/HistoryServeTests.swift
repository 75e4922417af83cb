import Foundation
import Testing
import TSyncModel

/// The history of records through the real binaries: `tsync serve --keep-history
/// --keep-deleted` (flags and config keys), a store's batched push leaving one version per write,
/// the table read as it was, the route off with `--keep-history 0`, and old tombstones removed
/// behind the horizon a page read announces. On SQLite, and on PostgreSQL when configured.
@Suite(.serialized) struct HistoryServeTests {
    static var databases: [ServerBackend] { ServerBackend.available }

    /// The results of a history answer.
    private func results(_ reply: HTTP.Reply) throws -> [[String: JSONValue]] {
        guard case .array(let items)? = try JSONParser.parse(reply.body).objectValue?["results"] else {
            throw TSyncError.failure("not a history answer: \(reply.status) \(reply.body)")
        }
        return items.compactMap(\.objectValue)
    }

    @Test(arguments: databases) func aPushLeavesOneVersionPerWrite(_ kind: ServerBackend) async throws {
        let directory = try TemporaryDirectory()
        try await kind.withDatabase(in: directory) { db in
            let server = try ServerProcess(
                arguments: ["serve", "--db", db, "--port", "0", "--no-auth", "--keep-history", "12h", "--keep-deleted", "0"],
                log: directory.path)
            defer { server.stop() }
            let base = try await server.waitForAddress()
            #expect(
                server.log.contains("history: every version kept 12h, GET /tables/$history; deleted records: kept forever"), "\(server.log)"
            )
            let described = try await HTTP.send("GET", base + "/tables/$history")
            #expect(described.status == 200)
            #expect(try JSONParser.parse(described.body) == ["keepDeletedSeconds": 0, "keepSeconds": 43_200])

            let store = try await TSyncSandbox(remote: base)
            try await store.ok(["insert", "todo"], stdin: #"{"id":"a","n":1}"# + "\n" + #"{"id":"b","n":2}"# + "\n")
            try await store.ok(["push"])
            for id in ["a", "b"] { try await waitForTheClock(toPass: try #require(try await serverUpdatedAt(base, "todo", id))) }
            let before = Timestamp.now().iso8601
            try await waitForTheClock(toPass: try #require(Timestamp(iso8601: before)))
            try await store.ok(["update", "todo", "a", "--set", "n=10"])
            try await store.ok(["delete", "todo", "b"])
            try await store.ok(["push"])

            let a = try results(try await HTTP.send("GET", base + "/tables/$history/todo/a"))
            #expect(a.map { $0["operation"] } == ["update", "insert"])
            #expect(a.map { $0["user"] } == [.null, .null])
            #expect(a.first?["item"]?.objectValue?["n"] == 10)
            let current = try JSONParser.parse(try await HTTP.send("GET", base + "/tables/todo/a").body).objectValue
            #expect(a.first?["item"]?.objectValue?["version"] == current?["version"])
            let b = try results(try await HTTP.send("GET", base + "/tables/$history/todo/b"))
            #expect(b.map { $0["operation"] } == ["delete", "insert"])
            #expect(b.first?["item"]?.objectValue?["deleted"] == true)

            let then = try await HTTP.send("GET", base + "/tables/$history/todo?at=\(before)")
            #expect(then.status == 200, "\(then.body)")
            guard case .array(let records) = try JSONParser.parse(then.body) else { throw TSyncError.failure(then.body) }
            #expect(records.compactMap { $0.objectValue?["n"] } == [1, 2])
            #expect(try await server.terminate(signal: SIGTERM) == 0)
        }
    }

    /// A push of a few thousand 1.5 KB records: the server's history rows for them are statements
    /// whose journal outgrows what SQLite keeps in memory, and spilling it to a file once failed
    /// ("database or disk is full", HTTP 500) when the in-memory pieces were 128 KiB or more.
    @Test(arguments: databases) func aPushOfLargeRecordsStoresEveryRecordAndVersion(_ kind: ServerBackend) async throws {
        let directory = try TemporaryDirectory()
        try await kind.withServer(in: directory) { server, base, _ in
            let count = 2_000
            let text = String(repeating: "x", count: 1_500)
            let store = try await TSyncSandbox(remote: base)
            let lines = (0..<count).map { #"{"id":"r\#(String(format: "%05d", $0))","text":"\#(text)"}"# }
            try await store.ok(["insert", "items", "-q"], stdin: lines.joined(separator: "\n") + "\n")
            let push = try await store.run(["push", "-q"])
            #expect(push.status == 0, "\(push)")
            #expect(!server.log.contains("database or disk is full"), "\(server.log.suffix(2_000))")

            let now = Timestamp.now().iso8601
            var stored = Set<String>()
            var versioned = Set<String>()
            for skip in stride(from: 0, to: count + 1, by: 1_000) {
                let page = try await HTTP.send("GET", base + "/tables/items?$select=id,text&$orderby=id&$top=1000&$skip=\(skip)")
                #expect(page.status == 200, "\(page.body.prefix(500))")
                for item in try JSONOutput.array(page.body) {
                    if let id = item.objectValue?["id"]?.stringValue, item.objectValue?["text"]?.stringValue == text { stored.insert(id) }
                }
                let then = try await HTTP.send("GET", base + "/tables/$history/items?at=\(now)&$orderby=id&$top=1000&$skip=\(skip)")
                #expect(then.status == 200, "\(then.body.prefix(500))")
                for item in try JSONOutput.array(then.body) {
                    if let id = item.objectValue?["id"]?.stringValue, item.objectValue?["text"]?.stringValue == text {
                        versioned.insert(id)
                    }
                }
            }
            #expect(stored.count == count, "records on the server")
            #expect(versioned.count == count, "records with their version in the history")
        }
    }

    @Test(arguments: databases) func keepHistoryZeroTurnsTheRouteOff(_ kind: ServerBackend) async throws {
        let directory = try TemporaryDirectory()
        try await kind.withDatabase(in: directory) { db in
            let config = try directory.write("serve.toml", "keep-history = 0\nkeep-deleted = \"30d\"\n")
            let server = try ServerProcess(
                arguments: ["serve", "--db", db, "--port", "0", "--no-auth", "--config", config], log: directory.path)
            defer { server.stop() }
            let base = try await server.waitForAddress()
            #expect(server.log.contains("history: none (--keep-history 0); deleted records: removed after 30d"), "\(server.log)")
            let insert = try await HTTP.send("POST", base + "/tables/todo", body: #"{"id":"a"}"#)
            #expect(insert.status == 201)
            for path in ["/tables/$history", "/tables/$history/todo/a", "/tables/$history/todo?at=\(Timestamp.now().iso8601)"] {
                let reply = try await HTTP.send("GET", base + path)
                #expect(reply.status == 404, "\(path)")
                #expect(try JSONParser.parse(reply.body).objectValue?["error"] == "this server keeps no history")
            }
            #expect(try await server.terminate(signal: SIGTERM) == 0)
        }
        let refused = try await TSyncProcess.run(["serve", "--keep-history", "soon"], in: directory.path)
        #expect(refused.status == 64, "\(refused)")
    }

    /// Records written while the history was off get their first version before the server
    /// listens: the table read as it is now, at once, holds every one of them.
    @Test(arguments: databases) func recordsFromBeforeTheHistoryAreSeededBeforeListening(_ kind: ServerBackend) async throws {
        let directory = try TemporaryDirectory()
        try await kind.withDatabase(in: directory) { db in
            let off = try ServerProcess(
                arguments: ["serve", "--db", db, "--port", "0", "--no-auth", "--keep-history", "0"], log: directory.path)
            defer { off.stop() }
            let first = try await off.waitForAddress()
            let batch = (0..<300).map { #"{"method":"POST","table":"todo","item":{"id":"r\#($0)","n":\#($0)}}"# }
            let written = try await HTTP.send(
                "POST", first + "/tables/$batch", body: #"{"operations":["# + batch.joined(separator: ",") + "]}")
            #expect(written.status == 200, "\(written.body)")
            #expect(try await off.terminate(signal: SIGTERM) == 0)

            let on = try ServerProcess(arguments: ["serve", "--db", db, "--port", "0", "--no-auth"], log: directory.path)
            defer { on.stop() }
            let base = try await on.waitForAddress()
            let now = try await HTTP.send("GET", base + "/tables/$history/todo?at=\(Timestamp.now().iso8601)&$top=1000")
            #expect(now.status == 200, "\(now.body)")
            guard case .array(let records) = try JSONParser.parse(now.body) else { throw TSyncError.failure(now.body) }
            #expect(records.count == 300)
            let log = on.log
            let seeded = log.range(of: "history: 300 current records given a first version")
            let listening = log.range(of: "listening on")
            #expect(seeded != nil && listening != nil && seeded!.lowerBound < listening!.lowerBound, "\(log)")
            #expect(try await on.terminate(signal: SIGTERM) == 0)
        }
    }

    @Test func oldTombstonesGoAndReadsSayFromWhen() async throws {
        let directory = try TemporaryDirectory()
        let db = "sqlite:" + directory.path + "/server.db"
        // Pruned every second (a tenth of 2 s, at least 1 s).
        let server = try ServerProcess(
            arguments: ["serve", "--db", db, "--port", "0", "--no-auth", "--keep-deleted", "2s"], log: directory.path)
        defer { server.stop() }
        let base = try await server.waitForAddress()
        #expect(try await HTTP.send("POST", base + "/tables/todo", body: #"{"id":"a"}"#).status == 201)
        #expect(try await HTTP.send("POST", base + "/tables/todo", body: #"{"id":"b"}"#).status == 201)
        let deleted = try await HTTP.send("DELETE", base + "/tables/todo/a")
        let horizon = try JSONParser.parse(deleted.body).objectValue?["updatedAt"]?.stringValue
        #expect(try await HTTP.send("GET", base + "/tables/todo").headers["X-TSync-Deleted-Horizon"] == nil)
        // Pruned every second: the tombstone goes 2 s after the delete.
        let page = try await eventually(timeout: .seconds(10), every: .milliseconds(100)) {
            try await HTTP.send("GET", base + "/tables/todo?__includeDeleted=true")
        } until: {
            $0.headers["X-TSync-Deleted-Horizon"] != nil
        }
        #expect(page.headers["X-TSync-Deleted-Horizon"] == horizon)
        guard case .array(let records) = try JSONParser.parse(page.body) else { throw TSyncError.failure(page.body) }
        #expect(records.compactMap { $0.objectValue?["id"] } == ["b"])
        #expect(server.log.contains("1 deleted records removed"), "\(server.log)")
        #expect(try await server.terminate(signal: SIGTERM) == 0)
    }
}
