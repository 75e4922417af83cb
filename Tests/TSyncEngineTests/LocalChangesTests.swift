import Testing
import TSyncModel

@testable import TSyncEngine

/// Local insert/update/delete through the store: the working copy, the queue with every collapse
/// row, and the bases.
@Suite struct LocalChangesTests {
    /// A store holding `todo/s1` as pulled from the server (version "v1").
    private func storeWithServerRecord() throws -> TemporaryStore {
        let temporary = try TemporaryStore()
        try temporary.store.applyServerPage(
            table: "todo", records: [LocalStore.serverRecord("s1", ["text": "server", "n": 1], version: "v1")])
        return temporary
    }

    // MARK: Insert

    @Test func insertKeepsUserFieldsAndGeneratesIDs() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        let ids = try store.insert(
            table: "todo",
            objects: [
                ["id": "a", "text": "one", "version": "forged", "updatedAt": "2020-01-01T00:00:00Z", "deleted": true],
                ["text": "two"],
            ])
        #expect(ids.count == 2)
        #expect(ids[0] == "a")
        #expect(ids[1].count == 36 && ids[1] == ids[1].lowercased())
        let record = try #require(try store.record(table: "todo", id: "a"))
        #expect(record.fields == ["text": "one"])
        #expect(record.system == SystemProperties())
        #expect(try store.queue("todo", "a") == ["insert"])
        #expect(try store.base(table: "todo", id: "a") == nil)
    }

    @Test func bulkInsertIsAllOrNothing() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.insert("todo", ["id": "old", "text": "x"])
        do {
            try store.insert(table: "todo", objects: [["id": "new1"], ["id": "new2"], ["id": "new1"]])
            Issue.record("a duplicate id in a batch must fail")
        } catch {
            #expect(error.kind == .invalidInput)
            #expect(error.message.hasPrefix("record 3: todo/new1 already exists"))
        }
        #expect(throws: TSyncError.self) { try store.insert(table: "todo", objects: [["id": "ok"], ["id": "bad/id"]]) }
        #expect(try store.query(table: "todo").map(\.id) == ["old"])
        #expect(try store.pendingOperations().count == 1)
    }

    @Test func aLargeBatchNamesTheRecordThatFailsAndKeepsQueueOrder() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.insert("todo", ["id": "existing"])
        var objects: [[String: JSONValue]] = (0..<200).map { ["id": .string("r\($0)"), "n": .int(Int64($0))] }
        objects[149] = ["id": "r10"]
        // The library names no command: the remedy is typed, and its words are "update it instead".
        let insertPending = TSyncError(.invalidInput, "todo/r10 already exists (its insert is pending)", remedy: .updateInstead)
        #expect(throws: insertPending.prefixed("record 150: ")) {
            try store.insert(table: "todo", objects: objects)
        }
        objects[149] = ["id": "existing"]
        #expect(
            throws: TSyncError(.invalidInput, "todo/existing already exists (its insert is pending)", remedy: .updateInstead)
                .prefixed("record 150: ")
        ) {
            try store.insert(table: "todo", objects: objects)
        }
        #expect(try store.pendingOperations().count == 1)

        objects[149] = ["id": "r149", "n": 149]
        let ids = try store.insert(table: "todo", objects: objects)
        #expect(ids == (0..<200).map { "r\($0)" })
        #expect(try store.pendingOperations().map(\.itemID) == ["existing"] + ids, "queue order is input order")
        #expect(try store.record(table: "todo", id: "r149")?.fields == ["n": 149])
    }

    @Test func insertOfAnExistingServerRecordIsRejected() throws {
        let temporary = try storeWithServerRecord()
        #expect(throws: TSyncError(.invalidInput, "todo/s1 already exists", remedy: .updateInstead)) {
            try temporary.store.insert("todo", ["id": "s1"])
        }
    }

    @Test func invalidTableNamesAreRejected() throws {
        let temporary = try TemporaryStore()
        #expect(throws: TSyncError.self) { try temporary.store.insert("bad-name", ["a": 1]) }
        #expect(try temporary.store.tables().isEmpty)
    }

    // MARK: Collapse rows, through the store

    @Test func insertThenUpdateStaysOneInsertOfTheNewBody() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.insert("todo", ["id": "a", "text": "one"])
        try store.update(table: "todo", id: "a", fields: ["text": "two"])
        #expect(try store.queue("todo", "a") == ["insert"])
        #expect(try store.record(table: "todo", id: "a")?.fields == ["text": "two"])
        #expect(try store.claimOperations(tables: nil, limit: 10).map(\.item) == [["id": "a", "text": "two"]])
    }

    @Test func insertThenDeleteVanishes() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.insert("todo", ["id": "a"])
        try store.insert("todo", ["id": "b"])
        try store.delete(table: "todo", ids: ["a"])
        #expect(try store.queue("todo", "a").isEmpty)
        #expect(try store.record(table: "todo", id: "a") == nil)
        #expect(try store.pendingOperations().map(\.itemID) == ["b"])
        // The id is free again.
        try store.insert("todo", ["id": "a"])
        #expect(try store.queue("todo", "a") == ["insert"])
    }

    @Test func updateThenUpdateStaysOneUpdateWithTheFirstBase() throws {
        let temporary = try storeWithServerRecord()
        let store = temporary.store
        try store.update(table: "todo", id: "s1", fields: ["text": "mine"])
        try store.update(table: "todo", id: "s1", fields: ["n": 2])
        #expect(try store.queue("todo", "s1") == ["update"])
        #expect(try store.record(table: "todo", id: "s1")?.fields == ["text": "mine", "n": 2])
        let base = try #require(try store.base(table: "todo", id: "s1"))
        #expect(base.fields == ["text": "server", "n": 1])
        #expect(base.system.version == "v1")
    }

    @Test func updateThenDeleteIsOneDeleteCarryingTheItem() throws {
        let temporary = try storeWithServerRecord()
        let store = temporary.store
        try store.update(table: "todo", id: "s1", fields: ["text": "mine"])
        let seq = try store.pendingOperations()[0].seq
        try store.delete(table: "todo", ids: ["s1"])
        let operations = try store.pendingOperations()
        #expect(operations.map(\.kind) == [.delete])
        #expect(operations[0].seq == seq, "the operation keeps its place in the queue")
        #expect(try store.record(table: "todo", id: "s1") == nil)
        #expect(try store.base(table: "todo", id: "s1")?.system.version == "v1")
        let outgoing = try #require(try store.claimOperations(tables: nil, limit: 10).first)
        #expect(outgoing.operation.seq == seq)
        #expect(outgoing.item == ["id": "s1", "text": "mine", "n": 1])
        #expect(outgoing.version == "v1")
    }

    @Test func rejectedRowsLeaveTheStoreAsItWas() throws {
        let temporary = try storeWithServerRecord()
        let store = temporary.store
        try store.insert("todo", ["id": "new"])
        try store.update(table: "todo", id: "s1", fields: ["text": "mine"])
        try store.applyServerPage(table: "todo", records: [LocalStore.serverRecord("s2", [:], version: "v1")])
        try store.delete(table: "todo", ids: ["s2"])
        let before = try store.pendingOperations()

        // insert → insert
        #expect(throws: TSyncError.self) { try store.insert("todo", ["id": "new"]) }
        // update → insert
        #expect(throws: TSyncError.self) { try store.insert("todo", ["id": "s1"]) }
        // delete → insert, update, delete
        for attempt in [
            { try store.insert("todo", ["id": "s2"]) },
            { try store.update(table: "todo", id: "s2", fields: ["a": 1]) },
            { try store.delete(table: "todo", ids: ["s2"]) },
        ] as [() throws -> Void] {
            do {
                try attempt()
                Issue.record("a change after a pending delete must be rejected")
            } catch let error as TSyncError {
                #expect(error.kind == .invalidInput)
                #expect(error.message.contains("todo/s2 has a pending delete"))
            }
        }
        #expect(try store.pendingOperations() == before)
        #expect(try store.record(table: "todo", id: "s1")?.fields["text"] == "mine")
    }

    @Test func changesQueueAfterAnOperationInFlight() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.insert("todo", ["id": "a", "text": "one"])
        let outgoing = try #require(try store.claimOperations(tables: nil, limit: 10).first)
        #expect(outgoing.operation.state == .inflight)
        try store.update(table: "todo", id: "a", fields: ["text": "two"])
        try store.update(table: "todo", id: "a", fields: ["text": "three"])
        #expect(try store.queue("todo", "a") == ["insert(inflight)", "update"])
        try store.delete(table: "todo", ids: ["a"])
        #expect(try store.queue("todo", "a") == ["insert(inflight)", "delete"])
        // The delete being pushed blocks the id.
        let server = LocalStore.serverRecord("a", ["text": "one"], version: "v1")
        try store.completeOperations([AnsweredOperation(outgoing, .succeeded(serverRecord: server, alreadyApplied: false))])
        #expect(try store.claimOperations(tables: nil, limit: 10).map(\.operation.kind) == [.delete])
        #expect(throws: TSyncError.self) { try store.insert("todo", ["id": "a"]) }
    }

    // MARK: Update and delete details

    @Test func updateMergesTopLevelFields() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.insert("todo", ["id": "a", "text": "one", "tags": ["x": 1, "y": 2], "keep": true])
        let after = try store.update(
            table: "todo", id: "a", fields: ["text": nil, "tags": ["z": 3], "id": "a", "version": "ignored"])
        #expect(after.fields == ["text": nil, "tags": ["z": 3], "keep": true])
        #expect(try store.record(table: "todo", id: "a")?.fields == after.fields)
        #expect(throws: TSyncError.self) { try store.update(table: "todo", id: "a", fields: ["id": "b"]) }
    }

    @Test func unknownTablesAndIDsSayWhich() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.insert("todo", ["id": "a"])
        #expect(throws: TSyncError.invalidInput("no record \"zz\" in table todo")) {
            try store.update(table: "todo", id: "zz", fields: ["a": 1])
        }
        #expect(throws: TSyncError(.invalidInput, "unknown table \"nope\"", remedy: .listTables)) {
            try store.delete(table: "nope", ids: ["a"])
        }
        #expect(throws: TSyncError.self) { try store.requireRecord(table: "todo", id: "zz") }
    }

    @Test func deleteOfSeveralIsAllOrNothing() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.insert(table: "todo", objects: [["id": "a"], ["id": "b"]])
        #expect(throws: TSyncError.self) { try store.delete(table: "todo", ids: ["a", "missing", "b"]) }
        #expect(try store.query(table: "todo").map(\.id) == ["a", "b"])
        try store.delete(table: "todo", ids: ["a", "a", "b"])
        #expect(try store.query(table: "todo").isEmpty)
        #expect(try store.pendingOperations().isEmpty)
    }

    @Test func firstChangeOfAServerRecordCapturesItsBase() throws {
        let temporary = try storeWithServerRecord()
        let store = temporary.store
        #expect(try store.base(table: "todo", id: "s1") == nil, "no base without a pending change")
        try store.delete(table: "todo", ids: ["s1"])
        let base = try #require(try store.base(table: "todo", id: "s1"))
        #expect(base == LocalStore.serverRecord("s1", ["text": "server", "n": 1], version: "v1"))
    }
}
