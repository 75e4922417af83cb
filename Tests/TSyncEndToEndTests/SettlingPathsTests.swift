import Foundation
import Testing
import TSyncModel

/// Settling many conflicts in one command (the server's copies read several requests at a time,
/// a page of errors settled per store transaction, a push's 412s settled as their answers are
/// applied) against settling them one command per error:
/// the same records on the server, the same store, the same errors left. Every kind of conflict
/// is in the mix: fields that merge, fields that clash, an item deleted on either side, an id
/// inserted on both. On SQLite, and on PostgreSQL when TSYNC_TEST_POSTGRES_URL names one.
@Suite(.serialized) struct SettlingPathsTests {
    enum Backend: String, Sendable, CaseIterable {
        case sqlite, postgres
    }

    static let backends = PostgresFixture.adminURL == nil ? [Backend.sqlite] : Backend.allCases

    /// A new `tsync serve --no-auth` on `backend`, for `body`.
    private func withServer(_ backend: Backend, _ body: (String) async throws -> Void) async throws {
        switch backend {
        case .sqlite:
            let server = try await ServeFixture()
            try await body(server.url)
        case .postgres:
            try await PostgresFixture.withFreshDatabase { db in
                let directory = try TemporaryDirectory()
                let server = try ServerProcess(arguments: ["serve", "--db", db, "--port", "0", "--no-auth"], log: directory.path)
                defer { server.stop() }
                try await body(try await server.waitForAddress())
            }
        }
    }

    /// Stores A and B hold the same records; A changes and pushes first, B changes and has not
    /// pushed: every change of B's but one meets a conflict.
    private func race(_ url: String) async throws -> TSyncSandbox {
        let a = try await TSyncSandbox(remote: url)
        let b = try await TSyncSandbox(remote: url)
        let records = (1...12).map { #"{"id": "r\#($0)", "text": "t\#($0)", "note": "n\#($0)"}"# }
        try await a.ok(["insert", "todo"], stdin: records.joined(separator: "\n") + "\n")
        try await a.ok(["push"])
        try await b.ok(["pull", "todo"])
        for id in 1...7 { try await a.ok(["update", "todo", "r\(id)", "--set", #"text="a changed r\#(id)""#]) }
        try await a.ok(["update", "todo", "r9", "--set", #"text="a changed r9""#])
        try await a.ok(["delete", "todo", "r8"])
        try await a.ok(["insert", "todo", #"{"id": "both", "text": "from a"}"#])
        try await a.ok(["push"])
        for id in 1...4 { try await b.ok(["update", "todo", "r\(id)", "--set", #"note="b changed r\#(id)""#]) }
        for id in 5...7 {
            try await b.ok(["update", "todo", "r\(id)", "--set", #"text="b changed r\#(id)""#, "--set", #"note="b note r\#(id)""#])
        }
        try await b.ok(["update", "todo", "r8", "--set", #"note="b changed r8""#])
        try await b.ok(["delete", "todo", "r9"])
        try await b.ok(["insert", "todo", #"{"id": "both", "text": "from b", "note": "b"}"#])
        try await b.ok(["update", "todo", "r11", "--set", #"note="no conflict""#])
        return b
    }

    /// What the server holds (deleted records included) and what the store holds, without
    /// versions and times, which differ from run to run.
    private func state(_ url: String, _ b: TSyncSandbox) async throws -> String {
        let reply = try await HTTP.send("GET", url + "/tables/todo?$orderby=id&$top=1000&__includeDeleted=true")
        #expect(reply.status == 200, "\(reply.body)")
        let server = try JSONOutput.array(reply.body)
        let local = try JSONOutput.array(try await b.ok(["query", "todo", "--json", "--orderby", "id"]))
        let errors = try JSONOutput.array(try await b.ok(["conflicts", "--json"])).map { error in
            let object = error.objectValue ?? [:]
            let parts: [JSONValue?] = [object["itemId"], object["kind"], object["status"], object["class"]]
            return parts.map { part in part.map { JSONSerializer.string($0) } ?? "-" }.joined(separator: " ")
        }
        func fields(_ records: [JSONValue]) -> [String] {
            records.map { record in
                var object = record.objectValue ?? [:]
                for name in ["version", "updatedAt", "createdAt"] { object.removeValue(forKey: name) }
                return JSONSerializer.string(.object(object))
            }
        }
        let status = try await b.ok(["status", "--porcelain"])
        var lines = ["server:"] + fields(server)
        lines += ["store:"] + fields(local)
        lines += ["errors:"] + errors.sorted()
        lines += ["status:", status]
        return lines.joined(separator: "\n")
    }

    /// Settles each error in a command of its own, as `resolve ID` does, in queue order.
    /// - Returns: how many were settled (a refused merge exits 2).
    @discardableResult
    private func oneByOne(_ b: TSyncSandbox, _ flags: [String]) async throws -> Int {
        let ids = try JSONOutput.array(try await b.ok(["conflicts", "--json"])).compactMap { JSONOutput.int($0.objectValue?["id"]) }
        #expect(ids.count == 10, "every change but one conflicts")
        var count = 0
        for id in ids {
            let settled = try await b.run(["resolve", String(id)] + flags)
            #expect(settled.status == 0 || settled.status == 2, "\(settled)")
            if settled.status == 0 { count += 1 }
        }
        return count
    }

    /// A push's conflict policy, and the `resolve` flags that settle as it does.
    enum Policy: String, Sendable, CaseIterable {
        case mergePreferOurs, merge, ours, theirs

        var pushFlags: [String] {
            switch self {
            case .mergePreferOurs: ["--on-conflict", "merge", "--prefer", "ours"]
            case .merge: ["--on-conflict", "merge"]
            case .ours: ["--on-conflict", "ours"]
            case .theirs: ["--on-conflict", "theirs"]
            }
        }

        var resolveFlags: [String] {
            switch self {
            case .mergePreferOurs: ["--merge", "--prefer", "ours"]
            case .merge: ["--merge"]
            case .ours: ["--ours"]
            case .theirs: ["--theirs"]
            }
        }
    }

    /// The 412s a push meets are settled as their answers come (the rest from the error table):
    /// the same as a plain push, one `resolve ID` per error, and a push again.
    @Test(arguments: backends, Policy.allCases)
    func pushOnConflictSettlesAsOneResolveAtATime(_ backend: Backend, _ policy: Policy) async throws {
        var batched = ""
        var settledInPush = 0
        try await withServer(backend) { url in
            let b = try await race(url)
            let push = try await b.run(["push", "--json"] + policy.pushFlags)
            let summary = try JSONOutput.object(push.stdout)
            #expect(JSONOutput.int(summary["conflictsMet"]) == 10, "\(push)")
            settledInPush = (summary["settled"]?.objectValue ?? [:]).values.compactMap { JSONOutput.int($0) }.reduce(0, +)
            batched = try await state(url, b)
        }
        try await withServer(backend) { url in
            let b = try await race(url)
            #expect(try await b.run(["push"]).status == 2)
            let settled = try await oneByOne(b, policy.resolveFlags)
            _ = try await b.run(["push"])
            let alone = try await state(url, b)
            #expect(batched == alone)
            #expect(settledInPush == settled)
            if policy == .mergePreferOurs {
                #expect(alone.contains(#""note":"b changed r1","text":"a changed r1""#), "a merge of both sides' fields: \(alone)")
            }
        }
    }

    @Test(arguments: backends)
    func resolveAllTheirsSettlesAsOneResolveAtATime(_ backend: Backend) async throws {
        var batched = ""
        try await withServer(backend) { url in
            let b = try await race(url)
            #expect(try await b.run(["push"]).status == 2)
            let resolve = try await b.run(["resolve", "--all", "--theirs", "--json"])
            #expect(resolve.status == 0, "\(resolve)")
            #expect(try JSONOutput.array(resolve.stdout).count == 10)
            batched = try await state(url, b)
        }
        try await withServer(backend) { url in
            let b = try await race(url)
            #expect(try await b.run(["push"]).status == 2)
            try await oneByOne(b, ["--theirs"])
            let alone = try await state(url, b)
            #expect(batched == alone)
            #expect(alone.contains(#""id":"r5","deleted":false,"note":"n5","text":"a changed r5""#), "the server's copy taken: \(alone)")
        }
    }
}
