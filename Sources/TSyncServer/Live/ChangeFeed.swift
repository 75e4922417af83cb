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
        /// The table's last wake, while the readers it answered come back (`Cohort`).
        var cohort = Cohort()
    }

    /// A table's last wake and the readers it answered, until they are back (docs/DESIGN.md §8.1).
    ///
    /// A table that takes a commit a millisecond has its watchers back before their next record
    /// is a millisecond old. Answered one by one as each comes back, each with a query of its own
    /// and a few records, a thousand of them kept two cores busy, and a record waited for the
    /// whole round. So while a wake's readers are out, a commit wakes nobody: it waits for the
    /// last of them to be back, when they all ask the same question again and the next wake is
    /// one query and one page for all of them, written from the event loops (`LiveDelivery`).
    /// A reader back parks without a query. A reader that is late (gone, or slow to read) is
    /// waited for up to `cap`, twice the time the last whole cohort took to come back; a commit
    /// with nobody out wakes its readers at once, as it always did.
    struct Cohort {
        /// The first `lastReturn`, before any cohort came back whole.
        static let firstReturn = Duration.milliseconds(25)

        /// Names the wake: a late write of an earlier wake adds nobody (`joined`).
        var wake: UInt64 = 0
        var at: ContinuousClock.Instant?
        /// The table's generation before the wake's queries: a reader back when the table is
        /// still at it found nothing newer, and waits for a commit.
        var generation: UInt64 = 0
        /// The connections whose answers the wake wrote, not back yet.
        var out: Set<ObjectIdentifier> = []
        /// How long the last whole cohort took to come back.
        var lastReturn = firstReturn
        /// The waiters that wait for the next wake.
        var due: Set<UInt64> = []
        /// The wake scheduled at the cap, while one is.
        var capWake: UInt64?

        /// How long the readers still out are waited for.
        var cap: Duration { min(max(lastReturn * 2, .milliseconds(10)), .milliseconds(100)) }

        /// Whether readers of the wake are still out and waited for.
        func isOut(at now: ContinuousClock.Instant) -> Bool {
            guard !out.isEmpty, let at else { return false }
            return now < at + cap
        }
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

        /// Starts a wake of `key`'s held reads: a new cohort, none of it back yet (its members are
        /// added as their answers are written, `deliver`). Returns its name and the waiters that
        /// waited for it, besides those it wakes anyway.
        mutating func startWake(_ key: String, now: ContinuousClock.Instant) -> (wake: UInt64, due: [UInt64]) {
            let wake = tick()
            let due = tables[key].map { Array($0.cohort.due) } ?? []
            if let generation = tables[key]?.generation {
                let lastReturn = tables[key]?.cohort.lastReturn ?? Cohort.firstReturn
                tables[key]?.cohort = Cohort(wake: wake, at: now, generation: generation, lastReturn: lastReturn)
            }
            return (wake, due)
        }

        /// Names a wake of `key` at its cohort's cap, unless one is named already.
        mutating func scheduleCap(_ key: String) -> (wake: UInt64, at: ContinuousClock.Instant)? {
            guard let cohort = tables[key]?.cohort, cohort.capWake == nil, let at = cohort.at else { return nil }
            let wake = tick()
            tables[key]?.cohort.capWake = wake
            return (wake, at + cohort.cap)
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
    /// `defaultMaximumKeptBytesInAll`, or less for a test.
    private let maximumKeptBytesInAll: Int
    /// Whether a busy table's wakes wait for the readers of the last one (`Cohort`); off only
    /// for a test of the feed without it.
    let cohorts: Bool

    public init() {
        maximumKeptBytesInAll = Self.defaultMaximumKeptBytesInAll
        cohorts = true
    }

    init(maximumKeptBytesInAll: Int = defaultMaximumKeptBytesInAll, cohorts: Bool = true) {
        self.maximumKeptBytesInAll = maximumKeptBytesInAll
        self.cohorts = cohorts
    }

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
        let waiters = state.withLock { state -> [(key: String, ids: [UInt64])] in
            var waiters: [(key: String, ids: [UInt64])] = []
            for key in Set(tables.map(Self.key)) where state.tables[key] != nil {
                state.advance(key)
                waiters.append((key, state.tables[key].map { Array($0.waiters.keys) } ?? []))
            }
            return waiters
        }
        // Stopping: every read answers what there is now, its own way (`resume`).
        resumePaced(waiters)
    }

    /// Says that a transaction that wrote to `tables` ended, and that `changes` are what it
    /// committed there (empty when it committed nothing). `ticket`, taken before the transaction
    /// started, is for a backend whose pages stop below a write in flight (PostgreSQL, docs/
    /// DESIGN.md §10): a waiter that parked after it may have had its page held back by this
    /// write, and wakes whatever was written; nil where a page never stops below a write
    /// (SQLite). Every other waiter wakes only when one of `changes` may answer it.
    public func committed(_ tables: some Sequence<String>, changes: [LiveChange], since ticket: UInt64?) {
        let keys = Set(tables.map(Self.key))
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
            self.resumePaced(woken)
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

    /// What a read that found records while its table's last wake is out is told (`paced`).
    enum PacedWait {
        /// No wake is out: answer the page now.
        case now
        /// The next wake wrote its answer, this page.
        case written(PageBody)
        /// Ask again, and answer what is found.
        case askAgain
    }

    /// Holds a read that found records until its table's next wake, while the last wake's
    /// readers are still coming back (`Cohort`): the wake answers it with them, one question for
    /// all (or, without `delivery`, wakes it to ask again). Otherwise `.now`.
    func paced(
        table: String, _ question: LiveQuestion, _ interest: LiveInterest, until deadline: ContinuousClock.Instant,
        channel: (any Channel)?, delivery: LiveDelivery?
    ) async -> PacedWait {
        let key = Self.key(table)
        guard cohorts else { return .now }
        let written = await park(key, question, interest, until: deadline, channel: channel, delivery: delivery) { _, _ in .due }
        switch written {
        case nil: return .now
        case .some(nil): return .askAgain
        case .some(.some(let page)): return .written(page)
        }
    }

    /// Whether `channel`'s last answer on `table` was written by the table's last wake, which
    /// waits for it to ask again (`back`).
    func isOut(_ table: String, _ channel: any Channel) -> Bool {
        guard cohorts else { return false }
        return state.withLock { $0.tables[Self.key(table)]?.cohort.out.contains(ObjectIdentifier(channel)) ?? false }
    }

    /// A read back from its table's last wake (`isOut`): it parks without a query, until the
    /// next wake when a commit came after the wake's queries began, else until a commit, like
    /// any waiter. The last reader back starts the next wake at once when one is due; the
    /// others wait for it, or for the cohort's cap. Returns nil when it was not out (any more),
    /// and the read goes on as any other; else what it was resumed with (`wait`).
    func back(
        table: String, _ question: LiveQuestion, _ interest: LiveInterest, until deadline: ContinuousClock.Instant,
        channel: any Channel, delivery: LiveDelivery
    ) async -> PageBody?? {
        let key = Self.key(table)
        let member = ObjectIdentifier(channel)
        return await park(key, question, interest, until: deadline, channel: channel, delivery: delivery) { state, id in
            guard state.tables[key]?.cohort.out.remove(member) != nil, let cohort = state.tables[key]?.cohort else { return .no }
            if cohort.out.isEmpty, let at = cohort.at { state.tables[key]?.cohort.lastReturn = .now - at }
            return state.tables[key]?.generation != cohort.generation ? .due : .commit
        }
    }

    /// How `park` parks a waiter.
    enum Parking {
        /// Not at all: the read goes on as any other.
        case no
        /// Until the next wake (`Cohort.due`).
        case due
        /// Until a commit that may answer it, as `wait`.
        case commit
    }

    /// Parks a waiter of `key` as `admit` says (under the lock, given the waiter's id) and waits
    /// for it to be resumed. When the table's cohort is all back and a wake is due, it starts;
    /// when some are still out and a wake is due, the cap is scheduled. Nil when not parked.
    private func park(
        _ key: String, _ question: LiveQuestion, _ interest: LiveInterest, until deadline: ContinuousClock.Instant,
        channel: (any Channel)?, delivery: LiveDelivery?, admit: @escaping (inout State, UInt64) -> Parking
    ) async -> PageBody?? {
        let id = state.withLock { $0.tick() }
        let parkedAt = Atomic<Bool>(false)
        let page = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: Continuation) in
                let now = ContinuousClock.now
                let (parked, startSweep, wake, cap) = state.withLock {
                    state -> (Bool, Bool, (wake: UInt64, due: [UInt64])?, (wake: UInt64, at: ContinuousClock.Instant)?) in
                    guard state.tables[key] != nil, !state.stopping, !Task.isCancelled else { return (false, false, nil, nil) }
                    let parking = admit(&state, id)
                    guard parking != .no else { return (false, false, nil, nil) }
                    let ticket = state.tick()
                    state.tables[key]?.waiters[id] = Waiter(
                        parked: Parked(continuation, channel: channel, interest: interest, question: question, delivery: delivery),
                        deadline: deadline,
                        ticket: ticket)
                    if parking == .due { state.tables[key]?.cohort.due.insert(id) }
                    defer { state.sweeping = true }
                    guard let cohort = state.tables[key]?.cohort, !cohort.due.isEmpty else { return (true, !state.sweeping, nil, nil) }
                    if cohort.out.isEmpty { return (true, !state.sweeping, state.startWake(key, now: now), nil) }
                    return (true, !state.sweeping, nil, state.scheduleCap(key))
                }
                parkedAt.store(parked, ordering: .relaxed)
                if !parked { continuation.resume(returning: nil) }
                if startSweep { Task { await self.sweep() } }
                if let wake { resume([(key, wake.due)], deliver: true, wake: wake.wake) }
                if let cap { scheduleCap(key, cap) }
            }
        } onCancel: {
            resume([(key, [id])], deliver: false)
        }
        return parkedAt.load(ordering: .relaxed) ? .some(page) : nil
    }

    /// Wakes the waiters named now, or, while their table's last wake is out (`Cohort`), at the
    /// next wake.
    private func resumePaced(_ waiters: [(key: String, ids: [UInt64])]) {
        guard cohorts else { return resume(waiters, deliver: true) }
        let now = ContinuousClock.now
        let (ready, caps) = state.withLock { state in
            var ready: [(key: String, ids: [UInt64], wake: UInt64?)] = []
            var caps: [(key: String, wake: UInt64, at: ContinuousClock.Instant)] = []
            for (key, ids) in waiters where state.tables[key] != nil {
                if state.stopping {
                    ready.append((key, ids, nil))
                } else if state.tables[key]?.cohort.isOut(at: now) == true {
                    state.tables[key]?.cohort.due.formUnion(ids)
                    if !ids.isEmpty, let cap = state.scheduleCap(key) { caps.append((key, cap.wake, cap.at)) }
                } else if !ids.isEmpty || state.tables[key]?.cohort.due.isEmpty == false {
                    let wake = state.startWake(key, now: now)
                    ready.append((key, Array(Set(ids).union(wake.due)), wake.wake))
                }
            }
            return (ready, caps)
        }
        for (key, ids, wake) in ready { resume([(key, ids)], deliver: true, wake: wake) }
        for (key, wake, at) in caps { scheduleCap(key, (wake, at)) }
    }

    /// Runs the table's wake at its cohort's cap (`State.scheduleCap`), unless a wake went out
    /// since: ahead of the reads' tasks, as the writes are, so that it keeps its time under their
    /// load. The readers still out are no longer waited for.
    private func scheduleCap(_ key: String, _ cap: (wake: UInt64, at: ContinuousClock.Instant)) {
        Task(priority: .high) {
            try? await Task.sleep(until: cap.at, clock: .continuous)
            let wake = self.state.withLock { state -> (wake: UInt64, due: [UInt64])? in
                guard state.tables[key]?.cohort.capWake == cap.wake else { return nil }
                return state.startWake(key, now: .now)
            }
            if let wake { self.resume([(key, wake.due)], deliver: true, wake: wake.wake) }
        }
    }

    /// Resumes the waiters named (by table) that are still parked; with `deliver`, after writing
    /// the answers of those that can be answered outside their requests (`wake`).
    private func resume(_ waiters: [(key: String, ids: [UInt64])], deliver: Bool, wake cohort: UInt64? = nil) {
        let (woken, stopping) = state.withLock { state in
            var woken: [(key: String, parked: [Parked])] = []
            for (key, ids) in waiters where state.tables[key] != nil {
                var parked: [Parked] = []
                // Removed in place: a copy of the table's entry would copy its other waiters.
                for id in ids {
                    if let waiter = state.tables[key]?.waiters.removeValue(forKey: id) { parked.append(waiter.parked) }
                }
                // Out from now: the readers of this wake's answers (those not written leave, `notWritten`).
                if deliver, let cohort, state.tables[key]?.cohort.wake == cohort {
                    for waiter in parked where waiter.delivery != nil {
                        if let channel = waiter.channel { state.tables[key]?.cohort.out.insert(ObjectIdentifier(channel)) }
                    }
                }
                woken.append((key, parked))
            }
            return (woken, state.stopping)
        }
        wake(woken, deliver: deliver && !stopping, cohort: cohort)
    }

    /// Wakes waiters a commit may have answered. Those that can be answered outside their
    /// requests (`LiveDelivery`) are answered by question: the question's page worked out once
    /// (`answer`, at the generation after the commit, as each read would ask it), each answer
    /// written from its connection's event loop, and the waiters of each loop resumed once that
    /// loop has written all of theirs, so that no request's task runs ahead of the writes. A
    /// page that is empty, too large or failed, every other waiter, and all without `deliver`:
    /// resumed to ask again.
    private func wake(_ woken: [(key: String, parked: [Parked])], deliver: Bool, cohort: UInt64? = nil) {
        for (key, parked) in woken {
            var questions: [LiveQuestion: [Parked]] = [:]
            for waiter in parked {
                if !deliver || waiter.delivery == nil {
                    waiter.continuation.resume(returning: nil)
                } else {
                    questions[waiter.question, default: []].append(waiter)
                }
            }
            for (question, waiters) in questions { Task { await self.deliver(key: key, question, waiters, cohort: cohort) } }
        }
    }

    /// `wake`'s work for the waiters of one question.
    private func deliver(key: String, _ question: LiveQuestion, _ waiters: [Parked], cohort: UInt64?) async {
        guard let query = waiters.first?.delivery?.query else { return }
        let page = try? await answer(table: key, question, generation: generation(key), query)
        guard let page, page.count > 0, page.bytes.readableBytes <= LiveDelivery.maximumBytes else {
            if let cohort { notWritten(key, cohort, waiters.compactMap(\.channel)) }
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
                if let cohort { self.notWritten(key, cohort, results.compactMap { $1 ? nil : $0.channel }) }
                let all = written.withLock { written -> [(Parked, Bool)]? in
                    written.left -= 1
                    written.waiters += results
                    return written.left == 0 ? written.waiters : nil
                }
                for (waiter, written) in all ?? [] { waiter.continuation.resume(returning: written ? page : nil) }
            }
        }
    }

    /// Takes the connections a wake did not write answers to out of its cohort: they ask again
    /// within their requests, and are not waited for.
    private func notWritten(_ key: String, _ wake: UInt64, _ channels: [any Channel]) {
        guard !channels.isEmpty else { return }
        state.withLock { state in
            guard state.tables[key]?.cohort.wake == wake else { return }
            for channel in channels { state.tables[key]?.cohort.out.remove(ObjectIdentifier(channel)) }
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
