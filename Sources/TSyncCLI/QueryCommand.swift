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
            have the shape of `tsync get --json` ({"id", the user fields, "createdAt", "updatedAt", \
            "version", "deleted"}), reduced to the --select fields when given. The \
            order is --orderby, ties broken by id (so by id when --orderby is absent).

            --csv prints CSV instead: a header row (the --select fields in their order; else id, \
            the fields in the order the table's inserts and upserts gave them, then the others \
            by name), then one row per record; every text in quotes, numbers \
            and booleans as JSON writes them, null as null, objects and arrays as their JSON text \
            unquoted, an absent field as an empty cell. `tsync insert --csv` reads it back exactly \
            (a quoted cell is text, an unquoted one typed).

            A field that no record of the table has (a typo, most likely) is named in a warning on \
            stderr: it would otherwise match nothing, or select nothing, silently.

            --filter takes the OData v3 $filter language the server speaks (eq ne gt ge lt le and \
            or not, arithmetic, string and date functions); system properties (id, createdAt, \
            updatedAt, version) can be used like fields.

            EXAMPLES
              tsync query todo --filter "done eq false and startswith(text, 'buy')" --orderby "createdAt desc" --top 10
              tsync query todo --select id,text --json
              tsync query todo --select id,text,done --csv > todo.csv
            """)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: JSONOption

    @Argument(help: "The table.", completion: StoreCompletion.tables)
    var table: String

    @Option(help: ArgumentHelp("Keep the records this OData expression is true for.", valueName: "ODATA"))
    var filter: String?

    @Option(help: ArgumentHelp("Sort keys: \"FIELD [asc|desc], ...\".", valueName: "FIELDS"))
    var orderby: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("Print at most N records.", valueName: "N"))
    var top: Int?

    @Option(parsing: .unconditional, help: ArgumentHelp("Skip the first N records.", valueName: "N"))
    var skip: Int?

    @Option(help: ArgumentHelp("Print only these fields: \"FIELD,...\".", valueName: "FIELDS"))
    var select: String?

    @Flag(help: "Print CSV: a header row, then one row per record.")
    var csv = false

    func validate() throws {
        if csv, output.json { throw ValidationError("choose one of --json and --csv") }
        if let top, top < 0 { throw ValidationError("--top must be 0 or more (got \(top))") }
        if let skip, skip < 0 { throw ValidationError("--skip must be 0 or more (got \(skip))") }
    }

    func run() throws {
        let query = try RecordQuery(filter: filter, orderBy: orderby, top: top, skip: skip, select: select)
        let store = try storeOptions.open()
        let records = try store.query(table: table, query)
        try MatchedRecords.warnOfAbsentFields(query, table: table, store: store)
        if output.json {
            Console.write(JSONReports.line(.array(records.map { .object(query.project($0.wireObject)) })))
            return
        }
        if csv {
            let objects = records.map { query.project($0.wireObject) }
            Console.write(CSVRecords.text(objects, columns: try query.select ?? store.csvColumns(table: table, for: objects)))
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
