import Foundation
import Testing
import TSyncModel

/// The command line's smaller points (CommandLineTests has typos, install, version): the
/// real binary's stdout, stderr and exit code, on a pipe and, where it matters, on a terminal.
@Suite(.serialized) struct CommandLineUXTests {
    // MARK: 5. Unknown tables and fields

    @Test func aMistypedTableIsSaidNotKept() async throws {
        let server = try await ServeFixture()
        let store = try await TSyncSandbox(remote: server.url)
        try await store.ok(["insert", "todoitem", #"{"id": "a", "text": "x"}"#])
        try await store.ok(["push"])
        let pull = try await store.run(["pull", "todoitems"])
        #expect(pull.status == 0, "the server cannot tell an empty table from none: \(pull)")
        #expect(
            pull.stderr.contains(
                "warning: the server sent no records of todoitems, and this store has no such table; did you mean 'todoitem'?"),
            "\(pull.stderr)")
        #expect(try JSONOutput.array(try await store.ok(["tables", "--json"])).count == 1, "the empty table is not listed")
        let get = try await store.run(["get", "todoitm", "a"])
        #expect(get.status == 65 && get.stderr.contains("unknown table \"todoitm\"; did you mean 'todoitem'"), "\(get)")
        let query = try await store.run(["query", "todoitem", "--select", "id,txt", "--filter", "done eq true"])
        #expect(query.status == 0)
        #expect(query.stderr.contains(#"warning: no record of todoitem has a field "txt""#), "\(query.stderr)")
        #expect(query.stderr.contains(#"no record of todoitem has a field "done""#))
        #expect(!query.stderr.contains(#""id""#), "system properties always exist")
        // A pulled, empty table with a saved query is listed; purging it forgets it.
        try await store.ok(["pull", "notes", "--query-id", "all"])
        #expect(try await store.ok(["tables"]).contains("notes"))
        try await store.ok(["purge", "notes", "--yes"])
        #expect(!(try await store.ok(["tables"]).contains("notes")))
        #expect(try await store.run(["query", "notes"]).status == 65, "a purged table is unknown again")
    }

    // MARK: 7. Help, man pages, one error style

    @Test func everyCommandHasExamplesAndItsJSONFields() async throws {
        let sandbox = try await TSyncSandbox()
        let commands = [
            "init", "remote", "insert", "update", "delete", "get", "query", "tables", "status", "diff", "purge", "login", "logout",
            "push", "pull", "sync", "queries", "conflicts", "resolve", "config", "log", "serve", "user", "version",
            "conflicts show", "conflicts list", "user add", "user remove", "user list", "user passwd",
        ]
        for command in commands {
            let help = try await sandbox.ok(command.split(separator: " ").map(String.init) + ["--help"])
            #expect(help.contains("EXAMPLES\n  tsync ") || help.contains("EXAMPLES\n  printf"), "\(command): no EXAMPLES")
            if help.contains("[--json]") {
                #expect(help.contains("{\"") || help.contains("\"id\""), "\(command): --json without its fields")
            }
        }
        let root = try await sandbox.ok(["--help"])
        #expect(root.contains("asks questions only on a terminal") && !root.contains("never prompts"))
        let usage = try await sandbox.run(["push", "--bogus"])
        #expect(usage.status == 64 && usage.stderr.hasPrefix("tsync: error: unknown option '--bogus'\nUsage: tsync push"), "\(usage)")
        let missing = try await sandbox.run(["get"])
        #expect(missing.status == 64 && missing.stderr.hasPrefix("tsync: error: missing expected argument"), "\(missing)")
    }

    @Test func theMainPageListsCommandsAndExitCodes() async throws {
        let page = try String(contentsOf: ReadmeTests.packageRootURL.appendingPathComponent("man/tsync.1"), encoding: .utf8)
        #expect(page.contains(".Sh COMMANDS") && page.contains(".It Cm resolve\nSettle failed operations"))
        #expect(page.contains(".Sh \"EXIT STATUS\"\n.Bl -tag") && page.contains(".It 66\nno tsync store here"))
        #expect(!page.contains(".Ex -std") && page.components(separatedBy: "EXIT STATUS").count == 2, "one EXIT STATUS section")
        #expect(page.contains(".nh\n"), "no hyphenation: a JSON field name split at a line end cannot be copied")
    }

    // MARK: 8. Push counts

    @Test func thePushLineAndItsJSONAgree() async throws {
        let server = try await ServeFixture(options: ["--max-batch", "0"])
        let a = try await TSyncSandbox(remote: server.url)
        let b = try await TSyncSandbox(remote: server.url)
        try await a.ok(["insert", "todo"], stdin: #"[{"id": "x", "n": 0}, {"id": "y", "n": 0}]"#)
        try await a.ok(["push"])
        try await b.ok(["pull", "todo"])
        try await a.ok(["update", "todo", "x", "--set", "n=1"])
        try await a.ok(["update", "todo", "y", "--set", "n=1"])
        try await a.ok(["push"])
        try await b.ok(["update", "todo", "x", "--set", "n=2"])
        try await b.ok(["update", "todo", "y", "--set", "n=2"])
        try await b.ok(["insert", "todo", #"{"id": "z", "n": 2}"#])
        let text = try await b.run(["push"])
        #expect(text.status == 2)
        #expect(text.stderr.contains("pushed 1, 2 failed (2 conflicts) — run `tsync conflicts`"), "\(text.stderr)")
        try await b.ok(["update", "todo", "x", "--set", "n=3"])  // folds into the failed update, which waits
        let json = try await b.run(["push", "--json", "-q"])
        #expect(json.status == 2 && json.stderr.isEmpty, "-q --json: no summary line: \(json)")
        let summary = try JSONOutput.object(json.stdout)
        #expect(JSONOutput.int(summary["pushed"]) == 0 && JSONOutput.int(summary["failed"]) == 0)
        #expect(JSONOutput.int(summary["heldBack"]) == 2, "the two failed operations wait: \(summary)")
        let again = try await b.run(["push"])
        #expect(again.stderr.contains("pushed 0, 2 held back by unsettled errors"), "\(again.stderr)")
    }

    // MARK: 9. Progress with an end

    @Test func progressShowsTheTotalRateAndTimeLeft() async throws {
        let server = try await ServeFixture()
        let writer = try await TSyncSandbox(remote: server.url)
        try await writer.ok(["insert", "todo", "-q"], stdin: (0..<400).map { #"{"id": "r\#($0)"}"# }.joined(separator: "\n"))
        try await writer.ok(["push"])
        let proxy = try LossyProxy(upstream: server.url)
        let reader = try await TSyncSandbox(remote: proxy.url)
        proxy.delay(0.15)  // 20 pages: 3 s
        guard
            let pull = try await TSyncProcess.runOnTerminal(
                ["pull", "todo", "--query-id", "all", "--page-size", "20"], in: reader.path, environment: ["TERM": "xterm"])
        else { return }
        #expect(pull.status == 0, "\(pull)")
        #expect(pull.stdout.contains("pulling todo: 20/400 (5%"), "the server's count is the total: \(pull.stdout)")
        #expect(pull.stdout.range(of: #"/400 \(\d+%, \d+/s, [0-9]+ s left\)"#, options: .regularExpression) != nil, "\(pull.stdout)")
    }

    // MARK: 11. -v, purge and delete, pager, NDJSON

    @Test func verboseShowsEachRequestAndNeverTheToken() async throws {
        let server = try await ServeFixture(authenticated: true)
        let store = try await TSyncSandbox(remote: server.url)
        let token = try #require(try await server.token())
        try await store.ok(["insert", "todo", #"{"id": "a"}"#])
        let push = try await store.run(["push", "-v"], environment: ["TSYNC_TOKEN": token])
        #expect(push.status == 0, "\(push)")
        #expect(push.stderr.contains("GET \(server.url)/tables/$batch -> 200"), "\(push.stderr)")
        #expect(push.stderr.contains("POST \(server.url)/tables/$batch -> 200"), "\(push.stderr)")
        #expect(!push.stderr.contains(token))
        let pull = try await store.run(["pull", "todo", "--verbose"], environment: ["TSYNC_TOKEN": token])
        #expect(pull.stderr.contains("GET \(server.url)/tables/todo?") && pull.stderr.contains("-> 200"), "\(pull.stderr)")
    }

    @Test func purgeAsksOnATerminalAndRefusesWithoutOne() async throws {
        let store = try await TSyncSandbox()
        try await store.ok(["insert", "todo"], stdin: #"[{"id": "a", "done": true}, {"id": "b", "done": false}]"#)
        try await store.ok(["delete", "todo", "b"])
        let dry = try await store.run(["purge", "todo", "--force", "--dry-run"])
        #expect(dry.status == 0 && dry.stderr.contains("would purge 1 record from todo, drop 1 pending operation"), "\(dry)")
        let refused = try await store.run(["purge", "todo", "--force"])
        #expect(refused.status == 64 && refused.stderr.contains("add --yes"), "\(refused)")
        #expect(try await store.ok(["query", "todo", "--select", "id"]) == #"{"id":"a"}"# + "\n", "nothing was dropped")
        if let no = try await TSyncProcess.runOnTerminal(["purge", "todo", "--force"], in: store.path, stdin: "n\n") {
            #expect(no.status == 0 && no.stdout.contains("Purge 1 record from todo, drop 1 pending operation? [y/N]"), "\(no)")
            #expect(no.stdout.contains("nothing purged"))
            #expect(try await store.ok(["query", "todo", "--select", "id"]) == #"{"id":"a"}"# + "\n")
            let yes = try #require(try await TSyncProcess.runOnTerminal(["purge", "todo", "--force"], in: store.path, stdin: "y\n"))
            #expect(yes.stdout.contains("purged 1 record from todo, dropped 1 pending operation"), "\(yes)")
            #expect(try await store.ok(["status", "--porcelain"]).isEmpty)
        }
        try await store.ok(["insert", "todo", #"{"id": "c"}"#])
        #expect(try await store.ok(["delete", "todo", "c", "c", "--dry-run"]) == "todo/c\n")
        #expect(try await store.ok(["status", "--porcelain"]) == "A\ttodo\tc\n", "a dry run deletes nothing")
        #expect(try await store.run(["delete", "todo", "c", "nosuch", "--dry-run"]).status == 65)
    }

    @Test func aLongDiffIsPagedOnATerminalOnly() async throws {
        let store = try await TSyncSandbox()
        try await store.ok(["insert", "todo", "-q"], stdin: (0..<40).map { #"{"id": "r\#($0)", "n": \#($0)}"# }.joined(separator: "\n"))
        let piped = try await store.run(["diff"], environment: ["TSYNC_PAGER": "sed s/^/PAGED:/"])
        #expect(!piped.stdout.contains("PAGED:") && piped.stdout.contains("insert todo/r0"), "never when piped")
        guard
            let paged = try await TSyncProcess.runOnTerminal(
                ["diff"], in: store.path, environment: ["TSYNC_PAGER": "sed s/^/PAGED:/", "TERM": "dumb"])
        else { return }
        #expect(paged.stdout.contains("PAGED:insert todo/r0"), "\(paged.stdout.prefix(300))")
        let off = try #require(
            try await TSyncProcess.runOnTerminal(["diff"], in: store.path, environment: ["TSYNC_PAGER": "", "TERM": "dumb"]))
        #expect(!off.stdout.contains("PAGED:") && off.stdout.contains("insert todo/r0"))
    }

    @Test func ndjsonPrintsOneObjectPerLine() async throws {
        let store = try await TSyncSandbox()
        try await store.ok(["insert", "todo", "-q"], stdin: #"[{"id": "a"}, {"id": "b"}, {"id": "c"}]"#)
        for command in [["status"], ["diff"]] {
            let lines = try await store.ok(command + ["--ndjson"]).split(separator: "\n")
            #expect(lines.count == 3, "\(command)")
            #expect(try lines.allSatisfy { try JSONParser.parse(String($0)).objectValue?["id"] != nil }, "\(command)")
        }
        #expect(try await store.run(["status", "--json", "--ndjson"]).status == 64)
        #expect(try await store.ok(["conflicts", "--ndjson"]).isEmpty)
    }

    // MARK: 12. CSV

    @Test func csvGoesInAndOutWithTheDocumentedTypes() async throws {
        let store = try await TSyncSandbox()
        let csv =
            "id,text,n,done,note,code\r\nr1,\"hello, world\",12,true,,007\r\nr2,\"two\nlines\",-3.5,false,null,x\r\nr3,\"say \"\"hi\"\"\",1e3,yes,n,+1\r\n"
        #expect(try await store.ok(["insert", "todo", "--csv"], stdin: csv) == "r1\nr2\nr3\n")
        let r1 = try JSONOutput.object(try await store.ok(["get", "todo", "r1", "--json"]))
        #expect(r1["text"] == "hello, world" && r1["n"] == 12 && r1["done"] == true && r1["note"] == nil && r1["code"] == "007")
        let r2 = try JSONOutput.object(try await store.ok(["get", "todo", "r2", "--json"]))
        #expect(r2["text"] == "two\nlines" && r2["n"] == -3.5 && r2["note"] == .null)
        let r3 = try JSONOutput.object(try await store.ok(["get", "todo", "r3", "--json"]))
        #expect(r3["text"] == #"say "hi""# && r3["n"] == 1000.0 && r3["done"] == "yes" && r3["code"] == "+1")
        let out = try await store.ok(["query", "todo", "--select", "id,text,note", "--csv"])
        #expect(
            out == "id,text,note\r\n\"r1\",\"hello, world\",\r\n\"r2\",\"two\nlines\",null\r\n\"r3\",\"say \"\"hi\"\"\",\"n\"\r\n", "\(out)"
        )
        // What query --csv writes, insert --csv reads back, null and absent fields included.
        let copy = try await TSyncSandbox()
        try await copy.ok(["insert", "todo", "--csv", "-q"], stdin: try await store.ok(["query", "todo", "--csv"]))
        #expect(try await copy.ok(["query", "todo"]) == (try await store.ok(["query", "todo"])))
        let twice = try await store.run(["insert", "other", "--csv"], stdin: "id,a,a\n1,2,3\n")
        #expect(twice.status == 65 && twice.stderr.contains("names the column \"a\" twice"), "\(twice)")
        #expect(try await store.run(["query", "todo", "--csv", "--json"]).status == 64)
    }

    // MARK: 13. Completions that know the store

    @Test func bashCompletesTablesErrorsAndQueryIDsFromTheStore() async throws {
        let server = try await ServeFixture()
        let store = try await TSyncSandbox(remote: server.url)
        try await store.ok(["insert", "todo", #"{"id": "a"}"#])
        try await store.ok(["insert", "notes", #"{"id": "n"}"#])
        try await store.ok(["pull", "todo", "--query-id", "mine"])
        let binaries = (TSyncBinary.path as NSString).deletingLastPathComponent
        func complete(_ line: String, in directory: String) async throws -> [String] {
            let words = line.split(separator: " ", omittingEmptySubsequences: false).map { "'\($0)'" }.joined(separator: " ")
            let script = """
                source <(tsync --generate-completion-script bash)
                COMP_WORDS=(\(words)); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMP_LINE='\(line)'; COMP_POINT=${#COMP_LINE}
                _tsync tsync "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"; printf '%s\\n' "${COMPREPLY[@]}"
                """
            let result = try await TSyncProcess(
                ["-c", script], in: directory, environment: ["PATH": binaries + ":/usr/bin:/bin"], executable: "/bin/bash"
            ).wait()
            #expect(result.status == 0, "\(result)")
            return result.lines.filter { !$0.isEmpty }.sorted()
        }
        #expect(try await complete("tsync get ", in: store.path) == ["notes", "todo"])
        #expect(try await complete("tsync pull todo --query-id ", in: store.path) == ["mine"])
        let elsewhere = try TemporaryDirectory()
        #expect(try await complete("tsync -C \(store.path) push --table t", in: elsewhere.path) == ["todo"], "the store -C names")
        #expect(try await complete("tsync get ", in: elsewhere.path).isEmpty, "no store, no candidates, no error")
        // The store's errors: a server-side delete makes the pushed update of `a` fail.
        let other = try await TSyncSandbox(remote: server.url)
        try await other.ok(["pull", "todo"])
        try await other.ok(["delete", "todo", "a"])
        try await other.ok(["push"])
        try await store.ok(["update", "todo", "a", "--set", "n=1"])
        #expect(try await store.run(["push"]).status == 2)
        // Errors as their items, TABLE/ID, never bare error ids.
        #expect(try await complete("tsync resolve ", in: store.path) == ["todo/a"])
        #expect(try await complete("tsync conflicts show ", in: store.path) == ["todo/a"])
        // The completion entry itself, as the scripts call it.
        let entry = try await store.ok(["---completion", "resolve", "--", "positional@0", "2", "0", "tsync", "resolve", ""])
        #expect(entry == "todo/a\n")
        // Config keys, with table.NAME.… for the store's tables; help topics and subcommands.
        let keys = try await complete("tsync config ", in: store.path)
        #expect(keys.contains("log.maxEntries") && keys.contains("core.pager") && keys.contains("table.todo.onConflict"), "\(keys)")
        #expect(keys.contains("table.notes.prefer") && !keys.contains { $0.contains("NAME") }, "\(keys)")
        #expect(try await complete("tsync config log.m", in: store.path) == ["log.maxEntries"])
        let topics = try await complete("tsync help ", in: store.path)
        #expect(topics.contains("push") && topics.contains("user") && topics.contains("config"), "\(topics)")
        #expect(
            try await complete("tsync help user ", in: store.path) == [
                "add", "group", "list", "passwd", "remove", "role", "token", "unlock",
            ])
        #expect(try await complete("tsync help conflicts s", in: store.path) == ["show"])
        #expect(try await complete("tsync help version ", in: store.path).isEmpty)
        let zsh = try await store.run(
            ["---completion", "help", "--", "positional@0", "2", "0", "tsync", "help", "us"], environment: ["SAP_SHELL": "zsh"])
        #expect(zsh.stdout.hasPrefix("init\n") && zsh.stdout.hasSuffix("\nversion\n \n"), "zsh's script drops the last line: \(zsh)")
        let bash = try String(contentsOf: ReadmeTests.packageRootURL.appendingPathComponent("completions/tsync.bash"), encoding: .utf8)
        #expect(bash.contains("'--store'|'-C')\n        __tsync_add_completions -d"), "directories after -C")
    }
}
