import Synchronization
import Testing
import TSyncModel
import TSyncQuery

@testable import TSyncServer

/// Writers of one table run in parallel on PostgreSQL (docs/DESIGN.md §10): a pull-shaped read
/// stops below the floor of every write transaction in flight, so a record committed later never
/// lands below a checkpoint a reader already holds.
// Needs a PostgreSQL server: TSYNC_TEST_POSTGRES_URL (scripts/test.sh starts one).
@Suite(.enabled(if: PostgresTestDatabase.isConfigured, "TSYNC_TEST_POSTGRES_URL is not set: no PostgreSQL to test against"))
struct PostgresParallelWritesTests {
    /// A writer that has stamped its record but not committed (here a session of the test,
    /// doing what `PostgresStorage.write` does), and a later writer that commits first with the
    /// same time or a later one: a pull that returned the later record and moved its checkpoint
    /// past it would never bring the first. With the cap the pull waits for it; without, the
    /// same steps skip it (so this test can fail).
    /// Both with tsync's own page filter (a page in one call, `PullPage`) and with the bare
    /// checkpoint filter another client may send (the general path).
    @Test(arguments: [StorageReader.Filter.tsyncs, .bare])
    func aPullNeverPassesAWriterInFlight(filter: StorageReader.Filter) async throws {
        #expect(try await pulledIDs(capsPulls: true, filter: filter) == ["a", "base", "z"])
        #expect(
            try await pulledIDs(capsPulls: false, filter: filter) == ["base", "z"], "without the cap the pull skips the record in flight")
    }

    /// A writer stalled inside its transaction (a session that registered a floor and then does
    /// nothing) delays the records stamped after it, and only them; when its session ends they
    /// are pulled, none skipped.
    @Test(arguments: [StorageReader.Filter.tsyncs, .bare])
    func aStalledWriterDelaysPullsUntilItsTransactionEnds(filter: StorageReader.Filter) async throws {
        try await withStorages(capsPulls: true) { storage, raw in
            _ = try await storage.insert(table: "t", record: Record(id: "before", fields: [:]), scope: .shared)
            let stall = Gate()
            let registered = Gate()
            let writer = Task {
                try await raw.transaction { transaction in
                    _ = try await WriteFloor.register(transaction, key: "t", now: Timestamp.now())
                    registered.open()
                    await stall.wait()
                    return .rollback(())
                }
            }
            await registered.wait()
            for index in 0..<5 {
                _ = try await storage.insert(table: "t", record: Record(id: "after\(index)", fields: [:]), scope: .shared)
            }
            var reader = StorageReader(table: "t", filter: filter)
            try await reader.pull(storage)
            #expect(reader.pulled.keys.sorted() == ["before"], "records stamped after the stalled floor wait")
            stall.open()
            try await writer.value
            try await reader.pull(storage)
            #expect(reader.pulled.keys.sorted() == ["after0", "after1", "after2", "after3", "after4", "before"])
            #expect(reader.pulled.values.allSatisfy { $0 == 1 })
        }
    }

    /// Many writers on two instances' pools at once, inserts and batches, while a reader pulls
    /// in a loop: every record is pulled exactly once.
    @Test func everyRecordIsPulledOnceUnderParallelWriters() async throws {
        try await PostgresTestDatabase.withFreshDatabase { url in
            try await PostgresStorage.withStorage(url: url, maximumConnections: 6, logger: quietLogger) { first in
                try await PostgresStorage.withStorage(url: url, maximumConnections: 6, logger: quietLogger) { second in
                    let storages = [first, second]
                    let writing = SharedFlag()
                    let writers = Task {
                        defer { writing.clear() }
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            for writer in 0..<8 {
                                let storage = storages[writer % 2]
                                group.addTask {
                                    for step in 0..<30 {
                                        let writes = (0..<(step % 4 == 0 ? 5 : 1)).map { item in
                                            RecordWrite(
                                                table: "race", action: .insert(Record(id: "w\(writer)-\(step)-\(item)", fields: [:])),
                                                scope: .shared)
                                        }
                                        let outcomes = try await storage.write(writes, atomic: false)
                                        #expect(outcomes.allSatisfy { $0.succeeded })
                                    }
                                }
                            }
                            try await group.waitForAll()
                        }
                    }
                    var reader = StorageReader(table: "race")
                    var pulls = 0
                    while writing.isSet {
                        try await reader.pull(storages[pulls % 2])
                        pulls += 1
                    }
                    try await writers.value
                    try await reader.pull(first)
                    // Per writer 8 batches of 5 and 22 single inserts.
                    #expect(reader.pulled.count == 8 * (8 * 5 + 22))
                    #expect(reader.pulled.values.allSatisfy { $0 == 1 }, "no record pulled twice")
                    #expect(pulls > 1)
                }
            }
        }
    }

    /// Single writes from many clients at once through two instances commit in groups
    /// (docs/DESIGN.md §10), while a reader pulls in a loop from either: every record is pulled
    /// exactly once, and no write's `updatedAt` is a second past the clock when it is answered.
    @Test func groupedSingleWritesOnTwoInstancesArePulledOnceAtTheClock() async throws {
        try await PostgresTestDatabase.withFreshDatabase { url in
            try await PostgresStorage.withStorage(url: url, maximumConnections: 6, logger: quietLogger) { first in
                try await PostgresStorage.withStorage(url: url, maximumConnections: 6, logger: quietLogger) { second in
                    let storages = [first, second]
                    let writing = SharedFlag()
                    let (writers, steps) = (64, 40)
                    let leads = Task {
                        defer { writing.clear() }
                        return try await withThrowingTaskGroup(of: Int64.self) { group in
                            for writer in 0..<writers {
                                let storage = storages[writer % 2]
                                group.addTask {
                                    var lead = Int64.min
                                    for step in 0..<steps {
                                        let write = RecordWrite(
                                            table: "burst", action: .insert(Record(id: "w\(writer)-\(step)", fields: [:])), scope: .shared)
                                        let outcome = try await storage.write([write], atomic: false)
                                        let answered = Timestamp.now().millisecondsSinceEpoch
                                        guard case .inserted(let record)? = outcome.first, let stamp = record.system.updatedAt else {
                                            Issue.record("w\(writer)-\(step): \(outcome)")
                                            continue
                                        }
                                        lead = max(lead, stamp.millisecondsSinceEpoch - answered)
                                    }
                                    return lead
                                }
                            }
                            return try await group.reduce(into: [Int64]()) { $0.append($1) }
                        }
                    }
                    var reader = StorageReader(table: "burst")
                    var pulls = 0
                    while writing.isSet {
                        try await reader.pull(storages[pulls % 2])
                        pulls += 1
                    }
                    let lead = try #require(try await leads.value.max())
                    try await reader.pull(second)
                    #expect(reader.pulled.count == writers * steps)
                    #expect(reader.pulled.values.allSatisfy { $0 == 1 }, "no record pulled twice")
                    #expect(pulls > 1)
                    #expect(lead < 1000, "an updatedAt was \(lead) ms past the clock when answered")
                    #expect(first.groups.count == 0 && second.groups.count == 0, "no group outlives its writes")
                }
            }
        }
    }

    /// A write that does not commit registered a floor all the same, and a held read may have
    /// stopped below it: it wakes the table's held reads as a commit does.
    @Test func aWriteThatDoesNotCommitWakesHeldReads() async throws {
        try await withStorages(capsPulls: true) { storage, _ in
            let feed = try #require(storage.changes)
            // A held read holds the table's entry in the feed.
            #expect(feed.admit(limit: 1, table: "t"))
            defer { feed.release(table: "t") }
            let before = feed.generation("t")
            let missing = RecordWrite(table: "t", action: .modify(id: "nobody", change: .softDelete, expected: .any), scope: .shared)
            #expect(try await storage.write([missing], atomic: false) == [.notFound])
            #expect(feed.generation("t") != before)
        }
    }

    // MARK: - Helpers

    /// The ids an incremental reader ends with after: record "base"; a writer in flight stamps
    /// "a" at its floor; "z" commits; a pull; the writer commits; a pull.
    private func pulledIDs(capsPulls: Bool, filter: StorageReader.Filter) async throws -> [String] {
        try await withStorages(capsPulls: capsPulls) { storage, raw in
            _ = try await storage.insert(table: "t", record: Record(id: "base", fields: [:]), scope: .shared)
            let stamped = Gate()
            let commit = Gate()
            let writer = Task {
                try await raw.transaction { transaction in
                    let floor = try await WriteFloor.register(transaction, key: "t", now: Timestamp.now())
                    var insert = PostgresStatement(
                        "INSERT INTO tsync_records (table_name, id, created_at, updated_at, version, deleted, body, body_text) VALUES ('t', 'a', "
                    )
                    let stamp = insert.bind(floor.iso8601)
                    insert.append("\(stamp), \(stamp), 'v', false, '{}'::jsonb, '{}')")
                    try await transaction.execute(insert)
                    stamped.open()
                    await commit.wait()
                    return .commit(())
                }
            }
            await stamped.wait()
            _ = try await storage.insert(table: "t", record: Record(id: "z", fields: [:]), scope: .shared)
            var reader = StorageReader(table: "t", filter: filter)
            try await reader.pull(storage)
            commit.open()
            try await writer.value
            try await reader.pull(storage)
            return reader.pulled.keys.sorted()
        }
    }

    /// A storage on a fresh database, and a second pool on it for the test's own sessions.
    private func withStorages<Result: Sendable>(
        capsPulls: Bool, _ body: @Sendable (PostgresStorage, PostgresDatabase) async throws -> Result
    ) async throws -> Result {
        try await PostgresTestDatabase.withFreshDatabase { url in
            try await PostgresDatabase.withDatabase(url: url, maximumConnections: 4, logger: quietLogger) { database in
                try await PostgresDatabase.withDatabase(url: url, maximumConnections: 2, migrations: nil, logger: quietLogger) { raw in
                    try await body(PostgresStorage(database: database, clock: Timestamp.now, capsPulls: capsPulls), raw)
                }
            }
        }
    }
}

/// A client's incremental pull through the storage (docs/DESIGN.md §2.1), counting how often
/// each id came.
struct StorageReader {
    /// The page filter after a checkpoint.
    enum Filter: Sendable {
        /// tsync's client's (`Checkpoint.filterAfter`): a page in one call (`PullPage`).
        case tsyncs
        /// The checkpoint alone, as another client may send it: the general path.
        case bare
    }

    let table: String
    var filter = Filter.tsyncs
    var checkpoint: (updatedAt: String, id: String)?
    var pulled: [String: Int] = [:]

    init(table: String, filter: Filter = .tsyncs) {
        self.table = table
        self.filter = filter
    }

    /// Pulls until a page comes back short.
    mutating func pull(_ storage: PostgresStorage) async throws {
        let pageSize = 7
        while true {
            var query = RecordQuery(orderBy: [SortKey(field: "updatedAt"), SortKey(field: "id")], top: pageSize, includeDeleted: true)
            if let (stamp, id) = checkpoint {
                query.filter = try ODataParser.parseFilter(Self.filterText(after: stamp, id, filter))
            }
            let page = try await storage.query(table: table, query, scope: .shared).records()
            for record in page {
                pulled[record.id, default: 0] += 1
                checkpoint = (record.system.updatedAt?.iso8601 ?? "", record.id)
            }
            if page.count < pageSize { return }
        }
    }

    /// The `$filter` of the page after (`stamp`, `id`).
    static func filterText(after stamp: String, _ id: String, _ filter: Filter) -> String {
        let quotedID = id.replacing("'", with: "''")
        switch filter {
        case .tsyncs:
            return "updatedAt ge datetimeoffset'\(stamp)' and (updatedAt gt datetimeoffset'\(stamp)' "
                + "or updatedAt eq datetimeoffset'\(stamp)' and id gt '\(quotedID)')"
        case .bare:
            return "(updatedAt gt datetimeoffset'\(stamp)') or (updatedAt eq datetimeoffset'\(stamp)' and id gt '\(quotedID)')"
        }
    }
}

/// Opened once; every waiter, before or after, goes on.
private final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let open = state.withLock { state in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }
}
