import Foundation
import Synchronization
import Testing
import TSyncModel

@testable import TSyncEngine

/// The engine's rules for bringing records back (`LocalStore.revert`, docs/DESIGN.md §15), the
/// tombstone horizon resync (`Puller.resyncPastHorizon`), and the versions a push wrote
/// (`PushedVersions`).
@Suite struct RecordHistoryRulesTests {
    static func server(_ id: String, _ fields: [String: JSONValue], version: String, deleted: Bool = false) -> Record {
        var record = LocalStore.serverRecord(id, fields, version: version)
        record.system.deleted = deleted
        return record
    }

    @Test func eachCaseQueuesTheChangeThatBringsTheRecordBack() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        let live = Self.server("live", ["text": "now", "added": 1], version: "v2")
        let same = Self.server("same", ["text": "then"], version: "v1")
        let created = Self.server("created", ["text": "new"], version: "v1")
        let gone = Self.server("gone", ["text": "then"], version: "v3", deleted: true)
        try store.applyServerPage(table: "todo", records: [live, same, created])
        let changes = try store.revert(
            table: "todo",
            targets: [
                RevertTarget(id: "live", server: .record(live), target: ["text": "then"]),
                RevertTarget(id: "same", server: .record(same), target: ["text": "then"]),
                RevertTarget(id: "created", server: .record(created), target: nil),
                RevertTarget(id: "gone", server: .record(gone), target: ["text": "then"]),
                RevertTarget(id: "purged", server: .none, target: ["text": "back"]),
                RevertTarget(id: "never", server: .none, target: nil),
            ], queued: [], force: false, dryRun: false)
        #expect(
            changes.map { "\($0.kind.rawValue) \($0.id)" } == ["update live", "delete created", "undelete gone", "insert purged"])
        #expect(
            try store.requireRecord(table: "todo", id: "live").fields == ["text": "then", "added": .null],
            "a field added since is set to null")
        let outgoing = try store.claimOperations(tables: nil, limit: 10)
        let byID = Dictionary(uniqueKeysWithValues: outgoing.map { ($0.operation.itemID, $0) })
        #expect(byID["live"]?.version == "v2" && byID["live"]?.restoresDeleted == false, "based on the server's copy now")
        #expect(byID["gone"]?.operation.kind == .update && byID["gone"]?.restoresDeleted == true, "undelete, then the update")
        #expect(byID["gone"]?.version == "v3")
        #expect(byID["created"]?.operation.kind == .delete && byID["created"]?.version == "v1")
        #expect(byID["purged"]?.operation.kind == .insert)
        #expect(byID["same"] == nil && byID["never"] == nil, "already as it was: nothing queued")
    }

    @Test func pendingChangesRefuseUnlessForcedAndADryRunChangesNothing() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        let record = Self.server("a", ["text": "now"], version: "v2")
        try store.applyServerPage(table: "todo", records: [record])
        try store.update(table: "todo", id: "a", fields: ["text": "mine"])
        try store.insert("todo", ["id": "local"])
        let target = RevertTarget(id: "a", server: .record(record), target: ["text": "then"])
        #expect(throws: TSyncError.self) {
            try store.revert(table: "todo", targets: [target], queued: ["a", "local"], force: false, dryRun: false)
        }
        #expect(try store.requireRecord(table: "todo", id: "a").fields["text"] == "mine", "refused: nothing changed")

        let dry = try store.revert(table: "todo", targets: [target], queued: ["a", "local"], force: true, dryRun: true)
        #expect(dry.map(\.kind) == [.update, .delete] && dry.allSatisfy(\.discarded))
        #expect(try store.queue("todo", "local") == ["insert"], "a dry run changes nothing")

        _ = try store.revert(table: "todo", targets: [target], queued: ["a", "local"], force: true, dryRun: false)
        #expect(try store.requireRecord(table: "todo", id: "a").fields["text"] == "then")
        #expect(try store.queue("todo", "a") == ["update"])
        #expect(try store.queue("todo", "local").isEmpty, "the local insert was dropped")
        #expect(throws: TSyncError.self) { try store.requireRecord(table: "todo", id: "local") }
    }

    /// A store that pulled a, b and c with query `q`, its checkpoint at c (1 s after the epoch).
    static func pulledStore() throws -> (TemporaryStore, [Record]) {
        let temporary = try TemporaryStore()
        let records = ["a", "b", "c"].map { Self.server($0, ["n": 1], version: "v1") }
        try temporary.store.applyServerPage(
            table: "todo", records: records,
            saving: SavedQuery(
                table: "todo", queryID: "q", filter: nil,
                checkpoint: Checkpoint(updatedAt: Timestamp(millisecondsSinceEpoch: 1_000), id: "c"),
                lastPullAt: nil))
        return (temporary, records)
    }

    @Test func aPullPastTheHorizonDropsWhatTheServerNoLongerHasAndKeepsPendingChanges() async throws {
        let (temporary, records) = try Self.pulledStore()
        let store = temporary.store
        try store.update(table: "todo", id: "b", fields: ["n": 2])
        let remote = try ScriptedRemote()
        let horizon = Timestamp(millisecondsSinceEpoch: 5_000)
        let survivor = records[2]
        remote.scriptedPage = { request in
            // The incremental read: nothing new, and the horizon. The whole read: only c is left.
            if request.filter != nil { return Page(records: [], nextLink: nil, deletedHorizon: horizon) }
            return Page(records: (request.skip ?? 0) == 0 ? [survivor] : [], nextLink: nil, deletedHorizon: horizon)
        }
        let summary = try await Puller(store: store, remote: remote).pull(PullRequest(table: "todo", queryID: "q"))
        #expect(summary.horizonResync == HorizonResync(horizon: horizon, droppedIDs: ["a"], kept: 1))
        #expect(try store.query(table: "todo").map(\.id).sorted() == ["b", "c"], "a dropped, b kept for its pending change")

        // A horizon before the checkpoint: nothing to do.
        try store.applyServerPage(table: "todo", records: [Self.server("a", ["n": 1], version: "v1")])
        remote.scriptedPage = { _ in Page(records: [], nextLink: nil, deletedHorizon: Timestamp(millisecondsSinceEpoch: 500)) }
        let again = try await Puller(store: store, remote: remote).pull(PullRequest(table: "todo", queryID: "q"))
        #expect(again.horizonResync == nil)
        #expect(try store.query(table: "todo").count == 3)
    }

    /// A horizon that a page after the first brings, with pages read and not yet written (a pull
    /// writes a few to a commit): they are written before the resync's whole read, so a record
    /// they bring that the server deleted and removed meanwhile is dropped, not written after.
    @Test func aHorizonMidPullDropsWhatThePagesBeforeItBrought() async throws {
        let (temporary, records) = try Self.pulledStore()
        let store = temporary.store
        let remote = try ScriptedRemote()
        let horizon = Timestamp(millisecondsSinceEpoch: 5_000)
        let gone = LocalStore.serverRecord("d", ["n": 4], version: "v1", at: 2_000)
        let incremental = Mutex(0)
        remote.scriptedPage = { request in
            // The incremental read: d, then nothing and the horizon (d was deleted and its
            // tombstone removed in between). The whole read, by id: a, b and c are left.
            guard request.orderBy == "id" else {
                let page = incremental.withLock { count in
                    defer { count += 1 }
                    return count
                }
                return page == 0 ? Page(records: [gone], nextLink: nil) : Page(records: [], nextLink: nil, deletedHorizon: horizon)
            }
            return Page(records: request.filter == nil ? records : [], nextLink: nil, deletedHorizon: horizon)
        }
        let summary = try await Puller(store: store, remote: remote).pull(PullRequest(table: "todo", queryID: "q"))
        #expect(summary.horizonResync?.droppedIDs == ["d"])
        #expect(try store.query(table: "todo").map(\.id).sorted() == ["a", "b", "c"], "d came back after the resync")
    }

    @Test func pushedVersionsKeepTheEarliestTimePerTableAndRoundTrip() throws {
        var written = PushedVersions()
        let operation = { (table: String, id: String) in
            PendingOperation(seq: 1, table: table, itemID: id, kind: .update, state: .inflight, queuedAt: Timestamp.now(), error: nil)
        }
        written.add(operation("todo", "a"), LocalStore.serverRecord("a", [:], version: "v2", at: 3_000))
        var later = PushedVersions()
        later.add(operation("todo", "b"), LocalStore.serverRecord("b", [:], version: "v5", at: 2_000))
        later.add(operation("other", "c"), nil)
        written.add(later)
        #expect(written.count == 3)
        #expect(written.earliest == ["todo": Timestamp(millisecondsSinceEpoch: 2_000)])
        guard case .object(let json) = written.json else {
            Issue.record("not an object")
            return
        }
        #expect(PushedVersions(json: json) == written)
    }

    /// A whole read (restore, the table at a time, the horizon resync) pages by id, each page
    /// asking for the ids after the last one the page before brought, never by `$skip`: on the
    /// table at a time each `$skip` page walked every version before it (DESIGN §6.5).
    @Test func aWholeReadPagesFromTheLastIdNotBySkip() async throws {
        let ids = (0..<7).map { "r\($0)" }
        let requests = RequestLog()
        let read = try await WholeTable.read(table: "todo", filter: "n gt 1", endpoint: RemoteEndpoint("http://127.0.0.1:1")) {
            request throws(TSyncError) in
            requests.append(request)
            // A server that pages by 3 whatever the $top, honouring $skip and `id gt`.
            let after = request.filter?.components(separatedBy: "id gt '").dropFirst().first?.dropLast()
            let rest = ids.filter { after == nil || $0 > String(after ?? "") }.dropFirst(request.skip ?? 0).prefix(3)
            return Page(records: rest.map { Self.server($0, ["n": 2], version: "v1") })
        }
        #expect(read.keys.sorted() == ids)
        let sent = requests.all.map { "\($0.filter ?? "-") \($0.orderBy ?? "-") \($0.skip.map(String.init) ?? "-")" }
        #expect(
            sent == [
                "n gt 1 id -", "(n gt 1) and id gt 'r2' id -", "(n gt 1) and id gt 'r5' id -", "(n gt 1) and id gt 'r6' id -",
            ])
    }

    private final class RequestLog: Sendable {
        private let requests = Mutex<[PageRequest]>([])
        func append(_ request: PageRequest) { requests.withLock { $0.append(request) } }
        var all: [PageRequest] { requests.withLock { $0 } }
    }
}
