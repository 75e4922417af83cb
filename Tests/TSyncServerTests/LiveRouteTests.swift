import Foundation
import HTTPTypes
import Testing
import TSyncModel
@testable import TSyncServer

/// The live route (docs/DESIGN.md §8.1): `Prefer: wait=N` on a page read.
@Suite struct LiveRouteTests {
    static let preferenceApplied = HTTPField.Name("Preference-Applied")!
    static let accelBuffering = HTTPField.Name("X-Accel-Buffering")!
    static let empty = "/tables/todo?$filter=updatedAt%20gt%20datetimeoffset'2000-01-01T00:00:00.000Z'&__includeDeleted=true"

    /// Waits (bounded) until the server holds `count` requests.
    static func waitUntilHeld(_ http: TestHTTP, _ count: Int) async throws {
        let feed = try #require(http.storage.changes)
        try await eventually(timeout: .seconds(10)) { feed.waiting >= count }
        #expect(feed.waiting == count, "the server holds \(count) request(s)")
    }

    @Test func anEmptyPageIsHeldUntilACommitAndAnsweredWithIt() async throws {
        try await withTestServer { http in
            let held = Task { try await http.get(Self.empty, headers: ["Prefer": "wait=20"]) }
            try await Self.waitUntilHeld(http, 1)
            #expect(try await http.post("/tables/todo", ["id": "a", "n": 1]).status == 201)
            let reply = try await held.value
            #expect(reply.status == 200)
            #expect(reply.ids == ["a"], "the held request was answered with the commit: \(reply.text)")
            #expect(reply.headers[Self.preferenceApplied] == "wait=20")
            #expect(reply.headers[Self.accelBuffering] == "no")
            #expect(http.storage.changes?.waiting == 0)
        }
    }

    @Test func aCommitToAnotherTableDoesNotAnswerTheWait() async throws {
        try await withTestServer { http in
            let held = Task { try await http.get(Self.empty, headers: ["Prefer": "wait=2"]) }
            try await Self.waitUntilHeld(http, 1)
            #expect(try await http.post("/tables/other", ["id": "b"]).status == 201)
            let reply = try await held.value
            #expect(reply.status == 200)
            #expect(reply.ids.isEmpty, "the wait ended by its time, empty: \(reply.text)")
            #expect(reply.headers[Self.preferenceApplied] == "wait=2")
        }
    }

    @Test func aPageWithRecordsIsAnsweredAtOnceAndTheWaitIsCapped() async throws {
        try await withTestServer { http in
            #expect(try await http.post("/tables/todo", ["id": "a"]).status == 201)
            let reply = try await http.get(Self.empty, headers: ["Prefer": "respond-async, wait=3600"])
            #expect(reply.ids == ["a"])
            #expect(reply.headers[Self.preferenceApplied] == "wait=\(LiveWait.maximumSeconds)")
        }
    }

    @Test func waitersAreBounded() async throws {
        var configuration = ServerConfiguration(requiresAuthentication: false)
        configuration.maximumWatchers = 1
        try await withTestServer(configuration) { http in
            let held = Task { try await http.get(Self.empty, headers: ["Prefer": "wait=20"]) }
            try await Self.waitUntilHeld(http, 1)
            let refused = try await http.get(Self.empty, headers: ["Prefer": "wait=20"])
            #expect(refused.status == 200)
            #expect(refused.headers[Self.preferenceApplied] == "wait=0", "answered at once, nothing held")
            #expect(http.storage.changes?.waiting == 1)
            #expect(try await http.post("/tables/todo", ["id": "a"]).status == 201)
            #expect(try await held.value.ids == ["a"])
        }
    }

    @Test func withoutTheRouteTheServerAnswersAsAPlainServer() async throws {
        var configuration = ServerConfiguration(requiresAuthentication: false)
        configuration.maximumWatchers = 0
        try await withTestServer(configuration) { http in
            let reply = try await http.get(Self.empty, headers: ["Prefer": "wait=20"])
            #expect(reply.status == 200)
            #expect(reply.headers[Self.preferenceApplied] == nil)
            #expect(reply.headers[Self.accelBuffering] == nil)
        }
    }

    @Test func aPerUserWaiterIsNotAnsweredWithAnotherUsersRecord() async throws {
        let configuration = ServerConfiguration(perUserTables: ["todo"])
        try await withTestServer(configuration, accounts: [("alice", "alice password"), ("bob", "bob password")]) { http in
            let alice = try await http.login("alice", "alice password")
            let bob = try await http.login("bob", "bob password")
            let held = Task { try await http.get(Self.empty, token: bob, headers: ["Prefer": "wait=20"]) }
            try await Self.waitUntilHeld(http, 1)
            #expect(try await http.post("/tables/todo", ["id": "alices"], token: alice).status == 201)
            // Woken, it finds nothing of bob's and waits again, until bob's own record.
            try await Self.waitUntilHeld(http, 1)
            #expect(try await http.post("/tables/todo", ["id": "bobs"], token: bob).status == 201)
            #expect(try await held.value.ids == ["bobs"])
        }
    }

    @Test(arguments: ["wait=5", "WAIT = 5", "handling=lenient, wait=5; x=y", "wait=5, stream"])
    func thePreferenceIsRead(_ header: String) {
        #expect(LiveWait.requested(header) == 5)
    }

    @Test(arguments: ["", "respond-async", "wait=-1", "wait=soon"])
    func otherPreferencesAskForNoWait(_ header: String) {
        #expect(LiveWait.requested(header) == nil)
    }

    /// The header as tsync sends it is read from its bytes: the same seconds as the general way.
    @Test func thePlainHeaderIsReadAsInGeneral() {
        let headers = [
            "wait=0", "wait=5", "wait=25", "wait=007", "wait=99999", "wait=9999999999999999999", "wait=", "wait=+5", "wait= 5",
            "Wait=5", "wait=5 ", "wait=5,", "wait=5;x", "wait=\u{FF15}", "wait=\u{0665}", "waits=5", "wait==5",
        ]
        for header in headers {
            #expect(LiveWait.requested(header) == LiveWait.requestedInGeneral(header), "\(header)")
        }
        #expect(LiveWait.requested("wait=25") == 25 && LiveWait.requested("wait=007") == 7)
    }
}
