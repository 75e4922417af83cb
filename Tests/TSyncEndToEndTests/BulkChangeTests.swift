import Foundation
import Testing
import TSyncModel

/// `upsert`, and `update`/`delete` of the records an OData filter matches,
/// on the real binary against a real `tsync serve`.
@Suite(.serialized) struct BulkChangeTests {
    // MARK: upsert

    @Test func upsertInsertsMergesAndQueuesNothingTheSecondTime() async throws {
        let server = try await ServeFixture()
        let store = try await TSyncSandbox(remote: server.url)
        let input = #"{"id": "a", "text": "milk", "n": 1}"# + "\n" + #"{"id": "b", "text": "bread"}"# + "\n"
        let first = try JSONOutput.object(try await store.ok(["upsert", "todo", "--json"], stdin: input))
        #expect(first["inserted"] == ["a", "b"] && first["updated"] == [] && first["unchanged"] == [], "\(first)")
        #expect(try await store.ok(["status", "--porcelain"]) == "A\ttodo\ta\nA\ttodo\tb\n")
        try await store.ok(["push"])
        // The same input again, now that the records carry the server's properties: a no-op.
        let queueBefore = try await store.snapshot()
        let again = try await store.run(["upsert", "todo"], stdin: input)
        #expect(again.status == 0 && again.stderr.contains("inserted 0, updated 0, unchanged 2"), "\(again)")
        #expect(try await store.snapshot() == queueBefore, "re-running the same input changes nothing")
        #expect(try await store.ok(["status", "--porcelain"]).isEmpty)
        // One changed field, one new record: the other fields are kept, as update keeps them.
        let changed = #"[{"id": "a", "n": 2}, {"id": "b", "text": "bread"}, {"id": "c"}]"#
        let verbose = try await store.ok(["upsert", "todo", "-v"], stdin: changed)
        #expect(verbose == "inserted\tc\nupdated\ta\nunchanged\tb\n", "\(verbose)")
        #expect(try await store.ok(["status", "--porcelain"]) == "M\ttodo\ta\nA\ttodo\tc\n")
        let a = try JSONOutput.object(try await store.ok(["get", "todo", "a", "--json"]))
        #expect(a["text"] == "milk" && a["n"] == 2, "\(a)")
        let queued = try await store.snapshot()
        try await store.ok(["upsert", "todo", "-q"], stdin: changed)
        #expect(try await store.snapshot() == queued, "the second run queues nothing")
        try await store.ok(["push"])
        let other = try await TSyncSandbox(remote: server.url)
        try await other.ok(["pull", "todo"])
        #expect(try JSONOutput.object(try await other.ok(["get", "todo", "a", "--json"]))["n"] == 2)
    }

    @Test func upsertReadsCSVAndRefusesWhatItCannotDoWholly() async throws {
        let store = try await TSyncSandbox()
        try await store.ok(["upsert", "todo", "--csv", "-q"], stdin: "id,text,n\r\n\"x\",\"null\",1\r\n")
        try await store.ok(["upsert", "todo", "--csv", "-q"], stdin: "id,n\r\n\"x\",2\r\n\"y\",\r\n")
        let x = try JSONOutput.object(try await store.ok(["get", "todo", "x", "--json"]))
        #expect(x["text"] == "null" && x["n"] == 2, "\(x)")
        let snapshot = try await store.snapshot()
        let noID = try await store.run(["upsert", "todo"], stdin: #"[{"id": "z"}, {"text": "no id"}]"#)
        #expect(noID.status == 65 && noID.stderr.contains("record 2: the record has no \"id\""), "\(noID)")
        #expect(try await store.snapshot() == snapshot, "all or nothing: z was not inserted")
        try await store.ok(["delete", "todo", "y"])
        let afterDelete = try await store.snapshot()
        // y's insert was never pushed: the delete dropped both, so y is new again.
        try await store.ok(["upsert", "todo", "-q"], stdin: #"{"id": "y"}"#)
        #expect(try await store.ok(["status", "--porcelain"]) == "A\ttodo\tx\nA\ttodo\ty\n")
        try await store.ok(["delete", "todo", "y"])
        #expect(try await store.snapshot() == afterDelete)
        #expect(try await store.run(["upsert", "todo", #"{"id": "x"}"#, "--csv"]).status == 64)
        #expect(try await store.run(["upsert", "todo", "-v", "--json"], stdin: "{}").status == 64)
    }

    @Test func upsertOfAnIdWithAPendingDeleteIsRefused() async throws {
        let server = try await ServeFixture()
        let store = try await TSyncSandbox(remote: server.url)
        try await store.ok(["insert", "todo", #"{"id": "a"}"#])
        try await store.ok(["push"])
        try await store.ok(["delete", "todo", "a"])
        let before = try await store.snapshot()
        let result = try await store.run(["upsert", "todo", #"{"id": "a", "n": 1}"#])
        #expect(result.status == 65 && result.stderr.contains("todo/a has a pending delete"), "\(result)")
        #expect(try await store.snapshot() == before)
    }

    // MARK: update and delete --filter

    @Test func updateAndDeleteByFilterInOneCommand() async throws {
        let server = try await ServeFixture()
        let store = try await TSyncSandbox(remote: server.url)
        try await store.ok(
            ["insert", "todo", "-q"], stdin: (0..<100).map { #"{"id": "r\#($0)", "n": \#($0), "done": false}"# }.joined(separator: "\n"))
        try await store.ok(["push"])
        let before = try await store.snapshot()
        let dry = try await store.run(["update", "todo", "--filter", "n lt 3", "--set", "done=true", "--dry-run"])
        #expect(
            dry.status == 0 && dry.stdout == "todo/r0\ntodo/r1\ntodo/r2\n" && dry.stderr.contains("would update 3 records of todo"),
            "\(dry)")
        #expect(try await store.snapshot() == before, "a dry run changes nothing")
        let json = try JSONOutput.object(
            try await store.ok(["update", "todo", "--filter", "n lt 10", "--set", "done=true", "--set", "tag=old", "--json"]))
        #expect(json["ids"] == .array((0..<10).map { .string("r\($0)") }) && json["dryRun"] == false && json["table"] == "todo", "\(json)")
        let status = try await store.ok(["status", "--porcelain"])
        #expect(status.split(separator: "\n").count == 10 && status.hasPrefix("M\ttodo\tr0\n"), "\(status)")
        let r5 = try JSONOutput.object(try await store.ok(["get", "todo", "r5", "--json"]))
        #expect(r5["done"] == true && r5["tag"] == "old" && r5["n"] == 5)
        // Again: nothing would change, nothing is queued.
        let queued = try await store.snapshot()
        let again = try await store.run(["update", "todo", "--filter", "n lt 10", "--set", "done=true", "-v"])
        #expect(again.status == 0 && again.stdout.isEmpty && again.stderr.contains("updated 0 records of todo"), "\(again)")
        #expect(try await store.snapshot() == queued)
        let verbose = try await store.ok(["update", "todo", "--filter", "n eq 50", "--set", "done=true", "-v"])
        #expect(verbose == "todo/r50\n")
        // delete --filter
        let deleted = try JSONOutput.object(try await store.ok(["delete", "todo", "--filter", "n ge 95", "--json"]))
        #expect(deleted["ids"] == ["r95", "r96", "r97", "r98", "r99"], "\(deleted)")
        #expect(try await store.ok(["status", "--porcelain"]).contains("D\ttodo\tr99\n"))
        #expect(try await store.run(["get", "todo", "r99"]).status == 65)
        try await store.ok(["push"])
        let other = try await TSyncSandbox(remote: server.url)
        try await other.ok(["pull", "todo"])
        #expect(try await other.ok(["query", "todo", "--filter", "done eq true", "--select", "id"]).split(separator: "\n").count == 11)
        #expect(try JSONOutput.array(try await other.ok(["query", "todo", "--json"])).count == 95)
    }

    @Test func badFilterUpdatesAreRefused() async throws {
        let store = try await TSyncSandbox()
        try await store.ok(["insert", "todo", #"{"id": "a", "n": 1}"#])
        let before = try await store.snapshot()
        let cases: [([String], Int32, String)] = [
            (["update", "todo", "--filter", "n lt", "--set", "x=1"], 65, ""),
            (["update", "nosuch", "--filter", "n lt 3", "--set", "x=1"], 65, ""),
            (["update", "todo", "--set", "x=1"], 64, "give the record's ID, or --filter ODATA"),
            (["update", "todo", "a", "--filter", "n lt 3", "--set", "x=1"], 64, "not both"),
            (["update", "todo", "--filter", "n lt 3"], 64, "--set FIELD=VALUE"),
            (["update", "todo", "a", "--dry-run", "--set", "x=1"], 64, "--dry-run applies to --filter"),
            (["update", "todo", "--filter", "n lt 3", "--set", "id=b"], 65, ""),
            (["delete", "todo", "a", "--filter", "n lt 3"], 64, "not both"),
            (["delete", "todo"], 64, "--filter"),
            (["delete", "todo", "--filter", "(("], 65, ""),
        ]
        for (arguments, status, message) in cases {
            let result = try await store.run(arguments)
            #expect(result.status == status && (message.isEmpty || result.stderr.contains(message)), "\(arguments): \(result)")
        }
        #expect(try await store.snapshot() == before, "nothing changed")
    }
}
