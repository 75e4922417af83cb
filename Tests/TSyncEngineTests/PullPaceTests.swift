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
