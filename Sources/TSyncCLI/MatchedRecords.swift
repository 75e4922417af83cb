import TSyncEngine
import TSyncModel
import TSyncQuery

/// What the commands that act on the records a filter matches say (`query`, `update --filter`,
/// `delete --filter`, `purge`), one piece so that they agree (docs/DESIGN.md §3).
enum MatchedRecords {
    /// Warns on stderr of each field `query` names (filter, order, select) that no record of
    /// `table` has: a misspelt field matches nothing and selects nothing, silently otherwise.
    static func warnOfAbsentFields(_ query: RecordQuery, table: String, store: LocalStore) throws {
        for name in try store.fieldsNoRecordHas(table: table, names: query.fieldNames) {
            Console.warning("no record of \(table) has a field \(Identifiers.quoted(name))")
        }
    }

    /// The same warning for a `--filter` alone.
    static func warnOfAbsentFields(filter: String, table: String, store: LocalStore) throws {
        let query = try RecordQuery(filter: filter, orderBy: nil, top: nil, skip: nil, select: nil)
        try warnOfAbsentFields(query, table: table, store: store)
    }

    /// One "TABLE/ID" line per record, in byte order of the ids (the order SQLite sorts them).
    static func lines(table: String, ids: [String]) -> String {
        var text = ""
        for id in ids.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) { text += "\(table)/\(id)\n" }
        return text
    }

    /// How `update --filter` and `delete --filter` report: with --json {"table", "dryRun",
    /// "ids"}; else the records as "TABLE/ID" on stdout with -v or --dry-run, and how many on
    /// stderr ("updated 3 records of todo", "would delete …") unless -q.
    static func report(
        _ ids: [String], table: String, verb: (present: String, past: String), dryRun: Bool, verbose: Bool, json: Bool,
        quiet: Bool
    ) {
        if json {
            Console.write(
                JSONReports.line(["table": .string(table), "dryRun": .bool(dryRun), "ids": .array(ids.map(JSONValue.string))]))
            return
        }
        if verbose || dryRun { Console.write(lines(table: table, ids: ids)) }
        if !quiet { Console.note("\(dryRun ? "would \(verb.present)" : verb.past) \(StatusFormat.count(ids.count, "record")) of \(table)") }
    }
}
