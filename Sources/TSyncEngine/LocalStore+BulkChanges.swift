import GRDB
import TSyncModel
import TSyncQuery

/// What `upsert` did, id by id, in input order (an id given twice counts once, where it first
/// appears).
public struct UpsertResult: Sendable, Equatable {
    /// Ids that were new: inserted, an insert queued.
    public var inserted: [String] = []
    /// Existing records the given fields changed: an update queued.
    public var updated: [String] = []
    /// Existing records the fields would not change: nothing queued.
    public var unchanged: [String] = []
}

/// Changes of many records in one transaction: `upsert`, and `update`/`delete` of the records an
/// OData filter matches. All or nothing, like `insert`.
extension LocalStore {
    /// Inserts the records whose id is new and merges the fields of the others into the record
    /// as `update` does (each field replaces the field of that name; nested objects whole). A
    /// record the fields would not change queues nothing, so running the same input again is a
    /// no-op: a job that re-runs in the same store needs no "already exists" handling. Every
    /// object needs an id (without one, each run would insert a new record). Server properties in
    /// the objects are ignored. `fieldOrder` as for `insert(table:objects:fieldOrder:)`.
    public func upsert(table: String, objects: [[String: JSONValue]], fieldOrder: [String] = []) throws(TSyncError)
        -> UpsertResult
    {
        try Identifiers.validateTableName(table)
        let number = { (error: TSyncError, offset: Int) -> TSyncError in
            objects.count > 1 ? error.prefixed("record \(offset + 1): ") : error
        }
        var records: [TSyncModel.Record] = []
        records.reserveCapacity(objects.count)
        for (offset, object) in objects.enumerated() {
            guard object["id"] != nil else {
                throw number(.invalidInput("the record has no \"id\"; upsert needs one to find the record again"), offset)
            }
            do {
                records.append(try RecordInput.newRecord(object))
            } catch {
                throw number(error, offset)
            }
        }
        let queuedAt = Timestamp.now().iso8601
        return try write { db in
            try StoreRows.registerTable(db, table)
            try FieldOrder.remember(db, table: table, fieldOrder)
            var result = UpsertResult()
            var seen = Set<[UInt8]>()  // bytes: Swift would count "é" and "e\u{301}" as one id
            for (offset, record) in records.enumerated() {
                let firstTime = seen.insert(Array(record.id.utf8)).inserted
                if let before = try StoreRows.fetchRecord(db, table: table, id: record.id) {
                    var after = before
                    after.fields.merge(record.fields) { _, new in new }
                    guard after.fields != before.fields else {
                        if firstTime { result.unchanged.append(record.id) }
                        continue
                    }
                    try enqueue(db, .update, table: table, current: before)
                    try db.cachedStatement(sql: "UPDATE records SET body = ? WHERE tbl = ? AND id = ?")
                        .execute(arguments: [StoredJSON.encode(after.fields), table, record.id])
                    if firstTime || result.unchanged.contains(record.id) {
                        result.unchanged.removeAll { $0 == record.id }
                        if !result.inserted.contains(record.id) { result.updated.append(record.id) }
                    }
                } else {
                    if let newest = try StoreRows.newestOperation(db, table: table, id: record.id) {
                        do {
                            _ = try QueueCollapse.outcome(
                                newest: newest.kind, inFlight: newest.state == .inflight, new: .insert, table: table, id: record.id)
                        } catch let error as TSyncError {
                            throw number(error, offset)
                        }
                    }
                    try insertRows(db, table: table, [(record.id, StoredJSON.encode(record.fields))][...], queuedAt: queuedAt)
                    result.inserted.append(record.id)
                }
            }
            return result
        }
    }

    /// Merges `fields` into every record of `table` the OData `filter` matches, as `update` does
    /// for one, in one transaction; a record the fields would not change queues nothing. With
    /// `dryRun` nothing changes (rolled back).
    /// - Returns: the ids of the records changed (or that would be), in id order.
    public func update(table: String, filter: String, fields: [String: JSONValue], dryRun: Bool = false) throws(TSyncError)
        -> [String]
    {
        try Identifiers.validateTableName(table)
        let (sql, arguments) = try RecordQuery(filter: filter, orderBy: nil, top: nil, skip: nil, select: nil).localSQL(table: table)
        var patch = fields
        for name in RecordInput.serverProperties { patch.removeValue(forKey: name) }
        if patch["id"] != nil { throw .invalidInput("\"id\" cannot change, and a filter names many records") }
        return try write { db in
            var changed: [String] = []
            try db.inSavepoint {
                try StoreRows.requireTable(db, table)
                let matching = try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
                    try StoreRows.record(row, table: table)
                }
                for before in matching {
                    var after = before
                    after.fields.merge(patch) { _, new in new }
                    guard after.fields != before.fields else { continue }
                    try enqueue(db, .update, table: table, current: before)
                    try db.cachedStatement(sql: "UPDATE records SET body = ? WHERE tbl = ? AND id = ?")
                        .execute(arguments: [StoredJSON.encode(after.fields), table, before.id])
                    changed.append(before.id)
                }
                return dryRun ? .rollback : .commit
            }
            return changed
        }
    }

    /// Deletes every record of `table` the OData `filter` matches and queues a delete for each (or
    /// cancels a pending insert), in one transaction. With `dryRun` nothing changes.
    /// - Returns: the ids deleted (or that would be), in id order.
    public func delete(table: String, filter: String, dryRun: Bool = false) throws(TSyncError) -> [String] {
        try Identifiers.validateTableName(table)
        let (sql, arguments) = try RecordQuery(filter: filter, orderBy: nil, top: nil, skip: nil, select: nil).localSQL(table: table)
        return try write { db in
            var deleted: [String] = []
            try db.inSavepoint {
                try StoreRows.requireTable(db, table)
                for row in try Row.fetchAll(db, sql: sql, arguments: arguments) {
                    let record = try StoreRows.record(row, table: table)
                    try enqueue(db, .delete, table: table, current: record)
                    try StoreRows.deleteRecord(db, table: table, id: record.id)
                    deleted.append(record.id)
                }
                return dryRun ? .rollback : .commit
            }
            return deleted
        }
    }
}
