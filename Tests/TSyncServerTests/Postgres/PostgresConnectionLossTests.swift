import Testing
import TSyncModel

@testable import TSyncServer

/// A connection the server ends under a transaction fails what waits on it, and the pool goes
/// on. PostgresNIO never answers a statement written after its connection closed: the `ROLLBACK`
/// after such a failure waited for ever, and with it the request, or the start of the storage
/// (a test run hung at 0 CPU: a migration's connection ended while a loaded machine's event loop
/// stalled past the 1 s `idle_in_transaction_session_timeout` of `--query-timeout 1`).
// Needs a PostgreSQL server: TSYNC_TEST_POSTGRES_URL (scripts/test.sh starts one).
@Suite(
    .enabled(if: PostgresTestDatabase.isConfigured, "TSYNC_TEST_POSTGRES_URL is not set: no PostgreSQL to test against"),
    .timeLimit(.minutes(2)))
struct PostgresConnectionLossTests {
    @Test func aTransactionWhoseConnectionTheServerEndsFails() async throws {
        let admin = try PostgresTestDatabase.adminURL()
        try await PostgresTestDatabase.withFreshDatabase { url in
            try await PostgresDatabase.withDatabase(url: admin, maximumConnections: 1, migrations: nil, logger: quietLogger) { look in
                try await PostgresDatabase.withDatabase(url: url, maximumConnections: 1, logger: quietLogger) { database in
                    var sessions = PostgresStatement("SELECT CAST(count(*) AS TEXT) FROM pg_stat_activity WHERE datname = ")
                    sessions.append(sessions.bind(url.database))
                    let running = SharedFlag()
                    let attempt = Task {
                        defer { running.clear() }
                        return try await database.transaction { transaction in
                            try await transaction.execute(PostgresStatement("SET LOCAL idle_in_transaction_session_timeout = 100"))
                            // The server ends the connection while the transaction is idle.
                            let ended = try await eventually { try await look.rows(sessions).first?.decode(String.self) == "0" }
                            #expect(ended, "the server ends the idle transaction's connection")
                            try await transaction.execute(PostgresStatement("SELECT 1"))
                            return .commit(())
                        }
                    }
                    let answered = try await eventually { !running.isSet }
                    // Without an answer the test stops here, failed: waiting for the task would hang it.
                    try #require(answered, "the transaction whose connection ended is answered")
                    let error = await #expect(throws: TSyncError.self) { try await attempt.value }
                    #expect(error?.message.contains("PostgreSQL at") == true, "\(String(describing: error))")
                    let after = try await database.rows(PostgresStatement("SELECT 'on'")).first?.decode(String.self)
                    #expect(after == "on", "the pool goes on with a new connection")
                }
            }
        }
    }
}
