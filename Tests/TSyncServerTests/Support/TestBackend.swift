import Logging
import TSyncModel

@testable import TSyncServer

/// The storage backends the HTTP-level suite runs against: every `withTestServer` test runs once
/// on SQLite and, when `TSYNC_TEST_POSTGRES_URL` names a PostgreSQL server, once more on
/// PostgreSQL, so both backends are held to the same behaviour.
enum TestBackend: String, Sendable, CaseIterable, CustomStringConvertible {
    case sqlite, postgres

    static var available: [TestBackend] { PostgresTestDatabase.isConfigured ? [.sqlite, .postgres] : [.sqlite] }

    var description: String { rawValue }

    /// Runs `body` with a storage of this backend on a fresh, empty database, removed afterwards.
    /// PostgreSQL pools stay small: many tests run at once against one server.
    func withFreshStorage<Result: Sendable>(
        clock: @escaping @Sendable () -> Timestamp = Timestamp.now, maximumConnections: Int = 4, queryTimeoutSeconds: Int? = nil,
        _ body: @Sendable (any ServerStorage) async throws -> Result
    ) async throws -> Result {
        switch self {
        case .sqlite:
            let database = try TemporaryDatabase()
            defer { database.cleanUp() }
            return try await body(try database.open(clock: clock))
        case .postgres:
            return try await PostgresTestDatabase.withFreshDatabase { url in
                try await PostgresStorage.withStorage(
                    url: url, maximumConnections: maximumConnections, clock: clock, logger: quietLogger,
                    statementTimeoutSeconds: queryTimeoutSeconds
                ) {
                    storage in try await body(storage)
                }
            }
        }
    }
}

/// An error of a test body, labelled with the backend it ran on.
struct BackendTestError: Error, CustomStringConvertible {
    var backend: TestBackend
    var underlying: any Error
    var description: String { "on \(backend): \(underlying)" }
}

extension TestHTTP {
    /// The first column of every row of `sql`, as text, read straight from the database: for
    /// tests that check what is stored (e.g. only token hashes). `sql` must work on both backends.
    func storedStrings(_ sql: String) async throws -> [String] {
        switch storage {
        case let sqlite as SQLiteStorage:
            return try await sqlite.pool.read { db in try String.fetchAll(db, sql: sql) }
        case let postgres as PostgresStorage:
            return try await postgres.database.rows(PostgresStatement(sql)).map { try $0.decode(String.self) }
        default:
            throw TSyncError.failure("unknown storage \(type(of: storage))")
        }
    }

    /// The number of rows of `table`, read straight from the database.
    func storedCount(_ table: String) async throws -> Int {
        Int(try await storedStrings("SELECT CAST(COUNT(*) AS TEXT) FROM \(table)").first ?? "0") ?? 0
    }
}
