import Foundation
import Testing
import TSyncModel

/// `GET /openapi.json` (docs/DESIGN.md §4): made from the routes' own declarations, so every path
/// and method it lists is one the server answers (not the router's 404 or a 405), with the limits
/// the server was started with and each `--schema` table's record type; a known path asked with
/// another method is 405 with `Allow`.
@Suite struct OpenAPITests {
    @Test func theDescriptionIsWhatTheServerAnswers() async throws {
        let directory = try TemporaryDirectory()
        let schema = try directory.write("todo.schema.json", SchemaServeTests.todoSchema)
        let server = try ServerProcess(
            arguments: [
                "serve", "--db", "sqlite:" + directory.path + "/s.db", "--port", "0", "--no-auth", "--max-top", "77", "--metrics",
                "--schema", "todo=\(schema)",
            ], log: directory.path)
        defer { server.stop() }
        let base = try await server.waitForAddress()
        let reply = try await HTTP.send("GET", base + "/openapi.json")
        #expect(reply.status == 200)
        let document = try JSONOutput.object(reply.body)
        #expect(document["openapi"] == "3.1.0")
        let paths = try #require(document["paths"]?.objectValue)
        for path in [
            "/health", "/ready", "/metrics", "/openapi.json", "/.auth/login/custom", "/tables/{table}", "/tables/{table}/{id}",
            "/tables/$batch", "/tables/$history/{table}", "/tables/$schema/{table}", "/tables/todo",
        ] {
            #expect(paths[path] != nil, "\(path) missing from \(paths.keys.sorted())")
        }
        let top = paths["/tables/{table}"]?.objectValue?["get"]?.objectValue?["parameters"].flatMap { value -> JSONValue? in
            guard case .array(let items) = value else { return nil }
            return items.first { $0.objectValue?["name"] == "$top" }
        }
        #expect(top?.objectValue?["schema"]?.objectValue?["maximum"] == 77, "the configured --max-top")
        let todo = document["components"]?.objectValue?["schemas"]?.objectValue?["Table_todo"]?.objectValue
        #expect(todo?["required"] == ["title"])

        // Every path and method listed is served, and echoes the token it declares.
        for (path, item) in paths {
            let concrete = path.replacingOccurrences(of: "{table}", with: "t").replacingOccurrences(of: "{id}", with: "x")
            for (method, operation) in item.objectValue ?? [:] {
                let body: String? = ["post", "patch"].contains(method) ? "{}" : nil
                let answer = try await HTTP.send(method.uppercased(), base + concrete, headers: ["X-TSync-Echo": "t-1"], body: body)
                #expect(
                    answer.status != 405 && !answer.body.contains("no such endpoint"), "\(method) \(path): \(answer.status) \(answer.body)")
                guard case .array(let parameters)? = operation.objectValue?["parameters"] else {
                    Issue.record("\(method) \(path) has no parameters")
                    continue
                }
                let declared = parameters.contains { $0.objectValue?["name"] == "X-TSync-Echo" }
                #expect(declared == true && answer.headers["X-TSync-Echo"] == "t-1", "\(method) \(path): \(answer.headers)")
            }
        }
        let trace = try await HTTP.send("TRACE", base + "/tables/t/x")
        #expect(trace.status == 405, "\(trace)")
        #expect(trace.headers["Allow"] == "GET, PATCH, DELETE, POST", "\(trace.headers)")
        #expect(try await HTTP.send("TRACE", base + "/tables/$batch").headers["Allow"] == "GET, POST")
        #expect(try await HTTP.send("GET", base + "/nowhere").body.contains("no such endpoint"))
    }

    @Test func aHeadTooLargeIsAnsweredInJSON() async throws {
        let server = try await ServeFixture()
        let reply = try await HTTP.send("GET", server.url + "/tables/t?$filter=" + String(repeating: "a", count: 100_000))
        #expect(reply.status == 431, "\(reply)")
        #expect(try JSONOutput.object(reply.body)["error"]?.stringValue?.contains("too large") == true)
    }
}
