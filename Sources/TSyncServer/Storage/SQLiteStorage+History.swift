import GRDB
import TSyncModel
import TSyncQuery
import TSyncSQLite

/// The history of records on SQLite (docs/DESIGN.md §6.5): `tsync_history`, one row per version,
/// written in the write's own transaction; `tsync_deleted_horizons`, per table the newest
/// tombstone `--keep-deleted` removed.
extension SQLiteStorage {
    public func keepHistory(_ keeps: Bool) { historyOn.store(keeps, ordering: .relaxed) }

    /// The versions a batch stored, appended to `tsync_history` at the end of the batch's
    /// transaction in multi-row INSERTs (one statement per `rowsPerStatement` versions instead
    /// of one per version: DESIGN §6.5).
    struct HistoryRows {
        let keeps: Bool
        private var rows: [Version] = []

        /// One version as `tsync_history` keeps it.
        private struct Version {
            var table: String
            var id: String
            var createdAt: String?
            var updatedAt: String?
            var version: String?
            var deleted: Bool
            var owner: String?
            var user: String?
            var operation: String
            var body: String
        }

        init(keeps: Bool) { self.keeps = keeps }

        mutating func append(_ write: RecordWrite, _ stored: TSyncModel.Record, owner: String?, body: String) {
            guard keeps else { return }
            rows.append(
                Version(
                    table: SQLiteSchema.clockKey(write.table), id: stored.id, createdAt: stored.system.createdAt?.iso8601,
                    updatedAt: stored.system.updatedAt?.iso8601, version: stored.system.version, deleted: stored.system.deleted,
                    owner: owner, user: write.user, operation: write.operation.rawValue, body: body))
        }

        /// How many versions were appended, for `truncate(to:)`.
        var mark: Int { rows.count }

        /// Forgets the versions appended after `mark` (their writes were rolled back).
        mutating func truncate(to mark: Int) {
            guard mark < rows.count else { return }
            rows.removeSubrange(mark...)
        }

        /// Writes the versions appended so far, bound directly (`DirectBindings`).
        mutating func flush(_ db: Database) throws {
            var start = 0
            while start < rows.count {
                let count = Swift.min(Self.rowsPerStatement, rows.count - start)
                let statement = try db.cachedStatement(
                    sql:
                        "INSERT INTO tsync_history (table_name, id, created_at, updated_at, version, deleted, owner, user_name, operation, body) VALUES "
                        + Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", count: count).joined(separator: ", "))
                var values = DirectBindings(statement)
                for row in rows[start..<(start + count)] {
                    try values.bind(row.table)
                    try values.bind(row.id)
                    try values.bind(row.createdAt)
                    try values.bind(row.updatedAt)
                    try values.bind(row.version)
                    try values.bind(row.deleted)
                    try values.bind(row.owner)
                    try values.bind(row.user)
                    try values.bind(row.operation)
                    try values.bind(row.body)
                }
                try statement.execute()
                start += count
            }
            rows = []
        }

        /// 10 parameters a row: far below SQLite's limit of 32,766 per statement.
        static let rowsPerStatement = 500
    }

    /// The newest `updatedAt` of a tombstone removed from `table`, if any.
    static func deletedHorizon(_ db: Database, table: String) throws -> Timestamp? {
        try String.fetchOne(
            db.cachedStatement(sql: "SELECT horizon FROM tsync_deleted_horizons WHERE table_name = ?"),
            arguments: [SQLiteSchema.clockKey(table)]
        ).flatMap(Timestamp.init(iso8601:))
    }

    public func versions(table: String, id: String, scope: OwnerScope, top: Int, skip: Int) async throws -> [RecordVersion] {
        var sql = """
            SELECT id, created_at, updated_at, version, deleted, body, user_name, operation FROM tsync_history
            WHERE table_name = ? AND id = ?
            """
        var arguments: StatementArguments = [SQLiteSchema.clockKey(table), id]
        if case .owner(let owner) = scope {
            sql += " AND owner = ?"
            arguments += [owner]
        }
        sql += " ORDER BY updated_at DESC, seq DESC LIMIT ? OFFSET ?"
        arguments += [top, skip]
        return try await clientRead { [sql, arguments] db in
            try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
                let updatedAt: String = row[2]
                return RecordVersion(
                    version: row[3], updatedAt: updatedAt, user: row[6],
                    operation: HistoryOperation(rawValue: row[7]) ?? .update,
                    item: .stored(id: row[0], createdAt: row[1], updatedAt: updatedAt, version: row[3], deleted: row[4], fields: row[5]))
            }
        }
    }

    public func query(table: String, at time: Timestamp, _ query: RecordQuery, scope: OwnerScope) async throws -> RecordPage {
        let statements = try statements(
            sqlName: SQLiteSchema.recordTableName(table), query, scope: scope, source: Self.source(table, at: time))
        return try await clientRead { db in try Self.page(db, statements, query) }
    }

    /// SQLite's plan of a page of the table at `time` (tests read it: the page walks the index).
    func planAt(table: String, at time: Timestamp, _ query: RecordQuery, scope: OwnerScope) async throws -> [String] {
        let (sql, arguments, _, _) = try statements(
            sqlName: SQLiteSchema.recordTableName(table), query, scope: scope, source: Self.source(table, at: time))
        return try await plan(sql, arguments)
    }

    /// The table as it was at `time`, as a FROM item with the record table's columns: each id's
    /// newest version at or before it, i.e. the versions of the table in id order (the index's)
    /// less those with a newer one at or before it. SQLite flattens it into the page's query, so
    /// a page in id order walks the index and stops at its end.
    private static func source(_ table: String, at time: Timestamp) -> (String, [SQLValue]) {
        let at = SQLValue.text(time.iso8601)
        return (
            """
            (SELECT h.id, h.created_at, h.updated_at, h.version, h.deleted, h.owner, h.body FROM tsync_history AS h
            WHERE h.table_name = ? AND h.updated_at <= ? AND NOT EXISTS (
                SELECT 1 FROM tsync_history AS n WHERE n.table_name = h.table_name AND n.id = h.id
                AND n.updated_at >= h.updated_at AND n.updated_at <= ? AND n.seq > h.seq)) AS r
            """, [.text(SQLiteSchema.clockKey(table)), at, at]
        )
    }

    public func maintain(_ retention: Retention, now: Timestamp, seed: Bool, settle: Duration) async throws -> MaintenanceReport {
        var report = MaintenanceReport()
        let tables = try await pool.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 't\\_%' ESCAPE '\\'")
        }
        if retention.keepsHistory, seed {
            for sqlName in tables {
                report.seeded += try await pool.write { db in
                    try db.execute(
                        sql: """
                            INSERT INTO tsync_history (table_name, id, created_at, updated_at, version, deleted, owner, user_name, operation, body)
                            SELECT ?, r.id, r.created_at, r.updated_at, r.version, r.deleted, r.owner, NULL,
                                CASE WHEN r.deleted THEN 'delete' ELSE 'insert' END, r.body
                            FROM "\(sqlName)" AS r WHERE NOT EXISTS (
                                SELECT 1 FROM tsync_history AS h WHERE h.table_name = ? AND h.id = r.id AND h.updated_at = r.updated_at
                                AND h.version = r.version)
                            """, arguments: [SQLiteSchema.tableKey(sqlName: sqlName), SQLiteSchema.tableKey(sqlName: sqlName)])
                    return db.changesCount
                }
            }
        }
        // Tombstones first, each table in one transaction with its horizon: a reader sees both or neither.
        if let cutoff = retention.tombstoneCutoff(now: now) {
            for sqlName in tables {
                report.tombstonesRemoved += try await pool.write { db in
                    guard
                        let newest = try String.fetchOne(
                            db, sql: "SELECT max(updated_at) FROM \"\(sqlName)\" WHERE deleted = 1 AND updated_at < ?",
                            arguments: [cutoff.iso8601])
                    else { return 0 }
                    try db.execute(
                        sql: """
                            INSERT INTO tsync_deleted_horizons (table_name, horizon) VALUES (?, ?)
                            ON CONFLICT (table_name) DO UPDATE SET horizon = max(horizon, excluded.horizon)
                            """, arguments: [SQLiteSchema.tableKey(sqlName: sqlName), newest])
                    try db.execute(sql: "DELETE FROM \"\(sqlName)\" WHERE deleted = 1 AND updated_at <= ?", arguments: [newest])
                    return db.changesCount
                }
            }
            // The view changes are deletions too (docs/DESIGN.md §11.1): gone with the horizon raised.
            try await pool.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO tsync_deleted_horizons (table_name, horizon)
                        SELECT table_name, max(at) FROM tsync_record_exits WHERE at < ? GROUP BY table_name
                        ON CONFLICT (table_name) DO UPDATE SET horizon = max(horizon, excluded.horizon)
                        """, arguments: [cutoff.iso8601])
                if let newest = try String.fetchOne(
                    db, sql: "SELECT max(at) FROM tsync_label_changes WHERE at < ?", arguments: [cutoff.iso8601])
                {
                    for sqlName in tables {
                        try db.execute(
                            sql: """
                                INSERT INTO tsync_deleted_horizons (table_name, horizon) VALUES (?, ?)
                                ON CONFLICT (table_name) DO UPDATE SET horizon = max(horizon, excluded.horizon)
                                """, arguments: [SQLiteSchema.tableKey(sqlName: sqlName), newest])
                    }
                }
                try db.execute(sql: "DELETE FROM tsync_record_exits WHERE at < ?", arguments: [cutoff.iso8601])
                try db.execute(sql: "DELETE FROM tsync_label_changes WHERE at < ?", arguments: [cutoff.iso8601])
            }
        }
        // Versions, a range of `seq` per transaction, so writers wait for one range at a time.
        let (first, last) = try await pool.read { db in
            (
                try Int64.fetchOne(db, sql: "SELECT min(seq) FROM tsync_history") ?? 0,
                try Int64.fetchOne(db, sql: "SELECT max(seq) FROM tsync_history") ?? -1
            )
        }
        let historyCutoff = retention.oldestReadable(now: now).iso8601
        let tombstoneCutoff = retention.tombstoneCutoff(now: now)?.iso8601
        var start = first - 1
        while start < last {
            let end = start + Self.pruningRange
            report.versionsPruned += try await pool.write { [start] db in
                if !retention.keepsHistory {
                    try db.execute(sql: "DELETE FROM tsync_history WHERE seq > ? AND seq <= ?", arguments: [start, end])
                    return db.changesCount
                }
                // A version goes when a newer one of its record is at or before the cutoff (it is
                // not the record's state at any time still readable), or when it is the newest, a
                // deletion older than both cutoffs (its tombstone is gone from the table too).
                try db.execute(
                    sql: """
                        DELETE FROM tsync_history WHERE seq > ? AND seq <= ? AND updated_at < ? AND (
                            EXISTS (SELECT 1 FROM tsync_history AS n WHERE n.table_name = tsync_history.table_name
                                AND n.id = tsync_history.id AND n.updated_at <= ? AND n.seq > tsync_history.seq)
                            OR (deleted = 1 AND updated_at < ? AND NOT EXISTS (SELECT 1 FROM tsync_history AS n
                                WHERE n.table_name = tsync_history.table_name AND n.id = tsync_history.id AND n.seq > tsync_history.seq)))
                        """,
                    arguments: [start, end, historyCutoff, historyCutoff, tombstoneCutoff])
                return db.changesCount
            }
            start = end
        }
        return report
    }

    /// Versions one pruning transaction looks at.
    static let pruningRange: Int64 = 20_000
}
