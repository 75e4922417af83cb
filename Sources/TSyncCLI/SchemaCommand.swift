import ArgumentParser
import TSyncEngine
import TSyncModel

struct SchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Print the schema the server announced for a table.",
        discussion: """
            A server started with `tsync serve --schema TABLE=FILE` announces the table's JSON \
            Schema when the table is pulled; the store keeps it and checks every insert, update \
            and upsert of the table against it before queueing (exit 65, naming each failing \
            field's path, and nothing queued). This prints it as indented JSON, or as one line with \
            --json. A table whose server announced no schema (or a plain v2 server) exits 1.

            EXAMPLES
              tsync schema todo
              tsync schema todo --json | jq '.required'
            """)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: JSONOption

    @Argument(help: "The table.", completion: StoreCompletion.tables)
    var table: String

    func run() throws {
        guard let schema = try storeOptions.open().schema(of: table) else {
            throw TSyncError.failure(
                "table \(table) has no schema here: the server announced none when it was last pulled (pull it to look again)")
        }
        Console.write(output.json ? JSONReports.line(schema.document) : JSONSerializer.string(schema.document, pretty: true) + "\n")
    }
}
