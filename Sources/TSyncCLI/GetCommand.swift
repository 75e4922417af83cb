import ArgumentParser
import TSyncEngine
import TSyncModel

struct GetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print one local record.",
        discussion: """
            Prints the record as indented JSON; with --json, as one line of JSON. Either way the \
            object holds the user fields, "id", "createdAt", "updatedAt" and "version" (these three \
            absent until the server has seen the record) and "deleted" (always false locally).

            EXAMPLES
              tsync get todo milk
              tsync get todo milk --json | jq .text
            """)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: JSONOption

    @Argument(help: "The table.", completion: StoreCompletion.tables)
    var table: String

    @Argument(help: "The record id.")
    var id: String

    func run() throws {
        let record = try storeOptions.open().requireRecord(table: table, id: id)
        let value = JSONReports.record(record)
        Console.write(output.json ? JSONReports.line(value) : JSONSerializer.string(value, pretty: true) + "\n")
    }
}
