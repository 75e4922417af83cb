import Synchronization
import Testing

@testable import TSyncServer

/// Writes run ahead of the reads that follow them (docs/DESIGN.md §8.1, `aheadOfReads`): a
/// thousand watchers asking again at once kept a writer to a few hundred writes a second.
@Suite struct WritesAheadTests {
    @Test func everyRouteThatWritesRecordsAndNoOtherRunsAhead() {
        var configuration = ServerConfiguration()
        configuration.exposesMetrics = true
        let ahead = ServedRoutes.all(configuration).filter(\.writesRecords).map { "\($0.method.rawValue) \($0.openAPIPath)" }
        let writes = [
            "POST /tables/{table}", "PATCH /tables/{table}/{id}", "DELETE /tables/{table}/{id}",
            "POST /tables/{table}/{id}", "POST /tables/$batch",
        ]
        #expect(ahead.sorted() == writes.sorted())
        #expect(!ServedRoutes.login.writesRecords, "a login's password hash does not go ahead of the reads")
    }

    @Test func theWorkRunsAtHighPriorityWhateverTheRequestsPriority() async throws {
        for asked in [TaskPriority.low, .medium, .high] {
            let ran = try await Task(priority: asked) { try await aheadOfReads { Task.currentPriority } }.value
            #expect(ran == .high, "asked from \(asked)")
        }
    }

    /// A request that ends (its client left, the server stops) ends its write's task too.
    @Test func cancellingTheRequestCancelsItsWork() async throws {
        let started = Mutex(false)
        let request = Task {
            try await aheadOfReads { () async throws -> Int in
                started.withLock { $0 = true }
                try await Task.sleep(for: .seconds(60))
                return 1
            }
        }
        try await eventually(timeout: .seconds(10)) { started.withLock { $0 } }
        request.cancel()
        let clock = ContinuousClock()
        let began = clock.now
        await #expect(throws: CancellationError.self) { try await request.value }
        #expect(clock.now - began < .seconds(10), "cancelled, not slept out")
    }
}
