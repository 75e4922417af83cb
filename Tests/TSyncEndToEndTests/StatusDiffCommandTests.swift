import Foundation
import Testing

/// Every form of `status`, `--exit-code`, and `diff`.
@Suite struct StatusDiffCommandTests {
    @Test func aCleanStore() async throws {
        let sandbox = try await TSyncSandbox(remote: "http://127.0.0.1:9")
        let long = try await sandbox.ok(["status"])
        #expect(long.contains("Remote: http://127.0.0.1:9"))
        #expect(long.contains("Nothing to push"))
        #expect(try await sandbox.ok(["status", "--short"]) == "")
        #expect(try await sandbox.ok(["status", "--porcelain"]) == "")
        #expect(try await sandbox.run(["status", "--exit-code"]).status == 0)
        #expect(try await sandbox.run(["status", "--porcelain", "--exit-code"]).status == 0)
        let json = try await sandbox.ok(["status", "--json"])
        #expect(
            json.hasPrefix(#"{"clean":true,"errors":0,"operations":[],"pending":0,"queries":[],"remote":"http://127.0.0.1:9","store":""#))
        #expect(json.hasSuffix(#"/.tsync","tables":[]}"# + "\n"))
    }

    @Test func pendingWorkInEveryForm() async throws {
        let sandbox = try await TSyncSandbox()
        try await sandbox.ok(["insert", "todo"], stdin: #"[{"id": "a", "t": 1}, {"id": "b"}]"#)
        try await sandbox.ok(["insert", "notes", #"{"id": "n"}"#])

        #expect(try await sandbox.ok(["status", "--porcelain"]) == "A\ttodo\ta\nA\ttodo\tb\nA\tnotes\tn\n")
        #expect(
            try await sandbox.ok(["status", "-s"])
                == "notes: 1 added, 0 modified, 0 deleted, 0 failed\ntodo: 2 added, 0 modified, 0 deleted, 0 failed\n")

        let long = try await sandbox.ok(["status"])
        #expect(long.contains("3 pending operations in 2 tables:"))
        #expect(long.contains("  todo: 2 pending (2 inserts)"))
        #expect(long.contains("    added:     a"))
        #expect(long.contains("`tsync push`"))
        #expect(!long.contains("\u{1B}["), "no colour when stdout is not a terminal")

        let json = try await sandbox.ok(["status", "--json"])
        #expect(json.contains(#""clean":false"#))
        #expect(json.contains(#""pending":3"#))
        #expect(json.contains(#"{"deletes":0,"errors":0,"inserts":2,"pending":2,"table":"todo","updates":0}"#))
        #expect(json.contains(#"{"id":"a","error":null,"kind":"insert","queuedAt":""#))
        #expect(json.contains(#""seq":1,"state":"pending","table":"todo"}"#))

        for form in [[], ["--short"], ["--porcelain"], ["--json"]] {
            let result = try await sandbox.run(["status", "--exit-code"] + form)
            #expect(result.status == 1, "\(form)")
            #expect(!result.stdout.isEmpty)
        }
        #expect(try await sandbox.run(["status", "--short", "--json"]).status == 64)
    }

    @Test func longStatusListsTenItemsPerTable() async throws {
        let sandbox = try await TSyncSandbox()
        let records = (1...25).map { #"{"id": "r\#($0)"}"# }.joined(separator: "\n")
        try await sandbox.ok(["insert", "todo"], stdin: records)
        let long = try await sandbox.ok(["status"])
        #expect(long.contains("r10\n"))
        #expect(!long.contains("r11\n"))
        #expect(long.contains("… and 15 more"))
        #expect(try await sandbox.ok(["status", "--porcelain"]).split(separator: "\n").count == 25)
    }

    @Test func diffShowsFieldChanges() async throws {
        let sandbox = try await TSyncSandbox()
        try await sandbox.ok(["insert", "todo", #"{"id": "a", "text": "hi", "n": 1}"#])
        try await sandbox.ok(["insert", "notes", #"{"id": "z"}"#])
        #expect(try await sandbox.ok(["diff", "todo"]) == "insert todo/a\n+ n: 1\n+ text: \"hi\"\n")
        #expect(try await sandbox.ok(["diff", "notes", "z"]) == "insert notes/z\n  (no field changes)\n")
        #expect(
            try await sandbox.ok(["diff", "todo", "a", "--json"])
                == #"[{"id":"a","base":null,"changes":[{"after":1,"change":"added","field":"n"},{"after":"hi","change":"added","field":"text"}],"kind":"insert","ours":{"id":"a","deleted":false,"n":1,"text":"hi"},"seq":1,"table":"todo"}]"#
                + "\n")
        #expect(try await sandbox.ok(["diff"]).contains("insert notes/z"))
        let unknown = try await sandbox.run(["diff", "nope"])
        #expect(unknown.status == 65)
        #expect(unknown.stderr.contains("unknown table \"nope\""))
    }

    @Test func colourOnlyOnATerminalAndNeverWithNoColor() async throws {
        let sandbox = try await TSyncSandbox()
        try await sandbox.ok(["insert", "todo", #"{"id": "a"}"#])
        #expect(!(try await sandbox.ok(["status"])).contains("\u{1B}["), "not a terminal: no colour")
        guard let coloured = try await TSyncProcess.runOnTerminal(["status"], in: sandbox.path, environment: ["TERM": "xterm"])
        else { return }  // no `script` to make a terminal with
        #expect(coloured.status == 0)
        #expect(coloured.stdout.contains("\u{1B}[32madded:"), "\(coloured)")
        let plain = try #require(
            try await TSyncProcess.runOnTerminal(["status"], in: sandbox.path, environment: ["TERM": "xterm", "NO_COLOR": "1"]))
        #expect(plain.stdout.contains("added:"))
        #expect(!plain.stdout.contains("\u{1B}["), "\(plain)")
    }

    @Test func neverPromptsOnATerminal() async throws {
        let sandbox = try await TSyncSandbox()
        // stdin is a terminal and no record was given: a usage error, not a wait for input.
        guard let result = try await TSyncProcess.runOnTerminal(["insert", "todo"], in: sandbox.path) else { return }
        #expect(result.status == 64, "\(result)")
        #expect(result.stdout.contains("pipe records"))
    }
}
