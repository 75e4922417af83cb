import Foundation
import Testing
import TSyncModel

/// Ids are compared by their bytes everywhere (docs/DESIGN.md §12): "é" (U+00E9) and "e" + U+0301 look
/// alike and Swift's `String ==` calls them equal, but they are two records.
@Suite(.serialized) struct IdentifierBytesTests {
    static let composed = "\u{E9}"
    static let decomposed = "e\u{301}"

    @Test func lookalikeIdsAreTwoRecordsLocallyAndOnTheServer() async throws {
        let server = try await ServeFixture()
        let store = try await TSyncSandbox(remote: server.url)
        try await store.ok(["insert", "u", #"{"id": "\#(Self.composed)", "n": 1}"#])
        try await store.ok(["insert", "u", #"{"id": "\#(Self.decomposed)", "n": 2}"#])
        // Both are claimed in one push batch (one operation per item per batch).
        let push = try JSONOutput.object(try await store.ok(["push", "--json"]))
        #expect(JSONOutput.int(push["pushed"]) == 2)
        #expect(try await Self.serverIDs(server) == [Array(Self.composed.utf8), Array(Self.decomposed.utf8)])

        try await store.ok(["delete", "u", Self.composed, Self.decomposed])
        #expect(try await store.ok(["status", "--porcelain"]).split(separator: "\n").count == 2, "two deletes queued")
        #expect(try await store.ok(["query", "u"]).isEmpty, "both records are gone locally")
        try await store.ok(["push"])
        #expect(try await Self.serverIDs(server).isEmpty)
    }

    /// The ids of the live records of `u`, as bytes (a `[String: …]` would merge the two).
    private static func serverIDs(_ server: ServeFixture) async throws -> Set<[UInt8]> {
        let reply = try await HTTP.send("GET", server.url + "/tables/u")
        guard case .array(let items) = try JSONParser.parse(reply.body) else { return [] }
        return Set(items.compactMap { $0.objectValue?["id"]?.stringValue.map { Array($0.utf8) } })
    }

    @Test func aBodyIdThatOnlyLooksLikeTheURLIdIsRefused() async throws {
        let server = try await ServeFixture()
        let created = try await HTTP.send(
            "POST", server.url + "/tables/u", body: #"{"id": "\#(Self.composed)", "n": 1}"#)
        #expect(created.status == 201)
        let path = try #require(Self.composed.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed))
        let patched = try await HTTP.send(
            "PATCH", server.url + "/tables/u/" + path, body: #"{"id": "\#(Self.decomposed)", "n": 2}"#)
        #expect(patched.status == 400, "\(patched.body)")
    }
}
