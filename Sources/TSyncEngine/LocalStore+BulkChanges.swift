import Foundation
import GRDB
import TSyncModel
import TSyncQuery
import TSyncSQLite

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
        let number = Self.numbering(objects.count)
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
        let schema = try schema(of: table)
        return try write { db in
            try StoreRows.registerTable(db, table)
            try FieldOrder.remember(db, table: table, fieldOrder)
            var upserts = Upserts(table: table, count: records.count, queuedAt: queuedAt)
            upserts.schema = schema
            for (offset, record) in records.enumerated() {
                try upserts.apply(db, record, offset: offset, store: self)
            }
            return upserts.result
        }
    }

    /// Upserts `records` (`NewRecords`, read with `requiringIDs`) as `upsert(table:objects:)`
    /// does, with the same result and the same store after it. Records in the store's form (ids
    /// and bodies) take a shorter way: the stored bodies of a chunk are read with one statement,
    /// a body equal byte for byte to the stored one is unchanged without decoding either, and the
    /// new ids go in as `insert` puts them, many rows a statement. Only a record whose body
    /// differs goes the general way (decode, merge, compare). Ids given twice go the general way.
    package func upsert(table: String, records: NewRecords) throws(TSyncError) -> UpsertResult {
        switch records.form {
        case .objects(let objects): return try upsert(table: table, objects: objects, fieldOrder: records.fieldOrder)
        case .prepared(let prepared):
            try Identifiers.validateTableName(table)
            var ids = Set<[UInt8]>(minimumCapacity: prepared.count)  // bytes, as `Upserts.seen`
            // Ids given twice, or a table with a schema (each record checked as it merges), go the general way.
            let general = try schema(of: table) != nil
            for record in prepared where general || !ids.insert(Array(record.id.utf8)).inserted {
                return try upsert(
                    table: table,
                    objects: try prepared.map { record throws(TSyncError) in
                        var object = try StoredJSON.decodeObject(record.body, what: "record")
                        object["id"] = .string(record.id)
                        return object
                    }, fieldOrder: records.fieldOrder)
            }
            return try upsert(table: table, unique: prepared, fieldOrder: records.fieldOrder)
        }
    }

    /// `upsert(table:records:)` of records in the store's form whose ids are all different.
    private func upsert(table: String, unique prepared: [(id: String, body: String)], fieldOrder: [String]) throws(TSyncError)
        -> UpsertResult
    {
        let number = Self.numbering(prepared.count)
        let queuedAt = Timestamp.now().iso8601
        return try write { db in
            let cacheSize = try Self.bulkWriteSettings(db)
            defer { Self.restoreWriteSettings(db, cacheSize: cacheSize) }
            try StoreRows.registerTable(db, table)
            try FieldOrder.remember(db, table: table, fieldOrder)
            // As for `insert`: only a pending delete can block the insert of an id that is not in
            // `records`, so a table without one needs no look-up per new record.
            let tableHasDeletes =
                try Bool.fetchOne(
                    db, sql: "SELECT EXISTS (SELECT 1 FROM operations WHERE tbl = ? AND kind = 'delete')",
                    arguments: [table]) ?? false
            // Into a table without records (a new store's), every id is new: nothing to look up.
            let tableHasRecords =
                try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM records WHERE tbl = ?)", arguments: [table]) ?? true
            var upserts = Upserts(table: table, count: prepared.count, queuedAt: queuedAt)
            var new: [(id: String, body: String)] = []
            new.reserveCapacity(Self.insertChunkSize)
            func flush(_ new: inout [(id: String, body: String)]) throws {
                guard !new.isEmpty else { return }
                try insertRows(db, table: table, new[...], queuedAt: queuedAt)
                new.removeAll(keepingCapacity: true)
            }
            var chunkStart = 0
            while chunkStart < prepared.count {
                let chunk = chunkStart..<min(chunkStart + Self.insertChunkSize, prepared.count)
                chunkStart = chunk.upperBound
                let stored = tableHasRecords ? try StoreRows.storedBodies(db, table: table, ids: prepared[chunk].lazy.map(\.id)) : [:]
                for offset in chunk {
                    let record = prepared[offset]
                    guard let body = stored[Array(record.id.utf8)] else {
                        if tableHasDeletes, let newest = try StoreRows.newestOperation(db, table: table, id: record.id) {
                            do {
                                _ = try QueueCollapse.outcome(
                                    newest: newest.kind, inFlight: newest.state == .inflight, new: .insert, table: table,
                                    id: record.id)
                            } catch let error as TSyncError {
                                throw number(error, offset)
                            }
                        }
                        new.append(record)
                        upserts.result.inserted.append(record.id)
                        continue
                    }
                    if body.sameBytes(as: record.body) {
                        upserts.result.unchanged.append(record.id)
                        continue
                    }
                    // The queue keeps input order: the inserts before this record go first.
                    try flush(&new)
                    let fields = try StoredJSON.decodeObject(record.body, what: "record \(table)/\(record.id)")
                    try upserts.apply(db, TSyncModel.Record(id: record.id, fields: fields), offset: offset, store: self)
                }
                try flush(&new)
            }
            return upserts.result
        }
    }

    /// "record N: " before an error of a batch's Nth record; nothing for a single record.
    static func numbering(_ count: Int) -> (TSyncError, Int) -> TSyncError {
        { error, offset in count > 1 ? error.prefixed("record \(offset + 1): ") : error }
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
        let schema = try schema(of: table)
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
                    try schema?.check(after.fields, table: table, id: before.id)
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

/// Upsert's general way, one record at a time in input order, and what the upsert did so far.
private struct Upserts {
    enum Outcome {
        case inserted, updated, unchanged
    }

    let table: String
    /// Records in the input: an error names its record when there are several.
    let count: Int
    let queuedAt: String
    var result = UpsertResult()
    /// The table's schema: each record is checked as it would be stored.
    var schema: RecordSchema?
    /// What each id given so far did, by its bytes: Swift would count "é" and "e\u{301}" as one id.
    private var outcomes: [[UInt8]: Outcome] = [:]

    init(table: String, count: Int, queuedAt: String) {
        self.table = table
        self.count = count
        self.queuedAt = queuedAt
    }

    /// Inserts `record`, or merges its fields into the stored one, queueing nothing when they
    /// would not change it. An id given again counts once, where it first appeared: as inserted
    /// if it was, else as updated once any of its records changed something.
    mutating func apply(_ db: Database, _ record: TSyncModel.Record, offset: Int, store: LocalStore) throws {
        let key = Array(record.id.utf8)
        let earlier = outcomes[key]
        guard let before = try StoreRows.fetchRecord(db, table: table, id: record.id) else {
            if let newest = try StoreRows.newestOperation(db, table: table, id: record.id) {
                let number = LocalStore.numbering(count)
                do throws(TSyncError) {
                    _ = try QueueCollapse.outcome(
                        newest: newest.kind, inFlight: newest.state == .inflight, new: .insert, table: table, id: record.id)
                } catch {
                    throw number(error, offset)
                }
            }
            try check(record.fields, record.id, offset: offset)
            try store.insertRows(db, table: table, [(record.id, StoredJSON.encode(record.fields))][...], queuedAt: queuedAt)
            result.inserted.append(record.id)
            outcomes[key] = .inserted
            return
        }
        var after = before
        after.fields.merge(record.fields) { _, new in new }
        guard after.fields != before.fields else {
            if earlier == nil {
                result.unchanged.append(record.id)
                outcomes[key] = .unchanged
            }
            return
        }
        try check(after.fields, record.id, offset: offset)
        try store.enqueue(db, .update, table: table, current: before)
        try db.cachedStatement(sql: "UPDATE records SET body = ? WHERE tbl = ? AND id = ?")
            .execute(arguments: [StoredJSON.encode(after.fields), table, record.id])
        switch earlier {
        case nil: break
        case .unchanged?: result.unchanged.removeAll { $0.utf8.elementsEqual(key) }
        case .inserted?, .updated?: return
        }
        result.updated.append(record.id)
        outcomes[key] = .updated
    }

    private func check(_ fields: [String: JSONValue], _ id: String, offset: Int) throws {
        guard let schema else { return }
        do throws(TSyncError) {
            try schema.check(fields, table: table, id: id)
        } catch {
            throw LocalStore.numbering(count)(error, offset)
        }
    }
}

extension StoreRows {
    /// The stored bodies of those of `ids` that `table` holds, by the id's bytes.
    static func storedBodies(_ db: Database, table: String, ids: some Collection<String>) throws -> [[UInt8]: String] {
        let statement = try db.cachedStatement(
            sql: ids.count == LocalStore.insertChunkSize ? bodiesOfAChunkSQL : bodiesSQL(ids.count))
        var values = DirectBindings(statement)
        try values.bind(table)
        for id in ids { try values.bind(id) }
        var bodies: [[UInt8]: String] = [:]
        let rows = try Row.fetchCursor(statement)
        while let row = try rows.next() {
            let id: String = row[0]
            bodies[Array(id.utf8)] = row[1]
        }
        return bodies
    }

    private static func bodiesSQL(_ count: Int) -> String {
        "SELECT id, body FROM records WHERE tbl = ? AND id IN (" + Array(repeating: "?", count: count).joined(separator: ", ") + ")"
    }

    /// Made once: building it for every chunk was a cost of its own, as for `insertRows`.
    private static let bodiesOfAChunkSQL = bodiesSQL(LocalStore.insertChunkSize)
}
