import ArgumentParser
import TSyncEngine
import TSyncModel

struct PushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Send pending operations to the server, in queue order.",
        discussion: """
            Every pending operation of every table (or of the --table tables) is sent in the order \
            it was queued. A conflict or a rejected operation is recorded in the error table and \
            the push goes on with the others; operations of an item with an unresolved error are \
            held back until it is resolved. The exit code is 2 while the error table holds errors \
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

            --atomic sends the whole queue as one batch the server applies all or nothing: if \
            any operation would fail, nothing is written, the failing operations go to the error \
            table (exit 2) and the others stay pending. It needs tsync serve, a queue within its \
            batch limit, no unresolved error, and one queued operation per item.

            SIGINT (Ctrl-C) or SIGTERM stops the push at its next safe point: no new request is \
            sent, the answers in flight are awaited and recorded, the rest stays queued, and the \
            push reports what it did and exits 130 (SIGINT) or 143 (SIGTERM). A second signal ends \
            it at once; nothing is lost either way.

            --json prints {"dryRun", "pushed", "alreadyApplied", "failed", "conflicts", "heldBack", \
            "interrupted", "requests", "operations"}; "requests" counts the HTTP requests made; \
            "operations" lists, for --dry-run, what would be sent: [{"seq", "table", "id", \
            "kind"}] (empty otherwise).
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Option(name: .customLong("table"), help: ArgumentHelp("Push only this table (repeatable).", valueName: "TABLE"))
    var tables: [String] = []

    @Flag(help: "List what would be sent; send nothing.")
    var dryRun = false

    @Flag(help: "Apply the whole queue all or nothing (needs tsync serve).")
    var atomic = false

    @OptionGroup var output: ReportOptions

    func validate() throws {
        for table in tables { try Identifiers.validateTableName(table) }
    }

    func run() async throws {
        let store = try storeOptions.open()
        let selection = tables.isEmpty ? nil : tables
        if dryRun {
            let (operations, summary) = try RemoteAccess.session(store).pushPreview(tables: selection)
            if output.json {
                Console.write(JSONReports.line(SyncReports.push(summary, dryRun: operations)))
            } else {
                Console.write(operations.map(SyncFormat.dryRunLine).joined())
                if !output.quiet { Console.note(SyncFormat.pushSummary(summary, dryRun: true)) }
            }
            return
        }
        let progress = ProgressLine(quiet: output.quiet)
        let interrupts = Interrupts()
        let session = try RemoteAccess.session(store, stopRequest: interrupts.stopRequest, events: progress.handle)
        let summary: PushSummary
        do {
            summary = try await session.push(tables: selection, atomic: atomic)
        } catch {
            progress.finish()
            throw error
        }
        if output.json { Console.write(JSONReports.line(SyncReports.push(summary, dryRun: nil))) }
        let line = SyncFormat.pushSummary(summary, dryRun: false)
        if summary.interrupted, let code = interrupts.exitCode {
            let left = try store.pushableOperationCount(tables: selection)
            Console.error("interrupted: \(line); \(StatusFormat.count(left, "operation")) still queued — run `tsync push` to send them")
            throw ExitCode(code)
        }
        // Exit 2 while the error table holds errors of these tables, new or old (DESIGN §3).
        if summary.failed > 0 || summary.heldBack > 0 { throw TSyncError(.operationsFailed, line) }
        if !output.quiet { Console.note(line) }
    }
}
