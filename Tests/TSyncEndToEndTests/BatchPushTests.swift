import Foundation
import Testing
import TSyncModel

/// `tsync push` through the batch route of `tsync serve`, and without it.
@Suite(.serialized) struct BatchPushTests {
    /// Two stores and a server in a state that makes B's push meet a 409, a 412 and a 404 among
    /// plain inserts, updates and deletes on two tables. Returns what B's push printed, B's error
    /// table (kind, table, id, status, class) and the server's records (user fields), to compare.
    private func mixedPush(serverOptions: [String]) async throws -> (summary: [String: JSONValue], errors: [String], server: [String]) {
        let server = try await ServeFixture(options: serverOptions)
        let a = try await TSyncSandbox(remote: server.url)
        let b = try await TSyncSandbox(remote: server.url)
        try await a.ok(["insert", "todo"], stdin: (1...6).map { #"{"id": "t\#($0)", "n": \#($0)}"# }.joined(separator: "\n"))
        try await a.ok(["insert", "notes", #"{"id": "shared", "text": "a"}"#])
        try await a.ok(["push"])
        try await b.ok(["pull", "todo"])
        try await b.ok(["pull", "notes"])
        // A moves on: t1 changes (412 for B), t2 goes (404 for B), "dup" appears (409 for B).
        try await a.ok(["update", "todo", "t1", "--set", "n=100"])
        try await a.ok(["delete", "todo", "t2"])
        try await a.ok(["insert", "todo", #"{"id": "dup", "by": "a"}"#])
        try await a.ok(["push"])
        // B: conflicting and clean changes on both tables.
        try await b.ok(["update", "todo", "t1", "--set", "n=-1"])
        try await b.ok(["update", "todo", "t2", "--set", "n=-2"])
        try await b.ok(["insert", "todo", #"{"id": "dup", "by": "b"}"#])
        try await b.ok(["update", "todo", "t3", "--set", "n=33"])
        try await b.ok(["delete", "todo", "t4"])
        try await b.ok(["insert", "notes"], stdin: (1...5).map { #"{"id": "b\#($0)", "text": "note \#($0)"}"# }.joined(separator: "\n"))
        try await b.ok(["update", "notes", "shared", "--set", "text=b"])
        let push = try await b.run(["push", "--json"])
        #expect(push.status == 2, "\(push)")
        let summary = try JSONOutput.object(push.stdout)
        let errors = try JSONOutput.array(try await b.ok(["conflicts", "--json"])).compactMap(\.objectValue).map { entry in
            [entry["kind"], entry["table"], entry["itemId"], entry["status"], entry["class"]]
                .map { $0.map { JSONSerializer.string($0) } ?? "-" }.joined(separator: " ")
        }
        var records: [String] = []
        for table in ["notes", "todo"] {
            for (id, record) in try await server.records(table).sorted(by: { $0.key < $1.key }) {
                let fields = record.filter { !["createdAt", "updatedAt", "version"].contains($0.key) }
                records.append("\(table)/\(id) \(JSONSerializer.string(.object(fields)))")
            }
        }
        return (summary, errors.sorted(), records)
    }

    @Test func batchedAndOneByOnePushesEndTheSame() async throws {
        let batched = try await mixedPush(serverOptions: [])
        let single = try await mixedPush(serverOptions: ["--max-batch", "0"])
        #expect(batched.errors == single.errors)
        #expect(batched.server == single.server)
        #expect(
            batched.errors == [
                #""insert" "todo" "dup" 409 "already-exists""#,
                #""update" "todo" "t1" 412 "version-conflict""#,
                #""update" "todo" "t2" 404 "missing""#,
            ])
        for key in ["pushed", "failed", "conflicts", "alreadyApplied"] {
            #expect(batched.summary[key] == single.summary[key], "\(key)")
        }
        #expect(JSONOutput.int(batched.summary["pushed"]) == 8)
        // Discovery, then one batch; against the plain route: discovery, then 11 requests.
        #expect(JSONOutput.int(batched.summary["requests"]) == 2)
        #expect(JSONOutput.int(single.summary["requests"]) == 12)
    }

    /// A push of 300 records of 60 KB: the store's statements for it have journals larger than
    /// SQLite keeps in memory, and spilling one to a file once failed "the disk holding
    /// store.sqlite is full" with the disk free (`SQLiteSettings`).
    @Test func aPushOfLargeRecordsLeavesNothingQueued() async throws {
        let server = try await ServeFixture()
        let store = try await TSyncSandbox(remote: server.url)
        let text = String(repeating: "x", count: 60_000)
        let lines = (0..<300).map { #"{"id":"r\#($0)","text":"\#(text)"}"# }
        try await store.ok(["insert", "items", "-q"], stdin: lines.joined(separator: "\n") + "\n")
        let push = try await store.run(["push", "-q"])
        #expect(push.status == 0, "\(push)")
        #expect(try await store.ok(["status", "--porcelain"]).isEmpty, "nothing left queued")
        let records = try await server.records("items")
        #expect(records.count == 300 && records.values.allSatisfy { $0["text"]?.stringValue == text })
    }

    @Test func aBatchSplitsAtTheServersLimit() async throws {
        let server = try await ServeFixture(options: ["--max-batch", "7"])
        let store = try await TSyncSandbox(remote: server.url)
        try await store.ok(["insert", "todo"], stdin: (0..<30).map { #"{"id": "r\#($0)"}"# }.joined(separator: "\n"))
        let push = try JSONOutput.object(try await store.ok(["push", "--json"]))
        #expect(JSONOutput.int(push["pushed"]) == 30)
        #expect(JSONOutput.int(push["requests"]) == 1 + 5, "discovery, then ceil(30 / 7) batches")
        #expect(try await server.records("todo").count == 30)
    }

    /// A server whose limit is smaller than it said (its limits changed since `GET /tables/$batch`,
    /// or a proxy in front has its own): its 413 makes the client split the batch in halves until
    /// it goes through.
    @Test func a413SplitsTheBatch() async throws {
        let server = try await ServeFixture(options: ["--max-batch", "5"])
        let proxy = try LossyProxy(upstream: server.url)
        proxy.replace(
            "GET", "/tables/$batch", status: 200, contentType: "application/json",
            body: #"{"maxOperations": 100, "maxBytes": 16777216, "maxItemBytes": 1048576, "atomic": true}"#, forward: false)
        let store = try await TSyncSandbox(remote: proxy.url)
        try await store.ok(["insert", "todo"], stdin: (0..<30).map { #"{"id": "r\#($0)"}"# }.joined(separator: "\n"))
        let push = try await store.run(["push", "--json"])
        #expect(push.status == 0, "\(push)")
        let summary = try JSONOutput.object(push.stdout)
        #expect(JSONOutput.int(summary["pushed"]) == 30)
        // 30 refused, 2 x 15 refused, 4 batches of 7 or 8 refused, 8 of 3 or 4 accepted.
        #expect((JSONOutput.int(summary["requests"]) ?? 0) > 1 + 8, "it split: \(summary)")
        #expect(try await server.records("todo").count == 30)
    }

    @Test func atomicPushWritesNothingWhenOneOperationWouldFail() async throws {
        let server = try await ServeFixture()
        let a = try await TSyncSandbox(remote: server.url)
        let b = try await TSyncSandbox(remote: server.url)
        try await a.ok(["insert", "todo", #"{"id": "taken", "by": "a"}"#])
        try await a.ok(["push"])
        try await b.ok(["insert", "todo"], stdin: (1...4).map { #"{"id": "n\#($0)"}"# }.joined(separator: "\n"))
        try await b.ok(["insert", "todo", #"{"id": "taken", "by": "b"}"#])

        let push = try await b.run(["push", "--atomic", "--json"])
        #expect(push.status == 2, "\(push)")
        let summary = try JSONOutput.object(push.stdout)
        #expect(JSONOutput.int(summary["pushed"]) == 0 && JSONOutput.int(summary["failed"]) == 1)
        #expect(try await server.records("todo").keys.sorted() == ["taken"], "the server is untouched")
        let errors = try JSONOutput.array(try await b.ok(["conflicts", "--json"]))
        #expect(errors.count == 1 && errors.first?.objectValue?["itemId"] == "taken")
        #expect(try await b.ok(["status", "--porcelain"]) == "A\ttodo\tn1\nA\ttodo\tn2\nA\ttodo\tn3\nA\ttodo\tn4\nUA\ttodo\ttaken\n")

        // Settled, the queue goes in whole.
        #expect(try await b.run(["resolve", "--all", "--discard"]).status == 0)
        let again = try await b.run(["push", "--atomic", "--json"])
        #expect(again.status == 0, "\(again)")
        #expect(JSONOutput.int(try JSONOutput.object(again.stdout)["pushed"]) == 4)
        #expect(try await server.records("todo").count == 5)
    }

    @Test func atomicPushNeedsTheBatchRoute() async throws {
        let server = try await ServeFixture(options: ["--max-batch", "0"])
        let store = try await TSyncSandbox(remote: server.url)
        try await store.ok(["insert", "todo", #"{"id": "a"}"#])
        let push = try await store.run(["push", "--atomic"])
        #expect(push.status == 1 && push.stderr.contains("no atomic batch route"), "\(push)")
        #expect(try await store.ok(["status", "--porcelain"]) == "A\ttodo\ta\n")
        #expect(try await server.records("todo").isEmpty)
    }
}
