import Synchronization

/// `GET /ready`'s look at the database, beside the requests' connections and never queued behind
/// them: under load a load balancer must still hear within its check interval, and an instance
/// that answers late is taken out although it is healthy. One look runs at a time, and checks that
/// come while it runs, or within `reuse` after it started, share its outcome: an anonymous client
/// asking for `/ready` in a loop costs the database one look a second.
final class ReadinessCheck: Sendable {
    let reuse: Duration
    private let last = Mutex<(look: Task<Void, any Error>, started: ContinuousClock.Instant)?>(nil)

    init(reuse: Duration = .seconds(1)) {
        self.reuse = reuse
    }

    /// `look`'s outcome, or a recent one's.
    func check(_ look: @escaping @Sendable () async throws -> Void) async throws {
        let now = ContinuousClock.now
        let task = last.withLock { last in
            if let last, now - last.started < reuse { return last.look }
            let task = Task { try await look() }
            last = (task, now)
            return task
        }
        try await task.value
    }
}

/// The database answers, but a write would fail: `GET /ready` answers 503 with `reason`, which
/// says nothing of the database's address, and the log gets `detail`.
public struct DatabaseTakesNoWrites: Error, CustomStringConvertible {
    /// For the (anonymous) client: "a read-only replica", "the disk is full".
    public var reason: String
    /// For the log: the database's own words and what to do.
    public var detail: String

    public var description: String { detail }
}
