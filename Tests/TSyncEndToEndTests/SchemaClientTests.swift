import Foundation
import Testing
import TSyncModel

/// The client knows its tables' contract (docs/DESIGN.md §16): a pull keeps the schema the server
/// announces, `tsync schema` prints it, and insert, update, upsert and `update --filter` check
/// against it before queueing (exit 65, every path, nothing queued); a change queued before the
/// schema was known is refused by the server and lands in the error table with the paths; a
/// server that drops the schema (or a plain one) takes the store's away at the next pull.
@Suite(.serialized) struct SchemaClientTests {
    @Test func changesAreCheckedBeforeTheyAreQueued() async throws {
        let directory = try TemporaryDirectory()
        let schema = try directory.write("todo.schema.json", SchemaServeTests.todoSchema)
        let db = "sqlite:" + directory.path + "/server.db"
        let server = try ServerProcess(
            arguments: ["serve", "--db", db, "--port", "0", "--no-auth", "--schema", "todo=\(schema)"], log: directory.path)
        defer { server.stop() }
        let url = try await server.waitForAddress()

        let early = try await TSyncSandbox(remote: url)
        // Queued before the store knew of the schema: the server refuses it.
        try await early.ok(["insert", "todo", #"{"id": "e", "title": 5}"#])

        let store = try await TSyncSandbox(remote: url)
        let none = try await store.run(["schema", "todo"])
        #expect(none.status == 1 && none.stderr.contains("has no schema here"), "\(none)")
        try await store.ok(["insert", "todo", #"{"id": "a", "title": "first"}"#])
        try await store.ok(["pull", "todo", "--query-id", "all"])
        let printed = try await store.ok(["schema", "todo", "--json"])
        #expect(try JSONParser.parse(printed) == (try JSONParser.parse(SchemaServeTests.todoSchema)))
        let before = try await store.snapshot()

        let insert = try await store.run(["insert", "todo", #"{"id": "b", "done": "no"}"#])
        #expect(insert.status == 65, "\(insert)")
        #expect(
            insert.stderr.contains(
                "todo/b does not match the schema of table todo: $.title: is required; $.done: expected boolean, got string"),
            "\(insert)")
        let lines = try await store.run(
            ["insert", "todo", "-"], stdin: #"{"id": "c", "title": "ok"}"# + "\n" + #"{"id": "d", "title": ""}"# + "\n")
        #expect(lines.status == 65 && lines.stderr.contains("record 2: todo/d does not match"), "\(lines)")
        let update = try await store.run(["update", "todo", "a", "--set", "due=tomorrow"])
        #expect(update.status == 65 && update.stderr.contains("$.due: must be a date (YYYY-MM-DD)"), "\(update)")
        let upsert = try await store.run(["upsert", "todo", #"{"id": "a", "colour": "red"}"#])
        #expect(upsert.status == 65 && upsert.stderr.contains("$.colour: is not a property of this schema"), "\(upsert)")
        let bulk = try await store.run(["update", "todo", "--filter", "title eq 'first'", "--set", "title="])
        #expect(bulk.status == 65 && bulk.stderr.contains("$.title: must be at least 1 characters long"), "\(bulk)")
        #expect(try await store.snapshot() == before, "nothing queued, nothing changed")

        try await store.ok(["update", "todo", "a", "--set", "done=true"])
        try await store.ok(["upsert", "todo", #"{"id": "f", "title": "new"}"#])
        try await store.ok(["push"])

        let pushed = try await early.run(["push"])
        #expect(pushed.status == 2, "\(pushed)")
        let errors = try JSONOutput.array(try await early.ok(["conflicts", "--json"]))
        #expect(errors.count == 1)
        let message = errors.first?.objectValue?["message"]?.stringValue ?? ""
        #expect(errors.first?.objectValue?["class"] == "schema", "its own class")
        #expect(message.contains(#"does not match the schema of table "todo": $.title: expected string, got integer"#), "\(message)")

        // The server drops the schema: the next pull drops the store's, and the check with it.
        #expect(try await server.terminate(signal: SIGTERM) == 0)
        let plain = try ServerProcess(arguments: ["serve", "--db", db, "--port", "0", "--no-auth"], log: directory.path)
        defer { plain.stop() }
        let plainURL = try await plain.waitForAddress()
        try await store.ok(["remote", plainURL])
        try await store.ok(["pull", "todo", "--query-id", "all"])
        #expect(try await store.run(["schema", "todo"]).status == 1)
        try await store.ok(["insert", "todo", #"{"id": "free", "anything": [1]}"#])
    }

    /// The store's check and the server's agree, record for record: the same verdict, and the
    /// same paths in the same order.
    @Test func theLocalCheckGivesTheServersVerdict() async throws {
        let directory = try TemporaryDirectory()
        let schema = try directory.write("todo.schema.json", SchemaServeTests.todoSchema)
        let server = try ServerProcess(
            arguments: [
                "serve", "--db", "sqlite:" + directory.path + "/server.db", "--port", "0", "--no-auth", "--schema", "todo=\(schema)",
            ],
            log: directory.path)
        defer { server.stop() }
        let url = try await server.waitForAddress()
        let store = try await TSyncSandbox(remote: url)
        try await store.ok(["pull", "todo", "--query-id", "all"])
        let records = [
            #"{"title": "a"}"#, #"{"title": ""}"#, #"{}"#, #"{"title": "a", "done": 1}"#, #"{"title": 1, "done": "x", "extra": null}"#,
            #"{"title": "a", "due": "2026-02-29"}"#, #"{"title": "a", "due": "2024-02-29"}"#, #"{"title": "a", "due": 20240229}"#,
            #"{"title": "é", "done": false, "due": "2026-12-31"}"#, #"{"title": null}"#, #"{"title": ["a"]}"#,
        ]
        var refused = 0
        for (index, body) in records.enumerated() {
            let id = "r\(index)"
            let item = String(body.dropLast()) + (body == "{}" ? "" : ", ") + #""id": "\#(id)"}"#
            let answer = try await HTTP.send("POST", url + "/tables/todo", body: item)
            let local = try await store.run(["insert", "todo", item])
            #expect(
                (answer.status == 201) == (local.status == 0), "\(item): server \(answer.status), store \(local.status) \(local.stderr)")
            guard answer.status == 400 else { continue }
            refused += 1
            #expect(local.status == 65)
            guard case .array(let violations)? = try JSONOutput.object(answer.body)["violations"] else { continue }
            let paths = violations.compactMap { item -> String? in
                guard let path = item.objectValue?["path"]?.stringValue, let reason = item.objectValue?["reason"]?.stringValue else {
                    return nil
                }
                return "\(path): \(reason)"
            }
            #expect(local.stderr.contains(paths.joined(separator: "; ")), "\(item): \(paths) vs \(local.stderr)")
        }
        #expect(refused >= 6 && refused < records.count, "\(refused) refused")
    }
}
