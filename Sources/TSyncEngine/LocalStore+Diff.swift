import GRDB
import TSyncModel

extension LocalStore {
    /// One entry per item with pending operations (in queue order of its newest operation),
    /// optionally limited to a table or one item. An unknown table or id is an error (as for
    /// `requireRecord`); a record without pending changes simply has no entry.
    public func diff(table: String? = nil, id: String? = nil) throws(TSyncError) -> [DiffEntry] {
        if let table { try Identifiers.validateTableName(table) }
        if let id { try Identifiers.validateRecordID(id) }
        return try read { db in
            if let table { try StoreRows.requireTable(db, table) }
            var sql = """
                SELECT o.tbl, o.item_id, o.kind, o.seq, o.item, b.item
                FROM operations o LEFT JOIN bases b ON b.tbl = o.tbl AND b.id = o.item_id
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
            var entries: [DiffEntry] = []
            let rows = try Row.fetchCursor(db, sql: sql, arguments: arguments)
            while let row = try rows.next() {
                let table: String = row[0]
                let id: String = row[1]
                let kind = OperationKind(rawValue: row[2]) ?? .update
                let base = try (row[5] as String?).map { try StoredJSON.decodeObject($0, what: "base of \(table)/\(id)") }
                let ours = try StoreRows.fetchRecord(db, table: table, id: id)?.wireObject
                // A deleted item the server never saw (its insert is being pushed): show what it held.
                var before = base
                if before == nil, kind == .delete, let item = row[4] as String? {
                    before = try StoredJSON.decodeObject(item, what: "operation \(row[3] as Int64)")
                }
                entries.append(
                    DiffEntry(
                        table: table, id: id, kind: kind, seq: row[3], base: base, ours: ours,
                        changes: FieldChange.between(before ?? [:], ours ?? [:])))
            }
            if entries.isEmpty, let table, let id, try StoreRows.fetchRecord(db, table: table, id: id) == nil {
                throw TSyncError.invalidInput("no record \(Identifiers.quoted(id)) in table \(table)")
            }
            return entries
        }
    }
}
