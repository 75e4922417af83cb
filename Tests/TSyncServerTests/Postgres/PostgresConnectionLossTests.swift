import PostgresNIO
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
                    let error = await #expect(throws: DatabaseConnectionEnded.self) { try await attempt.value }
                    #expect(error?.description.contains("ended the connection") == true, "\(String(describing: error))")
                    let after = try await database.rows(PostgresStatement("SELECT 'on'")).first?.decode(String.self)
                    #expect(after == "on", "the pool goes on with a new connection")
                }
            }
        }
    }

    /// `/ready`'s kept session, ended by PostgreSQL (a restart, `pg_terminate_backend`), is
    /// replaced at the next look, which answers: PostgresNIO never answers a statement written on
    /// a closed connection, and the look waited out its whole limit to say the database did not
    /// answer, while it ran.
    @Test func aReadinessSessionPostgreSQLEndedIsReplacedAtOnce() async throws {
        let admin = try PostgresTestDatabase.adminURL()
        try await PostgresTestDatabase.withFreshDatabase { url in
            try await PostgresDatabase.withDatabase(url: admin, maximumConnections: 1, migrations: nil, logger: quietLogger) { look in
                try await PostgresDatabase.withDatabase(url: url, maximumConnections: 1, logger: quietLogger) { database in
                    try await database.checkReady()
                    var session = PostgresStatement(
                        "SELECT CAST(count(*) AS TEXT) FROM pg_stat_activity WHERE query LIKE '%pg_is_in_recovery%' ")
                    session.append("AND pid <> pg_backend_pid() AND datname = \(session.bind(url.database))")
                    var end = PostgresStatement(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_is_in_recovery%' ")
                    end.append("AND pid <> pg_backend_pid() AND datname = \(end.bind(url.database))")
                    #expect(try await look.rows(session).first?.decode(String.self) == "1", "one readiness session")
                    try await look.rows(end)
                    let ended = try await eventually { try await look.rows(session).first?.decode(String.self) == "0" }
                    #expect(ended, "PostgreSQL ended the readiness session")
                    // Past the time a look's outcome is shared (`ReadinessCheck.reuse`): the next
                    // check looks again.
                    try await Task.sleep(for: database.readiness.reuse)
                    let started = ContinuousClock.now
                    try await database.checkReady()
                    let took = ContinuousClock.now - started
                    #expect(took < ReadinessSession.answerLimit, "answered, not waited out: \(took)")
                }
            }
        }
    }

    /// What every statement goes through (`sentIfOpen`: a transaction's, the query deadline's
    /// cancel, `/ready`'s look): on a connection PostgreSQL has ended it fails at once, as a
    /// connection ended, where PostgresNIO's own `query` is never answered.
    @Test func aStatementOnAConnectionPostgreSQLEndedFailsAtOnce() async throws {
        let admin = try PostgresTestDatabase.adminURL()
        try await PostgresDatabase.withDatabase(url: admin, maximumConnections: 1, migrations: nil, logger: quietLogger) { look in
            let connection = try await PostgresConnection.connect(
                configuration: try admin.connectionConfiguration(), id: 7, logger: quietLogger)
            let pid = try await connection.sentIfOpen(PostgresQuery(unsafeSQL: "SELECT pg_backend_pid()"), logger: quietLogger)
                .get().rows.first?.decode(Int32.self)
            var end = PostgresStatement("SELECT pg_terminate_backend(CAST(")
            end.append(end.bind(Int64(pid ?? 0)) + " AS integer))")
            do {
                try await look.rows(end)
            } catch {
                try? await connection.close()
                throw error
            }
            let closed = try await eventually { connection.isClosed }
            if !closed { try? await connection.close() }
            try #require(closed, "PostgreSQL ended the connection")
            let running = SharedFlag()
            let sent = Task {
                defer { running.clear() }
                _ = try await connection.sentIfOpen(PostgresQuery(unsafeSQL: "SELECT 1"), logger: quietLogger).get()
            }
            let answered = try await eventually { !running.isSet }
            // Without an answer the test stops here, failed: waiting for the task would hang it.
            try #require(answered, "the statement on the ended connection is answered")
            await #expect(throws: PostgresConnectionClosed.self) { try await sent.value }
            #expect(PostgresDatabase.ended(PostgresConnectionClosed()) == "", "said as a connection PostgreSQL ended")
            #expect(look.translated(PostgresConnectionClosed()) is DatabaseConnectionEnded)
        }
    }
}
