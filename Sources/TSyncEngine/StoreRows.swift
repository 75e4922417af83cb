import GRDB
import GRDBSQLite
import TSyncModel
import TSyncSQLite

/// Small SQL helpers shared by the store's extensions. Each takes the transaction's `Database`, so
/// callers compose them inside one `read` or `write`.
enum StoreRows {
    static let recordColumns = "id, body, created_at, updated_at, version"

    /// A `records` row (columns in `recordColumns` order) as a Record.
    static func record(_ row: Row, table: String) throws -> TSyncModel.Record {
        let id: String = row[0]
        let body: String = row[1]
        let fields = try StoredJSON.decodeObject(body, what: "record \(table)/\(id)")
        let system = SystemProperties(
            createdAt: (row[2] as String?).flatMap(Timestamp.init(iso8601:)),
            updatedAt: (row[3] as String?).flatMap(Timestamp.init(iso8601:)),
            version: row[4])
        return TSyncModel.Record(id: id, fields: fields, system: system)
    }

    static func fetchRecord(_ db: Database, table: String, id: String) throws -> TSyncModel.Record? {
        let row = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT \(recordColumns) FROM records WHERE tbl = ? AND id = ?"), arguments: [table, id])
        return try row.map { try record($0, table: table) }
    }

    /// Inserts or replaces a record with the system properties it carries.
    static func upsertRecord(_ db: Database, table: String, record: TSyncModel.Record) throws {
        try upsertRecord(db, table: table, stored: StoredRecord(record))
    }

    /// The same for a record in the store's form: its body is written as it is.
    static func upsertRecord(_ db: Database, table: String, stored record: StoredRecord) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO records (tbl, id, body, created_at, updated_at, version) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (tbl, id) DO UPDATE SET body = excluded.body, created_at = excluded.created_at,
                    updated_at = excluded.updated_at, version = excluded.version
                """
        ).execute(arguments: [
            table, record.id, record.body, record.createdAt?.iso8601, record.updatedAt?.iso8601, record.version,
        ])
    }

    /// Rows per statement of `upsertRecords`: one statement per row made GRDB's per-statement
    /// work (arguments, binding, lookup) a large part of a pull.
    static let upsertChunkSize = 64

    /// Writes the records of `page` at `chunk` as `upsertRecord` does, in order, several rows per
    /// statement, and empties `chunk`. Positions rather than copies: a copy of each record (three
    /// strings retained, then released) was a cost of its own. With `written`: a row the store
    /// holds at the record's version already (the echo of a push) is left as it is, and the ids
    /// of the rows written are added to `written`.
    static func upsertRecords(
        _ db: Database, table: String, _ page: [StoredRecord], _ chunk: inout [Int], written: inout Set<String>?
    ) throws {
        guard !chunk.isEmpty else { return }
        let statement = try db.cachedStatement(
            sql: chunk.count == upsertChunkSize
                ? chunkUpsertSQL[written == nil ? 0 : 1] : upsertSQL(chunk.count, reporting: written != nil))
        // The chunk's texts laid end to end and bound where they lie while the statement runs, as
        // `insertRows` binds an insert's: bound one by one, SQLite copied each of a record's five
        // texts into an allocation of its own and freed them all when the next chunk cleared
        // the bindings, a third of the time a pull spent writing its pages. A text that is
        // absent (a record without a version) has the length -1 and is bound to NULL.
        var texts: [UInt8] = []
        texts.reserveCapacity(
            chunk.reduce(table.utf8.count) {
                $0 + page[$1].id.utf8.count + page[$1].body.utf8.count + (page[$1].version?.utf8.count ?? 0) + 48
            })
        var lengths: [Int] = []
        lengths.reserveCapacity(chunk.count * 5)
        func append(_ text: String?) {
            guard let text else { return lengths.append(-1) }
            texts.append(contentsOf: text.utf8)
            lengths.append(text.utf8.count)
        }
        var days = Timestamp.DayMemo()
        func append(_ timestamp: Timestamp?) {
            guard let timestamp else { return lengths.append(-1) }
            let start = texts.count
            timestamp.appendISO8601(to: &texts, memo: &days)
            lengths.append(texts.count - start)
        }
        texts.append(contentsOf: table.utf8)
        for index in chunk {
            append(page[index].id)
            append(page[index].body)
            append(page[index].createdAt)
            append(page[index].updatedAt)
            append(page[index].version)
        }
        try texts.withUnsafeBufferPointer { texts in
            // No statement keeps an address into `texts` once it ends, whatever throws.
            defer { sqlite3_clear_bindings(statement.sqliteStatement) }
            let tableText = UnsafeBufferPointer(rebasing: texts[0..<table.utf8.count])
            var values = DirectBindings(statement)
            var offset = tableText.count
            var next = lengths.makeIterator()
            for _ in chunk {
                try values.bind(unowned: tableText)
                for _ in 0..<5 {
                    guard let length = next.next(), length >= 0 else {
                        try values.bind(nil as String?)
                        continue
                    }
                    try values.bind(unowned: UnsafeBufferPointer(rebasing: texts[offset..<offset + length]))
                    offset += length
                }
            }
            if written != nil {
                let ids = try String.fetchCursor(statement)
                while let id = try ids.next() { written?.insert(id) }
            } else {
                try statement.execute()
            }
        }
        chunk.removeAll(keepingCapacity: true)
    }

    /// The statements of `upsertRecords` for a whole chunk (without, then with `written`): made
    /// once, as building them for every 64 records was a cost of its own.
    private static let chunkUpsertSQL = [upsertSQL(upsertChunkSize, reporting: false), upsertSQL(upsertChunkSize, reporting: true)]

    private static func upsertSQL(_ count: Int, reporting: Bool) -> String {
        """
        INSERT INTO records (tbl, id, body, created_at, updated_at, version) VALUES \(
            Array(repeating: "(?, ?, ?, ?, ?, ?)", count: count).joined(separator: ", "))
        ON CONFLICT (tbl, id) DO UPDATE SET body = excluded.body, created_at = excluded.created_at,
            updated_at = excluded.updated_at, version = excluded.version
        """
            + (reporting
                ? """
                 WHERE (excluded.version IS NULL OR records.version IS NOT excluded.version)
                    AND (records.updated_at IS NULL OR excluded.updated_at IS NULL OR excluded.updated_at >= records.updated_at)
                RETURNING id
                """ : "")
    }

    /// Stores the server's copy of a record whose local fields (with or without `id`) are
    /// `localFields`. When the server kept exactly those fields, as it does for nearly every pushed
    /// insert and update, only the server's properties are written: the body stays as it is,
    /// without encoding it again.
    static func saveRecord(_ db: Database, table: String, record: TSyncModel.Record, localFields: [String: JSONValue]) throws {
        guard keepsFields(record, localFields) else { return try upsertRecord(db, table: table, record: record) }
        // Once for each record a push sends: bound directly (`DirectBindings`).
        let statement = try db.cachedStatement(
            sql: "UPDATE records SET created_at = ?, updated_at = ?, version = ? WHERE tbl = ? AND id = ?")
        var values = DirectBindings(statement)
        try values.bind(record.system.createdAt)
        try values.bind(record.system.updatedAt)
        try values.bind(record.system.version)
        try values.bind(table)
        try values.bind(record.id)
        try statement.execute()
        if db.changesCount == 0 { try upsertRecord(db, table: table, record: record) }
    }

    /// Whether the server's copy `record` has exactly the fields `localFields` (with or without
    /// `id`): then saving it writes only its server properties (`saveRecord`, `saveProperties`).
    static func keepsFields(_ record: TSyncModel.Record, _ localFields: [String: JSONValue]) -> Bool {
        let localCount = localFields.count - (localFields["id"] == nil ? 0 : 1)
        return record.fields.count == localCount && record.fields.allSatisfy({ localFields[$0.key] == $0.value })
    }

    /// Appends to `rows` what `savePropertiesSQL` writes of a record `saveRecord` would save by its
    /// server properties alone (`keepsFields`).
    static func appendProperties(of record: TSyncModel.Record, table: String, to rows: inout ChunkedRows) {
        rows.append(record.system.createdAt)
        rows.append(record.system.updatedAt)
        rows.append(record.system.version)
        rows.append(table)
        rows.append(record.id)
    }

    /// Writes the server properties of `rows` (`appendProperties`) records, a chunk per statement:
    /// one `UPDATE` per record was the largest part of a push's completion. A chunk that finds
    /// fewer rows than it has (a record gone meanwhile) is saved again record by record by
    /// `missing`, as `saveRecord` saves one.
    static func saveProperties(_ db: Database, _ rows: ChunkedRows, missing: (Range<Int>) throws -> Void) throws {
        try rows.execute(db, sql: { $0 == ChunkedRows.chunkSize ? propertiesChunk : propertiesSQL($0) }) { chunk in
            if db.changesCount < chunk.count { try missing(chunk) }
        }
    }

    private static let propertiesChunk = propertiesSQL(ChunkedRows.chunkSize)

    private static func propertiesSQL(_ rows: Int) -> String {
        """
        UPDATE records SET created_at = v.column1, updated_at = v.column2, version = v.column3
        FROM (VALUES \(ChunkedRows.placeholders(rows: rows, columns: 5))) AS v
        WHERE records.tbl = v.column4 AND records.id = v.column5
        """
    }

    static func deleteRecord(_ db: Database, table: String, id: String) throws {
        try db.cachedStatement(sql: "DELETE FROM records WHERE tbl = ? AND id = ?").execute(arguments: [table, id])
    }

    /// Makes a table known to the store (idempotent). Table names are case-insensitive, as on
    /// the server (docs/DESIGN.md §6): a table the store knows by another spelling is refused.
    static func registerTable(_ db: Database, _ table: String) throws {
        try requireOneSpelling(db, table)
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO tables (name, created_at) VALUES (?, ?)")
            .execute(arguments: [table, Timestamp.now().iso8601])
    }

    /// Refuses `table` when the store knows the table by another spelling (`TXA` for `tXa`): the
    /// server's table names are case-insensitive, so two spellings would be two local tables of
    /// one server table. The store keeps the first spelling; a store that holds two (made before
    /// this rule) says which, and how to keep one.
    static func requireOneSpelling(_ db: Database, _ table: String) throws {
        let others = try String.fetchAll(
            db.cachedStatement(sql: "SELECT name FROM tables WHERE name = ? COLLATE NOCASE AND name <> ? ORDER BY name"),
            arguments: [table, table])
        guard let other = others.first else { return }
        let rule = "table names are case-insensitive, as on the server"
        if try tableExists(db, table) {
            throw TSyncError(
                .invalidInput,
                "this store holds \(table) also as \(others.joined(separator: " and ")): \(rule), so they are one table there; keep one spelling: push, then purge the other (`tsync purge \(other)`) and pull again"
            )
        }
        throw TSyncError(.invalidInput, "this store spells the table \(table) as \(other) (\(rule)); use \(other)")
    }

    static func tableExists(_ db: Database, _ table: String) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM tables WHERE name = ?)"), arguments: [table]) ?? false
    }

    static func requireTable(_ db: Database, _ table: String) throws {
        guard try tableExists(db, table) else { throw try unknownTable(db, table) }
    }

    static func unknownTable(_ db: Database, _ table: String) throws -> TSyncError {
        try requireOneSpelling(db, table)
        let known = try String.fetchAll(db, sql: "SELECT name FROM tables")
        return TSyncError(
            .invalidInput, "unknown table \(Identifiers.quoted(table))\(Spelling.didYouMean(table, among: known))", remedy: .listTables)
    }

    struct OperationHead {
        var seq: Int64
        var kind: OperationKind
        var state: OperationState
    }

    /// The item's newest operation, the one a new change collapses into.
    static func newestOperation(_ db: Database, table: String, id: String) throws -> OperationHead? {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(
                    sql: "SELECT seq, kind, state FROM operations WHERE tbl = ? AND item_id = ? ORDER BY seq DESC LIMIT 1"),
                arguments: [table, id])
        else { return nil }
        return OperationHead(
            seq: row[0], kind: OperationKind(rawValue: row[1]) ?? .update, state: OperationState(rawValue: row[2]) ?? .pending)
    }

    static func hasOperations(_ db: Database, table: String, id: String) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM operations WHERE tbl = ? AND item_id = ?)"),
            arguments: [table, id]) ?? false
    }

    static func fetchBase(_ db: Database, table: String, id: String) throws -> [String: JSONValue]? {
        guard
            let text = try String.fetchOne(
                db.cachedStatement(sql: "SELECT item FROM bases WHERE tbl = ? AND id = ?"), arguments: [table, id])
        else { return nil }
        return try StoredJSON.decodeObject(text, what: "base of \(table)/\(id)")
    }

    static func saveBase(_ db: Database, table: String, id: String, item: [String: JSONValue]) throws {
        try db.cachedStatement(
            sql: "INSERT INTO bases (tbl, id, item) VALUES (?, ?, ?) ON CONFLICT (tbl, id) DO UPDATE SET item = excluded.item"
        ).execute(arguments: [table, id, StoredJSON.encode(item)])
    }

    /// The server copy a pull skipped because the item had operations queued (`skipped`, schema v3).
    static func skippedCopy(_ db: Database, table: String, id: String) throws -> TSyncModel.Record? {
        guard
            let text = try String.fetchOne(
                db.cachedStatement(sql: "SELECT item FROM skipped WHERE tbl = ? AND id = ?"), arguments: [table, id])
        else { return nil }
        return try TSyncModel.Record(wire: try StoredJSON.decodeObject(text, what: "skipped copy of \(table)/\(id)"))
    }

    /// Keeps the newest copy: a page that brings an older one (a pull without a query id can)
    /// leaves the saved one.
    static func saveSkippedCopy(_ db: Database, table: String, record: TSyncModel.Record) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO skipped (tbl, id, item, updated_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (tbl, id) DO UPDATE SET item = excluded.item, updated_at = excluded.updated_at
                WHERE skipped.updated_at IS NULL OR excluded.updated_at >= skipped.updated_at
                """
        ).execute(arguments: [table, record.id, StoredJSON.encode(record.wireObject), record.system.updatedAt?.iso8601])
    }

    static func dropSkippedCopy(_ db: Database, table: String, id: String) throws {
        try db.cachedStatement(sql: "DELETE FROM skipped WHERE tbl = ? AND id = ?").execute(arguments: [table, id])
    }

    /// Whether `table` has queued operations (any state, with or without an error).
    static func hasOperations(_ db: Database, table: String) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM operations WHERE tbl = ?)"), arguments: [table]) ?? false
    }

    /// Whether any skipped copy is kept (of `table`, or of any table): the hot paths of push and
    /// pull skip their clean-up when none is.
    static func hasSkippedCopies(_ db: Database, table: String? = nil) throws -> Bool {
        if let table {
            return try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM skipped WHERE tbl = ?)"), arguments: [table]) ?? false
        }
        return try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM skipped)")) ?? false
    }

    /// Keeps the invariant "a base exists only while its item has operations".
    static func dropBaseIfIdle(_ db: Database, table: String, id: String) throws {
        if try !hasOperations(db, table: table, id: id) { try dropBase(db, table: table, id: id) }
    }

    static func dropBase(_ db: Database, table: String, id: String) throws {
        try db.cachedStatement(sql: "DELETE FROM bases WHERE tbl = ? AND id = ?").execute(arguments: [table, id])
    }

    /// Why a change to a record that is not there fails: unknown table, a pending delete, or no such id.
    static func missingRecordError(
        _ db: Database, table: String, id: String, change: OperationKind
    ) throws -> TSyncError {
        if try !tableExists(db, table) { return try unknownTable(db, table) }
        if let newest = try newestOperation(db, table: table, id: id), newest.kind == .delete {
            do {
                _ = try QueueCollapse.outcome(
                    newest: newest.kind, inFlight: newest.state == .inflight, new: change, table: table, id: id)
            } catch {
                return error
            }
        }
        return .invalidInput("no record \(Identifiers.quoted(id)) in table \(table)")
    }
}
