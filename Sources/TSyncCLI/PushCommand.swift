import ArgumentParser
import Foundation
import TSyncEngine
import TSyncModel

struct PushCommand: AsyncParsableCommand, JournaledCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Send pending operations to the server, in queue order.",
        discussion: """
            Every pending operation of every table (or of the --table tables) is sent in the order \
            it was queued. A conflict or a rejected operation is recorded in the error table and \
            the push goes on with the others; operations of an item with an unsettled error are \
            held back until it is settled. The exit code is 2 while the error table holds errors \
            of the pushed tables (see `tsync conflicts`, then `tsync resolve`). \
            When the server cannot be reached (exit 3) or refuses the login (exit 4) the push \
            stops and every operation not yet answered stays queued.

            A retried operation the server already applied (its answer was lost) is recognised \
            and counts as pushed: an insert answered 409 or an update answered 412 whose server \
            item has the same fields as the item sent, and a delete answered 404.

            Against `tsync serve`, operations go in batches (POST /tables/$batch, up to the \
            server's --max-batch per request, one transaction each); against any other Mobile \
            Apps v2 server, one request per operation, 8 at a time. The server is asked which it \
            offers (GET /tables/$batch) when there is something to push.

            --on-conflict settles conflicts (409/412, and 404: the server lost the item) inside \
            the push, as `tsync resolve` would, and pushes the settled operations again: ours \
            (client wins; a lost item is inserted again), theirs (server wins; the local change is \
            dropped), merge (three-way field merge; a field both sides changed stays an error \
            unless --prefer ours|theirs names the side that wins it). If that push conflicts again \
            (another writer got in between), it repeats, at most --retries times (default 3), then \
            leaves the error (exit 2). Rejected operations (400) and server errors (5xx) are never \
            settled by a policy. Conflicts left by earlier pushes are settled too. Without the \
            flag, the store's settings apply: table.NAME.onConflict, else push.onConflict, else \
            fail (`tsync config`); --prefer likewise (table.NAME.prefer, push.prefer).

            --check asks the server (GET requests only) for its copy of every queued item and \
            predicts, operation by operation, whether the push would go through or fail, and why \
            (version-conflict, already-exists, missing; held-back behind an error), with the \
            fields changed on each side and the conflict policy (--on-conflict, else the store's \
            settings) that would settle the failure. It writes nothing, on the server or in the \
            store. Exit 0 when everything would go through or be settled, 2 when something would \
            not. On a terminal it prints a report: the operations that would not go through and \
            those a policy would settle, how many would go through, and the next step (such as \
            --on-conflict); exit 2 then comes with no error message. Piped, one line per \
            operation: "OUTCOME<TAB>KIND<TAB>TABLE<TAB>ID[<TAB>DETAILS]" with OUTCOME ok, \
            held-back or a failure class.

            --atomic sends the whole queue as one batch the server applies all or nothing: if \
            any operation would fail, nothing is written, the failing operations go to the error \
            table (exit 2) and the others stay pending. It needs tsync serve, a queue within its \
            batch limit, no unsettled error, and one queued operation per item; it settles \
            nothing, so conflict policies (the flag or the store's settings) do not apply.

            SIGINT (Ctrl-C) or SIGTERM stops the push at its next safe point: no new request is \
            sent, the answers in flight are awaited and recorded, the rest stays queued, and the \
            push reports what it did and exits 130 (SIGINT) or 143 (SIGTERM), also when the server \
            stops answering meanwhile (after the request deadline: 30 s, or TSYNC_TIMEOUT). A \
            second signal ends it at once; nothing is lost either way.

            --json prints {"dryRun", "pushed", "alreadyApplied", "failed", "conflicts", "heldBack", \
            "interrupted", "requests", "operations", "conflictsMet", "settled", "rounds"}: \
            "pushed" operations the server took (those it already had included, also counted in \
            "alreadyApplied"); "failed" operations that failed in this push and are in the error \
            table now, "conflicts" those of them that are conflicts (409, 412, and 404 for an item \
            deleted on the server); "heldBack" operations not sent because their item waits behind \
            an earlier unsettled error; "requests" the HTTP requests made; \
            "operations", for --dry-run, what would be sent: [{"seq", "table", "id", "kind"}] \
            (empty otherwise); "conflictsMet" every conflict answered, settled ones included; \
            "settled" {"POLICY": count} of the errors a policy settled; "rounds" how many times \
            the queue was sent (1, plus one per push again after settling).

            push --check --json prints {"wouldSucceed", "wouldFail", "wouldBeSettled", "heldBack", \
            "operations": [{"seq", "table", "id", "kind", "outcome" ("ok", "held-back" or a \
            class), "settledBy" (the policy that would settle it, or null), "serverVersion" (null \
            when the server has no copy), "serverDeleted", "changedByUs", "changedByThem"}]}: \
            "wouldFail" counts the operations that would be left failed or waiting.

            EXAMPLES
              tsync push --on-conflict ours             # this store's changes win
              tsync push --on-conflict merge --prefer theirs --retries 5
              tsync push --check --json | jq '.operations[] | select(.outcome != "ok")'
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Option(
        name: .customLong("table"), help: ArgumentHelp("Push only this table (repeatable).", valueName: "TABLE"),
        completion: StoreCompletion.tables)
    var tables: [String] = []

    @Flag(help: "List what would be sent; send nothing.")
    var dryRun = false

    @Flag(help: "Apply the whole queue all or nothing (needs tsync serve).")
    var atomic = false

    @Flag(help: "Predict, item by item, what a push would do (asks the server, writes nothing).")
    var check = false

    @OptionGroup var conflicts: ConflictOptions

    @OptionGroup var output: ReportOptions

    var isJournaled: Bool { !dryRun }

    func validate() throws {
        for table in tables { try Identifiers.validateTableName(table) }
        if [dryRun, atomic, check].filter({ $0 }).count > 1 { throw ValidationError("--dry-run, --check and --atomic exclude each other") }
        if atomic || dryRun, conflicts.onConflict != nil {
            throw ValidationError("--on-conflict does not apply to --\(atomic ? "atomic" : "dry-run")")
        }
    }

    func run() async throws {
        let session = try storeOptions.session()
        let store = session.store
        let selection = tables.isEmpty ? nil : tables
        if dryRun {
            let (operations, summary) = try RemoteAccess.session(session).pushPreview(tables: selection)
            if output.json {
                Console.write(JSONReports.line(SyncReports.push(summary, dryRun: operations)))
            } else {
                Console.write(operations.map(SyncFormat.dryRunLine).joined())
                if !output.quiet { Console.note(SyncFormat.pushSummary(summary, dryRun: true)) }
            }
            return
        }
        let policies = try conflicts.policies(store)
        if check { return try await runCheck(session, tables: selection, policies: policies) }
        let progress = ProgressLine(quiet: output.quiet)
        Interrupts.forward(to: session.stopRequest)
        let outcome = try await progress.finishing {
            try await session.push(
                RemoteAccess.session(session, verbose: output.verbose, events: progress.handle), tables: selection, atomic: atomic,
                policies: policies)
        }
        let summary = outcome.result
        if let summary, output.json { Console.write(JSONReports.line(SyncReports.push(summary, dryRun: nil))) }
        let line = summary.map { SyncFormat.pushSummary($0, dryRun: false) } ?? ""
        try output.conclude(outcome.verdict, failed: line) {
            let left = try store.pushableOperationCount(tables: selection)
            return "\(line); \(StatusFormat.count(left, "operation")) still queued — run `tsync push` to send them"
        }
        if !output.quiet { Console.note(line) }
    }

    private func runCheck(_ session: CommandSession, tables: [String]?, policies: ConflictPolicies) async throws {
        let predictions = try await RemoteAccess.session(session, verbose: output.verbose).check(tables: tables, policies: policies)
        let line = SyncFormat.checkSummary(predictions)
        let wouldFail = predictions.contains(where: \.wouldFail)
        if output.json {
            Console.write(JSONReports.line(SyncReports.check(predictions)))
        } else if Console.stdoutIsTerminal {
            // A prediction is a report, not an error: read on a terminal, it says what would
            // happen and what to do next; exit 2 still tells a script that something would fail.
            Console.write(Self.checkReport(predictions, policies: policies))
            if !output.quiet { Console.note(line) }
            if wouldFail { throw ExitCode(ExitStatus.operationsFailed) }
            return
        } else {
            Console.write(predictions.map(SyncFormat.checkLine).joined())
        }
        if wouldFail { throw output.operationsFailed(line) }
        if !output.quiet { Console.note(line) }
    }

    /// `push --check` on a terminal: the operations that would not go through and those a policy
    /// would settle, each as TABLE/ID, its kind and why, then how many would go through, and the
    /// next step: `--on-conflict` for conflicts no policy settles, `tsync conflicts` and
    /// `tsync resolve` for operations held back behind an error.
    static func checkReport(_ predictions: [PushPrediction], policies: ConflictPolicies) -> String {
        let failing = predictions.filter(\.wouldFail)
        let settled = predictions.filter { !$0.wouldFail && $0.outcome != .succeeds }
        let width = predictions.map { $0.operation.table.count + 1 + $0.operation.itemID.count }.max() ?? 0
        func row(_ prediction: PushPrediction) -> String {
            let operation = prediction.operation
            let item = "\(operation.table)/\(operation.itemID)"
            let why =
                prediction.outcome == .heldBack
                ? "held back behind an unsettled error of the item" : SyncFormat.outcomeName(prediction.outcome)
            let details = SyncFormat.checkDetails(prediction)
            return "  " + item.padding(toLength: width, withPad: " ", startingAt: 0) + "  \(operation.kind.rawValue)  " + why
                + (details.isEmpty ? "" : ": " + details.joined(separator: "; ")) + "\n"
        }
        var text = ""
        if !failing.isEmpty { text += "Would not go through:\n" + failing.map(row).joined() }
        if !settled.isEmpty { text += "Would be settled:\n" + settled.map(row).joined() }
        let ok = predictions.count - failing.count - settled.count
        text += "Would go through: \(StatusFormat.count(ok, "operation")).\n"
        // Conflicts no policy settles: under `fail`, name the policies; a merge that a field both
        // sides changed refuses, name --prefer.
        let conflictTables = failing.compactMap { prediction -> String? in
            guard case .fails(let failure) = prediction.outcome, failure.isConflict else { return nil }
            return prediction.operation.table
        }
        var next: [String] = []
        if conflictTables.contains(where: { policies.policy(for: $0) != .merge }) {
            next.append(
                "settle the conflicts as you push: `tsync push --on-conflict ours|theirs|merge` (--check with it shows what it would do)")
        }
        if conflictTables.contains(where: { policies.policy(for: $0) == .merge }) {
            next.append("a merge leaves a field both sides changed: `--prefer ours|theirs` says which side wins it")
        }
        if failing.contains(where: { $0.outcome == .heldBack }) {
            next.append("`tsync conflicts` lists the errors held-back operations wait behind; `tsync resolve` settles them")
        }
        if failing.contains(where: { if case .fails(let failure) = $0.outcome { !failure.isConflict } else { false } }) {
            next.append("an operation the server would refuse goes to the error table: `tsync conflicts` shows it after the push")
        }
        if !next.isEmpty { text += "Next: " + next.joined(separator: "\n      ") + "\n" }
        return text + "Nothing was sent or written: this is a prediction.\n"
    }
}
