#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import GRDB
import GRDBSQLite
import Synchronization
import TSyncModel
import TSyncQuery
import TSyncSQLite

/// GRDB has a `Record` class too; here a record is always the sync record.
private typealias Record = TSyncModel.Record

/// `ServerStorage` on one SQLite file in WAL mode (GRDB `DatabasePool`: concurrent reads, one writer).
///
/// Writes run in IMMEDIATE transactions, so they are serialized across connections and processes;
/// `updatedAt` is taken from the table's clock inside that transaction, which makes commit order and
/// `updatedAt` order agree (docs/DESIGN.md §2.2).
public final class SQLiteStorage: ServerStorage {
    let pool: DatabasePool
    let clock: @Sendable () -> Timestamp
    let renderer = SQLRenderer(schema: SQLiteSchema.querySchema)
    /// SQL names of record tables known to exist. Tables are never dropped, so a cached name stays true.
    private let knownTables = Mutex<Set<String>>([])
    /// The declared indexed fields, by SQL table name (`declareIndexes`).
    let indexes = Mutex<[String: [IndexedField]]>([:])
    /// Woken after each commit that wrote records (the live route, docs/DESIGN.md §8.1).
    public let changes: ChangeFeed? = ChangeFeed()
    /// The file opened, as found then (`checkReady`: a file removed or replaced under the server).
    let openedFile: SQLiteFileIdentity?
    /// Copies the WAL back into the database beside the writers (`withCheckpoints`).
    private let checkpointer: WALCheckpointer
    /// Whether writes append their versions to `tsync_history` (`keepHistory`).
    let historyOn = Atomic(true)
    /// The requests waiting to be written, and whether a group is being committed (`write`).
    private let group = Mutex<(waiting: [GroupedWrite], committing: Bool)>(([], false))
    /// Tables one account may create; 0 for no limit (`limitTables`).
    private let tableLimit = Atomic(0)
    /// The last `updatedAt` this storage gave each table, in milliseconds (`commitGroups`).
    private let lastStamps = Mutex<[String: Int64]>([:])
    /// The reader connections, shared between clients (`ReadShares`, docs/DESIGN.md §10.1).
    let shares = ReadShares(connections: SQLiteStorage.readers)
    /// Pull pages read ahead of their requests (`quickQuery`), given only while nothing has
    /// committed since their read began.
    let readAhead: PullReadAhead<RecordPage>

    /// The longest string or blob a statement may make (`SQLITE_LIMIT_LENGTH`): eight times a
    /// request body, the largest thing stored.
    static let maximumValueBytes = 8 << 20

    /// How long a connection waits for another's lock (seconds).
    static let writerBusyTimeout = 10.0

    /// Reader connections of the pool: `ReadShares` lets clients' reads take all but a few, which
    /// token lookups and logins find free.
    static let readers = 10

    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    /// - Parameter clock: the wall clock `updatedAt` is taken from; tests may pass their own.
    public init(path: String, clock: @escaping @Sendable () -> Timestamp = Timestamp.now) throws {
        var configuration = Configuration()
        // Another instance (or `tsync user`) may hold the write lock for a moment.
        configuration.busyMode = .timeout(Self.writerBusyTimeout)
        configuration.label = "tsync-server"
        configuration.maximumReaderCount = Self.readers
        let checkpointer = WALCheckpointer()
        self.checkpointer = checkpointer
        configuration.prepareDatabase { db in
            try checkpointer.watch(db)
            // A string or blob SQLite builds may not exceed this: a `replace` in a client's
            // $filter cannot make SQLite allocate gigabytes (docs/DESIGN.md §10).
            sqlite3_limit(db.sqliteConnection, SQLITE_LIMIT_LENGTH, Int32(Self.maximumValueBytes))
        }
        do {
            pool = try Self.openPool(path: path, configuration: configuration)
            openedFile = SQLiteFileIdentity(path: path)
            readAhead = Self.readAhead(path: path)
        } catch let error as DatabaseError {
            throw TSyncError.failure(
                "cannot open the server database \(Identifiers.quoted(path)): \(error.message ?? "SQLite error \(error.resultCode)")")
        }
        self.clock = clock
    }

    /// Pages read ahead, with SQLite's count of the commits other connections made
    /// (`PRAGMA data_version`, any process's) as their version, on a connection of its own that
    /// never writes: the count is per connection. None are read ahead if it cannot be opened.
    private static func readAhead(path: String) -> PullReadAhead<RecordPage> {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = "tsync-server-versions"
        guard let versions = try? DatabaseQueue(path: path, configuration: configuration) else {
            return PullReadAhead(capacity: 0)
        }
        // Asked twice a page of a clone: prepared once.
        return PullReadAhead { try? versions.inDatabase { db in try UInt64.fetchOne(db.cachedStatement(sql: "PRAGMA data_version")) } }
    }

    /// Opens the pool and brings its schema up to date, trying again while another process is
    /// doing the same to the same file.
    ///
    /// Opening a pool turns the file to WAL mode and writes a first WAL frame (GRDB), and SQLite
    /// answers `SQLITE_BUSY` to those without calling the busy handler when another connection is
    /// doing the same at that moment: two `tsync user add` creating one new file at once met it
    /// about once in ten. The wait is bounded by the same limit as a writer's.
    private static func openPool(path: String, configuration: Configuration) throws -> DatabasePool {
        let deadline = ContinuousClock.now + .seconds(writerBusyTimeout)
        while true {
            do {
                let pool = try DatabasePool(path: path, configuration: configuration)
                try SQLiteSchema.migrate(pool)
                return pool
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY && ContinuousClock.now < deadline {
                usleep(UInt32.random(in: 5_000...50_000))
            }
        }
    }

    /// Runs `body` with the WAL checkpointed in the background (`WALCheckpointer`), and stops
    /// checkpointing when it ends. Without this scope the WAL is only checkpointed when the
    /// database is closed.
    public func withCheckpoints<Result: Sendable>(_ body: () async throws -> Result) async throws -> Result {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [checkpointer, pool] in await checkpointer.run(pool: pool) }
            defer { group.cancelAll() }
            return try await body()
        }
    }

    // MARK: - Reads

    public func shareReads(perClient: Int) { shares.setPerClient(perClient) }
    public func limitTables(perAccount: Int) { tableLimit.store(perAccount, ordering: .relaxed) }

    /// A read of records for a client: in one of its shares of the readers (`ReadShares`).
    func clientRead<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        // Taken here: GRDB runs `body` on a queue of its own, where task-locals are not set.
        let wait = QueryDeadline.wait
        return try await shares.run {
            try await pool.read { db in
                wait?.reached()
                return try body(db)
            }
        }
    }

    public func record(table: String, id: String, scope: OwnerScope) async throws -> TSyncModel.Record? {
        let sqlName = SQLiteSchema.recordTableName(table)
        return try await clientRead { db in
            guard try self.tableExists(db, sqlName) else { return nil }
            return try Self.fetchRecord(db, sqlName: sqlName, id: id, scope: scope)?.record
        }
    }

    public func query(table: String, _ query: RecordQuery, scope: OwnerScope) async throws -> RecordPage {
        let sqlName = SQLiteSchema.recordTableName(table)
        // Rendering errors (a filter the library cannot translate) surface before touching the database.
        let statements = try statements(sqlName: sqlName, query, scope: scope)
        return try await clientRead { db in
            // In the page's own read: a tombstone removed before it is in the horizon it answers.
            let horizon = try Self.deletedHorizon(db, table: table)
            guard try self.tableExists(db, sqlName) else {
                var page = RecordPage(records: [], totalCount: query.includeTotalCount ? 0 : nil)
                page.deletedHorizon = horizon
                return page
            }
            var page = try Self.page(db, statements, query)
            page.deletedHorizon = horizon
            return page
        }
    }

    public func quickQuery(table: String, _ query: RecordQuery, scope: OwnerScope, client: String?) async throws -> RecordPage? {
        guard Self.isShort(query, scope: scope) else { return nil }
        let read = { @Sendable (query: RecordQuery) throws -> RecordPage? in
            try self.readShort(table: table, query, scope: scope, client: client)
        }
        // A page of the walk whose page before was full was read ahead, as the page before went
        // out: its request, sent when that page arrived, takes it (`PullReadAhead`). A read
        // ahead waits for the client's share as a request's quick read does: not at all.
        guard let walk = PullWalk(table: table, query, scope: scope) else { return try read(query) }
        return try await readAhead.page(walk) { walk in try walk.query(like: query).flatMap(read) }
    }

    /// A quick page (`quickQuery`) read on this thread: GRDB's blocking read runs here, its
    /// reader's queue being idle (`DispatchQueue.sync`). Nil when `client`'s share is taken.
    private func readShort(table: String, _ query: RecordQuery, scope: OwnerScope, client: String?) throws -> RecordPage? {
        let sqlName = SQLiteSchema.recordTableName(table)
        let statements = try statements(sqlName: sqlName, query, scope: scope)
        let read = { () throws -> RecordPage in
            try self.pool.read { db in
                QueryDeadline.wait?.reached()
                let horizon = try Self.deletedHorizon(db, table: table)
                guard try self.tableExists(db, sqlName) else {
                    var page = RecordPage(records: [], totalCount: nil)
                    page.deletedHorizon = horizon
                    return page
                }
                // Prepared once per connection: a pull's pages differ in their arguments only, and
                // these forms are few (two a table), so GRDB's cache of them stays small.
                var page = try Self.page(db, statements, query, cached: true)
                page.deletedHorizon = horizon
                return page
            }
        }
        guard let client else { return try read() }
        return try shares.runIfFree(client, read)
    }

    /// The pages `quickQuery` reads: a walk of the `(updated_at, id)` index that stops after
    /// `$top` rows: a pull's page, with no filter or the checkpoint's (`FilterExpression.pullAfter`:
    /// its `ge` gives SQLite the index's range; without it SQLite may read every later record and
    /// sort them), in `updatedAt, id` order, deleted records included (a page of live ones could
    /// walk any number of tombstones), no count, no `$skip`, over the shared records (`owner`
    /// narrows by another index).
    static func isShort(_ query: RecordQuery, scope: OwnerScope) -> Bool {
        guard scope == .shared, query.includeDeleted, !query.includeTotalCount, (query.skip ?? 0) == 0,
            let top = query.top, top <= quickPageMaximum, query.orderBy == PullWalk.order
        else { return false }
        return query.filter.map { $0.pullPosition != nil } ?? true
    }

    /// The largest page `quickQuery` reads: a pull's first pages, at the size it asks for until the
    /// server says more (docs/DESIGN.md §4). Its pages of 5,000 take the general way: read at once
    /// and ahead, they made a clone no faster (docs/PERFORMANCE.md, "Pages the server takes").
    static let quickPageMaximum = 1000

    /// A page of `statements` (`statements(sqlName:…)`), whose rows are `recordColumns`.
    /// `cached` takes the SELECT from GRDB's cache of the connection, which keeps what it is given:
    /// only for statements of a few forms (a client's filters may take any).
    static func page(_ db: Database, _ statements: PageStatements, _ query: RecordQuery, cached: Bool = false) throws -> RecordPage {
        let (selectSQL, selectArguments, countSQL, countArguments) = statements
        do {
            // The columns' text as it is, read by position: written out as the page sends it
            // straight from SQLite's bytes, or kept as `PageRecord.stored` for a `$select`.
            let statement = try cached ? db.cachedStatement(sql: selectSQL) : db.makeStatement(sql: selectSQL)
            let rows = try Row.fetchCursor(statement, arguments: selectArguments)
            let total = { () throws -> Int? in
                query.includeTotalCount ? try Int.fetchOne(db, sql: countSQL, arguments: countArguments) ?? 0 : nil
            }
            guard query.select == nil else {
                var items: [PageRecord] = []
                while let row = try rows.next() {
                    items.append(
                        .stored(id: row[0], createdAt: row[1], updatedAt: row[2], version: row[3], deleted: row[4], fields: row[6]))
                }
                return RecordPage(items: items, totalCount: try total())
            }
            var written = WrittenRecords(expected: query.top ?? 0)
            let handle = statement.sqliteStatement
            func text(_ column: CInt) -> UnsafeBufferPointer<UInt8> {
                // NULL (which the schema forbids) reads as empty text.
                UnsafeBufferPointer(start: sqlite3_column_text(handle, column), count: Int(sqlite3_column_bytes(handle, column)))
            }
            while try rows.next() != nil {
                let deleted = sqlite3_column_int64(handle, 4) != 0
                try written.appendStored(deleted: deleted) { writer, output in
                    writer.id(text(0), to: &output)
                    writer.createdAt(text(1), to: &output)
                    writer.updatedAt(text(2), to: &output)
                    writer.version(text(3), to: &output)
                    writer.fields(text(6), to: &output)
                } general: {
                    func string(_ column: CInt) -> String { String(decoding: text(column), as: UTF8.self) }
                    return .stored(
                        id: string(0), createdAt: string(1), updatedAt: string(2), version: string(3), deleted: deleted,
                        fields: string(6))
                }
            }
            return RecordPage(written: written, totalCount: try total())
        } catch let error as DatabaseError where error.resultCode == .SQLITE_ERROR || error.resultCode == .SQLITE_TOOBIG {
            // The fixed part of the statement is known to be valid, so this comes from the
            // client's $filter/$orderby (e.g. nested beyond SQLite's expression depth).
            throw TSyncError.invalidInput(
                "the $filter or $orderby cannot be evaluated: it is too complex or combines values that cannot be compared")
        }
    }

    typealias PageStatements = (String, StatementArguments, String, StatementArguments)

    /// The SELECT of a page and the COUNT of all pages, with their arguments, over the table
    /// `sqlName`, or over `source` (a FROM item whose rows have the record table's columns, and
    /// its arguments) when given.
    func statements(sqlName: String, _ query: RecordQuery, scope: OwnerScope, source: (String, [SQLValue])? = nil) throws
        -> PageStatements
    {
        var conditions: [String] = []
        var arguments: [SQLValue] = source?.1 ?? []
        if !query.includeDeleted { conditions.append("deleted = 0") }
        if case .owner(let owner) = scope {
            conditions.append("owner = ?")
            arguments.append(.text(owner))
        }
        let indexed = indexes.withLock { $0[sqlName] ?? [] }
        let renderer = IndexedField.renderer(self.renderer, indexing: indexed)
        if let filter = query.filter {
            let fragment = try renderer.whereClause(filter)
            conditions.append("(\(fragment.sql))")
            arguments += fragment.arguments
        }
        let order = try renderer.orderBy(query.orderBy)
        let whereSQL = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        let from = source?.0 ?? "\"\(sqlName)\""
        let selectSQL = "SELECT \(SQLiteSchema.recordColumns) FROM \(from)\(whereSQL) ORDER BY \(order.sql) LIMIT ? OFFSET ?"
        let selectArguments = Self.statementArguments(
            arguments + order.arguments + [.int(Int64(query.top ?? -1)), .int(Int64(query.skip ?? 0))])
        return (selectSQL, selectArguments, "SELECT COUNT(*) FROM \(from)\(whereSQL)", Self.statementArguments(arguments))
    }

    /// SQLite's plan for a page of `query` (`EXPLAIN QUERY PLAN`, one line per step): the tests
    /// read it to see that indexed queries search an index instead of scanning the table.
    func queryPlan(table: String, _ query: RecordQuery, scope: OwnerScope) async throws -> [String] {
        let (sql, arguments, _, _) = try statements(sqlName: SQLiteSchema.recordTableName(table), query, scope: scope)
        return try await plan(sql, arguments)
    }

    /// SQLite's plan of `sql`, one line per step.
    func plan(_ sql: String, _ arguments: StatementArguments) async throws -> [String] {
        return try await pool.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments).map { $0["detail"] }
        }
    }

    // MARK: - Writes

    public func write(_ writes: [RecordWrite], atomic: Bool) async throws -> [WriteOutcome] {
        try await withCheckedThrowingContinuation { continuation in
            let leads = group.withLock { group in
                group.waiting.append(GroupedWrite(writes: writes, atomic: atomic, answer: continuation))
                defer { group.committing = true }
                return !group.committing
            }
            if leads { Task { await self.commitGroups() } }
        }
    }

    /// Commits the waiting requests' writes, a group at a time, until none wait (group commit,
    /// docs/DESIGN.md §10): one transaction, and one `updatedAt` per table, for all the requests
    /// that came while the last group committed.
    private func commitGroups() async {
        while true {
            // A table's time is one millisecond past its last when the clock has not passed it
            // yet: waiting for the clock instead (a millisecond or two, while more requests join
            // the group) keeps `updatedAt` at the wall clock however many writes come.
            // Only the waiting requests' tables count: a write to another table does not wait.
            let tables = group.withLock { group in Set(group.waiting.flatMap { $0.writes.map { SQLiteSchema.clockKey($0.table) } }) }
            let last = lastStamps.withLock { stamps in tables.compactMap { stamps[$0] }.max() }
            if let last, case let ahead = last - clock().millisecondsSinceEpoch, ahead >= 0, ahead < Self.clockWaitMilliseconds {
                try? await Task.sleep(for: .milliseconds(ahead + 1))
            }
            let requests = group.withLock { group in
                var taken: [GroupedWrite] = []
                var writes = 0
                while let first = group.waiting.first, taken.isEmpty || writes + first.writes.count <= Self.maximumGroupWrites {
                    writes += first.writes.count
                    taken.append(group.waiting.removeFirst())
                }
                if taken.isEmpty { group.committing = false }
                return taken
            }
            if requests.isEmpty { return }
            await commit(requests)
        }
    }

    /// The most writes one group commits together (a request larger than that is a group alone).
    static let maximumGroupWrites = 2000
    /// How far ahead of the clock a table's time may be for the next group to wait for the clock.
    static let clockWaitMilliseconds: Int64 = 5

    /// One group's transaction. Each request is a savepoint: one that throws (or an atomic one
    /// with a failed write) is rolled back alone and answered so, and the others commit.
    private func commit(_ requests: [GroupedWrite]) async {
        let now = clock()
        let keepsHistory = historyOn.load(ordering: .relaxed)
        do {
            let (results, created, newest) = try await pool.write { db in
                var created: Set<String> = []
                var clocks = TableClocks(now: now)
                var versions = HistoryRows(keeps: keepsHistory)
                var results: [Result<[WriteOutcome], any Error>] = []
                results.reserveCapacity(requests.count)
                for request in requests {
                    let (mark, createdBefore) = (versions.mark, created)
                    var outcomes: [WriteOutcome] = []
                    outcomes.reserveCapacity(request.writes.count)
                    do {
                        try db.inSavepoint {
                            for write in request.writes {
                                outcomes.append(try self.apply(write, db, clocks: &clocks, created: &created, versions: &versions))
                            }
                            guard request.atomic, outcomes.contains(where: { !$0.succeeded }) else { return .commit }
                            versions.truncate(to: mark)
                            created = createdBefore
                            outcomes = WriteOutcome.rolledBack(outcomes)
                            return .rollback
                        }
                        results.append(.success(outcomes))
                    } catch {
                        versions.truncate(to: mark)
                        created = createdBefore
                        results.append(.failure(error))
                    }
                }
                try versions.flush(db)
                try clocks.save(db)
                return (results, created, clocks.last)
            }
            lastStamps.withLock { stamps in
                // Bounded by the tables; a table's entry is only ever its newest.
                for (key, stamp) in newest { stamps[key] = stamp.millisecondsSinceEpoch }
            }
            // Only tables whose creation committed are remembered.
            if !created.isEmpty { knownTables.withLock { $0.formUnion(created) } }
            var written: [RecordWrite] = []
            var outcomes: [WriteOutcome] = []
            for (request, result) in zip(requests, results) {
                if case .success(let answered) = result {
                    written += request.writes
                    outcomes += answered
                }
            }
            // The writers first, then the held reads: each resumed task queues behind those resumed
            // before it, and the wake may resume thousands (docs/DESIGN.md §8.1).
            for (request, result) in zip(requests, results) { request.answer.resume(with: result) }
            // A page never stops below a write here (writes are serialized): no ticket (docs/DESIGN.md §8.1).
            changes?.committed(
                zip(written, outcomes).lazy.filter { $0.1.succeeded }.map { $0.0.table }, changes: ChangeFeed.changes(written, outcomes),
                since: nil)
        } catch {
            for request in requests { request.answer.resume(throwing: error) }
        }
    }

    /// One write inside the batch's transaction.
    private func apply(
        _ write: RecordWrite, _ db: Database, clocks: inout TableClocks, created: inout Set<String>, versions: inout HistoryRows
    ) throws
        -> WriteOutcome
    {
        let sqlName = SQLiteSchema.recordTableName(write.table)
        // `created` first: `tableExists` caches what it finds, and a table this uncommitted
        // transaction created must not be cached (a reader would then query a table it cannot see).
        if !created.contains(sqlName), try !tableExists(db, sqlName) {
            guard case .insert = write.action else { return .notFound }
            let limit = tableLimit.load(ordering: .relaxed)
            guard try SQLiteSchema.registerTable(db, sqlName: sqlName, account: write.user, limit: limit, now: clocks.now.iso8601) else {
                return TableLimit.refusal(account: write.user ?? "", table: write.table, limit: limit)
            }
            try SQLiteSchema.createRecordTable(db, sqlName: sqlName)
            for field in indexes.withLock({ $0[sqlName] ?? [] }) { try SQLiteSchema.createIndex(db, sqlName: sqlName, field) }
            created.insert(sqlName)
        }
        var owner: String?
        if case .owner(let name) = write.scope { owner = name }
        func insert(_ stored: Record) throws -> Bool {
            let body = JSONSerializer.string(.object(stored.fields))
            // Once for each record a batch inserts: bound directly (`DirectBindings`).
            let statement = try db.cachedStatement(
                sql: "INSERT INTO \"\(sqlName)\" (\(SQLiteSchema.recordColumns)) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING")
            var values = DirectBindings(statement)
            try values.bind(stored.id)
            try values.bind(stored.system.createdAt?.iso8601)
            try values.bind(stored.system.updatedAt?.iso8601)
            try values.bind(stored.system.version)
            try values.bind(stored.system.deleted)
            try values.bind(owner)
            try values.bind(body)
            try statement.execute()
            guard db.changesCount == 1 else { return false }
            versions.append(write, stored, owner: owner, body: body)
            return true
        }
        // Nearly every insert brings a new id: it is written at once, as `step` decides for an id
        // with no record, and the record is read only when the id turns out to be taken.
        if case .insert = write.action,
            case .store(let stored, isNew: true) = try write.step(
                current: nil, visible: false,
                updatedAt: {
                    try clocks.next(db, clockKey: SQLiteSchema.clockKey(write.table))
                }), try insert(stored)
        {
            return .inserted(stored)
        }
        let found = try Self.fetchRecord(db, sqlName: sqlName, id: write.id, scope: .shared)
        let step = try write.step(
            current: found?.record, visible: found.map { Self.isVisible(owner: $0.owner, in: write.scope) } ?? false, owner: found?.owner
        ) {
            try clocks.next(db, clockKey: SQLiteSchema.clockKey(write.table))
        }
        switch step {
        case .answer(let outcome):
            return outcome
        case .store(let stored, isNew: true):
            // Only reached for an id that was taken a moment ago in this transaction: not possible.
            guard try insert(stored) else { throw TSyncError.failure("the insert of \(Identifiers.quoted(stored.id)) found its id taken") }
            return .inserted(stored)
        case .store(let next, isNew: false):
            let body = JSONSerializer.string(.object(next.fields))
            let statement = try db.cachedStatement(
                sql: "UPDATE \"\(sqlName)\" SET updated_at = ?, version = ?, deleted = ?, body = ? WHERE id = ?")
            var values = DirectBindings(statement)
            try values.bind(next.system.updatedAt?.iso8601)
            try values.bind(next.system.version)
            try values.bind(next.system.deleted)
            try values.bind(body)
            try values.bind(next.id)
            try statement.execute()
            if let found, let group = write.access.exitedGroup(from: found.record, to: next) {
                try db.cachedStatement(
                    sql: "INSERT INTO tsync_record_exits (table_name, grp, id, at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING"
                )
                .execute(arguments: [SQLiteSchema.clockKey(write.table), group, next.id, next.system.updatedAt?.iso8601])
            }
            versions.append(write, next, owner: found?.owner, body: body)
            return .modified(next)
        }
    }

    // MARK: - Indexes

    public func declareIndexes(_ fields: [IndexedField]) async throws -> [String] {
        let byTable = Dictionary(grouping: fields) { SQLiteSchema.recordTableName($0.table) }
        indexes.withLock { $0 = byTable }
        return try await pool.write { db in
            var lines: [String] = []
            var declared: Set<String> = []
            for (sqlName, fields) in byTable.sorted(by: { $0.key < $1.key }) {
                let exists = try db.tableExists(sqlName)
                let present = exists ? Set(try SQLiteSchema.fieldIndexes(db, sqlName: sqlName)) : []
                for field in fields {
                    let name = field.indexName(sqlName)
                    declared.insert(name)
                    guard exists else {
                        lines.append("index \(field): the table has no records yet; the index is made with it")
                        continue
                    }
                    try SQLiteSchema.createIndex(db, sqlName: sqlName, field)
                    lines.append("index \(field): \(present.contains(name) ? "in place" : "created")\(field.perUser ? " (per user)" : "")")
                }
            }
            // One look at the schema for every table's field indexes: a look per table read the
            // whole schema each time, and start-up grew with the square of the tables.
            let indexes = try Row.fetchAll(
                db,
                sql: """
                    SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND tbl_name LIKE 't\\_%' ESCAPE '\\'
                    AND name LIKE replace(tbl_name, '_', '\\_') || '\\_ix\\_%' ESCAPE '\\' ORDER BY tbl_name, name
                    """)
            for row in indexes {
                let (name, sqlName): (String, String) = (row[0], row[1])
                guard !declared.contains(name) else { continue }
                lines.append("index \(name) on \(sqlName) is no longer declared: left in place (DROP INDEX it to remove it)")
            }
            return lines
        }
    }

    /// A request's writes waiting for their group's transaction (`commitGroups`).
    private struct GroupedWrite {
        var writes: [RecordWrite]
        var atomic: Bool
        var answer: CheckedContinuation<[WriteOutcome], any Error>
    }

    /// The clocks of the tables a batch writes: each is read once and advanced once (every write
    /// of the table in the transaction shares the new time, `WriteRules.nextUpdatedAt`), and
    /// saved once at the end, all inside the batch's transaction.
    private struct TableClocks {
        let now: Timestamp
        var last: [String: Timestamp] = [:]

        init(now: Timestamp) { self.now = now }

        mutating func next(_ db: Database, clockKey: String) throws -> Timestamp {
            if let known = last[clockKey] { return known }
            let previous = try Int64.fetchOne(
                db, sql: "SELECT last_updated_at FROM tsync_table_clocks WHERE table_name = ?", arguments: [clockKey]
            ).map(Timestamp.init(millisecondsSinceEpoch:))
            let next = WriteRules.nextUpdatedAt(now: now, lastAssigned: previous)
            last[clockKey] = next
            return next
        }

        func save(_ db: Database) throws {
            for (clockKey, assigned) in last {
                try db.execute(
                    sql: """
                        INSERT INTO tsync_table_clocks (table_name, last_updated_at) VALUES (?, ?)
                        ON CONFLICT(table_name) DO UPDATE SET last_updated_at = excluded.last_updated_at
                        """,
                    arguments: [clockKey, assigned.millisecondsSinceEpoch])
            }
        }
    }

    // MARK: - Helpers

    func tableExists(_ db: Database, _ sqlName: String) throws -> Bool {
        if knownTables.withLock({ $0.contains(sqlName) }) { return true }
        guard try db.tableExists(sqlName) else { return false }
        knownTables.withLock { _ = $0.insert(sqlName) }
        return true
    }

    private static func fetchRecord(_ db: Database, sqlName: String, id: String, scope: OwnerScope) throws -> (
        record: Record, owner: String?
    )? {
        let statement = try db.cachedStatement(sql: "SELECT \(SQLiteSchema.recordColumns) FROM \"\(sqlName)\" WHERE id = ?")
        guard let row = try Row.fetchOne(statement, arguments: [id]) else { return nil }
        let decoded = try decode(row)
        return isVisible(owner: decoded.owner, in: scope) ? decoded : nil
    }

    private static func isVisible(owner: String?, in scope: OwnerScope) -> Bool {
        switch scope {
        case .shared: true
        case .owner(let name): owner == name
        }
    }

    private static func decode(_ row: Row) throws -> (record: Record, owner: String?) {
        let id: String = row["id"]
        let bodyText: String = row["body"]
        guard case .object(let fields) = try JSONParser.parse(bodyText) else {
            throw TSyncError.failure("record \(Identifiers.quoted(id)) has a corrupt body in the server database")
        }
        let createdAt: String = row["created_at"]
        let updatedAt: String = row["updated_at"]
        let version: String = row["version"]
        let deleted: Bool = row["deleted"]
        let system = SystemProperties(
            createdAt: Timestamp(iso8601: createdAt), updatedAt: Timestamp(iso8601: updatedAt), version: version, deleted: deleted
        )
        return (Record(id: id, fields: fields, system: system), row["owner"])
    }

    static func statementArguments(_ values: [SQLValue]) -> StatementArguments {
        StatementArguments(
            values.map { value -> DatabaseValue in
                switch value {
                case .null: .null
                case .bool(let bool): bool.databaseValue
                case .int(let int): int.databaseValue
                case .double(let double): double.databaseValue
                case .text(let text): text.databaseValue
                }
            })
    }
}
