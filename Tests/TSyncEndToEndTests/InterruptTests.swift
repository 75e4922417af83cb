import Foundation
import Testing
import TSyncModel

/// SIGINT and SIGTERM during a push (issue 9, graceful stop): the push stops at a safe point,
/// awaits the answers in flight, says what it did, and leaves the rest queued, none in flight.
@Suite(.serialized) struct InterruptTests {
    /// One request per operation (`--max-batch 0`, 8 in flight) and small batches (`--max-batch 5`,
    /// one at a time), each held 50 ms by the proxy so the push takes seconds.
    @Test(arguments: [SIGINT, SIGTERM], ["0", "5"])
    func aSignalStopsThePushAndKeepsTheRestQueued(signal: Int32, maxBatch: String) async throws {
        let server = try await SyncServer(options: ["--max-batch", maxBatch])
        let proxy = try LossyProxy(upstream: server.url)
        let store = try TSyncSandbox(remote: proxy.url)
        let total = 400
        try store.ok(["insert", "todo"], stdin: (0..<total).map { #"{"id": "r\#($0)", "n": \#($0)}"# }.joined(separator: "\n"))
        proxy.delay(0.05)

        let push = try TSyncProcess(["push", "--json"], in: store.path)
        for _ in 0..<400 where proxy.forwarded < 6 { try await Task.sleep(for: .milliseconds(25)) }
        #expect(proxy.forwarded >= 6, "the push is under way")
        push.signal(signal)
        let result = push.wait(timeout: 60)
        #expect(result.status == 128 + signal, "\(result)")
        #expect(result.stderr.contains("interrupted: pushed"), "\(result.stderr)")
        #expect(result.stderr.contains("still queued"))
        let summary = try JSONOutput.object(result.stdout)
        #expect(summary["interrupted"] == true)
        let pushed = try #require(JSONOutput.int(summary["pushed"]))
        #expect(pushed > 0 && pushed < total, "stopped part-way: \(pushed)")

        // Exactly what was reported reached the server; the rest is pending, none in flight.
        #expect(try await server.records("todo").count == pushed)
        let status = try JSONOutput.object(try store.ok(["status", "--json"]))
        guard case .array(let operations)? = status["operations"] else {
            Issue.record("status --json has no operations: \(status)")
            return
        }
        #expect(operations.count == total - pushed)
        #expect(operations.allSatisfy { $0.objectValue?["state"] == "pending" })

        proxy.delay(0)
        #expect(try store.run(["push"]).status == 0)
        #expect(try await server.records("todo").count == total)
    }
}
