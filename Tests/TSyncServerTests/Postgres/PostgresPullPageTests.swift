import Testing
import TSyncModel
import TSyncQuery

@testable import TSyncServer

/// A page of tsync's pull walk is one call of `tsync_pull_page` on PostgreSQL (`PullPage`,
/// docs/DESIGN.md §10): it must send what the general path sends, byte for byte, and it takes
/// nothing from its text that it cannot check.
// Needs a PostgreSQL server: TSYNC_TEST_POSTGRES_URL (scripts/test.sh starts one).
@Suite(.enabled(if: PostgresTestDatabase.isConfigured, "TSYNC_TEST_POSTGRES_URL is not set: no PostgreSQL to test against"))
struct PostgresPullPageTests {
    /// A walk in pages of 3 over records of every kind: a batch with one timestamp, deleted
    /// records, fields to escape, a row written before schema step 3 (no stored text), a version
    /// with a quote (the general writer's case), and a per-user table. Each page comes from the
    /// call (it answers, never nil) and equals the general path's page.
    @Test func pagesInOneCallAreTheGeneralPathsPages() async throws {
        try await PostgresTestDatabase.withFreshDatabase { url in
            try await PostgresDatabase.withDatabase(url: url, maximumConnections: 4, logger: quietLogger) { database in
                // Pages read ahead wait for as long as the test runs, however loaded the machine.
                let inOneCall = PostgresStorage(
                    database: database, clock: Timestamp.now, readAhead: PullReadAhead(lifetime: .seconds(3600)))
                let general = PostgresStorage(database: database, clock: Timestamp.now, readsPagesInOneCall: false)
                try await Self.fill(inOneCall, database)
                for (table, scope, includeDeleted, expected) in [
                    ("t", OwnerScope.shared, true, 15), ("t", .shared, false, 13), ("p", .owner("alice"), true, 4),
                    ("p", .owner("bob"), false, 1),
                ] {
                    var start = PullPage.Start(updatedAt: "", id: "")
                    let taken = inOneCall.readAhead.pagesTaken.load(ordering: .relaxed)
                    var pages = 0
                    var ids: [String] = []
                    while true {
                        var query = RecordQuery(orderBy: PullWalk.order, top: 3, includeDeleted: includeDeleted)
                        if !start.id.isEmpty {
                            query.filter = try ODataParser.parseFilter(
                                StorageReader.filterText(after: start.updatedAt, start.id, .tsyncs))
                        }
                        let walk = try #require(PullPage.walk(table: table, query, scope: scope))
                        #expect(walk.start == start)
                        let called = try #require(try await PullPage.read(database, walk), "the call answered")
                        let page = try await inOneCall.query(table: table, query, scope: scope)
                        let generalPage = try await general.query(table: table, query, scope: scope)
                        pages += 1
                        #expect(called.written.bytes == generalPage.written?.bytes, "\(table) after \(start)")
                        #expect(page.written?.bytes == generalPage.written?.bytes)
                        let records = try page.records()
                        ids += records.map(\.id)
                        guard records.count == 3, let last = records.last else { break }
                        start = PullPage.Start(updatedAt: last.system.updatedAt?.iso8601 ?? "", id: last.id)
                    }
                    #expect(ids.count == expected, "\(table) \(scope) includeDeleted \(includeDeleted): \(ids)")
                    // Every page after the first was read ahead when the page before it came back full.
                    #expect(inOneCall.readAhead.pagesTaken.load(ordering: .relaxed) - taken == pages - 1)
                    #expect(Set(ids).count == ids.count, "each record once")
                }
            }
        }
    }

    /// The function reads its page with a snapshot taken after it looked at the writers, so it
    /// needs READ COMMITTED; under another isolation it refuses rather than answer.
    @Test func refusesToRunOutsideReadCommitted() async throws {
        try await PostgresTestDatabase.withFreshDatabase { url in
            try await PostgresDatabase.withDatabase(url: url, maximumConnections: 2, logger: quietLogger) { database in
                let storage = PostgresStorage(database: database, clock: Timestamp.now)
                _ = try await storage.insert(table: "t", record: Record(id: "a", fields: [:]), scope: .shared)
                var answer = "answered"
                do {
                    try await database.transaction { transaction in
                        try await transaction.execute(PostgresStatement("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"))
                        try await transaction.execute(
                            PostgresStatement("SELECT page FROM tsync_pull_page('t', 1, 1, NULL, true, '', '', 10)"))
                        return .rollback(())
                    }
                } catch let error as PostgresServerError {
                    answer = error.message
                }
                #expect(answer.contains("needs READ COMMITTED"), "\(answer)")
            }
        }
    }

    // MARK: - Helpers

    /// Records of every kind in tables "t" (shared) and "p" (per user).
    private static func fill(_ storage: PostgresStorage, _ database: PostgresDatabase) async throws {
        let batch = (0..<8).map { index in
            RecordWrite(table: "t", action: .insert(Record(id: "b\(index)", fields: ["n": .int(Int64(index))])), scope: .shared)
        }
        #expect(try await storage.write(batch, atomic: true).allSatisfy { $0.succeeded })
        let fields: [String: JSONValue] = [
            "quote": .string("say \"hi\" \\ back"), "control": .string("a\u{01}b\tc\n"), "accents": .string("é ß 日本 🎉"),
            "nested": .object(["list": .array([.int(1), .double(2.5), .null, .bool(true)])]),
        ]
        for index in 0..<5 {
            _ = try await storage.insert(table: "t", record: Record(id: "s\(index)", fields: fields), scope: .shared)
        }
        for id in ["b3", "s1"] {
            let deleted = try await storage.write(
                [RecordWrite(table: "t", action: .modify(id: id, change: .softDelete, expected: .any), scope: .shared)], atomic: false)
            #expect(deleted.allSatisfy { $0.succeeded })
        }
        // Written by hand: a row from before the stored text, and a version the writer must escape.
        let stamp = Timestamp.now().iso8601
        for (id, version, bodyText) in [("old", "v1", "NULL"), ("quoted", #"v"2"#, #"'{"k":"v"}'"#)] {
            var insert = PostgresStatement(
                "INSERT INTO tsync_records (table_name, id, created_at, updated_at, version, deleted, body, body_text) VALUES ('t', ")
            insert.append(
                insert.bind(id) + ", " + insert.bind(stamp) + ", " + insert.bind(stamp) + ", " + insert.bind(version)
                    + #", false, '{"k": "v", "n": 1.50}'::jsonb, "# + bodyText + ")")
            try await database.rows(insert)
        }
        for (id, owner) in [("a1", "alice"), ("a2", "alice"), ("a3", "alice"), ("a4", "alice"), ("x1", "bob"), ("x2", "bob")] {
            _ = try await storage.insert(table: "p", record: Record(id: id, fields: ["owner": .string(owner)]), scope: .owner(owner))
        }
        let bobs = try await storage.write(
            [RecordWrite(table: "p", action: .modify(id: "x2", change: .softDelete, expected: .any), scope: .owner("bob"))],
            atomic: false)
        #expect(bobs.allSatisfy { $0.succeeded })
    }
}

/// The walk is recognized from tsync's page filter only, and a page's text is used only when it
/// reads as the function writes it.
struct PullPageTextTests {
    @Test func theWalkIsTsyncsPagesOnly() throws {
        let walk = RecordQuery(orderBy: PullWalk.order, top: 50, includeDeleted: true)
        #expect(
            PullPage.walk(table: "Items", walk, scope: .owner("ann"))
                == PullPage.Walk(table: "items", owner: "ann", includeDeleted: true, start: PullPage.Start(updatedAt: "", id: ""), top: 50))
        let stamp = "2026-11-26T10:37:09.125Z"
        var after = walk
        after.filter = try ODataParser.parseFilter(StorageReader.filterText(after: stamp, "it's", .tsyncs))
        #expect(PullPage.walk(table: "t", after, scope: .shared)?.start == PullPage.Start(updatedAt: stamp, id: "it's"))

        var others: [RecordQuery] = []
        for change in [
            { (query: inout RecordQuery) in query.skip = 3 }, { $0.select = ["id"] }, { $0.includeTotalCount = true },
            { $0.orderBy = [SortKey(field: "updatedAt")] }, { $0.top = nil },
            { $0.filter = try? ODataParser.parseFilter(StorageReader.filterText(after: stamp, "x", .bare)) },
            { $0.filter = try? ODataParser.parseFilter("text eq 'a'") },
            {
                $0.filter = try? ODataParser.parseFilter(
                    "updatedAt ge datetimeoffset'\(stamp)' and (updatedAt gt datetimeoffset'\(stamp)' "
                        + "or updatedAt eq datetimeoffset'2026-11-26T10:37:09.126Z' and id gt 'x')")
            },
            { $0.filter = try? ODataParser.parseFilter("(done eq true) and (\(StorageReader.filterText(after: stamp, "x", .tsyncs)))") },
        ] {
            var query = after
            change(&query)
            others.append(query)
        }
        for query in others {
            #expect(PullPage.walk(table: "t", query, scope: .shared) == nil, "\(query)")
        }
    }

    @Test func aPageTextIsWrittenAsTheGeneralPathWritesIt() throws {
        let text = Self.text([
            ["a", "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.001Z", "v1", "f", #"{"n":1}"#],
            ["b", "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.001Z", "v2", "t", "{}"],
            ["c", "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.002Z", "v3", "fj", #"{"k": "v", "n": 1.50}"#],
        ])
        let page = try #require(try Self.page(text, top: 3))
        #expect(page.last == PullPage.Start(updatedAt: "2026-01-01T00:00:00.002Z", id: "c"))
        let written = page.written
        #expect(written.count == 3)
        var expected = WrittenRecords()
        try expected.append(
            .stored(
                id: "a", createdAt: "2026-01-01T00:00:00.000Z", updatedAt: "2026-01-01T00:00:00.001Z", version: "v1", deleted: false,
                fields: #"{"n":1}"#))
        try expected.append(
            .stored(
                id: "b", createdAt: "2026-01-01T00:00:00.000Z", updatedAt: "2026-01-01T00:00:00.001Z", version: "v2", deleted: true,
                fields: "{}"))
        try expected.append(
            .parsed(
                try PostgresStorage.record(
                    id: "c", createdAt: "2026-01-01T00:00:00.000Z", updatedAt: "2026-01-01T00:00:00.002Z", version: "v3", deleted: false,
                    body: #"{"k": "v", "n": 1.50}"#)))
        #expect(String(decoding: written.bytes, as: UTF8.self) == String(decoding: expected.bytes, as: UTF8.self))
    }

    /// Text the function would not write: the general path answers instead.
    @Test func aPageTextNotAsTheFunctionWritesItIsRefused() throws {
        let first = ["a", "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.001Z", "v1", "f", "{}"]
        let cases: [(String, [UInt8], Int)] = [
            ("five columns", Self.text([Array(first.prefix(5))]), 5),
            ("seven columns", Self.text([first + ["{}"]]), 5),
            ("a column separator in the body", Self.text([Array(first.prefix(5)) + ["{\u{1F}}"]]), 5),
            ("unknown flags", Self.text([Array(first.prefix(4)) + ["x", "{}"]]), 5),
            ("flags too long", Self.text([Array(first.prefix(4)) + ["fjj", "{}"]]), 5),
            ("ids out of order", Self.text([["b"] + first.dropFirst(), first]), 5),
            ("times out of order", Self.text([first, ["b", first[1], "2026-01-01T00:00:00.000Z"] + first.dropFirst(3)]), 5),
            ("one record twice", Self.text([first, first]), 5),
            ("more than asked for", Self.text([first, ["b"] + first.dropFirst()]), 1),
        ]
        for (name, text, top) in cases {
            #expect(try Self.page(text, top: top) == nil, "\(name)")
        }
        #expect(try Self.page(Self.text([first, ["b"] + first.dropFirst()]), top: 2)?.written.count == 2)
    }

    private static func text(_ records: [[String]]) -> [UInt8] {
        Array(records.map { $0.joined(separator: "\u{1F}") }.joined(separator: "\u{1E}").utf8)
    }

    private static func page(_ text: [UInt8], top: Int) throws -> PullPage.Page? {
        try text.withUnsafeBufferPointer { try PullPage.page($0, top: top) }
    }
}
