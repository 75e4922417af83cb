import Testing
import TSyncModel
import TSyncQuery

@testable import TSyncEngine

/// Query, tables, status and diff.
@Suite struct ReadTests {
    private func sample() throws -> TemporaryStore {
        let temporary = try TemporaryStore()
        try temporary.store.insert(
            table: "todo",
            objects: [
                ["id": "a", "text": "buy milk", "n": 3, "done": false],
                ["id": "b", "text": "call mum", "n": 1, "done": true],
                ["id": "c", "text": "buy eggs", "n": 2, "done": false],
                ["id": "d", "text": "walk", "n": 2],
            ])
        return temporary
    }

    private func ids(_ store: LocalStore, filter: String? = nil, orderBy: String? = nil, top: Int? = nil, skip: Int? = nil)
        throws -> [String]
    {
        try store.query(
            table: "todo", RecordQuery(filter: filter, orderBy: orderBy, top: top, skip: skip, select: nil)
        ).map(\.id)
    }

    @Test func queryFiltersOrdersAndPages() throws {
        let temporary = try sample()
        let store = temporary.store
        #expect(try ids(store) == ["a", "b", "c", "d"])
        #expect(try ids(store, filter: "done eq false") == ["a", "c"])
        #expect(try ids(store, filter: "n ge 2 and startswith(text, 'buy')") == ["a", "c"])
        #expect(try ids(store, filter: "done eq null") == ["d"])
        #expect(try ids(store, orderBy: "n desc") == ["a", "c", "d", "b"])
        #expect(try ids(store, orderBy: "n", top: 2, skip: 1) == ["c", "d"])
        #expect(try ids(store, skip: 3) == ["d"])
        #expect(try ids(store, filter: "id eq 'b'") == ["b"])
    }

    @Test func queryRejectsBadFiltersAndUnknownTables() throws {
        let temporary = try sample()
        do {
            _ = try ids(temporary.store, filter: "n eq 'x")
            Issue.record("expected an invalid filter")
        } catch let error as TSyncError {
            #expect(error.kind == .invalidInput)
            #expect(error.message.contains("position"))
        }
        #expect(throws: TSyncError.self) { try temporary.store.query(table: "nope") }
    }

    @Test func selectProjectsTheWireObject() throws {
        let temporary = try sample()
        let query = try RecordQuery(filter: "id eq 'a'", orderBy: nil, top: nil, skip: nil, select: "text,id,missing")
        let record = try #require(try temporary.store.query(table: "todo", query).first)
        #expect(query.project(record.wireObject) == ["id": "a", "text": "buy milk"])
    }

    @Test func tablesCountRecordsPendingAndErrors() throws {
        let temporary = try sample()
        let store = temporary.store
        try store.applyServerPage(table: "notes", records: [LocalStore.serverRecord("n", [:], version: "1")])
        try store.fail(try store.pendingOperations()[0].itemID, status: 409)
        #expect(
            try store.tables() == [
                TableSummary(table: "notes", records: 1, pending: 0, errors: 0),
                TableSummary(table: "todo", records: 4, pending: 4, errors: 1),
            ])
    }

    @Test func statusGroupsTheQueueByTable() throws {
        let temporary = try sample()
        let store = temporary.store
        try store.applyServerPage(
            table: "notes",
            records: [LocalStore.serverRecord("n1", [:], version: "1"), LocalStore.serverRecord("n2", [:], version: "1")])
        try store.update(table: "notes", id: "n1", fields: ["x": 1])
        try store.delete(table: "notes", ids: ["n2"])
        try store.saveQuery(SavedQuery(table: "notes", queryID: "all", filter: nil))
        try store.fail("c", status: 409)
        let report = try store.status()
        #expect(report.pendingCount == 6)
        #expect(report.errorCount == 1)
        #expect(!report.isClean)
        #expect(report.samples.isEmpty, "none asked for")
        var notes = TableStatus(table: "notes")
        notes.updates = 1
        notes.deletes = 1
        var todo = TableStatus(table: "todo")
        todo.inserts = 4
        todo.errors = 1
        #expect(report.tables == [notes, todo])
        #expect(report.savedQueries.count == 1)
        #expect(report.storeDirectory == store.location.directory)

        let sampled = try store.status(samplesPerTable: 3)
        #expect(sampled.samples.map(\.itemID) == ["a", "b", "c", "n1", "n2"], "the first 3 of each table, in queue order")
        #expect(sampled.samples.map { $0.error?.httpStatus } == [nil, nil, 409, nil, nil])
        #expect(sampled.tables == report.tables)

        // The whole queue, through the cursor, agrees with the counts of the same snapshot.
        let (head, counted, operations) = try store.status { (head, cursor) throws(TSyncError) in
            var operations: [PendingOperation] = []
            while let operation = try cursor.next() { operations.append(operation) }
            return (head, cursor.report, operations)
        }
        #expect(!head.isClean && head.errorCount == 1)
        #expect(counted.tables == report.tables, "counted as they were read")
        #expect(counted.savedQueries.count == 1 && counted.storeDirectory == store.location.directory)
        #expect(operations == (try store.pendingOperations()))
        #expect(operations.map(\.itemID) == ["a", "b", "c", "d", "n1", "n2"])
        #expect(operations.map { $0.error?.httpStatus } == [nil, nil, 409, nil, nil, nil])
    }

    @Test func diffShowsFieldsAgainstTheBase() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.applyServerPage(
            table: "todo",
            records: [
                LocalStore.serverRecord("s", ["text": "old", "gone": 1, "same": true], version: "1"),
                LocalStore.serverRecord("d", ["text": "bye"], version: "1"),
            ])
        try store.update(table: "todo", id: "s", fields: ["text": "new", "gone": nil, "added": [1, 2]])
        try store.delete(table: "todo", ids: ["d"])
        try store.insert("todo", ["id": "n", "text": "hi"])
        try store.insert("other", ["id": "o"])

        let entries = try store.diff(table: "todo")
        #expect(entries.map(\.id) == ["s", "d", "n"])
        #expect(entries.map(\.kind) == [.update, .delete, .insert])
        #expect(
            entries[0].changes == [
                FieldChange(field: "added", change: .added, before: nil, after: [1, 2]),
                FieldChange(field: "gone", change: .modified, before: 1, after: .some(.null)),
                FieldChange(field: "text", change: .modified, before: "old", after: "new"),
            ])
        #expect(entries[0].base?["version"] == "1")
        #expect(entries[1].changes == [FieldChange(field: "text", change: .removed, before: "bye", after: nil)])
        #expect(entries[1].ours == nil)
        #expect(entries[2].base == nil)
        #expect(entries[2].changes == [FieldChange(field: "text", change: .added, before: nil, after: "hi")])
        #expect(try store.diff().count == 4)
        #expect(try store.diff(table: "todo", id: "n").map(\.id) == ["n"])
        #expect(throws: TSyncError.self) { try store.diff(table: "nope") }
        var visited: [String] = []
        try store.diff { (entry) throws(TSyncError) in
            visited.append(entry.id)
            return visited.count < 2
        }
        #expect(visited == ["s", "d"], "the visitor stops the reading")
    }

    @Test func inputStreamsMustHoldObjects() throws {
        #expect(try RecordInput.objects(from: Array("{\"a\":1}\n{\"b\":2}".utf8)).count == 2)
        #expect(throws: TSyncError.invalidInput("record 2 is an array, expected a JSON object")) {
            try RecordInput.objects(from: Array("[{\"a\":1}, [1]]".utf8))
        }
        #expect(throws: TSyncError.self) { try RecordInput.object(from: "[1]") }
    }
}
