import Foundation
import Testing
import TSyncModel

/// `update --set FIELD=VALUE`: VALUE is JSON when it parses as JSON, else text; system properties
/// and malformed assignments are refused (the parsing lives in the command line, not the engine).
@Suite struct SetAssignmentTests {
    @Test func valuesParseAsJSONOrFallBackToText() async throws {
        let sandbox = try await TSyncSandbox()
        try await sandbox.ok(["insert", "todo", #"{"id": "a"}"#])
        try await sandbox.ok([
            "update", "todo", "a", "--set", "n=5", "--set", "done=true", "--set", "name=Bob", "--set", #"quoted="5""#,
            "--set", "eq=a=b", "--set", "empty=", "--set", "list=[1,2]", "--set", "nothing=null",
        ])
        let record = try JSONOutput.object(try await sandbox.ok(["get", "todo", "a", "--json"]))
        #expect(record["n"] == 5 && record["done"] == true && record["name"] == "Bob")
        #expect(record["quoted"] == "5" && record["eq"] == "a=b" && record["empty"] == "")
        #expect(record["list"] == [1, 2] && record["nothing"] == .null)
    }

    @Test func systemPropertiesAndMalformedAssignmentsAreRefused() async throws {
        let sandbox = try await TSyncSandbox()
        try await sandbox.ok(["insert", "todo", #"{"id": "a"}"#])
        let version = try await sandbox.run(["update", "todo", "a", "--set", "version=2"])
        #expect(version.status == 65 && version.stderr.contains("system property"), "\(version)")
        let empty = try await sandbox.run(["update", "todo", "a", "--set", "=x"])
        #expect(empty.status == 64 && empty.stderr.contains("field name is empty"), "\(empty)")
        #expect(try await sandbox.ok(["status", "--porcelain"]) == "A\ttodo\ta\n", "nothing was changed")
    }
}
