import ArgumentParser
import TSyncEngine
import TSyncModel

struct InsertCommand: ParsableCommand, JournaledCommand {
    static let configuration = CommandConfiguration(
        commandName: "insert",
        abstract: "Insert records into a local table and queue them for push.",
        discussion: """
            Give one JSON object as an argument, or pipe many to stdin as a JSON array or as NDJSON \
            (objects one after the other; `-` names stdin too). An object without "id" gets a \
            generated one (a UUID). The ids are printed one per line, in input order, unless -q.

            System properties other than "id" (createdAt, updatedAt, version, deleted) are set by \
            the server and are ignored. The insert is all or nothing: if any record is invalid or \
            its id exists, nothing is inserted.

            --csv reads CSV from stdin instead: a header row of field names, then one record per \
            row. A quoted cell is always text ("" the empty text, "12" the text 12). An unquoted \
            cell is typed: empty leaves the field out, true and false are booleans, null is null, \
            a number as JSON writes it (12, -3.5, 1e3; not 007 or +1) is a number, a whole JSON \
            object or array ({"x":[1,2]}, []) is that value, anything else is text; the id \
            column is always text. A cell is taken as it is written, spaces included. Quoted \
            cells (RFC 4180) may hold commas, quotes (written twice) and line breaks. Blank lines \
            are skipped. What `tsync query --csv` writes comes back exactly.

            EXAMPLES
              tsync insert todo '{"text": "buy milk", "done": false}'
              jq -c '.[]' todos.json | tsync insert todo -q
              tsync insert todo --csv < todos.csv
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: "The table (letters, digits and '_'); created by its first insert.", completion: StoreCompletion.tables)
    var table: String

    @Argument(help: "One record as a JSON object. Without it, or with -, records are read from stdin.")
    var json: String?

    @Flag(name: .shortAndLong, help: "Do not print the ids.")
    var quiet = false

    @Flag(help: "Read CSV from stdin (a header row of field names; types as described above).")
    var csv = false

    func run() throws {
        let source = try RecordsInput.source(json: json, csv: csv, command: "insert", table: table)
        guard case .argument(let text) = source else { return try insertStandardInput() }
        let records = NewRecords(objects: [try RecordInput.object(from: text)], fieldOrder: FieldOrder.names(json: Array(text.utf8)))
        let session = try storeOptions.session()
        try insert(records, session: session)
    }

    /// Streams stdin into the store, a batch at a time, so that memory stays flat however long
    /// the input. Where the stream declines (an empty or unusual input, any error), nothing was
    /// inserted, and the whole input is read and inserted the general way, in the order it always
    /// was: the input is read and checked before the store opens, and the session (its log entry)
    /// begins once the input is known good.
    private func insertStandardInput() throws {
        let input = ReplayableStandardInput()
        let store: LocalStore
        do {
            store = try LocalStore.open(storeOptions.location())
        } catch {
            _ = try RecordsInput.newRecords(input.replay(), csv: csv)
            throw error
        }
        let ids = InsertedIDs(keep: !quiet)
        if let count = store.insert(table: table, streaming: input, csv: csv, inserted: ids.append) {
            storeOptions.run.begin(store).record(changed: table, count: count, firstIDs: ids.sample)
            ids.write()
            return
        }
        let records = try RecordsInput.newRecords(input.replay(), csv: csv)
        try insert(records, session: storeOptions.run.begin(store))
    }

    private func insert(_ records: NewRecords, session: CommandSession) throws {
        let store = session.store
        guard !records.isEmpty else {
            Console.note("no records on stdin; nothing inserted")
            return
        }
        let ids = try store.insert(table: table, records: records)
        session.record(changed: table, ids: ids)
        guard !quiet else { return }
        var output = ""
        output.reserveCapacity(ids.count * 37)
        for id in ids {
            output += id
            output += "\n"
        }
        Console.write(output)
    }
}
