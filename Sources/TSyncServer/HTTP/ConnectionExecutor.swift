import NIOCore

/// A connection's event loop as the executor its task prefers (docs/DESIGN.md §10): NIO reads a
/// request and writes its answer on the loop, and without this the task that answers it ran on
/// Swift's pool, so each request went from the loop to a pool thread and back, each hop a thread
/// put to sleep and woken (a fifth of the server's CPU in a clone's pages, docs/PERFORMANCE.md).
/// A job enqueued from the loop itself runs in its next turn, without waking anything.
///
/// Work that must not hold a loop leaves it as before: reads not short by their form go to
/// GRDB's readers or PostgreSQL, hashes to their own threads, writes to tasks of their own at high
/// priority (`aheadOfReads`), which do not take this preference.
final class ConnectionExecutor: TaskExecutor {
    let loop: any EventLoop

    init(_ loop: any EventLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
