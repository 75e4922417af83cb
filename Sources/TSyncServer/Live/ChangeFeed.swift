import Foundation
import NIOCore
import Synchronization

/// Wakes the long-polls that wait for a table's next commit (docs/DESIGN.md §8.1, the live route).
///
/// Per table a commit count (`generation`) and the waiters parked on it. A request takes the
/// generation BEFORE it runs its query, and waits only while the generation is still that one: a
/// commit between the query and the wait is never missed. A commit resumes every waiter of its
/// table, which then asks its query again (a per-user waiter woken by another user's write finds
/// nothing and waits again). While nothing is committed a waiter costs no database work: it is a
/// parked continuation; one sweep every quarter second looks at every waiter's deadline and
/// connection (`sweep`). (A timer per waiter was an entry in its event loop's heap, and removing
/// 10,000 of them at one commit cost more than answering the reads.)
///
/// Held reads that ask the same question at the same generation share one answer (`answer`): the
/// 10,000 reads one commit wakes are one query and one page of bytes, not 10,000 of each.
///
/// The write paths call `committed` after their transaction commits; on PostgreSQL a listener
/// (`PostgresChangeListener`) calls it for the commits of other instances.
public final class ChangeFeed: Sendable {
    private struct Table {
        var generation: UInt64 = 0
        var waiters: [UInt64: Waiter] = [:]
        /// The answers of this generation, by question; a commit drops them.
        var answers: [LiveQuestion: SharedAnswer] = [:]
    }

    /// An answer being worked out (every asker awaits the one task), or worked out.
    private enum SharedAnswer {
        case running(Task<PageBody, any Error>)
        case done(PageBody)
    }

    /// Questions answered per table and generation, at most: past it the answers kept are
    /// dropped (a table read with as many different filters shares little anyway).
    static let maximumAnswers = 256
    /// A page longer than this is not kept once it is sent: kept answers stay small, so what a
    /// table nobody writes keeps is bounded (`maximumAnswers` of them).
    static let maximumKeptBytes = 64 * 1024

    /// A parked request: what wakes it besides a commit.
    private struct Waiter {
        var continuation: CheckedContinuation<Void, Never>
        var deadline: ContinuousClock.Instant
        /// Its client's connection: a closed one ends the wait.
        var channel: (any Channel)?
    }

    private struct State {
        var tables: [String: Table] = [:]
        /// Whether the sweep runs (it stops when nobody waits).
        var sweeping = false
        var nextWaiter: UInt64 = 0
        var waiting = 0
        var queries = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// The key of a table: table names are case-insensitive.
    static func key(_ table: String) -> String { table.lowercased() }

    /// The table's commit count so far.
    func generation(_ table: String) -> UInt64 {
        state.withLock { $0.tables[Self.key(table)]?.generation ?? 0 }
    }

    /// Requests parked now.
    public var waiting: Int { state.withLock { $0.waiting } }

    /// Queries run by `answer` so far: fewer than the reads answered when they share.
    public var queries: Int { state.withLock { $0.queries } }

    /// Says that a transaction that wrote to `tables` committed: their waiters wake.
    public func committed(_ tables: some Sequence<String>) {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            var woken: [CheckedContinuation<Void, Never>] = []
            for table in Set(tables.map(Self.key)) {
                let waiters = state.tables[table]?.waiters ?? [:]
                state.tables[table] = Table(generation: (state.tables[table]?.generation ?? 0) &+ 1)
                woken.append(contentsOf: waiters.values.map(\.continuation))
            }
            return woken
        }
        for continuation in woken { continuation.resume() }
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
            let current = state.tables[key]?.generation ?? 0
            if current == generation, let answer = state.tables[key]?.answers[question] { return answer }
            state.queries += 1
            let task = Task { try await work() }
            // Kept for the askers of its own generation only: after a commit a new query is due.
            if current == generation {
                if state.tables[key]?.answers.count ?? 0 >= Self.maximumAnswers { state.tables[key]?.answers.removeAll() }
                state.tables[key, default: Table()].answers[question] = .running(task)
            }
            return .running(task)
        }
        switch shared {
        case .done(let page):
            return page
        case .running(let task):
            do {
                let page = try await task.value
                keep(page, key: key, question, generation: generation)
                return page
            } catch {
                state.withLock { state in
                    if state.tables[key]?.generation == generation { state.tables[key]?.answers[question] = nil }
                }
                throw error
            }
        }
    }

    /// Keeps a worked-out answer for later askers of its generation, when it is small.
    private func keep(_ page: PageBody, key: String, _ question: LiveQuestion, generation: UInt64) {
        state.withLock { state in
            guard state.tables[key]?.generation == generation, case .running? = state.tables[key]?.answers[question] else { return }
            state.tables[key]?.answers[question] = page.bytes.readableBytes <= Self.maximumKeptBytes ? .done(page) : nil
        }
    }

    /// Wakes every waiter of every table: notifications may have been missed (a PostgreSQL
    /// listener that reconnected), so everyone asks again.
    func wakeAll() { committed(state.withLock { Array($0.tables.keys) }) }

    /// Takes a place for one more waiter; false when `limit` are waiting. (A stranger cannot
    /// take one on a server with accounts: the read is refused, 401, before it gets here.)
    func admit(limit: Int) -> Bool {
        state.withLock { state in
            guard state.waiting < limit else { return false }
            state.waiting += 1
            return true
        }
    }

    func release() {
        state.withLock { $0.waiting -= 1 }
    }

    /// How often the sweep looks at the waiters' deadlines and connections.
    static let sweepInterval = Duration.milliseconds(250)

    /// Waits until the table's generation is no longer `generation` (a commit), `deadline` (within
    /// `sweepInterval`), the client's connection closes, the task is cancelled, or the server shuts
    /// down (through a commit, `LiveWait`).
    func wait(
        table: String, after generation: UInt64, until deadline: ContinuousClock.Instant, channel: (any Channel)?
    ) async {
        let key = Self.key(table)
        let id = state.withLock { state -> UInt64 in
            state.nextWaiter &+= 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let (parked, startSweep) = state.withLock { state -> (Bool, Bool) in
                    guard state.tables[key]?.generation ?? 0 == generation, !Task.isCancelled else { return (false, false) }
                    // In place: a copy of the table's entry would copy its 10,000 waiters for each one parked.
                    state.tables[key, default: Table()].waiters[id] = Waiter(
                        continuation: continuation, deadline: deadline, channel: channel)
                    defer { state.sweeping = true }
                    return (true, !state.sweeping)
                }
                if !parked { continuation.resume() }
                if startSweep { Task { await self.sweep() } }
            }
        } onCancel: {
            resume(key, id)
        }
    }

    /// Every `sweepInterval` while anyone waits: wakes the waiters whose deadline passed or whose
    /// client went away. One task for all of them, a look at each a few nanoseconds.
    private func sweep() async {
        while true {
            try? await Task.sleep(for: Self.sweepInterval)
            let now = ContinuousClock.now
            let (due, done) = state.withLock { state -> ([CheckedContinuation<Void, Never>], Bool) in
                var due: [CheckedContinuation<Void, Never>] = []
                var left = 0
                for key in Array(state.tables.keys) {
                    let ids =
                        state.tables[key].map { entry in
                            entry.waiters.compactMap { id, waiter in waiter.deadline <= now || waiter.channel?.isActive == false ? id : nil
                            }
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
            for continuation in due { continuation.resume() }
            if done { return }
        }
    }

    /// Resumes one waiter if it is still parked.
    func resume(_ key: String, _ id: UInt64) {
        let continuation = state.withLock { $0.tables[key]?.waiters.removeValue(forKey: id)?.continuation }
        continuation?.resume()
    }
}
