import GRDB
import TSyncModel

/// One record to bring back: the server's copy now, and the user fields it had at the point
/// brought back (nil: it did not exist then, or was deleted).
package struct RevertTarget: Sendable {
    package var id: String
    package var server: ServerCopy
    package var target: [String: JSONValue]?
}

/// The change `revert` or `restore` queued (or, in a dry run, would queue) for one record.
public struct RevertChange: Sendable, Equatable {
    /// What is queued.
    public enum Kind: String, Sendable {
        /// The record's fields go back (an update).
        case update
        /// A record created since goes (a delete).
        case delete
        /// A record deleted since comes back: an update the push sends as an undelete and then the update.
        case undelete
        /// A record deleted since, whose deleted copy the server no longer keeps, is created again.
        case insert
    }

    /// The record's table.
    public var table: String
    /// The record's id.
    public var id: String
    /// What is queued for it.
    public var kind: Kind
    /// Its pending changes were dropped first (`force`).
    public var discarded: Bool
}

extension LocalStore {
    /// The ids of the items of `table` with queued operations.
    package func queuedIDs(table: String) throws(TSyncError) -> [String] {
        try read { db in try String.fetchAll(db, sql: "SELECT DISTINCT item_id FROM operations WHERE tbl = ?", arguments: [table]) }
    }

    /// Queues, in one transaction, the changes that make each target's record what it was
    /// (docs/DESIGN.md §15). Each starts from the server's copy now, which becomes the local record
    /// and the change's base, so the push's `If-Match` is current: a record the server has is
    /// updated to the fields it had (a field added since is set to null: an update cannot remove
    /// a field), or deleted when it did not exist then; one the server keeps deleted is updated
    /// from that deleted copy, which push sends as an undelete and then the update (as `resolve
    /// --ours` does, docs/DESIGN.md §9); one the server no longer has is inserted. A record that is
    /// already as it was queues nothing.
    ///
    /// Items of `queued` (the ids the caller asks about) with queued operations refuse the whole
    /// change, naming them, unless `force`: their operations (and errors) are then dropped first,
    /// even one in flight, since the server's copy read now says whether it was applied.
    /// With `dryRun` the transaction is rolled back: the answer is what would be queued.
    package func revert(table: String, targets: [RevertTarget], queued: [String], force: Bool, dryRun: Bool) throws(TSyncError)
        -> [RevertChange]
    {
        try Identifiers.validateTableName(table)
        return try write { db in
            var changes: [RevertChange] = []
            try db.inSavepoint {
                try StoreRows.registerTable(db, table)
                var busy: [String] = []
                for id in queued where try StoreRows.hasOperations(db, table: table, id: id) { busy.append(id) }
                if !busy.isEmpty, !force {
                    let named = busy.prefix(10).map { "\(table)/\($0)" }.joined(separator: ", ")
                    let more = busy.count > 10 ? " and \(busy.count - 10) more" : ""
                    throw TSyncError(
                        .failure,
                        "\(busy.count == 1 ? "a record has" : "\(busy.count) records have") pending changes: \(named)\(more)",
                        remedy: .pushOrForce)
                }
                let discarded = Set(busy)
                let targeted = Set(targets.map(\.id))
                for id in busy where !targeted.contains(id) {
                    // A local change the server never saw, in a table brought back whole.
                    try Self.resetItem(db, table: table, id: id, to: nil)
                }
                for target in targets {
                    if discarded.contains(target.id) { try Self.resetItem(db, table: table, id: target.id, to: target.server.live) }
                    guard let kind = try bringBack(db, table: table, target) else { continue }
                    changes.append(RevertChange(table: table, id: target.id, kind: kind, discarded: discarded.contains(target.id)))
                }
                for id in busy where !targeted.contains(id) {
                    changes.append(RevertChange(table: table, id: id, kind: .delete, discarded: true))
                }
                return dryRun ? .rollback : .commit
            }
            return changes
        }
    }

    /// Queues the change of one target (nil when the record already is as it was).
    private func bringBack(_ db: Database, table: String, _ target: RevertTarget) throws -> RevertChange.Kind? {
        let id = target.id
        switch (target.server, target.target) {
        case (.record(let server), nil) where !server.system.deleted:
            try StoreRows.upsertRecord(db, table: table, record: server)
            try enqueue(db, .delete, table: table, current: server)
            try StoreRows.deleteRecord(db, table: table, id: id)
            return .delete
        case (_, nil):
            // Gone now as it was then; a stale local copy goes too.
            try StoreRows.deleteRecord(db, table: table, id: id)
            return nil
        case (.record(let server), let fields?):
            if !server.system.deleted, FieldChange.between(server.fields, fields).isEmpty {
                // Already as it was; the local copy becomes the server's.
                try StoreRows.upsertRecord(db, table: table, record: server)
                return nil
            }
            var live = server
            live.system.deleted = false
            try StoreRows.upsertRecord(db, table: table, record: live)
            // The base is the server's copy as it is, deleted or not: a deleted base makes the
            // push undelete first (`OutgoingOperation.restoresDeleted`).
            try enqueue(db, .update, table: table, current: server)
            var body = fields
            for name in server.fields.keys where body[name] == nil { body[name] = .null }
            try db.execute(
                sql: "UPDATE records SET body = ? WHERE tbl = ? AND id = ?", arguments: [StoredJSON.encode(body), table, id])
            return server.system.deleted ? .undelete : .update
        case (.none, let fields?):
            try StoreRows.deleteRecord(db, table: table, id: id)
            try db.execute(
                sql: "INSERT INTO records (tbl, id, body) VALUES (?, ?, ?)", arguments: [table, id, StoredJSON.encode(fields)])
            try db.execute(
                sql: "INSERT INTO operations (tbl, item_id, kind, queued_at) VALUES (?, ?, 'insert', ?)",
                arguments: [table, id, Timestamp.now().iso8601])
            return .insert
        }
    }
}
