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

    /// `look`'s outcome, or a recent one's. A check that is cancelled (its deadline passed) ends
    /// at once, while the look it shared goes on for the next check: awaiting a task's value
    /// waits for the task, whatever becomes of the waiter, so the answer's deadline would
    /// otherwise be the database's.
    func check(_ look: @escaping @Sendable () async throws -> Void) async throws {
        let now = ContinuousClock.now
        let task = last.withLock { last in
            if let last, now - last.started < reuse { return last.look }
            let task = Task { try await look() }
            last = (task, now)
            return task
        }
        try await Self.outcome(of: task)
    }

    /// `task`'s outcome, or `CancellationError` as soon as the caller is cancelled.
    static func outcome(of task: Task<Void, any Error>) async throws {
        let waiter = Waiter()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                waiter.wait(continuation)
                Task { waiter.end(await task.result) }
            }
        } onCancel: {
            waiter.end(.failure(CancellationError()))
        }
    }

    /// One continuation, resumed once by whichever comes first: the look's end or the caller's
    /// cancellation (which may come before the continuation exists).
    private final class Waiter: Sendable {
        private enum State {
            case waiting
            case parked(CheckedContinuation<Void, any Error>)
            case ended(Result<Void, any Error>)
            case resumed
        }
        private let state = Mutex(State.waiting)

        func wait(_ continuation: CheckedContinuation<Void, any Error>) {
            let ended: Result<Void, any Error>? = state.withLock { state in
                switch state {
                case .waiting:
                    state = .parked(continuation)
                    return nil
                case .ended(let result):
                    state = .resumed
                    return result
                case .parked, .resumed:
                    return nil
                }
            }
            if let ended { continuation.resume(with: ended) }
        }

        func end(_ result: Result<Void, any Error>) {
            let parked: CheckedContinuation<Void, any Error>? = state.withLock { state in
                switch state {
                case .waiting:
                    state = .ended(result)
                    return nil
                case .parked(let continuation):
                    state = .resumed
                    return continuation
                case .ended, .resumed:
                    return nil
                }
            }
            parked?.resume(with: result)
        }
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
