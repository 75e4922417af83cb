import Foundation
import NIOCore
import Synchronization
import TSyncModel
import TSyncQuery

/// Wakes the long-polls that wait for a table's next commit (docs/DESIGN.md §8.1, the live route).
///
/// Per table that a held read holds: a commit count (`generation`), the waiters parked on it and
/// the answers kept for it. A request takes the generation BEFORE it runs its query, and waits
/// only while the generation is still that one: a commit between the query and the wait is never
/// missed. A commit whose records are known (this instance's writes) wakes only the waiters
/// those records may answer (`LiveInterest.mayWant`, the filter matched in memory) and those
/// whose page may have stopped below the write (`ticket`); a commit whose records are not known
/// (another instance's, a write that failed) wakes every waiter of its table. A woken waiter asks
/// its query again. While nothing is committed a waiter costs no database work: it is a parked
/// continuation; one sweep every quarter second looks at every waiter's deadline and connection
/// (`sweep`).
///
/// Held reads that ask the same question at the same generation share one answer (`answer`): the
/// 10,000 reads one commit wakes are one query and one page of bytes, not 10,000 of each. A commit
/// works that answer out itself for the waiters it wakes that can be answered outside their
/// requests (`LiveDelivery`), writes each of them its answer, and only then resumes them
/// (`deliver`).
///
/// A table's entry lives while a held read holds it (`admit` to `release`): names nobody holds
/// leave nothing behind, and generations come from one counter for all tables, so an entry made
/// again never repeats a generation a read took from the one before.
public final class ChangeFeed: Sendable {
    private struct Table {
        var generation: UInt64
        /// Held reads of the table under way (parked or not).
        var holders = 0
        var waiters: [UInt64: Waiter] = [:]
        /// The answers of this generation, by question; a commit drops them.
        var answers: [LiveQuestion: SharedAnswer] = [:]
        /// The bytes of the answers kept (`.done`).
        var keptBytes = 0
    }

    /// An answer being worked out (every asker awaits the one task), or worked out.
    private enum SharedAnswer {
        case running(Task<PageBody, any Error>)
        case done(PageBody)
    }

    /// Questions answered per table and generation, at most: past it the answers kept are
    /// dropped (a table read with as many different filters shares little anyway).
    static let maximumAnswers = 256
    /// A page longer than this is not kept once it is sent.
    static let maximumKeptBytes = 64 * 1024
    /// The answers kept on all tables together: past it the kept answers of other tables are
    /// dropped to make room, and an answer that still does not fit is not kept.
    static let defaultMaximumKeptBytesInAll = 16 * 1024 * 1024
    /// Parked waiters times records past which a commit's records are matched in a task of their
    /// own, not in the writer's.
    static let inlineMatches = 4096

    /// A parked request: what wakes it besides a commit.
    private struct Waiter {
        /// The rest, behind one reference: a commit and the sweep read every waiter of a table,
        /// and a copy of one is then one retain, not one for each of its parts.
        let parked: Parked
        var deadline: ContinuousClock.Instant
        /// The feed's clock when it parked: a writer that started before may have held its page back.
        var ticket: UInt64
        var continuation: Continuation { parked.continuation }
    }

    /// Resumed with the page its answer was written with (`LiveDelivery`), nil to ask again.
    typealias Continuation = CheckedContinuation<PageBody?, Never>

    private final class Parked: Sendable {
        let continuation: Continuation
        /// Its client's connection: a closed one ends the wait.
        let channel: (any Channel)?
        /// What commits may answer it.
        let interest: LiveInterest
        let question: LiveQuestion
        /// How its answer is written outside its request, when it can be.
        let delivery: LiveDelivery?

        init(_ continuation: Continuation, channel: (any Channel)?, interest: LiveInterest, question: LiveQuestion, delivery: LiveDelivery?)
        {
            self.continuation = continuation
            self.channel = channel
            self.interest = interest
            self.question = question
            self.delivery = delivery
        }
    }

    private struct State {
        var tables: [String: Table] = [:]
        /// Whether the sweep runs (it stops when nobody waits).
        var sweeping = false
        /// Generations, waiter ids and tickets: one counter, never repeating.
        var clock: UInt64 = 0
        var waiting = 0
        var queries = 0
        var keptBytes = 0
        /// The server stops (`stop`): no read parks any more.
        var stopping = false

        mutating func tick() -> UInt64 {
            clock &+= 1
            return clock
        }

        /// Drops the kept answers of `key`.
        mutating func dropAnswers(_ key: String) {
            keptBytes -= tables[key]?.keptBytes ?? 0
            tables[key]?.answers.removeAll()
            tables[key]?.keptBytes = 0
        }

        /// Starts a new generation of `key` (a commit): its answers are stale.
        mutating func advance(_ key: String) {
            guard tables[key] != nil else { return }
            dropAnswers(key)
            let generation = tick()
            tables[key]?.generation = generation
        }
    }

    private let state = Mutex(State())
    /// The live reads streamed (`LiveStream`): told of every commit, as the waiters are.
    let streams = LiveStreams()
    private let committedCount = Atomic<UInt64>(0)

    /// Commits told so far (`committed`), counted before anyone is woken: where the database keeps
    /// no count of its own (PostgreSQL), what a page read ahead is checked by (`PullReadAhead`).
    var commits: UInt64 { committedCount.load(ordering: .acquiring) }
    /// `defaultMaximumKeptBytesInAll`, or less for a test.
    private let maximumKeptBytesInAll: Int

    public init() { maximumKeptBytesInAll = Self.defaultMaximumKeptBytesInAll }

    init(maximumKeptBytesInAll: Int) { self.maximumKeptBytesInAll = maximumKeptBytesInAll }

    /// The key of a table: table names are case-insensitive.
    static func key(_ table: String) -> String { table.lowercased() }

    /// The table's commit count so far (0 for a table nobody holds).
    func generation(_ table: String) -> UInt64 {
        state.withLock { $0.tables[Self.key(table)]?.generation ?? 0 }
    }

    /// Requests parked now.
    public var waiting: Int { state.withLock { $0.waiting } }

    /// Queries run by `answer` so far: fewer than the reads answered when they share.
    public var queries: Int { state.withLock { $0.queries } }

    /// Tables with an entry (held by a read now, or keeping answers), and the bytes of the answers kept.
    var footprint: (tables: Int, keptBytes: Int) { state.withLock { ($0.tables.count, $0.keptBytes) } }

    /// Requests parked on `table` now.
    func parked(_ table: String) -> Int { state.withLock { $0.tables[Self.key(table)]?.waiters.count ?? 0 } }

    /// A mark a writer takes before its transaction starts (`committed(_:changes:since:)`).
    public func ticket() -> UInt64 { state.withLock { $0.tick() } }

    /// Says that a transaction that wrote to `tables` committed, without saying what: every
    /// waiter of those tables wakes.
    public func committed(_ tables: some Sequence<String>) {
        committedCount.add(1, ordering: .releasing)
        streams.committed(Set(tables.map(Self.key)), changes: nil)
        let (woken, stopping) = state.withLock { state -> ([(key: String, parked: [Parked])], Bool) in
            var woken: [(key: String, parked: [Parked])] = []
            for key in Set(tables.map(Self.key)) where state.tables[key] != nil {
                state.advance(key)
                woken.append((key, state.tables[key]?.waiters.values.map(\.parked) ?? []))
                state.tables[key]?.waiters.removeAll()
            }
            return (woken, state.stopping)
        }
        // Stopping: every read answers what there is now, its own way.
        wake(woken, deliver: !stopping)
    }

    /// Says that a transaction that wrote to `tables` ended, and that `changes` are what it
    /// committed there (empty when it committed nothing). `ticket`, taken before the transaction
    /// started, is for a backend whose pages stop below a write in flight (PostgreSQL, docs/
    /// DESIGN.md §10): a waiter that parked after it may have had its page held back by this
    /// write, and wakes whatever was written; nil where a page never stops below a write
    /// (SQLite). Every other waiter wakes only when one of `changes` may answer it.
    public func committed(_ tables: some Sequence<String>, changes: [LiveChange], since ticket: UInt64?) {
        committedCount.add(1, ordering: .releasing)
        let keys = Set(tables.map(Self.key))
        // Where a page may stop below a write in flight (`ticket`), every stream asks again.
        streams.committed(keys, changes: ticket == nil ? changes : nil)
        // By table: a woken waiter is matched and removed by its id, without its table's name each time.
        let parked = state.withLock { state -> [(key: String, waiters: [(id: UInt64, parked: Parked, anything: Bool)])] in
            var parked: [(key: String, waiters: [(id: UInt64, parked: Parked, anything: Bool)])] = []
            for key in keys where state.tables[key] != nil {
                state.advance(key)
                guard let waiters = state.tables[key]?.waiters, !waiters.isEmpty else { continue }
                parked.append((key, waiters.map { id, waiter in (id, waiter.parked, ticket.map { $0 < waiter.ticket } ?? false) }))
            }
            return parked
        }
        guard !parked.isEmpty else { return }
        let byTable = Dictionary(grouping: changes, by: \.table)
        let match = { @Sendable in
            var woken: [(key: String, ids: [UInt64])] = []
            for (key, waiters) in parked {
                let changes = byTable[key] ?? []
                // Waiters that ask the same question are answered alike: it is matched once.
                var answers: [LiveQuestion: Bool] = [:]
                var ids: [UInt64] = []
                for (id, waiter, anything) in waiters {
                    let interest = waiter.interest
                    let wants: Bool
                    if anything || interest.isEverything {
                        wants = true
                    } else if let known = answers[waiter.question] {
                        wants = known
                    } else {
                        wants = changes.contains { interest.mayWant($0) }
                        answers[waiter.question] = wants
                    }
                    if wants { ids.append(id) }
                }
                woken.append((key, ids))
            }
            self.resume(woken, deliver: true)
        }
        if parked.reduce(0, { $0 + $1.waiters.count }) * max(1, changes.count) <= Self.inlineMatches { match() } else { Task { match() } }
    }

    /// The answer to `question` on `table` at `generation`: the one every held read that asks it
    /// at that generation gets, worked out once by `work`. Taken after `generation` was read, so
    /// it holds every commit counted by then, exactly as the asker's own query would. A failure
    /// is not kept: the next asker tries again.
    func answer(
        table: String, _ question: LiveQuestion, generation: UInt64, _ work: @escaping @Sendable () async throws -> PageBody
    ) async throws -> PageBody {
        let key = Self.key(table)
        let shared = state.withLock { state -> SharedAnswer in
            // Read and changed in place: a copy of the entry would copy its waiters.
            let current = state.tables[key]?.generation
            if current == generation, let answer = state.tables[key]?.answers[question] { return answer }
            state.queries += 1
            // Kept by the query's own task, once: not by each of the thousands of reads that
            // await it, each taking this lock again to find it kept already.
            let task = Task {
                let page = try await work()
                self.keep(page, key: key, question, generation: generation)
                return page
            }
            // Kept for the askers of its own generation only: after a commit a new query is due.
            if current == generation {
                if state.tables[key]?.answers.count ?? 0 >= Self.maximumAnswers { state.dropAnswers(key) }
                state.tables[key]?.answers[question] = .running(task)
            }
            return .running(task)
        }
        switch shared {
        case .done(let page):
            return page
        case .running(let task):
            do {
                return try await task.value
            } catch {
                state.withLock { state in
                    if state.tables[key]?.generation == generation, case .running? = state.tables[key]?.answers[question] {
                        state.tables[key]?.answers[question] = nil
                    }
                }
                throw error
            }
        }
    }

    /// Keeps a worked-out answer for later askers of its generation, when it is small and there
    /// is room (other tables' answers are dropped to make it).
    private func keep(_ page: PageBody, key: String, _ question: LiveQuestion, generation: UInt64) {
        state.withLock { state in
            guard state.tables[key]?.generation == generation, case .running? = state.tables[key]?.answers[question] else { return }
            let size = page.bytes.readableBytes
            if size <= Self.maximumKeptBytes, state.keptBytes + size > maximumKeptBytesInAll {
                for other in state.tables.compactMap({ $0.key != key && $0.value.keptBytes > 0 ? $0.key : nil }) {
                    state.dropAnswers(other)
                    if state.keptBytes + size <= maximumKeptBytesInAll { break }
                }
            }
            guard size <= Self.maximumKeptBytes, state.keptBytes + size <= maximumKeptBytesInAll else {
                state.tables[key]?.answers[question] = nil
                return
            }
            state.tables[key]?.answers[question] = .done(page)
            state.tables[key]?.keptBytes += size
            state.keptBytes += size
        }
    }

    /// Wakes every waiter of every table: notifications may have been missed (a PostgreSQL
    /// listener that reconnected), so everyone asks again.
    func wakeAll() { committed(state.withLock { Array($0.tables.keys) }) }

    /// The server begins to stop: every held read is answered with what there is now, and no
    /// read parks from now on, so the server stops without waiting out the waits. Called once,
    /// when the server's connections are told to quiesce (`ConnectionLimits.stopping`), not by a
    /// shutdown handler that every wait installs and removes.
    public func stop() {
        state.withLock { $0.stopping = true }
        streams.stop()
        wakeAll()
    }

    /// Whether `stop` was called.
    var isStopping: Bool { state.withLock { $0.stopping } }

    /// Takes a place for one more held read of `table`; false when `limit` are held. (A stranger
    /// cannot take one on a server with accounts: the read is refused, 401, before it gets here.)
    /// The table's entry lives until its last held read is `release`d.
    func admit(limit: Int, table: String) -> Bool {
        state.withLock { state in
            guard state.waiting < limit else { return false }
            state.waiting += 1
            let key = Self.key(table)
            if state.tables[key] == nil { state.tables[key] = Table(generation: state.tick()) }
            state.tables[key]?.holders += 1
            return true
        }
    }

    func release(table: String) {
        state.withLock { state in
            state.waiting -= 1
            let key = Self.key(table)
            state.tables[key]?.holders -= 1
            if state.tables[key]?.holders ?? 0 <= 0 {
                state.dropAnswers(key)
                state.tables[key] = nil
            }
        }
    }

    /// How often the sweep looks at the waiters' deadlines and connections.
    static let sweepInterval = Duration.milliseconds(250)

    /// Waits until a commit may have answered `interest` on the table after `generation` (see
    /// `committed`), `deadline` (within `sweepInterval`), the client's connection closes, the
    /// task is cancelled, or the server stops (`stop`).
    /// Returns the page of the answer a commit wrote for it (`LiveDelivery`), nil when it is to
    /// ask again.
    @discardableResult
    func wait(
        table: String, _ question: LiveQuestion, _ interest: LiveInterest, after generation: UInt64,
        until deadline: ContinuousClock.Instant, channel: (any Channel)?, delivery: LiveDelivery? = nil
    ) async -> PageBody? {
        let key = Self.key(table)
        let id = state.withLock { $0.tick() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: Continuation) in
                let (parked, startSweep) = state.withLock { state -> (Bool, Bool) in
                    guard state.tables[key]?.generation == generation, !state.stopping, !Task.isCancelled else { return (false, false) }
                    let ticket = state.tick()
                    // In place: a copy of the table's entry would copy its 10,000 waiters for each one parked.
                    state.tables[key]?.waiters[id] = Waiter(
                        parked: Parked(continuation, channel: channel, interest: interest, question: question, delivery: delivery),
                        deadline: deadline,
                        ticket: ticket)
                    defer { state.sweeping = true }
                    return (true, !state.sweeping)
                }
                if !parked { continuation.resume(returning: nil) }
                if startSweep { Task { await self.sweep() } }
            }
        } onCancel: {
            resume([(key, [id])], deliver: false)
        }
    }

    /// Every `sweepInterval` while anyone waits: wakes the waiters whose deadline passed or whose
    /// client went away. One task for all of them, a look at each a few nanoseconds; only tables
    /// held now have an entry, so the look is over the held reads, not every name ever read.
    private func sweep() async {
        while true {
            try? await Task.sleep(for: Self.sweepInterval)
            let now = ContinuousClock.now
            let (due, done) = state.withLock { state -> ([Continuation], Bool) in
                var due: [Continuation] = []
                var left = 0
                for key in state.tables.compactMap({ $0.value.waiters.isEmpty ? nil : $0.key }) {
                    let ids =
                        state.tables[key]?.waiters.compactMap { id, waiter in
                            waiter.deadline <= now || waiter.parked.channel?.isActive == false ? id : nil
                        } ?? []
                    // Removed in place (no copy of the other waiters).
                    for id in ids {
                        if let waiter = state.tables[key]?.waiters.removeValue(forKey: id) { due.append(waiter.continuation) }
                    }
                    left += state.tables[key]?.waiters.count ?? 0
                }
                if left == 0 { state.sweeping = false }
                return (due, left == 0)
            }
            for continuation in due { continuation.resume(returning: nil) }
            if done { return }
        }
    }

    /// Resumes the waiters named (by table) that are still parked; with `deliver`, after writing
    /// the answers of those that can be answered outside their requests (`wake`).
    private func resume(_ waiters: [(key: String, ids: [UInt64])], deliver: Bool) {
        let (woken, stopping) = state.withLock { state in
            var woken: [(key: String, parked: [Parked])] = []
            for (key, ids) in waiters where state.tables[key] != nil {
                var parked: [Parked] = []
                // Removed in place: a copy of the table's entry would copy its other waiters.
                for id in ids {
                    if let waiter = state.tables[key]?.waiters.removeValue(forKey: id) { parked.append(waiter.parked) }
                }
                woken.append((key, parked))
            }
            return (woken, state.stopping)
        }
        wake(woken, deliver: deliver && !stopping)
    }

    /// Wakes waiters a commit may have answered. Those that can be answered outside their
    /// requests (`LiveDelivery`) are answered by question: the question's page worked out once
    /// (`answer`, at the generation after the commit, as each read would ask it), each answer
    /// written from its connection's event loop, and the waiters of each loop resumed once that
    /// loop has written all of theirs, so that no request's task runs ahead of the writes. A
    /// page that is empty, too large or failed, every other waiter, and all without `deliver`:
    /// resumed to ask again.
    private func wake(_ woken: [(key: String, parked: [Parked])], deliver: Bool) {
        for (key, parked) in woken {
            var questions: [LiveQuestion: [Parked]] = [:]
            for waiter in parked {
                if !deliver || waiter.delivery == nil {
                    waiter.continuation.resume(returning: nil)
                } else {
                    questions[waiter.question, default: []].append(waiter)
                }
            }
            for (question, waiters) in questions { Task { await self.deliver(key: key, question, waiters) } }
        }
    }

    /// `wake`'s work for the waiters of one question.
    private func deliver(key: String, _ question: LiveQuestion, _ waiters: [Parked]) async {
        guard let query = waiters.first?.delivery?.query else { return }
        let page = try? await answer(table: key, question, generation: generation(key), query)
        guard let page, page.count > 0, page.bytes.readableBytes <= LiveDelivery.maximumBytes else {
            for waiter in waiters { waiter.continuation.resume(returning: nil) }
            return
        }
        var loops: [ObjectIdentifier: (loop: any EventLoop, waiters: [Parked])] = [:]
        for waiter in waiters {
            guard let loop = waiter.delivery?.channel.eventLoop else {
                waiter.continuation.resume(returning: nil)
                continue
            }
            loops[ObjectIdentifier(loop), default: (loop, [])].waiters.append(waiter)
        }
        // The reads resume once every loop has written its answers: resumed at once, one loop's
        // reads (their logs, their next requests) took the cores from the loops still writing.
        let groups = Array(loops.values)
        let written = Mutex((left: groups.count, waiters: [(Parked, Bool)]()))
        for (loop, waiters) in groups {
            loop.execute {
                let results = waiters.map { ($0, $0.delivery?.write(page) ?? false) }
                let all = written.withLock { written -> [(Parked, Bool)]? in
                    written.left -= 1
                    written.waiters += results
                    return written.left == 0 ? written.waiters : nil
                }
                for (waiter, written) in all ?? [] { waiter.continuation.resume(returning: written ? page : nil) }
            }
        }
    }

    /// What a write transaction committed, as the live route matches it (`committed`).
    static func changes(_ writes: [RecordWrite], _ outcomes: [WriteOutcome]) -> [LiveChange] {
        zip(writes, outcomes).compactMap { write, outcome in
            let record: Record
            switch outcome {
            case .inserted(let written), .modified(let written): record = written
            default: return nil
            }
            var owner: String?
            if case .owner(let name) = write.scope { owner = name }
            return LiveChange(table: key(write.table), record: record, owner: owner)
        }
    }
}

/// A record a transaction committed.
public struct LiveChange: Sendable {
    /// `ChangeFeed.key` of its table.
    var table: String
    var record: Record
    /// Its owner, when the write was in a user's scope (the record is then that user's); nil
    /// when not known.
    var owner: String?
}

/// What a held read may be answered by: its scope, whether it takes deleted records, and its
/// filter (docs/DESIGN.md §8.1).
struct LiveInterest: Sendable {
    var scope: OwnerScope
    var includeDeleted: Bool
    var filter: FilterExpression?
    /// Anything: asks again after every commit of its table.
    var isEverything = false

    static let everything = LiveInterest(scope: .shared, includeDeleted: true, filter: nil, isEverything: true)

    /// False only when the read's query certainly finds nothing new because of `change`: another
    /// user's record, a deleted one it does not take, or one its filter is certainly false for.
    func mayWant(_ change: LiveChange) -> Bool {
        if isEverything { return true }
        if case .owner(let user) = scope, let owner = change.owner, owner != user { return false }
        if change.record.system.deleted, !includeDeleted { return false }
        return filter?.mayHold(for: change.record) ?? true
    }
}
