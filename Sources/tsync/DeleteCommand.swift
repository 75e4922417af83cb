import ArgumentParser
import TSyncEngine

struct DeleteCommand: ParsableCommand, JournaledCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete local records and queue deletes.",
        discussion: """
            All or nothing: if one id is unknown, nothing is deleted. Deleting a record whose insert \
            was never pushed just drops both: the server never hears of it.
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: "The table.")
    var table: String

    @Argument(help: "The ids of the records to delete.")
    var ids: [String]

    func validate() throws {
        if ids.isEmpty { throw ValidationError("give at least one id to delete") }
    }

    func run() throws {
        try storeOptions.open().delete(table: table, ids: ids)
        CommandJournal.shared.record(changed: table, ids: ids)
    }
}
