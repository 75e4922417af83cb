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

    /// With one read at a time for alice, her quick read waits behind her slow one: its answer
    /// says about that wait, and a read that waited for nothing says next to none. A pull's page,
    /// which the server reads at once when her share is free (`ServerStorage.quickQuery`), waits
    /// in her share like any other. One case at a time: one's slow read would hold up the other's.
    ///
    /// The query timeout is far above what the slow read takes: the read behind it waits within
    /// its own deadline, and with the 6 s of the other share tests a loaded machine's slow read
    /// ran into its deadline and left the one behind too little of its own (503).
    @Test(.serialized, arguments: ["/tables/t?$top=1", "/tables/t?$orderby=updatedAt,id&$top=1&__includeDeleted=true"])
    func aPageSaysHowLongItsReadWaitedForTheDatabase(_ quick: String) async throws {
        var configuration = ServerConfiguration()
        configuration.queryTimeoutSeconds = Self.queryTimeoutSeconds
        configuration.readsPerClient = 1
        try await withTestServer(configuration, accounts: [Self.alice], queryTimeoutSeconds: Self.queryTimeoutSeconds) { http in
            let alice = try await http.login(Self.alice.0, Self.alice.1)
            try await DatabaseShareTests.slowRecords(http, token: alice)

            let alone = try await http.get(quick, token: alice)
            #expect(alone.status == 200)
            let aloneWait = try #require(Self.queued(alone), "a page says its queue: \(alone.headers)")
            #expect(aloneWait >= 0 && aloneWait < 500, "nothing held the read: \(aloneWait) ms")

            let slowStarted = ContinuousClock.now
            let slow = Task { try await http.get("/tables/t?$filter=" + DatabaseShareTests.slowFilter, token: alice) }
            // The slow read has her one slot.
            let shares = try #require(Self.shares(http.storage), "\(type(of: http.storage))")
            #expect(try await eventually(every: .milliseconds(5)) { shares.running("account alice") == 1 }, "the slow read runs")
            let queuedStarted = ContinuousClock.now
            let behind = try await http.get(quick, token: alice)
            let slowReply = try await slow.value
            let slowTook = ContinuousClock.now - slowStarted
            #expect(slowReply.status == 200, "the slow read ran to its end: \(slowReply.status) \(slowReply.text.prefix(200))")
            #expect(behind.status == 200, "\(behind.status) \(behind.text.prefix(200))")
            let behindWait = try #require(Self.queued(behind), "\(behind.headers)")
            let heldFor = ContinuousClock.now - queuedStarted
            #expect(slowTook > .seconds(1), "the slow read was slow: \(slowTook)")
            // It waited for the slow read's end: what the slow read took after it was sent.
            let expected = Self.milliseconds(slowTook) - Self.milliseconds(queuedStarted - slowStarted)
            #expect(
                behindWait >= 300 && behindWait >= expected / 2,
                "the read behind a slow one says it waited: \(behindWait) of \(expected) ms")
            #expect(behindWait <= Self.milliseconds(heldFor) + 50, "no more than it took: \(behindWait) ms of \(heldFor)")
        }
    }

    /// Far above the slow read's few seconds, even on a loaded machine.
    static let queryTimeoutSeconds = 120

    /// The storage's read shares, where a test sees a read holding its slot.
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
