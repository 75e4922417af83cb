import GRDB
import TSyncModel

/// An operation taken out of the queue by a push, with what to send.
public struct OutgoingOperation: Sendable, Equatable {
    public var operation: PendingOperation
    /// User fields and `id` (no server properties): the body of a POST or PATCH; for a delete, the
    /// item that was deleted.
    public var item: [String: JSONValue]
    /// The version to send in `If-Match`: the base's (the last server copy the client saw), else
    /// the item's own; nil for an item the server has not seen.
    public var version: String?
    /// An update whose base is a copy the server deleted (`resolve --ours` against a server-side
    /// delete): the server copy is undeleted (`If-Match` the deleted version) before the update,
    /// since the protocol answers 404 to an update of a deleted item.
    public var restoresDeleted = false
    /// Claimed while already in flight: an earlier push sent it and never learned the answer, so
    /// the server may have applied it whatever this push does.
    public var sentBefore = false

    public init(
        operation: PendingOperation, item: [String: JSONValue], version: String?, restoresDeleted: Bool = false,
        sentBefore: Bool = false
    ) {
        self.operation = operation
        self.item = item
        self.version = version
        self.restoresDeleted = restoresDeleted
        self.sentBefore = sentBefore
    }
}

/// What `applyServerPage` did.
public struct PageResult: Sendable, Equatable {
    /// Records inserted or replaced.
    public var upserted = 0
    /// Local records removed because the server marked them deleted.
    public var removed = 0
    /// Records left alone because the item has a pending local operation.
    public var skipped = 0
}

/// Store-side primitives of push and pull. The network code lives above; each method here is one
/// transaction, so a crash between two steps loses nothing and never half-applies a page.
extension LocalStore {
    /// Marks a pending operation in flight and returns what to send. From now until
    /// `completeOperation`, `recordError` or `abortPush`, new changes to the item queue after it.
    public func beginPush(seq: Int64) throws(TSyncError) -> OutgoingOperation {
        try write { db in
            guard let operation = try StoreRows.operation(db, seq: seq) else {
                throw TSyncError.invalidInput("no queued operation \(seq)")
            }
            let table = operation.table
            let id = operation.itemID
            let wire: [String: JSONValue]
            switch operation.kind {
            case .insert, .update:
                guard let record = try StoreRows.fetchRecord(db, table: table, id: id) else {
                    throw TSyncError.failure("the store lost the record of operation \(seq) (\(table)/\(id))")
                }
                wire = record.wireObject
                // Keep the item as sent: if the push dies, the error can still show it.
                try db.execute(
                    sql: "UPDATE operations SET state = 'inflight', item = ? WHERE seq = ?",
                    arguments: [StoredJSON.encode(wire), seq])
            case .delete:
                guard let text = try String.fetchOne(db, sql: "SELECT item FROM operations WHERE seq = ?", arguments: [seq])
                else { throw TSyncError.failure("the delete operation \(seq) lost its item") }
                wire = try StoredJSON.decodeObject(text, what: "operation \(seq)")
                try db.execute(sql: "UPDATE operations SET state = 'inflight' WHERE seq = ?", arguments: [seq])
            }
            let base = try StoreRows.fetchBase(db, table: table, id: id)
            var item = wire
            for name in RecordInput.serverProperties { item.removeValue(forKey: name) }
            var sent = operation
            sent.state = .inflight
            return OutgoingOperation(
                operation: sent, item: item, version: base?["version"]?.stringValue ?? wire["version"]?.stringValue)
        }
    }

    /// Puts an in-flight operation back to pending, unchanged (the server was not reached).
    public func abortPush(seq: Int64) throws(TSyncError) {
        try write { db in try Self.releaseOperation(db, seq: seq) }
    }

    /// `abortPush` inside a caller's transaction (batched push).
    static func releaseOperation(_ db: Database, seq: Int64) throws {
        try db.execute(
            sql: """
                UPDATE operations SET state = 'pending', item = CASE WHEN kind = 'delete' THEN item ELSE NULL END
                WHERE seq = ?
                """,
            arguments: [seq])
    }

    /// The server accepted an operation. The operation (and its error) leaves the queue. The
    /// server's record (nil for a 204 answer) replaces the local item, unless a newer local
    /// change to the item is queued: then the local fields are kept, but the item takes the
    /// server's version and timestamps, and that copy becomes the base the newer change is
    /// pushed against.
    public func completeOperation(seq: Int64, serverRecord: TSyncModel.Record?) throws(TSyncError) {
        try write { db in try Self.completeOperation(db, seq: seq, serverRecord: serverRecord) }
    }

    /// `completeOperation` inside a caller's transaction (batched push).
    static func completeOperation(_ db: Database, seq: Int64, serverRecord: TSyncModel.Record?) throws {
        guard let operation = try StoreRows.operation(db, seq: seq) else {
            throw TSyncError.invalidInput("no queued operation \(seq)")
        }
        let table = operation.table
        let id = operation.itemID
        try db.execute(sql: "DELETE FROM operations WHERE seq = ?", arguments: [seq])
        let newerChange = try StoreRows.hasOperations(db, table: table, id: id)
        guard let server = serverRecord else {
            try StoreRows.dropBaseIfIdle(db, table: table, id: id)
            return
        }
        if newerChange {
            try db.execute(
                sql: "UPDATE records SET created_at = ?, updated_at = ?, version = ? WHERE tbl = ? AND id = ?",
                arguments: [
                    server.system.createdAt?.iso8601, server.system.updatedAt?.iso8601, server.system.version, table, id,
                ])
            try StoreRows.saveBase(db, table: table, id: id, item: server.wireObject)
        } else {
            if server.system.deleted {
                try StoreRows.deleteRecord(db, table: table, id: id)
            } else {
                try StoreRows.upsertRecord(db, table: table, record: server)
            }
            try StoreRows.dropBaseIfIdle(db, table: table, id: id)
        }
    }

    /// Ends every local change of an item: its operations (and their errors) leave the queue, its
    /// base is dropped, and the local item becomes `record` — or is removed when `record` is nil.
    /// `resolve --theirs` passes the server's copy; `resolve --discard` passes the base.
    public func resetItem(table: String, id: String, to record: TSyncModel.Record?) throws(TSyncError) {
        try Identifiers.validateTableName(table)
        try Identifiers.validateRecordID(id)
        if let record, !record.id.utf8.elementsEqual(id.utf8) {
            throw .invalidInput("cannot reset \(table)/\(id) to a record with id \(Identifiers.quoted(record.id))")
        }
        try write { db in
            try StoreRows.requireTable(db, table)
            try Self.resetItem(db, table: table, id: id, to: record)
        }
    }

    /// `resetItem` inside a caller's transaction (`resolve`).
    static func resetItem(_ db: Database, table: String, id: String, to record: TSyncModel.Record?) throws {
        try db.execute(sql: "DELETE FROM operations WHERE tbl = ? AND item_id = ?", arguments: [table, id])
        try db.execute(sql: "DELETE FROM bases WHERE tbl = ? AND id = ?", arguments: [table, id])
        if let record, !record.system.deleted {
            try StoreRows.upsertRecord(db, table: table, record: record)
        } else {
            try StoreRows.deleteRecord(db, table: table, id: id)
        }
    }

    /// The last server copy of an item with a pending change; nil for a new item or an item
    /// without pending changes.
    public func base(table: String, id: String) throws(TSyncError) -> TSyncModel.Record? {
        try read { db in
            try StoreRows.fetchBase(db, table: table, id: id).map { object throws in try TSyncModel.Record(wire: object) }
        }
    }

    /// Replaces the base of an item with pending operations (e.g. `resolve --ours`: the server's
    /// version becomes the one the change is pushed against).
    public func setBase(table: String, id: String, to record: TSyncModel.Record) throws(TSyncError) {
        try write { db in
            guard try StoreRows.hasOperations(db, table: table, id: id) else {
                throw TSyncError.invalidInput("\(table)/\(id) has no pending operation, so it has no base")
            }
            try StoreRows.saveBase(db, table: table, id: id, item: record.wireObject)
        }
    }

    /// Applies one page of a pull in ONE transaction (DESIGN §2.5): records are upserted, records
    /// marked deleted are removed, and items with a pending local operation are left alone (their
    /// base too: the next push must still be checked against the version the user changed). When
    /// `checkpoint` is given it is saved in the same transaction, so the checkpoint never runs ahead
    /// of the records.
    @discardableResult
    public func applyServerPage(table: String, records: [TSyncModel.Record], saving query: SavedQuery? = nil) throws(TSyncError)
        -> PageResult
    {
        try Identifiers.validateTableName(table)
        return try write { db in
            try StoreRows.registerTable(db, table)
            var result = PageResult()
            for record in records {
                if try StoreRows.hasOperations(db, table: table, id: record.id) {
                    result.skipped += 1
                } else if record.system.deleted {
                    try StoreRows.deleteRecord(db, table: table, id: record.id)
                    result.removed += db.changesCount
                } else {
                    try StoreRows.upsertRecord(db, table: table, record: record)
                    result.upserted += 1
                }
            }
            if let query { try StoreRows.saveQuery(db, query) }
            return result
        }
    }
}

extension StoreRows {
    static func operation(_ db: Database, seq: Int64) throws -> PendingOperation? {
        let row = try Row.fetchOne(
            db,
            sql: """
                SELECT o.seq, o.tbl, o.item_id, o.kind, o.state, o.queued_at, e.id, e.http_status, e.message
                FROM operations o LEFT JOIN errors e ON e.operation_seq = o.seq WHERE o.seq = ?
                """,
            arguments: [seq])
        return try row.map(pendingOperation)
    }
}
