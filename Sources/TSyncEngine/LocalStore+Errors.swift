import GRDB
import TSyncModel

/// A failed operation, as the error table keeps it (the seeds' MS_TableOperationErrors).
public struct OperationError: Sendable, Equatable {
    /// The error's number, as `conflicts` shows it and `resolve ID` takes it.
    public var id: Int64
    /// The operation that failed; the error is removed with it.
    public var operationSeq: Int64
    /// The table of the item whose operation failed.
    public var table: String
    /// The id of that item.
    public var itemID: String
    /// The kind of the operation that failed.
    public var kind: OperationKind
    /// The HTTP status of the server's answer (e.g. 409, 412), nil when there was none.
    public var httpStatus: Int?
    /// What the server (or tsync) said.
    public var message: String
    /// The item as sent (wire object).
    public var sentItem: [String: JSONValue]?
    /// The server's copy of the item when the server returned one ("theirs" in a conflict).
    public var serverItem: [String: JSONValue]?
    /// When the failure was recorded.
    public var createdAt: Timestamp

    /// The error's class (`version-conflict`, `missing`, …), from its operation and status.
    public var failureClass: FailureClass { FailureClass(kind: kind, status: httpStatus ?? 0, message: message) }
    /// Its item.
    var item: ItemKey { ItemKey(table: table, id: itemID) }
}

/// What the push layer reports about a rejected operation.
package struct NewOperationError: Sendable, Equatable {
    /// The queued operation that failed.
    package var operationSeq: Int64
    /// The HTTP status of the answer; nil when there was none to read.
    package var httpStatus: Int?
    /// What the server (or tsync) said.
    package var message: String
    /// The item as it was sent, to show beside the server's copy.
    package var sentItem: [String: JSONValue]?
    /// The server's copy that came with the answer (409/412), which settling may start from.
    package var serverItem: [String: JSONValue]?

    /// An error to record for the operation `operationSeq`.
    package init(
        operationSeq: Int64, httpStatus: Int?, message: String, sentItem: [String: JSONValue]? = nil,
        serverItem: [String: JSONValue]? = nil
    ) {
        self.operationSeq = operationSeq
        self.httpStatus = httpStatus
        self.message = message
        self.sentItem = sentItem
        self.serverItem = serverItem
    }
}

extension LocalStore {
    /// Records (or replaces) the error of one operation and puts the operation back to pending, so
    /// it stays in the queue for `resolve` while the push goes on with the others. Runs inside
    /// `completeOperations`' transaction.
    static func recordError(_ db: Database, _ error: NewOperationError, at now: Timestamp) throws -> OperationError {
        try saveError(db, error, at: now)
        guard let recorded = try StoreRows.errors(db, where: "operation_seq = ?", [error.operationSeq]).first else {
            throw TSyncError.failure("the error of operation \(error.operationSeq) was not recorded")
        }
        return recorded
    }

    /// `recordError` without reading the error back (a push records thousands at once).
    static func saveError(_ db: Database, _ error: NewOperationError, at now: Timestamp) throws {
        guard
            let operation = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT tbl, item_id, kind FROM operations WHERE seq = ?"), arguments: [error.operationSeq])
        else { throw TSyncError.invalidInput("no queued operation \(error.operationSeq)") }
        try db.cachedStatement(
            sql: """
                INSERT INTO errors (operation_seq, tbl, item_id, kind, http_status, message, sent_item, server_item, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (operation_seq) DO UPDATE SET kind = excluded.kind, http_status = excluded.http_status,
                    message = excluded.message, sent_item = excluded.sent_item, server_item = excluded.server_item,
                    created_at = excluded.created_at
                """
        ).execute(
            arguments: [
                error.operationSeq, operation[0] as String, operation[1] as String, operation[2] as String,
                error.httpStatus, error.message, error.sentItem.map(StoredJSON.encode),
                error.serverItem.map(StoredJSON.encode), now.iso8601,
            ])
        try db.cachedStatement(sql: "UPDATE operations SET state = 'pending' WHERE seq = ?").execute(arguments: [error.operationSeq])
    }

    /// Sets aside the operations of `table`/`id` that are in flight (an item the server keeps
    /// failing: every push stops on it): each goes into the error table as a server error, where
    /// `resolve` settles it (`--cancel` to send it again later, `--discard`, `--theirs`, `--ours`
    /// against the server's copy), and the pushes and pulls of everything else go on (docs/DESIGN.md
    /// §7). The server may have applied the write, so the error says so; its sent item is kept.
    /// Returns the errors recorded; none in flight is bad input.
    @discardableResult
    package func park(table: String, id: String) throws(TSyncError) -> [OperationError] {
        try Identifiers.validateTableName(table)
        try Identifiers.validateRecordID(id)
        // Under the push lock: an operation a running push is sending is not parked under it.
        let lock = try PushLock(store: self)
        defer { withExtendedLifetime(lock) {} }
        return try write { db in
            try StoreRows.requireTable(db, table)
            let inFlight = try Row.fetchAll(
                db.cachedStatement(
                    sql: "SELECT seq, item FROM operations WHERE tbl = ? AND item_id = ? AND state = 'inflight' ORDER BY seq"),
                arguments: [table, id])
            guard !inFlight.isEmpty else {
                throw TSyncError.invalidInput(
                    "\(table)/\(Identifiers.quoted(id)) has no operation in flight: only an operation a push sent and could not settle can be parked"
                )
            }
            let now = Timestamp.now()
            return try inFlight.map { row in
                let sent = try (row[1] as String?).map { text throws(TSyncError) in
                    try StoredJSON.decodeObject(text, what: "the item in flight")
                }
                return try Self.recordError(
                    db,
                    NewOperationError(
                        operationSeq: row[0], httpStatus: Self.parkedStatus,
                        message:
                            "parked while in flight: the server never settled it (it may have applied it); settle it with --cancel to send it again, or --discard, --theirs or --ours",
                        sentItem: sent), at: now)
            }
        }
    }

    /// The status a parked operation's error carries: a server error (5xx, class `server-error`),
    /// which is what keeps an operation in flight, and which no conflict policy settles.
    static let parkedStatus = 500

    /// The error table in queue order, optionally of one table.
    public func operationErrors(table: String? = nil) throws(TSyncError) -> [OperationError] {
        try read { db in
            if let table { return try StoreRows.errors(db, where: "tbl = ?", [table]) }
            return try StoreRows.errors(db, where: "1", [])
        }
    }

    /// The errors of some operations (those still in the table), in queue order.
    public func operationErrors(operations seqs: [Int64]) throws(TSyncError) -> [OperationError] {
        guard !seqs.isEmpty else { return [] }
        return try read { db in
            try StoreRows.errors(
                db, where: "operation_seq IN (SELECT value FROM json_each(?))",
                [JSONSerializer.string(.array(seqs.map(JSONValue.int)))])
        }
    }

    /// The errors `resolve` selects (all, of `table`, or of `ids`), in queue order, without the
    /// items they keep (`sentItem`, `serverItem` nil): settling reads what it needs again in its
    /// transaction, and decoding every error's items was a sixth of `resolve --all`.
    package func errorsToSettle(ids: [Int64]? = nil, table: String? = nil) throws(TSyncError) -> [OperationError] {
        try read { db in
            if let table { try StoreRows.requireTable(db, table) }
            if let ids {
                return try StoreRows.errors(
                    db, where: "id IN (SELECT value FROM json_each(?))", [JSONSerializer.string(.array(ids.map(JSONValue.int)))],
                    withItems: false)
            }
            if let table { return try StoreRows.errors(db, where: "tbl = ?", [table], withItems: false) }
            return try StoreRows.errors(db, where: "1", [], withItems: false)
        }
    }

    /// One error by its id, or nil.
    public func operationError(id: Int64) throws(TSyncError) -> OperationError? {
        try read { db in try StoreRows.errors(db, where: "id = ?", [id]).first }
    }

    /// Clears an error; its operation stays queued. Returns false when there was no such error.
    @discardableResult
    package func deleteError(id: Int64) throws(TSyncError) -> Bool {
        try write { db in
            try db.cachedStatement(sql: "DELETE FROM errors WHERE id = ?").execute(arguments: [id])
            return db.changesCount > 0
        }
    }
}

extension StoreRows {
    /// The errors `condition` selects, in queue order; `withItems` false leaves their items nil.
    static func errors(_ db: Database, where condition: String, _ arguments: StatementArguments, withItems: Bool = true) throws
        -> [OperationError]
    {
        // Cached: settling reads one error at a time, and compiling the statement each time
        // (GRDB's authorizer with it) was a fifth of what settling cost.
        try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT id, operation_seq, tbl, item_id, kind, http_status, message,
                        \(withItems ? "sent_item, server_item" : "NULL, NULL"), created_at
                    FROM errors WHERE \(condition) ORDER BY operation_seq
                    """),
            arguments: arguments
        ).map { row in
            let table: String = row[2]
            let itemID: String = row[3]
            return OperationError(
                id: row[0], operationSeq: row[1], table: table, itemID: itemID,
                kind: OperationKind(rawValue: row[4]) ?? .update, httpStatus: row[5], message: row[6],
                sentItem: try (row[7] as String?).map { try StoredJSON.decodeObject($0, what: "error item") },
                serverItem: try (row[8] as String?).map { try StoredJSON.decodeObject($0, what: "error item") },
                createdAt: Timestamp(iso8601: row[9]) ?? Timestamp(millisecondsSinceEpoch: 0))
        }
    }
}
