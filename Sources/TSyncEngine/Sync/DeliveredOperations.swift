import GRDB
import TSyncModel

/// The operations pushes delivered (the `pushes` table), written in the transaction that takes
/// them off the queue, by whichever command pushed them. The queue alone cannot tell `tsync watch`
/// what became of an operation another command pushed (it is simply gone, maybe before the watch
/// ever saw it queued); this record does, so each is reported `pushed` exactly once
/// (docs/DESIGN.md §8.1). Entries are dropped after `retention`.
enum DeliveredOperations {
    /// How long an entry is kept: far longer than a watch takes between two looks.
    static let retention: Int64 = 10 * 60 * 1000

    /// One operation delivered.
    struct Entry: Sendable, Equatable {
        var id: Int64
        var table: String
        var itemID: String
        /// insert, update or delete.
        var kind: String
        /// The server's version of the record the store took: the answer's, or a newer copy a
        /// pull brought while the operation was on its way (`LocalStore.completeOperations`).
        var version: String?
    }

    /// Logs `count` operations pushed (`pushed(index)`: each with the version the store took) and
    /// drops what is older than `retention`: the oldest rows come first, so only the expired ones
    /// are read. A function of the index, not an array of pairs: the caller's answers are read
    /// where they are, not copied into pairs (which the runtime copies through generic witnesses).
    static func append(_ db: Database, count: Int, _ pushed: (Int) -> (PendingOperation, String?)) throws {
        let now = Timestamp.now().millisecondsSinceEpoch
        // Rows bound as they are, a chunk per statement: one `INSERT … SELECT` from a JSON array
        // parsed each row four times (`json_extract`), one statement per row was slower still.
        var rows = ChunkedRows(columns: 5, rows: count, bytesPerRow: 48)
        for index in 0..<count {
            let (operation, version) = pushed(index)
            rows.append(operation.table)
            rows.append(operation.itemID)
            rows.append(operation.kind.rawValue)
            rows.append(version)
            rows.append(now)
        }
        try rows.execute(db, sql: { $0 == ChunkedRows.chunkSize ? insertChunk : insertSQL($0) })
        try db.execute(
            sql: "DELETE FROM pushes WHERE id < (SELECT id FROM pushes WHERE pushed_at >= ? ORDER BY id LIMIT 1)",
            arguments: [now - retention])
    }

    private static let insertChunk = insertSQL(ChunkedRows.chunkSize)

    private static func insertSQL(_ rows: Int) -> String {
        "INSERT INTO pushes (tbl, item_id, kind, version, pushed_at) VALUES \(ChunkedRows.placeholders(rows: rows, columns: 5))"
    }

    /// The newest entry (0 when there is none).
    static func last(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT ifnull(max(id), 0) FROM pushes")) ?? 0
    }
}

extension LocalStore {
    /// The newest entry of the delivered operations now (0 when there is none): where a watch starts reading.
    func lastPush() throws(TSyncError) -> Int64 {
        try read { db in try DeliveredOperations.last(db) }
    }

    /// The entries of the delivered operations after `id` (up to `last` when given), oldest first.
    func pushes(after id: Int64, upTo last: Int64 = .max) throws(TSyncError) -> [DeliveredOperations.Entry] {
        try read { db in
            try Row.fetchAll(
                db, sql: "SELECT id, tbl, item_id, kind, version FROM pushes WHERE id > ? AND id <= ? ORDER BY id", arguments: [id, last]
            )
            .map { DeliveredOperations.Entry(id: $0[0], table: $0[1], itemID: $0[2], kind: $0[3], version: $0[4]) }
        }
    }
}
