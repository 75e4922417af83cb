import Foundation
import NIOCore
import Synchronization
import Testing
import TSyncModel

@testable import TSyncServer

/// A table's held reads are woken at most once per `ChangeFeed.pace` (docs/DESIGN.md §8.1): a
/// commit after a quiet pace wakes its readers at once, one within the pace of the last wake
/// waits for the next, and so does a watcher back from its answer to a short page of records.
/// The pace here is long, so that a step a loaded machine delays is still within it; a step that
/// came later than that cannot be judged, and only "never before the pace" is asserted.
@Suite struct LivePaceTests {
    static let pace = Duration.seconds(3)
    static let question = LiveQuestion(scope: .shared, parameters: [])

    /// Whether a step taken now is well within the pace of a wake at `wake`.
    static func within(_ wake: ContinuousClock.Instant) -> Bool { ContinuousClock.now - wake < pace - .seconds(1) }

    /// Parks a read on `t` and returns its task, once it is parked.
    static func park(_ feed: ChangeFeed) async throws -> Task<PageBody?, Never> {
        let before = feed.parked("t")
        let generation = feed.generation("t")
        let task = Task {
            await feed.wait(table: "t", question, .everything, after: generation, until: .now + .seconds(20), channel: nil)
        }
        try await eventually(timeout: .seconds(5), every: .milliseconds(5)) { feed.parked("t") == before + 1 }
        return task
    }

    @Test func aCommitWithinThePaceOfTheLastWakeWaitsForTheNextWake() async throws {
        let feed = ChangeFeed(pace: Self.pace)
        #expect(feed.admit(limit: 10, table: "t"))
        defer { feed.release(table: "t") }

        // After a quiet pace: at once (the wait below is far under the pace).
        let first = try await Self.park(feed)
        let woken = ContinuousClock.now
        feed.committed(["t"])
        _ = await first.value
        #expect(feed.parked("t") == 0)
        #expect(ContinuousClock.now - woken < Self.pace, "a commit after a quiet pace waited for a wake")

        // Within the pace: the waiter stays parked until the next wake, then wakes once.
        let second = try await Self.park(feed)
        let judged = Self.within(woken)
        feed.committed(["t"])
        feed.committed(["t"])
        try await Task.sleep(for: .milliseconds(100))
        if judged { #expect(feed.parked("t") == 1, "a commit within the pace woke its reader at once") }
        _ = await second.value
        #expect(ContinuousClock.now - woken >= Self.pace)
        #expect(feed.parked("t") == 0)
    }

    @Test func aReadBackWithRecordsWithinThePaceIsHeldUntilTheNextWake() async throws {
        let feed = ChangeFeed(pace: Self.pace)
        #expect(feed.admit(limit: 10, table: "t"))
        defer { feed.release(table: "t") }

        // No wake went out yet: the read answers its records now, and that counts as a wake.
        let answeredNow = await feed.paced(table: "t", Self.question, .everything, until: .now + .seconds(20), channel: nil, delivery: nil)
        let answered = ContinuousClock.now
        guard case .now = answeredNow else {
            Issue.record("a read after a quiet pace was held: \(answeredNow)")
            return
        }

        // Back within the pace: held, then woken to ask again at the next wake.
        guard Self.within(answered) else { return }
        let back = Task {
            await feed.paced(table: "t", Self.question, .everything, until: .now + .seconds(20), channel: nil, delivery: nil)
        }
        try await eventually(timeout: .seconds(5), every: .milliseconds(5)) { feed.parked("t") == 1 }
        guard case .askAgain = await back.value else {
            Issue.record("a read back within the pace was not held until the wake")
            return
        }
        #expect(ContinuousClock.now - answered >= Self.pace)
        #expect(feed.parked("t") == 0)
    }

    /// The live route's read: a short page found right after a wake waits for the next and is
    /// then asked again; a full page (a client catching up) and a read that gave no page size
    /// are answered at once.
    @Test func aShortPageWaitsForTheNextWakeAndAFullOneDoesNot() async throws {
        let feed = ChangeFeed(pace: Self.pace)
        let asked = Atomic<Int>(0)
        let page: @Sendable () async throws -> PageBody = {
            asked.add(1, ordering: .relaxed)
            return PageBody(bytes: ByteBuffer(string: "[{}]"), count: 1)
        }
        let wait = LiveWait(feed: feed, limit: 10)
        #expect(feed.admit(limit: 10, table: "t"))
        defer { feed.release(table: "t") }

        // The first read makes the wake; the next within the pace waits for the one after.
        _ = try await wait.page(table: "t", Self.question, .everything, seconds: 20, channel: nil, top: 10, page)
        let first = ContinuousClock.now
        #expect(asked.load(ordering: .relaxed) == 1)
        guard Self.within(first) else { return }
        let (held, granted) = try await wait.page(table: "t", Self.question, .everything, seconds: 20, channel: nil, top: 10, page)
        #expect(ContinuousClock.now - first >= Self.pace)
        #expect(held.count == 1 && granted == 20)
        // Asked again after the wake, at the same generation: the answer kept is shared.
        #expect(asked.load(ordering: .relaxed) == 1)

        // Full pages, and reads without a page size: at once.
        for top in [1, nil] {
            let start = ContinuousClock.now
            _ = try await wait.page(table: "t", Self.question, .everything, seconds: 20, channel: nil, top: top, page)
            #expect(ContinuousClock.now - start < Self.pace)
        }
    }

    @Test func noPaceWakesEveryCommitsReadersAtOnce() async throws {
        let feed = ChangeFeed(pace: .zero)
        #expect(feed.admit(limit: 10, table: "t"))
        defer { feed.release(table: "t") }
        for _ in 0..<3 {
            let read = try await Self.park(feed)
            feed.committed(["t"])
            _ = await read.value
        }
        let answered = await feed.paced(table: "t", Self.question, .everything, until: .now + .seconds(20), channel: nil, delivery: nil)
        guard case .now = answered else {
            Issue.record("held without a pace: \(answered)")
            return
        }
    }
}
