import Foundation
import Testing
import TSyncModel

/// A server, proxy or gateway that answers wrongly must never make tsync drop or revert a user's
/// change while saying "pushed". The real `tsync serve` sits behind a `LossyProxy` that
/// answers some requests in its place; what tsync cannot explain stays queued (in flight), nothing
/// is settled or recorded as failed, and the command exits 3.
@Suite(.serialized) struct UnverifiableAnswerTests {
    /// A store with `a` and `b` pushed, then an update of `a`, a delete of `b` and an insert of
    /// `c` queued.
    private func setUp(batched: Bool) async throws -> (server: ServeFixture, proxy: LossyProxy, store: TSyncSandbox) {
        let server = try await ServeFixture(options: batched ? [] : ["--max-batch", "0"])
        let proxy = try LossyProxy(upstream: server.url)
        let store = try await TSyncSandbox(remote: proxy.url)
        try await store.ok(["insert", "todo", #"{"id": "a", "text": "old a"}"#])
        try await store.ok(["insert", "todo", #"{"id": "b", "text": "old b"}"#])
        try await store.ok(["push"])
        try await store.ok(["update", "todo", "a", "--set", "text=new a"])
        try await store.ok(["delete", "todo", "b"])
        try await store.ok(["insert", "todo", #"{"id": "c", "text": "new c"}"#])
        return (server, proxy, store)
    }

    static let queued = "M\ttodo\ta\nD\ttodo\tb\nA\ttodo\tc\n"

    /// Nothing was settled or lost: the three changes are queued, no error recorded, the local
    /// copies are the user's; then, past the faulty proxy, they all reach the server.
    private func expectNothingLost(_ server: ServeFixture, _ store: TSyncSandbox) async throws {
        #expect(try await store.ok(["conflicts", "--json"]) == "[]\n")
        #expect(try await store.ok(["status", "--porcelain"]) == Self.queued)
        #expect(try JSONOutput.object(try await store.ok(["get", "todo", "a", "--json"]))["text"] == "new a")
        #expect(try JSONOutput.object(try await store.ok(["get", "todo", "c", "--json"]))["text"] == "new c")
        try await store.ok(["remote", server.url])
        let push = try await store.run(["push"])
        #expect(push.status == 0, "\(push)")
        let records = try await server.records("todo")
        #expect(records["a"]?["text"] == "new a" && records["b"] == nil && records["c"]?["text"] == "new c", "\(records)")
        #expect(try await store.ok(["status", "--porcelain"]) == "")
    }

    /// 18.1: a proxy that does not route the batch answers 404 to it. That is no operation's
    /// answer: `--on-conflict theirs` used to settle "4 conflicts" by dropping the user's work.
    @Test(arguments: [("text/html", "<html>Not Found</html>"), ("application/json", #"{"error": "not found"}"#)])
    func aBatchAnsweredNotFoundSettlesNothing(contentType: String, body: String) async throws {
        let (server, proxy, store) = try await setUp(batched: true)
        proxy.replace("POST", "/tables/$batch", status: 404, contentType: contentType, body: body, forward: false, count: 10)
        let push = try await store.run(["push", "--on-conflict", "theirs"])
        #expect(push.status == 3, "\(push)")
        #expect(push.stderr.contains("did not answer as a sync server does") && push.stderr.contains("HTTP 404"), "\(push.stderr)")
        #expect(!push.stderr.contains("settled"), "\(push.stderr)")
        try await expectNothingLost(server, store)
    }

    /// 18.1 and 18.6: single writes answered 404 by something that is not the item's table
    /// (a proxy's page, a table-level `{"error": "table not found"}`): the server still has the
    /// item, so the 404 is not "deleted on the server", and an insert's 404 never is.
    @Test(arguments: [("text/html", "<html>Not Found</html>"), ("application/json", #"{"error": "table not found"}"#)])
    func singleWritesAnsweredNotFoundSettleNothing(contentType: String, body: String) async throws {
        let (server, proxy, store) = try await setUp(batched: false)
        for method in ["PATCH", "DELETE", "POST"] {
            proxy.replace(method, "/tables/todo", status: 404, contentType: contentType, body: body, forward: false, count: 10)
        }
        let push = try await store.run(["push", "--on-conflict", "theirs"])
        #expect(push.status == 3, "\(push)")
        #expect(push.stderr.contains("did not answer as a sync server does"), "\(push.stderr)")
        try await expectNothingLost(server, store)
    }

    /// A real 404 of tsync serve (the item was deleted there) is still "deleted on the server":
    /// the read that confirms it finds the deleted copy.
    @Test(arguments: [true, false])
    func aConfirmedNotFoundIsStillAConflict(batched: Bool) async throws {
        let server = try await ServeFixture(options: batched ? [] : ["--max-batch", "0"])
        let store = try await TSyncSandbox(remote: server.url)
        let other = try await TSyncSandbox(remote: server.url)
        try await store.ok(["insert", "todo", #"{"id": "a", "text": "old a"}"#])
        try await store.ok(["push"])
        try await other.ok(["pull", "todo"])
        try await other.ok(["delete", "todo", "a"])
        try await other.ok(["push"])
        try await store.ok(["update", "todo", "a", "--set", "text=new a"])
        let push = try await store.run(["push", "--json"])
        #expect(push.status == 2, "\(push)")
        let conflicts = try JSONOutput.array(try await store.ok(["conflicts", "--json"]))
        #expect(conflicts.count == 1 && conflicts.first?.objectValue?["class"] == "missing", "\(conflicts)")
    }

    /// 18.6: a delete answered 200 without the deleted copy (empty, HTML labelled JSON) or with
    /// a table-level 404, while the server still has the item: not done.
    @Test(arguments: [
        (200, "application/json", ""), (200, "application/json", "<html>Welcome</html>"),
        (404, "application/json", #"{"error": "table not found"}"#),
    ])
    func aDeleteTheServerDidNotApplyStaysQueued(status: Int, contentType: String, body: String) async throws {
        let server = try await ServeFixture(options: ["--max-batch", "0"])
        let proxy = try LossyProxy(upstream: server.url)
        let store = try await TSyncSandbox(remote: proxy.url)
        try await store.ok(["insert", "todo", #"{"id": "b", "text": "old b"}"#])
        try await store.ok(["push"])
        try await store.ok(["delete", "todo", "b"])
        proxy.replace("DELETE", "/tables/todo/b", status: status, contentType: contentType, body: body, forward: false, count: 5)
        let push = try await store.run(["push"])
        #expect(push.status == 3, "\(push)")
        #expect(push.stderr.contains("did not answer as a sync server does"), "\(push.stderr)")
        #expect(try await store.ok(["status", "--porcelain"]) == "D\ttodo\tb\n")
        #expect(try await store.ok(["conflicts", "--json"]) == "[]\n")
        try await store.ok(["remote", server.url])
        #expect(try await store.run(["push"]).status == 0)
        #expect(try await server.record("todo", "b") == nil)
        #expect(try await store.ok(["status", "--porcelain"]) == "")
    }

    /// 18.7: a 500 the server had in fact applied leaves the update in flight, so a later edit
    /// queues behind it (instead of merging into it and meeting a 412 against its own write).
    @Test(arguments: [true, false])
    func aServerErrorLeavesTheWriteInFlight(batched: Bool) async throws {
        let server = try await ServeFixture(options: batched ? [] : ["--max-batch", "0"])
        let proxy = try LossyProxy(upstream: server.url)
        let store = try await TSyncSandbox(remote: proxy.url)
        try await store.ok(["insert", "todo", #"{"id": "a", "text": "old a"}"#])
        try await store.ok(["push"])
        try await store.ok(["update", "todo", "a", "--set", "text=new a"])
        proxy.replace(
            batched ? "POST" : "PATCH", batched ? "/tables/$batch" : "/tables/todo/a", status: 500, contentType: "application/json",
            body: #"{"error": "internal error"}"#, forward: true)
        let push = try await store.run(["push"])
        #expect(push.status == 3, "\(push)")
        #expect(push.stderr.contains("HTTP 500"), "\(push.stderr)")
        #expect(try await store.ok(["conflicts", "--json"]) == "[]\n")
        #expect(try await server.record("todo", "a")?["text"] == "new a", "the server applied it")
        try await store.ok(["update", "todo", "a", "--set", "text=newer a"])
        #expect(try await store.ok(["status", "--porcelain"]) == "M\ttodo\ta\nM\ttodo\ta\n", "the edit queued behind the write in flight")
        let again = try await store.run(["push", "--json"])
        #expect(again.status == 0, "\(again)")
        #expect(JSONOutput.int(try JSONOutput.object(again.stdout)["conflicts"]) == 0)
        #expect(try await server.record("todo", "a")?["text"] == "newer a")
    }

    /// 18.8: 429 and 503 are "try later": exit 3, the wait shown, nothing recorded.
    @Test(arguments: [(429, true), (429, false), (503, true), (503, false)])
    func tooManyRequestsIsTryLater(status: Int, batched: Bool) async throws {
        let (server, proxy, store) = try await setUp(batched: batched)
        for (method, path) in batched
            ? [("POST", "/tables/$batch")] : [("PATCH", "/tables/"), ("DELETE", "/tables/"), ("POST", "/tables/")]
        {
            proxy.replace(
                method, path, status: status, contentType: "application/json", body: #"{"error": "slow down"}"#, forward: false,
                count: 10, headers: [("Retry-After", "7")])
        }
        let push = try await store.run(["push"])
        #expect(push.status == 3, "\(push)")
        #expect(push.stderr.contains("HTTP \(status)") && push.stderr.contains("retry after 7 s"), "\(push.stderr)")
        try await expectNothingLost(server, store)
    }

    /// 18.3: a PATCH answered 200 with an empty body, HTML labelled JSON or another item's record,
    /// and not applied: the read-back finds the old copy (the version sent in If-Match), so the
    /// update stays queued and the local edit stays.
    @Test(arguments: [
        "", "<html>Welcome</html>",
        #"{"id": "other", "text": "new a", "version": "v9", "updatedAt": "2026-01-01T00:00:00.000Z", "createdAt": "2026-01-01T00:00:00.000Z", "deleted": false}"#,
    ])
    func anUpdateTheServerDidNotApplyStaysQueued(body: String) async throws {
        let server = try await ServeFixture(options: ["--max-batch", "0"])
        let proxy = try LossyProxy(upstream: server.url)
        let store = try await TSyncSandbox(remote: proxy.url)
        try await store.ok(["insert", "todo", #"{"id": "a", "text": "old a"}"#])
        try await store.ok(["push"])
        try await store.ok(["update", "todo", "a", "--set", "text=new a"])
        proxy.replace("PATCH", "/tables/todo/a", status: 200, contentType: "application/json", body: body, forward: false)
        let push = try await store.run(["push"])
        #expect(push.status == 3, "\(push)")
        #expect(push.stderr.contains("not applied"), "\(push.stderr)")
        #expect(try await store.ok(["status", "--porcelain"]) == "M\ttodo\ta\n")
        #expect(try JSONOutput.object(try await store.ok(["get", "todo", "a", "--json"]))["text"] == "new a", "the local edit is kept")
        #expect(try await store.run(["get", "todo", "other"]).status != 0, "no ghost record")
        #expect(try await store.run(["push"]).status == 0)
        #expect(try await server.record("todo", "a")?["text"] == "new a")
    }

    /// 18.4: a 409 or 412 carrying another item's record with the same fields is not "already on
    /// the server": the operation stays queued and no ghost record is written.
    @Test(arguments: [("POST", "/tables/todo", 409), ("PATCH", "/tables/todo/a", 412)])
    func aConflictWithAnotherItemsRecordIsNotAnAnswer(method: String, path: String, status: Int) async throws {
        let server = try await ServeFixture(options: ["--max-batch", "0"])
        let proxy = try LossyProxy(upstream: server.url)
        let store = try await TSyncSandbox(remote: proxy.url)
        if method == "PATCH" {
            try await store.ok(["insert", "todo", #"{"id": "a", "text": "old a"}"#])
            try await store.ok(["push"])
            try await store.ok(["update", "todo", "a", "--set", "text=new a"])
        } else {
            try await store.ok(["insert", "todo", #"{"id": "a", "text": "new a"}"#])
        }
        let ghost =
            #"{"id": "ghost", "text": "new a", "version": "v9", "updatedAt": "2026-01-01T00:00:00.000Z", "createdAt": "2026-01-01T00:00:00.000Z", "deleted": false}"#
        proxy.replace(method, path, status: status, contentType: "application/json", body: ghost, forward: false)
        let push = try await store.run(["push"])
        #expect(push.status == 3, "\(push)")
        #expect(push.stderr.contains("record of ghost"), "\(push.stderr)")
        #expect(try await store.ok(["status", "--porcelain"]) == (method == "PATCH" ? "M\ttodo\ta\n" : "A\ttodo\ta\n"))
        #expect(try await store.run(["get", "todo", "ghost"]).status != 0, "no ghost record")
        #expect(try await store.ok(["conflicts", "--json"]) == "[]\n")
        #expect(try await store.run(["push"]).status == 0)
        #expect(try await server.record("todo", "a")?["text"] == "new a")
    }

    /// 18.2: batch results reversed (the plain shape, without `index`): a 412 would be attached to
    /// the wrong operation. Results that do not pair with the operations settle nothing.
    @Test func batchResultsThatDoNotPairSettleNothing() async throws {
        let (server, proxy, store) = try await setUp(batched: true)
        let reversed =
            #"{"results": [{"status": 201, "item": {"id": "c", "text": "new c", "version": "v9", "updatedAt": "2026-01-01T00:00:00.000Z", "createdAt": "2026-01-01T00:00:00.000Z", "deleted": false}}, {"status": 404, "error": "gone"}, {"status": 412, "item": {"id": "a", "text": "theirs", "version": "v8", "updatedAt": "2026-01-01T00:00:00.000Z", "createdAt": "2026-01-01T00:00:00.000Z", "deleted": false}}]}"#
        proxy.replace("POST", "/tables/$batch", status: 200, contentType: "application/json", body: reversed, forward: false)
        let push = try await store.run(["push", "--on-conflict", "theirs"])
        #expect(push.status == 3, "\(push)")
        #expect(push.stderr.contains("do not match the operations sent"), "\(push.stderr)")
        try await expectNothingLost(server, store)
    }

    /// 18.5: a batch that claims an update done with the version the item already had (the one
    /// sent in If-Match) did not do it: read back, found unchanged, kept queued.
    @Test func aSuccessWithTheVersionSentIsNotApplied() async throws {
        let server = try await ServeFixture()
        let proxy = try LossyProxy(upstream: server.url)
        let store = try await TSyncSandbox(remote: proxy.url)
        try await store.ok(["insert", "todo", #"{"id": "a", "text": "old a"}"#])
        try await store.ok(["push"])
        let old = try JSONOutput.object(try await store.ok(["get", "todo", "a", "--json"]))
        let version = try #require(old["version"]?.stringValue)
        let updatedAt = try #require(old["updatedAt"]?.stringValue)
        try await store.ok(["update", "todo", "a", "--set", "text=new a"])
        let claimed =
            #"{"results": [{"index": 0, "id": "a", "status": 200, "item": {"id": "a", "text": "new a", "version": "\#(version)", "updatedAt": "\#(updatedAt)", "createdAt": "\#(updatedAt)", "deleted": false}}]}"#
        proxy.replace("POST", "/tables/$batch", status: 200, contentType: "application/json", body: claimed, forward: false)
        let push = try await store.run(["push"])
        #expect(push.status == 3, "\(push)")
        #expect(push.stderr.contains("not applied"), "\(push.stderr)")
        #expect(try await store.ok(["status", "--porcelain"]) == "M\ttodo\ta\n")
        #expect(try await store.run(["push"]).status == 0)
        #expect(try await server.record("todo", "a")?["text"] == "new a")
    }

    /// 18.5: an atomic batch the server applied in part breaks its promise, and the command says so.
    @Test func anAtomicBatchAppliedInPartSaysThePromiseWasBroken() async throws {
        let server = try await ServeFixture()
        let proxy = try LossyProxy(upstream: server.url)
        let store = try await TSyncSandbox(remote: proxy.url)
        try await store.ok(["insert", "todo", #"{"id": "a", "text": "a"}"#])
        try await store.ok(["insert", "todo", #"{"id": "b", "text": "b"}"#])
        let partial =
            #"{"results": [{"index": 0, "id": "a", "status": 201, "item": {"id": "a", "text": "a", "version": "v9", "updatedAt": "2026-01-01T00:00:00.000Z", "createdAt": "2026-01-01T00:00:00.000Z", "deleted": false}}, {"index": 1, "id": "b", "status": 400, "error": "refused"}]}"#
        proxy.replace("POST", "/tables/$batch", status: 200, contentType: "application/json", body: partial, forward: false)
        let push = try await store.run(["push", "--atomic"])
        #expect(push.status == 1, "\(push)")
        #expect(push.stderr.contains("broke the promise of an atomic batch"), "\(push.stderr)")
    }

    /// 18.12: a captive portal (a redirect, or HTML with 200) is exit 3 with nothing recorded, on
    /// push and on pull alike.
    @Test(arguments: [302, 303, 200])
    func aCaptivePortalIsExitThree(status: Int) async throws {
        let server = try ScriptedServer { _, _ in
            status == 200
                ? ScriptedServer.Answer(
                    status: 200, headers: [("Content-Type", "text/html")], body: Array("<html>Hotel Wi-Fi login</html>".utf8))
                : ScriptedServer.Answer(
                    status: status, headers: [("Location", "http://portal.example/login"), ("Content-Type", "text/html")],
                    body: Array("<html>moved</html>".utf8))
        }
        let store = try await TSyncSandbox(remote: server.url)
        try await store.ok(["insert", "todo", #"{"id": "a"}"#])
        let push = try await store.run(["push"])
        #expect(push.status == 3, "\(push)")
        #expect(push.stderr.contains("captive portal"), "\(push.stderr)")
        #expect(try await store.ok(["conflicts", "--json"]) == "[]\n")
        #expect(try await store.ok(["status", "--porcelain"]) == "A\ttodo\ta\n")
        let pull = try await store.run(["pull", "other"])
        #expect(pull.status == 3, "\(pull)")
        #expect(pull.stderr.contains("captive portal"), "\(pull.stderr)")
    }
}
