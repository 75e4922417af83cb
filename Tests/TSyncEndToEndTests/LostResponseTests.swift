import Foundation
import Testing
import TSyncModel

/// An operation whose request reached the server but whose answer was lost (a proxy in front of
/// the real `tsync serve` drops the connection after the server applied the write), followed by
/// a local edit of the same record. The next push must finish cleanly: the lost operation was the
/// user's own write, never a conflict (docs/DESIGN.md §2.4).
///
/// Each runs twice: against `tsync serve` with its batch route (the answer to a whole batch is
/// lost) and with `--max-batch 0` (one request per operation, as with any v2 server).
@Suite(.serialized) struct LostResponseTests {
    private func setUp(_ batched: Bool) async throws -> (server: ServeFixture, proxy: LossyProxy, store: TSyncSandbox) {
        let server = try await ServeFixture(options: batched ? [] : ["--max-batch", "0"])
        let proxy = try LossyProxy(upstream: server.url)
        let store = try await TSyncSandbox(remote: proxy.url)
        return (server, proxy, store)
    }

    /// Loses the answer to the next write: the batch request, or the single route's.
    private func loseNextAnswer(_ proxy: LossyProxy, batched: Bool, _ method: String, _ path: String) {
        if batched { proxy.drop("POST", "/tables/$batch") } else { proxy.drop(method, path) }
    }

    /// A lost answer, another writer's change of another field, then a local change of the same
    /// field and a merge: the server holding exactly what the lost write sent is that write having
    /// arrived, so the merge keeps both writers' fields instead of refusing (found by the network
    /// campaign, scripts/netlab/lost-answer.py).
    @Test(arguments: [true, false])
    func aMergeAfterALostAnswerCountsOurArrivedWriteAsOurs(batched: Bool) async throws {
        let (server, proxy, a) = try await setUp(batched)
        let b = try await TSyncSandbox(remote: server.url)
        try await a.ok(["insert", "todo", #"{"id": "x", "a": 0, "b": 0}"#])
        try await a.ok(["push"])
        try await b.ok(["pull", "todo"])
        try await a.ok(["update", "todo", "x", "--set", "a=1"])
        loseNextAnswer(proxy, batched: batched, "PATCH", "/tables/todo/x")
        let lost = try await a.run(["push"])
        #expect(lost.status == 3, "\(lost)")
        try await b.ok(["update", "todo", "x", "--set", "b=1"])
        try await b.ok(["push", "--on-conflict", "merge"])
        try await a.ok(["update", "todo", "x", "--set", "a=2"])
        let merged = try await a.run(["push", "--on-conflict", "merge", "--json"])
        #expect(merged.status == 0, "\(merged)")
        let record = try await server.record("todo", "x")
        #expect(record?["a"] == 2 && record?["b"] == 1, "\(String(describing: record))")
        #expect(try JSONOutput.array(try await a.ok(["conflicts", "--json"])).isEmpty)
    }

    @Test(arguments: [true, false])
    func lostInsertAnswerThenLocalEditPushesWithoutConflict(batched: Bool) async throws {
        let (server, proxy, store) = try await setUp(batched)
        try await store.ok(["insert", "todo", #"{"id": "milk", "text": "buy milk"}"#])
        loseNextAnswer(proxy, batched: batched, "POST", "/tables/todo")
        let lost = try await store.run(["push"])
        #expect(lost.status == 3, "\(lost)")
        #expect(proxy.droppedCount == 1)
        #expect(try await server.record("todo", "milk")?["text"] == "buy milk", "the server applied the insert")

        // The insert may have arrived: the edit queues after it instead of collapsing into it.
        try await store.ok(["update", "todo", "milk", "--set", "text=buy oat milk"])
        #expect(try await store.ok(["status", "--porcelain"]) == "A\ttodo\tmilk\nM\ttodo\tmilk\n")

        let push = try await store.run(["push", "--json"])
        #expect(push.status == 0, "\(push)")
        let summary = try JSONOutput.object(push.stdout)
        #expect(JSONOutput.int(summary["pushed"]) == 2 && JSONOutput.int(summary["alreadyApplied"]) == 1)
        #expect(JSONOutput.int(summary["conflicts"]) == 0)
        #expect(try await store.ok(["conflicts", "--json"]) == "[]\n")
        #expect(try await store.ok(["status", "--porcelain"]) == "")
        let onServer = try #require(try await server.record("todo", "milk"))
        #expect(onServer["text"] == "buy oat milk")
        let local = try JSONOutput.object(try await store.ok(["get", "todo", "milk", "--json"]))
        #expect(local["version"] == onServer["version"])
    }

    @Test(arguments: [true, false])
    func lostUpdateAnswerThenLocalEditPushesWithoutConflict(batched: Bool) async throws {
        let (server, proxy, store) = try await setUp(batched)
        try await store.ok(["insert", "todo", #"{"id": "milk", "text": "buy milk", "done": false}"#])
        try await store.ok(["push"])
        try await store.ok(["update", "todo", "milk", "--set", "done=true"])
        loseNextAnswer(proxy, batched: batched, "PATCH", "/tables/todo/milk")
        #expect(try await store.run(["push"]).status == 3)
        #expect(try await server.record("todo", "milk")?["done"] == true, "the server applied the update")

        try await store.ok(["update", "todo", "milk", "--set", "text=buy oat milk"])
        #expect(try await store.ok(["status", "--porcelain"]) == "M\ttodo\tmilk\nM\ttodo\tmilk\n")
        let push = try await store.run(["push", "--json"])
        #expect(push.status == 0, "\(push)")
        #expect(JSONOutput.int(try JSONOutput.object(push.stdout)["conflicts"]) == 0)
        #expect(try await store.ok(["conflicts", "--json"]) == "[]\n")
        let onServer = try #require(try await server.record("todo", "milk"))
        #expect(onServer["text"] == "buy oat milk" && onServer["done"] == true)
    }

    @Test(arguments: [true, false])
    func lostDeleteAnswerIsDoneOnTheNextPush(batched: Bool) async throws {
        let (server, proxy, store) = try await setUp(batched)
        try await store.ok(["insert", "todo", #"{"id": "milk", "text": "buy milk"}"#])
        try await store.ok(["push"])
        try await store.ok(["delete", "todo", "milk"])
        loseNextAnswer(proxy, batched: batched, "DELETE", "/tables/todo/milk")
        #expect(try await store.run(["push"]).status == 3)
        #expect(try await server.record("todo", "milk") == nil, "the server applied the delete")
        #expect(try await store.ok(["status", "--porcelain"]) == "D\ttodo\tmilk\n")

        let push = try await store.run(["push", "--json"])
        #expect(push.status == 0, "\(push)")
        #expect(JSONOutput.int(try JSONOutput.object(push.stdout)["alreadyApplied"]) == 1)
        #expect(try await store.ok(["status", "--porcelain"]) == "")
    }

    /// An operation an earlier push sent without learning the answer stays in flight through a
    /// later push that cannot deliver it (here: the server refuses connections), so an edit made
    /// after that still queues behind it. Found by the kill -9 campaign (scripts/soak.py, seed 104).
    @Test(arguments: [true, false])
    func anOperationSentBeforeStaysInFlightThroughAFailedPush(batched: Bool) async throws {
        let (server, proxy, store) = try await setUp(batched)
        try await store.ok(["insert", "todo", #"{"id": "milk", "text": "buy milk"}"#])
        loseNextAnswer(proxy, batched: batched, "POST", "/tables/todo")
        #expect(try await store.run(["push"]).status == 3)

        let refusing = try LoopbackListener.refusing()
        defer { refusing.close() }
        try await store.ok(["remote", "http://127.0.0.1:\(refusing.port)"])
        let refused = try await store.run(["push"])
        #expect(refused.status == 3 && refused.stderr.contains("connection refused"), "\(refused)")
        try await store.ok(["update", "todo", "milk", "--set", "text=buy oat milk"])
        #expect(try await store.ok(["status", "--porcelain"]) == "A\ttodo\tmilk\nM\ttodo\tmilk\n")

        try await store.ok(["remote", proxy.url])
        let push = try await store.run(["push", "--json"])
        #expect(push.status == 0, "\(push)")
        #expect(JSONOutput.int(try JSONOutput.object(push.stdout)["conflicts"]) == 0)
        #expect(try await server.record("todo", "milk")?["text"] == "buy oat milk")
    }

    /// Operations that were never sent (the push stopped before their turn) go back to pending and
    /// still collapse with later edits: only an operation that may have arrived is held apart.
    @Test func unsentOperationsStillCollapse() async throws {
        let refusing = try LoopbackListener.refusing()
        defer { refusing.close() }
        let store = try await TSyncSandbox(remote: "http://127.0.0.1:\(refusing.port)")
        try await store.ok(["insert", "todo", #"{"id": "milk", "text": "buy milk"}"#])
        #expect(try await store.run(["push"]).status == 3)
        try await store.ok(["update", "todo", "milk", "--set", "text=buy oat milk"])
        #expect(try await store.ok(["status", "--porcelain"]) == "A\ttodo\tmilk\n")
    }
}

/// Answers that say "success" without being a sync server's answer (docs/DESIGN.md §4): nothing may count
/// as pushed unless the server holds it, and the local copy must take the server's real version.
@Suite(.serialized) struct FalseSuccessTests {
    @Test(arguments: [true, false])
    func anHTMLPageIsNotASuccess(batched: Bool) async throws {
        let server = try await ServeFixture(options: batched ? [] : ["--max-batch", "0"])
        let proxy = try LossyProxy(upstream: server.url)
        let store = try await TSyncSandbox(remote: proxy.url)
        try await store.ok(["insert", "todo", #"{"id": "milk", "text": "buy milk"}"#])
        // A captive portal answers every write with its page; the server never hears of it.
        let page = "<html><body>Please log in to the hotel Wi-Fi</body></html>"
        proxy.replace("POST", "/tables/", status: 200, contentType: "text/html", body: page, forward: false, count: 5)
        let push = try await store.run(["push"])
        #expect(push.status == 3, "\(push)")
        #expect(push.stderr.contains("does not look like a tsync or Mobile Apps v2 server"), "\(push.stderr)")
        #expect(!push.stderr.contains("pushed 1"))
        #expect(try await server.records("todo").isEmpty)
        #expect(try await store.ok(["status", "--porcelain"]) == "A\ttodo\tmilk\n", "the insert is still queued")

        // Off the portal, the push goes through.
        try await store.ok(["remote", server.url])
        #expect(try await store.run(["push"]).status == 0)
        #expect(try await server.records("todo")["milk"]?["text"] == "buy milk")
    }

    /// The server applies the write, but the answer arrives damaged: the record is read back, so
    /// the local copy has the server's version and the next edit is no false 412.
    @Test func aDamagedAnswerIsReadBack() async throws {
        let server = try await ServeFixture(options: ["--max-batch", "0"])
        let proxy = try LossyProxy(upstream: server.url)
        let store = try await TSyncSandbox(remote: proxy.url)
        try await store.ok(["insert", "todo", #"{"id": "milk", "text": "buy milk"}"#])
        try await store.ok(["push"])
        try await store.ok(["update", "todo", "milk", "--set", "text=buy oat milk"])
        proxy.replace(
            "PATCH", "/tables/todo/milk", status: 200, contentType: "application/json", body: #"{"id": "milk", "te"#, forward: true)
        let push = try await store.run(["push"])
        #expect(push.status == 0, "\(push)")
        let onServer = try #require(try await server.record("todo", "milk"))
        #expect(onServer["text"] == "buy oat milk")
        let local = try JSONOutput.object(try await store.ok(["get", "todo", "milk", "--json"]))
        #expect(local["version"] == onServer["version"], "the local copy took the server's version")

        try await store.ok(["update", "todo", "milk", "--set", "text=buy soy milk"])
        let next = try await store.run(["push"])
        #expect(next.status == 0, "no false conflict: \(next)")
        #expect(try await server.record("todo", "milk")?["text"] == "buy soy milk")
    }
}
