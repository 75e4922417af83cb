import ArgumentParser
import TSyncEngine
import TSyncModel

struct ResolveCommand: AsyncParsableCommand, JournaledCommand {
    static let configuration = CommandConfiguration(
        commandName: "resolve",
        abstract: "Settle failed operations without prompting.",
        discussion: """
            Name the errors (ids from `tsync conflicts` or items as TABLE/ID, or --all, or --table T, \
            narrowed or chosen by --class and --kind) and one way:
              --ours     client wins: the operation is kept, based on the server's current version, \
            and sent again by the next push (at once with --push). An insert answered 409 becomes an \
            update of the existing item; an update of an item the server no longer has becomes an \
            insert that recreates it.
              --theirs   server wins: the item's operations are dropped and the local item becomes \
            the server's copy (or is removed when the server has none).
              --cancel   neither: the error is cleared and the operation stays pending, unchanged \
            (e.g. to retry after a server error).
              --discard  the local change is dropped: the item goes back to its base (the last \
            server copy seen; a newer one a pull skipped meanwhile), or is removed if it never \
            reached the server. The server is not asked.
              --merge    field-level three-way merge of base / ours / theirs: fields changed on one \
            side only are taken from that side; if both sides changed a field differently, or one \
            deleted the item while the other changed it, that error is left as it was, unless --prefer \
            ours|theirs names the side that wins such a field (or that change against a delete).

            The server's copy is read from the server when settling (25 items a request), since \
            the one recorded with the error may be stale by now; without a remote, or when it \
            cannot be reached, the recorded copy is used. Each error is settled on its own.

            --class CLASS (version-conflict, already-exists, missing, forbidden, rejected, schema, server-error) and \
            --kind KIND (insert, update, delete) pick errors by what failed; each is repeatable, \
            and alone they select among all errors (like --all). --dry-run prints what each error \
            would become and changes nothing: "#ID<TAB>TABLE/ID<TAB>WHAT", WHAT being "push KIND" \
            (an operation stays queued), "keep local record" (settled, nothing to push), "remove \
            local record", or "refused: REASON".

            Exit status: 0 when every named error was settled; 2 when --merge refused some (they \
            stay in the error table, nothing about them changed; a --dry-run says the same with \
            the same code), or when the --push that follows leaves errors; 65 for an unknown error \
            id (nothing is settled). --json prints [{"id", "table", "itemId", "class", "kind", "settled", \
            "pending", "pendingKind", "record", "reason", "dryRun"}]: "pending" whether an operation \
            of the item is still queued and "pendingKind" its kind (null when none), "record" the \
            local record afterwards (null when removed); with --push, both as the push left them; "reason" why --merge refused (null when \
            settled).

            --park TABLE/ID... sets aside the operation of each item that is in flight: one a \
            push sent and could not settle (a server that answers it 500 every time stops every \
            push, and the pull of its table). It goes into the error table as a server-error \
            (the server may have applied it), the pushes and pulls of everything else go on, and \
            it is settled like any error: --cancel sends it again with the next push, --discard, \
            --theirs or --ours settle it against the server's copy. With --json it prints \
            [{"id", "table", "itemId"}], the errors it made.

            EXAMPLES
              tsync resolve --park todo/a1      # then: tsync resolve todo/a1 --discard
              tsync resolve --all --ours --push
              tsync resolve --class missing --discard
              tsync resolve --kind update --merge --prefer theirs --dry-run
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: "Errors: ids (from `tsync conflicts`) or items, TABLE/ID.", completion: StoreCompletion.errors)
    var errors: [ErrorReference] = []

    @Flag(help: "Settle every error.")
    var all = false

    @Option(help: ArgumentHelp("Settle every error of this table.", valueName: "TABLE"), completion: StoreCompletion.tables)
    var table: String?

    @Flag(exclusivity: .exclusive, help: "How to settle them (one of these).")
    var resolution: ResolutionFlag?

    @Option(name: .customLong("class"), help: ArgumentHelp("Only errors of this class (repeatable).", valueName: "CLASS"))
    var classes: [FailureClass] = []

    @Option(name: .customLong("kind"), help: ArgumentHelp("Only errors of this operation kind (repeatable).", valueName: "KIND"))
    var kinds: [OperationKind] = []

    @Option(help: ArgumentHelp("With --merge: the side that wins a field both sides changed.", valueName: "SIDE"))
    var prefer: ThreeWayMerge.Side?

    @Flag(help: "Push right after settling (useful with --ours and --merge).")
    var push = false

    @Flag(help: "Print what each error would become; change nothing.")
    var dryRun = false

    @Flag(help: "Set aside the operations in flight of the items named (TABLE/ID) as errors.")
    var park = false

    @OptionGroup var output: ReportOptions

    enum ResolutionFlag: String, EnumerableFlag {
        case ours, theirs, cancel, discard, merge

        static func help(for value: ResolutionFlag) -> ArgumentHelp? {
            switch value {
            case .ours: "Client wins: keep the operation, push it again."
            case .theirs: "Server wins: drop the operation, take the server's copy."
            case .cancel: "Clear the error; the operation stays pending."
            case .discard: "Drop the local change; back to the base."
            case .merge: "Three-way merge by field; refused on a field both sides changed."
            }
        }
    }

    var isJournaled: Bool { !dryRun }

    func validate() throws {
        if park {
            let items = errors.allSatisfy { if case .item = $0 { true } else { false } }
            guard !errors.isEmpty, items, !all, table == nil, resolution == nil, classes.isEmpty, kinds.isEmpty, !push, !dryRun else {
                throw ValidationError("--park takes items (TABLE/ID) and no other option; settle them afterwards")
            }
            return
        }
        let selections = (errors.isEmpty ? 0 : 1) + (all ? 1 : 0) + (table == nil ? 0 : 1)
        let filtered = !classes.isEmpty || !kinds.isEmpty
        guard selections == 1 || (selections == 0 && filtered) else {
            throw ValidationError("name the errors: error ids, --all, --table TABLE (one of these), or --class/--kind")
        }
        if prefer != nil, resolution != .merge { throw ValidationError("--prefer applies to --merge only") }
        if dryRun, push { throw ValidationError("--dry-run changes nothing, so it cannot --push") }
        guard resolution != nil else {
            throw ValidationError("choose how: --ours, --theirs, --cancel, --discard or --merge")
        }
        if let table { try Identifiers.validateTableName(table) }
    }

    func run() async throws {
        if park { return try parkItems() }
        guard let flag = resolution, let resolution = Resolution(rawValue: flag.rawValue) else { return }
        let session = try storeOptions.session()
        let store = session.store
        let selection: ErrorSelection =
            if let table { .table(table) } else if errors.isEmpty { .all } else { .ids(try ErrorReference.ids(errors, in: store)) }
        let request = ResolveRequest(
            selection, filter: ErrorFilter(classes: Set(classes), kinds: Set(kinds)), with: resolution, prefer: prefer, dryRun: dryRun)
        let result = try await RemoteAccess.session(session, verbose: output.verbose).resolve(request, thenPush: push)
        let report = result.report
        if !dryRun { session.record(resolve: report, as: resolution) }
        if output.json { Console.write(JSONReports.line(SyncReports.resolve(report, dryRun: dryRun))) }
        let refused = report.refused
        if dryRun {
            if !output.json { Console.write(report.entries.map(SyncFormat.resolutionLine).joined()) }
            var line = "dry run: \(StatusFormat.count(report.settledCount, "error")) would be settled as above"
            if !refused.isEmpty { line += ", \(refused.count) could not be merged" }
            line += "; nothing changed"
            // The exit code the real command would have: 2 when a merge would be refused.
            if !refused.isEmpty { throw output.operationsFailed(line) }
            if !output.quiet { Console.note(line) }
            return
        }
        if !output.quiet {
            var line = "settled \(StatusFormat.count(report.settledCount, "error")) (\(resolution.rawValue))"
            // A push that left errors says so once, as the error below.
            if let pushSummary = result.push, pushSummary.failed == 0 { line += "; " + SyncFormat.pushSummary(pushSummary, dryRun: false) }
            Console.note(line)
        }
        for entry in refused {
            Console.note(
                "not merged: error \(entry.error.id) (\(entry.error.table)/\(entry.error.itemID)): \(reasonText(entry.outcome))"
            )
        }
        if !refused.isEmpty {
            throw TSyncError(
                .operationsFailed,
                "\(StatusFormat.count(refused.count, "error")) could not be merged; settle \(refused.count == 1 ? "it" : "them") with --ours, --theirs or --discard"
            )
        }
        if let pushSummary = result.push, pushSummary.failed > 0 {
            throw output.operationsFailed(SyncFormat.pushSummary(pushSummary, dryRun: false))
        }
    }

    /// `--park`: each item's operations in flight go into the error table.
    private func parkItems() throws {
        let store = try storeOptions.session().store
        var parked: [OperationError] = []
        for case .item(let table, let id) in errors { parked += try store.park(table: table, id: id) }
        if output.json {
            Console.write(
                JSONReports.line(
                    .array(parked.map { .object(["id": .int($0.id), "table": .string($0.table), "itemId": .string($0.itemID)]) })))
        }
        if !output.quiet {
            Console.note(
                "parked \(StatusFormat.count(parked.count, "operation")) as server errors: \(parked.map { "#\($0.id) \($0.table)/\($0.itemID)" }.joined(separator: ", ")); settle with `tsync resolve ID --cancel` (send again) or --discard, --theirs, --ours"
            )
        }
    }

    private func reasonText(_ outcome: ResolutionOutcome) -> String {
        if case .refused(let reason) = outcome { return reason }
        return ""
    }
}
