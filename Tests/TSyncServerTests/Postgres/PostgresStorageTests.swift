import Testing
import TSyncModel
import TSyncQuery

@testable import TSyncServer

/// What is particular to the PostgreSQL backend, below the HTTP suite that both backends share.
// Needs a PostgreSQL server: TSYNC_TEST_POSTGRES_URL (scripts/test.sh starts one).
@Suite(.enabled(if: PostgresTestDatabase.isConfigured, "TSYNC_TEST_POSTGRES_URL is not set: no PostgreSQL to test against"))
struct PostgresStorageTests {
    /// Bodies are jsonb: values keep their JSON kind and integers beyond a double's precision stay exact.
    @Test func bodiesRoundTripThroughJSONB() async throws {
        try await TestBackend.postgres.withFreshStorage { storage in
            let fields: [String: JSONValue] = [
                "big": .int(9_007_199_254_740_993), "real": .double(2.5), "whole": .double(2), "text": "é😀\"\\",
                "nested": ["a": [1, nil, true]], "empty": [:],
            ]
            guard case .inserted = try await storage.insert(table: "kinds", record: Record(id: "k", fields: fields), scope: .shared)
            else { Issue.record("insert failed"); return }
            let stored = try #require(try await storage.record(table: "kinds", id: "k", scope: .shared))
            #expect(stored.fields == fields)
            let query = RecordQuery(filter: try ODataParser.parseFilter("big eq 9007199254740993"))
            #expect(try await storage.query(table: "kinds", query, scope: .shared).records().map(\.id) == ["k"])
        }
    }

    /// A batch reads and changes its records one by one (through the primary key, then by
    /// address), however stale the planner's statistics: on a table just filled (never
    /// analyzed) a batch's locked read and `UPDATE` were planned as reads of the whole table,
    /// in each batch of a push. The records this batch inserted are changed by id.
    @Test func aBatchReadsItsRecordsOneByOne() async throws {
        try await TestBackend.postgres.withFreshStorage { storage in
            let postgres = try #require(storage as? PostgresStorage)
            // One more than are looked up one by one: this batch, and the update of all of them
            // below, look them up as a set.
            let ids = (0...PostgresStorage.idsLookedUpOneByOne).map { "r\($0)" }
            let inserts = ids.map { RecordWrite(table: "items", action: .insert(Record(id: $0, fields: ["n": 1])), scope: .shared) }
            let inserted = try await postgres.write(inserts, atomic: false)
            #expect(inserted.allSatisfy { $0.succeeded })
            for batch in [Array(ids[1000..<2000]), ["r7", "r8"]] {
                let plans = try await postgres.batchWritePlans(table: "items", ids: batch).joined(separator: " | ")
                #expect(plans.contains("Index Scan using tsync_records_pkey") && plans.contains("Tid Scan on tsync_records"), "\(plans)")
                #expect(!plans.contains("Seq Scan on tsync_records") && !plans.contains("Bitmap Heap Scan on tsync_records"), "\(plans)")
            }
            let mixed = try await postgres.batchWritePlans(table: "items", ids: ["r1", "r2"], inserted: ["r2"])
            #expect(mixed.filter { $0.hasPrefix("Update on tsync_records") }.count == 2, "\(mixed)")
            let updates = zip(ids, inserted).map { id, outcome in
                var version = ""
                if case .inserted(let record) = outcome { version = record.system.version ?? "" }
                return RecordWrite(
                    table: "items", action: .modify(id: id, change: .update(["n": 2]), expected: .oneOf([version])), scope: .shared)
            }
            #expect(try await postgres.write(updates, atomic: false).allSatisfy(\.succeeded))
            for id in ["r0", "r2500", ids[ids.count - 1]] {
                #expect(try await postgres.record(table: "items", id: id, scope: .shared)?.fields["n"] == 2)
            }
        }
    }

    /// A page sends the text tsync stored, as on SQLite, not jsonb's own form (which orders keys by
    /// length and writes 1e300 as 301 digits); rows stored before that text was kept are parsed.
    @Test func pagesAreAnsweredFromTheStoredText() async throws {
        try await TestBackend.postgres.withFreshStorage { storage in
            let fields: [String: JSONValue] = [
                "bb": 1, "a": .double(1e300), "whole": .double(2), "text": "é😀\"\\", "nested": ["z": [1, nil], "y": [:]],
            ]
            for id in ["p", "q"] {
                guard case .inserted = try await storage.insert(table: "t", record: Record(id: id, fields: fields), scope: .shared)
                else { Issue.record("insert failed"); return }
            }
            guard
                case .modified = try await storage.modify(
                    table: "t", id: "q", change: .update(["bb": 2]), expectedVersion: .any, scope: .shared)
            else { Issue.record("update failed"); return }

            // The page is written out from the rows' bytes (`WrittenRecords`), as on SQLite.
            func page() async throws -> (records: [Record], text: String) {
                let page = try await storage.query(
                    table: "t", RecordQuery(orderBy: try ODataParser.parseOrderBy("id")), scope: .shared)
                let written = try #require(page.written)
                #expect(page.items.isEmpty && written.count == 2)
                return (try page.records(), String(decoding: written.bytes, as: UTF8.self))
            }
            let (records, text) = try await page()
            #expect(records.map { $0.fields["bb"] } == [1, 2], "the update's text is the one sent")
            #expect(records[0].fields == fields)
            // The system properties, then the fields' text as tsync wrote it (keys in its order, 1e300, 2.0).
            #expect(text.hasPrefix(#"{"id":"p","createdAt":"#), "\(text)")
            #expect(text.contains(#"},{"id":"q","createdAt":"#), "\(text)")
            for record in records {
                #expect(text.contains("," + JSONSerializer.string(.object(record.fields)).dropFirst()), "\(text)")
            }

            // A row written before migration 3 has no text: parsed from jsonb, the same answer.
            let postgres = try #require(storage as? PostgresStorage)
            try await postgres.database.rows(PostgresStatement("UPDATE tsync_records SET body_text = NULL WHERE id = 'p'"))
            let mixed = try await page()
            #expect(mixed.records == records)
            #expect(try JSONParser.parse("[" + mixed.text + "]") == (try JSONParser.parse("[" + text + "]")))
        }
    }

    @Test func valuesPostgreSQLCannotHoldAreTheClientsMistake() async throws {
        try await withTestServer(backends: [.postgres]) { http in
            let insert = try await http.post("/tables/t", ["id": "nul", "text": "a\u{0}b"])
            #expect(insert.status == 400, "\(insert.text)")
            #expect(insert.error?.contains("U+0000") == true)
            for item: JSONValue in [["id": "key", "a\u{0}b": 1], ["id": "deep", "list": [1, ["x": "\u{0}"]]]] {
                #expect(try await http.post("/tables/t", item).status == 400, "\(item)")
            }
            // A backslash and "u0000" are six characters PostgreSQL stores like any others.
            let escaped = try await http.post("/tables/t", ["id": "text", "text": "a\\u0000b"])
            #expect(escaped.status == 201, "\(escaped.text)")
            #expect(try await http.get("/tables/t/text").object["text"] == "a\\u0000b")
            try await http.insert("t", ["id": "ok", "text": "ab"])
            let patch = try await http.patch("/tables/t/ok", ["text": "a\u{0}b"])
            #expect(patch.status == 400, "\(patch.text)")
            let query = try await http.get("/tables/t?$filter=" + QueryString.encode("text eq 'a\u{0}b'"))
            #expect(query.status == 400, "\(query.text)")
            #expect(query.error?.contains("SELECT") == false, "no SQL reaches the client")
            #expect(try await http.get("/tables/t/ok").object["text"] == "ab", "the failed patch changed nothing")
        }
    }

    /// A read of a table never written is empty, not an error: there is no DDL per table.
    @Test func unknownTablesReadAsEmpty() async throws {
        try await TestBackend.postgres.withFreshStorage { storage in
            let page = try await storage.query(table: "never", RecordQuery(includeTotalCount: true), scope: .shared)
            #expect(page.items.isEmpty)
            #expect(page.totalCount == 0)
            #expect(try await storage.record(table: "never", id: "x", scope: .shared) == nil)
            let outcome = try await storage.modify(table: "never", id: "x", change: .softDelete, expectedVersion: .any, scope: .shared)
            guard case .notFound = outcome else { Issue.record("modify of a missing record: \(outcome)"); return }
        }
    }

    /// A write that changes nothing (a failed precondition) leaves the table's clock alone.
    @Test func refusedWritesDoNotAdvanceTheClock() async throws {
        let now = Timestamp(millisecondsSinceEpoch: 1_800_000_000_000)
        try await TestBackend.postgres.withFreshStorage(clock: { now }) { storage in
            guard case .inserted(let record) = try await storage.insert(table: "t", record: Record(id: "a", fields: [:]), scope: .shared)
            else { Issue.record("insert failed"); return }
            _ = try await storage.insert(table: "t", record: Record(id: "a", fields: [:]), scope: .shared)
            _ = try await storage.modify(table: "t", id: "a", change: .update(["n": 1]), expectedVersion: .oneOf(["stale"]), scope: .shared)
            guard case .inserted(let next) = try await storage.insert(table: "t", record: Record(id: "b", fields: [:]), scope: .shared)
            else { Issue.record("insert failed"); return }
            #expect(record.system.updatedAt == now)
            #expect(next.system.updatedAt == Timestamp(millisecondsSinceEpoch: now.millisecondsSinceEpoch + 1))
        }
    }
}
