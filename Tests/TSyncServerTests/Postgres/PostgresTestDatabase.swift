import Foundation
import Logging
import TSyncModel

@testable import TSyncServer

/// Throwaway PostgreSQL databases for tests.
///
/// Tests that need PostgreSQL read `TSYNC_TEST_POSTGRES_URL` (set by `scripts/test.sh` and by
/// `. scripts/postgres.sh; pg_start`) and are skipped when it is unset, so that `swift test` on a
/// machine without PostgreSQL still runs everything else. Each test gets a database of its own
/// (created from the one in the URL, dropped afterwards), so tests run in parallel.
enum PostgresTestDatabase {
    static let adminURLText = ProcessInfo.processInfo.environment["TSYNC_TEST_POSTGRES_URL"]

    /// For `.enabled(if:)`: PostgreSQL tests need a server to talk to.
    static var isConfigured: Bool { adminURLText != nil }

    static func adminURL() throws -> PostgresURL {
        guard let adminURLText else { throw TSyncError.failure("TSYNC_TEST_POSTGRES_URL is not set") }
        return try PostgresURL(parsing: adminURLText, environment: ProcessInfo.processInfo.environment)
    }

    /// Swift Testing starts every test at once; each database brings a pool of connections, and
    /// the server allows a few hundred (scripts/postgres.sh: max_connections=200). At most this
    /// many databases are in use together, the other tests wait their turn.
    private static let slots = AsyncSemaphore(permits: 10)

    /// Creates an empty database with a random name, runs `body` with its URL, and drops it.
    static func withFreshDatabase<Result: Sendable>(_ body: @Sendable (PostgresURL) async throws -> Result) async throws -> Result {
        await slots.acquire()
        do {
            let result = try await withFreshDatabaseNow(body)
            await slots.release()
            return result
        } catch {
            await slots.release()
            throw error
        }
    }

    private static func withFreshDatabaseNow<Result: Sendable>(_ body: @Sendable (PostgresURL) async throws -> Result) async throws
        -> Result
    {
        let admin = try adminURL()
        let name = "tsync_test_" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        // A linguistic collation (ICU en-US: 'a' < 'B'), unlike SQLite's byte order, so that any
        // comparison that forgets COLLATE "C" shows up as a difference between the backends.
        // PostgreSQL built without ICU gets the cluster's default.
        do {
            try await execute("CREATE DATABASE \(name) LOCALE_PROVIDER icu ICU_LOCALE 'en-US' TEMPLATE template0", on: admin)
        } catch {
            try await execute("CREATE DATABASE \(name)", on: admin)
        }
        var url = admin
        url.database = name
        do {
            let result = try await body(url)
            try await execute("DROP DATABASE \(name) WITH (FORCE)", on: admin)
            return result
        } catch {
            try? await execute("DROP DATABASE \(name) WITH (FORCE)", on: admin)
            throw error
        }
    }

    /// Runs one statement as it is, outside any migration.
    static func execute(_ sql: String, on url: PostgresURL) async throws {
        try await PostgresDatabase.withDatabase(url: url, maximumConnections: 1, migrations: nil, logger: quietLogger) { database in
            try await database.untransacted(PostgresStatement(sql))
        }
    }
}

/// PostgresNIO logs every failed connection attempt; tests that provoke them want silence.
let quietLogger = Logger(label: "tsync.test.postgres", factory: { _ in SwiftLogNoOpLogHandler() })

/// A counting semaphore for tasks: `acquire` waits (without blocking a thread) until a permit is free.
actor AsyncSemaphore {
    private var permits: Int
    private var waiters: [CheckedContinuation<Void, Never>] = []

    init(permits: Int) {
        self.permits = permits
    }

    func acquire() async {
        if permits > 0 {
            permits -= 1
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    func release() {
        if waiters.isEmpty {
            permits += 1
        } else {
            waiters.removeFirst().resume()
        }
    }
}
