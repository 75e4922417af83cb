import Foundation
import NIOCore
import Synchronization

/// Wakes the long-polls that wait for a table's next commit (docs/DESIGN.md §8.1, the live route).
///
/// Per table a commit count (`generation`) and the waiters parked on it. A request takes the
/// generation BEFORE it runs its query, and waits only while the generation is still that one: a
/// commit between the query and the wait is never missed. A commit resumes every waiter of its
/// table, which then run their query again (a per-user waiter woken by another user's write finds
/// nothing and waits again). While nothing is committed a waiter costs no database work: it is a
/// parked continuation and one timer on its connection's event loop.
///
/// The write paths call `committed` after their transaction commits; on PostgreSQL a listener
/// (`PostgresChangeListener`) calls it for the commits of other instances.
public final class ChangeFeed: Sendable {
    private struct Table {
        var generation: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }

    private struct State {
        var tables: [String: Table] = [:]
        var nextWaiter: UInt64 = 0
        var waiting = 0
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

    /// Says that a transaction that wrote to `tables` committed: their waiters wake.
    public func committed(_ tables: some Sequence<String>) {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            var woken: [CheckedContinuation<Void, Never>] = []
            for table in Set(tables.map(Self.key)) {
                var entry = state.tables[table] ?? Table()
                entry.generation &+= 1
                woken.append(contentsOf: entry.waiters.values)
                entry.waiters.removeAll()
                state.tables[table] = entry
            }
            return woken
        }
        for continuation in woken { continuation.resume() }
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

    /// Waits until the table's generation is no longer `generation` (a commit), `deadline`, the
    /// client's connection closes (looked at once a second), the task is cancelled, or the server
    /// shuts down (`onShutdown` is given the wake-up to call).
    func wait(
        table: String, after generation: UInt64, until deadline: ContinuousClock.Instant, channel: (any Channel)?
    ) async {
        let key = Self.key(table)
        let id = state.withLock { state -> UInt64 in
            state.nextWaiter &+= 1
            return state.nextWaiter
        }
        let wake: @Sendable () -> Void = { [self] in resume(key, id) }
        // The timer: on the connection's event loop when there is one (no task per waiter).
        let timer: Cancellable
        if let channel {
            let repeated = channel.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { task in
                if !channel.isActive || ContinuousClock.now >= deadline {
                    wake()
                    task.cancel()
                }
            }
            timer = Cancellable { repeated.cancel() }
        } else {
            let task = Task {
                try? await Task.sleep(until: deadline)
                wake()
            }
            timer = Cancellable { task.cancel() }
        }
        defer { timer.cancel() }
        if let channel {
            // Shorter than a second: the timer's first look is after one.
            let delay = deadline - ContinuousClock.now
            if delay < .seconds(1) {
                let nanoseconds = max(0, delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000)
                channel.eventLoop.scheduleTask(in: .nanoseconds(nanoseconds)) { wake() }
            }
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let parked = state.withLock { state -> Bool in
                    var entry = state.tables[key] ?? Table()
                    guard entry.generation == generation, !Task.isCancelled else { return false }
                    entry.waiters[id] = continuation
                    state.tables[key] = entry
                    return true
                }
                if !parked { continuation.resume() }
            }
        } onCancel: {
            wake()
        }
    }

    /// Resumes one waiter if it is still parked.
    func resume(_ key: String, _ id: UInt64) {
        let continuation = state.withLock { $0.tables[key]?.waiters.removeValue(forKey: id) }
        continuation?.resume()
    }
}

/// A thing to cancel, whatever kind of timer it is.
private struct Cancellable: Sendable {
    let cancel: @Sendable () -> Void
}
