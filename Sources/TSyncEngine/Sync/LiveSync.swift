import Foundation
import Synchronization
import GRDB
import TSyncModel

/// What `tsync watch` asks for (docs/DESIGN.md §8.1).
package struct LiveOptions: Sendable {
    /// The tables whose saved queries are watched; empty: every saved query.
    package var tables: [String]
    /// How often a server without the live route is asked again.
    package var interval: Duration
    /// When to end (nil: never, until stopped).
    package var timeout: Duration?
    /// The conflict policies of every push (as `push --on-conflict`).
    package var policies: ConflictPolicies

    /// How often the queue is looked at for operations other commands queued.
    package static let queuePollInterval = Duration.milliseconds(100)
    /// The longest wait asked of the server (its own cap is 25 s), less when the HTTP timeout is short.
    package static let maximumWaitSeconds = 20
    package static let defaultInterval = Duration.seconds(5)

    package init(
        tables: [String] = [], interval: Duration = defaultInterval, timeout: Duration? = nil,
        policies: ConflictPolicies = ConflictPolicies()
    ) {
        self.tables = tables
        self.interval = interval
        self.timeout = timeout
        self.policies = policies
    }
}

/// One thing `tsync watch` reports (`--json`: one NDJSON object each, docs/DESIGN.md §3). The
/// fields are an interface: they are only ever added to.
package struct LiveEvent: Sendable, Equatable {
    package enum Kind: String, Sendable {
        /// A record the server sent was written to the working copy.
        case pulled
        /// A record the server deleted was removed from the working copy.
        case deleted
        /// A queued operation was accepted by the server.
        case pushed
        /// An operation failed and is in the error table (`tsync conflicts`).
        case conflict
        /// A conflict was settled by a policy (`policy`).
        case settled
        /// The server answers (again): at the start, before any change it sent, and after
        /// `reconnecting`.
        case connected
        /// The server could not be reached, or gave an answer that was not one (a 5xx, a page
        /// that cannot be taken), or the store was busy: it is asked again after `retryIn`
        /// seconds. Said again each time the wait grows.
        case reconnecting
        /// The server has no live route: it is asked every `interval` seconds instead.
        case polling
        /// The server removed deleted records past the saved query's checkpoint (its deleted
        /// horizon, docs/DESIGN.md §15): the query was read whole, and a `deleted` event follows
        /// for each local record dropped because the server no longer has it (`resync`).
        case resynced
    }

    package var kind: Kind
    package var table: String?
    package var id: String?
    package var at: Timestamp
    /// `pulled`, `deleted`: the saved query that brought it.
    package var queryID: String?
    /// `pulled`, `deleted`, `pushed`: the server's version of the record, when known; `pushed`
    /// names the one the store took (a newer copy a pull brought while the push was on its way
    /// rather than the answer). `settled`: the version the store holds once settled (absent when
    /// the record is gone or not on the server).
    package var version: String?
    /// `pushed`, `conflict`: insert, update or delete.
    package var operation: String?
    /// `settled`: ours, theirs or merge.
    package var policy: String?
    /// `conflict`, `reconnecting`: why, in words.
    package var message: String?
    /// `reconnecting`: seconds until the next try.
    package var retryIn: Double?
    /// `polling`: seconds between reads.
    package var interval: Double?
    /// `resynced`: the horizon, the records dropped and those kept for their pending changes.
    package var resync: HorizonResync?

    package init(_ kind: Kind, table: String? = nil, id: String? = nil, at: Timestamp = Timestamp.now()) {
        self.kind = kind
        self.table = table
        self.id = id
        self.at = at
    }
}

/// How a watch ended.
package enum LiveEnd: Sendable, Equatable {
    /// `--timeout` passed.
    case timedOut
    /// The `StopRequest` was set (SIGINT, SIGTERM): the step under way was finished.
    case stopped
}

/// The queue as `watch` looks at it: changes when another command queues an operation.
struct QueueMark: Equatable {
    var lastSeq: Int64
    var count: Int
}

extension LocalStore {
    /// The highest queued sequence number and the number of operations: one read, no lock held.
    func queueMark() throws(TSyncError) -> QueueMark {
        try read { db in
            let row = try Row.fetchOne(db, sql: "SELECT ifnull(max(seq), 0) AS s, count(*) AS c FROM operations")
            return QueueMark(lastSeq: row?["s"] ?? 0, count: row?["c"] ?? 0)
        }
    }
}

extension SyncSession {
    /// `tsync watch` (docs/DESIGN.md §8.1): a sync (push with the conflict policies, then a pull
    /// of every watched saved query), then, until `options.timeout` or the stop request, one
    /// long-poll per watched query, applying pages exactly as `pull` does (the checkpoint moves
    /// only with a written page), and a push whenever another command queues an operation.
    /// `onEvents` gets each batch of changes (a page's, a push's) as it is written. Nothing is
    /// held between steps: other commands on the store never wait for the watch.
    package func watch(_ options: LiveOptions, onEvents: @escaping @Sendable ([LiveEvent]) async -> Void) async throws(TSyncError)
        -> LiveEnd
    {
        try store.requireTables(options.tables)
        let wanted = Set(options.tables.map { $0.lowercased() })
        let queries = try store.savedQueries().filter { wanted.isEmpty || wanted.contains($0.table.lowercased()) }
        for table in options.tables where !queries.contains(where: { $0.table.lowercased() == table.lowercased() }) {
            throw .usage("table \(table) has no saved query id to watch: pull it once with a query id first")
        }
        guard !queries.isEmpty else {
            throw .usage("there is nothing to watch: no saved query id (pull a table once with a query id first)")
        }
        let deadline = options.timeout.map { ContinuousClock.now + $0 }
        return try await withRemote { remote throws(TSyncError) in
            let output = EventRelay(onEvents)
            let end: Result<LiveEnd, TSyncError>
            do throws(TSyncError) {
                end = .success(
                    try await LiveRun(session: self, remote: remote, options: options, deadline: deadline, output: output).run(queries))
            } catch {
                end = .failure(error)
            }
            await output.drain()
            return try end.get()
        }
    }
}

/// One watch: its loops and what they share (whether the server answers, whether polling was said).
private final class LiveRun: Sendable {
    let session: SyncSession
    let remote: RemoteClient
    let options: LiveOptions
    let deadline: ContinuousClock.Instant?
    /// Where the events go, in order (`EventRelay`).
    let output: EventRelay
    /// The seconds asked of the server: below the HTTP exchange's deadline.
    let waitSeconds: Int

    /// Whether the server answered last time (false until it first does), the longest wait said
    /// since (`reconnecting` is said again only when the wait grows), and whether polling has
    /// been said.
    private let state = Mutex((connected: false, saidWait: 0.0, saidPolling: false))
    /// The last entry of the delivered operations reported (`DeliveredOperations`). Held while
    /// a batch of changes is handed to `output`, so that batches go out in the order the store
    /// wrote them (`report`).
    private let reported = Mutex(Int64(0))

    init(
        session: SyncSession, remote: RemoteClient, options: LiveOptions, deadline: ContinuousClock.Instant?, output: EventRelay
    ) {
        self.session = session
        self.remote = remote
        self.options = options
        self.deadline = deadline
        self.output = output
        waitSeconds = max(1, min(LiveOptions.maximumWaitSeconds, Int(session.timeout.components.seconds) - 5))
    }

    private var store: LocalStore { session.store }
    private var stopped: Bool { session.stopRequest?.isStopped == true }

    func run(_ queries: [SavedQuery]) async throws(TSyncError) -> LiveEnd {
        // The sync it starts with, retried as any later loss is: a watch started before its
        // server (a laptop offline, a server restarting) waits for it rather than ending.
        let pushLog = try store.lastPush()
        reported.withLock { $0 = pushLog }
        var attempt = 0
        while true {
            do throws(TSyncError) {
                if let end = try await firstSync(queries) { return end }
                break
            } catch  where Self.isTemporary(error) {
                attempt += 1
                let delay = Self.backoff(attempt)
                await unreachable(error, attempt: attempt, retryIn: delay)
                if let end = await pause(delay) { return end }
            }
        }
        await reachable()

        let result = await withTaskGroup(of: Result<LiveEnd, TSyncError>?.self) { group in
            for query in queries { group.addTask { await self.pullLoop(query) } }
            group.addTask { await self.controlLoop() }
            var first: Result<LiveEnd, TSyncError>?
            for await exit in group {
                guard let exit else { continue }
                first = exit
                break
            }
            group.cancelAll()
            return first ?? .success(.stopped)
        }
        return try result.get()
    }

    /// Push with the policies, then a pull of each watched query; how the watch ends when it
    /// was stopped during it.
    private func firstSync(_ queries: [SavedQuery]) async throws(TSyncError) -> LiveEnd? {
        let push = try await pushEvents { () throws(TSyncError) in
            try await session.pushSettling(remote, tables: nil, policies: options.policies)
        }
        if push.interrupted || stopped { return .stopped }
        for query in queries {
            var puller = Puller(store: store, remote: remote, stopRequest: session.stopRequest)
            puller.pageObserver = pageObserver(query, seen: nil)
            puller.resyncObserver = resyncObserver(query)
            let summary = try await puller.pull(PullRequest(table: query.table, queryID: query.queryID))
            if summary.interrupted || stopped { return .stopped }
        }
        return nil
    }

    /// Waits `delay`, looking at the stop request and the deadline every `queuePollInterval`: how
    /// the watch ends when one of them comes first, nil after the delay.
    private func pause(_ delay: Duration) async -> LiveEnd? {
        let end = ContinuousClock.now + delay
        while ContinuousClock.now < end {
            if stopped { return .stopped }
            if let deadline, ContinuousClock.now >= deadline { return .timedOut }
            try? await Task.sleep(for: min(LiveOptions.queuePollInterval, end - ContinuousClock.now))
        }
        return stopped ? .stopped : nil
    }

    // MARK: - Pull

    /// Long-polls one saved query until cancelled; nil then, or the error that ends the watch.
    private func pullLoop(_ query: SavedQuery) async -> Result<LiveEnd, TSyncError>? {
        var attempt = 0
        let seen = WaitSeen()
        while !Task.isCancelled {
            var puller = Puller(store: store, remote: remote)
            puller.pageObserver = pageObserver(query, seen: seen)
            puller.resyncObserver = resyncObserver(query)
            var request = PullRequest(table: query.table, queryID: query.queryID)
            request.wait = waitSeconds
            do {
                seen.reset()
                let asked = ContinuousClock.now
                let summary = try await puller.pull(request)
                attempt = 0
                await reachable()
                switch seen.applied {
                case nil:
                    // A plain v2 server: it answered at once without saying it held anything.
                    await sayPollingOnce()
                    try await Task.sleep(for: options.interval)
                case 0?:
                    // The server holds as many requests as it allows: ask again a little later.
                    try await Task.sleep(for: options.interval)
                case let held?:
                    // A held read comes back empty only when its time is up (or the server stops):
                    // empty long before that is a server or proxy that says it waits and does not,
                    // and asking again at once would be a storm of requests.
                    if summary.counts.received == 0, ContinuousClock.now - asked < .seconds(held) / 2 {
                        try await Task.sleep(for: options.interval)
                    }
                }
            } catch let error as TSyncError where Self.isTemporary(error) {
                if Task.isCancelled { return nil }
                attempt += 1
                let delay = Self.backoff(attempt)
                await unreachable(error, attempt: attempt, retryIn: delay)
                do { try await Task.sleep(for: delay) } catch { return nil }
            } catch let error as TSyncError {
                return Task.isCancelled ? nil : .failure(error)
            } catch {
                return nil  // the sleep was cancelled
            }
        }
        return nil
    }

    /// Turns each written page into events (`seen`: where the server's answer to `wait` goes).
    private func pageObserver(_ query: SavedQuery, seen: WaitSeen?) -> @Sendable (String, PageResult, StoredPage) async -> Void {
        { [self] table, result, page in
            seen?.record(page.waitApplied)
            // A page was taken: the server answers, which is said before what it sent.
            await reachable()
            // One time for the page: its records were written in one transaction.
            let at = Timestamp.now()
            let events = result.changes.map { change in
                var event = LiveEvent(change.kind == .removed ? .deleted : .pulled, table: table, id: change.id, at: at)
                event.queryID = query.queryID
                event.version = change.version
                return event
            }
            // The pushes written before the page first. (A log that cannot be read now is
            // reported by the next look at it; the page's changes are said anyway.)
            do { try await report(events, pushedUpTo: result.pushedBefore) } catch { if !events.isEmpty { await output.send(events) } }
        }
    }

    /// Says that a pull read the query whole past the server's deleted horizon, then each record
    /// it dropped as `deleted`: a consumer of the events learns of deletes it will never be sent.
    private func resyncObserver(_ query: SavedQuery) -> @Sendable (String, HorizonResync) async -> Void {
        { [self] table, resync in
            let at = Timestamp.now()
            var said = LiveEvent(.resynced, table: table, at: at)
            said.queryID = query.queryID
            said.resync = resync
            let deleted = resync.droppedIDs.map { id in
                var event = LiveEvent(.deleted, table: table, id: id, at: at)
                event.queryID = query.queryID
                return event
            }
            do { try await report([said] + deleted) } catch { await output.send([said] + deleted) }
        }
    }

    // MARK: - Push, stop and timeout

    /// Looks at the queue every `queuePollInterval` and pushes what other commands queued; ends
    /// the watch on the stop request (after the push under way) or at the deadline. Between pushes
    /// it reports what other commands pushed (`tsync push` in another shell), from the delivered operations.
    private func controlLoop() async -> Result<LiveEnd, TSyncError>? {
        var last: QueueMark?
        var attempt = 0
        var retryAt: ContinuousClock.Instant?
        while true {
            if stopped { return .success(.stopped) }
            if let deadline, ContinuousClock.now >= deadline { return .success(.timedOut) }
            do throws(TSyncError) {
                let mark = try store.queueMark()
                let due = retryAt.map { ContinuousClock.now >= $0 } ?? false
                if (mark != last && mark.count > 0) || due {
                    do throws(TSyncError) {
                        let summary = try await pushEvents { () throws(TSyncError) in
                            try await session.pushSettling(remote, tables: nil, policies: options.policies)
                        }
                        retryAt = nil
                        attempt = 0
                        await reachable()
                        if summary.interrupted { return .success(.stopped) }
                    } catch  where Self.isTemporary(error) {
                        attempt += 1
                        let delay = Self.backoff(attempt)
                        retryAt = ContinuousClock.now + delay
                        await unreachable(error, attempt: attempt, retryIn: delay)
                    }
                } else {
                    try await report([])
                }
                last = mark
            } catch {
                return .failure(error)
            }
            try? await Task.sleep(for: LiveOptions.queuePollInterval)
        }
    }

    /// Runs a push and reports what it did, operation by operation: every operation pushed since
    /// the last report (by it, those queued while it ran included, or by another command), each
    /// policy's settlement, each failure. (A page written while the push ran has reported the
    /// operations pushed before it already, `report`.)
    private func pushEvents(_ push: () async throws(TSyncError) -> PushSummary) async throws(TSyncError) -> PushSummary {
        let summary = try await push()
        var events: [LiveEvent] = []
        for item in summary.settledItems {
            var event = LiveEvent(.settled, table: item.table, id: item.id)
            event.policy = item.policy.rawValue
            events.append(event)
        }
        for error in try store.operationErrors(operations: summary.failedOperations) {
            var event = LiveEvent(.conflict, table: error.table, id: error.itemID)
            event.operation = error.kind.rawValue
            event.message = error.message
            events.append(event)
        }
        // What the server settled or refused is its answer: that it answers is said first.
        if summary.requests > 0 { await reachable() }
        try await report(events)
        return summary
    }

    /// Hands `events` to the output after a `pushed` event for each entry of the delivered
    /// operations not reported yet (up to `last`): each operation that left the queue because it
    /// was pushed, whoever pushed it, once. The store's writes and the events agree in order: a
    /// page reports the pushes written before it (`PageResult.pushedBefore`) ahead of its own
    /// changes, and what is reported is handed on under one lock, so a push's answer is never
    /// said after a newer copy of its record that a page brought (nor a page's change after a
    /// push the store wrote later). A `settled` event names the version its record holds when
    /// it is said (a page may have brought a newer one since).
    private func report(_ events: [LiveEvent], pushedUpTo last: Int64 = .max) async throws(TSyncError) {
        let previous = try reported.withLock { (logged: inout Int64) throws(TSyncError) -> Task<Void, Never>? in
            // Pushes said already that the store wrote after the page: they supersede its
            // changes of their records, which would now be said out of order.
            let superseded =
                last < logged ? Set(try store.pushes(after: last, upTo: logged).map { ItemKey(table: $0.table, id: $0.itemID) }) : []
            let entries = try store.pushes(after: logged, upTo: last)
            if let newest = entries.last { logged = newest.id }
            var batch = entries.map { entry in
                var event = LiveEvent(.pushed, table: entry.table, id: entry.itemID)
                event.operation = entry.kind
                event.version = entry.version
                return event
            }
            for var event in events {
                if !superseded.isEmpty, event.kind == .pulled || event.kind == .deleted, let table = event.table, let id = event.id,
                    superseded.contains(ItemKey(table: table, id: id))
                {
                    continue
                }
                if event.kind == .settled, let table = event.table, let id = event.id {
                    event.version = try store.record(table: table, id: id)?.system.version
                }
                batch.append(event)
            }
            return batch.isEmpty ? nil : output.enqueue(batch)
        }
        await previous?.value
    }

    // MARK: - The server's state

    private func reachable() async {
        let changed = state.withLock { state in
            defer {
                state.connected = true
                state.saidWait = 0
            }
            return !state.connected
        }
        if changed { await output.send([LiveEvent(.connected)]) }
    }

    /// Says `reconnecting` when the server was answering, and again each time the wait grows
    /// (the loops share what was said: one line per step of the backoff, not one per loop).
    private func unreachable(_ error: TSyncError, attempt: Int, retryIn delay: Duration) async {
        let ceiling = Self.ceiling(attempt)
        let say = state.withLock { state in
            defer {
                state.connected = false
                state.saidWait = max(state.saidWait, ceiling)
            }
            return state.connected || ceiling > state.saidWait
        }
        guard say else { return }
        var event = LiveEvent(.reconnecting)
        event.message = Self.cause(error)
        event.retryIn = delay.fractionalSeconds
        await output.send([event])
    }

    /// What ends a watch: the user's mistake, credentials the server refuses, a store that is
    /// gone or a bad setting. Anything else (no answer, a 5xx, an answer that cannot be taken, a
    /// push lock another command holds) is temporary: retried with the backoff, and said.
    static func isTemporary(_ error: TSyncError) -> Bool {
        switch error.kind {
        case .usage, .unauthorized, .noStore, .fileMissing, .invalidConfiguration: false
        case .unreachable, .failure, .invalidInput, .operationsFailed: true
        }
    }

    /// The error's words without the advice to try again, which the watch does by itself.
    static func cause(_ error: TSyncError) -> String {
        var message = error.fact ?? error.message
        for advice in [", try again later", "; try again later", "; try again when it has finished", ", push again", "; push again"]
        where message.hasSuffix(advice) {
            message.removeLast(advice.count)
        }
        return message
    }

    private func sayPollingOnce() async {
        let first = state.withLock { state in
            defer { state.saidPolling = true }
            return !state.saidPolling
        }
        guard first else { return }
        var event = LiveEvent(.polling)
        event.interval = options.interval.fractionalSeconds
        await output.send([event])
    }

    /// Jittered exponential backoff: 0.25 s doubling to 10 s at most, each wait a random point in
    /// its upper half, so the watchers of a restarted server do not all come back at once.
    static func backoff(_ attempt: Int) -> Duration {
        .milliseconds(Int(ceiling(attempt) * Double.random(in: 0.5...1.0) * 1000))
    }

    /// The longest wait of the `attempt`th try, in seconds.
    static func ceiling(_ attempt: Int) -> Double {
        min(10.0, 0.25 * pow(2.0, Double(min(attempt, 10) - 1)))
    }
}

/// Hands the watch's batches of events to the caller's `onEvents` in the order they are sent,
/// one batch at a time, while the watch goes on: a page's events are printed (and `--exec` runs)
/// while the next page is written, not before it is fetched further. At most one batch is on its
/// way: `send` waits for the one before.
final class EventRelay: Sendable {
    private let deliver: @Sendable ([LiveEvent]) async -> Void
    private let last = Mutex<Task<Void, Never>?>(nil)

    init(_ deliver: @escaping @Sendable ([LiveEvent]) async -> Void) {
        self.deliver = deliver
    }

    /// Starts delivering `events` after every batch sent before, once the batch before is out.
    func send(_ events: [LiveEvent]) async {
        await enqueue(events)?.value
    }

    /// Puts `events` in line after every batch sent before, at once; returns the delivery of
    /// the batch before, to wait for (a caller that orders batches under a lock of its own
    /// waits after releasing it).
    func enqueue(_ events: [LiveEvent]) -> Task<Void, Never>? {
        let deliver = deliver
        return last.withLock { last in
            let previous = last
            last = Task {
                await previous?.value
                await deliver(events)
            }
            return previous
        }
    }

    /// Waits until every batch sent is delivered.
    func drain() async {
        await last.withLock { $0 }?.value
    }
}

/// The server's answer to `wait` over one pull: the last page's.
private final class WaitSeen: Sendable {
    private let value = Mutex<Int?>(nil)

    func reset() { value.withLock { $0 = nil } }
    func record(_ applied: Int?) { value.withLock { $0 = applied } }
    var applied: Int? { value.withLock { $0 } }
}
