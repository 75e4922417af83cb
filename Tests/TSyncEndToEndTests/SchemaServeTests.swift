import Foundation
import Testing
import TSyncModel

/// Table schemas on the real server (docs/DESIGN.md §16): `tsync serve --schema TABLE=FILE` (and
/// the config key) refuses inserts and updates that do not match with 400 and every path, on the
/// single routes and in a batch; announces the schema on page reads and serves it; refuses an
/// unsupported schema at start-up; counts the stored records that do not match. On SQLite, and on
/// PostgreSQL when configured.
@Suite(.serialized) struct SchemaServeTests {
    static var databases: [ServerBackend] { ServerBackend.available }

    static let todoSchema = #"""
        {"type": "object", "required": ["title"], "additionalProperties": false,
         "properties": {"title": {"type": "string", "minLength": 1}, "done": {"type": "boolean"},
                        "due": {"type": "string", "format": "date"}}}
        """#

    private func violations(_ reply: HTTP.Reply) throws -> [String] {
        let object = try JSONOutput.object(reply.body)
        guard case .array(let items)? = object["violations"] else { return [] }
        return items.compactMap { item in
            guard let path = item.objectValue?["path"]?.stringValue, let reason = item.objectValue?["reason"]?.stringValue else {
                return nil
            }
            return "\(path): \(reason)"
        }
    }

    @Test(arguments: databases) func writesThatDoNotMatchAreRefusedWithEveryPath(_ kind: ServerBackend) async throws {
        let directory = try TemporaryDirectory()
        let schema = try directory.write("todo.schema.json", Self.todoSchema)
        try await kind.withDatabase(in: directory) { db in
            let server = try ServerProcess(
                arguments: ["serve", "--db", db, "--port", "0", "--no-auth", "--schema", "todo=\(schema)"], log: directory.path)
            defer { server.stop() }
            let base = try await server.waitForAddress()
            #expect(server.log.contains("schemas: todo"), "\(server.log)")

            let bad = try await HTTP.send("POST", base + "/tables/todo", body: #"{"id": "a", "done": "yes", "colour": 1}"#)
            #expect(bad.status == 400)
            #expect(
                try violations(bad) == [
                    "$.title: is required", "$.done: expected boolean, got string",
                    "$.colour: is not a property of this schema (additionalProperties is false)",
                ], "\(bad.body)")
            #expect(
                try JSONOutput.object(bad.body)["error"]?.stringValue?.hasPrefix(#"the item does not match the schema of table "todo""#)
                    == true)
            #expect(try await HTTP.send("GET", base + "/tables/todo/a").status == 404, "nothing stored")

            let good = try await HTTP.send("POST", base + "/tables/todo", body: #"{"id": "a", "title": "write", "due": "2026-12-01"}"#)
            #expect(good.status == 201, "\(good.body)")
            // An update is checked on the record it would leave: the stored fields with the change.
            let emptied = try await HTTP.send("PATCH", base + "/tables/todo/a", body: #"{"title": "", "due": "2026-02-30"}"#)
            #expect(emptied.status == 400)
            #expect(try violations(emptied) == ["$.due: must be a date (YYYY-MM-DD)", "$.title: must be at least 1 characters long"])
            #expect(try await HTTP.send("PATCH", base + "/tables/todo/a", body: #"{"done": true}"#).status == 200)
            // Other tables are not checked; deletes never are.
            #expect(try await HTTP.send("POST", base + "/tables/notes", body: #"{"id": "n", "anything": [1]}"#).status == 201)

            // In a batch, the one operation that fails says why; an atomic batch writes nothing.
            let batch = #"""
                {"operations": [
                  {"method": "POST", "table": "todo", "item": {"id": "b", "title": "ok"}},
                  {"method": "POST", "table": "todo", "item": {"id": "c", "title": 3}}]}
                """#
            let mixed = try await HTTP.send("POST", base + "/tables/$batch", body: batch)
            #expect(mixed.status == 200, "\(mixed.body)")
            let results = try #require(
                try JSONOutput.object(mixed.body)["results"].flatMap { value -> [JSONValue]? in
                    if case .array(let items) = value { return items }
                    return nil
                })
            #expect(results.map { $0.objectValue?["status"] } == [201, 400])
            #expect(results.last?.objectValue?["violations"] == [["path": "$.title", "reason": "expected string, got integer"]])
            let atomic = try await HTTP.send(
                "POST", base + "/tables/$batch",
                body: batch.replacingOccurrences(of: #""id": "b""#, with: #""id": "d""#)
                    .replacingOccurrences(of: #"{"operations""#, with: #"{"atomic": true, "operations""#))
            #expect(atomic.body.contains(#""status":424"#) && atomic.body.contains(#""status":400"#), "\(atomic.body)")
            #expect(try await HTTP.send("GET", base + "/tables/todo/d").status == 404)

            // The schema is announced on page reads by its tag, and served.
            let page = try await HTTP.send("GET", base + "/tables/todo")
            let tag = try #require(page.headers["X-TSync-Schema"] ?? page.headers["x-tsync-schema"])
            let served = try JSONOutput.object(try await HTTP.send("GET", base + "/tables/$schema/todo").body)
            #expect(served["tag"]?.stringValue == tag)
            #expect(served["schema"] == (try JSONParser.parse(Self.todoSchema)))
            #expect(try await HTTP.send("GET", base + "/tables/notes").headers["X-TSync-Schema"] == nil)
            #expect(try await HTTP.send("GET", base + "/tables/$schema/notes").status == 404)
            #expect(try await server.terminate(signal: SIGTERM) == 0)
        }
    }

    @Test func storedRecordsThatDoNotMatchAreCountedAtStartUp() async throws {
        let directory = try TemporaryDirectory()
        let db = "sqlite:" + directory.path + "/server.db"
        let before = try ServerProcess(arguments: ["serve", "--db", db, "--port", "0", "--no-auth"], log: directory.path)
        defer { before.stop() }
        let first = try await before.waitForAddress()
        for body in [#"{"id": "a", "title": "fine"}"#, #"{"id": "b"}"#, #"{"id": "c", "title": 7}"#] {
            #expect(try await HTTP.send("POST", first + "/tables/todo", body: body).status == 201)
        }
        #expect(try await before.terminate(signal: SIGTERM) == 0)

        _ = try directory.write("todo.schema.json", Self.todoSchema)
        let config = try directory.write("serve.toml", #"schema = ["todo=\#(directory.path)/todo.schema.json"]"# + "\n")
        let after = try ServerProcess(
            arguments: ["serve", "--db", db, "--port", "0", "--no-auth", "--config", config], log: directory.path)
        defer { after.stop() }
        let base = try await after.waitForAddress()
        try await after.waitForLog("schema of todo:", timeout: .seconds(5))
        let log = after.log
        #expect(log.contains(#"schema of todo: 2 of the 3 stored records do not match it (first "b": $.title: is required)"#), "\(log)")
        // They stay; deleting one is allowed, updating one must make it match.
        #expect(try await HTTP.send("DELETE", base + "/tables/todo/b").status == 200)
        #expect(try await HTTP.send("PATCH", base + "/tables/todo/c", body: #"{"done": true}"#).status == 400)
        #expect(try await HTTP.send("PATCH", base + "/tables/todo/c", body: #"{"title": "seven"}"#).status == 200)
        #expect(try await after.terminate(signal: SIGTERM) == 0)
    }

    @Test func aSchemaTsyncCannotCheckIsRefusedAtStartUp() async throws {
        let directory = try TemporaryDirectory()
        let unsupported = try directory.write("bad.json", #"{"properties": {"a": {"dependentRequired": {}}}}"#)
        let refused = try await TSyncProcess.run(
            ["serve", "--port", "0", "--no-auth", "--schema", "todo=\(unsupported)"], in: directory.path)
        #expect(refused.status == 78, "\(refused)")
        #expect(
            refused.stderr.contains(#"the keyword "dependentRequired" is not supported"#) && refused.stderr.contains("bad.json"),
            "\(refused)")
        let notJSON = try directory.write("notjson.json", "{")
        let broken = try await TSyncProcess.run(["serve", "--port", "0", "--no-auth", "--schema", "todo=\(notJSON)"], in: directory.path)
        #expect(broken.status == 78 && broken.stderr.contains("is not JSON"), "\(broken)")
        let missing = try await TSyncProcess.run(
            ["serve", "--port", "0", "--no-auth", "--schema", "todo=nowhere.json"], in: directory.path)
        #expect(missing.status == 66 && missing.stderr.contains("nowhere.json"), "\(missing)")
        let malformed = try await TSyncProcess.run(["serve", "--port", "0", "--no-auth", "--schema", "todo"], in: directory.path)
        #expect(malformed.status == 64 && malformed.stderr.contains("expected TABLE=FILE"), "\(malformed)")
    }
}
