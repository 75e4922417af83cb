import Foundation
import Testing
import TSyncModel

@testable import TSyncEngine

/// The rules of push and pull against a scripted server (`ScriptedRemote`): fast, and each fault
/// exactly where the rule needs it. The same rules are driven end to end against `tsync serve` in
/// TSyncEndToEndTests (LostResponseTests, FaultyServerTests).
@Suite struct SyncRulesTests {
    /// A lost answer: what was sent stays in flight (it may have been applied), a later edit queues
    /// behind it instead of collapsing into it, and the next push re-sends exactly what was sent,
    /// which the server's 409 with that same item shows to be already applied (docs/DESIGN.md §2.4).
    @Test(arguments: [nil, 10] as [Int?])
    func aLostAnswerKeepsTheOperationInFlightAndTheNextPushRecognisesIt(batchLimit: Int?) async throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.insert("todo", ["id": "a", "text": "first"])
        let remote = try ScriptedRemote(batchLimit: batchLimit)
        remote.fail(call: 1, with: .loseAnswer)

        await #expect(throws: TSyncError.self) { try await Pusher(store: store, remote: remote, concurrency: 1).push(tables: nil) }
        #expect(remote.records("todo")["a"]?.fields["text"] == "first", "the server applied the insert")
        #expect(try store.queue("todo", "a") == ["insert(inflight)"])

        _ = try store.update(table: "todo", id: "a", fields: ["text": "second"])
        #expect(try store.queue("todo", "a") == ["insert(inflight)", "update"], "queued behind, not collapsed")

        let summary = try await Pusher(store: store, remote: remote, concurrency: 1).push(tables: nil)
        #expect(summary.pushed == 2 && summary.alreadyApplied == 1 && summary.failed == 0)
        #expect(try store.operationErrors().isEmpty)
        #expect(remote.records("todo")["a"]?.fields["text"] == "second")
        #expect(try store.record(table: "todo", id: "a")?.system.version == remote.records("todo")["a"]?.system.version)
    }

    /// A 401 part-way: what the server applied is done; what it refused, and what was never sent,
    /// goes back to pending (not in flight: a refused request cannot have been applied), so later
    /// edits collapse into it as usual.
    @Test(arguments: [nil, 2] as [Int?])
    func aRevokedTokenPutsBackEverythingNotApplied(batchLimit: Int?) async throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        let ids = ["a", "b", "c", "d", "e"]
        for id in ids { try store.insert("todo", ["id": .string(id)]) }
        let remote = try ScriptedRemote(batchLimit: batchLimit)
        let refusedCall = batchLimit == nil ? 3 : 2  // the third insert, or the second batch
        remote.fail(call: refusedCall, with: .revokeToken)

        await #expect(throws: TSyncError.self) { try await Pusher(store: store, remote: remote, concurrency: 1).push(tables: nil) }
        let applied = Set(remote.records("todo").keys)
        #expect(applied == ["a", "b"])
        for id in ids where !applied.contains(id) { #expect(try store.queue("todo", id) == ["insert"], "\(id)") }
        for id in applied { #expect(try store.queue("todo", id).isEmpty, "\(id)") }
    }

    /// A page of an incremental pull that does not come after the checkpoint (a server that ignores
    /// the filter) stops the pull before anything of it is written; the checkpoint stays.
    @Test func aPageThatDoesNotAdvanceTheCheckpointIsRefused() async throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        let writer = try TemporaryStore()
        for id in ["a", "b"] { try writer.store.insert("todo", ["id": .string(id)]) }
        let remote = try ScriptedRemote()
        _ = try await Pusher(store: writer.store, remote: remote).push(tables: nil)

        let request = PullRequest(table: "todo", queryID: "all", pageSize: 10)
        let first = try await Puller(store: store, remote: remote).pull(request)
        #expect(first.counts.received == 2)
        let checkpoint = try store.savedQuery(table: "todo", queryID: "all")?.checkpoint
        #expect(checkpoint?.id == "b")

        // The same two records again, as a server would that ignored the checkpoint's filter.
        let stale = try await remote.readPage(PageRequest(table: "todo"))
        remote.scriptedPage = { _ in stale }
        await #expect(throws: TSyncError.self) { try await Puller(store: store, remote: remote).pull(request) }
        #expect(try store.savedQuery(table: "todo", queryID: "all")?.checkpoint == checkpoint)
    }

    /// Rounds of a batched push overlap (the next is claimed while one is on its way), yet an
    /// item's operations reach the server in queue order: an update waiting behind an insert left
    /// in flight goes in a later round than that insert.
    @Test func overlappingRoundsKeepEachItemsOrder() async throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        let ids = (0..<40).map { "r\($0)" }
        for id in ids { try store.insert("todo", ["id": .string(id), "n": 0]) }
        let remote = try ScriptedRemote(batchLimit: 8)
        remote.fail(call: 2, with: .loseAnswer)
        await #expect(throws: TSyncError.self) { try await Pusher(store: store, remote: remote).push(tables: nil) }
        let inFlight = try ids.filter { try store.queue("todo", $0) == ["insert(inflight)"] }
        #expect(inFlight.count == 8, "the batch whose answer was lost")
        for id in ids { _ = try store.update(table: "todo", id: id, fields: ["n": 1]) }

        let before = remote.log.count
        let summary = try await Pusher(store: store, remote: remote).push(tables: nil)
        #expect(summary.failed == 0 && summary.alreadyApplied == inFlight.count)
        let log = remote.log[before...]
        for id in inFlight {
            let insert = try #require(log.firstIndex { $0.kind == .insert && $0.id == id })
            let update = try #require(log.firstIndex { $0.kind == .update && $0.id == id })
            #expect(insert < update, "\(id)")
        }
        #expect(ids.allSatisfy { remote.records("todo")[$0]?.fields["n"] == 1 })
        #expect(try store.pendingOperations().isEmpty)
    }

    /// A 5xx the server had in fact applied is no failure of the operation (issue 18.7): it stays in
    /// flight, nothing is recorded, and a later edit queues behind it instead of merging into it.
    @Test(arguments: [nil, 10] as [Int?])
    func aServerErrorKeepsTheOperationInFlight(batchLimit: Int?) async throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.insert("todo", ["id": "a", "text": "first"])
        let remote = try ScriptedRemote(batchLimit: batchLimit)
        remote.fail(call: 1, with: .applyThenAnswer(.rejected(status: 500, message: "internal error", serverRecord: nil)))

        await #expect(throws: TSyncError.self) { try await Pusher(store: store, remote: remote, concurrency: 1).push(tables: nil) }
        #expect(try store.operationErrors().isEmpty)
        #expect(try store.queue("todo", "a") == ["insert(inflight)"])
        _ = try store.update(table: "todo", id: "a", fields: ["text": "second"])
        #expect(try store.queue("todo", "a") == ["insert(inflight)", "update"])

        let summary = try await Pusher(store: store, remote: remote, concurrency: 1).push(tables: nil)
        #expect(summary.pushed == 2 && summary.failed == 0)
        #expect(remote.records("todo")["a"]?.fields["text"] == "second")
    }

    /// A 404 the server does not confirm for the item (its table still has it live) is no answer
    /// (issue 18.1): the update stays in flight, nothing is recorded as "missing", the edit stays.
    @Test(arguments: [nil, 10] as [Int?])
    func anUnconfirmedNotFoundSettlesNothing(batchLimit: Int?) async throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.insert("todo", ["id": "a", "text": "first"])
        let remote = try ScriptedRemote(batchLimit: batchLimit)
        _ = try await Pusher(store: store, remote: remote, concurrency: 1).push(tables: nil)
        _ = try store.update(table: "todo", id: "a", fields: ["text": "second"])
        remote.fail(call: 2, with: .answer(.rejected(status: 404, message: "table not found", serverRecord: nil)))

        await #expect(throws: TSyncError.self) { try await Pusher(store: store, remote: remote, concurrency: 1).push(tables: nil) }
        #expect(try store.operationErrors().isEmpty)
        #expect(try store.queue("todo", "a") == ["update(inflight)"])
        #expect(try store.record(table: "todo", id: "a")?.fields["text"] == "second")
        #expect(remote.records("todo")["a"]?.fields["text"] == "first")

        let summary = try await Pusher(store: store, remote: remote, concurrency: 1).push(tables: nil)
        #expect(summary.pushed == 1 && summary.failed == 0)
        #expect(remote.records("todo")["a"]?.fields["text"] == "second")
    }
}
