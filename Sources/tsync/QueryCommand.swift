import ArgumentParser
import TSyncEngine
import TSyncModel
import TSyncQuery

struct QueryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Read records of a local table, with OData options.",
        discussion: """
            Prints one record per line (compact JSON, NDJSON); with --json, one JSON array. Records \
            have the shape of `tsync get --json`, reduced to the --select fields when given. The \
            order is --orderby, ties broken by id (so by id when --orderby is absent).

            --filter takes the OData v3 $filter language the server speaks (eq ne gt ge lt le and \
            or not, arithmetic, string and date functions); system properties (id, createdAt, \
            updatedAt, version) can be used like fields.

            Examples:
              tsync query todo --filter "done eq false and startswith(text, 'buy')" --orderby "createdAt desc" --top 10
              tsync query todo --select id,text --json
            """)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: JSONOption

    @Argument(help: "The table.")
    var table: String

    @Option(help: ArgumentHelp("Keep the records this OData expression is true for.", valueName: "ODATA"))
    var filter: String?

    @Option(help: ArgumentHelp("Sort keys: \"FIELD [asc|desc], ...\".", valueName: "FIELDS"))
    var orderby: String?

    @Option(help: ArgumentHelp("Print at most N records.", valueName: "N"))
    var top: Int?

    @Option(help: ArgumentHelp("Skip the first N records.", valueName: "N"))
    var skip: Int?

    @Option(help: ArgumentHelp("Print only these fields: \"FIELD,...\".", valueName: "FIELDS"))
    var select: String?

    func validate() throws {
        if let top, top < 0 { throw ValidationError("--top must be 0 or more") }
        if let skip, skip < 0 { throw ValidationError("--skip must be 0 or more") }
    }

    func run() throws {
        let query = try RecordQuery(filter: filter, orderBy: orderby, top: top, skip: skip, select: select)
        let records = try storeOptions.open().query(table: table, query)
        if output.json {
            Console.write(JSONReports.line(.array(records.map { .object(query.project($0.wireObject)) })))
            return
        }
        var text = ""
        for record in records {
            text += JSONSerializer.string(.object(query.project(record.wireObject)))
            text += "\n"
        }
        Console.write(text)
    }
}
