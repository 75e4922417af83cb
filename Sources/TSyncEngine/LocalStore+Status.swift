import GRDB
import GRDBSQLite
import TSyncModel

extension LocalStore {
    /// The counts of the queue, the saved queries and the remote, as `tsync status` shows them,
    /// with the first `samplesPerTable` operations of each table. One pass over the queue that
    /// decodes nothing but each operation's table and kind (and the samples): a million queued
    /// operations cost a scan, not a million values.
    package func status(samplesPerTable: Int = 0) throws(TSyncError) -> StatusReport {
        let remote = try configuration().remote
        return try read { db in
            try StoreRows.statusReport(db, directory: location.directory, remote: remote, samplesPerTable: samplesPerTable)
        }
    }

    /// Every queued operation in queue order, from one snapshot, for a report that lists them
    /// between what it knows before reading them (`StatusReport.Head`) and its counts, which the
    /// cursor keeps as it goes (`PendingOperations.report`). `body` reads the operations through
    /// the cursor, valid only while `body` runs: they go by one at a time, so a report of any size
    /// starts at once, reads the queue once and never sits whole in memory.
    package func status<Result>(
        _ body: (StatusReport.Head, PendingOperations) throws(TSyncError) -> Result
    ) throws(TSyncError) -> Result {
        let remote = try configuration().remote
        return try read { db in
            let head = StatusReport.Head(
                isClean: !(try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM operations)") ?? false),
                errorCount: try Int.fetchOne(
                    db, sql: "SELECT count(*) FROM errors e JOIN operations o ON o.seq = e.operation_seq") ?? 0)
            let operations = try PendingOperations(db, location: location)
            operations.storeDirectory = location.directory
            operations.remote = remote
            operations.savedQueries = try StoreRows.savedQueries(db)
            return try body(head, operations)
        }
    }

    /// Every queued operation in queue order, through a cursor valid only while `body` runs: for
    /// the forms that list the operations and need no counts (`status --porcelain`, `--ndjson`).
    package func pendingOperations<Result>(_ body: (PendingOperations) throws(TSyncError) -> Result) throws(TSyncError) -> Result {
        try read { db in try body(try PendingOperations(db, location: location)) }
    }

    /// Every queued operation in queue order, from one snapshot, handed to `body` as the bytes
    /// the store holds: for `status --porcelain`, which names each of them and needs nothing
    /// else. No string, date or value is made per operation (a million of them made the listing
    /// a second). `body` returns false to stop.
    package func queuedItems(_ body: (QueuedItem) -> Bool) throws(TSyncError) {
        try read { db in
            // Most queues have no errors: then the join, one index probe per operation, is left out.
            let hasErrors = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM errors)") ?? false
            let statement = try db.makeStatement(
                sql: hasErrors
                    ? "SELECT o.seq, o.tbl, o.item_id, o.kind, o.state, e.id FROM operations o "
                        + "LEFT JOIN errors e ON e.operation_seq = o.seq ORDER BY o.seq"
                    : "SELECT o.seq, o.tbl, o.item_id, o.kind, o.state, NULL FROM operations o ORDER BY o.seq")
            let handle = statement.sqliteStatement
            defer { sqlite3_reset(handle) }
            while true {
                let code = sqlite3_step(handle)
                guard code == SQLITE_ROW else {
                    if code == SQLITE_DONE { return }
                    throw DatabaseError(
                        resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
                }
                guard let kind = QueuedItem.kind(Self.text(handle, 3)), QueuedItem.isState(Self.text(handle, 4)) else {
                    throw StoreRows.damagedOperation(sqlite3_column_int64(handle, 0))
                }
                let item = QueuedItem(
                    kind: kind, failed: sqlite3_column_type(handle, 5) != SQLITE_NULL, table: Self.text(handle, 1),
                    itemID: Self.text(handle, 2))
                guard body(item) else { return }
            }
        }
    }

    /// A text column's bytes, valid until the statement steps on.
    private static func text(_ handle: SQLiteStatement, _ column: Int32) -> UnsafeBufferPointer<UInt8> {
        guard let pointer = sqlite3_column_text(handle, column) else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: pointer, count: Int(sqlite3_column_bytes(handle, column)))
    }

    /// Queued operations in queue (push) order, optionally of one table.
    package func pendingOperations(table: String? = nil) throws(TSyncError) -> [PendingOperation] {
        try read { db in try StoreRows.pendingOperations(db, table: table) }
    }
}

/// The operation queue in push order, read one operation at a time from the snapshot of
/// `LocalStore.status(_:)` or `LocalStore.pendingOperations(_:)`; valid only inside its closure.
package final class PendingOperations {
    private let rows: RowCursor
    private let location: StoreLocation
    private var tally = QueueTally()
    fileprivate var storeDirectory = ""
    fileprivate var remote: String?
    fileprivate var savedQueries: [SavedQuery] = []

    /// The report of the operations read so far (of all of them once `next()` has returned nil),
    /// with the store's saved queries and remote when the cursor came from `LocalStore.status(_:)`.
    package var report: StatusReport {
        StatusReport(
            storeDirectory: storeDirectory, remote: remote, tables: tally.byName, savedQueries: savedQueries)
    }

    fileprivate init(_ db: Database, location: StoreLocation) throws {
        self.location = location
        // Most queues have no errors: then the join, one index probe per operation, is left out.
        let hasErrors = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM errors)") ?? false
        rows = try Row.fetchCursor(
            db,
            sql: hasErrors
                ? StoreRows.pendingOperationsSQL + " ORDER BY o.seq"
                : StoreRows.queueSQL + " ORDER BY o.seq"
        )
    }

    /// The next operation, nil after the last.
    package func next() throws(TSyncError) -> PendingOperation? {
        do {
            guard let row = try rows.next() else { return nil }
            let operation = try StoreRows.pendingOperation(row)
            let position = tally.position(of: operation.table)
            tally.tables[position].count(operation.kind)
            if operation.error != nil { tally.tables[position].errors += 1 }
            return operation
        } catch {
            throw StoreFailure.map(error, location: location)
        }
    }
}

extension StoreRows {
    static let pendingOperationsSQL = """
        SELECT o.seq, o.tbl, o.item_id, o.kind, o.state, o.queued_at, e.id, e.http_status, e.message
        FROM operations o LEFT JOIN errors e ON e.operation_seq = o.seq
        """
    /// The columns of `pendingOperationsSQL` without the errors: for a queue without any.
    static let queueSQL = "SELECT o.seq, o.tbl, o.item_id, o.kind, o.state, o.queued_at, NULL, NULL, NULL FROM operations o"

    static func pendingOperations(_ db: Database, table: String?) throws -> [PendingOperation] {
        var sql = pendingOperationsSQL
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

    /// Decodes the columns selected by `pendingOperationsSQL`.
    static func pendingOperation(_ row: Row) throws -> PendingOperation {
        let kindText: String = row[3]
        let stateText: String = row[4]
        guard let kind = OperationKind(rawValue: kindText), let state = OperationState(rawValue: stateText) else {
            throw damagedOperation(row[0])
        }
        var error: PendingOperation.ErrorSummary?
        if let errorID: Int64 = row[6] {
            error = PendingOperation.ErrorSummary(id: errorID, httpStatus: row[7], message: row[8])
        }
        return PendingOperation(
            seq: row[0], table: row[1], itemID: row[2], kind: kind, state: state,
            queuedAt: Timestamp(iso8601: row[5]) ?? Timestamp(millisecondsSinceEpoch: 0), error: error)
    }

    static func damagedOperation(_ seq: Int64) -> TSyncError {
        TSyncError.failure("the store holds a damaged operation (seq \(seq))")
    }

    /// Counts the queue by table and kind in one pass in queue order, decoding whole operations
    /// only for the samples; errors are counted from the error table, which is small.
    static func statusReport(_ db: Database, directory: String, remote: String?, samplesPerTable: Int) throws -> StatusReport {
        var tally = QueueTally()
        var sampled: [Int] = []
        var samples: [PendingOperation] = []
        let rows = try Row.fetchCursor(db, sql: queueSQL + " ORDER BY o.seq")
        while let row = try rows.next() {
            let position = tally.position(of: row[1])
            if position == sampled.count { sampled.append(0) }
            let kindText: String = row[3]
            guard let kind = OperationKind(rawValue: kindText) else { throw damagedOperation(row[0]) }
            tally.tables[position].count(kind)
            if sampled[position] < samplesPerTable {
                sampled[position] += 1
                samples.append(try pendingOperation(row))
            }
        }
        let errors = try Row.fetchAll(
            db,
            sql: """
                SELECT o.tbl, count(*) FROM errors e JOIN operations o ON o.seq = e.operation_seq GROUP BY o.tbl
                """)
        for row in errors {
            if let position = tally.existingPosition(of: row[0]) { tally.tables[position].errors = row[1] }
        }
        if !errors.isEmpty {
            for index in samples.indices {
                guard
                    let error = try Row.fetchOne(
                        db, sql: "SELECT id, http_status, message FROM errors WHERE operation_seq = ?", arguments: [samples[index].seq])
                else { continue }
                samples[index].error = PendingOperation.ErrorSummary(id: error[0], httpStatus: error[1], message: error[2])
            }
        }
        return StatusReport(
            storeDirectory: directory, remote: remote, tables: tally.byName, samples: samples,
            savedQueries: try savedQueries(db))
    }
}

/// The counts of a queue read in queue order, a `TableStatus` per table. Queues come in runs of
/// one table, so the table's counts are looked up only where a run ends.
struct QueueTally {
    var tables: [TableStatus] = []
    private var positions: [String: Int] = [:]
    private var current = -1

    /// Where `table`'s counts are in `tables`, added when it is new.
    mutating func position(of table: String) -> Int {
        if current >= 0, tables[current].table == table { return current }
        if let position = positions[table] {
            current = position
        } else {
            current = tables.count
            positions[table] = current
            tables.append(TableStatus(table: table))
        }
        return current
    }

    /// Where `table`'s counts are, nil when it has none.
    func existingPosition(of table: String) -> Int? { positions[table] }

    /// The tables by name, as reports list them.
    var byName: [TableStatus] { tables.sorted { $0.table < $1.table } }
}

/// One queued operation as `LocalStore.queuedItems` hands it over: valid only during the call.
package struct QueuedItem {
    package let kind: OperationKind
    /// Whether its push failed and the error is unsettled.
    package let failed: Bool
    /// The table's name and the item's id, as UTF-8.
    package let table: UnsafeBufferPointer<UInt8>
    package let itemID: UnsafeBufferPointer<UInt8>

    /// The kind the store's text names (`OperationKind`'s raw values), nil for another.
    fileprivate static func kind(_ text: UnsafeBufferPointer<UInt8>) -> OperationKind? {
        if text.elementsEqual("insert".utf8) { return .insert }
        if text.elementsEqual("update".utf8) { return .update }
        if text.elementsEqual("delete".utf8) { return .delete }
        return nil
    }

    /// Whether the text names an `OperationState`.
    fileprivate static func isState(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        text.elementsEqual("pending".utf8) || text.elementsEqual("inflight".utf8)
    }
}
