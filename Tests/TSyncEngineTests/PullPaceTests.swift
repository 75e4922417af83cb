import Testing

@testable import TSyncEngine

/// The gap a pull leaves between page requests (`PullPace`): none while round trips stay at
/// their least, however long that is; growing while they stay later than that; shrinking again.
struct PullPaceTests {
    @Test func aLoneSlowLinkNeverWaits() {
        let pace = PullPace()
        for _ in 0..<50 { pace.answered(after: .milliseconds(800)) }
        #expect(pace.gap == .zero, "a long round trip that does not grow is the network, not a queue")
    }

    @Test func oneLateAnswerDoesNotCount() {
        let pace = PullPace()
        for _ in 0..<5 { pace.answered(after: .milliseconds(20)) }
        pace.answered(after: .seconds(3))
        #expect(pace.gap == .zero)
        pace.answered(after: .milliseconds(20))
        #expect(pace.gap == .zero)
    }

    @Test func lateAnswersWidenTheGapUpToTheLongestAndQuickOnesCloseIt() {
        let pace = PullPace()
        pace.answered(after: .milliseconds(20))
        pace.answered(after: .milliseconds(620))
        pace.answered(after: .milliseconds(620))
        #expect(pace.gap == .milliseconds(250), "half of 0.6 s of queue past the 0.1 s accepted")
        pace.answered(after: .milliseconds(620))
        #expect(pace.gap == .milliseconds(500))
        for _ in 0..<40 { pace.answered(after: .seconds(5)) }
        #expect(pace.gap == PullPace.longest)
        pace.answered(after: .milliseconds(20))
        #expect(pace.gap == PullPace.longest / 2, "the last two were 5 s and 20 ms: no queue now")
        // The first 100 ms beside a 20 ms is no queue yet (it halves the gap); the second is.
        pace.answered(after: .milliseconds(100))
        pace.answered(after: .milliseconds(100))
        #expect(pace.gap == PullPace.longest / 2 / 2 * 4 / 5, "80 ms of queue: under the 0.1 s accepted, over half of it")
        for _ in 0..<20 { pace.answered(after: .milliseconds(20)) }
        #expect(pace.gap == .zero)
    }
}

/// Where the server says how long a read waited for its database (`Server-Timing: queue`), the
/// pull takes it as the queue, which round trips alone cannot show to a crowd that started at once.
struct ServerSaidQueueTests {
    @Test func aQueueTheServerSaysWidensTheGapThoughRoundTripsNeverChange() {
        let pace = PullPace()
        for _ in 0..<3 { pace.answered(after: .milliseconds(900), queued: .milliseconds(700)) }
        #expect(pace.gap == .milliseconds(900), "three times half of 0.6 s past the 0.1 s accepted")
        // One quick answer among queued ones does not count, as with round trips.
        pace.answered(after: .milliseconds(900), queued: .zero)
        #expect(pace.gap == .milliseconds(900) / 2)
        for _ in 0..<30 { pace.answered(after: .milliseconds(900), queued: .zero) }
        #expect(pace.gap == .zero, "the server says no queue: the gap closes")
    }

    @Test func roundTripsStillCountWhereTheServerSaysLess() {
        let pace = PullPace()
        pace.answered(after: .milliseconds(20), queued: .zero)
        pace.answered(after: .milliseconds(620), queued: .zero)
        pace.answered(after: .milliseconds(620), queued: .zero)
        #expect(pace.gap == .milliseconds(250), "a queue before the database (a proxy, the event loops) counts too")
    }
}

/// The `Server-Timing` metric the client reads: `queue`'s duration, and nothing it cannot take
/// as a plain wait (a proxy's rewrite, another server's metrics).
struct ServerTimingHeaderTests {
    static func queue(_ values: [String]) -> Duration? {
        ServerTiming.queue(in: values)
    }

    @Test func readsTheQueueMetric() {
        #expect(Self.queue(["queue;dur=12.345"]) == .microseconds(12_345))
        #expect(Self.queue(["db;dur=3, queue;dur=0.5"]) == .microseconds(500), "among others, in one field")
        #expect(Self.queue(["cache;desc=\"hit\"", "queue; desc=\"db\" ; dur=7"]) == .milliseconds(7), "in another field, with spaces")
        #expect(Self.queue(["queue;dur=0"]) == .zero)
    }

    @Test(arguments: [
        [], ["db;dur=5"], ["queue"], ["queue;dur="], ["queue;dur=-1"], ["queue;dur=abc"], ["queue;dur=nan"], ["queue;dur=inf"],
        ["queue;dur=1e300"], ["queue;dur=3600001"], ["queued;dur=5"],
    ])
    func takesNothingItCannotRead(_ values: [String]) {
        #expect(Self.queue(values) == nil, "\(values)")
    }
}
