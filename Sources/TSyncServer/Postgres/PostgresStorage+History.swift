import PostgresNIO
import TSyncModel
import TSyncQuery

/// The history of records on PostgreSQL (docs/DESIGN.md §6.5): `tsync_history`, one row per
/// version, written by the write's own statements; `tsync_deleted_horizons`, per table the newest
/// tombstone `--keep-deleted` removed.
extension PostgresStorage {
    public func keepHistory(_ keeps: Bool) { historyOn.store(keeps, ordering: .relaxed) }

    /// How long a read of the deleted horizons serves this instance's pages. Another instance
    /// removes tombstones only `settle` (longer) after it stored their horizon (`maintain`), so
    /// every instance's pages carry a horizon before they can miss a tombstone.
    static let horizonLifetime = Duration.seconds(5)

    /// The deleted horizon of `table`, from a read of all of them at most `horizonLifetime` old.
    func deletedHorizon(_ table: String) async throws -> Timestamp? {
        let key = PostgresSchema.tableKey(table)
        let now = ContinuousClock.now
        let cached = horizons.withLock { cache -> Timestamp?? in
            guard let read = cache.read, now - read < Self.horizonLifetime else { return nil }
            return .some(cache.values[key])
        }
        if let cached { return cached }
        var values: [String: Timestamp] = [:]
        for row in try await database.rows(PostgresStatement("SELECT table_name, horizon FROM tsync_deleted_horizons")) {
            let (table, horizon) = try row.decode((String, String).self)
            values[table] = Timestamp(iso8601: horizon)
        }
        horizons.withLock { cache in
            if (cache.read ?? now) <= now { cache = (now, values) }
        }
        return values[key]
    }

    public func versions(table: String, id: String, scope: OwnerScope, top: Int, skip: Int) async throws -> [RecordVersion] {
        var statement = PostgresStatement(
            "SELECT id, created_at, updated_at, version, deleted, body_text, user_name, operation FROM tsync_history WHERE table_name = ")
        statement.append(statement.bind(PostgresSchema.tableKey(table)) + " AND id = " + statement.bind(id))
        if case .owner(let owner) = scope { statement.append(" AND owner = " + statement.bind(owner)) }
        statement.append(" ORDER BY updated_at DESC, seq DESC LIMIT \(statement.bind(Int64(top))) OFFSET \(statement.bind(Int64(skip)))")
        return try await database.rows(statement).map { row in
            let (id, createdAt, updatedAt, version, deleted, body, user, operation) = try row.decode(
                (String, String, String, String, Bool, String, String?, String).self)
            return RecordVersion(
                version: version, updatedAt: updatedAt, user: user, operation: HistoryOperation(rawValue: operation) ?? .update,
                item: .stored(id: id, createdAt: createdAt, updatedAt: updatedAt, version: version, deleted: deleted, fields: body))
        }
    }

    public func query(table: String, at time: Timestamp, _ query: RecordQuery, scope: OwnerScope) async throws -> RecordPage {
        do {
            let page = try pageStatement(table: table, query, scope: scope, at: time)
            // Walk the index (each version, and its record's newer ones, by (table, id)), whatever
            // the statistics say: right after a bulk load PostgreSQL may plan a scan of the whole
            // history for every version, and one read of 20,000 records took over 10 s.
            let rows = try await database.transaction(readOnly: true) { transaction in
                try await transaction.execute(PostgresStatement("SET LOCAL enable_seqscan = off"))
                try await transaction.execute(PostgresStatement("SET LOCAL enable_bitmapscan = off"))
                return .commit(try await transaction.rows(page))
            }
            var total: Int?
            if query.includeTotalCount {
                var count = PostgresStatement("SELECT count(*) FROM ")
                Self.appendSource(to: &count, table: table, at: time)
                count.append(" WHERE ")
                try appendConditions(to: &count, table: table, query: query, scope: scope)
                total = try await database.rows(count).first.map { Int(try $0.decode(Int64.self)) } ?? 0
            }
            return try Self.page(rows, query, total: total)
        } catch let error as PostgresServerError where error.isDataException || error.isProgramLimit {
            throw TSyncError.invalidInput("the $filter or $orderby cannot be evaluated: \(error.message)")
        }
    }

    /// What a page reads from: `tsync_records`, or with `at` the table as it was then, with the
    /// same columns and name: each id's newest version at or before it, i.e. the versions of the
    /// table in id order (the index's) less those with a newer one at or before it. The body's
    /// jsonb is made only where the query reads it (a filter or order on a field).
    static func appendSource(to statement: inout PostgresStatement, table: String, at: Timestamp?) {
        guard let at else {
            statement.append("tsync_records")
            return
        }
        let time = statement.bind(at.iso8601)
        statement.append(
            "(SELECT h.table_name, h.id, h.created_at, h.updated_at, h.version, h.deleted, h.owner, h.body_text, "
                + "h.body_text::jsonb AS body FROM tsync_history AS h WHERE h.table_name = \(statement.bind(PostgresSchema.tableKey(table))) "
                + "AND h.updated_at <= \(time) AND NOT EXISTS (SELECT 1 FROM tsync_history AS n WHERE n.table_name = h.table_name "
                + "AND n.id = h.id AND n.updated_at >= h.updated_at AND n.updated_at <= \(time) AND n.seq > h.seq)) AS tsync_records")
    }

    public func maintain(_ retention: Retention, now: Timestamp, seed: Bool, settle: Duration) async throws -> MaintenanceReport {
        var report = MaintenanceReport()
        if retention.keepsHistory, seed {
            report.seeded = try await unbounded(
                PostgresStatement(
                    """
                    INSERT INTO tsync_history (table_name, id, created_at, updated_at, version, deleted, owner, user_name, operation, body_text)
                    SELECT r.table_name, r.id, r.created_at, r.updated_at, r.version, r.deleted, r.owner, NULL,
                        CASE WHEN r.deleted THEN 'delete' ELSE 'insert' END, coalesce(r.body_text, r.body::text)
                    FROM tsync_records AS r WHERE NOT EXISTS (
                        SELECT 1 FROM tsync_history AS h WHERE h.table_name = r.table_name AND h.id = r.id
                        AND h.updated_at = r.updated_at AND h.version = r.version)
                    """))
        }
        if let cutoff = retention.tombstoneCutoff(now: now) {
            // The horizons first, committed; the tombstones only after every instance's cached
            // horizons have been read again (`deletedHorizon`).
            var store = PostgresStatement(
                """
                INSERT INTO tsync_deleted_horizons (table_name, horizon)
                SELECT table_name, max(updated_at) FROM tsync_records WHERE deleted AND updated_at <
                """)
            store.append(
                " " + store.bind(cutoff.iso8601)
                    + """
                     GROUP BY table_name
                    ON CONFLICT (table_name) DO UPDATE SET horizon = greatest(tsync_deleted_horizons.horizon, excluded.horizon)
                    RETURNING table_name, horizon
                    """)
            var stored = try await database.rows(store).map { try $0.decode((String, String).self) }
            // The view changes are deletions too (docs/DESIGN.md §11.1): the horizons they raise.
            var changes = PostgresStatement(
                """
                WITH RECURSIVE t(name) AS (SELECT min(table_name) FROM tsync_records
                UNION ALL SELECT (SELECT min(table_name) FROM tsync_records WHERE table_name > t.name) FROM t WHERE t.name IS NOT NULL)
                INSERT INTO tsync_deleted_horizons (table_name, horizon) SELECT table_name, max(at) FROM (
                """)
            let viewCutoff = changes.bind(cutoff.iso8601)
            changes.append(
                "SELECT table_name, at FROM tsync_record_exits WHERE at < \(viewCutoff) UNION ALL "
                    + "SELECT t.name, c.at FROM tsync_label_changes AS c CROSS JOIN t WHERE t.name IS NOT NULL AND c.at < \(viewCutoff)) AS x "
                    + "GROUP BY table_name ON CONFLICT (table_name) DO UPDATE SET horizon = greatest(tsync_deleted_horizons.horizon, "
                    + "excluded.horizon) RETURNING table_name, horizon")
            let viewHorizons = try await database.rows(changes).map { try $0.decode((String, String).self) }
            stored += viewHorizons
            if !stored.isEmpty {
                horizons.withLock { $0.read = nil }
                if settle > .zero { try await Task.sleep(for: settle) }
                for (table, horizon) in stored {
                    var remove = PostgresStatement("DELETE FROM tsync_records WHERE table_name = ")
                    remove.append(remove.bind(table) + " AND deleted AND updated_at <= " + remove.bind(horizon))
                    report.tombstonesRemoved += try await unbounded(remove)
                }
                if !viewHorizons.isEmpty {
                    for table in ["tsync_record_exits", "tsync_label_changes"] {
                        var remove = PostgresStatement("DELETE FROM \(table) WHERE at < ")
                        remove.append(remove.bind(cutoff.iso8601))
                        _ = try await unbounded(remove)
                    }
                }
            }
        }
        if retention.keepsHistory {
            // As on SQLite (`SQLiteStorage.maintain`): a version goes when a newer one of its record
            // is at or before the cutoff, or when it is the newest, a deletion older than both cutoffs.
            var prune = PostgresStatement("DELETE FROM tsync_history AS h WHERE h.updated_at < ")
            let cutoff = prune.bind(retention.oldestReadable(now: now).iso8601)
            prune.append(
                cutoff + " AND (EXISTS (SELECT 1 FROM tsync_history AS n WHERE n.table_name = h.table_name AND n.id = h.id "
                    + "AND n.updated_at <= \(cutoff) AND n.seq > h.seq)")
            if let tombstones = retention.tombstoneCutoff(now: now) {
                prune.append(
                    " OR (h.deleted AND h.updated_at < \(prune.bind(tombstones.iso8601)) AND NOT EXISTS (SELECT 1 FROM tsync_history AS n "
                        + "WHERE n.table_name = h.table_name AND n.id = h.id AND n.seq > h.seq))")
            }
            prune.append(")")
            report.versionsPruned = try await unbounded(prune)
        } else {
            report.versionsPruned = try await unbounded(PostgresStatement("DELETE FROM tsync_history"))
        }
        return report
    }

    /// Runs `statement` in a transaction without the statement timeout (maintenance may rightly
    /// take longer than any query may) and returns the rows it changed.
    private func unbounded(_ statement: PostgresStatement) async throws -> Int {
        var counted = statement
        counted.prepend("WITH changed AS (")
        counted.append(" RETURNING 1) SELECT count(*) FROM changed")
        return try await database.transaction { transaction in
            try await transaction.execute(PostgresStatement("SET LOCAL statement_timeout = 0"))
            return .commit(Int(try await transaction.rows(counted).first?.decode(Int64.self) ?? 0))
        }
    }
}

extension PostgresStorage {
    /// The versions of a batch's updates, written after them with one `INSERT … SELECT FROM
    /// unnest(…)` per run of table, owner and account instead of one per update (DESIGN §6.5),
    /// in the order of the writes. (New records' versions go in with the records: `PendingInserts`.)
    struct PendingVersions {
        private struct Run {
            var key: String
            var owner: String?
            var user: String?
            var ids: [String] = []
            var createdAts: [String] = []
            var stamps: [String] = []
            var versions: [String] = []
            var deleted: [String] = []
            var operations: [String] = []
            var bodies: [String] = []
        }

        private var runs: [Run] = []

        mutating func append(key: String, owner: String?, _ write: RecordWrite, _ record: Record) {
            guard let updatedAt = record.system.updatedAt?.iso8601 else { return }
            if runs.last.map({ $0.key != key || $0.owner != owner || $0.user != write.user }) ?? true {
                runs.append(Run(key: key, owner: owner, user: write.user))
            }
            runs[runs.count - 1].ids.append(record.id)
            runs[runs.count - 1].createdAts.append(record.system.createdAt?.iso8601 ?? updatedAt)
            runs[runs.count - 1].stamps.append(updatedAt)
            runs[runs.count - 1].versions.append(record.system.version ?? "")
            runs[runs.count - 1].deleted.append(record.system.deleted ? "true" : "false")
            runs[runs.count - 1].operations.append(write.operation.rawValue)
            runs[runs.count - 1].bodies.append(JSONSerializer.string(.object(record.fields)))
        }

        mutating func flush(_ transaction: PostgresTransaction) async throws {
            for run in runs {
                var statement = PostgresStatement()
                let columns = [run.ids, run.createdAts, run.stamps, run.versions, run.deleted, run.operations, run.bodies]
                    .map { statement.bind($0) + "::text[]" }.joined(separator: ", ")
                statement.append(
                    "INSERT INTO tsync_history (table_name, id, created_at, updated_at, version, deleted, owner, user_name, operation, body_text) "
                        + "SELECT \(statement.bind(run.key)), u.id, u.created_at, u.stamp, u.version, u.deleted::boolean, "
                        + "\(statement.bind(run.owner)), \(statement.bind(run.user)), u.operation, u.body "
                        + "FROM unnest(\(columns)) AS u(id, created_at, stamp, version, deleted, operation, body)")
                try await transaction.execute(statement)
            }
            runs = []
        }
    }
}
