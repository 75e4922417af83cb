import ArgumentParser
import TSyncEngine
import TSyncModel

struct DeleteCommand: ParsableCommand, JournaledCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete local records and queue deletes.",
        discussion: """
            All or nothing: if one id is unknown, nothing is deleted. Deleting a record whose insert \
            was never pushed just drops both: the server never hears of it. --dry-run checks the \
            ids the same way, prints "TABLE/ID" for each record it would delete, and changes nothing.

            With --filter ODATA instead of ids, every local record the filter matches (the filter \
            `tsync query` takes) is deleted, in one transaction. It says on stderr how many (-q: nothing but errors), \
            and warns of a filter field no record has, as `tsync query` does; -v prints each as TABLE/ID on stdout. --json (with --filter) prints {"table", "dryRun", \
            "ids": [ids]}.

            EXAMPLES
              tsync delete todo milk bread
              tsync delete todo milk --dry-run
              tsync delete todo --filter "done eq true" -v
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: "The table.", completion: StoreCompletion.tables)
    var table: String

    @Argument(help: "The ids of the records to delete (not with --filter).")
    var ids: [String] = []

    @Option(help: ArgumentHelp("Delete every record this OData expression is true for (instead of ids).", valueName: "ODATA"))
    var filter: String?

    @Flag(help: "Check the ids and print what would be deleted; change nothing.")
    var dryRun = false

    @Flag(name: .shortAndLong, help: "With --filter: print each deleted record as TABLE/ID.")
    var verbose = false

    @OptionGroup var output: JSONOption
    @OptionGroup var quiet: QuietOption

    var isJournaled: Bool { !dryRun }

    func validate() throws {
        if filter != nil {
            if !ids.isEmpty { throw ValidationError("give ids or --filter, not both (the filter names the records)") }
        } else {
            if ids.isEmpty { throw ValidationError("give at least one id to delete, or --filter ODATA") }
            if verbose || output.json { throw ValidationError("\(verbose ? "--verbose" : "--json") applies to --filter") }
        }
    }

    func run() throws {
        let session = try storeOptions.session()
        let store = session.store
        if let filter {
            if !quiet.quiet { try MatchedRecords.warnOfAbsentFields(filter: filter, table: table, store: store) }
            let deleted = try store.delete(table: table, filter: filter, dryRun: dryRun)
            if !dryRun { session.record(changed: table, ids: deleted) }
            MatchedRecords.report(
                deleted, table: table, verb: ("delete", "deleted"), dryRun: dryRun, verbose: verbose, json: output.json,
                quiet: quiet.quiet)
            return
        }
        try store.delete(table: table, ids: ids, dryRun: dryRun)
        if dryRun {
            var seen = Set<[UInt8]>()
            Console.write(ids.filter { seen.insert(Array($0.utf8)).inserted }.map { "\(table)/\($0)\n" }.joined())
            return
        }
        session.record(changed: table, ids: ids)
    }
}
