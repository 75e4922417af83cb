import ArgumentParser
import TSyncEngine
import TSyncModel

struct UpsertCommand: ParsableCommand, JournaledCommand {
    static let configuration = CommandConfiguration(
        commandName: "upsert",
        abstract: "Insert new records and merge fields into existing ones; queue nothing that would not change.",
        discussion: """
            Takes what `tsync insert` takes (one JSON object, a JSON array or NDJSON on stdin, or \
            CSV with --csv, read as `tsync insert --help` says), and every record needs an "id". \
            A new id is inserted; for an existing one the given fields are merged into the record \
            as `tsync update` merges them (a field replaces the field of that name, null sets it \
            to null, nested objects are replaced whole; fields not given are kept). A record the \
            fields would not change queues nothing, so running the same input again is a no-op. \
            All or nothing, in one transaction.

            Prints "inserted N, updated N, unchanged N" on stderr (-q: nothing); -v prints one \
            line per record on stdout, "inserted|updated|unchanged<TAB>ID". --json prints \
            {"table", "inserted": [ids], "updated": [ids], "unchanged": [ids]}.

            EXAMPLES
              tsync upsert todo '{"id": "milk", "done": false}'
              ./export.sh | tsync upsert todo
              tsync upsert todo --csv < todos.csv
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: "The table; created by its first record.", completion: StoreCompletion.tables)
    var table: String

    @Argument(help: "One record as a JSON object. Without it, or with -, records are read from stdin.")
    var json: String?

    @Flag(help: "Read CSV from stdin (a header row of field names; types as `tsync insert --help` says).")
    var csv = false

    @Flag(name: .shortAndLong, help: "Print nothing on stderr.")
    var quiet = false

    @Flag(name: .shortAndLong, help: "Print what happened to each record on stdout.")
    var verbose = false

    @OptionGroup var output: JSONOption

    func validate() throws {
        if csv, let json, json != "-" { throw ValidationError("--csv reads stdin: give no JSON argument (or -)") }
        if output.json, verbose { throw ValidationError("choose one of --json and --verbose") }
    }

    func run() throws {
        let records = try RecordsInput.upsertRecords(json: json, csv: csv, table: table)
        let session = try storeOptions.session()
        let store = session.store
        let result = try store.upsert(table: table, records: records)
        session.record(changed: table, ids: result.inserted + result.updated)
        if output.json {
            let ids = { (ids: [String]) in JSONValue.array(ids.map(JSONValue.string)) }
            Console.write(
                JSONReports.line([
                    "table": .string(table), "inserted": ids(result.inserted), "updated": ids(result.updated),
                    "unchanged": ids(result.unchanged),
                ]))
            return
        }
        if verbose {
            var text = ""
            for (what, ids) in [("inserted", result.inserted), ("updated", result.updated), ("unchanged", result.unchanged)] {
                for id in ids { text += "\(what)\t\(id)\n" }
            }
            Console.write(text)
        }
        if !quiet {
            Console.note("inserted \(result.inserted.count), updated \(result.updated.count), unchanged \(result.unchanged.count)")
        }
    }
}
