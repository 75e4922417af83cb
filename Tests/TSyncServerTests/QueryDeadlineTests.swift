import Testing

@testable import TSyncServer

/// A read stopped by the query timeout says which took the time: the query, or the wait for a
/// connection of the database that never came.
@Suite struct QueryDeadlineTests {
    @Test func aDeadlineSaysWhetherTheWorkReachedTheDatabase() async throws {
        do {
            _ = try await QueryDeadline.run(seconds: 1, channel: nil) { try await Task.sleep(for: .seconds(30)) }
            Issue.record("the deadline passed")
        } catch let error as QueryTimedOut {
            #expect(error.waitedForDatabase)
            #expect(error.message.contains("the server's database was busy"))
        }
        do {
            _ = try await QueryDeadline.run(seconds: 1, channel: nil) {
                QueryDeadline.wait?.reached()
                try await Task.sleep(for: .seconds(30))
            }
            Issue.record("the deadline passed")
        } catch let error as QueryTimedOut {
            #expect(!error.waitedForDatabase)
            #expect(error.message.contains("took longer than the server allows (1 s)"))
        }
    }
}
