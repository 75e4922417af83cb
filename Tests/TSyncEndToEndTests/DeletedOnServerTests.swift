import Foundation
import Testing
import TSyncModel

/// `resolve --ours` against a record another client deleted on the server. The server keeps a
/// soft-deleted copy, which answers 404 to an update and 409 to an insert of the same id; the
/// client must win by undeleting that copy and updating it, not loop on 409 (docs/DESIGN.md §7).
@Suite(.serialized) struct DeletedOnServerTests {
    /// A and B share `todo/x`; B deletes it on the server; A's update then fails.
    private func updateAgainstDelete() async throws -> (server: ServeFixture, a: TSyncSandbox) {
        let server = try await ServeFixture()
        let a = try await TSyncSandbox(remote: server.url)
        let b = try await TSyncSandbox(remote: server.url)
        try await a.ok(["insert", "todo", #"{"id": "x", "text": "original", "note": "n0"}"#])
        try await a.ok(["push"])
        try await b.ok(["pull", "todo"])
        try await b.ok(["delete", "todo", "x"])
        try await b.ok(["push"])
        try await a.ok(["update", "todo", "x", "--set", "text=ours"])
        #expect(try await a.run(["push"]).status == 2)
        let conflicts = try JSONOutput.array(try await a.ok(["conflicts", "--json"]))
        #expect(conflicts.first?.objectValue?["class"] == "missing")
        return (server, a)
    }

    @Test func oursRestoresAnItemDeletedOnTheServer() async throws {
        let (server, a) = try await updateAgainstDelete()
        let resolve = try await a.run(["resolve", "--all", "--ours", "--push"])
        #expect(resolve.status == 0, "\(resolve)")
        #expect(try await a.ok(["conflicts", "--json"]) == "[]\n")
        #expect(try await a.ok(["status", "--porcelain"]) == "")
        let restored = try #require(try await server.record("todo", "x"), "the item is live again")
        #expect(restored["text"] == "ours" && restored["note"] == "n0")
        let local = try JSONOutput.object(try await a.ok(["get", "todo", "x", "--json"]))
        #expect(local["version"] == restored["version"])
    }

    @Test func theirsAcceptsTheDelete() async throws {
        let (server, a) = try await updateAgainstDelete()
        #expect(try await a.run(["resolve", "--all", "--theirs"]).status == 0)
        #expect(try await a.run(["get", "todo", "x"]).status == 65)
        #expect(try await a.ok(["status", "--porcelain"]) == "")
        #expect(try await server.record("todo", "x") == nil)
    }

    /// An insert whose id the server keeps as a deleted copy: 409 with that copy, shown as deleted,
    /// and `--ours` undeletes it with the local fields.
    @Test func insertOverADeletedCopyIsMarkedAndOursRestoresIt() async throws {
        let server = try await ServeFixture()
        let a = try await TSyncSandbox(remote: server.url)
        try await a.ok(["insert", "todo", #"{"id": "y", "text": "first life"}"#])
        try await a.ok(["push"])
        try await a.ok(["delete", "todo", "y"])
        try await a.ok(["push"])

        let c = try await TSyncSandbox(remote: server.url)
        try await c.ok(["insert", "todo", #"{"id": "y", "text": "second life"}"#])
        #expect(try await c.run(["push"]).status == 2)
        let entry = try #require(try JSONOutput.array(try await c.ok(["conflicts", "--json"])).first?.objectValue)
        #expect(entry["class"] == "already-exists")
        #expect(entry["theirs"]?.objectValue?["deleted"] == true)
        #expect(try await c.ok(["conflicts"]).contains("the server keeps a deleted copy"))
        let show = try await c.ok(["conflicts", "show", String(try #require(JSONOutput.int(entry["id"])))])
        #expect(show.contains("(deleted)"), "\(show)")

        let resolve = try await c.run(["resolve", "--all", "--ours", "--push"])
        #expect(resolve.status == 0, "\(resolve)")
        #expect(try await c.ok(["conflicts", "--json"]) == "[]\n")
        #expect(try await server.record("todo", "y")?["text"] == "second life")
    }
}
