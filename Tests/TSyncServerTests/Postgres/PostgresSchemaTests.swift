import Testing
import TSyncModel

@testable import TSyncServer

// Needs a PostgreSQL server: TSYNC_TEST_POSTGRES_URL (scripts/test.sh starts one).
@Suite(.enabled(if: PostgresTestDatabase.isConfigured, "TSYNC_TEST_POSTGRES_URL is not set: no PostgreSQL to test against"))
struct PostgresSchemaTests {
    @Test func createsTheSchemaOnceAndFindsNothingToDoAfterwards() async throws {
        try await PostgresTestDatabase.withFreshDatabase { url in
            for _ in 0..<2 {
                try await PostgresDatabase.withDatabase(url: url, logger: quietLogger) { _ in }
            }
            let versions = try await Self.appliedVersions(url)
            #expect(versions == PostgresSchema.migrations.map(\.version))
            let tables = try await Self.tableNames(url)
            for table in [
                "schema_migrations", "tsync_records", "tsync_table_clocks", "tsync_accounts", "tsync_tokens", "tsync_login_attempts",
            ] {
                #expect(tables.contains(table), "missing table \(table)")
            }
        }
    }

    @Test func instancesStartingTogetherMigrateOnce() async throws {
        try await PostgresTestDatabase.withFreshDatabase { url in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<6 {
                    group.addTask { try await PostgresDatabase.withDatabase(url: url, maximumConnections: 2, logger: quietLogger) { _ in } }
                }
                try await group.waitForAll()
            }
            #expect(try await Self.appliedVersions(url) == PostgresSchema.migrations.map(\.version))
        }
    }

    @Test func upgradesAnOlderSchemaWithTheMissingStepsOnly() async throws {
        try await PostgresTestDatabase.withFreshDatabase { url in
            let first = PostgresMigration(version: 1, name: "one", statements: ["CREATE TABLE probe (n integer)"])
            let second = PostgresMigration(version: 2, name: "two", statements: ["ALTER TABLE probe ADD COLUMN m integer"])
            try await PostgresDatabase.withDatabase(url: url, migrations: [first], logger: quietLogger) { _ in }
            #expect(try await Self.appliedVersions(url) == [1])
            // Were step 1 run again, CREATE TABLE would fail.
            try await PostgresDatabase.withDatabase(url: url, migrations: [first, second], logger: quietLogger) { database in
                try await database.rows(PostgresStatement("INSERT INTO probe (n, m) VALUES (1, 2)"))
            }
            #expect(try await Self.appliedVersions(url) == [1, 2])
        }
    }

    @Test func aFailedStepLeavesNothingBehind() async throws {
        try await PostgresTestDatabase.withFreshDatabase { url in
            let broken = PostgresMigration(
                version: 1, name: "broken", statements: ["CREATE TABLE half (n integer)", "CREATE TABLE half (n integer)"])
            await #expect(throws: (any Error).self) {
                try await PostgresDatabase.withDatabase(url: url, migrations: [broken], logger: quietLogger) { _ in }
            }
            let tables = try await Self.tableNames(url)
            #expect(!tables.contains("half"))
        }
    }

    @Test func refusesADatabaseFromANewerRelease() async throws {
        try await PostgresTestDatabase.withFreshDatabase { url in
            let future = PostgresMigration(version: 99, name: "future", statements: [])
            try await PostgresDatabase.withDatabase(url: url, migrations: PostgresSchema.migrations + [future], logger: quietLogger) { _ in
            }
            do {
                try await PostgresDatabase.withDatabase(url: url, logger: quietLogger) { _ in }
                Issue.record("a database with schema version 99 was accepted")
            } catch let error as TSyncError {
                #expect(error.kind == .failure)
                #expect(error.message.contains("upgrade tsync"))
            }
        }
    }

    @Test func explainsAnUnreachableServer() async throws {
        var url = try PostgresTestDatabase.adminURL()
        url.port = 1  // tcpmux: nothing listens there on a test machine, so the connection is refused
        do {
            try await PostgresDatabase.withDatabase(url: url, logger: quietLogger) { _ in }
            Issue.record("connected to a closed port")
        } catch let error as TSyncError {
            #expect(error.kind == .failure)
            #expect(error.message.contains("cannot reach PostgreSQL at \(url)"))
            #expect(error.message.contains("connection refused"), "the cause, from the first attempt: \(error.message)")
            #expect(!error.message.contains("Failure("), "no internal type's name: \(error.message)")
        }
    }

    @Test func explainsAMissingDatabase() async throws {
        var url = try PostgresTestDatabase.adminURL()
        url.database = "tsync_no_such_database"
        do {
            try await PostgresDatabase.withDatabase(url: url, logger: quietLogger) { _ in }
            Issue.record("connected to a database that does not exist")
        } catch let error as TSyncError {
            #expect(error.message.contains("createdb tsync_no_such_database"))
        }
    }

    // MARK: - Helpers

    static func appliedVersions(_ url: PostgresURL) async throws -> [Int] {
        try await PostgresDatabase.withDatabase(url: url, migrations: nil, logger: quietLogger) { database in
            try await database.rows(PostgresStatement("SELECT version FROM schema_migrations ORDER BY version"))
                .map { Int(try $0.decode(Int32.self)) }
        }
    }

    static func tableNames(_ url: PostgresURL) async throws -> Set<String> {
        try await PostgresDatabase.withDatabase(url: url, migrations: nil, logger: quietLogger) { database in
            Set(
                try await database.rows(PostgresStatement("SELECT tablename::text FROM pg_tables WHERE schemaname = 'public'"))
                    .map { try $0.decode(String.self) })
        }
    }

}
