import Testing
import TSyncModel
@testable import TSyncServer

/// The history of records (docs/DESIGN.md §6.5): every accepted write appends its
/// version in the write's transaction; `GET /tables/$history/{table}/{id}` lists them, and
/// `GET /tables/$history/{table}?at=` reads the table as it was; `--keep-history` prunes and
/// `--keep-deleted` removes old tombstones behind a horizon the page reads announce. Every test
/// runs on SQLite and on PostgreSQL when configured.
@Suite struct HistoryTests {
    static let accounts = [("alice", "alice password"), ("bob", "bob password")]

    /// The versions of a record, newest first, as (operation, version, user).
    private func versions(_ http: TestHTTP, _ path: String, token: String? = nil) async throws -> [(String, String, String?)] {
        let reply = try await http.get("/tables/$history/" + path, token: token)
        guard reply.status == 200, case .array(let results)? = reply.object["results"] else {
            throw TSyncError.failure("history of \(path): \(reply.status) \(reply.text)")
        }
        return results.map { entry in
            let object = entry.objectValue ?? [:]
            return (
                object["operation"]?.stringValue ?? "?", object["item"]?.objectValue?["version"]?.stringValue ?? "?",
                object["user"]?.stringValue
            )
        }
    }

    /// The ids of the table at `at`, with extra query text.
    private func idsAt(_ http: TestHTTP, _ table: String, _ at: String, _ extra: String = "", token: String? = nil) async throws
        -> [String]
    {
        let reply = try await http.get("/tables/$history/\(table)?at=\(QueryString.encode(at))\(extra)", token: token)
        guard reply.status == 200 else { throw TSyncError.failure("\(table) at \(at): \(reply.status) \(reply.text)") }
        return reply.ids
    }

    @Test func describesItselfAndIsOffWithKeepHistoryZero() async throws {
        try await withTestServer { http in
            let reply = try await http.get("/tables/$history")
            #expect(reply.status == 200)
            #expect(reply.object["keepSeconds"] == .int(30 * 86_400))
            #expect(reply.object["keepDeletedSeconds"] == .int(90 * 86_400))
        }
        var off = ServerConfiguration(requiresAuthentication: false)
        off.retention = Retention(history: .zero, deleted: .zero)
        try await withTestServer(off) { http in
            let item = try await http.insert("todo", ["id": "a", "n": 1])
            #expect(try await http.patch("/tables/todo/a", ["n": 2]).status == 200)
            for path in ["/tables/$history", "/tables/$history/todo/a", "/tables/$history/todo?at=\(item["updatedAt"]?.stringValue ?? "")"]
            {
                let reply = try await http.get(path)
                #expect(reply.status == 404, "\(path): \(reply.text)")
                #expect(reply.error == "this server keeps no history")
            }
            #expect(try await http.storedCount("tsync_history") == 0)
            // The normal routes are as they were.
            #expect(try await http.get("/tables/todo/a").object["n"] == 2)
        }
    }

    @Test func everyWriteHasItsVersionWithItsAccount() async throws {
        let configuration = ServerConfiguration()
        try await withTestServer(configuration, accounts: Self.accounts) { http in
            let alice = try await http.login("alice", "alice password")
            let bob = try await http.login("bob", "bob password")
            let inserted = try await http.insert("todo", ["id": "a", "text": "first"], token: alice)
            let updated = try await http.patch("/tables/todo/a", ["text": "second"], token: bob)
            let deleted = try await http.delete("/tables/todo/a", token: alice)
            let undeleted = try await http.post("/tables/todo/a", token: bob)
            // An undelete of a live record writes nothing, so it has no version.
            #expect(try await http.post("/tables/todo/a", token: bob).status == 200)
            // Refused writes have none either.
            #expect(try await http.patch("/tables/todo/a", ["text": "x"], token: bob, headers: ["If-Match": "\"stale\""]).status == 412)
            #expect(try await http.post("/tables/todo", ["id": "a"], token: bob).status == 409)

            let expected: [(String, String?, String)] = [
                ("undelete", undeleted.version, "bob"), ("delete", deleted.version, "alice"), ("update", updated.version, "bob"),
                ("insert", inserted["version"]?.stringValue, "alice"),
            ]
            let found = try await versions(http, "todo/a", token: alice)
            #expect(found.map(\.0) == expected.map(\.0))
            #expect(found.map(\.1) == expected.map { $0.1 ?? "-" })
            #expect(found.map(\.2) == expected.map(\.2))

            // Each item is the record as it was: the delete keeps the body it deleted.
            let reply = try await http.get("/tables/$history/todo/a", token: alice)
            guard case .array(let results)? = reply.object["results"] else { throw TSyncError.failure(reply.text) }
            let items = results.compactMap { $0.objectValue?["item"]?.objectValue }
            #expect(items.map { $0["text"] } == ["second", "second", "second", "first"])
            #expect(items.map { $0["deleted"] } == [false, true, false, false])
            #expect(items.map { $0["id"] } == ["a", "a", "a", "a"])
            #expect(results.first?.objectValue?["updatedAt"] == undeleted.object["updatedAt"])

            // Paging: $top and a Link to the rest.
            let first = try await http.get("/tables/$history/todo/a?$top=3", token: alice)
            #expect((first.object["results"]?.arrayValue ?? []).count == 3)
            let link = try #require(first.link)
            #expect(link.contains("$skip=3") && link.hasSuffix("rel=next"))
            let rest = try await http.get("/tables/$history/todo/a?$top=3&$skip=3", token: alice)
            #expect((rest.object["results"]?.arrayValue ?? []).count == 1)
            #expect(rest.link == nil)
            #expect(try await http.get("/tables/$history/todo/a?$top=5001", token: alice).status == 400)
            // No versions: 404, as a read.
            #expect(try await http.get("/tables/$history/todo/missing", token: alice).status == 404)
            #expect(try await http.get("/tables/$history/todo/a").status == 401)
        }
    }

    @Test func aBatchWritesItsVersionsAndAFailedAtomicBatchNone() async throws {
        try await withTestServer { http in
            try await http.insert("todo", ["id": "a", "n": 1])
            let before = try await http.storedCount("tsync_history")
            #expect(before == 1)
            let failing: JSONValue = [
                "atomic": true,
                "operations": [
                    ["method": "POST", "table": "todo", "item": ["id": "b", "n": 2]],
                    ["method": "PATCH", "table": "todo", "id": "a", "item": ["n": 3]],
                    ["method": "POST", "table": "todo", "item": ["id": "a"]],  // 409: all rolled back
                ],
            ]
            let rolledBack = try await http.post("/tables/$batch", failing)
            #expect(rolledBack.status == 200)
            #expect(try await http.storedCount("tsync_history") == before)
            #expect(try await http.get("/tables/$history/todo/b").status == 404)

            let batch: JSONValue = [
                "operations": [
                    ["method": "POST", "table": "todo", "item": ["id": "b", "n": 2]],
                    ["method": "PATCH", "table": "todo", "id": "a", "item": ["n": 3]],
                    ["method": "PATCH", "table": "todo", "id": "a", "item": ["n": 4]],
                    ["method": "POST", "table": "todo", "item": ["id": "a"]],  // 409: no version
                    ["method": "DELETE", "table": "todo", "id": "b"],
                    ["method": "POST", "table": "notes", "item": ["id": "n"]],
                ]
            ]
            let reply = try await http.post("/tables/$batch", batch)
            let statuses = (reply.object["results"]?.arrayValue ?? []).map { $0.objectValue?["status"] }
            #expect(statuses == [201, 200, 200, 409, 200, 201])
            #expect(try await http.storedCount("tsync_history") == before + 5)
            #expect(try await versions(http, "todo/a").map(\.0) == ["update", "update", "insert"])
            // Two versions of one transaction share their updatedAt: the later is still first.
            #expect(
                try await http.get("/tables/$history/todo/a?$top=1").object["results"]?.arrayValue?.first?.objectValue?["item"]?
                    .objectValue?["n"] == 4)
            #expect(try await versions(http, "todo/b").map(\.0) == ["delete", "insert"])
            #expect(try await versions(http, "notes/n").map(\.0) == ["insert"])
        }
    }

    @Test func historyReadsKeepToTheirUser() async throws {
        let configuration = ServerConfiguration(perUserTables: ["notes"])
        try await withTestServer(configuration, accounts: Self.accounts) { http in
            let alice = try await http.login("alice", "alice password")
            let bob = try await http.login("bob", "bob password")
            let note = try await http.insert("notes", ["id": "n1", "text": "alice's secret"], token: alice)
            try await http.insert("notes", ["id": "n2", "text": "bob's"], token: bob)
            #expect(try await http.patch("/tables/notes/n1", ["text": "still secret"], token: alice).status == 200)
            let at = try #require(note["updatedAt"]?.stringValue)

            let stranger = try await http.get("/tables/$history/notes/n1", token: bob)
            #expect(stranger.status == 404)
            #expect(!stranger.text.contains("secret"))
            #expect(try await versions(http, "notes/n1", token: alice).map(\.0) == ["update", "insert"])
            let now = Timestamp.now().iso8601
            #expect(try await idsAt(http, "notes", now, token: bob) == ["n2"])
            #expect(
                try await idsAt(http, "notes", now, "&__includeDeleted=true&$filter=" + QueryString.encode("id eq 'n1'"), token: bob) == [])
            #expect(try await idsAt(http, "notes", now, token: alice) == ["n1"])
            #expect(try await idsAt(http, "notes", at, token: alice) == ["n1"])
            let counted = try await http.get("/tables/$history/notes?at=\(QueryString.encode(now))&$inlinecount=allpages", token: bob)
            #expect(counted.object["count"] == 1)
            #expect(try await http.get("/tables/$history/notes?at=\(QueryString.encode(now))").status == 401)
        }
    }

    @Test func aTableAsItWasAtATime() async throws {
        let clock = TestClock()
        try await withTestServer(clock: clock.now) { http in
            func stamp(_ item: [String: JSONValue]) -> String { item["updatedAt"]?.stringValue ?? "" }
            let t1 = stamp(try await http.insert("todo", ["id": "a", "n": 1, "s": "one"]))
            try await http.insert("todo", ["id": "b", "n": 2, "s": "two"])
            clock.advance(by: .seconds(10))
            let t2 = stamp(try await http.patch("/tables/todo/a", ["n": 10]).object)
            clock.advance(by: .seconds(10))
            let t3 = stamp(try await http.delete("/tables/todo/b").object)
            clock.advance(by: .seconds(10))
            let t4 = stamp(try await http.post("/tables/todo/b").object)
            clock.advance(by: .seconds(10))
            let t5 = stamp(try await http.insert("todo", ["id": "c", "n": 3, "s": "three"]))
            let before = Timestamp(millisecondsSinceEpoch: (Timestamp(iso8601: t1)?.millisecondsSinceEpoch ?? 0) - 1).iso8601

            #expect(try await idsAt(http, "todo", before) == [])
            #expect(try await idsAt(http, "todo", t1) == ["a"])
            #expect(try await idsAt(http, "todo", t2) == ["a", "b"])
            #expect(try await idsAt(http, "todo", t3) == ["a"])
            #expect(try await idsAt(http, "todo", t3, "&__includeDeleted=true") == ["a", "b"])
            #expect(try await idsAt(http, "todo", t4) == ["a", "b"])
            #expect(try await idsAt(http, "todo", t5) == ["a", "b", "c"])

            // The records as they were, system properties included.
            let atT1 = try await http.get("/tables/$history/todo?at=\(QueryString.encode(t2))&$filter=" + QueryString.encode("id eq 'a'"))
            #expect(atT1.array.first?.objectValue?["n"] == 10)
            let earlier = try await http.get("/tables/$history/todo?at=\(QueryString.encode(t1))")
            #expect(earlier.array.first?.objectValue?["n"] == 1)
            #expect(earlier.array.first?.objectValue?["updatedAt"]?.stringValue == t1)
            let deleted = try await http.get(
                "/tables/$history/todo?at=\(QueryString.encode(t3))&__includeDeleted=true&$filter=" + QueryString.encode("id eq 'b'"))
            #expect(deleted.array.first?.objectValue?["deleted"] == true)

            // $filter is over the state at T, $select and $orderby as in a read, paging with Link.
            #expect(try await idsAt(http, "todo", t2, "&$filter=" + QueryString.encode("n gt 5")) == ["a"])
            #expect(try await idsAt(http, "todo", t1, "&$filter=" + QueryString.encode("n gt 5")) == [])
            #expect(try await idsAt(http, "todo", t5, "&$orderby=" + QueryString.encode("n desc")) == ["a", "c", "b"])
            let selected = try await http.get("/tables/$history/todo?at=\(QueryString.encode(t5))&$select=s")
            #expect(selected.array.compactMap { $0.objectValue?.keys.sorted() } == [["s"], ["s"], ["s"]])
            let page = try await http.get("/tables/$history/todo?at=\(QueryString.encode(t5))&$top=2&$inlinecount=allpages")
            #expect(page.object["count"] == 3)
            let link = try #require(page.link)
            #expect(link.contains("at=") && link.contains("$skip=2") && link.contains("$top=2"))
            let path = String(link.dropFirst().prefix { $0 != ">" }.drop { $0 != "/" }.dropFirst(2).drop { $0 != "/" })
            let next = try await http.get(path)
            #expect(next.object["results"]?.arrayValue?.compactMap { $0.objectValue?["id"] } == ["c"], "\(link) → \(path): \(next.text)")

            // `at` is required, an ISO time, and within the history kept.
            #expect(try await http.get("/tables/$history/todo").status == 400)
            #expect(try await http.get("/tables/$history/todo?at=yesterday").status == 400)
            let tooOld = try await http.get("/tables/$history/todo?at=2001-01-01T00:00:00.000Z")
            #expect(tooOld.status == 400)
            #expect(tooOld.error?.contains("oldest time available is") == true)
        }
    }

    @Test func pruningKeepsEveryRecordsStateAtTheCutoff() async throws {
        let clock = TestClock()
        try await withTestServer(clock: clock.now) { http in
            try await http.insert("todo", ["id": "a", "n": 1])
            try await http.insert("todo", ["id": "quiet", "n": 0])
            clock.advance(by: .seconds(100))
            #expect(try await http.patch("/tables/todo/a", ["n": 2]).status == 200)
            clock.advance(by: .seconds(100))
            let last = try await http.patch("/tables/todo/a", ["n": 3])
            clock.advance(by: .seconds(1))
            let cutoff = Timestamp(millisecondsSinceEpoch: clock.now().millisecondsSinceEpoch - 50_000)
            // Keep 50 s: the first version of `a` is older than the cutoff and not its state at
            // it (the second is), so it goes; `quiet`'s only version stays, however old.
            let retention = Retention(history: .seconds(50), deleted: .zero)
            let report = try await http.storage.maintain(retention, now: clock.now(), seed: false, settle: .zero)
            #expect(report.versionsPruned == 1)
            #expect(try await versions(http, "todo/a").map(\.1) == [last.version ?? "", try await versions(http, "todo/a")[1].1])
            #expect(try await versions(http, "todo/a").count == 2)
            #expect(try await versions(http, "todo/quiet").count == 1)
            #expect(try await idsAt(http, "todo", cutoff.iso8601, "&$filter=" + QueryString.encode("n eq 2 or n eq 0")) == ["a", "quiet"])
            // Again: nothing more to prune.
            #expect(try await http.storage.maintain(retention, now: clock.now(), seed: false, settle: .zero).versionsPruned == 0)
            // Long after: every record keeps its current version.
            clock.advance(by: .seconds(10_000))
            _ = try await http.storage.maintain(retention, now: clock.now(), seed: false, settle: .zero)
            #expect(try await versions(http, "todo/a").map(\.1) == [last.version ?? ""])
            #expect(try await versions(http, "todo/quiet").count == 1)
            // Keeping none removes them all.
            _ = try await http.storage.maintain(Retention(history: .zero, deleted: .zero), now: clock.now(), seed: false, settle: .zero)
            #expect(try await http.storedCount("tsync_history") == 0)
        }
    }

    @Test func recordsStoredWithoutHistoryGetAVersionAtStartUp() async throws {
        try await withTestServer { http in
            http.storage.keepHistory(false)
            try await http.insert("todo", ["id": "a", "n": 1])
            try await http.insert("todo", ["id": "b", "n": 1])
            #expect(try await http.delete("/tables/todo/b").status == 200)
            #expect(try await http.storedCount("tsync_history") == 0)
            http.storage.keepHistory(true)
            let report = try await http.storage.maintain(Retention(), now: .now(), seed: true, settle: .zero)
            #expect(report.seeded == 2)
            #expect(try await versions(http, "todo/a").map { [$0.0, $0.2 ?? "nil"] } == [["insert", "nil"]])
            #expect(try await versions(http, "todo/b").map(\.0) == ["delete"])
            #expect(try await http.storage.maintain(Retention(), now: .now(), seed: true, settle: .zero).seeded == 0)
        }
    }

    @Test func oldTombstonesGoBehindAHorizonThatReadsAnnounce() async throws {
        let clock = TestClock()
        try await withTestServer(clock: clock.now) { http in
            try await http.insert("todo", ["id": "a"])
            try await http.insert("todo", ["id": "b"])
            try await http.insert("other", ["id": "x"])
            let gone = try await http.delete("/tables/todo/a")
            let horizon = try #require(gone.object["updatedAt"]?.stringValue)
            clock.advance(by: .seconds(100))
            let recent = try await http.delete("/tables/todo/b")
            #expect(recent.status == 200)
            #expect(try await http.get("/tables/todo").headers[.deletedHorizon] == nil)
            clock.advance(by: .seconds(10))
            let retention = Retention(history: .seconds(1000), deleted: .seconds(50))
            let report = try await http.storage.maintain(retention, now: clock.now(), seed: false, settle: .zero)
            #expect(report.tombstonesRemoved == 1)
            let page = try await http.get("/tables/todo?__includeDeleted=true")
            #expect(page.ids == ["b"])
            #expect(page.headers[.deletedHorizon] == horizon)
            #expect(try await http.get("/tables/todo?$filter=" + QueryString.encode("id eq 'zz'")).headers[.deletedHorizon] == horizon)
            #expect(try await http.get("/tables/other").headers[.deletedHorizon] == nil)
            // The history still has the deletion while it is within the history kept.
            #expect(try await versions(http, "todo/a").map(\.0) == ["delete", "insert"])
            // Past both: the removed record's versions go too; the horizon stays.
            clock.advance(by: .seconds(2000))
            _ = try await http.storage.maintain(retention, now: clock.now(), seed: false, settle: .zero)
            #expect(try await http.get("/tables/$history/todo/a").status == 404)
            #expect(try await http.get("/tables/todo").headers[.deletedHorizon] != nil)
        }
    }
}

extension JSONValue {
    fileprivate var arrayValue: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }
}
