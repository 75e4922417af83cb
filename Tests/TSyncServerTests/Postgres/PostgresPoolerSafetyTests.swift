import PostgresNIO
import Testing
import TSyncModel

@testable import TSyncServer

/// What keeps the server right behind a transaction pooler (PgBouncer), checked on PostgreSQL
/// itself: every setting is the transaction's own (a session's would stay with a server
/// connection another client gets next), statements alone get them too, and a cancel finds its
/// statement by its tag, never another one.
// Needs a PostgreSQL server: TSYNC_TEST_POSTGRES_URL (scripts/test.sh starts one).
@Suite(.enabled(if: PostgresTestDatabase.isConfigured, "TSYNC_TEST_POSTGRES_URL is not set: no PostgreSQL to test against"))
struct PostgresPoolerSafetyTests {
    @Test func settingsAreEachTransactionsOwn() async throws {
        try await PostgresTestDatabase.withFreshDatabase { url in
            try await PostgresDatabase.withDatabase(url: url, maximumConnections: 1, statementTimeoutSeconds: 3, logger: quietLogger) {
                database in
                let look = PostgresStatement(
                    "SELECT current_setting('statement_timeout'), current_setting('idle_in_transaction_session_timeout'), "
                        + "current_setting('transaction_isolation')")
                let alone = try #require(try await database.rows(look).first).decode((String, String, String).self)
                #expect(alone == ("3s", "3s", "read committed"))
                let inTransaction = try await database.transaction { transaction in
                    .commit(try #require(try await transaction.rows(look).first).decode((String, String, String).self))
                }
                #expect(inTransaction == ("3s", "3s", "read committed"))
                // The session keeps none of it: the next client of its server connection would.
                let session = try await database.transaction(readOnly: true) { transaction in
                    .commit(
                        try #require(
                            try await transaction.rows(
                                PostgresStatement("SELECT reset_val FROM pg_settings WHERE name = 'statement_timeout'")
                            ).first
                        ).decode(String.self))
                }
                #expect(session == "0")
                // The statement timeout holds in a statement alone.
                await #expect(throws: QueryTimedOut.self) { try await database.rows(PostgresStatement("SELECT pg_sleep(10)")) }
            }
        }
    }

    /// A cancelled read stops in the database at once, and only it: another statement running
    /// on another connection of the same pool goes on.
    @Test func aCancelStopsItsOwnStatementOnly() async throws {
        try await PostgresTestDatabase.withFreshDatabase { url in
            try await PostgresDatabase.withDatabase(url: url, maximumConnections: 4, logger: quietLogger) { database in
                let other = Task { try await database.rows(PostgresStatement("SELECT 'done' FROM pg_sleep(2)")) }
                let cancelled = Task { try await database.rows(PostgresStatement("SELECT pg_sleep(30)")) }
                var seen: String?
                let running = try await eventually {
                    let rows = try await database.rows(
                        PostgresStatement(
                            "SELECT CAST(count(*) AS TEXT) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE '%pg_sleep(30)%' AND state = 'active' AND pid <> pg_backend_pid()"
                        ))
                    seen = try rows.first?.decode(String.self)
                    return seen == "1"
                }
                #expect(running, "the statement runs in the database: \(seen ?? "no answer")")
                let start = ContinuousClock.now
                cancelled.cancel()
                await #expect(throws: (any Error).self) { try await cancelled.value }
                #expect(ContinuousClock.now - start < .seconds(5), "stopped in the database, not after 30 s")
                let rows = try await other.value
                #expect(try rows.first?.decode(String.self) == "done")
            }
        }
    }
}
