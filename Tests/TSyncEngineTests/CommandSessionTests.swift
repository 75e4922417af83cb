import Testing
import TSyncModel

@testable import TSyncEngine

/// The engine's command session: a program that drives the engine gets the `tsync log` entry and
/// the verdicts the command line gets (docs/DESIGN.md §5, §9.3).
@Suite struct CommandSessionTests {
    @Test func aProgramsSessionWritesItsLogEntry() throws {
        let temporary = try TemporaryStore()
        let session = CommandSession(store: temporary.store, journal: .init(command: "import", arguments: ["a.json"]))
        #expect(session.isJournaled && session.journalProblem == nil)
        let unfinished = try #require(try temporary.store.journal(limit: 1).first)
        #expect(unfinished.command == "import" && unfinished.finishedAt == nil, "begun when the session opens: \(unfinished)")

        session.record(changed: "todo", ids: ["a", "b"])
        try session.finish(exitCode: 0)
        let entry = try #require(try temporary.store.journal(limit: 1).first)
        #expect(entry.arguments == ["a.json"] && entry.exitCode == 0 && entry.finishedAt != nil, "\(entry)")
        #expect(entry.counts.changed == 2 && entry.items.items == ["todo/a", "todo/b"], "\(entry)")
        #expect(!session.isJournaled, "finished once")
    }

    @Test func aDroppedEntryLeavesNothingAndNoLogWritesNone() throws {
        let temporary = try TemporaryStore()
        let before = try temporary.store.journal(limit: 10).count
        let refused = CommandSession(store: temporary.store, journal: .init(command: "push", arguments: []))
        try refused.finish(exitCode: 64, dropped: true)
        let unlogged = CommandSession(store: temporary.store, journal: nil)
        #expect(!unlogged.isJournaled)
        try unlogged.finish(exitCode: 0)
        #expect(try temporary.store.journal(limit: 10).count == before)
    }

    @Test func theVerdictIsDecidedOnce() async throws {
        let temporary = try TemporaryStore()
        let session = CommandSession(store: temporary.store, journal: nil)
        let clean = try await session.run({ () throws(TSyncError) in 1 }, verdict: { _ throws(TSyncError) in (false, 0) })
        #expect(clean.verdict == .succeeded && clean.result == 1)
        let failed = try await session.run({ () throws(TSyncError) in 1 }, verdict: { _ throws(TSyncError) in (false, 3) })
        #expect(failed.verdict == .operationsFailed(3))
        // Cut short without a stop request: only what was left failed counts.
        let short = try await session.run({ () throws(TSyncError) in 1 }, verdict: { _ throws(TSyncError) in (true, 0) })
        #expect(short.verdict == .succeeded)
        // An error without a stop request is the caller's to handle.
        await #expect(throws: TSyncError.failure("down")) {
            _ = try await session.run(
                { () throws(TSyncError) -> Int in throw .failure("down") }, verdict: { _ throws(TSyncError) in (false, 0) })
        }

        session.stopRequest.stop(signal: 15)
        let stopped = try await session.run({ () throws(TSyncError) in 1 }, verdict: { _ throws(TSyncError) in (true, 5) })
        #expect(stopped.verdict == .interrupted(signal: 15, error: nil) && stopped.result == 1)
        let stoppedByError = try await session.run(
            { () throws(TSyncError) -> Int in throw TSyncError(.unreachable, "no answer") }, verdict: { _ throws(TSyncError) in (false, 0) }
        )
        #expect(stoppedByError.verdict == .interrupted(signal: 15, error: TSyncError(.unreachable, "no answer")))
        #expect(stoppedByError.result == nil)
    }

    @Test func aPushWithoutARemoteSaysHowToSetOne() async throws {
        let temporary = try TemporaryStore()
        try temporary.store.insert("todo", ["id": "a"])
        let session = CommandSession(store: temporary.store, journal: .init(command: "push", arguments: []))
        await #expect(throws: TSyncError(.failure, "no remote is set for this store", remedy: .setRemote)) {
            _ = try await session.push(try session.syncSession(), tables: nil, atomic: false, policies: ConflictPolicies())
        }
    }
}
