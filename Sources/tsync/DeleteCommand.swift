import ArgumentParser
import TSyncEngine

struct DeleteCommand: ParsableCommand, JournaledCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete local records and queue deletes.",
        discussion: """
            All or nothing: if one id is unknown, nothing is deleted. Deleting a record whose insert \
            was never pushed just drops both: the server never hears of it. --dry-run checks the \
            ids the same way, prints "TABLE/ID" for each record it would delete, and changes nothing.

            EXAMPLES
              tsync delete todo milk bread
              tsync delete todo milk --dry-run
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: "The table.", completion: StoreCompletion.tables)
    var table: String

    @Argument(help: "The ids of the records to delete.")
    var ids: [String]

    @Flag(help: "Check the ids and print what would be deleted; change nothing.")
    var dryRun = false

    var isJournaled: Bool { !dryRun }

    func validate() throws {
        if ids.isEmpty { throw ValidationError("give at least one id to delete") }
    }

    func run() throws {
        let store = try storeOptions.open()
        try store.delete(table: table, ids: ids, dryRun: dryRun)
        if dryRun {
            var seen = Set<[UInt8]>()
            Console.write(ids.filter { seen.insert(Array($0.utf8)).inserted }.map { "\(table)/\($0)\n" }.joined())
            return
        }
        CommandJournal.shared.record(changed: table, ids: ids)
    }
}
