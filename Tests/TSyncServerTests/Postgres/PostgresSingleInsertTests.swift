import Synchronization
import Testing
import TSyncModel

@testable import TSyncServer

/// A request that inserts one record is one call of `tsync_insert_one` on PostgreSQL
/// (`SingleInsert`, docs/DESIGN.md §10): it must answer as the write transaction did, store the
/// same text, and read with a snapshot taken after its floor was registered.
// Needs a PostgreSQL server: TSYNC_TEST_POSTGRES_URL (scripts/test.sh starts one).
@Suite(.enabled(if: PostgresTestDatabase.isConfigured, "TSYNC_TEST_POSTGRES_URL is not set: no PostgreSQL to test against"))
struct PostgresSingleInsertTests {
    /// The same inserts through the call and through a write transaction: the same outcomes
    /// (so the same status codes and bodies), apart from versions and times.
    @Test func answersAsAWriteTransactionDoes() async throws {
        let inOneCall = try await Self.outcomes(insertsInOneCall: true)
        let inTransaction = try await Self.outcomes(insertsInOneCall: false)
        #expect(inOneCall == inTransaction)
        #expect(
            inOneCall == [
                "inserted a", "exists a", "inserted p", "exists (hidden)", "unstorable", "unstorable", "modified a", "exists a deleted",
                "inserted b",
            ])
    }

    /// The text the function stores is `Timestamp.iso8601`'s (pulls compare it as text), and
    /// the answer carries the stored time.
    @Test func storesTheTimeAsTimestampWritesIt() async throws {
        let clocks: [Int64] = [0, 999, 86_399_999, 951_782_400_000, 1_764_150_000_123, 4_102_444_800_001, 253_402_300_799_999]
        let now = Mutex<Int64>(0)
        try await PostgresTestDatabase.withFreshDatabase { url in
            try await PostgresStorage.withStorage(
                url: url, maximumConnections: 2, clock: { Timestamp(millisecondsSinceEpoch: now.withLock { $0 }) }, logger: quietLogger
            ) { storage in
                for (index, clock) in clocks.enumerated() {
                    now.withLock { $0 = clock }
                    let outcome = try await storage.insert(table: "t\(index)", record: Record(id: "r", fields: [:]), scope: .shared)
                    guard case .inserted(let stored) = outcome else {
                        Issue.record("not inserted: \(outcome)")
                        continue
                    }
                    let expected = Timestamp(millisecondsSinceEpoch: clock)
                    #expect(stored.system.updatedAt == expected)
                    #expect(stored.system.createdAt == expected)
                    var select = PostgresStatement("SELECT created_at, updated_at FROM tsync_records WHERE table_name = ")
                    select.append(select.bind("t\(index)"))
                    let row = try #require(try await storage.database.rows(select).first)
                    let (createdAt, updatedAt) = try row.decode((String, String).self)
                    #expect(updatedAt == expected.iso8601)
                    #expect(createdAt == expected.iso8601)
                }
            }
        }
    }

    /// The read after the floor takes a new snapshot: the call is held between its first
    /// statements (its writers' lock waits for a session of the test that holds it exclusively)
    /// while a record with a later time commits; its insert must be stamped after that record.
    /// Were the read's snapshot the first statement's, it would be stamped at the clock, before.
    @Test func readsWithASnapshotTakenAfterItsFloor() async throws {
        try await PostgresTestDatabase.withFreshDatabase { url in
            try await PostgresStorage.withStorage(url: url, maximumConnections: 2, logger: quietLogger) { storage in
                try await PostgresDatabase.withDatabase(url: url, maximumConnections: 2, migrations: nil, logger: quietLogger) { raw in
                    let hash = WriteFloor.tableHash("t")
                    let later = Timestamp(millisecondsSinceEpoch: Timestamp.now().millisecondsSinceEpoch + 3_600_000)
                    let (held, inserted) = try await raw.transaction { session in
                        var lock = PostgresStatement("SELECT pg_advisory_xact_lock(")
                        lock.append(lock.bind(WriteFloor.writersKey) + "::integer, " + lock.bind(hash) + "::integer)")
                        try await session.execute(lock)
                        let insert = Task {
                            try await storage.insert(table: "t", record: Record(id: "held", fields: [:]), scope: .shared)
                        }
                        // Until the call waits for the lock (a state, not a time).
                        #expect(try await eventually { try await Self.callsWaitingForALock(raw) > 0 })
                        var record = PostgresStatement(
                            "INSERT INTO tsync_records (table_name, id, created_at, updated_at, version, deleted, body, body_text) VALUES ('t', 'later', "
                        )
                        let stamp = record.bind(later.iso8601)
                        record.append("\(stamp), \(stamp), 'v', false, '{}'::jsonb, '{}')")
                        // Committed by its own autocommit statement on the raw pool's other connection.
                        try await raw.rows(record)
                        return .commit((true, insert))
                    }
                    #expect(held)
                    guard case .inserted(let stored) = try await inserted.value else {
                        Issue.record("not inserted")
                        return
                    }
                    let stamp = try #require(stored.system.updatedAt)
                    #expect(stamp > later, "stamped \(stamp), after the record that committed while it waited (\(later))")
                }
            }
        }
    }

    /// A database of schema 3 with records in it gains the function (step 4, and the later steps)
    /// and keeps them.
    @Test func upgradesADatabaseOfSchemaThree() async throws {
        try await PostgresTestDatabase.withFreshDatabase { url in
            let three = Array(PostgresSchema.migrations.prefix { $0.version <= 3 })
            #expect(three.map(\.version) == [1, 2, 3])
            let old = try await PostgresDatabase.withDatabase(url: url, migrations: three, logger: quietLogger) { database in
                let storage = PostgresStorage(database: database, clock: Timestamp.now, insertsInOneCall: false)
                // Schema 3 has no history table (step 6).
                storage.keepHistory(false)
                return try await storage.insert(table: "t", record: Record(id: "old", fields: ["n": .int(1)]), scope: .shared)
            }
            guard case .inserted(let stored) = old else {
                Issue.record("not inserted: \(old)")
                return
            }
            #expect(try await PostgresSchemaTests.appliedVersions(url) == [1, 2, 3])
            try await PostgresStorage.withStorage(url: url, maximumConnections: 2, logger: quietLogger) { storage in
                let clash = try await storage.write(
                    [RecordWrite(table: "t", action: .insert(Record(id: "old", fields: [:])), scope: .shared)], atomic: false)
                #expect(clash == [.exists(stored)])
                let new = try await storage.insert(table: "t", record: Record(id: "new", fields: [:]), scope: .shared)
                guard case .inserted(let record) = new else {
                    Issue.record("not inserted: \(new)")
                    return
                }
                #expect(try #require(record.system.updatedAt) > #require(stored.system.updatedAt))
            }
            #expect(try await PostgresSchemaTests.appliedVersions(url) == PostgresSchema.migrations.map(\.version))
        }
    }

    // MARK: - Helpers

    /// Inserts, a clash, another user's id, values PostgreSQL cannot store, and an id soft-deleted,
    /// on a fresh database, described without versions and times.
    private static func outcomes(insertsInOneCall: Bool) async throws -> [String] {
        try await PostgresTestDatabase.withFreshDatabase { url in
            try await PostgresDatabase.withDatabase(url: url, maximumConnections: 2, logger: quietLogger) { database in
                let storage = PostgresStorage(database: database, clock: Timestamp.now, insertsInOneCall: insertsInOneCall)
                var lines: [String] = []
                func insert(_ table: String, _ record: Record, _ scope: OwnerScope = .shared) async throws {
                    let outcome = try await storage.write([RecordWrite(table: table, action: .insert(record), scope: scope)], atomic: false)
                    switch outcome.first {
                    case .inserted(let stored)?:
                        #expect(stored.fields == record.fields)
                        #expect(stored.system.createdAt == stored.system.updatedAt)
                        #expect(
                            try await storage.record(table: table, id: record.id, scope: scope) == stored, "the answer is what is stored")
                        lines.append("inserted \(record.id)")
                    case .exists(let current?)?:
                        #expect(
                            current == (try await storage.record(table: table, id: record.id, scope: scope)),
                            "the body is the stored record")
                        lines.append("exists \(current.id)\(current.system.deleted ? " deleted" : "")")
                    case .exists(nil)?: lines.append("exists (hidden)")
                    case .unstorable?: lines.append("unstorable")
                    case let other: lines.append("\(String(describing: other))")
                    }
                }
                let fields: [String: JSONValue] = ["n": .double(1.5), "big": .int(1 << 60), "o": .object(["b": .string("é"), "a": .null])]
                try await insert("items", Record(id: "a", fields: fields))
                try await insert("items", Record(id: "a", fields: ["other": .bool(true)]))
                try await insert("mine", Record(id: "p", fields: [:]), .owner("alice"))
                try await insert("mine", Record(id: "p", fields: [:]), .owner("bob"))
                try await insert("items", Record(id: "z", fields: ["s": .string("a\u{0}b")]))
                try await insert("items", Record(id: "z", fields: ["d": .double(-0.0)]))
                let delete = RecordWrite(table: "items", action: .modify(id: "a", change: .softDelete, expected: .any), scope: .shared)
                if case .modified? = try await storage.write([delete], atomic: false).first { lines.append("modified a") }
                try await insert("items", Record(id: "a", fields: [:]))
                try await insert("Items", Record(id: "b", fields: [:]))
                return lines
            }
        }
    }

    /// Calls of `tsync_insert_one` waiting for a lock.
    private static func callsWaitingForALock(_ database: PostgresDatabase) async throws -> Int {
        let statement = PostgresStatement(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%tsync_insert_one%' AND pid <> pg_backend_pid()"
        )
        return Int(try #require(try await database.rows(statement).first).decode(Int64.self))
    }
}
