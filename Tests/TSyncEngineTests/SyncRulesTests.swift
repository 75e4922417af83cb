import Foundation
import GRDB
import Synchronization
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

    /// A 401 part-way: what the server applied is done; what was never sent goes back to pending
    /// (later edits collapse into it as usual); what was answered 401 stays in flight, since a
    /// gateway may answer 401 after the server applied the write, and the next push
    /// re-sends it.
    @Test(arguments: [nil, 2] as [Int?])
    func aRevokedTokenPutsBackWhatWasNeverSent(batchLimit: Int?) async throws {
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
        // One by one, the third insert was answered 401 and the others never sent; in batches,
        // every round after the first was sent and answered 401.
        let refused: Set<String> = batchLimit == nil ? ["c"] : ["c", "d", "e"]
        for id in ids where !applied.contains(id) {
            #expect(try store.queue("todo", id) == [refused.contains(id) ? "insert(inflight)" : "insert"], "\(id)")
        }
        for id in applied { #expect(try store.queue("todo", id).isEmpty, "\(id)") }
    }

    /// A local copy without a server version (pulled before pages without one were refused) is
    /// never updated blindly: the update is not sent, and waits in the error table.
    @Test(arguments: [nil, 10] as [Int?])
    func anUpdateOfACopyWithoutAVersionIsNeverSent(batchLimit: Int?) async throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.applyServerPage(table: "todo", records: [Record(id: "a", fields: ["text": "old"])])
        _ = try store.update(table: "todo", id: "a", fields: ["text": "mine"])
        let remote = try ScriptedRemote(batchLimit: batchLimit)
        let summary = try await Pusher(store: store, remote: remote).push(tables: nil)
        #expect(summary.failed == 1 && summary.pushed == 0)
        #expect(remote.log.isEmpty, "nothing was sent")
        let error = try #require(try store.operationErrors().first)
        #expect(error.httpStatus == 428 && error.message.contains("no server version"), "\(error)")
    }

    /// A checkpoint never passes the later of this machine's clock and the answer's `Date`, plus a
    /// minute: a record an hour ahead of this machine, from a server whose `Date` is
    /// two hours ahead, moves it; one three hours ahead is written, named in a warning, and the
    /// checkpoint stays before it.
    @Test func theCheckpointIsBoundByTheLaterOfBothClocks() async throws {
        let now = Timestamp.now().millisecondsSinceEpoch
        let hour: Int64 = 3_600_000
        let records = [
            LocalStore.serverRecord("a", [:], version: "v1", at: now + hour),
            LocalStore.serverRecord("b", [:], version: "v2", at: now + 3 * hour),
        ]
        let remote = try ScriptedRemote()
        remote.scriptedPage = { request in
            let after = ScriptedRemote.checkpoint(in: request.filter)
            let rest = records.filter { record in
                after.map { $0 < Checkpoint(updatedAt: record.system.updatedAt ?? Timestamp(millisecondsSinceEpoch: 0), id: record.id) }
                    ?? true
            }
            var page = Page(records: Array(rest.prefix(request.top ?? 50)), nextLink: nil)
            page.serverDate = Timestamp(millisecondsSinceEpoch: now + 2 * hour)
            return page
        }
        let temporary = try TemporaryStore()
        let summary = try await Puller(store: temporary.store, remote: remote).pull(PullRequest(table: "todo", queryID: "all"))
        #expect(Set(try temporary.store.query(table: "todo").map(\.id)) == ["a", "b"])
        #expect(summary.checkpoint?.id == "a")
        #expect(try temporary.store.savedQuery(table: "todo", queryID: "all")?.checkpoint?.id == "a")
        #expect(summary.warnings.count == 1 && summary.warnings.first?.contains("todo/b") == true, "\(summary.warnings)")
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == Timestamp(iso8601: "1994-11-06T08:49:37Z"))
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == nil && HTTPDate.parse("soon") == nil)
    }

    /// A pull with a query id writes its pages `Puller.pagesACommit` to a transaction, each with
    /// its checkpoint: every commit holds whole pages and the checkpoint of the last of them, so a
    /// pull killed between commits resumes after what it kept; the pages left at the end, and
    /// those held when a stop is asked, are written before the pull returns.
    @Test(arguments: [false, true]) func aPullCommitsWholePagesAFewAtATime(stopping: Bool) async throws {
        let remote = try ScriptedRemote()
        let writer = try TemporaryStore()
        for index in 0..<23 { try writer.store.insert("todo", ["id": .string("r\(index)"), "n": .int(Int64(index))]) }
        _ = try await Pusher(store: writer.store, remote: remote).push(tables: nil)
        let server = remote.records("todo").values.sorted { ($0.system.updatedAt!, $0.id) < ($1.system.updatedAt!, $1.id) }
        let stopRequest = StopRequest()
        if stopping {
            // Asked when the pull asks for its sixth page of 2, past its first commit.
            let fifthEnd = server[9].id
            remote.scriptedPage = { [remote] request in
                if ScriptedRemote.checkpoint(in: request.filter)?.id == fifthEnd { stopRequest.stop() }
                return remote.storedPage(request)
            }
        }
        let temporary = try TemporaryStore()
        let commits = CommittedPages()
        temporary.store.pool.add(transactionObserver: commits, extent: .databaseLifetime)
        let summary = try await Puller(store: temporary.store, remote: remote, stopRequest: stopRequest)
            .pull(PullRequest(table: "todo", queryID: "all", pageSize: 2))
        let stored = try temporary.store.query(table: "todo").map(\.id)
        for (records, checkpoint) in commits.seen {
            #expect(records % 2 == 0 || records == server.count, "whole pages: \(records)")
            #expect(checkpoint == server[records - 1].id, "the checkpoint of the last page written: \(records), \(checkpoint)")
        }
        let group = Puller.pagesACommit
        if stopping {
            #expect(summary.interrupted && stored.count < server.count)
            #expect(commits.seen.map(\.records).first == 2 * group && commits.seen.last?.records == stored.count)
        } else {
            // 12 pages of records and the empty one that ends the pull: a commit every `group`
            // pages, and one for what is left.
            let ends = Array(stride(from: group, to: 13, by: group)) + [13]
            #expect(commits.seen.map(\.records) == ends.map { min(2 * $0, 23) })
            #expect(Set(stored) == Set(server.map(\.id)) && summary.counts.received == 23 && summary.counts.pages == 12)
        }
        #expect(try temporary.store.savedQuery(table: "todo", queryID: "all")?.checkpoint?.id == server[stored.count - 1].id)
    }

    /// A page of `Puller.recordsACommit` records or more is written in a transaction of its own:
    /// three pages of 5,000 held for one commit left the store's writer idle while they came.
    @Test func aPageOfManyRecordsIsCommittedAlone() async throws {
        let remote = try ScriptedRemote()
        let size = Puller.recordsACommit
        for index in 0..<(2 * size + 10) { _ = try await remote.insert(table: "todo", item: ["id": .string("r\(index)")]) }
        let temporary = try TemporaryStore()
        let commits = CommittedPages()
        temporary.store.pool.add(transactionObserver: commits, extent: .databaseLifetime)
        let summary = try await Puller(store: temporary.store, remote: remote)
            .pull(PullRequest(table: "todo", queryID: "all", pageSize: size))
        #expect(summary.counts.received == 2 * size + 10)
        // The short third page waits for the empty one that ends the pull, as pages of a few do.
        #expect(commits.seen.map(\.records) == [size, 2 * size, 2 * size + 10])
    }

    /// A page that only repeats the checkpoint's run of equal timestamps (a replayed answer) is
    /// asked again before the pull walks on by `$skip`: the real answer comes, and no record is
    /// passed over.
    @Test func aReplayedPageAtTheCheckpointIsAskedAgain() async throws {
        let remote = try ScriptedRemote()
        let writer = try TemporaryStore()
        for id in ["a", "b"] { try writer.store.insert("todo", ["id": .string(id)]) }
        _ = try await Pusher(store: writer.store, remote: remote).push(tables: nil)
        let temporary = try TemporaryStore()
        let request = PullRequest(table: "todo", queryID: "all", pageSize: 1)
        _ = try await Puller(store: temporary.store, remote: remote).pull(request)
        let checkpoint = try #require(try temporary.store.savedQuery(table: "todo", queryID: "all")?.checkpoint)
        for id in ["c", "d", "e"] { try writer.store.insert("todo", ["id": .string(id)]) }
        _ = try await Pusher(store: writer.store, remote: remote).push(tables: nil)

        // The first answer of the next pull is the page that ended at the checkpoint.
        let replayed = Locked(false)
        let last = try #require(remote.records("todo")[checkpoint.id])
        remote.scriptedPage = { [remote] request in
            var first = false
            replayed.update { done in
                first = !done
                done = true
            }
            return first ? Page(records: [last], nextLink: nil) : remote.storedPage(request)
        }
        _ = try await Puller(store: temporary.store, remote: remote).pull(request)
        #expect(replayed.value)
        #expect(Set(try temporary.store.query(table: "todo").map(\.id)) == ["a", "b", "c", "d", "e"])
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

    /// A server that caps `$top` below the page size and sends no `Link` (as the Azure servers
    /// do): a page shorter than asked is not the end; only an empty page is.
    @Test(arguments: ["all", nil] as [String?])
    func aShortPageWithoutLinkIsNotTheEnd(queryID: String?) async throws {
        let writer = try TemporaryStore()
        for index in 0..<23 { try writer.store.insert("todo", ["id": .string("r\(100 + index)")]) }
        let remote = try ScriptedRemote()
        _ = try await Pusher(store: writer.store, remote: remote).push(tables: nil)
        remote.scriptedPage = { [remote] request in remote.storedPage(request, maxTop: 5) }

        let temporary = try TemporaryStore()
        let summary = try await Puller(store: temporary.store, remote: remote).pull(
            PullRequest(table: "todo", queryID: queryID, pageSize: 10))
        #expect(summary.counts.received == 23, "\(summary.counts)")
        #expect(try temporary.store.query(table: "todo").count == 23)
    }

    /// A server that keeps microseconds but sends milliseconds: runs of records at
    /// one sent timestamp come in the order of the hidden digits, not of their ids, and "after (T,
    /// id)" brings the whole run at T again. The pull tolerates both, walks a run longer than a
    /// page by offset, skips nothing, ends, and the next pull still works (the query id is never
    /// wedged).
    @Test func aServerThatTruncatesItsTimestampsNeitherWedgesNorSkips() async throws {
        let base: Int64 = 1_700_000_000_000_000
        // (microseconds, id): five-record runs inside one millisecond with ids against the order of
        // the microseconds, a 25-record run in one millisecond, and a lone record past its
        // millisecond (sent again after itself: the walk of that run ends on an empty page).
        var stored: [(Int64, String)] = []
        for index in 0..<20 { stored.append((base + Int64(index) * 200, "a\(99 - index)")) }
        for index in 0..<25 { stored.append((base + 7_000 + Int64(index), "b\(99 - index)")) }
        stored.append((base + 9_300, "c"))
        let records = Locked(stored)
        let remote = try ScriptedRemote()
        let requests = Locked(0)
        remote.scriptedPage = { request in
            requests.update { $0 += 1 }
            let after = ScriptedRemote.checkpoint(in: request.filter)
            let afterMicros = after.map { $0.updatedAt.millisecondsSinceEpoch * 1000 }
            let rows = records.value.sorted { $0.0 < $1.0 || ($0.0 == $1.0 && $0.1.utf8.lexicographicallyPrecedes($1.1.utf8)) }
                .filter { row in
                    guard let after, let afterMicros else { return true }
                    return row.0 > afterMicros || (row.0 == afterMicros && after.id.utf8.lexicographicallyPrecedes(row.1.utf8))
                }
            let page = rows.dropFirst(request.skip ?? 0).prefix(request.top ?? 50).map { row in
                LocalStore.serverRecord(row.1, ["n": .string(String(row.0))], version: "v\(row.0)", at: row.0 / 1000)
            }
            return Page(records: Array(page), nextLink: nil)
        }
        let temporary = try TemporaryStore()
        let request = PullRequest(table: "todo", queryID: "all", pageSize: 10)
        _ = try await Puller(store: temporary.store, remote: remote).pull(request)
        #expect(Set(try temporary.store.query(table: "todo").map(\.id)) == Set(stored.map(\.1)))
        #expect(requests.value < 20, "it ended: \(requests.value) requests")

        // Later writes, one inside the last run's millisecond and one after it.
        records.update { $0 += [(base + 9_500, "a0"), (base + 12_400, "z")] }
        requests.update { $0 = 0 }
        _ = try await Puller(store: temporary.store, remote: remote).pull(request)
        let ids = Set(try temporary.store.query(table: "todo").map(\.id))
        #expect(ids.isSuperset(of: ["a0", "z"]) && ids.count == stored.count + 2)
        #expect(requests.value < 10, "it ended: \(requests.value) requests")
        #expect(try temporary.store.savedQuery(table: "todo", queryID: "all")?.checkpoint?.id == "z")
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

    /// Three rounds of a batched push are on their way at once, and no item is in two of them: a
    /// server may apply them in any order (here the first waits until the third has arrived), yet
    /// nothing is sent twice and each item's operations are applied in queue order. The queue
    /// puts updates of the first round's items where the third round's claim reaches them.
    @Test func roundsOnTheirWayAtOnceHoldDistinctItems() async throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        let first = (0..<8).map { "a\($0)" }
        for id in first { try store.insert("todo", ["id": .string(id), "n": 0]) }
        let remote = try ScriptedRemote(batchLimit: 8)
        remote.fail(call: 1, with: .loseAnswer)
        await #expect(throws: TSyncError.self) { try await Pusher(store: store, remote: remote).push(tables: nil) }
        #expect(try first.allSatisfy { try store.queue("todo", $0) == ["insert(inflight)"] })
        for id in (0..<8).map({ "b\($0)" }) { try store.insert("todo", ["id": .string(id), "n": 1]) }
        for id in first[..<4] { _ = try store.update(table: "todo", id: id, fields: ["n": 1]) }
        for id in (0..<8).map({ "c\($0)" }) { try store.insert("todo", ["id": .string(id), "n": 1]) }
        for id in first[4...] { _ = try store.update(table: "todo", id: id, fields: ["n": 1]) }

        let before = remote.log.count
        remote.hold(batch: 2, until: 4)
        let summary = try await Pusher(store: store, remote: remote).push(tables: nil)
        #expect(remote.arrivedWhenReleased == 4, "the second push's first three rounds reached the server together")
        #expect(summary.pushed == 32 && summary.alreadyApplied == 8 && summary.failed == 0)
        let log = remote.log[before...].map { "\($0.kind.rawValue) \($0.id)" }
        #expect(log.count == 32 && Set(log).count == 32, "each operation sent once: \(log)")
        for id in first {
            let insert = try #require(log.firstIndex(of: "insert \(id)"))
            let update = try #require(log.firstIndex(of: "update \(id)"))
            #expect(insert < update, "\(id)")
        }
        #expect(remote.records("todo").values.allSatisfy { $0.fields["n"] == 1 } && remote.records("todo").count == 24)
        #expect(try store.pendingOperations().isEmpty)
    }

    /// A 5xx the server had in fact applied is no failure of the operation: it stays in
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
    ///: the update stays in flight, nothing is recorded as "missing", the edit stays.
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

/// A value shared with a `@Sendable` closure of a test.
final class Locked<Value: Sendable>: Sendable {
    private let stored: Mutex<Value>
    init(_ value: Value) { stored = Mutex(value) }
    var value: Value { stored.withLock { $0 } }
    func update(_ body: (inout Value) -> Void) { stored.withLock { body(&$0) } }
}

/// The records a store holds, and the checkpoint of its saved query, after each commit.
private final class CommittedPages: TransactionObserver, Sendable {
    private let state = Mutex<[(records: Int, checkpoint: String)]>([])
    var seen: [(records: Int, checkpoint: String)] { state.withLock { $0 } }

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool { true }
    func databaseDidChange(with event: DatabaseEvent) {}
    func databaseDidRollback(_ db: Database) {}
    func databaseDidCommit(_ db: Database) {
        guard let checkpoint = try? String.fetchOne(db, sql: "SELECT checkpoint_id FROM queries"),
            let records = try? Int.fetchOne(db, sql: "SELECT count(*) FROM records")
        else { return }
        state.withLock { $0.append((records, checkpoint)) }
    }
}
