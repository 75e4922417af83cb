import Foundation
import Testing
import TSyncModel

/// SIGINT and SIGTERM during a push (graceful stop): the push stops at a safe point,
/// awaits the answers in flight, says what it did, and leaves the rest queued, none in flight.
@Suite(.serialized) struct InterruptTests {
    /// One request per operation (`--max-batch 0`, 8 in flight) and small batches (`--max-batch 5`,
    /// one at a time), each held 50 ms by the proxy so the push takes seconds.
    @Test(arguments: [SIGINT, SIGTERM], ["0", "5"])
    func aSignalStopsThePushAndKeepsTheRestQueued(signal: Int32, maxBatch: String) async throws {
        let server = try await ServeFixture(options: ["--max-batch", maxBatch])
        let proxy = try LossyProxy(upstream: server.url)
        let store = try await TSyncSandbox(remote: proxy.url)
        let total = 400
        try await store.ok(["insert", "todo"], stdin: (0..<total).map { #"{"id": "r\#($0)", "n": \#($0)}"# }.joined(separator: "\n"))
        proxy.delay(0.1)  // 400 operations, 8 at a time: 5 s at least

        let push = try TSyncProcess(["push", "--json"], in: store.path)
        // The wait wakes in time now that no test support blocks a cooperative thread (it once
        // woke seconds late, after the push had finished: see `OffThePool`).
        try await eventually(timeout: .seconds(10)) { proxy.forwarded >= 6 }
        #expect(push.isRunning, "the push is still running when it is signalled")
        #expect(proxy.forwarded >= 6, "the push is under way")
        let signals = push.signalDispositions
        push.signal(signal)
        let result = await push.wait(timeout: 60)
        #expect(result.status == 128 + signal, "\(result) \(signals)")
        #expect(result.stderr.contains("interrupted: pushed"), "\(result.stderr)")
        #expect(result.stderr.contains("still queued"))
        let summary = try JSONOutput.object(result.stdout)
        #expect(summary["interrupted"] == true)
        let pushed = try #require(JSONOutput.int(summary["pushed"]))
        #expect(pushed > 0 && pushed < total, "stopped part-way: \(pushed)")

        // Exactly what was reported reached the server; the rest is pending, none in flight.
        #expect(try await server.records("todo").count == pushed)
        let status = try JSONOutput.object(try await store.ok(["status", "--json"]))
        guard case .array(let operations)? = status["operations"] else {
            Issue.record("status --json has no operations: \(status)")
            return
        }
        #expect(operations.count == total - pushed)
        #expect(operations.allSatisfy { $0.objectValue?["state"] == "pending" })

        proxy.delay(0)
        #expect(try await store.run(["push"]).status == 0)
        #expect(try await server.records("todo").count == total)
    }
}

/// SIGINT during `pull --query-id`: it stops after a whole page, keeps what it wrote with its
/// checkpoint, and the same pull goes on from there.
@Suite(.serialized) struct PullInterruptTests {
    /// A server that stops answering while the push waits for the answer in flight: the push
    /// still ends with the signal's code (after the request's deadline), saying what happened,
    /// and the operation stays in flight ("sent, not yet confirmed"), to be sent again.
    @Test func aSignalWhileTheServerHangsStillExitsWithItsCode() async throws {
        let hung = try ScriptedServer { method, _ in
            if method == "POST" { Thread.sleep(forTimeInterval: 20) }  // the hung server under test
            return .json(404, #"{"error": "no batch route"}"#)
        }
        let store = try await TSyncSandbox(remote: hung.url)
        try await store.ok(["insert", "todo", #"{"id": "a"}"#])
        let push = try TSyncProcess(["push"], in: store.path, environment: ["TSYNC_TIMEOUT": "2"])
        try await eventually(timeout: .seconds(10)) { hung.requests.contains { $0.hasPrefix("POST") } }
        #expect(push.isRunning)
        push.signal(SIGINT)
        let result = await push.wait(timeout: 30)
        #expect(result.status == 130, "\(result)")
        #expect(result.stderr.contains("interrupted: "), "\(result.stderr)")
        #expect(try await store.ok(["status"]).contains("not yet confirmed"), "kept in flight, to be sent again")
    }

    @Test func anInterruptedPullResumesFromItsCheckpoint() async throws {
        let server = try await ServeFixture()
        let writer = try await TSyncSandbox(remote: server.url)
        let total = 300
        try await writer.ok(["insert", "todo"], stdin: (0..<total).map { #"{"id": "r\#($0)"}"# }.joined(separator: "\n"))
        try await writer.ok(["push"])

        let proxy = try LossyProxy(upstream: server.url)
        let reader = try await TSyncSandbox(remote: proxy.url)
        proxy.delay(0.1)  // about ten pages a second: 3 s at least
        let pull = try TSyncProcess(["pull", "todo", "--query-id", "all", "--page-size", "10", "--json"], in: reader.path)
        try await eventually(timeout: .seconds(10)) { proxy.forwarded >= 4 }
        #expect(pull.isRunning, "the pull is still running when it is signalled")
        pull.signal(SIGINT)
        let result = await pull.wait(timeout: 60)
        #expect(result.status == 130, "\(result)")
        #expect(result.stderr.contains("interrupted: pulled todo"), "\(result.stderr)")
        let summary = try JSONOutput.object(result.stdout)
        #expect(summary["interrupted"] == true)
        let received = try #require(JSONOutput.int(summary["received"]))
        #expect(received > 0 && received < total && received % 10 == 0, "whole pages only: \(received)")
        #expect(try await reader.ok(["query", "todo"]).split(separator: "\n").count == received)
        let queries = try JSONOutput.array(try await reader.ok(["queries", "--json"]))
        #expect(queries.first?.objectValue?["checkpoint"] != .null, "the checkpoint of the last page is kept")
        // status says which query stopped part way, and how to go on.
        let status = try await reader.ok(["status"])
        #expect(status.contains("the pull of todo (query all) stopped part way at "), "\(status)")
        #expect(status.contains("`tsync pull todo --query-id all` goes on from where it stopped"), "\(status)")
        #expect(queries.first?.objectValue?["stoppedAt"]?.stringValue != nil, "\(queries)")

        proxy.delay(0)
        let resumed = try JSONOutput.object(try await reader.ok(["pull", "todo", "--query-id", "all", "--json"]))
        #expect(JSONOutput.int(resumed["received"]) == total - received, "only the rest is fetched")
        #expect(try await reader.ok(["query", "todo"]).split(separator: "\n").count == total)
        // Pulled to the end: nothing stopped any more.
        #expect(!(try await reader.ok(["status"])).contains("stopped part way"))
        let after = try JSONOutput.array(try await reader.ok(["queries", "--json"]))
        #expect(after.first?.objectValue?["stoppedAt"] == .null, "\(after)")
    }
}
