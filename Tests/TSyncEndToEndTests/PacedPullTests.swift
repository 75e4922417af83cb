import Foundation
import Testing
import TSyncModel

/// A pull waits between page requests while the server's answers come later than they did
/// (`PullPace`, docs/DESIGN.md §8): a crowd of clones then queues at home instead of at the
/// server. A proxy in front of a real `tsync serve` holds some answers 0.3 s, as a queue at the
/// server would, and sees when each request comes and its answer goes.
@Suite(.serialized) struct PacedPullTests {
    static let total = 400
    static let pageSize = 10

    /// Six quick answers, eight held 0.3 s, then quick again: the pull asks one page at a time
    /// throughout, leaves a growing gap between an answer and its next request while the answers
    /// are late, and closes it once they are quick again; every record arrives, and the
    /// checkpoint is at the end.
    @Test(arguments: ServerBackend.available) func aPullWaitsWhileAnswersAreLateAndNoLonger(_ backend: ServerBackend) async throws {
        let directory = try TemporaryDirectory()
        try await backend.withServer(in: directory) { _, url, _ in
            let proxy = try LossyProxy(upstream: url)
            let reader = try await Self.filled(url, reading: proxy)
            let slow = 6..<14
            proxy.timeReads("/tables/todo", delays: (0..<slow.upperBound).map { slow.contains($0) ? 0.3 : 0 })
            let pull = try JSONOutput.object(
                try await reader.ok(["pull", "todo", "--query-id", "all", "--page-size", "\(Self.pageSize)", "--json"]))
            #expect(JSONOutput.int(pull["received"]) == Self.total)

            let reads = proxy.reads
            #expect(reads.count == Self.total / Self.pageSize + 1, "one request a page, and the empty one that ends the pull")
            // The next request may leave on an answer's headers (`X-TSync-Page-End`) while the
            // proxy still counts that answer as held: one page request, and at most the next.
            #expect(reads.map(\.inFlight).max() ?? 0 <= 2, "one page request at a time: \(reads.map(\.inFlight))")
            let gaps = Self.gaps(reads)
            // The first late answer alone does not count; from the second on, each adds half of
            // its lateness past 0.1 s: about 0.1, 0.2, ... 0.65 s by the last.
            let widest = gaps[slow].max() ?? 0
            #expect(widest >= 0.3, "the pull waits while answers are late: \(Self.shown(gaps))")
            // Half of the gap a page once answers are quick: nothing by the end.
            let last = gaps.suffix(5).sorted()[2]
            #expect(last < 0.1 && last < widest / 3, "the gap closes once answers are quick: \(Self.shown(gaps))")

            #expect(try await reader.ok(["query", "todo"]).split(separator: "\n").count == Self.total)
            let again = try JSONOutput.object(try await reader.ok(["pull", "todo", "--query-id", "all", "--json"]))
            #expect(JSONOutput.int(again["received"]) == 0, "the checkpoint is past the last record")
        }
    }

    /// A pull killed while it waits between late answers keeps its whole pages and checkpoint,
    /// and the same pull goes on from there.
    @Test(arguments: ServerBackend.available) func aPullKilledWhileItWaitsResumes(_ backend: ServerBackend) async throws {
        let directory = try TemporaryDirectory()
        try await backend.withServer(in: directory) { _, url, _ in
            let proxy = try LossyProxy(upstream: url)
            let reader = try await Self.filled(url, reading: proxy)
            proxy.timeReads("/tables/todo", delays: (0..<100).map { $0 < 4 ? 0 : 0.3 })
            let pull = try TSyncProcess(
                ["pull", "todo", "--query-id", "all", "--page-size", "\(Self.pageSize)"], in: reader.path)
            try await eventually(timeout: .seconds(30)) { proxy.reads.count >= 10 }
            #expect(pull.isRunning, "the pull is still running when it is killed")
            pull.signal(SIGKILL)
            _ = await pull.wait(timeout: 30)
            #expect(Self.gaps(proxy.reads).max() ?? 0 >= 0.15, "it was waiting between requests: \(Self.shown(Self.gaps(proxy.reads)))")

            let kept = try await reader.ok(["query", "todo"]).split(separator: "\n").count
            #expect(kept > 0 && kept < Self.total && kept % Self.pageSize == 0, "whole pages only: \(kept)")
            proxy.timeReads("/tables/todo", delays: [])
            let resumed = try JSONOutput.object(try await reader.ok(["pull", "todo", "--query-id", "all", "--json"]))
            #expect(JSONOutput.int(resumed["received"]) == Self.total - kept, "only the rest is fetched")
            #expect(try await reader.ok(["query", "todo"]).split(separator: "\n").count == Self.total)
        }
    }

    /// `total` records on the server at `url`, and a new store that reads through `proxy`.
    static func filled(_ url: String, reading proxy: LossyProxy) async throws -> TSyncSandbox {
        let writer = try await TSyncSandbox(remote: url)
        try await writer.ok(["insert", "todo", "-q"], stdin: (0..<total).map { #"{"id": "r\#($0)"}"# }.joined(separator: "\n"))
        try await writer.ok(["push"])
        return try await TSyncSandbox(remote: proxy.url)
    }

    /// The seconds between each answer and the next request.
    static func gaps(_ reads: [LossyProxy.TimedRead]) -> [Double] {
        zip(reads, reads.dropFirst()).map { read, next in
            guard let answered = read.answered else { return 0 }
            let gap = next.arrived - answered
            return Double(gap.components.seconds) + Double(gap.components.attoseconds) / 1e18
        }
    }

    static func shown(_ gaps: [Double]) -> String { gaps.map { String(format: "%.3f", $0) }.joined(separator: " ") }
}
