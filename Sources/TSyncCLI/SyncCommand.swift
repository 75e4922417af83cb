import ArgumentParser
import TSyncEngine
import TSyncModel

struct SyncCommand: AsyncParsableCommand, JournaledCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Push, then pull every saved query id.",
        discussion: """
            Runs `tsync push`, then `tsync pull TABLE --query-id ID` for every saved query \
            (`tsync queries`), each with its saved filter and checkpoint. Operations that fail in \
            the push are recorded and the pulls still run (items with pending changes are never \
            overwritten); the exit code is then 2. So do they when the push stops on an answer it \
            cannot take (an item the server keeps failing: `tsync resolve --park` sets it aside), \
            and a query whose pull fails (a table the server refuses, a page it cannot serve) is \
            said and the others are still pulled. The exit code is then the worst met: 4, then 1 \
            (refused), then 2 (operations failed), then 3 (try again later). A server that does \
            not answer at all (3) or a refused login (4) stops at once.

            --on-conflict, --prefer and --retries settle conflicts within the push as they do for \
            `tsync push` (and the store's push.onConflict / table.NAME.onConflict settings apply \
            the same way).

            --json prints {"push": <push result>, "pulls": [<pull result>, ...], "failures": [<message>, ...]} \
            with the fields \
            of `push --json` and `pull --json`.

            EXAMPLES
              tsync sync
              tsync sync --on-conflict merge --prefer theirs --json
            """)

    @OptionGroup var storeOptions: StoreOptions

    @OptionGroup var conflicts: ConflictOptions

    @OptionGroup var output: ReportOptions

    func run() async throws {
        let session = try storeOptions.session()
        let policies = try conflicts.policies(session.store)
        let progress = ProgressLine(quiet: output.quiet)
        let quiet = output.quiet
        Interrupts.forward(to: session.stopRequest)
        let sync = try RemoteAccess.session(session, verbose: output.verbose, reportsProgress: progress.isShown) { event in
            progress.handle(event)
            if case .pulled(let pull) = event { pull.warnings.forEach(Console.warning) }
            guard !quiet else { return }
            switch event {
            case .pushed(let push): Console.note(SyncFormat.pushSummary(push, dryRun: false))
            case .pulled(let pull): Console.note(SyncFormat.pullSummary(pull))
            case .progress: break
            }
        }
        let outcome = try await progress.finishing { try await session.sync(sync, policies: policies) }
        if let report = outcome.result, output.json {
            Console.write(
                JSONReports.line([
                    "push": SyncReports.push(report.push, dryRun: nil), "pulls": .array(report.pulls.map(SyncReports.pull)),
                    "failures": .array(report.failures.map { .string($0.commandLineMessage) }),
                ]))
        }
        let failed = if case .operationsFailed(let errors) = outcome.verdict { errors } else { 0 }
        try output.conclude(
            outcome.verdict, failures: outcome.result?.failures ?? [],
            failed: "\(StatusFormat.count(failed, "operation")) failed — run `tsync conflicts`"
        ) {
            "what was done is kept — run `tsync sync` again to finish"
        }
    }
}
