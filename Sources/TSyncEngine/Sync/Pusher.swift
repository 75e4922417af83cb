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
    /// Of `failed`, those that are conflicts (409, 412, and 404: `FailureClass.isConflict`).
    public var conflicts = 0
    /// Conflicts the server answered (409, 412, 404), those a policy settled included
    /// (`push --on-conflict`).
    public var conflictsMet = 0
    /// Errors a conflict policy settled, by policy.
    public var settled: [ConflictPolicy: Int] = [:]
    /// Times the queue was sent: 1, plus one for each push again after settling conflicts.
    public var rounds = 1
    /// Operations not sent because their item has an unsettled error (`tsync conflicts`); an
    /// operation that failed in this push was sent, and is counted in `failed` only.
    public var heldBack = 0
    /// Operations a dry run would send.
    public var wouldPush = 0
    /// The push stopped early on a `StopRequest`; what it did not send is still queued.
    public var interrupted = false
    /// HTTP requests the push made (the batch route's discovery included).
    public var requests = 0
    /// The items of the operations answered (pushed or failed).
    package var items = ItemSample()
    /// The versions the accepted operations wrote, for the log (docs/DESIGN.md §15).
    package var written = PushedVersions()
    /// The operations that failed, to tell which of them a policy settled later.
    var failedOperations: [Int64] = []
    /// The conflicts a policy settled, one by one (`tsync watch` reports each).
    package var settledItems: [SettledItem] = []
    /// The tables of the operations this push's policies settled as their answers came
    /// (`Pusher.settling`) that are still to be pushed again.
    var settledToPush: Set<String> = []
    /// The operations whose answer this push's policies refused to merge: recorded as errors,
    /// which the policies do not try again.
    var refusedAtOnce: Set<Int64> = []

    /// Nothing pushed yet.
    public init() {}

    /// Sets `heldBack` from the operations now waiting behind errors (`waiting`), less those that
    /// failed in this push.
    mutating func setHeldBack(waiting: Int) {
        heldBack = max(0, waiting - failed)
    }

    /// Adds a later push of the same command (a push again after settling conflicts).
    mutating func add(_ next: PushSummary) {
        pushed += next.pushed
        alreadyApplied += next.alreadyApplied
        failed += next.failed
        conflicts += next.conflicts
        conflictsMet += next.conflictsMet
        requests += next.requests
        items.add(next.items)
        written.add(next.written)
        failedOperations += next.failedOperations
        settled.merge(next.settled, uniquingKeysWith: +)
        settledItems += next.settledItems
        interrupted = interrupted || next.interrupted
        rounds += 1
    }
}

/// A conflict a policy settled within a push (docs/DESIGN.md §9.1).
package struct SettledItem: Sendable, Equatable {
    package var table: String
    package var id: String
    package var policy: ConflictPolicy
}

/// Progress of a long push or pull: `done` of `total` (total nil when unknown).
package typealias SyncProgress = @Sendable (_ done: Int, _ total: Int?) -> Void

/// Sends pending operations in queue order (docs/DESIGN.md §7).
///
/// Operations are claimed in rounds of distinct items (marked in flight in one transaction), sent,
/// and their answers applied in one transaction per round. Against a server with the batch route
/// (`POST /tables/$batch`, discovered with `GET /tables/$batch`) a round is up to the server's
/// batch limit and goes in as few requests as its byte limit allows; against any other v2 server
/// a round is `roundSize` operations sent one request each, `concurrency` at a time. Distinct
/// items per round keep every item's operations in queue order either way.
package struct Pusher: Sendable {
    /// The store pushed from.
    package var store: LocalStore
    /// The server pushed to.
    package var remote: any SyncRemote
    /// Operations claimed per round when sending one request per operation.
    package var roundSize = 64
    /// Requests in flight at once (each for a different item), at least 1.
    package let concurrency: Int
    /// Rounds of the batch route on their way at once. With two, each process waited for the
    /// other at a round's ends: the server for a claim queued behind a completion on this task
    /// (one store connection), this task for an answer; with a third an answer waits here instead,
    /// and a round at the server while this task keeps up (docs/PERFORMANCE.md, "Push at the
    /// server's write limit").
    static let roundsInFlight = 3
    /// Requests in flight at once when no concurrency is given.
    package static let defaultConcurrency = SyncSession.defaultPushConcurrency

    /// When set and stopped, the push ends at its next safe point (`PushSummary.interrupted`).
    package var stopRequest: StopRequest?

    /// The conflict policies of `SyncSession.pushSettling`: a 412 they settle is settled as its
    /// answer is applied (`LocalStore.completeOperations(_:settling:)`), and its item is left
    /// for the push again that follows; nil: every failure goes to the error table.
    package var settling: ConflictPolicies?

    /// `concurrency` below 1 is taken as 1 (`SyncSession` refuses it with a message).
    package init(
        store: LocalStore, remote: any SyncRemote, stopRequest: StopRequest? = nil, concurrency: Int = defaultConcurrency,
        settling: ConflictPolicies? = nil
    ) {
        self.store = store
        self.remote = remote
        self.stopRequest = stopRequest
        self.concurrency = max(1, concurrency)
        self.settling = settling
    }

    /// Pushes every pushable operation of `tables` (all tables when nil).
    /// Throws `.unreachable` / `.unauthorized` when the server cannot be used; what was answered
    /// before is kept, and what was not sent goes back to pending.
    package func push(tables: [String]?, progress: SyncProgress? = nil) async throws(TSyncError) -> PushSummary {
        let lock = try PushLock(store: store)
        defer { withExtendedLifetime(lock) {} }
        var summary = PushSummary()
        let total = try store.pushableOperationCount(tables: tables)
        progress?(0, total)
        guard total > 0 else {
            summary.setHeldBack(waiting: try store.heldBackOperationCount(tables: tables))
            return summary
        }
        let batches = try await remote.batchCapabilities()
        summary.requests += 1
        if let batches {
            try await pushInBatches(tables: tables, batches, total: total, progress: progress, into: &summary)
        } else {
            var settled: [OutgoingOperation] = []
            while true {
                if stopRequest?.isStopped == true {
                    summary.interrupted = true
                    break
                }
                let claimed = try store.claimOperations(tables: tables, limit: roundSize, skipping: [settled])
                if claimed.isEmpty { break }
                let round = await sendOneByOne(claimed)
                settled += try finish(round, into: &summary)
                progress?(summary.pushed + summary.failed, max(total, summary.pushed + summary.failed))
                if let stop = round.stop { throw stop }
            }
        }
        summary.setHeldBack(waiting: try store.heldBackOperationCount(tables: tables))
        return summary
    }

    /// Rounds through the batch route, up to `roundsInFlight` at a time: while the server applies
    /// one round, this process claims the next ones (skipping the items of every round on its
    /// way) and applies the answers of the oldest, so the store's work and the server's overlap.
    /// Rounds are finished in order.
    private func pushInBatches(
        tables: [String]?, _ limits: BatchCapabilities, total: Int, progress: SyncProgress?, into summary: inout PushSummary
    ) async throws(TSyncError) {
        // Oldest first. An item is in at most one of them: each claim skips the items of all.
        var onItsWay: [(task: Task<Round, Never>, round: [OutgoingOperation])] = []
        var stop: TSyncError?
        // Operations settled as their answers came: their items wait for the push again.
        var settled: [OutgoingOperation] = []
        // Rounds start small and double up to the server's limit: the first batch is on its way
        // after a short claim, so the server is not idle while the pipeline fills.
        var roundSize = min(limits.maxOperations, 64)
        while true {
            var claimed: [OutgoingOperation] = []
            if stop == nil, stopRequest?.isStopped != true {
                claimed = try store.claimOperations(
                    tables: tables, limit: roundSize, skipping: onItsWay.map(\.round) + [settled])
                roundSize = min(limits.maxOperations, roundSize * 2)
            }
            if !claimed.isEmpty {
                let round = claimed
                onItsWay.append((Task { [self] in await sendInBatches(round, limits) }, round))
                if onItsWay.count < Self.roundsInFlight { continue }
            }
            // Nothing new, and nothing on its way either: done. (With rounds on their way, their
            // items' later operations could not be claimed yet: claim again once one is finished.)
            guard !onItsWay.isEmpty else { break }
            let oldest = onItsWay.removeFirst()
            let round = await oldest.task.value
            settled += try finish(round, into: &summary)
            progress?(summary.pushed + summary.failed, max(total, summary.pushed + summary.failed))
            if stop == nil { stop = round.stop }
        }
        if let stop { throw stop }
        if stopRequest?.isStopped == true, try store.pushableOperationCount(tables: tables) > 0 { summary.interrupted = true }
    }

    /// Pushes the pending operations of `tables` as ONE atomic batch: the server applies all of
    /// them or none. When any would fail, nothing is written: the failing operations go to the
    /// error table with what the server answered, the others stay pending (exit 2 on the command
    /// line). Needs a server whose batch route is atomic, a queue within its batch limit, one
    /// operation per item, and no unsettled error among them.
    package func pushAtomically(tables: [String]?, progress: SyncProgress? = nil) async throws(TSyncError) -> PushSummary {
        let lock = try PushLock(store: store)
        defer { withExtendedLifetime(lock) {} }
        var summary = PushSummary()
        let pending = try store.pushableOperations(tables: tables)
        summary.setHeldBack(waiting: try store.heldBackOperationCount(tables: tables))
        if summary.heldBack > 0 {
            throw TSyncError(
                .failure, "\(summary.heldBack) operation(s) wait behind unsettled errors, which an atomic push cannot",
                remedy: .resolveErrorsFirst)
        }
        guard !pending.isEmpty else { return summary }
        if let blind = pending.first(where: Self.isUnconditional) {
            throw .failure(
                "\(blind.operation.table)/\(blind.operation.itemID) has no server version to send in If-Match, which an atomic push cannot send: push without atomicity, which records it as an error"
            )
        }
        var items = Set<[UInt8]>()
        for outgoing in pending where !items.insert(Array("\(outgoing.operation.table)\u{0}\(outgoing.operation.itemID)".utf8)).inserted {
            throw .failure(
                "\(outgoing.operation.table)/\(outgoing.operation.itemID) has two queued operations (an earlier push may have sent the first): push without atomicity first"
            )
        }
        summary.requests += 1
        guard let batches = try await remote.batchCapabilities(), batches.atomic else {
            throw .failure(
                "the server at \(remote.endpoint) has no atomic batch route (it is not tsync serve, or its batch route is switched off): push without atomicity"
            )
        }
        guard pending.count <= batches.maxOperations else {
            throw .failure(
                "\(pending.count) operations are queued, more than the server's batch limit of \(batches.maxOperations): push them in parts"
            )
        }
        progress?(0, pending.count)
        var claimed = try store.claimOperations(tables: tables, limit: pending.count)
        // An operation the server reports as already applied (from an earlier push whose answer was
        // lost) fails the atomic batch without being a failure: take it as done and send the rest
        // again, a few times at most.
        for _ in 0..<3 where !claimed.isEmpty {
            let operations = claimed.map(\.batchOperation)
            guard operations.reduce(0, { $0 + $1.encodedSize }) <= batches.maxBytes else {
                try store.releaseOperations(claimed)
                throw .failure(
                    "the queued operations are larger than the server's batch limit of \(batches.maxBytes) bytes: push them in parts")
            }
            let reply: BatchReply
            do {
                reply = try await remote.batch(operations, atomic: true)
                summary.requests += 1
            } catch {
                // As in any round (`Round.failed`): a 401 may come after the batch was applied.
                if error.requestNeverSent { try store.releaseOperations(claimed) }
                throw error
            }
            guard case .answers(let answers, _) = reply else {
                try store.releaseOperations(claimed)
                throw .failure("the server refused the batch as too large: push them in parts")
            }
            var round = Round()
            var notApplied: [OutgoingOperation] = []
            var written = 0
            for (outgoing, answer) in zip(claimed, answers) {
                if case .rejected(424, _, _) = answer {
                    notApplied.append(outgoing)
                } else {
                    // An answer that cannot be verified leaves every operation in flight.
                    let verified = try await Self.verified(answer, of: outgoing, remote: remote)
                    if case .accepted = verified { written += 1 }
                    round.answered.append(AnsweredOperation(outgoing, Self.verdict(outgoing, verified)))
                }
            }
            let failures = round.answered.filter { if case .failed = $0.verdict { true } else { false } }.count
            round.unapplied = failures > 0 ? notApplied : []
            try finish(round, into: &summary)
            if failures > 0, written > 0 {
                // All or nothing was promised, and the server wrote some: what it wrote and what
                // it refused are recorded as it answered them, and the command says so.
                throw TSyncError(
                    .failure,
                    "\(remote.endpoint) broke the promise of an atomic batch: it wrote \(written) of the operations and refused \(failures); what it wrote is recorded as pushed, the refused ones are in the error table",
                    remedy: .listErrors)
            }
            claimed = failures > 0 ? [] : notApplied
        }
        try store.releaseOperations(claimed)
        progress?(summary.pushed + summary.failed, pending.count)
        summary.setHeldBack(waiting: try store.heldBackOperationCount(tables: tables))
        return summary
    }

    // MARK: - Rounds

    /// What one round of sending did: the answers, the error that stopped it, and the claimed
    /// operations the server cannot have applied (never sent, or refused a connection).
    struct Round: Sendable {
        var answered: [AnsweredOperation] = []
        var stop: TSyncError?
        var unapplied: [OutgoingOperation] = []
        var requests = 0
        /// The operations whose accepted record has, byte for byte, the fields sent: their
        /// completion saves its server properties without comparing the fields again.
        var fieldsKept: Set<Int64> = []

        /// Records a failed exchange for `operations`: it stops the push, and decides whether
        /// they may have reached the server. A 401 is no proof that they did not: a gateway may
        /// answer it after the server applied the write, and the 401 may be the answer to the
        /// read-back of a write that was applied. So only a request never sent puts
        /// its operations back to pending; the others stay in flight until an answer explains
        /// them, and after a login the next push re-sends them (docs/DESIGN.md §7).
        mutating func failed(_ error: TSyncError, for operations: some Sequence<OutgoingOperation>) {
            // Unauthorized outranks unreachable: logging in is what the user must do.
            if stop == nil || error.kind == .unauthorized { stop = error }
            if error.requestNeverSent { unapplied.append(contentsOf: operations) }
        }
    }

    /// Applies a round's answers in one transaction, counts them, and puts back what was not
    /// delivered. Only what the server cannot have applied goes back to pending: an operation sent
    /// without an answer (lost connection, timeout, dead server) may have been applied, so it
    /// stays in flight; a later local change queues after it instead of collapsing into it, and
    /// the next push re-sends exactly what was sent, which `PushVerdict` then recognises as
    /// already applied (docs/DESIGN.md §2.4).
    /// - Returns: the operations `settling` settled (counted as failed too, as the general path
    ///   counts them until `SyncSession.pushSettling` counts what is left).
    @discardableResult
    private func finish(_ round: Round, into summary: inout PushSummary) throws(TSyncError) -> [OutgoingOperation] {
        let atOnce = try store.completeOperations(round.answered, settling: settling, fieldsKept: round.fieldsKept)
        var settled: [OutgoingOperation] = []
        // By index, read in place: a loop over the answers copied each.
        for index in round.answered.indices {
            let operation = round.answered[index].outgoing.operation
            summary.items.add(table: operation.table, id: operation.itemID)
            switch round.answered[index].verdict {
            case .succeeded(let record, let alreadyApplied):
                summary.pushed += 1
                summary.written.add(operation, record)
                if alreadyApplied { summary.alreadyApplied += 1 }
            case .failed(let status, _, _):
                summary.failed += 1
                summary.failedOperations.append(operation.seq)
                if FailureClass(kind: operation.kind, status: status).isConflict {
                    summary.conflicts += 1
                    summary.conflictsMet += 1
                }
                guard let done = atOnce[operation.seq] else { continue }
                switch done.outcome {
                case .settled(let pending):
                    settled.append(round.answered[index].outgoing)
                    summary.settled[done.policy, default: 0] += 1
                    summary.settledItems.append(
                        SettledItem(table: operation.table, id: operation.itemID, policy: done.policy))
                    if pending { summary.settledToPush.insert(operation.table) }
                case .refused:
                    summary.refusedAtOnce.insert(operation.seq)
                }
            }
        }
        summary.requests += round.requests
        try store.releaseOperations(round.unapplied)
        return settled
    }

    /// Sends a round through the batch route: as few requests as the server's limits allow, one
    /// after the other, splitting a batch the server finds too large. An update that must first
    /// undelete the server's copy goes alone (two requests), since its update depends on the
    /// version the undelete makes.
    private func sendInBatches(_ claimed: [OutgoingOperation], _ limits: BatchCapabilities) async -> Round {
        var round = Round()
        var chunks: [ArraySlice<OutgoingOperation>] = []
        var current: [OutgoingOperation] = []
        var bytes = 0
        for outgoing in claimed {
            if Self.isUnconditional(outgoing) {
                round.answered.append(AnsweredOperation(outgoing, Self.withoutVersion))
                continue
            }
            if outgoing.restoresDeleted {
                if round.stop == nil, stopRequest?.isStopped != true {
                    do throws(TSyncError) {
                        round.answered.append(AnsweredOperation(outgoing, try await Self.send(outgoing, to: remote)))
                        round.requests += 2
                    } catch {
                        round.failed(error, for: [outgoing])
                    }
                } else {
                    round.unapplied.append(outgoing)
                }
                continue
            }
            let size = outgoing.batchSize
            if !current.isEmpty, current.count >= limits.maxOperations || bytes + size > limits.maxBytes - 64 {
                chunks.append(current[...])
                current = []
                bytes = 0
            }
            current.append(outgoing)
            bytes += size
        }
        if !current.isEmpty { chunks.append(current[...]) }
        chunks.reverse()  // a stack: the next chunk to send is last
        while let chunk = chunks.popLast() {
            guard round.stop == nil, stopRequest?.isStopped != true else {
                round.unapplied.append(contentsOf: chunk)
                continue
            }
            do throws(TSyncError) {
                let reply = try await remote.batch(chunk.map(\.batchOperation), atomic: false)
                round.requests += 1
                switch reply {
                case .answers(let answers, let asSent):
                    for (position, (outgoing, answer)) in zip(chunk, answers).enumerated() {
                        do throws(TSyncError) {
                            let fieldsAsSent = asSent.contains(position)
                            let verified = try await Self.verified(answer, of: outgoing, remote: remote, fieldsAsSent: fieldsAsSent)
                            // Its own record taken (not one read back): the fields are the item's.
                            if fieldsAsSent, case .accepted(_, let record?) = answer,
                                Self.holds(record, asSent: outgoing, fieldsAsSent: true)
                            {
                                round.fieldsKept.insert(outgoing.operation.seq)
                            }
                            round.answered.append(AnsweredOperation(outgoing, Self.verdict(outgoing, verified)))
                        } catch {
                            // The batch reached the server: an answer that cannot be verified
                            // leaves its operation in flight; the others' answers still count.
                            round.failed(TSyncError(error.kind, error.message), for: [])
                        }
                    }
                case .tooLarge(let message) where chunk.count == 1:
                    round.answered.append(
                        AnsweredOperation(chunk[chunk.startIndex], .failed(status: 413, message: message, serverRecord: nil)))
                case .tooLarge:
                    let middle = chunk.startIndex + chunk.count / 2
                    chunks.append(chunk[middle...])
                    chunks.append(chunk[..<middle])
                }
            } catch {
                round.failed(error, for: chunk)
            }
        }
        return round
    }

    /// Sends a round one request per operation, `concurrency` at a time. Stops starting new
    /// requests after the first unreachable/unauthorized error.
    private func sendOneByOne(_ claimed: [OutgoingOperation]) async -> Round {
        var round = Round()
        var next = 0
        let remote = self.remote
        let stopRequest = self.stopRequest
        await withTaskGroup(of: (OutgoingOperation, Result<PushVerdict, TSyncError>).self) { group in
            func startNext() {
                guard next < claimed.count, round.stop == nil, stopRequest?.isStopped != true else { return }
                let operation = claimed[next]
                next += 1
                group.addTask {
                    do throws(TSyncError) {
                        return (operation, .success(try await Self.send(operation, to: remote)))
                    } catch {
                        return (operation, .failure(error))
                    }
                }
            }
            for _ in 0..<min(concurrency, claimed.count) { startNext() }
            while let (operation, result) = await group.next() {
                switch result {
                case .success(let verdict): round.answered.append(AnsweredOperation(operation, verdict))
                case .failure(let error): round.failed(error, for: [operation])
                }
                startNext()
            }
        }
        round.requests = next + claimed[..<next].filter(\.restoresDeleted).count
        round.unapplied.append(contentsOf: claimed[next...])
        return round
    }

    /// What an answer means for the operation that was sent.
    static func verdict(_ outgoing: OutgoingOperation, _ answer: RemoteAnswer) -> PushVerdict {
        let kind = outgoing.operation.kind
        return PushVerdict.classify(kind: kind, sent: kind == .delete ? nil : outgoing.item, answer: answer)
    }

    static func send(_ outgoing: OutgoingOperation, to remote: any SyncRemote) async throws(TSyncError) -> PushVerdict {
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
                    // The update goes with `If-Match` the version the undelete made, never
                    // without: a server that answers without the item is asked.
                    version = try await restoredVersion(restored, of: outgoing, remote: remote)
                case let refused:
                    // Someone else undeleted (or changed) it, or a retry of ours already did: a
                    // 412 whose copy equals what we send counts as done, anything else is a
                    // conflict against that live copy, to settle again.
                    return verdict(outgoing, try await verified(refused, of: outgoing, remote: remote))
                }
            }
            guard let ifMatch = version else { return Self.withoutVersion }
            answer = try await remote.update(
                table: operation.table, id: operation.itemID, item: outgoing.item, version: ifMatch)
        case .delete:
            answer = try await remote.delete(table: operation.table, id: operation.itemID, version: outgoing.version)
        }
        return verdict(outgoing, try await verified(answer, of: outgoing, remote: remote))
    }

    /// An update is never sent without `If-Match`: it would overwrite whatever the
    /// server holds. Every copy from a server carries its version (a pull refuses a page without
    /// one); a store that holds one from before keeps the update in the error table with this,
    /// unsent (docs/DESIGN.md §7).
    static let withoutVersion = PushVerdict.failed(
        status: 428,
        message:
            "the local copy has no server version to send in If-Match (the server sent it without one), so this update would overwrite whatever the server holds; pull the table again, then resolve",
        serverRecord: nil)

    /// Whether `outgoing` is an update that would go without `If-Match` (`withoutVersion`).
    static func isUnconditional(_ outgoing: OutgoingOperation) -> Bool {
        outgoing.operation.kind == .update && outgoing.version == nil && !outgoing.restoresDeleted
    }

    /// Checks an answer against what the server can be asked, before it settles anything: an
    /// answer tsync cannot explain is thrown as `RemoteEndpoint.unexplained` (exit 3), and
    /// its operation stays in flight, exactly as for a lost answer (docs/DESIGN.md §7).
    ///
    /// - A success to an insert or update must bring the stored record as sent (`holds`: this
    ///   item's, live, with a new version and the fields sent): the local copy takes it, and the
    ///   next change is checked against it. When the answer has none (an empty or damaged body, a
    ///   204, another item's record, the version sent in `If-Match` as if the write changed
    ///   nothing, other fields or the item deleted, as a cache replaying an earlier answer sends),
    ///   the record is read back, and the read-back counts only when it shows the write applied
    ///   the same way (the old copy means "not applied").
    /// - A success to a delete must bring the item marked deleted, else the server is asked, with
    ///   deleted copies included, whether it still has it live.
    /// - A 404/410 is "deleted on the server" only when the server says so for that item: its
    ///   table answers a read of the item (deleted copies included) without it, or with it
    ///   deleted. A 404 of the route or the table (a proxy, `{"error": "table not found"}`) is
    ///   not; an insert's 404 never is.
    /// - A 409/412 must carry this item's record, if any; a 5xx may have been applied, so it is
    ///   not a failure of the operation.
    ///
    /// `fieldsAsSent`: the answer's record has, byte for byte, the fields sent
    /// (`BatchReply.answers`), so only its id, version and deletion are checked.
    static func verified(
        _ answer: RemoteAnswer, of outgoing: OutgoingOperation, remote: any SyncRemote, fieldsAsSent: Bool = false
    ) async throws(TSyncError) -> RemoteAnswer {
        let operation = outgoing.operation
        let name = "\(operation.table)/\(operation.itemID)"
        func isItem(_ record: Record?) -> Bool { record?.id.utf8.elementsEqual(operation.itemID.utf8) == true }
        switch answer {
        case .accepted(let status, let record) where operation.kind == .delete:
            if isItem(record), record?.system.deleted == true { return answer }
            let copy = try await serverCopy(of: outgoing, remote: remote, after: "accepted the delete of \(name) without the deleted copy")
            if let copy, !copy.system.deleted {
                throw remote.endpoint.unexplained("it accepted the delete of \(name) but still has it")
            }
            return .accepted(status: status, record: copy)
        case .accepted(let status, let record):
            // The answer must show the write stored: a version that did not move is a success the
            // server did not do; other fields, or the item deleted, are an earlier
            // answer replayed or a write not done as sent. Otherwise it is read back.
            if let record, Self.holds(record, asSent: outgoing, fieldsAsSent: fieldsAsSent) { return answer }
            let stored = try await readBack(outgoing, remote: remote)
            let accepted =
                record == nil
                ? "accepted the \(operation.kind.rawValue) of \(name) without sending back the record"
                : "accepted the \(operation.kind.rawValue) of \(name) with a record that is not what was sent"
            guard let stored, isItem(stored), stored.system.version != nil else {
                throw remote.endpoint.unexplained("it \(accepted), and reading it back failed")
            }
            guard Self.holds(stored, asSent: outgoing) else {
                throw remote.endpoint.unexplained("it \(accepted), and reading it back shows the write not applied")
            }
            return .accepted(status: status, record: stored)
        case .rejected(let status, _, _) where RemoteClient.isNotNow(status):
            throw remote.endpoint.unexplained(
                "it answered the \(operation.kind.rawValue) of \(name) with HTTP \(status), so it may or may not have applied it")
        case .rejected(let status, _, let record?) where !isItem(record):
            throw remote.endpoint.unexplained(
                "it answered the \(operation.kind.rawValue) of \(name) with HTTP \(status) and the record of \(record.id)")
        case .rejected(let status, _, _) where status == 404 || status == 410:
            guard operation.kind != .insert else {
                throw remote.endpoint.unexplained(
                    "it answered the insert of \(name) with HTTP \(status) (is there a table \(operation.table) on the server?)")
            }
            let copy = try await serverCopy(
                of: outgoing, remote: remote, after: "answered the \(operation.kind.rawValue) of \(name) with HTTP \(status)")
            if let copy, !copy.system.deleted {
                throw remote.endpoint.unexplained(
                    "it answered the \(operation.kind.rawValue) of \(name) with HTTP \(status) but has the item")
            }
            return answer
        case .rejected:
            return answer
        }
    }

    /// Whether `record` is the server's copy of an insert or update as sent: this item, live, with
    /// a version other than the one sent in `If-Match`, and every field sent with the value sent
    /// (a field sent as null may be absent; `1` equals `1.0`). Fields the server adds are allowed:
    /// a server may compute some, while `tsync serve` stores exactly what it is sent (docs/DESIGN.md §7).
    /// With `fieldsAsSent` its fields are known to be the item's, and are not compared.
    static func holds(_ record: Record, asSent outgoing: OutgoingOperation, fieldsAsSent: Bool = false) -> Bool {
        guard record.id.utf8.elementsEqual(outgoing.operation.itemID.utf8), !record.system.deleted,
            let version = record.system.version, version != outgoing.version
        else { return false }
        if fieldsAsSent { return true }
        return outgoing.item.allSatisfy { name, value in
            SystemProperties.names.contains(name) || ThreeWayMerge.same(value, record.fields[name])
        }
    }

    /// The version an undelete made: the one in its answer, else the one a read of the item
    /// gives; `.unexplained` (the operation stays in flight) when neither tells.
    private static func restoredVersion(_ restored: Record?, of outgoing: OutgoingOperation, remote: any SyncRemote)
        async throws(TSyncError) -> String
    {
        let id = outgoing.operation.itemID
        if let restored, restored.id.utf8.elementsEqual(id.utf8), !restored.system.deleted, let version = restored.system.version {
            return version
        }
        guard let copy = try await readBack(outgoing, remote: remote), copy.id.utf8.elementsEqual(id.utf8), !copy.system.deleted,
            let version = copy.system.version
        else {
            throw remote.endpoint.unexplained(
                "it accepted the undelete of \(outgoing.operation.table)/\(id) without the record, and reading it back failed")
        }
        return version
    }

    /// The item as the server reads it back (`GET` of the item), nil when that read brings no
    /// record; a refused token is thrown (logging in is what the user must do).
    private static func readBack(_ outgoing: OutgoingOperation, remote: any SyncRemote) async throws(TSyncError) -> Record? {
        do {
            if case .accepted(_, let copy?) = try await remote.read(table: outgoing.operation.table, id: outgoing.operation.itemID) {
                return copy
            }
            return nil
        } catch  where error.kind == .unauthorized {
            throw error
        } catch {
            return nil
        }
    }

    /// The server's copy of the operation's item, deleted copies included, nil when its table
    /// answers without it; `.unexplained` when the table cannot be read (the answer that asked for
    /// this check then cannot be verified).
    private static func serverCopy(of outgoing: OutgoingOperation, remote: any SyncRemote, after what: String) async throws(TSyncError)
        -> Record?
    {
        let key = ItemKey(table: outgoing.operation.table, id: outgoing.operation.itemID)
        do {
            return try await ServerCopies.read([key], from: remote)[key]
        } catch  where error.kind == .unauthorized || error.kind == .unreachable {
            throw error
        } catch {
            throw remote.endpoint.unexplained("it \(what), and reading the item back failed (\(error.message))")
        }
    }
}

extension OutgoingOperation {
    /// About its bytes in a batch body, counted without serializing it (that happens once, when
    /// the batch is sent). Text may need escapes, so strings count a little more than their bytes;
    /// a batch the server still finds too large is split on its 413.
    var batchSize: Int { Self.estimate(.object(item)) + operation.table.utf8.count + operation.itemID.utf8.count + 96 }

    private static func estimate(_ value: JSONValue) -> Int {
        switch value {
        case .null, .bool: return 5
        case .int, .double: return 24
        case .string(let text): return text.utf8.count + text.utf8.count / 8 + 2
        case .array(let elements): return elements.reduce(2) { $0 + estimate($1) + 1 }
        case .object(let object): return object.reduce(2) { $0 + $1.key.utf8.count + 4 + estimate($1.value) }
        }
    }

    /// The operation as one write of a batch.
    var batchOperation: BatchOperation {
        let operation = self.operation
        switch operation.kind {
        case .insert: return BatchOperation(method: .insert, table: operation.table, id: operation.itemID, item: item, version: nil)
        case .update: return BatchOperation(method: .update, table: operation.table, id: operation.itemID, item: item, version: version)
        case .delete: return BatchOperation(method: .delete, table: operation.table, id: operation.itemID, item: nil, version: version)
        }
    }
}
