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

    /// Several pieces of streamed output (64 KiB each) across two interleaved tables.
    private func largeQueue(_ sandbox: TSyncSandbox, count: Int) async throws {
        let todo = (0..<count).map { #"{"id": "r\#($0)", "text": "item \#($0)", "n": \#($0)}"# }.joined(separator: "\n")
        try await sandbox.ok(["insert", "todo"], stdin: todo)
        try await sandbox.ok(["insert", "notes"], stdin: (0..<50).map { #"{"id": "n\#($0)"}"# }.joined(separator: "\n"))
        try await sandbox.ok(["insert", "todo", #"{"id": "last"}"#])
    }

    @Test func statusJSONIsOneObjectWhateverTheQueue() async throws {
        let sandbox = try await TSyncSandbox(remote: "http://127.0.0.1:9")
        try await largeQueue(sandbox, count: 4000)
        let text = try await sandbox.ok(["status", "--json"])
        #expect(text.hasSuffix("}\n") && text.filter { $0 == "\n" }.count == 1, "one line")
        #expect(text.hasPrefix(#"{"clean":false,"errors":0,"operations":[{"id":"r0","error":null,"kind":"insert","queuedAt":""#))
        #expect(
            text.contains(
                #""seq":4051,"state":"pending","table":"todo"}],"pending":4051,"queries":[],"remote":"http://127.0.0.1:9","store":""#))
        #expect(
            text.hasSuffix(
                #"/.tsync","tables":[{"deletes":0,"errors":0,"inserts":50,"pending":50,"table":"notes","updates":0},"#
                    + #"{"deletes":0,"errors":0,"inserts":4001,"pending":4001,"table":"todo","updates":0}]}"# + "\n"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(Set(object.keys) == ["clean", "errors", "operations", "pending", "queries", "remote", "store", "tables"])
        let operations = try #require(object["operations"] as? [[String: Any]])
        #expect(operations.count == 4051)
        #expect(operations.map { $0["seq"] as? Int } == (1...4051).map { $0 })
        #expect(operations[4000]["table"] as? String == "notes" && operations[4050]["id"] as? String == "last")
        // The same operations, one per line, in the other forms.
        let lines = try await sandbox.ok(["status", "--ndjson"]).split(separator: "\n")
        #expect(lines.count == 4051)
        #expect(text.contains(#""operations":["# + lines.joined(separator: ",") + "],"))
        let porcelain = try await sandbox.ok(["status", "--porcelain"]).split(separator: "\n")
        #expect(porcelain.count == 4051 && porcelain[4000] == "A\tnotes\tn0" && porcelain[4050] == "A\ttodo\tlast")
        let long = try await sandbox.ok(["status"])
        #expect(long.contains("4051 pending operations in 2 tables:"))
        #expect(long.contains("  todo: 4001 pending (4001 inserts)\n    added:     r0\n"))
        #expect(long.contains("    added:     r9\n    … and 3991 more"))
        #expect(long.contains("  notes: 50 pending (50 inserts)\n    added:     n0\n"))
    }

    @Test func diffNDJSONHasALinePerPendingItem() async throws {
        let sandbox = try await TSyncSandbox()
        try await largeQueue(sandbox, count: 3000)
        try await sandbox.ok(["update", "todo", "r5", #"{"text": "changed"}"#])
        try await sandbox.ok(["delete", "notes", "n1"])
        let lines = try await sandbox.ok(["diff", "--ndjson"]).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.last == "" && lines.count - 1 == 3050, "3001 + 50 items, one of them gone, and the final newline")
        let pending = try await sandbox.ok(["status", "--porcelain"]).split(separator: "\n").count
        #expect(lines.count - 1 == pending)
        #expect(lines.first?.hasPrefix(#"{"id":"r0","base":null,"changes":[{"after":0,"change":"added","field":"n"},"#) == true)
        #expect(lines.contains { $0.contains(#""id":"r5""#) && $0.contains(#"{"after":"changed","change":"added","field":"text"}"#) })
        #expect(!lines.contains { $0.contains(#""id":"n1""#) })
        let json = try await sandbox.ok(["diff", "--json"])
        #expect(json == "[" + lines.dropLast().joined(separator: ",") + "]\n")
        #expect(try await sandbox.ok(["diff", "--json", "notes", "n2"]).hasPrefix(#"[{"id":"n2","#))
        #expect(try await sandbox.ok(["diff", "--ndjson", "notes", "n2"]).split(separator: "\n").count == 1)
    }

    @Test func aReaderThatGoesEndsTheReportQuietly() async throws {
        let sandbox = try await TSyncSandbox()
        try await largeQueue(sandbox, count: 6000)
        // SIGPIPE ignored (as under some parents): the write fails with EPIPE, and tsync stops
        // reading and exits 0 without a word. With SIGPIPE's default, the signal ends it, as any
        // Unix filter.
        for command in ["status --json", "status --ndjson", "status --porcelain", "diff --ndjson", "diff --json"] {
            let script = #"trap '' PIPE; "$0" \#(command) | head -c 10; echo " exit ${PIPESTATUS[0]}" >&2"#
            let result = try await TSyncProcess.run(
                ["-c", script, TSyncBinary.path], in: sandbox.path, executable: "/bin/bash")
            #expect(result.stdout.count == 10, "\(command): \(result)")
            #expect(result.stderr == " exit 0\n", "\(command): \(result)")
        }
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
