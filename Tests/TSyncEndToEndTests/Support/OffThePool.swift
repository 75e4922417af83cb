import Foundation

/// Waiting without holding one of Swift concurrency's cooperative threads.
///
/// The test process has as many cooperative threads as the machine has cores (2 on CI). A test
/// that blocks one of them (a `usleep` loop, `waitUntilExit`, a blocking `recv`) while a child
/// process or a socket takes its time starves every other test in the process, above all the
/// in-process Hummingbird servers of TSyncServerTests, whose clients then hit their deadlines.
/// So every wait of the test support is `async`: blocking calls run on a thread of their own
/// (`run`), and a child process's end resumes a continuation (`ChildProcess`).
enum OffThePool {
    /// Runs `work`, a blocking call, on a new thread and awaits its result.
    static func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: work()) }.start()
        }
    }
}
