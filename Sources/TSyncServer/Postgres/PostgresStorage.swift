import Logging
import PostgresNIO
import TSyncModel
import TSyncQuery

/// `ServerStorage` on PostgreSQL: the backend for several `tsync serve` instances behind a load
/// balancer, all sharing one database (DESIGN §4). Nothing lives in the instance: records,
/// accounts, tokens and login counters are all in the database.
///
/// Writes to one sync table are serialized across instances by its row in `tsync_table_clocks`:
/// every write transaction first locks that row (an upsert, which also creates it on the first
/// write), reads the last `updatedAt` given out, and stores the next one with the record. The lock
/// is held until commit, and a commit is visible before its locks are released, so commit order
/// and `updatedAt` order agree and `updatedAt` only grows (DESIGN §2.2). The version check reads
/// the record after the lock is taken, so it sees every earlier commit: no lost update.
public final class PostgresStorage: ServerStorage {
    let database: PostgresDatabase
    private let clock: @Sendable () -> Timestamp
    private let renderer = SQLRenderer(schema: PostgresSchema.querySchema)

    init(database: PostgresDatabase, clock: @escaping @Sendable () -> Timestamp) {
        self.database = database
        self.clock = clock
    }

    /// Connects to `url`, creates or upgrades the schema, and runs `body` with the storage; the
    /// connections close when `body` returns or throws.
    /// - Parameter clock: the wall clock `updatedAt` is taken from; tests may pass their own.
    public static func withStorage<Result: Sendable>(
        url: PostgresURL, maximumConnections: Int = 20, clock: @escaping @Sendable () -> Timestamp = WallClock.now,
        logger: Logger = Logger(label: "tsync.postgres"),
        _ body: @Sendable (PostgresStorage) async throws -> Result
    ) async throws -> Result {
        try await PostgresDatabase.withDatabase(url: url, maximumConnections: maximumConnections, logger: logger) { database in
            try await body(PostgresStorage(database: database, clock: clock))
        }
    }

    // MARK: - Reads

    public func record(table: String, id: String, scope: OwnerScope) async throws -> Record? {
        var statement = PostgresStatement("SELECT \(PostgresSchema.recordColumns) FROM tsync_records WHERE ")
        Self.appendKey(to: &statement, table: table, id: id, scope: scope)
        return try await database.rows(statement).first.map(Self.decode)
    }

    public func query(table: String, _ query: RecordQuery, scope: OwnerScope) async throws -> RecordPage {
        var page = PostgresStatement("SELECT \(PostgresSchema.recordColumns) FROM tsync_records WHERE ")
        try appendConditions(to: &page, table: table, query: query, scope: scope)
        page.append(" ORDER BY ")
        page.append(try renderer.orderBy(query.orderBy, firstArgumentIndex: page.nextArgumentIndex))
        page.append(" LIMIT " + page.bind(Int64(query.top)) + " OFFSET " + page.bind(Int64(query.skip)))
        var count = PostgresStatement("SELECT count(*) FROM tsync_records WHERE ")
        try appendConditions(to: &count, table: table, query: query, scope: scope)
        do {
            let records = try await database.rows(page).map(Self.decode)
            var total: Int?
            if query.includeTotalCount {
                total = try await database.rows(count).first.map { Int(try $0.decode(Int64.self)) } ?? 0
            }
            return RecordPage(records: records, totalCount: total)
        } catch let error as PostgresServerError where error.isDataException || error.isProgramLimit {
            // The fixed part of the statement is known to be valid, so this comes from the
            // client's $filter/$orderby: a value PostgreSQL cannot hold, or nesting beyond its limits.
            throw TSyncError.invalidInput("the $filter or $orderby cannot be evaluated: \(error.message)")
        }
    }

    // MARK: - Writes

    public func insert(table: String, record: Record, scope: OwnerScope) async throws -> InsertOutcome {
        let key = PostgresSchema.tableKey(table)
        return try await writing {
            try await database.transaction { transaction in
                let updatedAt = try await Self.lockClock(transaction, key: key, now: self.clock())
                let stored = RecordWriter.inserted(record, at: updatedAt)
                var owner: String?
                if case .owner(let name) = scope { owner = name }
                var insert = Self.advancingClock(key: key, to: updatedAt)
                insert.append(
                    "INSERT INTO tsync_records (table_name, id, created_at, updated_at, version, deleted, owner, body) VALUES ("
                        + [
                            insert.bind(key), insert.bind(stored.id), insert.bind(updatedAt.iso8601), insert.bind(updatedAt.iso8601),
                            insert.bind(stored.system.version), insert.bind(false), insert.bind(owner),
                            insert.bind(JSONSerializer.string(.object(stored.fields))) + "::jsonb",
                        ].joined(separator: ", ")
                        + ") ON CONFLICT (table_name, id) DO NOTHING RETURNING id")
                if try await !transaction.rows(insert).isEmpty { return .commit(.inserted(stored)) }
                // The id is taken. Only a caller who may see the record gets it back (DESIGN §4).
                var existing = PostgresStatement("SELECT \(PostgresSchema.recordColumns) FROM tsync_records WHERE ")
                Self.appendKey(to: &existing, table: table, id: record.id, scope: scope)
                return .rollback(.exists(try await transaction.rows(existing).first.map(Self.decode)))
            }
        }
    }

    public func modify(
        table: String, id: String, change: RecordChange, expectedVersion: ExpectedVersion, scope: OwnerScope
    ) async throws -> ModifyOutcome {
        let key = PostgresSchema.tableKey(table)
        return try await writing {
            try await database.transaction { transaction in
                let updatedAt = try await Self.lockClock(transaction, key: key, now: self.clock())
                var select = PostgresStatement("SELECT \(PostgresSchema.recordColumns) FROM tsync_records WHERE ")
                Self.appendKey(to: &select, table: table, id: id, scope: scope)
                select.append(" FOR UPDATE")
                guard let current = try await transaction.rows(select).first.map(Self.decode) else { return .rollback(.notFound) }
                switch RecordWriter.plan(change, on: current, expected: expectedVersion) {
                case .notFound: return .rollback(.notFound)
                case .versionMismatch: return .rollback(.versionMismatch(current))
                case .unchanged: return .rollback(.modified(current))
                case .write: break
                }
                let next = RecordWriter.apply(change, to: current, updatedAt: updatedAt)
                var update = Self.advancingClock(key: key, to: updatedAt)
                update.append(
                    "UPDATE tsync_records SET updated_at = \(update.bind(updatedAt.iso8601)), version = \(update.bind(next.system.version)), "
                        + "deleted = \(update.bind(next.system.deleted)), body = \(update.bind(JSONSerializer.string(.object(next.fields))))::jsonb "
                        + "WHERE table_name = \(update.bind(key)) AND id = \(update.bind(id))")
                try await transaction.execute(update)
                return .commit(.modified(next))
            }
        }
    }

    // MARK: - Helpers

    /// Locks the table's clock row until the end of the transaction (creating it on the table's
    /// first write) and returns the `updatedAt` this write gets.
    private static func lockClock(_ transaction: PostgresTransaction, key: String, now: Timestamp) async throws -> Timestamp {
        var statement = PostgresStatement("INSERT INTO tsync_table_clocks AS clock (table_name, last_updated_at) VALUES (")
        statement.append(statement.bind(key) + ", 0) ON CONFLICT (table_name) DO UPDATE SET last_updated_at = clock.last_updated_at")
        statement.append(" RETURNING last_updated_at")
        let last = try await transaction.rows(statement).first?.decode(Int64.self) ?? 0
        return RecordWriter.nextUpdatedAt(now: now, lastAssigned: Timestamp(millisecondsSinceEpoch: last))
    }

    /// The start of a write statement that also records `updatedAt` as the table's last one, so a
    /// write costs no extra round trip while the table is locked.
    private static func advancingClock(key: String, to updatedAt: Timestamp) -> PostgresStatement {
        var statement = PostgresStatement("WITH clock AS (UPDATE tsync_table_clocks SET last_updated_at = ")
        statement.append(statement.bind(updatedAt.millisecondsSinceEpoch) + " WHERE table_name = " + statement.bind(key) + ") ")
        return statement
    }

    /// Runs a write, turning a value PostgreSQL refuses to store into the client's mistake.
    private func writing<Result>(_ body: () async throws -> Result) async throws -> Result {
        do {
            return try await body()
        } catch let error as PostgresServerError where error.isDataException {
            throw TSyncError.invalidInput(
                "the record holds a value the PostgreSQL database cannot store (\(error.message)), such as the character U+0000 in a string")
        }
    }

    /// `table_name = $ AND id = $` and, for a per-user table, the owner.
    private static func appendKey(to statement: inout PostgresStatement, table: String, id: String, scope: OwnerScope) {
        statement.append("table_name = " + statement.bind(PostgresSchema.tableKey(table)) + " AND id = " + statement.bind(id))
        if case .owner(let owner) = scope { statement.append(" AND owner = " + statement.bind(owner)) }
    }

    private func appendConditions(to statement: inout PostgresStatement, table: String, query: RecordQuery, scope: OwnerScope) throws {
        statement.append("table_name = " + statement.bind(PostgresSchema.tableKey(table)))
        if !query.includeDeleted { statement.append(" AND NOT deleted") }
        if case .owner(let owner) = scope { statement.append(" AND owner = " + statement.bind(owner)) }
        if let filter = query.filter {
            statement.append(" AND (")
            statement.append(try renderer.whereClause(filter, firstArgumentIndex: statement.nextArgumentIndex))
            statement.append(")")
        }
    }

    private static func decode(_ row: PostgresRow) throws -> Record {
        let (id, createdAt, updatedAt, version, deleted, _, body) = try row.decode(
            (String, String, String, String, Bool, String?, String).self)
        guard case .object(let fields) = try JSONParser.parse(body) else {
            throw TSyncError.failure("record \(Identifiers.quoted(id)) has a corrupt body in the server database")
        }
        let system = SystemProperties(
            createdAt: Timestamp(iso8601: createdAt), updatedAt: Timestamp(iso8601: updatedAt), version: version, deleted: deleted)
        return Record(id: id, fields: fields, system: system)
    }
}
