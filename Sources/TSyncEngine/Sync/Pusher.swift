import Foundation
import TSyncModel

/// What a push did, for the summary line and `push --json`.
public struct PushSummary: Sendable, Equatable {
    /// Operations the server accepted (including those it had already applied).
    public var pushed = 0
    /// Of `pushed`, operations a lost response had hidden: the server already had them.
    public var alreadyApplied = 0
    /// Operations that failed in this push and now sit in the error table.
    public var failed = 0
    /// Of `failed`, those that are conflicts (409/412).
    public var conflicts = 0
    /// Operations not sent because their item has an unresolved error (`tsync conflicts`).
    public var heldBack = 0
    /// Operations a dry run would send.
    public var wouldPush = 0
    /// The push stopped early on a `StopRequest`; what it did not send is still queued.
    public var interrupted = false

    public init() {}
}

/// Progress of a long push or pull: `done` of `total` (total nil when unknown).
public typealias SyncProgress = @Sendable (_ done: Int, _ total: Int?) -> Void

/// Sends pending operations in queue order (DESIGN §1 Push).
///
/// Operations are claimed in small batches of distinct items (marked in flight in one
/// transaction), sent with a few requests at a time, and their answers applied in one transaction
/// per batch. Distinct items per batch keep every item's operations in queue order while requests
/// overlap; the batch transactions keep the SQLite cost per operation small.
public struct Pusher: Sendable {
    public var store: LocalStore
    public var remote: RemoteClient
    /// Operations claimed per transaction.
    public var batchSize = 64
    /// Requests in flight at once (each for a different item), at least 1.
    public let concurrency: Int
    public static let defaultConcurrency = 8

    /// When set and stopped, the push ends at its next safe point (`PushSummary.interrupted`).
    public var stopRequest: StopRequest?

    /// `concurrency` below 1 is taken as 1 (`SyncSession` refuses it with a message).
    public init(store: LocalStore, remote: RemoteClient, stopRequest: StopRequest? = nil, concurrency: Int = defaultConcurrency) {
        self.store = store
        self.remote = remote
        self.stopRequest = stopRequest
        self.concurrency = max(1, concurrency)
    }

    /// Pushes every pushable operation of `tables` (all tables when nil).
    /// Throws `.unreachable` / `.unauthorized` when the server cannot be used; the operations
    /// not answered go back to pending and everything answered before is kept.
    public func push(tables: [String]?, progress: SyncProgress? = nil) async throws(TSyncError) -> PushSummary {
        let lock = try PushLock(store: store)
        defer { withExtendedLifetime(lock) {} }
        var summary = PushSummary()
        let total = try store.pushableOperations(tables: tables).count
        progress?(0, total)
        while true {
            if stopRequest?.isStopped == true {
                summary.interrupted = true
                break
            }
            let batch = try store.claimOperations(tables: tables, limit: batchSize)
            if batch.isEmpty { break }
            let (answered, stop, unapplied) = await send(batch)
            try store.completeOperations(answered)
            for (_, verdict) in answered {
                switch verdict {
                case .succeeded(_, let alreadyApplied):
                    summary.pushed += 1
                    if alreadyApplied { summary.alreadyApplied += 1 }
                case .failed(let status, _, _):
                    summary.failed += 1
                    if status == 409 || status == 412 { summary.conflicts += 1 }
                }
            }
            progress?(summary.pushed + summary.failed, max(total, summary.pushed + summary.failed))
            // Only what the server cannot have applied goes back to pending. An operation sent
            // without an answer (lost connection, timeout, dead server) may have been applied: it
            // stays in flight, so a later local change queues after it instead of collapsing into
            // it, and the next push re-sends exactly what was sent, which `PushVerdict` then
            // recognises as already applied (DESIGN §2.4).
            try store.releaseOperations(unapplied)
            if let stop { throw stop }
        }
        summary.heldBack = try store.heldBackOperationCount(tables: tables)
        return summary
    }

    /// Sends a batch, `concurrency` requests at a time. Stops starting new requests after the
    /// first unreachable/unauthorized error, and returns what was answered, that error, and the
    /// operations the server cannot have applied: those never sent (not started, or refused a
    /// connection), and those it refused for want of a valid token.
    private func send(
        _ batch: [OutgoingOperation]
    ) async -> (answered: [(OutgoingOperation, PushVerdict)], stop: TSyncError?, unapplied: [OutgoingOperation]) {
        var answered: [(OutgoingOperation, PushVerdict)] = []
        var unapplied: [OutgoingOperation] = []
        var stop: TSyncError?
        var next = 0
        let remote = self.remote
        let stopRequest = self.stopRequest
        await withTaskGroup(of: (OutgoingOperation, Result<PushVerdict, TSyncError>).self) { group in
            func startNext() {
                guard next < batch.count, stop == nil, stopRequest?.isStopped != true else { return }
                let operation = batch[next]
                next += 1
                group.addTask {
                    do throws(TSyncError) {
                        return (operation, .success(try await Self.send(operation, to: remote)))
                    } catch {
                        return (operation, .failure(error))
                    }
                }
            }
            for _ in 0..<min(concurrency, batch.count) { startNext() }
            while let (operation, result) = await group.next() {
                switch result {
                case .success(let verdict): answered.append((operation, verdict))
                case .failure(let error):
                    // Unauthorized outranks unreachable: logging in is what the user must do.
                    if stop == nil || error.kind == .unauthorized { stop = error }
                    if error.kind == .unauthorized || error.requestNeverSent { unapplied.append(operation) }
                }
                startNext()
            }
        }
        unapplied.append(contentsOf: batch[next...])
        return (answered, stop, unapplied)
    }

    static func send(_ outgoing: OutgoingOperation, to remote: RemoteClient) async throws(TSyncError) -> PushVerdict {
        let operation = outgoing.operation
        let answer: RemoteAnswer
        switch operation.kind {
        case .insert:
            answer = try await remote.insert(table: operation.table, item: outgoing.item)
        case .update:
            var version = outgoing.version
            if outgoing.restoresDeleted {
                switch try await remote.undelete(table: operation.table, id: operation.itemID, version: version) {
                case .accepted(_, let restored):
                    // A server that answers without the item gives no version to match: the
                    // update then goes without `If-Match`, right after the undelete.
                    version = restored?.system.version
                case let refused:
                    // Someone else undeleted (or changed) it, or a retry of ours already did: a
                    // 412 whose copy equals what we send counts as done, anything else is a
                    // conflict against that live copy, to resolve again.
                    return PushVerdict.classify(kind: .update, sent: outgoing.item, answer: refused)
                }
            }
            answer = try await remote.update(
                table: operation.table, id: operation.itemID, item: outgoing.item, version: version)
        case .delete:
            answer = try await remote.delete(table: operation.table, id: operation.itemID, version: outgoing.version)
        }
        return PushVerdict.classify(kind: operation.kind, sent: operation.kind == .delete ? nil : outgoing.item, answer: answer)
    }
}
