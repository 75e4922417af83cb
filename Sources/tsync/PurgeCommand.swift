import ArgumentParser
import TSyncEngine

struct PurgeCommand: ParsableCommand, JournaledCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge",
        abstract: "Drop local records of a table (the server is not touched).",
        discussion: """
            Removes the table's records, or those matching --filter. Refused while the table has \
            pending operations, unless --force, which drops them (and their errors) too. The \
            table's saved queries are dropped as well, so the next pull fetches the purged records \
            again.
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: "The table.")
    var table: String

    @Option(help: ArgumentHelp("Only records this OData expression is true for.", valueName: "ODATA"))
    var filter: String?

    @Flag(help: "Also drop the table's pending operations.")
    var force = false

    func run() throws {
        let result = try storeOptions.open().purge(table: table, filter: filter, force: force)
        var message = "purged \(StatusFormat.count(result.records, "record")) from \(table)"
        if result.operations > 0 { message += ", dropped \(StatusFormat.count(result.operations, "pending operation"))" }
        if result.queries > 0 { message += ", forgot \(StatusFormat.count(result.queries, "saved query", plural: "saved queries"))" }
        Console.note(message)
    }
}
