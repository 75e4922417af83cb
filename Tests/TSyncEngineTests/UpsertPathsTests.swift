import GRDB
import Testing
import TSyncModel

@testable import TSyncEngine

/// `upsert` of records in the store's form (what `tsync upsert` reads from CSV and JSON, through
/// `NewRecords`) against the general way (objects, one record at a time): the same result, and
/// the same store after it, row for row, or the same error.
@Suite struct UpsertPathsTests {
    /// Server records (with a version: a first change saves the base), local ones, one with a
    /// pending delete, and one in flight.
    private func seeded() throws -> TemporaryStore {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.applyServerPage(
            table: "todo",
            records: [
                LocalStore.serverRecord("s1", ["text": "server", "n": 1], version: "v1"),
                LocalStore.serverRecord("s2", ["text": "two", "tags": ["x"]], version: "v1"),
                LocalStore.serverRecord("gone", ["text": "bye"], version: "v1"),
            ])
        try store.insert(table: "todo", objects: [["id": "a", "text": "one", "n": 1], ["id": "b", "meta": ["k": "v"]]])
        try store.delete(table: "todo", ids: ["gone"])
        return temporary
    }

    /// Every row of the tables an upsert writes, but the times a change was queued at.
    private func rows(_ store: LocalStore) throws -> [String] {
        try store.rowsForComparison(also: [("tables", "SELECT name FROM tables ORDER BY name")])
    }

    private func compare(csv text: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let records = try NewRecords.csv(text, requiringIDs: true)
        guard case .prepared = records.form else {
            Issue.record("the CSV was not read into the store's form", sourceLocation: sourceLocation)
            return
        }
        try compare(records, objects: try CSVRecords.objects(from: text), sourceLocation: sourceLocation)
    }

    /// `anyForm`: JSON the fast reader may leave to the general way (numbers as 1.0, escapes).
    private func compare(json text: String, anyForm: Bool = false, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let records = try NewRecords.json(Array(text.utf8), requiringIDs: true)
        if !anyForm, case .objects = records.form {
            Issue.record("the JSON was not read into the store's form", sourceLocation: sourceLocation)
        }
        try compare(records, objects: try RecordInput.objects(from: Array(text.utf8)), sourceLocation: sourceLocation)
    }

    private func compare(_ records: NewRecords, objects: [[String: JSONValue]], sourceLocation: SourceLocation) throws {
        let general = try seeded()
        let fast = try seeded()
        let expected = Result { () throws(TSyncError) in try general.store.upsert(table: "todo", objects: objects) }
        let got = Result { () throws(TSyncError) in try fast.store.upsert(table: "todo", records: records) }
        switch (expected, got) {
        case (.success(let expected), .success(let got)): #expect(got == expected, sourceLocation: sourceLocation)
        case (.failure(let expected), .failure(let got)): #expect(got.message == expected.message, sourceLocation: sourceLocation)
        default: Issue.record("general: \(expected); store's form: \(got)", sourceLocation: sourceLocation)
        }
        #expect(try rows(fast.store) == rows(general.store), sourceLocation: sourceLocation)
    }

    @Test func newChangedAndUnchangedRecordsInAnyOrder() throws {
        try compare(
            csv: """
                id,text,n
                new1,hello,1
                a,one,1
                s1,changed,1
                new2,,
                b,given,
                s2,two,
                new3,"quoted, text",007
                """)
        // Run again: everything unchanged, nothing written.
        try compare(csv: "id,text,n\na,one,1\ns1,server,1\n")
    }

    @Test func nestedValuesNumbersAndText() throws {
        try compare(
            json: """
                {"id": "s2", "tags": ["x"], "text": "two"}
                {"id": "s1", "n": 2, "x": {"deep": [1, 2, {"z": null}]}}
                {"id": "new", "text": "plain", "n": -3, "createdAt": "ignored"}
                {"id": "b", "meta": {"k": "v"}}
                {"id": "b2", "meta": {"k": "v", "j": [true, false]}}
                """)
        try compare(
            json: """
                {"id": "s1", "n": 1.0}
                {"id": "u\\u00e9", "text": "caf\\u00e9", "n": 1e3}
                {"id": "a", "text": "one", "n": 1}
                """, anyForm: true)
    }

    @Test func idsGivenTwiceCountWhereTheyFirstAppear() throws {
        try compare(csv: "id,n\na,1\nnew,1\na,2\nnew,2\ns1,1\ns1,5\n")
        try compare(json: #"[{"id": "s2", "text": "two"}, {"id": "s2", "text": "changed"}, {"id": "a", "n": 9}]"#)
    }

    @Test func aPendingDeleteAndManyChunks() throws {
        try compare(csv: "id,text\nx,1\ngone,back\ny,2\n")
        // More records than a chunk, with changed and unchanged ones between new ids.
        let known = [63: "a,7", 64: "s1,1", 130: "s2,", 131: "b,4"]
        var csv = "id,n\n"
        for index in 0..<300 { csv += (known[index] ?? "r\(index),\(index)") + "\n" }
        try compare(csv: csv)
    }

    /// Into a table with no records yet the store's form looks nothing up; a second run of the same
    /// input then finds every record unchanged.
    @Test func intoANewTableAndAgain() throws {
        let text = "id,text,n\nx,one,1\ny,\"two, quoted\",2\n"
        let general = try seeded()
        let fast = try seeded()
        for run in 1...2 {
            let expected = try general.store.upsert(table: "fresh", objects: try CSVRecords.objects(from: text))
            let got = try fast.store.upsert(table: "fresh", records: try NewRecords.csv(text, requiringIDs: true))
            #expect(got == expected)
            #expect(run == 1 ? got.inserted == ["x", "y"] : got.unchanged == ["x", "y"])
            #expect(try rows(fast.store) == rows(general.store))
        }
    }

    /// The store's form turns CHECK constraints off for its transaction, as a streamed insert
    /// does; after it the store's connection checks again.
    @Test func anUpsertLeavesTheStoresChecksOn() throws {
        let temporary = try seeded()
        let store = temporary.store
        _ = try store.upsert(table: "todo", records: try NewRecords.csv("id,n\nnew,1\na,2\n", requiringIDs: true))
        #expect(throws: TSyncError.self) {
            try store.write { db in try db.execute(sql: "UPDATE operations SET kind = 'bogus'") }
        }
    }

    /// A record without an id is not given one: the general way says so.
    @Test func aRecordWithoutAnIDGoesTheGeneralWay() throws {
        for text in ["id,n\n,1\n", "n\n1\n"] {
            guard case .objects = try NewRecords.csv(text, requiringIDs: true).form else {
                Issue.record("\(text)")
                continue
            }
        }
        for text in [#"{"n": 1}"#, #"{"id": null, "n": 1}"#] {
            guard case .objects = try NewRecords.json(Array(text.utf8), requiringIDs: true).form else {
                Issue.record("\(text)")
                continue
            }
        }
        #expect(throws: TSyncError.self) {
            try seeded().store.upsert(table: "todo", records: try NewRecords.csv("id,n\n,1\n", requiringIDs: true))
        }
    }
}
