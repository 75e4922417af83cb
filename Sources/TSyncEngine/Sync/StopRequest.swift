import Foundation
import Synchronization

/// A request, from outside, that a long push stop at its next safe point: no new request is
/// started, the answers to those in flight are awaited and recorded, and everything not sent stays
/// queued. The command line sets it from its SIGINT/SIGTERM handler; a library user from wherever
/// it decides to stop.
public final class StopRequest: Sendable {
    private let signal = Mutex<Int32?>(nil)

    /// A request not yet made.
    public init() {}

    /// Asks the operation to stop; `signal` is kept for the caller's report (nil when none).
    public func stop(signal: Int32? = nil) {
        self.signal.withLock { if $0 == nil { $0 = signal ?? 0 } }
    }

    /// Whether `stop` was called.
    public var isStopped: Bool { signal.withLock { $0 != nil } }

    /// The signal given to the first `stop`, 0 when none was given, nil while not stopped.
    public var stopSignal: Int32? { signal.withLock { $0 } }
}
