import GRDB
import TSyncModel
import TSyncQuery

/// One line of `tsync tables`.
public struct TableSummary: Sendable, Equatable {
    /// The table's name.
    public var table: String
    /// Local records (the working copy).
    public var records: Int
    /// Queued operations not yet pushed.
    public var pending: Int
    /// Operations with a recorded error.
    public var errors: Int
}

/// Reads of the working copy. None of them takes the write lock.
extension LocalStore {
    /// The local record, or nil when the table has no such id.
    public func record(table: String, id: String) throws(TSyncError) -> TSyncModel.Record? {
        try Identifiers.validateTableName(table)
        try Identifiers.validateRecordID(id)
        return try read { db in try StoreRows.fetchRecord(db, table: table, id: id) }
    }

    /// Refuses a table the store does not know (exit 65, with the closest name): a typo in
    /// `push --table` or `resolve --table` must not pass as "nothing to do".
    package func requireTables(_ tables: [String]) throws(TSyncError) {
        guard !tables.isEmpty else { return }
        try read { db in
            for table in tables { try StoreRows.requireTable(db, table) }
        }
    }

    /// Refuses a table the store knows by another spelling (table names are case-insensitive,
    /// as on the server: `StoreRows.requireOneSpelling`), before anything is sent for it.
    package func requireOneSpelling(of table: String) throws(TSyncError) {
        try read { db in try StoreRows.requireOneSpelling(db, table) }
    }

    /// The local record; an unknown table or id is an error that says which.
    package func requireRecord(table: String, id: String) throws(TSyncError) -> TSyncModel.Record {
        try Identifiers.validateTableName(table)
        try Identifiers.validateRecordID(id)
        return try read { db in
            if let record = try StoreRows.fetchRecord(db, table: table, id: id) { return record }
            try StoreRows.requireTable(db, table)
            throw TSyncError.invalidInput("no record \(Identifiers.quoted(id)) in table \(table)")
        }
    }

    /// Records of `table` matching `query`, in its order. An unknown table is an error.
    public func query(table: String, _ query: RecordQuery = RecordQuery()) throws(TSyncError) -> [TSyncModel.Record] {
        try Identifiers.validateTableName(table)
        let (sql, arguments) = try query.localSQL(table: table)
        return try read { db in
            try StoreRows.requireTable(db, table)
            let rows = try Row.fetchCursor(db, sql: sql, arguments: arguments)
            var records: [TSyncModel.Record] = []
            while let row = try rows.next() { records.append(try StoreRows.record(row, table: table)) }
            return records
        }
    }

    /// Of `names`, the user fields no local record of `table` has: what `query` warns about (a
    /// typo in a field name otherwise just matches nothing). System properties always exist.
    package func fieldsNoRecordHas(table: String, names: [String]) throws(TSyncError) -> [String] {
        let candidates = names.filter { !SystemProperties.names.contains($0) && Identifiers.isSimpleName($0) }
        guard !candidates.isEmpty else { return [] }
        return try read { db in
            try candidates.filter { name in
                try
                    !(Bool.fetchOne(
                        db,
                        sql: "SELECT EXISTS (SELECT 1 FROM records WHERE tbl = ? AND json_type(body, '$.' || ?) IS NOT NULL)",
                        arguments: [table, name]) ?? false)
            }
        }
    }

    /// Every table with something in it (records, pending operations, errors or a saved query),
    /// with its counts, by name. A table whose records all went is not listed: a typo that pulled
    /// nothing must not stay as a table.
    public func tables() throws(TSyncError) -> [TableSummary] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT t.name,
                        (SELECT count(*) FROM records WHERE tbl = t.name),
                        (SELECT count(*) FROM operations WHERE tbl = t.name),
                        (SELECT count(*) FROM errors WHERE tbl = t.name)
                    FROM tables t
                    WHERE EXISTS (SELECT 1 FROM records WHERE tbl = t.name)
                        OR EXISTS (SELECT 1 FROM operations WHERE tbl = t.name)
                        OR EXISTS (SELECT 1 FROM queries WHERE tbl = t.name)
                    ORDER BY t.name
                    """
            ).map { row in TableSummary(table: row[0], records: row[1], pending: row[2], errors: row[3]) }
        }
    }
}
