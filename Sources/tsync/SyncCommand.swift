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
            overwritten); the exit code is then 2. An unreachable server (3) or a refused login (4) \
            stops at once.

            --on-conflict, --prefer and --retries settle conflicts within the push as they do for \
            `tsync push` (and the store's push.onConflict / table.NAME.onConflict settings apply \
            the same way).

            --json prints {"push": <push result>, "pulls": [<pull result>, ...]} with the fields \
            of `push --json` and `pull --json`.

            EXAMPLES
              tsync sync
              tsync sync --on-conflict merge --prefer theirs --json
            """)

    @OptionGroup var storeOptions: StoreOptions

    @OptionGroup var conflicts: ConflictOptions

    @OptionGroup var output: ReportOptions

    func run() async throws {
        let store = try storeOptions.open()
        let policies = try conflicts.policies(store)
        let progress = ProgressLine(quiet: output.quiet)
        let quiet = output.quiet
        let interrupts = Interrupts()
        let session = try RemoteAccess.session(store, verbose: output.verbose, stopRequest: interrupts.stopRequest) { event in
            progress.handle(event)
            guard !quiet else { return }
            switch event {
            case .pushed(let push): Console.note(SyncFormat.pushSummary(push, dryRun: false))
            case .pulled(let pull): Console.note(SyncFormat.pullSummary(pull))
            case .progress: break
            }
        }
        let report: SyncSession.SyncReport
        do {
            report = try await session.sync(policies: policies)
        } catch {
            progress.finish()
            throw interrupts.afterStop(error)
        }
        if output.json {
            Console.write(
                JSONReports.line([
                    "push": SyncReports.push(report.push, dryRun: nil), "pulls": .array(report.pulls.map(SyncReports.pull)),
                ]))
        }
        if let code = interrupts.exitCode, report.push.interrupted || report.pulls.contains(where: \.interrupted) {
            Console.error("interrupted: what was done is kept — run `tsync sync` again to finish")
            throw ExitCode(code)
        }
        let errors = try store.operationErrors().count
        if errors > 0 {
            throw output.operationsFailed("\(StatusFormat.count(errors, "operation")) failed — run `tsync conflicts`")
        }
    }
}
