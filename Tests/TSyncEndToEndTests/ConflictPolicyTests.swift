import Foundation
import Testing
import TSyncModel

/// Conflicts settled by policy inside one command: `push --on-conflict`, `--prefer`,
/// `--retries`, the store's `tsync config` policies, `resolve --class/--kind/--dry-run`,
/// `push --check` and `tsync log`. Real server, real binary; the server's state is read with
/// plain HTTP.
@Suite(.serialized) struct ConflictPolicyTests {
    /// A and B both hold todo/x (text "original", note "n0"); A sets `text` to "from a" and
    /// pushes; B makes `changes` (`--set` assignments) and has not pushed yet.
    private func race(
        a aChanges: [String] = [#"text="from a""#], b bChanges: [String] = [#"text="from b""#, #"note="b note""#],
        serverOptions: [String] = []
    ) async throws -> (server: ServeFixture, a: TSyncSandbox, b: TSyncSandbox) {
        let server = try await ServeFixture(options: serverOptions)
        let a = try await TSyncSandbox(remote: server.url)
        let b = try await TSyncSandbox(remote: server.url)
        try await a.ok(["insert", "todo", #"{"id": "x", "text": "original", "note": "n0"}"#])
        try await a.ok(["push"])
        try await b.ok(["pull", "todo", "--query-id", "all"])
        if !aChanges.isEmpty {
            try await a.ok(["update", "todo", "x"] + aChanges.flatMap { ["--set", $0] })
            try await a.ok(["push"])
        }
        try await b.ok(["update", "todo", "x"] + bChanges.flatMap { ["--set", $0] })
        return (server, a, b)
    }

    struct PolicyCase: Sendable, CustomTestStringConvertible {
        var flags: [String]
        var text: String
        var note: String
        var testDescription: String { flags.joined(separator: " ") }
    }

    /// Each policy in one command: exit 0, and the server holds what the policy promises.
    @Test(arguments: [
        PolicyCase(flags: ["--on-conflict", "ours"], text: "from b", note: "b note"),
        PolicyCase(flags: ["--on-conflict", "theirs"], text: "from a", note: "n0"),
        PolicyCase(flags: ["--on-conflict", "merge", "--prefer", "ours"], text: "from b", note: "b note"),
        PolicyCase(flags: ["--on-conflict", "merge", "--prefer", "theirs"], text: "from a", note: "b note"),
    ])
    func aPolicySettlesTheConflictInThePush(_ policy: PolicyCase) async throws {
        let (server, _, b) = try await race()
        let push = try await b.run(["push", "--json"] + policy.flags)
        #expect(push.status == 0, "\(push)")
        let summary = try JSONOutput.object(push.stdout)
        #expect(JSONOutput.int(summary["conflictsMet"]) == 1 && JSONOutput.int(summary["failed"]) == 0, "\(summary)")
        let settledBy = policy.flags[1]
        #expect(JSONOutput.int(summary["settled"]?.objectValue?[settledBy]) == 1, "\(summary)")
        let x = try #require(try await server.record("todo", "x"))
        #expect(x["text"] == .string(policy.text) && x["note"] == .string(policy.note), "\(x)")
        #expect(try JSONOutput.array(try await b.ok(["conflicts", "--json"])).isEmpty)
        #expect(try await b.ok(["status", "--porcelain"]) == "")
        let local = try JSONOutput.object(try await b.ok(["get", "todo", "x", "--json"]))
        #expect(local["text"] == x["text"] && local["note"] == x["note"] && local["version"] == x["version"])
    }

    @Test func mergeLeavesAFieldBothChangedUnlessToldWhichSideWins() async throws {
        let (server, _, b) = try await race()
        let push = try await b.run(["push", "--on-conflict", "merge"])
        #expect(push.status == 2, "\(push)")
        #expect(push.stderr.contains("1 conflict"), "\(push.stderr)")
        #expect(try await server.record("todo", "x")?["text"] == "from a", "nothing of B's reached the server")
        let left = try JSONOutput.array(try await b.ok(["conflicts", "--json"]))
        #expect(left.count == 1 && left.first?.objectValue?["class"] == "version-conflict")
        // A dry run says the merge would be refused, with the exit code the real one would have.
        let dry = try await b.run(["resolve", "--all", "--merge", "--dry-run", "--json"])
        #expect(dry.status == 2, "\(dry)")
        let entry = try #require(try JSONOutput.array(dry.stdout).first?.objectValue)
        #expect(entry["settled"] == false && entry["pending"] == true && entry["pendingKind"] == "update", "\(entry)")
        // The same --prefer settles it with resolve --merge; --json tells what the push left.
        let resolve = try await b.run(["resolve", "--all", "--merge", "--prefer", "ours", "--push", "--json"])
        #expect(resolve.status == 0, "\(resolve)")
        let x = try #require(try await server.record("todo", "x"))
        #expect(x["text"] == "from b" && x["note"] == "b note")
        let settled = try #require(try JSONOutput.array(resolve.stdout).first?.objectValue)
        #expect(settled["pending"] == false && settled["pendingKind"] == .null, "pushed: \(settled)")
        #expect(settled["record"]?.objectValue?["version"] == x["version"], "\(settled)")
    }

    @Test func mergeOfDifferentFieldsKeepsBoth() async throws {
        let (server, _, b) = try await race(b: [#"note="b note""#])
        let push = try await b.run(["sync", "--on-conflict", "merge"])
        #expect(push.status == 0, "sync takes the same options: \(push)")
        let x = try #require(try await server.record("todo", "x"))
        #expect(x["text"] == "from a" && x["note"] == "b note", "\(x)")
    }

    /// A pull after the conflict skips the item (its change is queued) and moves its checkpoint
    /// past the server's newer copy. Settling must take that copy: otherwise the store keeps an
    /// old one for good, with nothing left to push and nothing a pull would bring.
    @Test(arguments: [
        ["push", "--on-conflict", "theirs"], ["resolve", "--all", "--theirs"], ["resolve", "--all", "--discard"],
        ["resolve", "--all", "--ours", "--push"], ["resolve", "--all", "--merge", "--prefer", "ours", "--push"],
    ])
    func settlingTakesTheCopyALaterPullSkipped(_ command: [String]) async throws {
        let (server, a, b) = try await race()
        #expect(try await b.run(["push"]).status == 2)
        try await a.ok(["update", "todo", "x", "--set", #"text="from a, again""#])
        try await a.ok(["push"])
        let pulled = try await b.run(["pull", "todo", "--query-id", "all", "--json"])
        #expect(pulled.status == 2, "the error is still there: \(pulled)")
        let pull = try JSONOutput.object(pulled.stdout)
        #expect(JSONOutput.int(pull["skipped"]) == 1, "the item with the failed change is left alone: \(pull)")

        let x = try await settleInStep(b, command, server: server)
        let ours = command.contains("--ours") || command.contains("ours")
        let again = try JSONOutput.object(try await b.ok(["pull", "todo", "--query-id", "all", "--json"]))
        #expect(JSONOutput.int(again["received"]) == (ours ? 1 : 0), "\(again)")
        #expect(try JSONOutput.object(try await b.ok(["get", "todo", "x", "--json"]))["version"] == x["version"])
    }

    /// The copy recorded with an error grows stale when another writer changes the item again:
    /// settling reads the server's copy now, so `ours` needs no second round, `theirs` takes the
    /// newest copy, and the check's prediction holds even with no retries.
    @Test(arguments: [
        ["push", "--on-conflict", "ours", "--retries", "0"], ["push", "--on-conflict", "theirs", "--retries", "0"],
        ["resolve", "--all", "--theirs"], ["resolve", "--all", "--ours", "--push"],
    ])
    func settlingReadsTheServersCopyNow(_ command: [String]) async throws {
        let (server, a, b) = try await race()
        #expect(try await b.run(["push"]).status == 2, "the error records the server's copy as it was")
        try await a.ok(["update", "todo", "x", "--set", #"text="from a, again""#])
        try await a.ok(["push"])
        if command[0] == "push" {
            let check = try await b.run(["push", "--check", "--json"] + command.dropFirst())
            #expect(check.status == 0, "\(check)")
        }
        _ = try await settleInStep(b, command + ["--json"], server: server)
    }

    /// Runs a settling command after the race: it exits 0, the server holds what its side wins
    /// (B's text for ours, A's latest for theirs and discard), and B holds the server's copy,
    /// version included, with nothing pending. Returns the server's copy.
    private func settleInStep(_ b: TSyncSandbox, _ command: [String], server: ServeFixture) async throws -> [String: JSONValue] {
        let settle = try await b.run(command)
        #expect(settle.status == 0, "\(settle)")
        let x = try #require(try await server.record("todo", "x"))
        let ours = command.contains("--ours") || command.contains("ours")
        #expect(x["text"] == .string(ours ? "from b" : "from a, again"), "\(x)")
        let local = try JSONOutput.object(try await b.ok(["get", "todo", "x", "--json"]))
        #expect(local["text"] == x["text"] && local["version"] == x["version"], "the store holds the server's copy: \(local)")
        #expect(try await b.ok(["status", "--porcelain"]).isEmpty)
        return x
    }

    /// The push a pull starts with settles conflicts the way `push` does: by the store's setting,
    /// or by the flag, which wins.
    @Test func thePushOfAPullFollowsThePolicies() async throws {
        let (server, a, b) = try await race()
        let failed = try await b.run(["pull", "todo", "--query-id", "all"])
        #expect(failed.status == 2 && failed.stderr.contains("1 operation of todo failed"), "no policy: the conflict is left: \(failed)")
        let again = try await b.run(["pull", "todo", "--query-id", "all"])
        #expect(again.status == 2, "exit 2 while the error is there, as push says: \(again)")
        try await b.ok(["config", "table.todo.onConflict", "ours"])
        let settled = try await b.run(["pull", "todo", "--query-id", "all", "--json"])
        #expect(settled.status == 0, "\(settled)")
        #expect(JSONOutput.int(try JSONOutput.object(settled.stdout)["pushed"]) == 1, "\(settled.stdout)")
        #expect(try await server.record("todo", "x")?["text"] == "from b")
        #expect(try JSONOutput.array(try await b.ok(["conflicts", "--json"])).isEmpty)

        try await a.ok(["pull", "todo"])
        try await a.ok(["update", "todo", "x", "--set", #"text="a again""#])
        try await a.ok(["push"])
        try await b.ok(["update", "todo", "x", "--set", #"text="b again""#])
        let flagged = try await b.run(["pull", "todo", "--query-id", "all", "--on-conflict", "theirs"])
        #expect(flagged.status == 0, "\(flagged)")
        #expect(try await server.record("todo", "x")?["text"] == "a again")
        #expect(try await b.ok(["get", "todo", "x"]).contains("a again"), "the server's copy, pulled")
        #expect(try await b.ok(["status", "--porcelain"]).isEmpty)
        let log = try JSONOutput.array(try await b.ok(["log", "--json", "-n", "1"]))
        #expect(JSONOutput.int(log.first?.objectValue?["counts"]?.objectValue?["settled"]?.objectValue?["theirs"]) == 1, "\(log)")
    }

    /// The server lost the item (another client deleted it): `ours` creates it again, `theirs`
    /// drops the local change.
    @Test(arguments: ["ours", "theirs"])
    func aLostItemFollowsThePolicy(_ policy: String) async throws {
        let (server, a, b) = try await race(a: [])
        try await a.ok(["delete", "todo", "x"])
        try await a.ok(["push"])
        #expect(try await server.record("todo", "x") == nil)
        let push = try await b.run(["push", "--on-conflict", policy])
        #expect(push.status == 0, "\(push)")
        if policy == "ours" {
            #expect(try await server.record("todo", "x")?["text"] == "from b")
            #expect(try await b.ok(["get", "todo", "x"]).contains("from b"))
        } else {
            #expect(try await server.record("todo", "x") == nil)
            #expect(try await b.run(["get", "todo", "x"]).status == 65, "the local change is dropped with the item")
        }
        #expect(try await b.ok(["status", "--porcelain"]) == "")
    }

    /// A rejected operation (400) is never settled by a policy, while the conflict next to it is.
    @Test func aRejectedOperationStaysWhateverThePolicy() async throws {
        let (server, _, b) = try await race(serverOptions: ["--max-batch", "0"])
        let proxy = try LossyProxy(upstream: server.url)
        try await b.ok(["remote", proxy.url])
        try await b.ok(["insert", "todo", #"{"id": "bad", "text": "refused"}"#])
        proxy.replace(
            "POST", "/tables/todo", status: 400, contentType: "application/json", body: #"{"error":"text is too short"}"#, forward: false)
        let push = try await b.run(["push", "--on-conflict", "ours", "--json"])
        #expect(push.status == 2, "\(push)")
        #expect(try await server.record("todo", "x")?["text"] == "from b", "the conflict next to it was settled")
        let left = try JSONOutput.array(try await b.ok(["conflicts", "--json"]))
        #expect(left.count == 1, "\(left)")
        #expect(left.first?.objectValue?["itemId"] == "bad" && left.first?.objectValue?["class"] == "rejected")
    }

    /// A third writer gets in before every push of B: the settled operation conflicts again each
    /// time, and after --retries more rounds the error is left, exit 2.
    @Test func retriesAreBoundedWhenAnotherWriterKeepsWinning() async throws {
        let (server, _, b) = try await race()
        let proxy = try LossyProxy(upstream: server.url)
        let port = URLComponents(string: server.url)?.port ?? 0
        proxy.interpose("POST", "/tables/$batch", count: 100) { round in
            let body = #"{"text": "third writer \#(round)"}"#
            return
                "PATCH /tables/todo/x HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nZUMO-API-VERSION: 2.0.0\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
        }
        try await b.ok(["remote", proxy.url])
        let push = try await b.run(["push", "--on-conflict", "ours", "--retries", "2", "--json"])
        #expect(push.status == 2, "\(push)")
        let summary = try JSONOutput.object(push.stdout)
        #expect(JSONOutput.int(summary["rounds"]) == 4, "the push, the first push again, and 2 retries: \(summary)")
        #expect(JSONOutput.int(summary["settled"]?.objectValue?["ours"]) == 3, "\(summary)")
        #expect(JSONOutput.int(summary["conflictsMet"]) == 4 && JSONOutput.int(summary["failed"]) == 1, "\(summary)")
        #expect(proxy.interposed == 4)
        #expect(try await server.record("todo", "x")?["text"] == "third writer 3")
        let left = try JSONOutput.array(try await b.ok(["conflicts", "--json"]))
        #expect(left.count == 1 && left.first?.objectValue?["itemId"] == "x")
    }

    // MARK: - Configuration

    @Test func perTablePoliciesOverrideTheStoreAndTheFlagOverridesBoth() async throws {
        let server = try await ServeFixture()
        let a = try await TSyncSandbox(remote: server.url)
        let b = try await TSyncSandbox(remote: server.url)
        for table in ["todo", "audit"] { try await a.ok(["insert", table, #"{"id": "x", "text": "original"}"#]) }
        try await a.ok(["push"])
        for table in ["todo", "audit"] { try await b.ok(["pull", table]) }
        func conflict() async throws {
            for table in ["todo", "audit"] {
                try await a.ok(["pull", table])
                try await a.ok(["update", table, "x", "--set", #"text="from a""#])
                try await b.ok(["update", table, "x", "--set", #"text="from b""#])
            }
            try await a.ok(["push"])
        }
        try await conflict()
        try await b.ok(["config", "push.onConflict", "theirs"])
        try await b.ok(["config", "table.todo.onConflict", "ours"])
        #expect(try await b.ok(["config", "push.onConflict"]) == "theirs\n")
        #expect(try await b.ok(["config", "--list"]) == "push.onConflict=theirs\nremote.url=\(server.url)\ntable.todo.onConflict=ours\n")
        let push = try await b.run(["push"])
        #expect(push.status == 0, "\(push)")
        #expect(try await server.record("todo", "x")?["text"] == "from b", "table.todo.onConflict=ours")
        #expect(try await server.record("audit", "x")?["text"] == "from a", "push.onConflict=theirs")

        try await conflict()
        let flagged = try await b.run(["push", "--on-conflict", "fail"])
        #expect(flagged.status == 2, "the flag overrides both settings: \(flagged)")
        #expect(try JSONOutput.array(try await b.ok(["conflicts", "--json"])).count == 2)
        #expect(try await b.run(["push", "--on-conflict", "ours"]).status == 0)
        #expect(try await server.record("audit", "x")?["text"] == "from b")
    }

    @Test func configRefusesUnknownKeysAndValues() async throws {
        let store = try await TSyncSandbox(remote: "http://127.0.0.1:9")
        let unknown = try await store.run(["config", "push.onconflicts", "ours"])
        #expect(unknown.status == 64, "\(unknown)")
        #expect(unknown.stderr.contains(#"unknown key "push.onconflicts""#), "\(unknown.stderr)")
        #expect(unknown.stderr.contains("push.onConflict, push.prefer, table.NAME.onConflict"), "\(unknown.stderr)")
        let value = try await store.run(["config", "table.todo.prefer", "mine"])
        #expect(value.status == 64 && value.stderr.contains("expected one of ours, theirs"), "\(value)")
        #expect(try await store.run(["config", "log.maxEntries", "0"]).status == 64)
        #expect(try await store.run(["config", "remote.url", "ftp://x"]).status == 64)
        #expect(try await store.run(["config", "push.prefer"]).status == 1, "unset: exit 1, like git")
        try await store.ok(["config", "remote.url", "http://127.0.0.1:8"])
        #expect(try await store.ok(["remote"]) == "http://127.0.0.1:8\n", "remote.url is what `tsync remote` shows")
        try await store.ok(["config", "push.prefer", "ours"])
        #expect(try JSONOutput.object(try await store.ok(["config", "--json"]))["push.prefer"] == "ours")
        #expect(try JSONOutput.object(try await store.ok(["config", "push.prefer", "--json"]))["value"] == "ours")
        try await store.ok(["config", "--unset", "push.prefer"])
        #expect(try JSONOutput.object(try await store.ok(["config", "push.prefer", "--json"]))["value"] == .null)
        let notSet = try await store.run(["config", "--unset", "push.prefer"])
        #expect(notSet.status == 5 && notSet.stderr.contains("push.prefer is not set"), "exit 5, like git: \(notSet)")
        // Section and key names are case-insensitive, as git's are; a table name is not.
        try await store.ok(["config", "PUSH.ONCONFLICT", "merge"])
        #expect(try await store.ok(["config", "push.onConflict"]) == "merge\n")
        #expect(try await store.ok(["config", "--list"]).contains("push.onConflict=merge\n"))
        try await store.ok(["config", "Table.Todo.Prefer", "ours"])
        #expect(try await store.ok(["config", "table.Todo.prefer"]) == "ours\n")
        #expect(try await store.run(["config", "table.todo.prefer"]).status == 1, "the table name keeps its case")
        try await store.ok(["config", "--unset", "push.onconflict"])
        // A value that starts with a dash is a value, not an option.
        let negative = try await store.run(["config", "log.maxEntries", "-5"])
        #expect(negative.status == 64 && negative.stderr.contains("invalid value \"-5\" for log.maxEntries"), "\(negative)")
        // A hand-edited value no policy has is an error at push time, not ignored.
        let path = (store.path as NSString).appendingPathComponent(".tsync/config.json")
        try #"{"remote": "http://127.0.0.1:9", "push.onConflict": "sometimes"}"#.write(toFile: path, atomically: true, encoding: .utf8)
        try await store.ok(["insert", "todo", #"{"id": "a"}"#])
        let push = try await store.run(["push"])
        #expect(push.status == 1 && push.stderr.contains(#"invalid value "sometimes" for push.onConflict"#), "\(push)")
        // A flag that says everything needs no setting: the bad one does not stop it (the
        // server at port 9 is not there: exit 3, not 1).
        let flagged = try await store.run(["push", "--on-conflict", "ours"])
        #expect(flagged.status == 3, "\(flagged)")
        let merge = try await store.run(["push", "--on-conflict", "merge"])
        #expect(merge.status == 3, "merge reads only the prefer settings: \(merge)")
        let prefer = try await store.run(["push", "--on-conflict", "ours", "--prefer", "theirs"])
        #expect(prefer.status == 64 && prefer.stderr.contains("--prefer applies to --on-conflict merge only"), "\(prefer)")
        // A mistyped table is not "nothing to push".
        for command in [
            ["push", "--table", "tood", "--on-conflict", "fail"], ["resolve", "--table", "tood", "--ours"],
            ["conflicts", "list", "--table", "tood"],
        ] {
            let typo = try await store.run(command)
            #expect(typo.status == 65 && typo.stderr.contains(#"unknown table "tood"; did you mean 'todo'"#), "\(command): \(typo)")
        }
    }

    // MARK: - resolve selectors

    @Test func resolveByClassAndKindTouchesOnlyThose() async throws {
        let server = try await ServeFixture()
        let a = try await TSyncSandbox(remote: server.url)
        let b = try await TSyncSandbox(remote: server.url)
        try await a.ok(["insert", "todo", #"{"id": "x", "text": "original"}"#])
        try await a.ok(["insert", "todo", #"{"id": "gone", "text": "soon"}"#])  // the server loses it: `missing`
        try await a.ok(["push"])
        try await b.ok(["pull", "todo"])
        try await a.ok(["update", "todo", "x", "--set", #"text="from a""#])
        try await a.ok(["delete", "todo", "gone"])
        try await a.ok(["push"])
        try await b.ok(["update", "todo", "x", "--set", #"text="from b""#])
        try await b.ok(["update", "todo", "gone", "--set", #"text="b's""#])
        #expect(try await b.run(["push"]).status == 2)
        let classes = try JSONOutput.array(try await b.ok(["conflicts", "--json"])).compactMap { $0.objectValue?["class"]?.stringValue }
        #expect(classes.sorted() == ["missing", "version-conflict"])

        // A dry run says what would happen and changes nothing.
        let before = try await b.ok(["conflicts", "--json"])
        let dryRun = try await b.run(["resolve", "--class", "missing", "--discard", "--dry-run"])
        #expect(dryRun.status == 0 && dryRun.stdout.hasSuffix("\ttodo/gone\tkeep local record\n"), "\(dryRun)")
        let dryJSON = try JSONOutput.array(try await b.ok(["resolve", "--all", "--ours", "--dry-run", "--json"]))
        #expect(dryJSON.count == 2 && dryJSON.allSatisfy { $0.objectValue?["dryRun"] == true })
        // Ours against the server's soft-deleted copy: an update that undeletes it first.
        #expect(dryJSON.compactMap { $0.objectValue?["pendingKind"]?.stringValue } == ["update", "update"], "\(dryJSON)")
        #expect(try await b.ok(["conflicts", "--json"]) == before)

        let resolve = try await b.run(["resolve", "--class", "missing", "--discard", "--json"])
        #expect(resolve.status == 0, "\(resolve)")
        #expect(try JSONOutput.array(resolve.stdout).count == 1)
        let left = try JSONOutput.array(try await b.ok(["conflicts", "--json"]))
        #expect(left.count == 1 && left.first?.objectValue?["class"] == "version-conflict", "only the missing one was settled")
        #expect(try await b.ok(["resolve", "--kind", "delete", "--ours"]).isEmpty)
        #expect(try JSONOutput.array(try await b.ok(["conflicts", "--json"])).count == 1, "no delete failed: nothing settled")
        #expect(try await b.run(["resolve", "--kind", "update", "--class", "version-conflict", "--ours", "--push"]).status == 0)
        #expect(try await server.record("todo", "x")?["text"] == "from b")
        #expect(try await b.run(["resolve", "--ours", "--prefer", "theirs", "--all"]).status == 64, "--prefer is for --merge")
    }

    // MARK: - push --check

    /// Five items, five fates: the check's prediction matches the push's result operation by
    /// operation, and the check writes nothing on the server.
    @Test func checkPredictsExactlyWhatThePushGets() async throws {
        let server = try await ServeFixture()
        let a = try await TSyncSandbox(remote: server.url)
        let b = try await TSyncSandbox(remote: server.url)
        for id in ["changed", "untouched", "deleted", "stale"] { try await a.ok(["insert", "todo", #"{"id": "\#(id)", "n": 0}"#]) }
        try await a.ok(["push"])
        try await b.ok(["pull", "todo"])
        try await a.ok(["update", "todo", "changed", "--set", "n=1"])
        try await a.ok(["update", "todo", "stale", "--set", "n=1"])
        try await a.ok(["delete", "todo", "deleted"])
        try await a.ok(["insert", "todo", #"{"id": "twice", "n": 1}"#])
        try await a.ok(["push"])
        try await b.ok(["update", "todo", "changed", "--set", "n=2"])  // version-conflict
        try await b.ok(["update", "todo", "untouched", "--set", "n=2"])  // ok
        try await b.ok(["update", "todo", "deleted", "--set", "n=2"])  // missing
        try await b.ok(["delete", "todo", "stale"])  // version-conflict (a delete of a changed item)
        try await b.ok(["insert", "todo", #"{"id": "twice", "n": 2}"#])  // already-exists
        try await b.ok(["insert", "todo", #"{"id": "fresh", "n": 2}"#])  // ok

        let before = try await server.records("todo")
        let check = try await b.run(["push", "--check", "--json"])
        #expect(check.status == 2, "\(check)")
        #expect(try await server.records("todo") == before, "the check wrote nothing on the server")
        #expect(try await b.ok(["status", "--porcelain"]).split(separator: "\n").count == 6, "nor in the store")
        let report = try JSONOutput.object(check.stdout)
        var predicted: [String: String] = [:]
        guard case .array(let operations)? = report["operations"] else {
            Issue.record("no operations: \(report)")
            return
        }
        for case .object(let operation) in operations {
            predicted[operation["id"]?.stringValue ?? ""] = operation["outcome"]?.stringValue
        }
        #expect(
            predicted == [
                "changed": "version-conflict", "untouched": "ok", "deleted": "missing", "stale": "version-conflict",
                "twice": "already-exists", "fresh": "ok",
            ], "\(report)")
        #expect(JSONOutput.int(report["wouldFail"]) == 4 && JSONOutput.int(report["wouldSucceed"]) == 2)
        let text = try await b.run(["push", "--check"])
        #expect(text.status == 2 && text.stdout.contains("version-conflict\tupdate\ttodo\tchanged\tserver version "), "\(text)")
        #expect(text.stdout.contains("missing\tupdate\ttodo\tdeleted\tserver version "), "\(text)")
        #expect(text.stdout.contains("; deleted on the server\n"), "\(text)")
        // A check writes nothing to the error table: it does not send the user there.
        #expect(text.stderr.contains("4 would not") && !text.stderr.contains("tsync conflicts"), "\(text.stderr)")

        #expect(try await b.run(["push"]).status == 2)
        var failed: [String: String] = [:]
        for case .object(let error) in try JSONOutput.array(try await b.ok(["conflicts", "--json"])) {
            failed[error["itemId"]?.stringValue ?? ""] = error["class"]?.stringValue
        }
        #expect(failed == predicted.filter { $0.value != "ok" }, "the push failed exactly where the check said")
        let after = try await server.records("todo")
        #expect(after["fresh"] != nil && after["untouched"]?["n"] == 2)
    }

    /// The check applies the policies the push would apply, and lists what waits behind an error
    /// already in the table: its prediction (exit code included) is the push's result.
    @Test func checkPredictsWhatThePoliciesSettle() async throws {
        let server = try await ServeFixture()
        let a = try await TSyncSandbox(remote: server.url)
        let b = try await TSyncSandbox(remote: server.url)
        for id in ["old", "new", "both"] { try await a.ok(["insert", "todo", #"{"id": "\#(id)", "text": "0", "note": "0"}"#]) }
        try await a.ok(["push"])
        try await b.ok(["pull", "todo"])
        for id in ["old", "new", "both"] { try await a.ok(["update", "todo", id, "--set", #"text="a""#]) }
        try await a.ok(["push"])
        try await b.ok(["update", "todo", "old", "--set", #"note="b""#])
        #expect(try await b.run(["push"]).status == 2, "an error already in the table")
        try await b.ok(["update", "todo", "new", "--set", #"note="b""#])  // merges cleanly: fields differ
        try await b.ok(["update", "todo", "both", "--set", #"text="b""#])  // merge refused: both changed text
        try await b.ok(["insert", "todo", #"{"id": "fresh"}"#])

        func predictions(_ flags: [String]) async throws -> (
            status: Int32, byID: [String: [String: JSONValue]], report: [String: JSONValue]
        ) {
            let check = try await b.run(["push", "--check", "--json"] + flags)
            let report = try JSONOutput.object(check.stdout)
            var byID: [String: [String: JSONValue]] = [:]
            if case .array(let operations)? = report["operations"] {
                for case .object(let operation) in operations { byID[operation["id"]?.stringValue ?? ""] = operation }
            }
            return (check.status, byID, report)
        }
        let before = try await server.records("todo")
        let merge = try await predictions(["--on-conflict", "merge"])
        #expect(merge.status == 2, "the merge of `both` would be refused")
        #expect(merge.byID["old"]?["outcome"] == "held-back" && merge.byID["old"]?["settledBy"] == "merge", "\(merge.byID)")
        #expect(merge.byID["new"]?["outcome"] == "version-conflict" && merge.byID["new"]?["settledBy"] == "merge")
        #expect(merge.byID["both"]?["outcome"] == "version-conflict" && merge.byID["both"]?["settledBy"] == .null)
        #expect(merge.byID["fresh"]?["outcome"] == "ok")
        #expect(JSONOutput.int(merge.report["wouldFail"]) == 1 && JSONOutput.int(merge.report["wouldBeSettled"]) == 2)
        #expect(JSONOutput.int(merge.report["heldBack"]) == 1, "\(merge.report)")

        try await b.ok(["config", "push.onConflict", "ours"])
        let ours = try await predictions([])
        #expect(ours.status == 0, "the store's policy settles all three: \(ours.byID)")
        #expect(ours.byID.values.filter { $0["settledBy"] == "ours" }.count == 3)
        let text = try await b.run(["push", "--check"])
        #expect(text.stderr.contains("of 4 queued operations, 1 would go through, 3 would be settled (3 ours)"), "\(text.stderr)")
        #expect(try await server.records("todo") == before, "the checks wrote nothing")

        let push = try await b.run(["push"])
        #expect(push.status == 0, "as predicted: \(push)")
        #expect(try await server.records("todo")["both"]?["text"] == "b")
    }

    // MARK: - tsync log

    @Test func theLogListsWhatEachCommandDid() async throws {
        let (server, _, b) = try await race()
        defer { withExtendedLifetime(server) {} }
        #expect(try await b.run(["push"]).status == 2)
        #expect(try await b.run(["pull", "todo"]).status == 2, "the error is left")
        try await b.ok(["resolve", "--all", "--theirs"])
        let log = try JSONOutput.array(try await b.ok(["log", "--json", "-n", "3"]))
        let entries = log.compactMap(\.objectValue)
        #expect(entries.map { $0["command"]?.stringValue ?? "" } == ["resolve", "pull", "push"], "newest first: \(log)")
        let resolve = try #require(entries.first)
        #expect(JSONOutput.int(resolve["exitCode"]) == 0 && resolve["finishedAt"] != .null)
        #expect(JSONOutput.int(resolve["counts"]?.objectValue?["settled"]?.objectValue?["theirs"]) == 1)
        #expect(resolve["items"] == ["todo/x"])
        let pull = entries[1]
        #expect(JSONOutput.int(pull["counts"]?.objectValue?["pulled"]) == 1, "\(pull)")
        #expect(JSONOutput.int(pull["exitCode"]) == 2)
        let push = entries[2]
        #expect(JSONOutput.int(push["exitCode"]) == 2)
        #expect(JSONOutput.int(push["counts"]?.objectValue?["conflicts"]) == 1)
        #expect(JSONOutput.int(push["counts"]?.objectValue?["errorsLeft"]) == 1)
        #expect(push["arguments"] == ["push"] && push["remote"] != .null)
        let text = try await b.ok(["log", "-n", "1"])
        #expect(text.contains("tsync resolve --all --theirs") && text.contains("settled 1 (theirs)"), "\(text)")
        // Read-only commands leave no entry.
        try await b.ok(["status"])
        try await b.ok(["push", "--dry-run"])
        // init, pull and update in `race`, then push, pull, resolve.
        let all = try await b.ok(["log"])
        let every = try JSONOutput.array(try await b.ok(["log", "--json"]))
        #expect(every.count == 6, "\(all)")
        #expect(every.last?.objectValue?["command"] == "init", "the first entry: the store's creation")
        // A usage error did nothing and leaves nothing; a URL's password is never kept.
        #expect(try await b.run(["config", "log.maxEntries", "0"]).status == 64)
        #expect(try JSONOutput.array(try await b.ok(["log", "--json"])).count == 6)
        let remote = try #require(every.first?.objectValue?["remote"]?.stringValue)
        let withPassword = remote.replacingOccurrences(of: "http://", with: "http://ci:hunter2@")
        try await b.ok(["config", "remote.url", withPassword])
        try await b.ok(["config", "log.maxEntries", "50"])
        let newest = try await b.ok(["log", "--json", "-n", "2"])
        #expect(!newest.contains("hunter2") && newest.contains(remote), "\(newest)")
    }

    @Test func theLogKeepsItsBoundAndSurvivesKillNine() async throws {
        let server = try await ServeFixture(options: ["--max-batch", "0"])  // one request per operation
        let proxy = try LossyProxy(upstream: server.url)
        let store = try await TSyncSandbox(remote: proxy.url)
        try await store.ok(["config", "log.maxEntries", "3"])
        for n in 0..<5 { try await store.ok(["insert", "todo", #"{"id": "i\#(n)"}"#]) }
        let bounded = try JSONOutput.array(try await store.ok(["log", "--json"]))
        #expect(bounded.count == 3, "log.maxEntries")
        #expect(bounded.first?.objectValue?["items"] == ["todo/i4"])

        try await store.ok(["insert", "todo"], stdin: (0..<300).map { #"{"id": "r\#($0)"}"# }.joined(separator: "\n"))
        proxy.delay(0.1)
        let push = try TSyncProcess(["push", "--json"], in: store.path)
        try await eventually(timeout: .seconds(10)) { proxy.forwarded >= 6 }
        #expect(push.isRunning)
        push.signal(SIGKILL)
        _ = await push.wait(timeout: 30)
        proxy.delay(0)
        let log = try await store.run(["log", "--json"])
        #expect(log.status == 0, "\(log)")
        let newest = try #require(try JSONOutput.array(log.stdout).first?.objectValue)
        #expect(newest["command"] == "push" && newest["exitCode"] == .null && newest["finishedAt"] == .null, "\(newest)")
        #expect(try await store.ok(["log", "-n", "1"]).contains("did not finish"))
        #expect(try await store.run(["push"]).status == 0)
        #expect(try await server.records("todo").count == 305)
    }
}
