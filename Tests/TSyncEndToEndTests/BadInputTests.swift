import Foundation
import Testing

/// Bad input gets a clear message and exit code, and leaves the store as it was.
@Suite struct BadInputTests {
    /// A store with some history, so "unchanged" means something.
    private func populated() async throws -> TSyncSandbox {
        let sandbox = try await TSyncSandbox()
        try await sandbox.ok(["insert", "todo"], stdin: #"[{"id": "a", "n": 1}, {"id": "b", "n": 2}]"#)
        try await sandbox.ok(["update", "todo", "a", "--set", "n=5"])
        return sandbox
    }

    private func expectFailure(
        _ sandbox: TSyncSandbox, _ arguments: [String], stdin: String? = nil, status: Int32, message: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let before = try await sandbox.snapshot()
        let result = try await sandbox.run(arguments, stdin: stdin)
        #expect(result.status == status, "\(arguments): \(result)", sourceLocation: sourceLocation)
        #expect(result.stderr.contains(message), "\(arguments): \(result)", sourceLocation: sourceLocation)
        #expect(result.stdout.isEmpty, "\(arguments): \(result)", sourceLocation: sourceLocation)
        #expect(try await sandbox.snapshot() == before, "\(arguments) changed the store", sourceLocation: sourceLocation)
    }

    @Test func malformedJSONSaysWhere() async throws {
        let sandbox = try await populated()
        try await expectFailure(
            sandbox, ["insert", "todo", #"{"id": "c", "n": }"#], status: 65,
            message: "invalid JSON at line 1, column 18: unexpected '}', expected a value")
        try await expectFailure(
            sandbox, ["insert", "todo"], stdin: "{\"id\": \"c\"}\n{\"id\": \"d\",\n \"n\": tru}\n", status: 65,
            message: "invalid JSON at line 3, column 10")
        try await expectFailure(sandbox, ["update", "todo", "a", "{"], status: 65, message: "invalid JSON at line 1")
    }

    @Test func valuesThatAreNotObjects() async throws {
        let sandbox = try await populated()
        try await expectFailure(sandbox, ["insert", "todo", "[1, 2]"], status: 65, message: "expected one JSON object, got an array")
        try await expectFailure(sandbox, ["insert", "todo", "42"], status: 65, message: "expected one JSON object, got a number")
        try await expectFailure(
            sandbox, ["insert", "todo"], stdin: #"[{"id": "c"}, "x"]"#, status: 65,
            message: "record 2 is a string, expected a JSON object")
    }

    @Test func badIDs() async throws {
        let sandbox = try await populated()
        for id in ["a/b", "a\\\\b", "a\\\"b", "a+b", "a?b", "a`b", "a\\u0001b"] {
            try await expectFailure(sandbox, ["insert", "todo", "{\"id\": \"\(id)\"}"], status: 65, message: "invalid id")
        }
        try await expectFailure(
            sandbox, ["insert", "todo"], stdin: "{\"id\": \"ok\"}\n{\"id\": \"x?y\"}", status: 65,
            message: "record 2: invalid id \"x?y\"")
        try await expectFailure(sandbox, ["get", "todo", "a\tb"], status: 65, message: "control character")
        try await expectFailure(sandbox, ["delete", "todo", "a", "b/c"], status: 65, message: "invalid id")
        try await expectFailure(sandbox, ["insert", "todo", #"{"id": 7}"#], status: 65, message: "\"id\" must be a string")
    }

    @Test func unknownTablesAndIDs() async throws {
        let sandbox = try await populated()
        try await expectFailure(sandbox, ["get", "nope", "a"], status: 65, message: "unknown table \"nope\"")
        try await expectFailure(sandbox, ["query", "nope"], status: 65, message: "unknown table \"nope\"")
        try await expectFailure(sandbox, ["get", "todo", "zz"], status: 65, message: "no record \"zz\" in table todo")
        try await expectFailure(sandbox, ["update", "todo", "zz", "--set", "n=1"], status: 65, message: "no record \"zz\"")
        try await expectFailure(sandbox, ["delete", "todo", "b", "zz"], status: 65, message: "no record \"zz\"")
        try await expectFailure(sandbox, ["insert", "bad-table", "{}"], status: 65, message: "invalid table name")
    }

    @Test func duplicateAndCollapseRejections() async throws {
        let sandbox = try await populated()
        try await expectFailure(
            sandbox, ["insert", "todo"], stdin: #"[{"id": "c"}, {"id": "a"}]"#, status: 65,
            message: "record 2: todo/a already exists (its insert is pending)")
        try await sandbox.ok(["delete", "todo", "b"])
        #expect(try await sandbox.ok(["status", "--porcelain"]) == "A\ttodo\ta\n", "insert → delete vanished")
    }

    @Test func invalidFilterSaysWhere() async throws {
        let sandbox = try await populated()
        try await expectFailure(sandbox, ["query", "todo", "--filter", "n eq 'x"], status: 65, message: "invalid $filter at position 6")
        try await expectFailure(sandbox, ["query", "todo", "--filter", "n eq"], status: 65, message: "invalid $filter at position")
        try await expectFailure(sandbox, ["purge", "todo", "--filter", "(n eq 1", "--force"], status: 65, message: "invalid $filter")
    }

    @Test func usageErrorsExit64() async throws {
        let sandbox = try await populated()
        try await expectFailure(sandbox, ["insert"], status: 64, message: "missing expected argument")
        try await expectFailure(sandbox, ["status", "--bogus"], status: 64, message: "unknown option")
        try await expectFailure(sandbox, ["frobnicate"], status: 64, message: "'frobnicate' is not a tsync command")
        try await expectFailure(sandbox, ["update", "todo", "a", "--set", "noequals"], status: 64, message: "expected FIELD=VALUE")
        #expect(try await sandbox.run(["--help"]).status == 0)
        #expect(try await sandbox.ok(["--help"]).contains("EXIT STATUS"))
    }

    @Test func twoProcessesWritingOneStoreBothFinish() async throws {
        let sandbox = try await TSyncSandbox()
        let batches = (0..<2).map { writer in
            (0..<3_000).map { #"{"id": "w\#(writer)-\#($0)", "n": \#($0)}"# }.joined(separator: "\n")
        }
        // Six processes at once (two writers per table, distinct ids), so writers really overlap.
        var processes: [TSyncProcess] = []
        for round in 0..<3 {
            for batch in batches {
                processes.append(try TSyncProcess(["insert", "t\(round)"], in: sandbox.path, stdin: batch))
            }
        }
        for process in processes {
            let result = await process.wait()
            #expect(result.status == 0, "\(result.stderr)")
        }
        let tables = try await sandbox.ok(["tables", "--json"])
        for round in 0..<3 {
            #expect(tables.contains(#"{"errors":0,"pending":6000,"records":6000,"table":"t\#(round)"}"#), "\(tables)")
        }
    }
}
