import GRDB
import TSyncModel

extension LocalStore {
    /// One entry per item with pending operations (in queue order of its newest operation),
    /// optionally limited to a table or one item. An unknown table or id is an error (as for
    /// `requireRecord`); a record without pending changes simply has no entry.
    package func diff(table: String? = nil, id: String? = nil) throws(TSyncError) -> [DiffEntry] {
        var entries: [DiffEntry] = []
        try diff(table: table, id: id) { entry in
            entries.append(entry)
            return true
        }
        return entries
    }

    /// The entries of `diff(table:id:)` handed to `visit` one at a time as they are read, from one
    /// snapshot: a diff of any size starts at once and never sits whole in memory. `visit` returns
    /// false to stop early (its reader has gone).
    package func diff(
        table: String? = nil, id: String? = nil, _ visit: (DiffEntry) throws(TSyncError) -> Bool
    ) throws(TSyncError) {
        if let table { try Identifiers.validateTableName(table) }
        if let id { try Identifiers.validateRecordID(id) }
        try read { db in
            if let table { try StoreRows.requireTable(db, table) }
            // The item's record comes in the same row (one join, not one query per entry).
            var sql = """
                SELECT o.tbl, o.item_id, o.kind, o.seq, o.item, b.item, r.body, r.created_at, r.updated_at, r.version
                FROM operations o LEFT JOIN bases b ON b.tbl = o.tbl AND b.id = o.item_id
                LEFT JOIN records r ON r.tbl = o.tbl AND r.id = o.item_id
                WHERE o.seq = (SELECT max(seq) FROM operations n WHERE n.tbl = o.tbl AND n.item_id = o.item_id)
                """
            var arguments: StatementArguments = []
            if let table {
                sql += " AND o.tbl = ?"
                arguments += [table]
                if let id {
                    sql += " AND o.item_id = ?"
                    arguments += [id]
                }
            }
            sql += " ORDER BY o.seq"
            var visited = false
            let rows = try Row.fetchCursor(db, sql: sql, arguments: arguments)
            while let row = try rows.next() {
                visited = true
                guard try visit(try Self.diffEntry(row)) else { return }
            }
            if !visited, let table, let id, try StoreRows.fetchRecord(db, table: table, id: id) == nil {
                throw TSyncError.invalidInput("no record \(Identifiers.quoted(id)) in table \(table)")
            }
        }
    }

    /// Decodes a row of `diff`'s query.
    private static func diffEntry(_ row: Row) throws -> DiffEntry {
        let table: String = row[0]
        let id: String = row[1]
        let kind = OperationKind(rawValue: row[2]) ?? .update
        let base = try (row[5] as String?).map { try StoredJSON.decodeObject($0, what: "base of \(table)/\(id)") }
        var ours: [String: JSONValue]?
        if let body = row[6] as String? {
            let fields = try StoredJSON.decodeObject(body, what: "record \(table)/\(id)")
            let system = SystemProperties(
                createdAt: (row[7] as String?).flatMap(Timestamp.init(iso8601:)),
                updatedAt: (row[8] as String?).flatMap(Timestamp.init(iso8601:)),
                version: row[9])
            ours = TSyncModel.Record(id: id, fields: fields, system: system).wireObject
        }
        // A deleted item the server never saw (its insert is being pushed): show what it held.
        var before = base
        if before == nil, kind == .delete, let item = row[4] as String? {
            before = try StoredJSON.decodeObject(item, what: "operation \(row[3] as Int64)")
        }
        return DiffEntry(
            table: table, id: id, kind: kind, seq: row[3], base: base, ours: ours,
            changes: FieldChange.between(before ?? [:], ours ?? [:]))
    }
}
