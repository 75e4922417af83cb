import Testing
import TSyncModel
import TSyncQuery

@testable import TSyncEngine

/// The batched queue steps of push and the store side of `resolve`.
@Suite struct BatchedPushAndResolveTests {
    /// A store with `todo/x` pulled at version v1 and changed locally (text "ours").
    private func changedItem() throws -> TemporaryStore {
        let temporary = try TemporaryStore()
        try temporary.store.applyServerPage(
            table: "todo", records: [LocalStore.serverRecord("x", ["text": "base", "note": "n"], version: "v1")])
        _ = try temporary.store.update(table: "todo", id: "x", fields: ["text": "ours"])
        return temporary
    }

    /// Pushes `x` and records the server's 412 with `theirs`.
    private func fail(_ store: LocalStore, theirs: TSyncModel.Record?, status: Int = 412) throws -> Int64 {
        let batch = try store.claimOperations(tables: nil, limit: 10)
        #expect(batch.count == 1)
        try store.completeOperations([AnsweredOperation(batch[0], .failed(status: status, message: "m", serverRecord: theirs))])
        return try #require(try store.conflictDetails().first?.error.id)
    }

    @Test func claimTakesOneOperationPerItemInQueueOrderAndSendsTheBaseVersion() throws {
        let temporary = try changedItem()
        let store = temporary.store
        try store.insert("todo", ["id": "y", "text": "new"])
        let batch = try store.claimOperations(tables: nil, limit: 10)
        #expect(batch.map(\.operation.itemID) == ["x", "y"])
        #expect(batch[0].version == "v1" && batch[0].item == ["id": "x", "text": "ours", "note": "n"])
        #expect(batch[1].version == nil)
        #expect(try store.queue("todo", "x") == ["update(inflight)"])
        // A change while in flight queues after it; a later claim (after a crash) takes the
        // in-flight operation again, with the item it was sent with, never the newer one.
        _ = try store.update(table: "todo", id: "x", fields: ["text": "later"])
        #expect(try store.queue("todo", "x") == ["update(inflight)", "update"])
        let again = try store.claimOperations(tables: nil, limit: 10)
        #expect(again.map(\.item) == batch.map(\.item) && again.map(\.version) == batch.map(\.version))
        #expect(again.map(\.sentBefore) == [true, true], "and it knows they may have arrived")
    }

    @Test func onePushAtATimePerStore() throws {
        let temporary = try TemporaryStore()
        var held: PushLock? = try PushLock(store: temporary.store)
        #expect(throws: TSyncError.self) { try PushLock(store: try temporary.reopen(), timeout: 0.2) }
        #expect(held != nil)
        held = nil
        _ = try PushLock(store: try temporary.reopen(), timeout: 0.2)
    }

    @Test func anInFlightOperationIsResentWithTheSameItem() throws {
        let temporary = try changedItem()
        let store = temporary.store
        let first = try store.claimOperations(tables: nil, limit: 10)
        // The process dies here; the record changes again before the next push.
        _ = try store.update(table: "todo", id: "x", fields: ["text": "later"])
        let again = try temporary.reopen().claimOperations(tables: nil, limit: 10)
        #expect(again.map(\.item) == first.map(\.item) && again.map(\.version) == first.map(\.version))
        #expect(again.map(\.sentBefore) == [true])
    }

    @Test func releaseAndFailurePutOperationsBackToPending() throws {
        let temporary = try changedItem()
        let store = temporary.store
        try store.releaseOperations(try store.claimOperations(tables: nil, limit: 10))
        #expect(try store.queue("todo", "x") == ["update"])
        _ = try fail(store, theirs: LocalStore.serverRecord("x", ["text": "theirs", "note": "n"], version: "v2"))
        #expect(try store.queue("todo", "x") == ["update"])
        #expect(try store.pushableOperations(tables: nil).isEmpty, "an errored item is held back")
        #expect(try store.heldBackOperationCount(tables: nil) == 1)
        #expect(try store.heldBackOperationCount(tables: ["other"]) == 0)
    }

    @Test func errorsHoldBackOnlyTheirItem() throws {
        let temporary = try changedItem()
        let store = temporary.store
        _ = try fail(store, theirs: nil, status: 500)
        try store.insert("todo", ["id": "y"])
        #expect(try store.pushableOperations(tables: nil).map(\.operation.itemID) == ["y"])
    }

    @Test func conflictDetailsShowBaseOursTheirs() throws {
        let temporary = try changedItem()
        let store = temporary.store
        let theirs = LocalStore.serverRecord("x", ["text": "theirs", "note": "n2"], version: "v2")
        _ = try fail(store, theirs: theirs)
        let details = try #require(try store.conflictDetails().first)
        #expect(details.base?.fields["text"] == "base")
        #expect(details.ours?.fields["text"] == "ours")
        #expect(details.theirs == theirs)
        #expect(details.failureClass == .versionConflict)
        #expect(details.fieldsChangedByUs == ["text"])
        #expect(details.fieldsChangedByThem == ["note", "text"])
        #expect(details.differingFields == ["note", "text"])
    }

    @Test func oursRebasesOnTheServerVersion() throws {
        let temporary = try changedItem()
        let store = temporary.store
        let theirs = LocalStore.serverRecord("x", ["text": "theirs", "note": "n"], version: "v2")
        let id = try fail(store, theirs: theirs)
        #expect(try store.settle(errorID: id, with: .ours, theirs: .record(theirs)) == .settled(pending: true))
        let next = try #require(try store.claimOperations(tables: nil, limit: 10).first)
        #expect(next.version == "v2" && next.item["text"] == "ours")
    }

    @Test func theirsCancelAndDiscard() throws {
        let theirs = LocalStore.serverRecord("x", ["text": "theirs", "note": "n"], version: "v2")
        do {
            let temporary = try changedItem()
            let id = try fail(temporary.store, theirs: theirs)
            #expect(try temporary.store.settle(errorID: id, with: .theirs, theirs: .record(theirs)) == .settled(pending: false))
            #expect(try temporary.store.record(table: "todo", id: "x") == theirs)
            #expect(try temporary.store.pendingOperations().isEmpty)
        }
        do {
            let temporary = try changedItem()
            let id = try fail(temporary.store, theirs: theirs)
            #expect(try temporary.store.settle(errorID: id, with: .cancel, theirs: nil) == .settled(pending: true))
            #expect(try temporary.store.conflictDetails().isEmpty)
            #expect(try temporary.store.pushableOperations(tables: nil).count == 1)
        }
        do {
            let temporary = try changedItem()
            let id = try fail(temporary.store, theirs: theirs)
            #expect(try temporary.store.settle(errorID: id, with: .discard, theirs: nil) == .settled(pending: false))
            #expect(try temporary.store.record(table: "todo", id: "x")?.fields["text"] == "base")
            #expect(try temporary.store.pendingOperations().isEmpty)
        }
    }

    @Test func mergeTakesDisjointFieldsAndRefusesOverlaps() throws {
        do {
            let temporary = try changedItem()
            let theirs = LocalStore.serverRecord("x", ["text": "base", "note": "n2"], version: "v2")
            let id = try fail(temporary.store, theirs: theirs)
            #expect(try temporary.store.settle(errorID: id, with: .merge, theirs: .record(theirs)) == .settled(pending: true))
            #expect(try temporary.store.record(table: "todo", id: "x")?.fields == ["text": "ours", "note": "n2"])
            #expect(try temporary.store.claimOperations(tables: nil, limit: 1).first?.version == "v2")
        }
        do {
            let temporary = try changedItem()
            let theirs = LocalStore.serverRecord("x", ["text": "theirs", "note": "n"], version: "v2")
            let id = try fail(temporary.store, theirs: theirs)
            guard case .refused(let reason) = try temporary.store.settle(errorID: id, with: .merge, theirs: .record(theirs)) else {
                Issue.record("expected a refusal")
                return
            }
            #expect(reason.contains("text"))
            #expect(try temporary.store.conflictDetails().count == 1, "nothing changed")
            #expect(try temporary.store.record(table: "todo", id: "x")?.fields["text"] == "ours")
        }
    }

    @Test func oursOnAnInsertThatExistsBecomesAnUpdate() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.insert("todo", ["id": "z", "text": "mine"])
        let existing = LocalStore.serverRecord("z", ["text": "theirs"], version: "v7")
        let id = try fail(store, theirs: existing, status: 409)
        #expect(try store.conflictDetails().first?.failureClass == .alreadyExists)
        _ = try store.settle(errorID: id, with: .ours, theirs: .record(existing))
        let next = try #require(try store.claimOperations(tables: nil, limit: 1).first)
        #expect(next.operation.kind == .update && next.version == "v7")
    }

    @Test func checkpointFilterAndOrder() throws {
        let checkpoint = Checkpoint(updatedAt: Timestamp(millisecondsSinceEpoch: 0), id: "it's")
        #expect(
            checkpoint.filterAfter
                == "updatedAt ge datetimeoffset'1970-01-01T00:00:00.000Z' and (updatedAt gt datetimeoffset'1970-01-01T00:00:00.000Z' or updatedAt eq datetimeoffset'1970-01-01T00:00:00.000Z' and id gt 'it''s')"
        )
        // Written by TSyncQuery: it reads back as the expression it was written from.
        #expect(try ODataParser.parseFilter(checkpoint.filterAfter) == checkpoint.after)
        #expect(Checkpoint.filter(user: " ", after: nil) == nil)
        #expect(Checkpoint.filter(user: "a eq 1", after: checkpoint) == "(a eq 1) and (\(checkpoint.filterAfter))")
        let a = Checkpoint(updatedAt: Timestamp(millisecondsSinceEpoch: 5), id: "b")
        let b = Checkpoint(updatedAt: Timestamp(millisecondsSinceEpoch: 5), id: "c")
        #expect(a < b && checkpoint < a)
        // Ids in byte order, as the server sorts them: "Z" (0x5A) before "a", and "é" as one code
        // point (0xC3 0xA9) after "e" + U+0301 (0x65 …): two different positions.
        #expect(Checkpoint(updatedAt: a.updatedAt, id: "Z") < Checkpoint(updatedAt: a.updatedAt, id: "a"))
        let composed = Checkpoint(updatedAt: a.updatedAt, id: "\u{E9}")
        let decomposed = Checkpoint(updatedAt: a.updatedAt, id: "e\u{301}")
        #expect(composed != decomposed && decomposed < composed)
    }

    /// A page of an incremental pull is checked before its checkpoint is trusted (docs/DESIGN.md §2.1).
    @Test func aPageOutOfOrderIsRefused() throws {
        let start = PullPosition(checkpoint: Checkpoint(updatedAt: Timestamp(millisecondsSinceEpoch: 5), id: "b"))
        let ordered = [
            LocalStore.serverRecord("c", [:], version: "1", at: 5), LocalStore.serverRecord("a", [:], version: "1", at: 6),
        ]
        #expect(
            try Checkpoint.position(after: ordered, from: start)
                == PullPosition(checkpoint: Checkpoint(updatedAt: Timestamp(millisecondsSinceEpoch: 6), id: "a")))
        #expect(try Checkpoint.position(after: [], from: start) == start)
        // Sorted by id instead of (updatedAt, id): the checkpoint would jump past unsent records.
        let byID = [LocalStore.serverRecord("c", [:], version: "1", at: 9), LocalStore.serverRecord("d", [:], version: "1", at: 6)]
        #expect(throws: TSyncError.self) { try Checkpoint.position(after: byID, from: start) }
        // A record before the checkpoint's timestamp: the server ignored the filter.
        #expect(throws: TSyncError.self) {
            try Checkpoint.position(after: [LocalStore.serverRecord("a", [:], version: "1", at: 4)], from: start)
        }
        var undated = LocalStore.serverRecord("x", [:], version: "1", at: 9)
        undated.system.updatedAt = nil
        #expect(throws: TSyncError.self) { try Checkpoint.position(after: [undated], from: PullPosition(checkpoint: nil)) }
    }

    /// Truncated timestamps: a record again at the checkpoint's own timestamp, or a
    /// run out of id order, is no error; a page inside the run walks it by offset, a page past it
    /// moves the checkpoint.
    @Test func aRunAtOneTimestampIsWalkedNotRefused() throws {
        let start = PullPosition(checkpoint: Checkpoint(updatedAt: Timestamp(millisecondsSinceEpoch: 5), id: "m"))
        let inside = [LocalStore.serverRecord("z", [:], version: "1", at: 5), LocalStore.serverRecord("a", [:], version: "1", at: 5)]
        let walked = try Checkpoint.position(after: inside, from: start)
        #expect(walked == PullPosition(checkpoint: start.checkpoint, skip: 2))
        #expect(try Checkpoint.position(after: inside, from: walked).skip == 4)
        let past = inside + [LocalStore.serverRecord("b", [:], version: "1", at: 7)]
        #expect(
            try Checkpoint.position(after: past, from: walked)
                == PullPosition(checkpoint: Checkpoint(updatedAt: Timestamp(millisecondsSinceEpoch: 7), id: "b")))
    }
}
