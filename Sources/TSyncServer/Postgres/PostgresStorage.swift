import Logging
import PostgresNIO
import Synchronization
import TSyncModel
import TSyncQuery

/// `ServerStorage` on PostgreSQL: the backend for several `tsync serve` instances behind a load
/// balancer, all sharing one database (docs/DESIGN.md §6.3, §10). Nothing lives in the instance: records,
/// accounts, tokens and login counters are all in the database.
///
/// Writers of one table run in parallel, across instances too, and an incremental pull still
/// never skips a record (docs/DESIGN.md §2.2, §10): each write transaction first registers a floor
/// for its `updatedAt` as a shared advisory lock (`WriteFloor`), then stamps at least that floor
/// and more than every `updatedAt` its next statement sees; a pull-shaped read returns only what
/// is below every registered floor and below what had committed before it looked. The version
/// check reads the record `FOR UPDATE`, so it sees every earlier commit: no lost update.
public final class PostgresStorage: ServerStorage {
    let database: PostgresDatabase
    let clock: @Sendable () -> Timestamp
    private let renderer = SQLRenderer(schema: PostgresSchema.querySchema)
    /// The declared indexed fields, by table key (`declareIndexes`).
    private let indexes = Mutex<[String: [IndexedField]]>([:])
    /// Woken after each commit that wrote records, this instance's (at once) and other instances'
    /// (through `NOTIFY`, `PostgresChangeListener`): the live route, docs/DESIGN.md §8.1.
    public let changes: ChangeFeed?
    /// Tells this instance's notifications from other instances' (it has woken its own already).
    let instance = String(UInt64.random(in: 0...UInt64.max), radix: 16)

    /// Whether pull-shaped reads stop below the writers in flight (`WriteFloor`). Only a test
    /// turns it off, to show that without it the race test finds a skipped record.
    let capsPulls: Bool
    /// Whether a request that inserts one record is one call of `tsync_insert_one`
    /// (`SingleInsert`). Only a test turns it off, to compare its answers with a transaction's.
    let insertsInOneCall: Bool
    /// Whether a page of tsync's pull walk is one call of `tsync_pull_page` (`PullPage`), read
    /// ahead (`PullReadAhead`). Only a test turns it off, to compare its pages with the general path's.
    let readsPagesInOneCall: Bool
    /// The walks' next pages, read while their requests are on the way.
    let readAhead: PullReadAhead<PullPage.Page>
    /// Whether writes append their versions to `tsync_history` (`keepHistory`).
    let historyOn = Atomic(true)
    /// The tables known registered, and the limit of an account's (`TableRegistry`).
    let tables = TableRegistry()
    /// Single writes waiting for their table's group (`commitGroups`).
    let groups = WriteGroups()
    /// The tables' deleted horizons as last read (`deletedHorizon`).
    let horizons = Mutex<(read: ContinuousClock.Instant?, values: [String: Timestamp])>((nil, [:]))

    init(
        database: PostgresDatabase, clock: @escaping @Sendable () -> Timestamp, capsPulls: Bool = true, insertsInOneCall: Bool = true,
        readsPagesInOneCall: Bool = true, readAhead: PullReadAhead<PullPage.Page>? = nil
    ) {
        let changes = ChangeFeed()
        self.changes = changes
        self.database = database
        self.clock = clock
        self.capsPulls = capsPulls
        self.insertsInOneCall = insertsInOneCall
        self.readsPagesInOneCall = readsPagesInOneCall
        // A page read ahead is given only when no commit was told since its read began (this
        // instance's, or another's by `NOTIFY`): PostgreSQL keeps no count of commits that a read
        // could compare, and a held read given a page read before a commit it had counted
        // already would wait past that commit (docs/DESIGN.md §8.1).
        self.readAhead = readAhead ?? PullReadAhead(version: { changes.commits })
    }

    /// Connects to `url`, creates or upgrades the schema, and runs `body` with the storage; the
    /// connections close when `body` returns or throws.
    /// - Parameters:
    ///   - clock: the wall clock `updatedAt` is taken from; tests may pass their own.
    ///   - listens: whether other instances' commits are listened for (`PostgresChangeListener`),
    ///     not for a short-lived command; `body` starts once the listener heard itself.
    ///   - listenURL: where, when not at `url`: another way to the same database, past a
    ///     transaction pooler (`--listen-db`).
    public static func withStorage<Result: Sendable>(
        url: PostgresURL, maximumConnections: Int = 20, clock: @escaping @Sendable () -> Timestamp = Timestamp.now,
        logger: Logger = Logger(label: "tsync.postgres"), statementTimeoutSeconds: Int? = nil, listens: Bool = true,
        listenURL: PostgresURL? = nil,
        _ body: @Sendable (PostgresStorage) async throws -> Result
    ) async throws -> Result {
        try await PostgresDatabase.withDatabase(
            url: url, maximumConnections: maximumConnections, statementTimeoutSeconds: statementTimeoutSeconds, logger: logger
        ) { database in
            let storage = PostgresStorage(database: database, clock: clock)
            return try await withThrowingTaskGroup(of: Void.self) { group in
                defer {
                    group.cancelAll()
                    storage.readAhead.cancelAll()
                }
                if listens {
                    let (reports, report) = AsyncStream.makeStream(of: Swift.Result<Void, any Error>.self)
                    let listener = PostgresChangeListener(storage: storage, url: listenURL ?? url, logger: logger)
                    group.addTask { await listener.run { report.yield($0) } }
                    for await started in reports {
                        report.finish()
                        try started.get()
                    }
                }
                return try await body(storage)
            }
        }
    }

    // MARK: - Reads

    public func record(table: String, id: String, scope: OwnerScope) async throws -> Record? {
        var statement = PostgresStatement("SELECT \(PostgresSchema.recordColumns) FROM tsync_records WHERE ")
        Self.appendKey(to: &statement, table: table, id: id, scope: scope)
        return try await database.rows(statement).first.map(Self.decode)
    }

    public func query(table: String, _ query: RecordQuery, scope: OwnerScope) async throws -> RecordPage {
        do {
            if readsPagesInOneCall, capsPulls, let walk = PullPage.walk(table: table, query, scope: scope) {
                let database = self.database
                if let page = try await readAhead.page(walk, read: { try await PullPage.read(database, $0) }) {
                    var answer = RecordPage(written: page.written, totalCount: nil)
                    answer.deletedHorizon = try await deletedHorizon(table)
                    return answer
                }
            }
            var count = PostgresStatement("SELECT count(*) FROM tsync_records WHERE ")
            try appendConditions(to: &count, table: table, query: query, scope: scope)
            let rows: [PostgresRow]
            if query.orderBy.first == SortKey(field: "updatedAt") {
                rows = try await database.transaction(readOnly: true) { transaction in
                    // Pull order (updatedAt first, ascending) is served by the (table, updated_at,
                    // id) index. Right after a bulk load, before autovacuum's ANALYZE, the planner
                    // thinks the table tiny and sorts every later row instead (50 ms a page at 100k
                    // records, not 2): no sort, then. The same statement finds the page's cap.
                    let cap = try await WriteFloor.pullCap(transaction, key: PostgresSchema.tableKey(table))
                    if capsPulls, cap == nil { return .commit([]) }
                    let page = try pageStatement(table: table, query, scope: scope, below: capsPulls ? cap : nil)
                    return .commit(try await transaction.rows(page))
                }
            } else {
                rows = try await database.rows(try pageStatement(table: table, query, scope: scope))
            }
            var total: Int?
            if query.includeTotalCount {
                total = try await database.rows(count).first.map { Int(try $0.decode(Int64.self)) } ?? 0
            }
            // Without `$select`, written out from the rows' bytes, as SQLite does (§6.2).
            // Read after the page: a tombstone removed before it is in the horizon (`maintain`).
            let horizon = try await deletedHorizon(table)
            var page = try Self.page(rows, query, total: total)
            page.deletedHorizon = horizon
            return page
        } catch let error as PostgresServerError where error.isDataException || error.isProgramLimit {
            // The fixed part of the statement is known to be valid, so this comes from the
            // client's $filter/$orderby: a value PostgreSQL cannot hold, or nesting beyond its limits.
            throw TSyncError.invalidInput("the $filter or $orderby cannot be evaluated: \(error.message)")
        }
    }

    /// The page of `rows` (`pageColumns`): written out from the rows' bytes without `$select`, as
    /// SQLite does (§6.2).
    static func page(_ rows: [PostgresRow], _ query: RecordQuery, total: Int?) throws -> RecordPage {
        guard query.select == nil else { return RecordPage(items: try rows.map(Self.pageRecord), totalCount: total) }
        var written = WrittenRecords()
        for row in rows { try Self.write(row, to: &written) }
        return RecordPage(written: written, totalCount: total)
    }

    /// - Parameter below: the cap of a pull-shaped page (`WriteFloor.pullCap`): only records
    ///   whose `updatedAt` is before it.
    /// - Parameter at: read the table as it was then (`tsync_history`, docs/DESIGN.md §6.5).
    func pageStatement(table: String, _ query: RecordQuery, scope: OwnerScope, below cap: Timestamp? = nil, at: Timestamp? = nil) throws
        -> PostgresStatement
    {
        var page = PostgresStatement("SELECT \(PostgresSchema.pageColumns) FROM ")
        Self.appendSource(to: &page, table: table, at: at)
        page.append(" WHERE ")
        try appendConditions(to: &page, table: table, query: query, scope: scope)
        if let cap { page.append(" AND updated_at < " + page.bind(cap.iso8601)) }
        if let lowest = query.filter.flatMap(PullBound.lowest) { page.append(" AND updated_at >= " + page.bind(lowest.iso8601)) }
        page.append(" ORDER BY ")
        // The table's renderer, so an indexed field's sort key names its key literally, as its index does.
        page.append(try renderer(table).orderBy(query.orderBy, firstArgumentIndex: page.nextArgumentIndex))
        if let top = query.top { page.append(" LIMIT " + page.bind(Int64(top))) }
        page.append(" OFFSET " + page.bind(Int64(query.skip ?? 0)))
        return page
    }

    /// PostgreSQL's plan for a page of `query` with sequential scans discouraged (a small test
    /// table is cheaper to scan): the tests read it to see that an index can serve the query.
    func queryPlan(table: String, _ query: RecordQuery, scope: OwnerScope) async throws -> [String] {
        var explain = try pageStatement(table: table, query, scope: scope)
        explain.prepend("EXPLAIN ")
        return try await database.transaction { transaction in
            try await transaction.execute(PostgresStatement("SET LOCAL enable_seqscan = off"))
            return .commit(try await transaction.rows(explain).map { try $0.decode(String.self) })
        }
    }

    /// Refreshes the planner's statistics of the records (tests read plans that depend on them).
    func analyze() async throws {
        try await database.rows(PostgresStatement("ANALYZE tsync_records"))
    }

    // MARK: - Indexes

    /// Two indexes per declared field on `tsync_records`, whether or not the table has records yet:
    /// `(table_name, [owner,] the field's text COLLATE "C", id)` for text comparisons and
    /// `startswith`, and the same on its number reading for number comparisons. Created under the
    /// migration lock, so instances starting together do not race.
    public func declareIndexes(_ fields: [IndexedField]) async throws -> [String] {
        indexes.withLock { $0 = Dictionary(grouping: fields, by: \.table) }
        return try await database.transaction { transaction in
            // Building an index on a large table may rightly take longer than any query may.
            try await transaction.execute(PostgresStatement("SET LOCAL statement_timeout = 0"))
            try await transaction.execute(PostgresStatement("SELECT pg_advisory_xact_lock(\(PostgresSchema.migrationLockKey))"))
            let present = Set(
                try await transaction.rows(
                    PostgresStatement(
                        "SELECT indexname FROM pg_indexes WHERE tablename = 'tsync_records' AND indexname LIKE 'tsync\\_ix\\_%'")
                ).map { try $0.decode(String.self) })
            var lines: [String] = []
            var declared: Set<String> = []
            for field in fields {
                let schema = PostgresSchema.querySchema
                let text = "(\(schema.indexExpression(field.field)) COLLATE \"C\")"
                let expressions =
                    field.grouped
                    ? [(field.postgresIndexName + "_g", text + ", updated_at")]
                    : [
                        (field.postgresIndexName, text),
                        (field.postgresIndexName + "_n", "(\(schema.numberIndexExpression(field.field) ?? ""))"),
                        (field.postgresIndexName + "_o", try SQLRenderer(schema: schema).sortIndexColumns(field.field)),
                    ]
                for (name, expression) in expressions {
                    let columns = field.perUser ? "table_name, owner, \(expression), id" : "table_name, \(expression), id"
                    try await transaction.execute(PostgresStatement("CREATE INDEX IF NOT EXISTS \"\(name)\" ON tsync_records (\(columns))"))
                    declared.insert(name)
                }
                lines.append(
                    "index \(field): \(present.contains(expressions[0].0) ? "in place" : "created")\(field.perUser ? " (per user)" : "")"
                )
            }
            for name in present.subtracting(declared).sorted() {
                lines.append("index \(name) is no longer declared: left in place (DROP INDEX it to remove it)")
            }
            return .commit(lines)
        }
    }

    // MARK: - Writes

    public func write(_ writes: [RecordWrite], atomic: Bool) async throws -> [WriteOutcome] {
        // Before any floor is registered: a held read that parks after it may have stopped below them (docs/DESIGN.md §8.1).
        let ticket = changes?.ticket()
        // A request of one write joins its table's group (one write fails or succeeds alone, so
        // `atomic` changes nothing), unless it may create a table under a limit: the group's
        // transaction registers a table as its first insert's account's, and refuses it to all.
        if writes.count == 1, case let key = PostgresSchema.tableKey(writes[0].table),
            tables.limit.load(ordering: .relaxed) == 0 || tables.isKnown(key)
        {
            return try await withCheckedThrowingContinuation { continuation in
                let request = WriteGroups.Request(write: writes[0], ticket: ticket, answer: continuation)
                if groups.join(request, key: key) { Task { await self.commitGroups(key) } }
            }
        }
        return try await writeAlone(writes, atomic: atomic, ticket: ticket)
    }

    /// Commits the single writes waiting for table `key`, a group at a time, until none wait
    /// (group commit, docs/DESIGN.md §10): one transaction, and one `updatedAt`, for all the
    /// requests that came while the last group committed.
    private func commitGroups(_ key: String) async {
        while true {
            // The table's time is one millisecond past this instance's last when the clock has
            // not passed it yet: waiting for the clock instead (a millisecond or two, while more
            // requests join) keeps `updatedAt` at the wall clock however many writes come. A
            // clock that stepped back (5 ms or more behind) is not waited for.
            if let last = groups.last(key), case let ahead = last - clock().millisecondsSinceEpoch, ahead >= 0,
                ahead < Self.clockWaitMilliseconds
            {
                try? await Task.sleep(for: .milliseconds(ahead + 1))
            }
            let requests = groups.take(key, maximum: Self.maximumGroupWrites)
            if requests.isEmpty { return }
            await commit(requests, key: key)
        }
    }

    /// The most single writes one group commits together.
    static let maximumGroupWrites = 2000
    /// How far ahead of the clock a table's time may be for the next group to wait for the clock.
    static let clockWaitMilliseconds: Int64 = 5

    /// One group: a request alone as before (an insert in one call, `SingleInsert`), several as
    /// one batch that is not atomic, each answered with its own write's outcome. When a statement
    /// of the batch fails (a value the database refuses, a timeout), each request runs again
    /// alone, so one request's failure is its own.
    private func commit(_ requests: [WriteGroups.Request], key: String) async {
        let writes = requests.map(\.write)
        let ticket = requests.compactMap(\.ticket).min()
        var answers: [Result<[WriteOutcome], any Error>]
        var wake: (@Sendable () -> Void)?
        do {
            let outcomes: [WriteOutcome]
            (outcomes, wake) = try await writeWakingLater(writes, atomic: false, ticket: ticket)
            answers = outcomes.map { .success([$0]) }
        } catch  where requests.count > 1 && Self.rolledBack(error) {
            answers = await withTaskGroup(of: (Int, Result<[WriteOutcome], any Error>).self) { group in
                for (index, request) in requests.enumerated() {
                    group.addTask {
                        do {
                            return (index, .success(try await self.writeAlone([request.write], atomic: false, ticket: request.ticket)))
                        } catch {
                            return (index, .failure(error))
                        }
                    }
                }
                var answers = [Result<[WriteOutcome], any Error>](repeating: .success([]), count: requests.count)
                for await (index, answer) in group { answers[index] = answer }
                return answers
            }
        } catch {
            answers = [.failure(error)]
        }
        let stamps = answers.compactMap { try? $0.get() }.joined().compactMap(\.stamp)
        if let newest = stamps.max() { groups.gave(key, newest.millisecondsSinceEpoch) }
        for (request, answer) in zip(requests, answers) { request.answer.resume(with: answer) }
        // The writers first, then the held reads: each resumed task queues behind those resumed
        // before it, and the wake may resume thousands; the next group waits for neither.
        wake?()
    }

    /// Whether a write transaction's error came from a statement, which PostgreSQL rolled back:
    /// not a lost connection, after which its `COMMIT` may have taken effect.
    private static func rolledBack(_ error: any Error) -> Bool {
        if error is PostgresServerError || error is QueryTimedOut { return true }
        return (error as? TSyncError)?.kind == .invalidInput
    }

    /// Writes `writes` in one transaction (one call for a lone insert), running it again after
    /// a unique violation or a deadlock.
    private func writeAlone(_ writes: [RecordWrite], atomic: Bool, ticket: UInt64?) async throws -> [WriteOutcome] {
        let (outcomes, wake) = try await writeWakingLater(writes, atomic: atomic, ticket: ticket)
        wake()
        return outcomes
    }

    /// `writeAlone` with the commit's wake of the held reads returned, not run: a group's writers
    /// are answered before it (`commit`).
    private func writeWakingLater(_ writes: [RecordWrite], atomic: Bool, ticket: UInt64?) async throws -> (
        [WriteOutcome], wake: @Sendable () -> Void
    ) {
        let tables = Self.idsByTable(writes)
        let changes = changes
        var attempt = 0
        while true {
            attempt += 1
            do {
                if insertsInOneCall, writes.count == 1, case .insert = writes[0].action, Self.unstorable(writes[0]) == nil,
                    self.tables.limit.load(ordering: .relaxed) == 0 || self.tables.isKnown(PostgresSchema.tableKey(writes[0].table))
                {
                    let outcome = try await writing { try await insertOne(writes[0]) }
                    // Committed, or its floor withdrawn: the held reads it may answer or have held back look again.
                    let woken = ChangeFeed.changes(writes, [outcome])
                    return ([outcome], { changes?.committed(tables.map(\.0), changes: woken, since: ticket) })
                }
                let (outcomes, committed) = try await writing { try await writeOnce(writes, tables: tables, atomic: atomic) }
                if committed {
                    // Every table's floor ends with the commit, also where nothing was written.
                    return (outcomes, { changes?.committed(tables.map(\.0), changes: ChangeFeed.changes(writes, outcomes), since: ticket) })
                }
                await floorsWithdrawn(tables.map(\.0))
                return (outcomes, {})
            } catch let error as PostgresServerError where (error.isUniqueViolation || error.isDeadlock) && attempt < Self.maximumAttempts {
                // Two transactions inserted one id (or locked rows in opposite orders): the
                // other committed, or was chosen to go on. Run again: the records read now
                // include what it wrote, so the answer is the one a serial order gives.
                await floorsWithdrawn(tables.map(\.0))
                continue
            } catch let error as PostgresServerError {
                await floorsWithdrawn(tables.map(\.0))
                throw error
            } catch {
                // The connection failed or the request went away: the database may not be there
                // to tell the other instances (their held reads wait out their time), this one's can.
                changes?.committed(tables.map(\.0))
                throw error
            }
        }
    }

    /// Runs of one write transaction before a unique violation or a deadlock is the client's
    /// error (each run sees the other transaction's commit, so a second one is rare already).
    private static let maximumAttempts = 5

    /// A request that inserts one record, in one round trip (`SingleInsert`): the same answer as
    /// `writeOnce` gives a batch of one insert.
    private func insertOne(_ write: RecordWrite) async throws -> WriteOutcome {
        let now = clock()
        // The rules' record; the database gives its time.
        switch write.step(current: nil, visible: false, updatedAt: { now }) {
        case .answer(let outcome):
            return outcome
        case .store(var stored, _):
            let key = PostgresSchema.tableKey(write.table)
            let answer = try await SingleInsert.run(
                database, key: key, record: stored, owner: Self.owner(of: write.scope, current: nil), user: write.user,
                keepHistory: historyOn.load(ordering: .relaxed), now: now, notice: (PostgresChangeListener.channel, "\(instance) \(key)"))
            switch answer {
            case .inserted(let stamp):
                stored.system.createdAt = stamp
                stored.system.updatedAt = stamp
                return .inserted(stored)
            case .found(let current, let owner):
                switch write.step(current: current, visible: Self.isVisible(owner, write.scope), owner: owner, updatedAt: { now }) {
                case .answer(let outcome): return outcome
                case .store: throw TSyncError.failure("an insert found its id taken and still had something to store")
                }
            }
        }
    }

    /// One run of a write transaction; `committed` is false when it rolled back.
    private func writeOnce(_ writes: [RecordWrite], tables: [(String, [String])], atomic: Bool) async throws -> (
        [WriteOutcome], committed: Bool
    ) {
        let now = clock()
        let keepHistory = historyOn.load(ordering: .relaxed)
        let registry = self.tables
        // Tables registered by this transaction, known once it commits; refused ones.
        var registered: [String] = []
        var refused: Set<String> = []
        let result = try await database.transaction { transaction in
            // Without a limit, tables are not registered: one made then is nobody's.
            for (key, _) in tables where registry.limit.load(ordering: .relaxed) > 0 && !registry.isKnown(key) {
                // Only an insert creates a table; other writes of a table without records find nothing.
                guard let insert = writes.first(where: { PostgresSchema.tableKey($0.table) == key && $0.isInsert }) else { continue }
                if try await registry.register(transaction, key: key, account: insert.user, now: now) {
                    registered.append(key)
                } else {
                    refused.insert(key)
                }
            }
            // Per table: register the floor of this transaction's `updatedAt`, then (in the
            // next statement, so with a snapshot taken after the floor was visible to readers)
            // read the batch's records of it, locked, and what the table holds at most.
            var stamps: [String: Timestamp] = [:]
            // Ids by their bytes: Swift's String equality would merge "é" and "e" + U+0301.
            var found: [String: [[UInt8]: (record: Record, owner: String?)]] = [:]
            // Where each record read stands (its `ctid`), for the `UPDATE` (`PendingUpdates`).
            var rows: [String: [[UInt8]: String]] = [:]
            for (key, ids) in tables where !refused.contains(key) {
                // With this instance's `NOTIFY` of the table, for the other instances' listeners.
                let notice = (PostgresChangeListener.channel, "\(instance) \(key)")
                let floor = try await WriteFloor.register(transaction, key: key, now: now, notice: notice)
                let (records, places, newest) = try await Self.currentRecords(transaction, key: key, ids: ids)
                found[key] = records
                rows[key] = places
                stamps[key] = WriteFloor.stamp(floor: floor, now: now, newest: newest)
            }
            var outcomes: [WriteOutcome] = []
            outcomes.reserveCapacity(writes.count)
            var pending = PendingInserts()
            var updates = PendingUpdates()
            var versions = PendingVersions()
            for write in writes {
                let key = PostgresSchema.tableKey(write.table)
                if refused.contains(key) {
                    outcomes.append(
                        write.isInsert
                            ? TableLimit.refusal(
                                account: write.user ?? "", table: write.table, limit: registry.limit.load(ordering: .relaxed))
                            : .notFound)
                    continue
                }
                if let problem = Self.unstorable(write) {
                    outcomes.append(.unstorable(problem))
                    continue
                }
                let current = found[key]?[Array(write.id.utf8)]
                let stamp = stamps[key] ?? now
                let step = write.step(
                    current: current?.record, visible: current.map { Self.isVisible($0.owner, write.scope) } ?? false, owner: current?.owner
                ) {
                    stamp
                }
                switch step {
                case .answer(let outcome):
                    outcomes.append(outcome)
                case .store(let stored, let isNew):
                    if isNew {
                        // New records wait and go in with one statement per table and owner.
                        pending.append(key: key, owner: Self.owner(of: write.scope, current: nil), user: write.user, stored)
                    } else {
                        // Changes wait too, and go in after the new records (one may change a
                        // record inserted earlier in this batch).
                        updates.append(key: key, stored, row: rows[key]?[Array(stored.id.utf8)])
                        if let current, let group = write.access.exitedGroup(from: current.record, to: stored) {
                            try await Self.recordExit(transaction, key: key, group: group, stored)
                        }
                        if keepHistory {
                            versions.append(key: key, owner: Self.owner(of: write.scope, current: current?.owner), write, stored)
                        }
                    }
                    found[key, default: [:]][Array(stored.id.utf8)] = (stored, Self.owner(of: write.scope, current: current?.owner))
                    outcomes.append(isNew ? .inserted(stored) : .modified(stored))
                }
            }
            try await pending.flush(transaction, keepHistory: keepHistory)
            try await updates.flush(transaction)
            try await versions.flush(transaction)
            if atomic, outcomes.contains(where: { !$0.succeeded }) { return .rollback((WriteOutcome.rolledBack(outcomes), false)) }
            guard outcomes.contains(where: \.succeeded) else { return .rollback((outcomes, false)) }
            return .commit((outcomes, true))
        }
        if result.1 { registry.remember(registered) }
        return result
    }

    /// `NOTIFY` of a change to `table`, for the other instances' listeners.
    private func notification(_ table: String) -> PostgresStatement {
        var notify = PostgresStatement("SELECT pg_notify('\(PostgresChangeListener.channel)', ")
        notify.append(notify.bind("\(instance) \(table)") + ")")
        return notify
    }

    /// After a write transaction that registered floors and did not commit: a held read whose
    /// page stopped below one of them would wait for a commit that never comes, so its waiters
    /// (this instance's, and through `NOTIFY` every other's) are woken to read again.
    private func floorsWithdrawn(_ tables: [String]) async {
        changes?.committed(tables)
        for table in tables { _ = try? await database.rows(notification(table)) }
    }

    /// New records of a batch, written with one `INSERT … SELECT FROM unnest(…)` per table and
    /// owner instead of one statement each: on a loopback connection the round trips, not the
    /// rows, are what a batch of inserts costs.
    private struct PendingInserts {
        struct Group {
            var key: String
            var owner: String?
            var user: String?
            var ids: [String] = []
            var stamps: [String] = []
            var versions: [String] = []
            var bodies: [String] = []
        }

        private var groups: [Group] = []

        mutating func append(key: String, owner: String?, user: String?, _ record: Record) {
            guard let updatedAt = record.system.updatedAt else { return }
            let index: Int
            if let existing = groups.firstIndex(where: { $0.key == key && $0.owner == owner && $0.user == user }) {
                index = existing
            } else {
                groups.append(Group(key: key, owner: owner, user: user))
                index = groups.count - 1
            }
            groups[index].ids.append(record.id)
            groups[index].stamps.append(updatedAt.iso8601)
            groups[index].versions.append(record.system.version ?? "")
            groups[index].bodies.append(JSONSerializer.string(.object(record.fields)))
        }

        /// Writes the records, and with `keepHistory` their first versions in the same statement.
        mutating func flush(_ transaction: PostgresTransaction, keepHistory: Bool) async throws {
            for group in groups {
                var statement = PostgresStatement()
                let key = statement.bind(group.key)
                let owner = statement.bind(group.owner)
                let rows =
                    "unnest("
                    + [
                        statement.bind(group.ids), statement.bind(group.stamps), statement.bind(group.versions),
                        statement.bind(group.bodies),
                    ]
                    .map { $0 + "::text[]" }.joined(separator: ", ") + ") AS u(id, stamp, version, body)"
                let insert =
                    "INSERT INTO tsync_records (table_name, id, created_at, updated_at, version, deleted, owner, body, body_text) "
                    + "SELECT \(key), u.id, u.stamp, u.stamp, u.version, false, \(owner), u.body::jsonb, u.body FROM "
                if keepHistory {
                    let user = statement.bind(group.user)
                    statement.append(
                        "WITH u AS (SELECT * FROM \(rows)), r AS (\(insert) u) "
                            + "INSERT INTO tsync_history (table_name, id, created_at, updated_at, version, deleted, owner, user_name, operation, body_text) "
                            + "SELECT \(key), u.id, u.stamp, u.stamp, u.version, false, \(owner), \(user), 'insert', u.body FROM u")
                } else {
                    statement.append(insert + rows)
                }
                try await transaction.execute(statement)
            }
            groups = []
        }
    }

    /// Changes of a batch (updates, deletes, undeletes), written with one `UPDATE … FROM
    /// unnest(…)` per table once every write of the batch has taken its step: one `UPDATE` each
    /// was a round trip each, 100,000 of them for a push of 100,000 updates. The steps (the
    /// version checks) read the records as this batch leaves them (`found`), so a record changed
    /// twice in a batch is written once, as the last change left it.
    ///
    /// A record the batch's locked read found is updated where that read found it (its `ctid`,
    /// which cannot move while the transaction holds the row's lock), with sequential scans off
    /// for the rest of the transaction: its rows are then read by address (a TID scan) and
    /// joined to the batch's values, whatever PostgreSQL's statistics say. Joined by id, a table
    /// filled since its last `ANALYZE` (one a push just filled) was planned as a scan of the
    /// whole table, or a walk of its primary key, in each batch: the database's time in
    /// proportion to the table, not to the batch. A record this batch inserted, or one of a
    /// batch too large to be read one by one (`lockedRead`), has no `ctid` read: it is updated
    /// by id.
    struct PendingUpdates {
        struct Group {
            var key: String
            /// Each id's position in the arrays, by its bytes.
            var positions: [[UInt8]: Int] = [:]
            /// Each record's `ctid` (as text), or "" for one inserted by this batch.
            var rows: [String] = []
            var ids: [String] = []
            var stamps: [String] = []
            var versions: [String] = []
            var deleted: [Bool] = []
            var bodies: [String] = []
        }

        private(set) var groups: [Group] = []

        mutating func append(key: String, _ record: Record, row: String?) {
            guard let updatedAt = record.system.updatedAt else { return }
            let index: Int
            if let existing = groups.firstIndex(where: { $0.key == key }) {
                index = existing
            } else {
                groups.append(Group(key: key))
                index = groups.count - 1
            }
            let body = JSONSerializer.string(.object(record.fields))
            let id = Array(record.id.utf8)
            if let at = groups[index].positions[id] {
                groups[index].stamps[at] = updatedAt.iso8601
                groups[index].versions[at] = record.system.version ?? ""
                groups[index].deleted[at] = record.system.deleted
                groups[index].bodies[at] = body
                return
            }
            groups[index].positions[id] = groups[index].ids.count
            groups[index].rows.append(row ?? "")
            groups[index].ids.append(record.id)
            groups[index].stamps.append(updatedAt.iso8601)
            groups[index].versions.append(record.system.version ?? "")
            groups[index].deleted.append(record.system.deleted)
            groups[index].bodies.append(body)
        }

        mutating func flush(_ transaction: PostgresTransaction) async throws {
            for group in groups {
                for statement in Self.statements(group) { try await transaction.execute(statement) }
            }
            groups = []
        }

        /// The statements of one table's changes: the settings and the `UPDATE` of the records
        /// found where they stand, and the `UPDATE` by id of those this batch inserted (none,
        /// usually).
        static func statements(_ group: Group) -> [PostgresStatement] {
            let found = group.rows.indices.filter { !group.rows[$0].isEmpty }
            let inserted = group.rows.indices.filter { group.rows[$0].isEmpty }
            var statements: [PostgresStatement] = []
            if !found.isEmpty {
                statements.append(PostgresStatement("SELECT set_config('enable_seqscan', 'off', true)"))
                statements.append(statement(group, found, byRow: true))
            }
            if !inserted.isEmpty { statements.append(statement(group, inserted, byRow: false)) }
            return statements
        }

        private static func statement(_ group: Group, _ indices: [Int], byRow: Bool) -> PostgresStatement {
            var statement = PostgresStatement()
            func column(_ values: [String]) -> String { statement.bind(indices.map { values[$0] }) + "::text[]" }
            let columns = [
                column(group.ids), column(group.stamps), column(group.versions),
                statement.bind(indices.map { group.deleted[$0] }) + "::boolean[]", column(group.bodies),
            ]
            statement.append(
                "UPDATE tsync_records AS r SET updated_at = u.stamp, version = u.version, deleted = u.deleted, "
                    + "body = u.body::jsonb, body_text = u.body FROM unnest(\(columns.joined(separator: ", "))) "
                    + "AS u(id, stamp, version, deleted, body) WHERE ")
            // By address, the id matched again: nothing on the table's indexed columns, which
            // would let the planner read it by `table_name` (all of it) instead.
            if byRow {
                statement.append("r.ctid = ANY(\(column(group.rows))::tid[]) AND r.id = u.id")
            } else {
                statement.append("r.table_name = \(statement.bind(group.key)) AND r.id = u.id")
            }
            return statement
        }
    }

    /// The record ids a batch touches, by table key, in first-seen order of the tables.
    private static func idsByTable(_ writes: [RecordWrite]) -> [(String, [String])] {
        var order: [String] = []
        var ids: [String: [String]] = [:]
        for write in writes {
            let key = PostgresSchema.tableKey(write.table)
            if ids[key] == nil { order.append(key) }
            ids[key, default: []].append(write.id)
        }
        return order.map { ($0, ids[$0] ?? []) }
    }

    /// The current rows of `ids`, locked until commit, with their owners, and the newest
    /// `updatedAt` of the table in this statement's snapshot (nil when it has no record).
    private static func currentRecords(_ transaction: PostgresTransaction, key: String, ids: [String]) async throws
        -> ([[UInt8]: (record: Record, owner: String?)], rows: [[UInt8]: String], newest: Timestamp?)
    {
        var records: [[UInt8]: (record: Record, owner: String?)] = [:]
        var places: [[UInt8]: String] = [:]
        var newest: Timestamp?
        for row in try await transaction.rows(lockedRead(key: key, ids: ids)) {
            let (maximum, place, id, createdAt, updatedAt, version, deleted, owner, body) = try row.decode(
                (String?, String?, String?, String?, String?, String?, Bool?, String?, String?).self)
            if let maximum = maximum.flatMap(Timestamp.init(iso8601:)) { newest = Swift.max(newest ?? maximum, maximum) }
            guard let id, let createdAt, let updatedAt, let version, let deleted, let body else { continue }
            let record = try record(id: id, createdAt: createdAt, updatedAt: updatedAt, version: version, deleted: deleted, body: body)
            records[Array(id.utf8)] = (record, owner)
            if let place { places[Array(id.utf8)] = place }
            // A row locked after waiting for another writer is its newest version, which may be
            // newer than the snapshot's maximum.
            if let stamp = record.system.updatedAt { newest = Swift.max(newest ?? stamp, stamp) }
        }
        return (records, places, newest)
    }

    /// The read of `currentRecords`, in one round trip: the locked rows (none for new ids), each
    /// with its `ctid`, beside the table's newest time. Up to `idsLookedUpOneByOne` ids, each is
    /// looked up on its own (a `LATERAL` subquery with a `LIMIT`, which the planner cannot turn
    /// into a join or a scan): as `id = ANY(…)`, a table filled since its last `ANALYZE` (one a
    /// push is filling) was read whole for each batch, the ids a filter on every row of it. More
    /// ids are looked up as a set, without their `ctid`s (so they are updated by id): there a
    /// read of the table is of the batch's own order, and one lookup each cost about three
    /// times as much.
    static func lockedRead(key: String, ids: [String]) -> PostgresStatement {
        var select = PostgresStatement("WITH locked AS (")
        let table: String
        if ids.count <= idsLookedUpOneByOne {
            let wanted = select.bind(ids)
            table = select.bind(key)
            select.append("SELECT r.* FROM unnest(\(wanted)::text[]) AS k(wanted) CROSS JOIN LATERAL (SELECT ctid::text, ")
            select.append(PostgresSchema.recordColumns + " ")
            select.append("FROM tsync_records WHERE table_name = \(table) AND id = k.wanted LIMIT 1 FOR UPDATE) AS r) ")
        } else {
            table = select.bind(key)
            select.append("SELECT NULL::text, \(PostgresSchema.recordColumns) FROM tsync_records ")
            select.append("WHERE table_name = \(table) AND id = ANY(\(select.bind(ids))) FOR UPDATE) ")
        }
        select.append("SELECT (SELECT max(updated_at) FROM tsync_records WHERE table_name = \(table)), locked.* ")
        select.append("FROM (SELECT 1) AS one LEFT JOIN locked ON true")
        return select
    }

    /// The most ids `lockedRead` looks up one by one: a batch of the batch route (1,000 by
    /// default) or a group of single writes (`maximumGroupWrites`) is.
    static let idsLookedUpOneByOne = 5000

    /// PostgreSQL's plans for a batch's locked read of `ids` of `table` and for its `UPDATE`s
    /// of them (each record set to its current values; `inserted` of them as if this batch had
    /// inserted them): the tests read them to see that no statement reads the whole table.
    func batchWritePlans(table: String, ids: [String], inserted: Set<String> = []) async throws -> [String] {
        let key = PostgresSchema.tableKey(table)
        return try await database.transaction { transaction in
            var read = Self.lockedRead(key: key, ids: ids)
            read.prepend("EXPLAIN ")
            var plans = try await transaction.rows(read).map { try $0.decode(String.self) }
            let (found, places, _) = try await Self.currentRecords(transaction, key: key, ids: ids)
            var updates = PendingUpdates()
            for id in ids {
                guard let record = found[Array(id.utf8)]?.record else { continue }
                updates.append(key: key, record, row: inserted.contains(id) ? nil : places[Array(id.utf8)])
            }
            for group in updates.groups {
                for var statement in PendingUpdates.statements(group) {
                    guard statement.sql.hasPrefix("UPDATE") else {
                        try await transaction.execute(statement)
                        continue
                    }
                    statement.prepend("EXPLAIN ")
                    plans += try await transaction.rows(statement).map { try $0.decode(String.self) }
                }
            }
            return .rollback(plans)
        }
    }

    private static func owner(of scope: OwnerScope, current: String?) -> String? {
        if case .owner(let name) = scope { return name }
        return current
    }

    private static func isVisible(_ owner: String?, _ scope: OwnerScope) -> Bool {
        switch scope {
        case .shared: true
        case .owner(let name): owner == name
        }
    }

    /// PostgreSQL cannot store U+0000 in a JSON string; refusing it up front keeps one bad record
    /// from aborting the whole batch's transaction.
    private static func unstorable(_ write: RecordWrite) -> String? {
        let fields: [String: JSONValue]
        switch write.action {
        case .insert(let record): fields = record.fields
        case .modify(_, .update(let patch), _): fields = patch
        case .modify: return nil
        }
        // Looked for in the values, not in their serialized text (a serialization per write, and
        // a text holding a backslash and "u0000" read as the character).
        if fields.contains(where: { holdsNUL($0.key) || holdsNUL($0.value) }) {
            return "the record holds a value the PostgreSQL database cannot store: the character U+0000 in a string"
        }
        if fields.values.contains(where: holdsNegativeZero) {
            return "the record holds -0.0, which the PostgreSQL database would store as 0: send 0.0 (or the number as a string)"
        }
        return nil
    }

    private static func holdsNUL(_ text: String) -> Bool { text.utf8.contains(0) }

    private static func holdsNUL(_ value: JSONValue) -> Bool {
        switch value {
        case .string(let text): holdsNUL(text)
        case .array(let elements): elements.contains(where: holdsNUL)
        case .object(let object): object.contains { holdsNUL($0.key) || holdsNUL($0.value) }
        default: false
        }
    }

    private static func holdsNegativeZero(_ value: JSONValue) -> Bool {
        switch value {
        case .double(let number): number == 0 && number.sign == .minus
        case .array(let elements): elements.contains(where: holdsNegativeZero)
        case .object(let object): object.values.contains(where: holdsNegativeZero)
        default: false
        }
    }

    // MARK: - Helpers

    /// Runs a write, turning a value PostgreSQL refuses to store into the client's mistake.
    private func writing<Result>(_ body: () async throws -> Result) async throws -> Result {
        do {
            return try await body()
        } catch let error as PostgresServerError where error.isDataException {
            throw TSyncError.invalidInput(
                "the record holds a value the PostgreSQL database cannot store (\(error.message)), such as the character U+0000 in a string"
            )
        }
    }

    /// `table_name = $ AND id = $` and, for a per-user table, the owner.
    private static func appendKey(to statement: inout PostgresStatement, table: String, id: String, scope: OwnerScope) {
        statement.append("table_name = " + statement.bind(PostgresSchema.tableKey(table)) + " AND id = " + statement.bind(id))
        if case .owner(let owner) = scope { statement.append(" AND owner = " + statement.bind(owner)) }
    }

    /// The renderer of `table`, knowing its indexed fields.
    private func renderer(_ table: String) -> SQLRenderer {
        IndexedField.renderer(renderer, indexing: indexes.withLock { $0[PostgresSchema.tableKey(table)] ?? [] })
    }

    func appendConditions(to statement: inout PostgresStatement, table: String, query: RecordQuery, scope: OwnerScope) throws {
        let renderer = self.renderer(table)
        statement.append("table_name = " + statement.bind(PostgresSchema.tableKey(table)))
        if !query.includeDeleted { statement.append(" AND NOT deleted") }
        if case .owner(let owner) = scope { statement.append(" AND owner = " + statement.bind(owner)) }
        if let filter = query.filter {
            statement.append(" AND (")
            statement.append(try renderer.whereClause(filter, firstArgumentIndex: statement.nextArgumentIndex))
            statement.append(")")
        }
    }

    /// A row of `pageColumns`: its stored text as it is (`PageRecord.stored`, no parse and no
    /// serialization), or parsed from jsonb when it has none (written before migration 3).
    private static func pageRecord(_ row: PostgresRow) throws -> PageRecord {
        let (id, createdAt, updatedAt, version, deleted, text, body) = try row.decode(
            (String, String, String, String, Bool, String?, String?).self)
        return try pageRecord(
            id: id, createdAt: createdAt, updatedAt: updatedAt, version: version, deleted: deleted, text: text, jsonb: body)
    }

    /// A page's record from its columns: its stored text as it is, or, when it has none, parsed
    /// from the jsonb's text (`pageRecord(_:)`, `PullPage`).
    static func pageRecord(
        id: String, createdAt: String, updatedAt: String, version: String, deleted: Bool, text: String?, jsonb: String?
    ) throws -> PageRecord {
        if let text {
            return .stored(id: id, createdAt: createdAt, updatedAt: updatedAt, version: version, deleted: deleted, fields: text)
        }
        return .parsed(
            try record(id: id, createdAt: createdAt, updatedAt: updatedAt, version: version, deleted: deleted, body: jsonb ?? ""))
    }

    /// Appends a row of `pageColumns` from its cells' bytes: text columns come in binary format,
    /// which is their UTF-8. A row without stored text, or with cells in another form, goes
    /// through `pageRecord`.
    private static func write(_ row: PostgresRow, to written: inout WrittenRecords) throws {
        // Read in order (`makeRandomAccess` copies the row's cells into an array first).
        var cells = row.makeIterator()
        func text() -> ByteBuffer? {
            guard let cell = cells.next(), cell.format == .binary, cell.dataType == .text || cell.dataType == .varchar else { return nil }
            return cell.bytes
        }
        guard let id = text(), let createdAt = text(), let updatedAt = text(), let version = text(),
            let deleted = try cells.next()?.decode(Bool.self), let fields = text()
        else { return try written.append(pageRecord(row)) }
        try written.appendStored(deleted: deleted) { writer, output in
            id.withBytes { writer.id($0, to: &output) }
            createdAt.withBytes { writer.createdAt($0, to: &output) }
            updatedAt.withBytes { writer.updatedAt($0, to: &output) }
            version.withBytes { writer.version($0, to: &output) }
            fields.withBytes { writer.fields($0, to: &output) }
        } general: {
            try pageRecord(row)
        }
    }

    private static func decode(_ row: PostgresRow) throws -> Record {
        try decodeWithOwner(row).record
    }

    private static func decodeWithOwner(_ row: PostgresRow) throws -> (record: Record, owner: String?) {
        let (id, createdAt, updatedAt, version, deleted, owner, body) = try row.decode(
            (String, String, String, String, Bool, String?, String).self)
        return (try record(id: id, createdAt: createdAt, updatedAt: updatedAt, version: version, deleted: deleted, body: body), owner)
    }

    static func record(id: String, createdAt: String, updatedAt: String, version: String, deleted: Bool, body: String) throws
        -> Record
    {
        guard case .object(let fields) = try JSONParser.parseStored(body) else {
            throw TSyncError.failure("record \(Identifiers.quoted(id)) has a corrupt body in the server database")
        }
        let system = SystemProperties(
            createdAt: Timestamp(iso8601: createdAt), updatedAt: Timestamp(iso8601: updatedAt), version: version, deleted: deleted)
        return Record(id: id, fields: fields, system: system)
    }
}

extension PostgresStorage {
    public func shareReads(perClient: Int) { database.shares.setPerClient(perClient) }
    public func limitTables(perAccount: Int) { tables.limit.store(perAccount, ordering: .relaxed) }

    /// Ready when the database answers, on a connection of its own, and takes writes.
    public func checkReady() async throws {
        try await database.checkReady()
    }
}

extension ByteBuffer {
    /// The readable bytes as `UInt8`s.
    func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        try withUnsafeReadableBytes { raw in try body(raw.assumingMemoryBound(to: UInt8.self)) }
    }
}
