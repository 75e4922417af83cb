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

    private struct Waiter {
        var id: UInt64
        var client: String
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var perClient: Int
        var running: [String: Int] = [:]
        var total = 0
        var waiting: [Waiter] = []
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
            while total < slotsLimit {
                var best: Int?
                for (index, waiter) in waiting.enumerated() where running[waiter.client, default: 0] < perClient {
                    if let chosen = best, running[waiting[chosen].client, default: 0] <= running[waiter.client, default: 0] { continue }
                    best = index
                }
                guard let best else { break }
                let waiter = waiting.remove(at: best)
                start(waiter.client)
                admitted.append(waiter.continuation)
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

    private func acquire(_ client: String) async throws {
        let id: UInt64? = state.withLock { state in
            if state.waiting.isEmpty, state.mayStart(client) {
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
                    state.waiting.append(Waiter(id: id, client: client, continuation: continuation))
                    return state.admit()
                }
                guard let admitted else { return continuation.resume(throwing: CancellationError()) }
                for waiter in admitted { waiter.resume() }
            }
        } onCancel: {
            let removed = state.withLock { state -> Waiter? in
                guard let index = state.waiting.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiting.remove(at: index)
            }
            removed?.continuation.resume(throwing: CancellationError())
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
}
