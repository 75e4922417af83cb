import Foundation
import Testing

/// The command line's minor points, each against the real binary: -q on init/update/delete, one
/// warning for a filter's absent field, `push --check` as a report on a terminal, the remote's
/// login warning, the EXIT STATUS table's indent, `log -N`, ArgumentParser's messages in tsync's
/// words, the man pages' form, bare `tsync`, and `purge --dry-run`'s list.
@Suite struct CommandLineMinorsTests {
    @Test func initUpdateAndDeleteTakeQuiet() async throws {
        let directory = try TemporaryDirectory()
        let initialized = try await TSyncProcess.run(["init", "store", "-q"], in: directory.path)
        #expect(initialized.status == 0 && initialized.stderr.isEmpty && initialized.stdout.isEmpty, "\(initialized)")
        let again = try await TSyncProcess.run(["init", "store", "--quiet"], in: directory.path)
        #expect(again.status == 0 && again.stderr.isEmpty, "\(again)")
        let loud = try await TSyncProcess.run(["init", "store"], in: directory.path)
        #expect(loud.stderr.contains("Reinitialized existing tsync store"), "\(loud)")

        let store = try await TSyncSandbox()
        try await store.ok(["insert", "todo"], stdin: #"[{"id": "a", "n": 1}, {"id": "b", "n": 2}, {"id": "c", "n": 3}]"#)
        for arguments in [
            ["update", "todo", "a", "--set", "n=5", "-q"], ["update", "todo", "--filter", "n gt 1", "--set", "done=true", "-q"],
            ["update", "todo", "--filter", "nosuch eq 1", "--set", "done=true", "-q"], ["delete", "todo", "c", "-q"],
            ["delete", "todo", "--filter", "n eq 2", "-q"], ["delete", "todo", "--filter", "nosuch eq 1", "-q"],
        ] {
            let quiet = try await store.run(arguments)
            #expect(quiet.status == 0 && quiet.stderr.isEmpty && quiet.stdout.isEmpty, "\(arguments): \(quiet)")
        }
        #expect(try await store.ok(["query", "todo", "--select", "id,n,done"]) == #"{"id":"a","done":true,"n":5}"# + "\n")
        // -q keeps the errors.
        let failing = try await store.run(["update", "todo", "nosuch", "--set", "n=1", "-q"])
        #expect(failing.status == 65 && failing.stderr.hasPrefix("tsync: error: "), "\(failing)")
    }

    @Test func updateAndDeleteWarnOfAFilterFieldNoRecordHasAsQueryDoes() async throws {
        let store = try await TSyncSandbox()
        try await store.ok(["insert", "todo", #"{"id": "a", "done": false}"#])
        let query = try await store.run(["query", "todo", "--filter", "dnoe eq false"])
        let warning = try #require(query.stderr.split(separator: "\n").first { $0.hasPrefix("warning: ") }, "\(query)")
        #expect(warning.contains("dnoe"))
        for arguments in [
            ["update", "todo", "--filter", "dnoe eq false", "--set", "done=true"],
            ["update", "todo", "--filter", "dnoe eq false", "--set", "done=true", "--dry-run"],
            ["delete", "todo", "--filter", "dnoe eq false"],
        ] {
            let result = try await store.run(arguments)
            #expect(result.status == 0 && result.stderr.contains(warning + "\n"), "\(arguments): \(result)")
            #expect(result.stderr.contains("0 records of todo"), "\(arguments): \(result)")
        }
        // A field some record has is no typo.
        let known = try await store.run(["update", "todo", "--filter", "done eq false", "--set", "done=true"])
        #expect(known.status == 0 && !known.stderr.contains("warning"), "\(known)")
    }

    @Test func pushCheckOnATerminalIsAReportWithTheNextStep() async throws {
        let server = try await ServeFixture()
        let a = try await TSyncSandbox(remote: server.url)
        for id in ["x", "y"] { try await a.ok(["insert", "todo", #"{"id": "\#(id)", "n": 0}"#]) }
        try await a.ok(["push"])
        let b = try await TSyncSandbox(remote: server.url)
        try await b.ok(["pull", "todo"])
        try await a.ok(["update", "todo", "x", "--set", "n=1"])
        try await a.ok(["push"])
        for id in ["x", "y"] { try await b.ok(["update", "todo", id, "--set", "n=2"]) }

        // Piped: the lines and the exit 2 with its message, as ever.
        let piped = try await b.run(["push", "--check"])
        #expect(piped.status == 2 && piped.stdout.contains("version-conflict\tupdate\ttodo\tx\t"), "\(piped)")
        #expect(piped.stderr.hasPrefix("tsync: error: of 2 queued operations, 1 would go through, 1 would not"), "\(piped)")

        guard let terminal = try await TSyncProcess.runOnTerminal(["push", "--check"], in: b.path) else { return }
        #expect(terminal.status == 2, "still exit 2: \(terminal)")
        let shown = terminal.stdout.replacingOccurrences(of: "\r\n", with: "\n")
        #expect(!shown.contains("error:") && !shown.contains("\t"), "a report, not raw lines and an error: \(shown)")
        #expect(shown.contains("Would not go through:\n  todo/x  update  version-conflict: server version "), "\(shown)")
        #expect(shown.contains("Would go through: 1 operation."), "\(shown)")
        #expect(shown.contains("tsync push --on-conflict ours|theirs|merge"), "the next step: \(shown)")
        #expect(shown.contains("of 2 queued operations, 1 would go through, 1 would not"), "\(shown)")

        // A merge that both sides' change of n refuses: the next step is --prefer.
        guard let merge = try await TSyncProcess.runOnTerminal(["push", "--check", "--on-conflict", "merge"], in: b.path) else { return }
        #expect(merge.status == 2 && merge.stdout.contains("`--prefer ours|theirs`"), "\(merge)")
        #expect(!merge.stdout.contains("--on-conflict ours|theirs|merge"), "\(merge)")

        // With a policy that settles it: exit 0, the settled operation listed.
        guard let settled = try await TSyncProcess.runOnTerminal(["push", "--check", "--on-conflict", "ours"], in: b.path) else { return }
        let settledShown = settled.stdout.replacingOccurrences(of: "\r\n", with: "\n")
        #expect(settled.status == 0 && settledShown.contains("Would be settled:\n  todo/x  update  version-conflict"), "\(settledShown)")
        #expect(!settledShown.contains("--on-conflict ours|theirs|merge"), "\(settledShown)")
    }

    @Test func changingTheRemoteSaysTheLoginStaysWithTheOldOne() async throws {
        let server = try await ServeFixture(authenticated: true)
        let store = try await TSyncSandbox(remote: server.url)
        let login = try await store.run(["login", "--user", "alice", "--password-stdin"], stdin: ServeFixture.password + "\n")
        #expect(login.status == 0, "\(login)")
        let same = try await store.run(["remote", server.url + "/"])
        #expect(same.status == 0 && !same.stderr.contains("warning"), "the same server: \(same)")
        let other = "http://127.0.0.1:1"
        let moved = try await store.run(["remote", other])
        #expect(moved.status == 0, "\(moved)")
        #expect(moved.stderr.contains("warning: the saved login (alice) belongs to \(server.url)"), "\(moved)")
        #expect(moved.stderr.contains("tsync login --user alice") && moved.stderr.contains("tsync remote \(server.url)"), "\(moved)")
        let back = try await store.run(["remote", server.url])
        #expect(back.status == 0 && !back.stderr.contains("warning"), "back where the login belongs: \(back)")
        // The other ways to change the remote say it too.
        for arguments in [["config", "remote.url", other], ["init", ".", "--remote", other]] {
            let changed = try await store.run(arguments)
            #expect(changed.status == 0 && changed.stderr.contains("warning: the saved login (alice)"), "\(arguments): \(changed)")
            try await store.ok(["remote", server.url])
        }
        #expect(try await store.run(["whoami"]).stdout.contains("alice"))
    }

    @Test(arguments: ["80", "60"]) func theExitStatusTableKeepsItsIndentWhenWrapped(columns: String) async throws {
        let directory = try TemporaryDirectory()
        let help = try await TSyncProcess.run(["--help"], in: directory.path, environment: ["COLUMNS": columns])
        #expect(help.status == 0)
        let table = help.stdout.components(separatedBy: "EXIT STATUS\n").dropFirst().first ?? ""
        let lines = table.split(separator: "\n", omittingEmptySubsequences: false).prefix { !$0.isEmpty }
        #expect(lines.count >= 11, "\(table)")
        for line in lines {
            let code = line.wholeMatch(of: #/  \d{1,3} +\S.*/#) != nil
            let continued = line.wholeMatch(of: #/      \S.*/#) != nil
            #expect(code || continued, "at \(columns) columns: \(line)")
            #expect(line.count < Int(columns) ?? 0)
        }
        #expect(lines.contains { $0.hasPrefix("  130 ") } && lines.contains { $0.hasPrefix("  78  ") })
    }

    @Test func logTakesGitsCountForms() async throws {
        let store = try await TSyncSandbox()
        for id in ["a", "b", "c"] { try await store.ok(["insert", "todo", #"{"id": "\#(id)"}"#]) }
        for arguments in [["log", "-n1"], ["log", "-1"], ["log", "-n", "1"], ["-C", ".", "log", "-1", "--json"]] {
            let log = try await store.run(arguments)
            #expect(log.status == 0, "\(arguments): \(log)")
            let entries =
                arguments.contains("--json")
                ? log.stdout.components(separatedBy: "\"startedAt\"").count - 1 : log.lines.filter { $0.hasPrefix("#") }.count
            #expect(entries == 1, "\(arguments): \(log)")
        }
        let two = try await store.run(["log", "-2"])
        #expect(two.lines.filter { $0.hasPrefix("#") }.count == 2, "\(two)")
        let zero = try await store.run(["log", "-0"])
        #expect(zero.status == 64 && zero.stderr.contains("-n must be 1 or more"), "\(zero)")
        // Only log's: another command's -1 is still refused.
        #expect(try await store.run(["status", "-1"]).status == 64)
    }

    @Test func argumentParsersMessagesReadAsTsyncs() async throws {
        let store = try await TSyncSandbox()
        let both = try await store.run(["resolve", "--all", "--ours", "--theirs"])
        #expect(both.status == 64 && both.stderr.hasPrefix("tsync: error: choose one of --ours and --theirs\n"), "\(both)")
        let typo = try await store.run(["push", "--on-conflict", "mrege"])
        #expect(
            typo.status == 64
                && typo.stderr.hasPrefix(
                    "tsync: error: invalid value 'mrege' for --on-conflict: expected fail, ours, theirs or merge; did you mean 'merge'?\n"),
            "\(typo)")
        let number = try await store.run(["query", "todo", "--top", "x"])
        #expect(number.status == 64 && number.stderr.hasPrefix("tsync: error: invalid value 'x' for --top"), "\(number)")
        for result in [both, typo, number] {
            #expect(!result.stderr.contains("Please provide") && !result.stderr.contains("had already been set"), "\(result)")
        }
    }

    @Test func manPagesHaveGitsTitlesADateAndAnOptionsSection() throws {
        let man = ReadmeTests.packageRootURL.appendingPathComponent("man")
        let push = try String(contentsOf: man.appendingPathComponent("tsync.push.1"), encoding: .utf8)
        #expect(push.contains("\n.Dt TSYNC-PUSH 1\n"), "git's form")
        #expect(push.contains("\n.Sh OPTIONS\n.Bl -tag"))
        let date = try #require(push.split(separator: "\n").first { $0.hasPrefix(".Dd ") })
        #expect(date != ".Dd January 1, 2026" && date.wholeMatch(of: #/\.Dd [A-Z][a-z]+ \d{1,2}, 20\d\d/#) != nil, "\(date)")
        for page in try FileManager.default.contentsOfDirectory(atPath: man.path) where page.hasSuffix(".1") {
            let text = try String(contentsOf: man.appendingPathComponent(page), encoding: .utf8)
            let title = page.dropLast(2).replacingOccurrences(of: ".", with: "-").uppercased()
            #expect(text.contains("\n.Dt \(title) 1\n") && text.contains("\n.Sh OPTIONS\n"), "\(page)")
            #expect(text.contains("\n" + date + "\n"), "\(page): one date for all")
        }
        let whoami = try String(contentsOf: man.appendingPathComponent("tsync.whoami.1"), encoding: .utf8)
        #expect(whoami.contains("which account the saved token (or TSYNC_TOKEN, when set) belongs to"), "\(whoami)")
    }

    @Test func tsyncAloneIsAShortUsageAndExit1() async throws {
        let directory = try TemporaryDirectory()
        for arguments in [[], ["-C", directory.path]] {
            let bare = try await TSyncProcess.run(arguments, in: directory.path)
            #expect(bare.status == 1 && bare.stdout.isEmpty, "\(arguments): \(bare)")
            let lines = bare.stderr.split(separator: "\n")
            #expect(lines.count <= 10 && lines.first == "usage: tsync [-C DIR] COMMAND [ARGUMENTS]", "\(bare)")
            #expect(bare.stderr.contains("`tsync --help`") && bare.stderr.contains("push, pull"), "\(bare)")
        }
        // Every command it names is one.
        let usage = try await TSyncProcess.run([], in: directory.path).stderr
        let named = usage.split(separator: "\n").filter { $0.hasPrefix("  ") }.flatMap {
            $0.split(separator: " ").dropFirst().map { String($0.filter(\.isLetter)) }
        }
        #expect(named.count >= 10)
        for command in named {
            #expect(try await TSyncProcess.run(["help", command], in: directory.path).status == 0, "\(command)")
        }
        // --help is the whole help, exit 0, as ever.
        let help = try await TSyncProcess.run(["--help"], in: directory.path)
        #expect(help.status == 0 && help.stdout.contains("SUBCOMMANDS:"))
    }

    @Test func purgeDryRunListsTheRecordsAsDeleteDoes() async throws {
        let store = try await TSyncSandbox()
        try await store.ok(["insert", "todo"], stdin: #"[{"id": "c", "n": 3}, {"id": "a", "n": 1}, {"id": "b", "n": 2}]"#)
        let delete = try await store.run(["delete", "todo", "--filter", "n gt 1", "--dry-run"])
        let purge = try await store.run(["purge", "todo", "--filter", "n gt 1", "--dry-run", "--force"])
        #expect(purge.status == 0 && purge.stdout == "todo/b\ntodo/c\n", "\(purge)")
        #expect(purge.stdout == delete.stdout, "\(delete)")
        #expect(purge.stderr.contains("would purge 2 records from todo"), "\(purge)")
        let whole = try await store.run(["purge", "todo", "--dry-run", "--force"])
        #expect(whole.stdout == "todo/a\ntodo/b\ntodo/c\n", "\(whole)")
        #expect(try await store.ok(["query", "todo", "--select", "id"]).split(separator: "\n").count == 3, "nothing purged")
    }
}
