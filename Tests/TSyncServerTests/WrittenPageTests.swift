import GRDB
import NIOCore
import TSyncModel
import TSyncQuery
import Testing

@testable import TSyncServer

/// SQLite writes a page without `$select` straight from its columns' bytes (`WrittenRecords`):
/// byte for byte what the general writer (`PageRecord.write`) makes of the same rows, including
/// the rows only the general writer can take (text to escape, a body not in tsync's form).
@Suite struct WrittenPageTests {
    @Test func aWrittenPageIsWhatTheGeneralWriterWrites() async throws {
        let database = try TemporaryDatabase()
        defer { database.cleanUp() }
        let storage = try database.open(clock: { Timestamp(millisecondsSinceEpoch: 1_800_000_000_000) })
        let records = [
            Record(id: "a-plain", fields: ["n": 1, "s": "abc"]),
            Record(id: "b-é😀", fields: ["text": "é😀\"\\\n", "nested": ["z": [1, nil], "y": [:]], "a": .double(1e300)]),
            Record(id: "c-empty", fields: [:]),
            Record(id: "d-spaced", fields: ["b": 1]),
            Record(id: "e-quoted", fields: ["b": 2]),
        ]
        for record in records { _ = try await storage.insert(table: "t", record: record, scope: .shared) }
        let table = SQLiteSchema.recordTableName("t")
        try await storage.pool.write { db in
            // A body another writer left spaced and unsorted, and a version that needs escaping.
            try db.execute(sql: #"UPDATE "\#(table)" SET body = ' { "b" : 1 , "a" : 2 } ' WHERE id = 'd-spaced'"#)
            try db.execute(sql: #"UPDATE "\#(table)" SET version = 'v"1\' WHERE id = 'e-quoted'"#)
        }

        let page = try await storage.query(table: "t", RecordQuery(orderBy: [SortKey(field: "id")]), scope: .shared)
        let written = try #require(page.written)
        #expect(page.count == records.count && written.count == records.count)

        let general = try await storage.pool.read { db in
            try Row.fetchAll(db, sql: #"SELECT id, created_at, updated_at, version, deleted, body FROM "\#(table)" ORDER BY id"#)
                .map { row in
                    PageRecord.stored(
                        id: row[0], createdAt: row[1], updatedAt: row[2], version: row[3], deleted: row[4], fields: row[5])
                }
        }
        var expected: [UInt8] = []
        for (index, item) in general.enumerated() {
            if index > 0 { expected.append(UInt8(ascii: ",")) }
            try item.write(to: &expected)
        }
        #expect(String(decoding: written.bytes, as: UTF8.self) == String(decoding: expected, as: UTF8.self))

        // And it reads back as the records.
        let read = try page.records()
        #expect(read.map(\.id) == records.map(\.id))
        #expect(read[1].fields == records[1].fields)
        #expect(read[3].fields == ["a": 2, "b": 1])
        #expect(read[4].system.version == #"v"1\"#)

        // With `$select` the storage keeps the rows, and the route projects them.
        var selecting = RecordQuery(orderBy: [SortKey(field: "id")])
        selecting.select = ["n"]
        let selected = try await storage.query(table: "t", selecting, scope: .shared)
        #expect(selected.written == nil && selected.items.count == records.count)
    }

    /// A pull's page read at once where the request is (`SQLiteStorage.quickQuery`) is the page
    /// the general way reads, byte for byte, over records that take either writer: text above
    /// ASCII, text to escape in the fields and in the system properties, a spaced body, an empty
    /// one, deleted records; on the first page, from a checkpoint in the middle, and past the end;
    /// whole and with `$select`.
    @Test func aQuickPageIsTheGeneralPage() async throws {
        let database = try TemporaryDatabase()
        defer { database.cleanUp() }
        let storage = try database.open(clock: { Timestamp(millisecondsSinceEpoch: 1_800_000_000_000) })
        let records = [
            Record(id: "a-plain", fields: ["n": 1, "s": "abc"]),
            Record(id: "b-é😀", fields: ["text": "é😀\"\\\n\u{1}", "nested": ["z": [1, nil], "y": [:]], "a": .double(1e300)]),
            Record(id: "c-empty", fields: [:]),
            Record(id: "d-spaced", fields: ["b": 1]),
            Record(id: "e-quoted", fields: ["b": 2]),
            Record(id: "f-deleted", fields: ["gone": true]),
            Record(id: "g-long-text-with-every-kind", fields: ["t": .string(String(repeating: "abcdefg\u{7F}", count: 9))]),
        ]
        for record in records { _ = try await storage.insert(table: "t", record: record, scope: .shared) }
        _ = try await storage.modify(table: "t", id: "f-deleted", change: .softDelete, expectedVersion: .any, scope: .shared)
        let table = SQLiteSchema.recordTableName("t")
        try await storage.pool.write { db in
            try db.execute(sql: #"UPDATE "\#(table)" SET body = ' { "b" : 1 , "a" : 2 } ' WHERE id = 'd-spaced'"#)
            try db.execute(sql: #"UPDATE "\#(table)" SET version = 'v"1\' WHERE id = 'e-quoted'"#)
        }
        let order = [SortKey(field: "updatedAt"), SortKey(field: "id")]
        let rows = try await storage.pool.read { db in
            try Row.fetchAll(db, sql: #"SELECT updated_at, id FROM "\#(table)" ORDER BY updated_at, id"#).map {
                row -> (Timestamp, String) in
                (try #require(Timestamp(iso8601: row[0])), row[1])
            }
        }
        func checkpoint(after index: Int) -> FilterExpression {
            let (time, id) = rows[index]
            let at = FilterExpression.literal(.dateTime(time))
            return .binary(
                .and, .binary(.ge, .field("updatedAt"), at),
                .binary(
                    .or, .binary(.gt, .field("updatedAt"), at),
                    .binary(.and, .binary(.eq, .field("updatedAt"), at), .binary(.gt, .field("id"), .literal(.string(id))))))
        }
        var compared = 0
        for filter in [nil, checkpoint(after: 0), checkpoint(after: 3), checkpoint(after: rows.count - 1)] {
            for (top, select) in [(1, nil), (3, nil), (1000, nil), (1000, ["text", "deleted", "updatedAt", "b"])] {
                let query = RecordQuery(filter: filter, orderBy: order, top: top, select: select, includeDeleted: true)
                let quick = try #require(try await storage.quickQuery(table: "t", query, scope: .shared, client: "address 127.0.0.1"))
                let general = try await storage.query(table: "t", query, scope: .shared)
                #expect(quick.count == general.count)
                #expect(quick.deletedHorizon == general.deletedHorizon)
                let quickBody = try TableRoutes.body(quick, query).bytes
                let generalBody = try TableRoutes.body(general, query).bytes
                #expect(quickBody == generalBody, "\(String(buffer: quickBody))")
                compared += quick.count
            }
        }
        #expect(compared > records.count, "the pages held records")
        // Pages from different checkpoints are one statement (GRDB's cache of them stays small).
        let texts = try [0, 3].map { index in
            try storage.statements(
                sqlName: table, RecordQuery(filter: checkpoint(after: index), orderBy: order, top: 10, includeDeleted: true), scope: .shared
            ).0
        }
        #expect(texts[0] == texts[1], "\(texts)")
        // A table never written: the empty page.
        let none = RecordQuery(orderBy: order, top: 10, includeDeleted: true)
        #expect(try await storage.quickQuery(table: "nothing", none, scope: .shared, client: nil)?.count == 0)
    }

    /// Only reads that are short by their form are read at once: any other page takes the
    /// general way (its deadline, its wait for a share), other filters and counts among them.
    @Test func onlyAPullsPageIsReadAtOnce() throws {
        let order = [SortKey(field: "updatedAt"), SortKey(field: "id")]
        let at = FilterExpression.literal(.dateTime(Timestamp(millisecondsSinceEpoch: 1_800_000_000_000)))
        let tie = FilterExpression.binary(.and, .binary(.eq, .field("updatedAt"), at), .binary(.gt, .field("id"), .literal(.string("x"))))
        let after = FilterExpression.binary(.or, .binary(.gt, .field("updatedAt"), at), tie)
        let checkpoint = FilterExpression.binary(.and, .binary(.ge, .field("updatedAt"), at), after)
        let pull = RecordQuery(filter: checkpoint, orderBy: order, top: 1000, includeDeleted: true)
        #expect(SQLiteStorage.isShort(pull, scope: .shared))
        #expect(SQLiteStorage.isShort(RecordQuery(orderBy: order, top: 50, includeDeleted: true), scope: .shared))
        var others: [(RecordQuery, OwnerScope, String)] = []
        func other(_ change: (inout RecordQuery) -> Void, scope: OwnerScope = .shared, _ why: String) {
            var query = pull
            change(&query)
            others.append((query, scope, why))
        }
        other({ $0.includeDeleted = false }, "live records only")
        other({ $0.includeTotalCount = true }, "a count")
        other({ $0.skip = 5 }, "$skip")
        other({ $0.top = nil }, "no $top")
        other({ $0.top = 1001 }, "a larger page")
        other({ $0.orderBy = [SortKey(field: "id")] }, "another order")
        other({ $0.orderBy = [SortKey(field: "updatedAt", descending: true), SortKey(field: "id")] }, "descending")
        other({ $0.filter = after }, "the checkpoint without its bound")
        other({ $0.filter = .binary(.and, checkpoint, .binary(.eq, .field("n"), .literal(.int(1)))) }, "the client's filter besides")
        other({ $0.filter = .binary(.eq, .field("n"), .literal(.int(1))) }, "another filter")
        other(
            {
                $0.filter = .binary(
                    .and, .binary(.ge, .field("updatedAt"), .literal(.dateTime(Timestamp(millisecondsSinceEpoch: 1)))), after)
            }, "a bound below the checkpoint")
        other({ _ in }, scope: .owner("alice"), "a per-user table")
        for (query, scope, why) in others {
            #expect(!SQLiteStorage.isShort(query, scope: scope), "\(why)")
        }
    }

    /// The scan of a column's text eight bytes at a time finds what a byte at a time finds:
    /// every byte JSON escapes and every byte above ASCII, at every place of texts of every
    /// length up to three words and a tail.
    @Test func theWordScanFindsWhatAByteScanFinds() {
        let specials: [UInt8] = [0, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x7F, 0x80, 0xC3, 0xFF]
        for length in 0...27 {
            for place in 0..<max(length, 1) {
                for special in specials {
                    var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    if length > 0 { bytes[place] = special }
                    for escapes in [true, false] {
                        let found = bytes.withUnsafeBufferPointer { StoredRecordWriter.scan($0, escapes: escapes) }
                        let escaped = bytes.contains { (byte: UInt8) -> Bool in byte < 0x20 || byte == 0x22 || byte == 0x5C }
                        let escape = escapes && escaped
                        let ascii = bytes.allSatisfy { (byte: UInt8) -> Bool in byte < 0x80 }
                        #expect(found.escape == escape && found.ascii == ascii, "\(bytes) escapes: \(escapes)")
                    }
                }
            }
        }
    }
}
