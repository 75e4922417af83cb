import Testing
import TSyncModel
@testable import TSyncServer

/// `--per-user` tables: a record belongs to the user who inserted it; nobody else can see it, not
/// even through a 409 or 412 body. Other users get 404 (as if it were missing), and an insert
/// that collides with someone else's id gets 409 with only an error message.
@Suite struct PerUserTests {
    static let configuration = ServerConfiguration(perUserTables: ["Notes"])
    static let accounts = [("alice", "alice password"), ("bob", "bob password")]

    @Test func othersNeverSeeARecord() async throws {
        try await withTestServer(Self.configuration, accounts: Self.accounts) { http in
            let alice = try await http.login("alice", "alice password")
            let bob = try await http.login("bob", "bob password")
            let note = try await http.insert("notes", ["id": "n1", "text": "alice's secret"], token: alice)
            try await http.insert("notes", ["id": "n2", "text": "bob's note"], token: bob)
            let version = try #require(note["version"]?.stringValue)

            #expect(try await http.get("/tables/notes/n1", token: alice).status == 200)
            #expect(try await http.get("/tables/notes", token: alice).ids == ["n1"])
            #expect(try await http.get("/tables/notes", token: bob).ids == ["n2"])
            let count = try await http.get("/tables/notes?$inlinecount=allpages&__includeDeleted=true", token: bob)
            #expect(count.object["count"] == 1)
            let filtered = try await http.get("/tables/notes?$filter=" + QueryString.encode("id eq 'n1'"), token: bob)
            #expect(filtered.ids == [])

            let replies = [
                try await http.get("/tables/notes/n1", token: bob),
                try await http.patch("/tables/notes/n1", ["text": "mine now"], token: bob),
                try await http.patch("/tables/notes/n1", ["text": "mine now"], token: bob, headers: ["If-Match": "\"stale\""]),
                try await http.patch("/tables/notes/n1", ["text": "mine now", "version": "stale"], token: bob),
                try await http.delete("/tables/notes/n1", token: bob, headers: ["If-Match": "\"stale\""]),
                try await http.delete("/tables/notes/n1", token: bob),
                try await http.post("/tables/notes/n1", token: bob),
            ]
            for reply in replies {
                #expect(reply.status == 404, "\(reply.status) \(reply.text)")
                #expect(!reply.text.contains("secret"))
                #expect(reply.etag == nil)
            }

            let collision = try await http.post("/tables/notes", ["id": "n1", "text": "bob's"], token: bob)
            #expect(collision.status == 409)
            #expect(collision.object.keys.sorted() == ["error"])
            #expect(!collision.text.contains("secret"))
            #expect(collision.etag == nil)

            // The owner still gets the conflict bodies.
            let ownConflict = try await http.post("/tables/notes", ["id": "n1"], token: alice)
            #expect(ownConflict.status == 409)
            #expect(ownConflict.object["text"] == "alice's secret")
            let stale = try await http.patch("/tables/notes/n1", ["text": "x"], token: alice, headers: ["If-Match": "\"stale\""])
            #expect(stale.status == 412)
            #expect(stale.object["version"]?.stringValue == version)
            #expect(try await http.get("/tables/notes/n1", token: alice).object["text"] == "alice's secret")
        }
    }

    @Test func sharedTablesStayShared() async throws {
        try await withTestServer(Self.configuration, accounts: Self.accounts) { http in
            let alice = try await http.login("alice", "alice password")
            let bob = try await http.login("bob", "bob password")
            try await http.insert("board", ["id": "p1"], token: alice)
            #expect(try await http.get("/tables/board/p1", token: bob).status == 200)
            #expect(try await http.patch("/tables/board/p1", ["text": "edited"], token: bob).status == 200)
        }
    }
}
