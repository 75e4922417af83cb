import Synchronization

/// The database's read slots (SQLite's reader connections, PostgreSQL's pool), shared between
/// clients (docs/DESIGN.md §10.1): a client (an account, or an anonymous caller's address) runs
/// at most `perClient` reads at once, all clients together at most `slots`, and a freed slot goes
/// to the waiting client that runs the fewest. A client whose reads are slow waits for itself;
/// the others find a slot. The slots are fewer than the connections, so that what runs outside
/// them (token lookups and logins, writes, the readiness check) never waits behind reads.
///
/// Only work that names its client (`client`, set by the routes around a request's reads:
/// `QueryDeadline`) is counted; everything else passes straight through.
final class ReadShares: Sendable {
    /// The client the current task reads for; nil for work of no client's.
    @TaskLocal static var client: String?

    /// Reads that may run at once, all clients together.
    let slots: Int
    private let state: Mutex<State>

    private struct State {
        var perClient: Int
        var running: [String: Int] = [:]
        var total = 0
        var queue = ShareQueue<CheckedContinuation<Void, any Error>>()
        var nextID: UInt64 = 0

        func mayStart(_ client: String) -> Bool { total < slotsLimit && running[client, default: 0] < perClient }
        var slotsLimit: Int

        mutating func start(_ client: String) {
            total += 1
            running[client, default: 0] += 1
        }

        /// Takes the waiters that may start now, the client running fewest first.
        mutating func admit() -> [CheckedContinuation<Void, any Error>] {
            var admitted: [CheckedContinuation<Void, any Error>] = []
            while total < slotsLimit, let (client, continuation) = queue.next(running: running, perClient: perClient) {
                start(client)
                admitted.append(continuation)
            }
            return admitted
        }
    }

    /// - Parameters:
    ///   - connections: the connections reads take (SQLite's readers, PostgreSQL's pool).
    ///   - perClient: reads one client may run at once.
    init(connections: Int, perClient: Int = ReadShares.defaultPerClient) {
        slots = Self.slots(connections: connections)
        state = Mutex(State(perClient: max(1, perClient), slotsLimit: slots))
    }

    /// Reads one client may run at once unless `--db-share` says otherwise.
    static let defaultPerClient = 2

    /// The slots of `connections`: a fifth of them (at least two, and at least one slot) stay
    /// free of reads.
    static func slots(connections: Int) -> Int { max(1, connections - max(2, connections / 5)) }

    /// Sets how many reads one client may run at once (`--db-share`); set before serving.
    func setPerClient(_ count: Int) {
        let admitted = state.withLock { state in
            state.perClient = max(1, count)
            return state.admit()
        }
        for continuation in admitted { continuation.resume() }
    }

    /// Runs `body` in a slot of the current task's `client`, waiting for one first; at once when
    /// the task reads for no client. Cancelled while it waits, it throws `CancellationError`.
    func run<Result>(_ body: () async throws -> Result) async throws -> Result {
        guard let client = Self.client else { return try await body() }
        try await acquire(client)
        defer { release(client) }
        return try await body()
    }

    /// Runs `body` in a slot of `client` when one is free now and no read waits for one (as
    /// `run` would start it at once); nil, without running it, otherwise.
    func runIfFree<Result>(_ client: String, _ body: () throws -> Result) rethrows -> Result? {
        let started = state.withLock { state in
            guard state.queue.isEmpty, state.mayStart(client) else { return false }
            state.start(client)
            return true
        }
        guard started else { return nil }
        defer { release(client) }
        return try body()
    }

    private func acquire(_ client: String) async throws {
        let id: UInt64? = state.withLock { state in
            if state.queue.isEmpty, state.mayStart(client) {
                state.start(client)
                return nil
            }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let admitted = state.withLock { state -> [CheckedContinuation<Void, any Error>]? in
                    if Task.isCancelled { return nil }
                    state.queue.append(id: id, client: client, continuation)
                    return state.admit()
                }
                guard let admitted else { return continuation.resume(throwing: CancellationError()) }
                for waiter in admitted { waiter.resume() }
            }
        } onCancel: {
            let removed = state.withLock { $0.queue.remove(id: id, client: client) }
            removed?.resume(throwing: CancellationError())
        }
    }

    private func release(_ client: String) {
        let admitted = state.withLock { state in
            state.total -= 1
            state.running[client, default: 1] -= 1
            if state.running[client] == 0 { state.running[client] = nil }
            return state.admit()
        }
        for continuation in admitted { continuation.resume() }
    }

    /// Reads running now for `client` (tests).
    func running(_ client: String) -> Int { state.withLock { $0.running[client, default: 0] } }

    /// Reads waiting now for a slot, all clients together (tests).
    var waiting: Int { state.withLock { $0.queue.count } }
}

/// The reads waiting for a slot, in a queue per client: which to start next is the first of the
/// client running fewest (of those under their share), the earliest of those that tie. Worked
/// out over the clients that wait, not the waiters: 1,000 held reads of one client all waiting
/// made each start a walk and a copy of the whole list (`ShareQueueTests` hold it to that walk).
struct ShareQueue<Element> {
    /// Each client's waiters in the order they came (ids grow), from `heads[client]` on.
    private var waiting: [String: [(id: UInt64, element: Element)]] = [:]
    private var heads: [String: Int] = [:]
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// Adds a waiter; `id`s grow in the order waiters come.
    mutating func append(id: UInt64, client: String, _ element: Element) {
        waiting[client, default: []].append((id, element))
        count += 1
    }

    /// Takes the waiter to start next, with its client: the first waiter of the client running
    /// fewest (`running`) under `perClient`, the earliest when clients tie; nil when none may start.
    mutating func next(running: [String: Int], perClient: Int) -> (client: String, element: Element)? {
        var best: (client: String, running: Int, id: UInt64)?
        for (client, queue) in waiting {
            let runs = running[client, default: 0]
            guard runs < perClient, let first = queue[heads[client, default: 0]...].first else { continue }
            if let chosen = best, chosen.running < runs || (chosen.running == runs && chosen.id < first.id) { continue }
            best = (client, runs, first.id)
        }
        guard let client = best?.client, let element = take(client, at: heads[client, default: 0]) else { return nil }
        return (client, element)
    }

    /// Takes the waiter `id` of `client` out (a cancelled wait); nil when it is no longer there.
    mutating func remove(id: UInt64, client: String) -> Element? {
        let head = heads[client, default: 0]
        guard let index = waiting[client]?[head...].firstIndex(where: { $0.id == id }) else { return nil }
        return take(client, at: index)
    }

    private mutating func take(_ client: String, at index: Int) -> Element? {
        let head = heads[client, default: 0]
        let size = waiting[client]?.count ?? 0
        guard index >= head, index < size, let element = waiting[client]?[index].element else { return nil }
        count -= 1
        if index > head {
            waiting[client]?.remove(at: index)
        } else if head + 1 == size {
            waiting[client] = nil
            heads[client] = nil
        } else if head + 1 >= 32, head + 1 >= size / 2 {
            // Taken from the front: the taken ones are dropped once they are half the array.
            waiting[client]?.removeFirst(head + 1)
            heads[client] = 0
        } else {
            heads[client] = head + 1
        }
        return element
    }
}
