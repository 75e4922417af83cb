import GRDB
import GRDBSQLite
import TSyncModel
import TSyncSQLite

/// Local changes: each writes the working copy and the operation queue in one transaction,
/// applying the collapse rules of `QueueCollapse` and capturing the item's base on its first change.
extension LocalStore {
    /// Inserts new records and queues an insert for each, all or nothing.
    ///
    /// Server properties in the objects are ignored (see `RecordInput`); a missing id is generated
    /// (a lowercase UUID). `fieldOrder`: the fields in the order the input gave them, which
    /// the store keeps for `query --csv` (`FieldOrder`).
    /// - Returns: the ids, in input order.
    @discardableResult
    public func insert(table: String, objects: [[String: JSONValue]], fieldOrder: [String] = []) throws(TSyncError) -> [String] {
        try Identifiers.validateTableName(table)
        // In a batch, an error names the record by its position in the input.
        let number = { (error: TSyncError, offset: Int) -> TSyncError in
            objects.count > 1 ? error.prefixed("record \(offset + 1): ") : error
        }
        // Validate and serialize before taking the write lock: other writers wait less.
        var prepared: [(id: String, body: String)] = []
        prepared.reserveCapacity(objects.count)
        for (offset, object) in objects.enumerated() {
            do {
                let record = try RecordInput.newRecord(object)
                prepared.append((record.id, StoredJSON.encode(record.fields)))
            } catch {
                throw number(error, offset)
            }
        }
        return try insert(table: table, prepared: prepared, fieldOrder: fieldOrder)
    }

    /// Inserts new records as `insert(table:objects:)` does, read from `records` (`NewRecords`).
    package func insert(table: String, records: NewRecords) throws(TSyncError) -> [String] {
        switch records.form {
        case .objects(let objects): return try insert(table: table, objects: objects, fieldOrder: records.fieldOrder)
        case .prepared(let prepared):
            try Identifiers.validateTableName(table)
            return try insert(table: table, prepared: prepared, fieldOrder: records.fieldOrder)
        }
    }

    /// Inserts the records of NDJSON, a JSON array (`csv` false) or CSV read from `source` as
    /// `insert(table:records:)` does, a batch at a time in one transaction, so memory stays flat
    /// however long the input; `inserted` gets each id in input order (before the commit).
    /// Input is read inside the transaction (on a thread of its own, `RecordsAhead`): other
    /// writers wait for it.
    ///
    /// Nil: nothing was inserted (rolled back), and the caller reads the whole input the general
    /// way (`NewRecords`, `insert(table:records:)`), which words any error exactly as it always has:
    /// the stream leaves to it an empty input, anything the fast readers are not sure of, and every
    /// failure (an invalid record, an existing id, a busy store).
    package func insert(
        table: String, streaming source: any ByteSource, csv: Bool, inserted: (String) -> Void
    ) -> Int? {
        guard (try? Identifiers.validateTableName(table)) != nil else { return nil }
        // A table with a schema checks each record the general way.
        do {
            if try schema(of: table) != nil { return nil }
        } catch {
            return nil
        }
        // Read ahead before taking the write lock, as an insert did when it held its input: an
        // input of up to this many records is read whole, and other writers wait only for its
        // writes. Beyond it, the reader reads on while the transaction writes.
        let reader = RecordsAhead(StreamedRecords(source, format: csv ? .csv : .json), limit: Self.readAhead)
        reader.start()
        defer { reader.stop() }
        guard reader.readAhead() else { return nil }
        let queuedAt = Timestamp.now().iso8601
        return try? write { db -> Int in
            let cacheSize = try Self.bulkWriteSettings(db)
            defer { Self.restoreWriteSettings(db, cacheSize: cacheSize) }
            try StoreRows.registerTable(db, table)
            let tableHasDeletes =
                try Bool.fetchOne(
                    db, sql: "SELECT EXISTS (SELECT 1 FROM operations WHERE tbl = ? AND kind = 'delete')",
                    arguments: [table]) ?? false
            var count = 0
            reading: while true {
                let batch: [(id: String, body: String)]
                switch reader.next() {
                case .batch(let next): batch = next
                case .end: break reading
                case .declined: throw StreamDeclined()
                }
                if tableHasDeletes {
                    for record in batch {
                        guard let newest = try StoreRows.newestOperation(db, table: table, id: record.id) else { continue }
                        _ = try QueueCollapse.outcome(
                            newest: newest.kind, inFlight: newest.state == .inflight, new: .insert, table: table, id: record.id)
                    }
                }
                var chunkStart = 0
                while chunkStart < batch.count {
                    let chunk = batch[chunkStart..<min(chunkStart + Self.insertChunkSize, batch.count)]
                    chunkStart = chunk.endIndex
                    try insertRows(db, table: table, chunk, queuedAt: queuedAt, rollingBack: true)
                }
                for record in batch { inserted(record.id) }
                count += batch.count
            }
            // What an empty input means is the general path's to say.
            guard count > 0 else { throw StreamDeclined() }
            try FieldOrder.remember(db, table: table, reader.fieldOrder)
            return count
        }
    }

    /// For a transaction that writes many rows (a streamed `insert`, `upsert`), until
    /// `restoreWriteSettings`. SQLite's default page cache (2 MB) spills pages the transaction
    /// writes again: each page reached the WAL about twice; 16 MB holds the four B-trees' working
    /// set. And the rows written hold only the store's own literals (`kind` and `state` of
    /// `operations`), which its CHECKs allow; SQLite checks `kind IN (...)` through a temporary
    /// index it builds and clears for every row, an eighth of an insert's work.
    /// - Returns: the cache size to restore.
    static func bulkWriteSettings(_ db: Database) throws -> Int {
        let cacheSize = try Int.fetchOne(db, sql: "PRAGMA cache_size") ?? -2000
        try db.execute(sql: "PRAGMA cache_size = -16384")
        try db.execute(sql: "PRAGMA ignore_check_constraints = ON")
        return cacheSize
    }

    /// The settings before `bulkWriteSettings` again.
    static func restoreWriteSettings(_ db: Database, cacheSize: Int) {
        try? db.execute(sql: "PRAGMA ignore_check_constraints = OFF")
        try? db.execute(sql: "PRAGMA cache_size = \(cacheSize)")
    }

    /// What a streamed insert reads before it takes the write lock, at most, and how far its
    /// reader may run ahead of the writes after (`RecordsAhead`).
    static let readAhead = (records: 16_384, bytes: 8 << 20)

    /// Rolls back a streamed insert the general path is to redo.
    private struct StreamDeclined: Error {}

    /// Inserts records already validated and in the store's form: ids and bodies.
    private func insert(table: String, prepared: [(id: String, body: String)], fieldOrder: [String]) throws(TSyncError)
        -> [String]
    {
        let number = { (error: TSyncError, offset: Int) -> TSyncError in
            prepared.count > 1 ? error.prefixed("record \(offset + 1): ") : error
        }
        if let schema = try schema(of: table) {
            for (offset, record) in prepared.enumerated() {
                do {
                    try schema.check(try StoredJSON.decodeObject(record.body, what: "record"), table: table, id: record.id)
                } catch {
                    throw number(error, offset)
                }
            }
        }
        let queuedAt = Timestamp.now().iso8601
        try write { db in
            try StoreRows.registerTable(db, table)
            // Only a pending delete can block an insert of an id that is not in `records`; when the
            // table has none, the primary key alone decides and a bulk insert skips a lookup per record.
            let tableHasDeletes =
                try Bool.fetchOne(
                    db, sql: "SELECT EXISTS (SELECT 1 FROM operations WHERE tbl = ? AND kind = 'delete')",
                    arguments: [table]) ?? false
            var chunkStart = 0
            while chunkStart < prepared.count {
                let chunk = prepared.indices[chunkStart..<min(chunkStart + Self.insertChunkSize, prepared.count)]
                chunkStart = chunk.upperBound
                if tableHasDeletes {
                    for offset in chunk {
                        guard let newest = try StoreRows.newestOperation(db, table: table, id: prepared[offset].id)
                        else { continue }
                        do {
                            _ = try QueueCollapse.outcome(
                                newest: newest.kind, inFlight: newest.state == .inflight, new: .insert, table: table,
                                id: prepared[offset].id)
                        } catch let error as TSyncError {
                            throw number(error, offset)
                        }
                    }
                }
                do {
                    try insertRows(db, table: table, prepared[chunk], queuedAt: queuedAt)
                } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                    // Some id exists. The failed statement changed nothing: insert this chunk row by
                    // row to name the record.
                    for offset in chunk {
                        do {
                            try insertRows(db, table: table, prepared[offset...offset], queuedAt: queuedAt)
                        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                            throw number(try duplicateError(db, table: table, id: prepared[offset].id), offset)
                        }
                    }
                }
            }
            try FieldOrder.remember(db, table: table, fieldOrder)
        }
        return prepared.map(\.id)
    }

    /// Merges `fields` into the record (each field replaces the field of that name; `null` sets it
    /// to null; nested objects are replaced whole, as the server's PATCH does) and queues an update.
    /// - Returns: the record after the change.
    @discardableResult
    public func update(table: String, id: String, fields: [String: JSONValue]) throws(TSyncError) -> TSyncModel.Record {
        try Identifiers.validateTableName(table)
        try Identifiers.validateRecordID(id)
        let patch = try RecordInput.patch(fields, id: id)
        let schema = try schema(of: table)
        return try write { db in
            guard let before = try StoreRows.fetchRecord(db, table: table, id: id) else {
                throw try StoreRows.missingRecordError(db, table: table, id: id, change: .update)
            }
            var after = before
            after.fields.merge(patch) { _, new in new }
            try schema?.check(after.fields, table: table, id: id)
            try enqueue(db, .update, table: table, current: before)
            try db.cachedStatement(sql: "UPDATE records SET body = ? WHERE tbl = ? AND id = ?")
                .execute(arguments: [StoredJSON.encode(after.fields), table, id])
            return after
        }
    }

    /// Deletes records and queues a delete for each (or cancels a pending insert), all or nothing.
    /// Repeated ids count once. With `dryRun` every id is checked the same way and nothing
    /// changes (the transaction is rolled back).
    public func delete(table: String, ids: [String], dryRun: Bool = false) throws(TSyncError) {
        try Identifiers.validateTableName(table)
        for id in ids { try Identifiers.validateRecordID(id) }
        var seen = Set<[UInt8]>()  // bytes: Swift would count "é" and "e\u{301}" as one id
        let unique = ids.filter { seen.insert(Array($0.utf8)).inserted }
        try write { db in
            try db.inSavepoint {
                for id in unique {
                    guard let record = try StoreRows.fetchRecord(db, table: table, id: id) else {
                        throw try StoreRows.missingRecordError(db, table: table, id: id, change: .delete)
                    }
                    try enqueue(db, .delete, table: table, current: record)
                    try StoreRows.deleteRecord(db, table: table, id: id)
                }
                return dryRun ? .rollback : .commit
            }
        }
    }

    /// Records per INSERT statement in a bulk insert: one statement per row made statement
    /// overhead the largest cost of inserting 100,000 records.
    static let insertChunkSize = 64

    /// Inserts new records and their insert operations, several rows per statement. With
    /// `rollingBack`, a statement that breaks a constraint rolls the whole transaction back
    /// (`INSERT OR ROLLBACK`) instead of undoing itself alone: SQLite then keeps no statement
    /// journal, which for a bulk insert was a temporary file written a page at a time, about as
    /// many pages as the insert itself.
    func insertRows(
        _ db: Database, table: String, _ rows: ArraySlice<(id: String, body: String)>, queuedAt: String,
        rollingBack: Bool = false
    ) throws {
        let sql = rows.count == Self.insertChunkSize ? Self.chunkSQL[rollingBack ? 1 : 0] : Self.insertSQL(rows.count, rollingBack)
        // The chunk's texts laid end to end and bound where they lie, while both statements run.
        var texts: [UInt8] = []
        texts.reserveCapacity(rows.reduce(table.utf8.count + queuedAt.utf8.count) { $0 + $1.id.utf8.count + $1.body.utf8.count })
        texts.append(contentsOf: table.utf8)
        texts.append(contentsOf: queuedAt.utf8)
        for row in rows {
            texts.append(contentsOf: row.id.utf8)
            texts.append(contentsOf: row.body.utf8)
        }
        let insertRecords = try db.cachedStatement(sql: sql.records)
        let insertOperations = try db.cachedStatement(sql: sql.operations)
        try texts.withUnsafeBufferPointer { texts in
            // No statement keeps an address into `texts` once they end, whatever throws.
            defer {
                sqlite3_clear_bindings(insertRecords.sqliteStatement)
                sqlite3_clear_bindings(insertOperations.sqliteStatement)
            }
            let tableText = UnsafeBufferPointer(rebasing: texts[0..<table.utf8.count])
            let queuedAtText = UnsafeBufferPointer(rebasing: texts[tableText.count..<tableText.count + queuedAt.utf8.count])
            var records = DirectBindings(insertRecords)
            var operations = DirectBindings(insertOperations)
            var offset = tableText.count + queuedAtText.count
            for row in rows {
                let id = UnsafeBufferPointer(rebasing: texts[offset..<offset + row.id.utf8.count])
                offset += id.count
                let body = UnsafeBufferPointer(rebasing: texts[offset..<offset + row.body.utf8.count])
                offset += body.count
                try records.bind(unowned: tableText)
                try records.bind(unowned: id)
                try records.bind(unowned: body)
                try operations.bind(unowned: tableText)
                try operations.bind(unowned: id)
                try operations.bind(unowned: queuedAtText)
            }
            try insertRecords.execute()
            try insertOperations.execute()
        }
    }

    /// The statements of `insertRows` for `count` rows: made once for a whole chunk (plain, then
    /// rolling back), as building them for every 64 records was a cost of its own.
    private static let chunkSQL = [insertSQL(insertChunkSize, false), insertSQL(insertChunkSize, true)]

    private static func insertSQL(_ count: Int, _ rollingBack: Bool) -> (records: String, operations: String) {
        let insert = rollingBack ? "INSERT OR ROLLBACK INTO" : "INSERT INTO"
        return (
            "\(insert) records (tbl, id, body) VALUES " + Array(repeating: "(?, ?, ?)", count: count).joined(separator: ", "),
            "\(insert) operations (tbl, item_id, queued_at, kind) VALUES "
                + Array(repeating: "(?, ?, ?, 'insert')", count: count).joined(separator: ", ")
        )
    }

    /// Queues `kind` for an item whose record is `current` (before the change), collapsing into the
    /// item's pending operation where docs/DESIGN.md §1 says so.
    func enqueue(_ db: Database, _ kind: OperationKind, table: String, current: TSyncModel.Record) throws {
        let newest = try StoreRows.newestOperation(db, table: table, id: current.id)
        let outcome = try QueueCollapse.outcome(
            newest: newest?.kind, inFlight: newest?.state == .inflight, new: kind, table: table, id: current.id)
        // A delete carries the item it deleted: the record is gone by push time.
        let deletedItem = kind == .delete ? StoredJSON.encode(current.wireObject) : nil
        switch outcome {
        case .append(let appended):
            // The first change of an item that came from the server: remember that copy as the base.
            if newest == nil, current.system.version != nil {
                try StoreRows.saveBase(db, table: table, id: current.id, item: current.wireObject)
            }
            try db.cachedStatement(
                sql: "INSERT INTO operations (tbl, item_id, kind, item, queued_at) VALUES (?, ?, ?, ?, ?)"
            ).execute(arguments: [table, current.id, appended.rawValue, deletedItem, Timestamp.now().iso8601])
        case .keep(let kept):
            guard let newest else { return }
            try db.execute(
                sql: "UPDATE operations SET kind = ?, item = ? WHERE seq = ?",
                arguments: [kept.rawValue, deletedItem, newest.seq])
        case .cancel:
            guard let newest else { return }
            try db.execute(sql: "DELETE FROM operations WHERE seq = ?", arguments: [newest.seq])
            try StoreRows.dropBaseIfIdle(db, table: table, id: current.id)
        }
    }

    /// Why an insert hit an existing id: the collapse rule it breaks, or a plain duplicate.
    private func duplicateError(_ db: Database, table: String, id: String) throws -> TSyncError {
        if let newest = try StoreRows.newestOperation(db, table: table, id: id) {
            do {
                _ = try QueueCollapse.outcome(
                    newest: newest.kind, inFlight: false, new: .insert, table: table, id: id)
            } catch {
                return error
            }
        }
        return TSyncError(.invalidInput, "\(table)/\(id) already exists", remedy: .updateInstead)
    }
}
