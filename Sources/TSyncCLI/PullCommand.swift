import ArgumentParser
import TSyncEngine
import TSyncModel

struct PullCommand: AsyncParsableCommand, JournaledCommand {
    static let configuration = CommandConfiguration(
        commandName: "pull",
        abstract: "Fetch a table from the server into the store.",
        discussion: """
            Pushes the table's pending operations first, settling conflicts as `tsync push` does \
            (--on-conflict, else the store's push.onConflict and table.NAME.onConflict settings). \
            Operations that fail stay in the error table, and the pull goes on; it then exits 2 \
            while operations of the table are in the error table. A push stopped by an answer it \
            cannot take (an item the server keeps failing) does not stop the pull either: the \
            pull runs, then exits 3 saying why the push stopped (`tsync resolve --park` sets such \
            an operation aside). A page the server cannot serve now (5xx) or that arrives cut is \
            exit 3, as for push. Then reads the server page by page (deleted \
            records included) and writes each page in one transaction: records are inserted or \
            replaced, records the server deleted are removed, and items with a pending local \
            change are left alone.

            With --query-id the pull is incremental: the store remembers the (updatedAt, id) of the \
            last record stored, saved with each page, and the next pull with the same id fetches \
            only records changed since — an interrupted pull resumes where it stopped. A saved query \
            keeps its filter: pull it again without --filter, or give --reset to forget the \
            checkpoint (and replace the filter). `tsync queries` lists them; `tsync sync` pulls them all.

            SIGINT (Ctrl-C) or SIGTERM stops the pull after the page it is writing, reports what \
            it wrote, and exits 130 (SIGINT) or 143 (SIGTERM); with --query-id the same pull then \
            resumes from there.

            --json prints {"table", "queryId", "received", "upserted", "deleted", "skipped", "pages", \
            "pushed", "checkpoint": null or {"updatedAt", "id"}, "interrupted"}.

            EXAMPLES
              tsync pull todo --query-id all
              tsync pull todo --filter "complete eq false" --query-id open
              tsync pull todo --query-id all --reset     # everything again
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: "The table to pull.", completion: StoreCompletion.tables)
    var table: String

    @Option(help: ArgumentHelp("Only records this OData $filter is true for.", valueName: "ODATA"))
    var filter: String?

    @Option(
        help: ArgumentHelp("Save the pull under this id and pull incrementally.", valueName: "ID"), completion: StoreCompletion.queryIDs)
    var queryId: String?

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            """
            Records per request, at most (default: \(PullRequest.defaultPageSize), then as many as the server says \
            it takes, up to \(PullRequest.largestPageSize)).
            """,
            valueName: "N"))
    var pageSize: Int?

    @Flag(help: "Forget the query id's checkpoint and pull everything again.")
    var reset = false

    @OptionGroup var conflicts: ConflictOptions

    @OptionGroup var output: ReportOptions

    func validate() throws {
        try Identifiers.validateTableName(table)
        if let pageSize, pageSize < 1 { throw ValidationError("--page-size must be at least 1 (got \(pageSize))") }
        if reset && queryId == nil { throw ValidationError("--reset needs --query-id") }
        if let queryId, queryId.isEmpty || queryId.contains(where: \.isNewline) {
            throw ValidationError("--query-id must be a non-empty single-line name")
        }
    }

    func run() async throws {
        let session = try storeOptions.session()
        let store = session.store
        let known = try store.tables().map(\.table)
        let request = PullRequest(table: table, filter: filter, queryID: queryId, pageSize: pageSize, reset: reset)
        let policies = try conflicts.policies(store)
        let progress = ProgressLine(quiet: output.quiet)
        Interrupts.forward(to: session.stopRequest)
        let outcome = try await progress.finishing {
            try await session.pull(
                RemoteAccess.session(session, verbose: output.verbose, events: progress.events), request, policies: policies)
        }
        if let summary = outcome.result, output.json { Console.write(JSONReports.line(SyncReports.pull(summary))) }
        if case .interrupted = outcome.verdict {
            let resume = queryId == nil ? "pull again to get the rest" : "run the same pull to go on from where it stopped"
            try output.conclude(outcome.verdict) { "\(outcome.result.map(SyncFormat.pullSummary) ?? ""); \(resume)" }
        }
        if let summary = outcome.result {
            summary.warnings.forEach(Console.warning)
            if !output.quiet { Console.note(SyncFormat.pullSummary(summary)) }
            // A server cannot tell an empty table from an unknown one: a typo pulls nothing, silently.
            if summary.counts.received == 0, !known.contains(table), !output.quiet {
                Console.warning(
                    "the server sent no records of \(table), and this store has no such table\(Spelling.didYouMean(table, among: known))")
            }
        }
        let errors = if case .operationsFailed(let errors) = outcome.verdict { errors } else { 0 }
        try output.conclude(
            outcome.verdict, failures: outcome.result?.pushFailure.map { [$0] } ?? [],
            failed: "\(StatusFormat.count(errors, "operation")) of \(table) failed — run `tsync conflicts`"
        ) { "" }
    }
}
