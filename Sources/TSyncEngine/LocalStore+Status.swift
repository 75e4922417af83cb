import GRDB
import TSyncModel

extension LocalStore {
    /// The queue, errors, saved queries and remote, as `tsync status` shows them.
    public func status() throws(TSyncError) -> StatusReport {
        let remote = try configuration().remote
        let (operations, queries) = try read { db in
            (try StoreRows.pendingOperations(db, table: nil), try StoreRows.savedQueries(db))
        }
        return StatusReport(
            storeDirectory: location.directory, remote: remote, operations: operations, savedQueries: queries)
    }

    /// Queued operations in queue (push) order, optionally of one table.
    public func pendingOperations(table: String? = nil) throws(TSyncError) -> [PendingOperation] {
        try read { db in try StoreRows.pendingOperations(db, table: table) }
    }
}

extension StoreRows {
    static func pendingOperations(_ db: Database, table: String?) throws -> [PendingOperation] {
        var sql = """
            SELECT o.seq, o.tbl, o.item_id, o.kind, o.state, o.queued_at, e.id, e.http_status, e.message
            FROM operations o LEFT JOIN errors e ON e.operation_seq = o.seq
            """
        var arguments: StatementArguments = []
        if let table {
            sql += " WHERE o.tbl = ?"
            arguments = [table]
        }
        sql += " ORDER BY o.seq"
        let rows = try Row.fetchCursor(db, sql: sql, arguments: arguments)
        var operations: [PendingOperation] = []
        while let row = try rows.next() { operations.append(try pendingOperation(row)) }
        return operations
    }

    /// Decodes the columns selected by `pendingOperations`.
    static func pendingOperation(_ row: Row) throws -> PendingOperation {
        let kindText: String = row[3]
        let stateText: String = row[4]
        guard let kind = OperationKind(rawValue: kindText), let state = OperationState(rawValue: stateText) else {
            throw TSyncError.failure("the store holds a damaged operation (seq \(row[0] as Int64))")
        }
        var error: PendingOperation.ErrorSummary?
        if let errorID: Int64 = row[6] {
            error = PendingOperation.ErrorSummary(id: errorID, httpStatus: row[7], message: row[8])
        }
        return PendingOperation(
            seq: row[0], table: row[1], itemID: row[2], kind: kind, state: state,
            queuedAt: Timestamp(iso8601: row[5]) ?? Timestamp(millisecondsSinceEpoch: 0), error: error)
    }
}
