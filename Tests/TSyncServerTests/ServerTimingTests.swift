import Foundation
import HTTPTypes
import Testing
import TSyncModel

@testable import TSyncServer

/// A page's answer says how long its read waited for the database (`Server-Timing: queue`), the
/// queue a crowd of pulls paces itself by (docs/DESIGN.md §8); a held read's answer, which may be
/// shared, says nothing.
@Suite(.serialized) struct ServerTimingTests {
    static let alice = ("alice", "correct horse battery staple")
    static let serverTiming = HTTPField.Name("Server-Timing")!

    /// The milliseconds of `queue;dur=…`, nil when the header or the metric is not there.
    static func queued(_ reply: Reply) -> Double? {
        guard let value = reply.headers[serverTiming], value.hasPrefix("queue;dur=") else { return nil }
        return Double(value.dropFirst("queue;dur=".count))
    }

    static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }

    /// With one read at a time for alice, her quick read waits while her one share is taken: its
    /// answer says about that wait, and a read that waited for nothing says next to none. A
    /// pull's page, which the server reads at once when her share is free
    /// (`ServerStorage.quickQuery`), waits in her share like any other.
    ///
    /// The test takes her share itself and gives it back once her read is seen waiting for it:
    /// the read's wait is then at least the time between the two, on any machine. A slow filter
    /// held it before, and a loaded machine stretched that past its deadlines. The pull's page is
    /// not full (`$top=2`, one record): a full one has its next page read ahead in her share
    /// (PostgreSQL), which the test could take for its own or for the read it waits for.
    @Test(arguments: ["/tables/t?$top=1", "/tables/t?$orderby=updatedAt,id&$top=2&__includeDeleted=true"])
    func aPageSaysHowLongItsReadWaitedForTheDatabase(_ quick: String) async throws {
        var configuration = ServerConfiguration()
        configuration.readsPerClient = 1
        try await withTestServer(configuration, accounts: [Self.alice]) { http in
            let alice = try await http.login(Self.alice.0, Self.alice.1)
            #expect(try await http.post("/tables/t", ["id": "a"], token: alice).status == 201)

            let asked = ContinuousClock.now
            let alone = try await http.get(quick, token: alice)
            let roundTrip = Self.milliseconds(ContinuousClock.now - asked)
            #expect(alone.status == 200)
            let aloneWait = try #require(Self.queued(alone), "a page says its queue: \(alone.headers)")
            // Within the request's own time, however long a loaded machine made that.
            #expect(aloneWait >= 0 && aloneWait <= roundTrip, "nothing held the read: \(aloneWait) ms of \(roundTrip) ms")

            let shares = try #require(Self.shares(http.storage), "\(type(of: http.storage))")
            let (release, released) = AsyncStream<Void>.makeStream()
            let holder = Task {
                try await ReadShares.$client.withValue("account alice") { try await shares.run { for await _ in release {} } }
            }
            #expect(try await eventually { shares.running("account alice") == 1 }, "the test holds her share")
            let sent = ContinuousClock.now
            let behind = Task { try await http.get(quick, token: alice) }
            #expect(try await eventually { shares.waiting == 1 }, "her read waits for her share")
            let seenWaiting = ContinuousClock.now
            // Time passing is the case under test: the wait the answer is to report.
            try await Task.sleep(for: .milliseconds(300))
            // Before the share is given back: the read may reach the database before this task
            // looks at the clock again.
            let freed = ContinuousClock.now
            released.finish()
            try await holder.value
            let reply = try await behind.value
            let took = ContinuousClock.now - sent
            #expect(reply.status == 200, "\(reply.status) \(reply.text.prefix(200))")
            #expect(reply.ids == ["a"], "\(reply.text)")
            let behindWait = try #require(Self.queued(reply), "\(reply.headers)")
            // It waited from before it was seen waiting until after the share was given back.
            let least = Self.milliseconds(freed - seenWaiting)
            #expect(
                behindWait >= least,
                "\(http.backend): the read behind the taken share says it waited: \(behindWait) of at least \(least) ms")
            #expect(behindWait <= Self.milliseconds(took), "\(http.backend): no more than it took: \(behindWait) ms of \(took)")
        }
    }

    /// The storage's read shares, where a test takes a share and sees a read wait for it.
    static func shares(_ storage: any ServerStorage) -> ReadShares? {
        (storage as? SQLiteStorage)?.shares ?? (storage as? PostgresStorage)?.database.shares
    }

    @Test func aHeldReadsAnswerSaysNoQueue() async throws {
        try await withTestServer { http in
            let held = Task { try await http.get(LiveRouteTests.empty, headers: ["Prefer": "wait=20"]) }
            try await LiveRouteTests.waitUntilHeld(http, 1)
            #expect(try await http.post("/tables/todo", ["id": "a", "n": 1]).status == 201)
            let reply = try await held.value
            #expect(reply.status == 200)
            #expect(reply.ids == ["a"], "the held read was woken by the write: \(reply.text)")
            #expect(reply.headers[Self.serverTiming] == nil, "a held read's answer may be shared: \(reply.headers)")
            // The same read not held says its queue.
            let page = try await http.get(LiveRouteTests.empty)
            #expect(page.ids == ["a"])
            #expect(Self.queued(page) != nil, "\(page.headers)")
        }
    }
}
