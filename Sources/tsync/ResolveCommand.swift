import ArgumentParser
import TSyncEngine
import TSyncModel

struct ResolveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resolve",
        abstract: "Settle failed operations without prompting.",
        discussion: """
            Name the errors (ids from `tsync conflicts` or items as TABLE/ID, or --all, or --table T) and one way:
              --ours     client wins: the operation is kept, based on the server's current version, \
            and sent again by the next push (at once with --push). An insert answered 409 becomes an \
            update of the existing item; an update of an item the server no longer has becomes an \
            insert that recreates it.
              --theirs   server wins: the item's operations are dropped and the local item becomes \
            the server's copy (or is removed when the server has none).
              --cancel   neither: the error is cleared and the operation stays pending, unchanged \
            (e.g. to retry after a server error).
              --discard  the local change is dropped: the item goes back to its base (the last \
            server copy seen), or is removed if it never reached the server.
              --merge    field-level three-way merge of base / ours / theirs: fields changed on one \
            side only are taken from that side; if both sides changed a field differently, or one \
            deleted the item while the other changed it, that error is left as it was.

            The server's copy is the one recorded with the error; when the error has none (e.g. 500), \
            it is read from the server. Each error is settled on its own.

            Exit status: 0 when every named error was settled; 2 when --merge refused some (they \
            stay in the error table, nothing about them changed); 65 for an unknown error id \
            (nothing is settled). --json prints [{"id", "table", "itemId", "settled", "pending", \
            "reason"}].
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: "Errors: ids (from `tsync conflicts`) or items, TABLE/ID.")
    var errors: [ErrorReference] = []

    @Flag(help: "Settle every error.")
    var all = false

    @Option(help: ArgumentHelp("Settle every error of this table.", valueName: "TABLE"))
    var table: String?

    @Flag(exclusivity: .exclusive, help: "How to settle them (one of these).")
    var resolution: ResolutionFlag?

    @Flag(help: "Push right after settling (useful with --ours and --merge).")
    var push = false

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

    func validate() throws {
        let selections = (errors.isEmpty ? 0 : 1) + (all ? 1 : 0) + (table == nil ? 0 : 1)
        guard selections == 1 else {
            throw ValidationError("name the errors: error ids, --all, or --table TABLE (one of these)")
        }
        guard resolution != nil else {
            throw ValidationError("choose how: --ours, --theirs, --cancel, --discard or --merge")
        }
        if let table { try Identifiers.validateTableName(table) }
    }

    func run() async throws {
        guard let flag = resolution, let resolution = Resolution(rawValue: flag.rawValue) else { return }
        let store = try storeOptions.open()
        let selection: ErrorSelection = all ? .all : try table.map(ErrorSelection.table) ?? .ids(ErrorReference.ids(errors, in: store))
        let result = try await RemoteAccess.session(store).resolve(selection, with: resolution, thenPush: push)
        let report = result.report
        if output.json { Console.write(JSONReports.line(SyncReports.resolve(report))) }
        let refused = report.refused
        if !output.quiet {
            var line = "resolved \(StatusFormat.count(report.settledCount, "error")) (\(resolution.rawValue))"
            if let pushSummary = result.push { line += "; " + SyncFormat.pushSummary(pushSummary, dryRun: false) }
            Console.note(line)
        }
        for entry in refused {
            Console.note(
                "not merged: error \(entry.details.error.id) (\(entry.details.error.table)/\(entry.details.error.itemID)): \(reasonText(entry.outcome))"
            )
        }
        if !refused.isEmpty {
            throw TSyncError(
                .operationsFailed,
                "\(StatusFormat.count(refused.count, "error")) could not be merged; settle \(refused.count == 1 ? "it" : "them") with --ours, --theirs or --discard"
            )
        }
        if let pushSummary = result.push, pushSummary.failed > 0 {
            throw TSyncError(.operationsFailed, SyncFormat.pushSummary(pushSummary, dryRun: false))
        }
    }

    private func reasonText(_ outcome: ResolutionOutcome) -> String {
        if case .refused(let reason) = outcome { return reason }
        return ""
    }
}
