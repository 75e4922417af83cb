import GRDB
import TSyncModel

/// Whole-item steps: the base an item's pending change was made against, and ending every local
/// change of an item at once (`resolve --theirs` / `--discard`).
extension LocalStore {
    /// The last server copy of an item with a pending change; nil for a new item or an item
    /// without pending changes.
    package func base(table: String, id: String) throws(TSyncError) -> TSyncModel.Record? {
        try read { db in
            try StoreRows.fetchBase(db, table: table, id: id).map { object throws in try TSyncModel.Record(wire: object) }
        }
    }

    /// Ends every local change of an item: its operations (and their errors) leave the queue, its
    /// base is dropped, and the local item becomes `record` — or is removed when `record` is nil.
    /// `resolve --theirs` passes the server's copy; `resolve --discard` passes the base.
    package func resetItem(table: String, id: String, to record: TSyncModel.Record?) throws(TSyncError) {
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
        try db.cachedStatement(sql: "DELETE FROM operations WHERE tbl = ? AND item_id = ?").execute(arguments: [table, id])
        try db.cachedStatement(sql: "DELETE FROM bases WHERE tbl = ? AND id = ?").execute(arguments: [table, id])
        try StoreRows.dropSkippedCopy(db, table: table, id: id)
        if let record, !record.system.deleted {
            try StoreRows.upsertRecord(db, table: table, record: record)
        } else {
            try StoreRows.deleteRecord(db, table: table, id: id)
        }
    }
}
