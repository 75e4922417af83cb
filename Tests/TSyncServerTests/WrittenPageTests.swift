import GRDB
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
}
