import Dispatch
import NIOCore
import Synchronization

/// A connection's event loop as the executor its task prefers (docs/DESIGN.md §10): NIO reads a
/// request and writes its answer on the loop, and without this the task that answers it ran on
/// Swift's pool, so each request went from the loop to a pool thread and back, each hop a thread
/// put to sleep and woken (a seventh of the server's CPU in a clone's pages, docs/PERFORMANCE.md).
/// A job enqueued from the loop itself runs in its next turn, without waking anything.
///
/// A connection that holds a read (the live route) leaves its loop for good (`leaveLoop`): a
/// commit resumes its watchers together, and on the loops, which run their jobs in turn, a
/// write's own request and answer waited behind theirs (1,000 watchers held the writes to 150 a
/// second). On the pool, as before, writes run ahead of them (`aheadOfReads`). Other work that
/// must not hold a loop leaves it too: reads not short by their form go to GRDB's readers or
/// PostgreSQL, hashes to threads of their own, writes to tasks of their own at high priority,
/// which do not take this preference.
final class ConnectionExecutor: TaskExecutor {
    let loop: any EventLoop
    private let onLoop = Atomic(true)

    /// The executor of the connection whose request the current task answers.
    @TaskLocal static var current: ConnectionExecutor?

    init(_ loop: any EventLoop) { self.loop = loop }

    /// From now on the connection's jobs run on Swift's threads for their priority, as they would
    /// without a preference; the job running now finishes where it is.
    func leaveLoop() { onLoop.store(false, ordering: .relaxed) }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        guard onLoop.load(ordering: .relaxed) else {
            // Run as this executor's, so that the task does not hop back to it at each call.
            return DispatchQueue.global().async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
        }
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
