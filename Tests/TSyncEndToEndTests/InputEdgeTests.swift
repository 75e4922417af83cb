import Foundation
import Testing
import TSyncModel

/// Edges of the input a user walkthrough found handled wrongly: CSV cells and errors, JSON names
/// given twice, a misplaced FIELD=VALUE, diff of an unknown id, negative counts, help of an
/// unknown subcommand, warnings, and what `tsync log` keeps and shows.
@Suite(.serialized) struct InputEdgeTests {
    // MARK: insert --csv

    @Test func csvCellsAreKeptByteForByteAndBlankLinesAreNoRecords() async throws {
        let store = try await TSyncSandbox()
        let insert = try await store.run(["insert", "t", "--csv", "-"], stdin: "id,a,b,c\n20, x , ,\"  \"\n21,a\n\n")
        #expect(insert.status == 0 && insert.stdout == "20\n21\n", "the blank line is no record: \(insert)")
        let records = try JSONOutput.array(try await store.ok(["query", "t", "--json"]))
        #expect(records.count == 2, "\(records)")
        let first = try JSONOutput.object(try await store.ok(["get", "t", "20", "--json"]))
        #expect(first["a"] == " x " && first["b"] == " " && first["c"] == "  ", "\(first)")
        let second = try JSONOutput.object(try await store.ok(["get", "t", "21", "--json"]))
        #expect(second["a"] == "a" && second["b"] == nil && second["c"] == nil, "a short row leaves the rest out: \(second)")
        // Blank lines anywhere (CRLF too, and before the header) are skipped; a line of spaces is a cell.
        let more = try await store.run(["insert", "u", "--csv"], stdin: "\r\nid,n\r\n\r\nk1,1\r\n\r\n\r\nk2, 2\r\n")
        #expect(more.status == 0 && more.stdout == "k1\nk2\n", "\(more)")
        #expect(try JSONOutput.object(try await store.ok(["get", "u", "k2", "--json"]))["n"] == " 2", "text, not the number 2")
        // What query --csv writes comes back the same, spaces included.
        let copy = try await TSyncSandbox()
        try await copy.ok(["insert", "t", "--csv", "-q"], stdin: try await store.ok(["query", "t", "--csv"]))
        #expect(try await copy.ok(["query", "t", "--json"]) == (try await store.ok(["query", "t", "--json"])))
        // A header alone, or nothing at all, inserts nothing and is no error.
        for text in ["id,a\n", ""] {
            let none = try await store.run(["insert", "v", "--csv"], stdin: text)
            #expect(none.status == 0 && none.stdout.isEmpty && none.stderr.contains("nothing inserted"), "\(none)")
        }
    }

    @Test(arguments: [
        ("id,a\n1,{\"k\":}\n", "invalid CSV at line 2, column 4: a quote inside a cell that does not start with one"),
        ("id,a\n1,\"two\nlines\"\n2,x\"y\n", "invalid CSV at line 4, column 4: a quote inside a cell"),
        ("id,a\n1,\"x\" \n", "invalid CSV at line 2, column 6: text after the closing quote of a cell"),
        ("id,a\n1,ok\n2,\"never closed\n3,x\n", "invalid CSV: the quoted cell that starts at line 3, column 3 has no closing quote"),
        ("id,a\n1,ok\n\n2,x,y\n", "invalid CSV at line 4: the row has 3 cells, more than the 2 columns of the header"),
    ])
    func aCSVErrorSaysWhatAndWhere(csv: String, message: String) async throws {
        let store = try await TSyncSandbox()
        let result = try await store.run(["insert", "t", "--csv"], stdin: csv)
        #expect(result.status == 65, "\(result)")
        #expect(result.stderr.hasPrefix("tsync: error: " + message), "\(result.stderr)")
        #expect(!result.stderr.contains("quotation(") && !result.stderr.contains("message:"), "no internal value: \(result.stderr)")
        #expect(try await store.run(["query", "t"]).status == 65, "nothing inserted, the table is still unknown")
    }

    /// `query --csv | insert --csv` is exact for every record tsync can hold; before, the
    /// text "null" came back as null, "true" as a boolean, "" was dropped, and objects and arrays
    /// came back as their JSON text.
    @Test func csvQueryThenInsertGivesBackEveryRecordExactly() async throws {
        let store = try await TSyncSandbox()
        let records = [
            #"{"id": "t1", "a": "null", "b": "true", "c": "", "d": "12", "e": "{\"x\":[1,2]}", "f": "[]", "g": "-0.5"}"#,
            #"{"id": "t2", "a": null, "b": true, "c": {"x": [1, 2, {"y": "a,\"b\"\n"}]}, "d": [], "e": {}, "f": -0.5, "g": 9007199254740993}"#,
            #"{"id": "t3", "a": 9223372036854775807, "b": -9223372036854775808, "c": 2.0, "d": -0.0, "e": "日本語 é", "f": [null, "null", false]}"#,
            #"{"id": "null", "a": " spaced ", "h": "line\nbreak\r\n"}"#,
        ]
        try await store.ok(["insert", "todo", "-q"], stdin: records.joined(separator: "\n"))
        let csv = try await store.ok(["query", "todo", "--csv"])
        let copy = try await TSyncSandbox()
        try await copy.ok(["insert", "todo", "--csv", "-q"], stdin: csv)
        let before = try await store.ok(["query", "todo", "--json"])
        #expect(try await copy.ok(["query", "todo", "--json"]) == before, "\(csv)")
        #expect(try await copy.ok(["query", "todo", "--csv"]) == csv)
        let first = try JSONOutput.object(try await copy.ok(["get", "todo", "t1", "--json"]))
        #expect(first["a"] == "null" && first["b"] == "true" && first["c"] == "" && first["e"] == #"{"x":[1,2]}"#, "\(first)")
        let second = try JSONOutput.object(try await copy.ok(["get", "todo", "t2", "--json"]))
        #expect(second["a"] == .null && second["d"] == [] && second["h"] == nil, "\(second)")
    }

    // MARK: JSON

    @Test func aFieldNameGivenTwiceIsRefused() async throws {
        let store = try await TSyncSandbox()
        let insert = try await store.run(["insert", "u", #"{"id":"u3","a":1,"a":2}"#])
        #expect(insert.status == 65, "\(insert)")
        #expect(insert.stderr == "tsync: error: invalid JSON at line 1, column 18: the field name \"a\" appears twice in one object\n")
        let piped = try await store.run(["insert", "u"], stdin: "{\"id\": \"u4\"}\n{\"id\": \"u5\",\n \"b\": 1, \"b\": 1}\n")
        #expect(piped.status == 65 && piped.stderr.contains("line 3, column 10: the field name \"b\" appears twice"), "\(piped)")
        try await store.ok(["insert", "u", #"{"id":"u1","a":1}"#])
        let update = try await store.run(["update", "u", "u1", #"{"a":2,"a":3}"#])
        #expect(update.status == 65 && update.stderr.contains("appears twice"), "\(update)")
        #expect(try JSONOutput.object(try await store.ok(["get", "u", "u1", "--json"]))["a"] == 1)
    }

    // MARK: update

    @Test func aSecondFieldWithoutSetIsNamedAsSuch() async throws {
        let store = try await TSyncSandbox()
        try await store.ok(["insert", "todo", #"{"id": "c4", "n": 1}"#])
        let result = try await store.run(["update", "todo", "c4", "--set", #"text="A""#, "n=5"])
        #expect(result.status == 64, "\(result)")
        #expect(result.stderr == "tsync: error: \"n=5\" is not JSON; to set another field, repeat --set: --set n=5\n", "\(result.stderr)")
        let alone = try await store.run(["update", "todo", "c4", "done=true"])
        #expect(alone.status == 64 && alone.stderr.contains(#""done=true" is not JSON; to set a field, use --set: --set done=true"#))
        #expect(try JSONOutput.object(try await store.ok(["get", "todo", "c4", "--json"])) == ["id": "c4", "n": 1, "deleted": false])
        // JSON that is merely broken is still bad input, with its position.
        let broken = try await store.run(["update", "todo", "c4", #"{"n"=5}"#])
        #expect(broken.status == 65 && broken.stderr.contains("invalid JSON at line 1, column 5"), "\(broken)")
    }

    // MARK: diff

    @Test func diffOfAnUnknownIDIsBadInput() async throws {
        let server = try await ServeFixture()
        let store = try await TSyncSandbox(remote: server.url)
        try await store.ok(["insert", "todo", #"{"id": "synced"}"#])
        try await store.ok(["push"])
        for format in [[], ["--json"], ["--ndjson"]] {
            let unknown = try await store.run(["diff", "todo", "nosuch"] + format)
            #expect(unknown.status == 65 && unknown.stdout.isEmpty, "\(format): \(unknown)")
            #expect(unknown.stderr == "tsync: error: no record \"nosuch\" in table todo\n", "as `get` says it: \(unknown.stderr)")
        }
        #expect(try await store.run(["get", "todo", "nosuch"]).stderr == "tsync: error: no record \"nosuch\" in table todo\n")
        // A known record with nothing pending has nothing to show, and that is no error.
        #expect(try await store.ok(["diff", "todo", "synced", "--json"]) == "[]\n")
        #expect(try await store.ok(["diff", "todo", "synced"]).isEmpty)
        // A record deleted locally is gone, but its pending delete is shown.
        try await store.ok(["delete", "todo", "synced"])
        #expect(try JSONOutput.array(try await store.ok(["diff", "todo", "synced", "--json"])).count == 1)
    }

    // MARK: Negative numbers

    @Test(arguments: [
        (["log", "-n", "-5"], "-n must be 1 or more (got -5)"),
        (["query", "todo", "--top", "-1"], "--top must be 0 or more (got -1)"),
        (["query", "todo", "--skip", "-3"], "--skip must be 0 or more (got -3)"),
        (["serve", "--max-connections", "-1"], "--max-connections must be at least 1 (got -1)"),
        (["serve", "--idle-timeout", "-2"], "--idle-timeout must be at least 1s (got -2s)"),
        (["serve", "--port", "-1"], "invalid port -1"),
    ])
    func aNegativeNumberIsCalledInvalidNotMissing(arguments: [String], message: String) async throws {
        let store = try await TSyncSandbox()
        try await store.ok(["insert", "todo", #"{"id": "a"}"#])
        let result = try await store.run(arguments)
        #expect(result.status == 64, "\(result)")
        #expect(result.stderr.hasPrefix("tsync: error: " + message), "\(result.stderr)")
        #expect(!result.stderr.contains("issing value"))
    }

    // MARK: help

    @Test(arguments: [
        (["help", "user", "nosuch"], "'nosuch' is not a subcommand of 'tsync user' (`tsync user --help` lists them)"),
        (["help", "user", "ad"], "'ad' is not a subcommand of 'tsync user'; did you mean 'add'? (`tsync user --help` lists them)"),
        (
            ["help", "conflicts", "shw"],
            "'shw' is not a subcommand of 'tsync conflicts'; did you mean 'show'? (`tsync conflicts --help` lists them)"
        ),
        (["help", "get", "nosuch"], "'nosuch' is not a subcommand of 'tsync get' (it has none)"),
    ])
    func helpOfAnUnknownSubcommandIsAUsageError(arguments: [String], message: String) async throws {
        let directory = try TemporaryDirectory()
        let result = try await TSyncProcess.run(arguments, in: directory.path)
        #expect(result.status == 64 && result.stdout.isEmpty, "\(result)")
        #expect(result.stderr == "tsync: error: \(message)\n", "\(result.stderr)")
    }

    @Test func helpOfAKnownSubcommandStillHelps() async throws {
        let directory = try TemporaryDirectory()
        let add = try await TSyncProcess.run(["help", "user", "add"], in: directory.path)
        #expect(add.status == 0 && add.stdout.contains("USAGE: tsync user add"), "\(add)")
        let show = try await TSyncProcess.run(["help", "conflicts", "show"], in: directory.path)
        #expect(show.status == 0 && show.stdout.contains("USAGE: tsync conflicts show"), "\(show)")
    }

    // MARK: Warnings and the log

    @Test func aBadLogSettingIsAWarningAndCostsNoEntry() async throws {
        let store = try await TSyncSandbox()
        try Data(#"{"log.maxEntries": "abc"}"#.utf8).write(to: URL(fileURLWithPath: store.path + "/.tsync/config.json"))
        let result = try await store.run(["insert", "todo", #"{"id": "zz1"}"#])
        #expect(result.status == 0 && result.stdout == "zz1\n", "\(result)")
        #expect(result.stderr.hasPrefix("warning: the store's setting log.maxEntries is \"abc\""), "\(result.stderr)")
        #expect(!result.stderr.contains("error:"), "a warning is no error: \(result.stderr)")
        let newest = try #require(try JSONOutput.array(try await store.ok(["log", "--json"])).first?.objectValue)
        #expect(newest["command"] == "insert" && newest["exitCode"] == 0, "the entry is completed all the same: \(newest)")
    }

    @Test func purgeIsLoggedWithWhatItPurged() async throws {
        let store = try await TSyncSandbox()
        try await store.ok(["insert", "t", "-q"], stdin: #"[{"id": "a"}, {"id": "b"}, {"id": "c"}]"#)
        let purge = try await store.run(["purge", "t", "--yes", "--force"])
        #expect(purge.status == 0 && purge.stderr.contains("purged 3 records"), "\(purge)")
        let entry = try #require(try JSONOutput.array(try await store.ok(["log", "--json"])).first?.objectValue)
        #expect(entry["command"] == "purge", "\(entry)")
        #expect(entry["counts"]?.objectValue?["changed"] == 3, "\(entry)")
        #expect(entry["itemCount"] == 3)
        let items = Self.strings(entry["items"]).sorted()
        #expect(items == ["t/a", "t/b", "t/c"], "\(entry)")
        #expect(try await store.ok(["log", "-n", "1"]).contains("changed 3"))
    }

    @Test func theLogShowsArgumentsAsAShellReadsThem() async throws {
        let store = try await TSyncSandbox()
        try await store.ok(["insert", "todo", "-q"], stdin: #"[{"id": "lg1"}, {"id": "lg 2"}]"#)
        let commands: [[String]] = [
            ["update", "todo", "lg1", "--set", #"text="B""#, "--set", "note=it's", "--set", "empty="],
            ["delete", "todo", "lg1", "lg 2"],
        ]
        try await store.ok(commands[0])
        try await store.ok(commands[1])
        let text = try await store.ok(["log", "-n", "2"])
        #expect(text.contains("    tsync delete todo lg1 'lg 2'\n"), "\(text)")
        #expect(text.contains(#"    tsync update todo lg1 --set 'text="B"' --set 'note=it'\''s' --set empty=\#n"#), "\(text)")
        // Each shown line, read back by a shell, gives the arguments --json keeps (raw).
        let entries = try JSONOutput.array(try await store.ok(["log", "-n", "2", "--json"]))
        let shown = text.split(separator: "\n").filter { $0.hasPrefix("    tsync ") }.map { $0.dropFirst("    tsync ".count) }
        #expect(shown.count == 2 && entries.count == 2)
        for (line, entry) in zip(shown, entries) {
            let raw = Self.strings(entry.objectValue?["arguments"])
            let shell = try await TSyncProcess(["-c", "printf '%s\\n' \(line)"], in: store.path, executable: "/bin/bash").wait()
            #expect(shell.status == 0 && shell.lines == raw, "\(line) → \(shell.lines), want \(raw)")
        }
        #expect(entries.first?.objectValue?["arguments"] == ["delete", "todo", "lg1", "lg 2"])

        // Control characters never reach the terminal raw: $'…' with escapes, on one line.
        let control = "t=\u{1B}[31mRED\u{1B}[0m\nend"
        try await store.ok(["insert", "todo", #"{"id": "lg3"}"#])
        try await store.ok(["update", "todo", "lg3", "--set", control])
        let last = try await store.ok(["log", "-n", "1"])
        #expect(!last.contains("\u{1B}"), "\(last)")
        let line = last.split(separator: "\n").first { $0.hasPrefix("    tsync ") }.map { String($0.dropFirst("    tsync ".count)) } ?? ""
        #expect(line.hasSuffix(#"--set $'t=\x1b[31mRED\x1b[0m\nend'"#), "\(line)")
        let shell = try await TSyncProcess(
            ["-c", "args=(\(line)); [ \"${args[4]}\" = \"$WANT\" ]"], in: store.path, environment: ["WANT": control],
            executable: "/bin/bash"
        ).wait()
        #expect(shell.status == 0, "bash reads it back: \(shell)")
    }

    /// The strings of a JSON array (none for anything else).
    private static func strings(_ value: JSONValue?) -> [String] {
        guard case .array(let elements)? = value else { return [] }
        return elements.compactMap(\.stringValue)
    }
}
