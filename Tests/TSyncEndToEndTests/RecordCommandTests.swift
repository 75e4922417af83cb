import Foundation
import Testing

/// insert, update, delete, get, query and tables, through the binary.
@Suite struct RecordCommandTests {
    @Test func insertFromAnArgumentAnArrayAndNDJSON() async throws {
        let sandbox = try await TSyncSandbox()
        #expect(try await sandbox.ok(["insert", "todo", #"{"id": "one", "text": "a"}"#]) == "one\n")
        #expect(try await sandbox.ok(["insert", "todo"], stdin: #"[{"id": "two"}, {"id": "three"}]"#) == "two\nthree\n")
        let generated = try await sandbox.ok(["insert", "todo"], stdin: "{\"text\": \"x\"}\n{\"id\": \"five\"}\n\n")
        let ids = generated.split(separator: "\n").map(String.init)
        #expect(ids.count == 2)
        #expect(ids[0].count == 36)
        #expect(ids[1] == "five")
        let empty = try await sandbox.run(["insert", "todo"], stdin: "")
        #expect(empty.status == 0)
        #expect(empty.stderr.contains("nothing inserted"))
        #expect(try await sandbox.ok(["tables", "--json"]) == #"[{"errors":0,"pending":5,"records":5,"table":"todo"}]"# + "\n")
    }

    @Test func getPrintsTheRecord() async throws {
        let sandbox = try await TSyncSandbox()
        try await sandbox.ok(["insert", "todo", #"{"id": "k", "text": "hi", "n": 1, "version": "ignored"}"#])
        #expect(try await sandbox.ok(["get", "todo", "k", "--json"]) == #"{"id":"k","deleted":false,"n":1,"text":"hi"}"# + "\n")
        #expect(
            try await sandbox.ok(["get", "todo", "k"]) == "{\n  \"id\": \"k\",\n  \"deleted\": false,\n  \"n\": 1,\n  \"text\": \"hi\"\n}\n"
        )
    }

    @Test func updateMergesJSONAndSetValues() async throws {
        let sandbox = try await TSyncSandbox()
        try await sandbox.ok(["insert", "todo", #"{"id": "k", "text": "hi", "n": 1, "tags": ["a"]}"#])
        try await sandbox.ok(["update", "todo", "k", #"{"text": "bye"}"#, "--set", "n=2", "--set", "done=true", "--set", "who=Bob"])
        #expect(
            try await sandbox.ok(["get", "todo", "k", "--json"])
                == #"{"id":"k","deleted":false,"done":true,"n":2,"tags":["a"],"text":"bye","who":"Bob"}"# + "\n")
        // From stdin, as `get | jq | update` would.
        try await sandbox.ok(["update", "todo", "k"], stdin: #"{"id": "k", "text": "piped", "deleted": false}"#)
        #expect(try await sandbox.ok(["get", "todo", "k", "--json"]).contains(#""text":"piped""#))
        #expect(try await sandbox.ok(["status", "--porcelain"]) == "A\ttodo\tk\n", "insert → update stays one insert")

        let system = try await sandbox.run(["update", "todo", "k", "--set", "version=3"])
        #expect(system.status == 65)
        #expect(system.stderr.contains("system property"))
        let nothing = try await sandbox.run(["update", "todo", "k"], stdin: "")
        #expect(nothing.status == 65)
    }

    @Test func deleteQueuesDeletesAndCancelsUnpushedInserts() async throws {
        let sandbox = try await TSyncSandbox()
        try await sandbox.ok(["insert", "todo"], stdin: #"[{"id": "a"}, {"id": "b"}, {"id": "c"}]"#)
        try await sandbox.ok(["delete", "todo", "a", "c"])
        #expect(try await sandbox.ok(["status", "--porcelain"]) == "A\ttodo\tb\n")
        let missing = try await sandbox.run(["get", "todo", "a"])
        #expect(missing.status == 65)
        #expect(missing.stderr.contains("no record \"a\" in table todo"))
        #expect(try await sandbox.run(["delete", "todo"]).status == 64)
    }

    @Test func queryFiltersOrdersPagesAndSelects() async throws {
        let sandbox = try await TSyncSandbox()
        try await sandbox.ok(
            ["insert", "todo"],
            stdin: """
                {"id": "a", "text": "buy milk", "n": 3, "done": false}
                {"id": "b", "text": "call mum", "n": 1, "done": true}
                {"id": "c", "text": "buy eggs", "n": 2, "done": false}
                {"id": "d", "text": "walk", "n": 2}
                """)
        func ids(_ arguments: [String]) async throws -> [String] {
            try await sandbox.ok(["query", "todo"] + arguments + ["--select", "id"]).split(separator: "\n").map {
                String($0.dropFirst(7).dropLast(2))
            }
        }
        #expect(try await ids([]) == ["a", "b", "c", "d"])
        #expect(try await ids(["--filter", "done eq false"]) == ["a", "c"])
        #expect(try await ids(["--filter", "startswith(text, 'buy') and n gt 2"]) == ["a"])
        #expect(try await ids(["--orderby", "n desc"]) == ["a", "c", "d", "b"])
        #expect(try await ids(["--orderby", "n", "--top", "2", "--skip", "1"]) == ["c", "d"])
        #expect(try await ids(["--top", "0"]) == [])
        #expect(
            try await sandbox.ok(["query", "todo", "--filter", "n eq 2", "--select", "text,n", "--json"])
                == #"[{"n":2,"text":"buy eggs"},{"n":2,"text":"walk"}]"# + "\n")
        #expect(try await sandbox.ok(["query", "todo", "--filter", "n gt 5", "--json"]) == "[]\n")
        #expect(
            try await sandbox.ok(["query", "todo", "--filter", "id eq 'b'"])
                == #"{"id":"b","deleted":false,"done":true,"n":1,"text":"call mum"}"#
                + "\n")
        #expect(try await sandbox.run(["query", "todo", "--top", "-1"]).status == 64)
    }

    @Test func tablesListsCounts() async throws {
        let sandbox = try await TSyncSandbox()
        let empty = try await sandbox.run(["tables"])
        // Piped, an empty list prints nothing at all (the note is for a terminal: TerminalMessagesTests).
        #expect(empty.status == 0 && empty.stdout.isEmpty && empty.stderr.isEmpty, "\(empty)")
        #expect(try await sandbox.ok(["tables", "--json"]) == "[]\n")
        try await sandbox.ok(["insert", "todo"], stdin: #"[{"id": "a"}, {"id": "b"}]"#)
        try await sandbox.ok(["insert", "notes", #"{"id": "n"}"#])
        try await sandbox.ok(["delete", "notes", "n"])
        // notes had its one record inserted and deleted before a push: nothing is left of it, so it
        // is not listed.
        #expect(
            try await sandbox.ok(["tables"]) == """
                TABLE  RECORDS  PENDING  ERRORS
                todo         2        2       0

                """)
    }

    @Test func purgeDropsLocalRecords() async throws {
        let sandbox = try await TSyncSandbox()
        try await sandbox.ok(["insert", "todo"], stdin: #"[{"id": "a", "done": true}, {"id": "b", "done": false}]"#)
        let refused = try await sandbox.run(["purge", "todo", "--filter", "done eq true"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("--force"))
        let forced = try await sandbox.run(["purge", "todo", "--filter", "done eq true", "--force", "--yes"])
        #expect(forced.status == 0)
        #expect(forced.stderr.contains("purged 1 record from todo, dropped 1 pending operation"))
        #expect(try await sandbox.ok(["status", "--porcelain"]) == "A\ttodo\tb\n")
        #expect(try await sandbox.ok(["query", "todo", "--select", "id"]) == #"{"id":"b"}"# + "\n")
    }
}
