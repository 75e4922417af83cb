import Foundation
import TSyncModel

/// The sync workflows of one store and its remote — push, pull, sync, resolve, login, logout —
/// as one type a program can drive; the `tsync` commands are thin wrappers that parse, print and
/// map exit codes.
///
/// Each workflow opens one connection pool to the store's remote for its duration. What the
/// command line takes from its environment enters here through the initialiser, whole
/// (`RemoteSettings`), and what it shows comes out through `events`; nothing here prints, and
/// nothing is set after the session is made.
public struct SyncSession: Sendable {
    /// What a running workflow reports: progress of a phase, and each push or pull as it ends.
    public enum Event: Sendable {
        /// `done` of `total` (nil when unknown) in a phase: "pushing", or "pulling TABLE:".
        case progress(phase: String, done: Int, total: Int?)
        /// A push finished (within `sync` or `resolve --push` too).
        case pushed(PushSummary)
        /// A pull finished (within `sync` too).
        case pulled(PullSummary)
    }

    /// The store whose queue is pushed and whose tables are pulled into.
    public let store: LocalStore
    /// How the remote is reached: token, timeout, trust, proxies, the exchanges' observer.
    public let remote: RemoteSettings
    /// Stops a push at its next safe point (see `StopRequest`).
    public let stopRequest: StopRequest?
    /// Requests in flight at once during a push (each for a different item).
    public let pushConcurrency: Int
    /// Sees progress and each finished push and pull (called from the workflow's tasks).
    public let events: (@Sendable (Event) -> Void)?
    /// Whether `events` shows progress: a pull reports none otherwise, and asks the server for no
    /// total (`$inlinecount`), which on a large table costs it more than the pages.
    public let reportsProgress: Bool

    /// A token to send instead of the saved one (`remote.tokenOverride`).
    package var tokenOverride: String? { remote.tokenOverride }
    /// The deadline of one HTTP exchange, body included (`remote.timeout`).
    public var timeout: Duration { remote.timeout }
    /// The deadline of one HTTP exchange unless the caller gives another.
    public static let defaultTimeout = RemoteSettings.defaultTimeout
    /// Requests in flight at once during a push unless the caller gives another number.
    public static let defaultPushConcurrency = 8
    var exchanges: RemoteExchange.Observer? { remote.exchanges }
    var trust: CertificateTrust { remote.trust }
    var proxies: ProxySettings { remote.proxies }

    /// A session of `store`; a program that also wants the store's log entry and verdicts makes it
    /// through `CommandSession.syncSession` instead. A usage error for a concurrency below 1.
    public init(
        store: LocalStore, remote: RemoteSettings = .standard, stopRequest: StopRequest? = nil,
        pushConcurrency: Int = defaultPushConcurrency, events: (@Sendable (Event) -> Void)? = nil, reportsProgress: Bool = true
    ) throws(TSyncError) {
        guard pushConcurrency >= 1 else { throw .usage("push concurrency must be at least 1 (got \(pushConcurrency))") }
        self.store = store
        self.remote = remote
        self.stopRequest = stopRequest
        self.pushConcurrency = pushConcurrency
        self.events = events
        self.reportsProgress = reportsProgress
    }

    /// `trust` plus the store's `http.caFile`, which must still be there: a CA file that vanished
    /// would otherwise fail every handshake with a message that does not name it.
    func effectiveTrust() throws(TSyncError) -> CertificateTrust {
        var trust = self.trust
        if let file = try store.configuration().value(.httpCAFile) {
            guard FileManager.default.isReadableFile(atPath: file) else {
                throw TSyncError(
                    .failure, "the store's setting http.caFile names \(file), which cannot be read", remedy: .fixSetting("http.caFile"))
            }
            trust.additionalFiles.append(file)
        }
        return trust
    }

    // MARK: - The remote

    /// The server the store syncs with.
    package func endpoint() throws(TSyncError) -> RemoteEndpoint {
        guard let remote = try store.configuration().remote else {
            throw TSyncError(.failure, "no remote is set for this store", remedy: .setRemote)
        }
        return try RemoteEndpoint(remote)
    }

    /// Whether the store has a remote at all.
    package func hasRemote() throws(TSyncError) -> Bool { try store.configuration().remote != nil }

    /// Runs `body` with a client for the store's remote, carrying the override or the token saved
    /// for that very remote.
    func withRemote<Result: Sendable>(_ body: (RemoteClient) async throws(TSyncError) -> Result) async throws(TSyncError)
        -> Result
    {
        let endpoint = try endpoint()
        var token = tokenOverride
        if token == nil { token = try Credentials.savedToken(storeDirectory: store.location.directory, remote: endpoint) }
        return try await RemoteClient.withRemoteClient(
            endpoint: endpoint, token: token, timeout: timeout, observer: exchanges, trust: try effectiveTrust(),
            proxy: proxies.proxy(for: endpoint), probeTable: try probeTable(), body)
    }

    /// The table whose route checks that the remote is a sync server before the first write, when
    /// the batch route's discovery does not tell (`ServerCheck`): one the store syncs, nil if none.
    private func probeTable() throws(TSyncError) -> String? {
        try store.tables().first?.table
    }

    private func pusher(_ remote: RemoteClient, settling policies: ConflictPolicies? = nil) -> Pusher {
        Pusher(store: store, remote: remote, stopRequest: stopRequest, concurrency: pushConcurrency, settling: policies)
    }

    private func reporter(_ phase: String) -> SyncProgress? {
        guard let events, reportsProgress else { return nil }
        return { done, total in events(.progress(phase: phase, done: done, total: total)) }
    }

    // MARK: - Push and pull

    /// What `push` would send now, and what waits behind unsettled errors; sends nothing.
    package func pushPreview(tables: [String]?) throws(TSyncError) -> (operations: [OutgoingOperation], summary: PushSummary) {
        try store.requireTables(tables ?? [])
        let operations = try store.pushableOperations(tables: tables)
        var summary = PushSummary()
        summary.wouldPush = operations.count
        summary.heldBack = try store.heldBackOperationCount(tables: tables)
        return (operations, summary)
    }

    /// Sends the pending operations of `tables` (all when nil) in queue order; with `atomic`, as
    /// one batch the server applies all or nothing (`Pusher.pushAtomically`). Conflicts are
    /// settled by `policies` and the settled operations pushed again (`pushSettling`).
    public func push(tables: [String]?, atomic: Bool = false, policies: ConflictPolicies = ConflictPolicies()) async throws(TSyncError)
        -> PushSummary
    {
        try store.requireTables(tables ?? [])
        let summary = try await withRemote { remote throws(TSyncError) in
            atomic
                ? try await pusher(remote).pushAtomically(tables: tables, progress: reporter("pushing"))
                : try await pushSettling(remote, tables: tables, policies: policies)
        }
        events?(.pushed(summary))
        return summary
    }

    /// A push, then the conflict policies (docs/DESIGN.md §9.1): every conflict of the pushed tables
    /// (those left by earlier pushes too) whose table's policy is not `fail` is settled as
    /// `resolve` would settle it, and the operations still to send are pushed again. When that
    /// push meets conflicts again (someone wrote in between), it goes round again, `retries` times
    /// at most; what is left stays in the error table. A merge that is refused is not tried again.
    /// Rejected operations and server errors are never settled (`ConflictPolicy.settledClasses`).
    func pushSettling(_ remote: RemoteClient, tables: [String]?, policies: ConflictPolicies) async throws(TSyncError)
        -> PushSummary
    {
        // A 412 that carried the server's copy is settled as its answer is applied (the same
        // settle as below, on that copy, without the error's row written and read back); what
        // is left in the error table (earlier commands' errors, other conflicts) is settled
        // here. Push N of the command settles at once as long as round N may settle at all.
        if policies.settlesNothing { return try await pusher(remote).push(tables: tables, progress: reporter("pushing")) }
        var summary = try await pusher(remote, settling: policies).push(tables: tables, progress: reporter("pushing"))
        var refused = Set<Int64>()
        var refusedAtOnce = summary.refusedAtOnce
        var settledToPush = summary.settledToPush
        var rounds = 0
        while !summary.interrupted, rounds <= policies.retries {
            let conflicts = try store.conflictDetails(table: nil).filter { details in
                (tables?.contains(details.error.table) ?? true) && ConflictPolicy.settledClasses.contains(details.failureClass)
                    && policies.policy(for: details.error.table) != .fail && !refused.contains(details.error.id)
                    && !refusedAtOnce.contains(details.error.operationSeq)
            }
            if conflicts.isEmpty && settledToPush.isEmpty { break }
            rounds += 1
            var again = settledToPush
            // A 412 this command met carries the server's copy as of its answer, as current as a
            // read now would be; the copies of the others (left by earlier commands, or answered
            // without one) are read again, as `resolve` reads them. A copy someone changes in
            // between makes the next push meet a 412 again, which the next round settles.
            let answered = Set(summary.failedOperations)
            var copies: [ItemKey: ServerCopy] = [:]
            var unread: [ConflictDetails] = []
            for details in conflicts {
                if answered.contains(details.error.operationSeq), details.error.httpStatus == 412, details.error.serverItem != nil,
                    let theirs = details.theirs
                {
                    copies[details.item] = .record(theirs)
                } else {
                    unread.append(details)
                }
            }
            copies.merge(try await Resolver(store: store, remote: remote).serverCopies(for: unread.map(\.error))) { _, read in read }
            var settling: [(details: ConflictDetails, policy: ConflictPolicy)] = []
            var settlements: [Settlement] = []
            for details in conflicts {
                let table = details.error.table
                let policy = policies.policy(for: table)
                guard let resolution = policy.resolution else { continue }
                settling.append((details, policy))
                settlements.append(
                    Settlement(
                        errorID: details.error.id, with: resolution, theirs: copies[details.item], prefer: policies.preference(for: table)))
            }
            for ((details, policy), outcome) in zip(settling, try store.settleOutcomes(settlements)) {
                let table = details.error.table
                switch outcome {
                case .settled(let pending):
                    summary.settled[policy, default: 0] += 1
                    summary.settledItems.append(SettledItem(table: table, id: details.error.itemID, policy: policy))
                    if pending { again.insert(table) }
                case .refused:
                    refused.insert(details.error.id)
                }
            }
            if again.isEmpty { break }
            let next = try await pusher(remote, settling: rounds <= policies.retries ? policies : nil)
                .push(tables: again.sorted(), progress: reporter("pushing again"))
            refusedAtOnce.formUnion(next.refusedAtOnce)
            settledToPush = next.settledToPush
            summary.add(next)
        }
        // What failed in this command and is still there: the errors a policy did not settle.
        let left = try store.operationErrors(operations: summary.failedOperations)
        summary.failed = left.count
        summary.conflicts = left.filter { FailureClass(kind: $0.kind, status: $0.httpStatus ?? 0).isConflict }.count
        summary.setHeldBack(waiting: try store.heldBackOperationCount(tables: tables))
        return summary
    }

    /// What `push --check` predicts for every queued operation of `tables`, under the conflict
    /// `policies` the push would apply: GET requests only, nothing is written on the server or in
    /// the store.
    package func check(tables: [String]?, policies: ConflictPolicies = ConflictPolicies()) async throws(TSyncError)
        -> [PushPrediction]
    {
        try store.requireTables(tables ?? [])
        return try await withRemote { remote throws(TSyncError) in
            try await PushCheck(store: store, remote: remote, policies: policies).predict(tables: tables)
        }
    }

    /// Pushes the table's pending operations (settling conflicts by `policies`, as `push` does),
    /// then reads it from the server. Operations that fail stay in the error table and the pull
    /// goes on, as in `sync`: items with a queued change are never overwritten, and the copies it
    /// skips are kept for `resolve` (docs/DESIGN.md §8). A push stopped by an answer it could
    /// not take (an item the server keeps failing) does not stop the pull either: it is kept in
    /// `PullSummary.pushFailure`, for the command to end with once the pull is done.
    public func pull(_ request: PullRequest, policies: ConflictPolicies = ConflictPolicies()) async throws(TSyncError)
        -> PullSummary
    {
        try Puller.validate(request)
        try store.requireOneSpelling(of: request.table)
        let summary = try await withRemote { remote throws(TSyncError) in
            var push = PushSummary()
            var pushFailure: TSyncError?
            if try store.hasOperations(table: request.table) {
                do throws(TSyncError) {
                    push = try await pushSettling(remote, tables: [request.table], policies: policies)
                } catch {
                    pushFailure = try Self.goingOn(after: error)
                }
                if push.interrupted { return PullSummary(table: request.table, queryID: request.queryID, push: push, interrupted: true) }
            }
            var summary = try await Puller(store: store, remote: remote, stopRequest: stopRequest)
                .pull(request, progress: reporter("pulling \(request.table):"))
            summary.push = push
            summary.pushFailure = pushFailure
            return summary
        }
        events?(.pulled(summary))
        return summary
    }

    /// `error`, when a command with more to do may go on after it: an answer that could not be
    /// taken (a 5xx, an unexplained or cut answer, a table the server refuses) concerns what was
    /// asked, and the next table or the pull after a push may still work. Thrown again when it
    /// cannot: a refused login, no answer at all (the server cannot be used now), or a refusal
    /// before anything was sent (a remote that is no sync server, a 429).
    static func goingOn(after error: TSyncError) throws(TSyncError) -> TSyncError {
        switch error.kind {
        case .unreachable where !error.noAnswer && !error.requestNeverSent, .failure: return error
        default: throw error
        }
    }

    /// What `sync` did.
    public struct SyncReport: Sendable {
        /// The push of everything, first.
        public var push: PushSummary
        /// The pull of each saved query, in order; fewer when the push or a pull was interrupted.
        /// A pull that failed has none.
        public var pulls: [PullSummary]
        /// What failed without stopping the sync, in order: the push's stop (an item the server
        /// keeps failing), and each saved query whose pull failed, its message naming the query.
        public var failures: [TSyncError] = []
    }

    /// Pushes everything, then pulls every saved query again with its filter and checkpoint.
    /// Operations that fail in the push are recorded and the pulls still run (items with pending
    /// changes are never overwritten); so do they when the push stops on an answer it cannot take,
    /// and a pull that fails so does not stop the others (`SyncReport.failures`, docs/DESIGN.md
    /// §8). A refused login, or a server that does not answer at all, stops at once.
    public func sync(policies: ConflictPolicies = ConflictPolicies()) async throws(TSyncError) -> SyncReport {
        try await withRemote { remote throws(TSyncError) in
            var report = SyncReport(push: PushSummary(), pulls: [])
            do throws(TSyncError) {
                report.push = try await pushSettling(remote, tables: nil, policies: policies)
                events?(.pushed(report.push))
            } catch {
                report.failures.append(try Self.goingOn(after: error))
            }
            if report.push.interrupted { return report }
            for query in try store.savedQueries() {
                let summary: PullSummary
                do throws(TSyncError) {
                    summary = try await Puller(store: store, remote: remote, stopRequest: stopRequest).pull(
                        PullRequest(table: query.table, queryID: query.queryID), progress: reporter("pulling \(query.table):"))
                } catch {
                    var failure = try Self.goingOn(after: error)
                    failure.message = "query \(query.queryID) of \(query.table): " + failure.message
                    failure.fact = failure.fact.map { "query \(query.queryID) of \(query.table): " + $0 }
                    report.failures.append(failure)
                    continue
                }
                events?(.pulled(summary))
                report.pulls.append(summary)
                if summary.interrupted { break }
            }
            return report
        }
    }

    // MARK: - Conflicts

    /// What `resolve` did, and the push that followed when one was asked for.
    public struct ResolveResult: Sendable {
        /// What was settled, and what each item looks like now.
        public var report: ResolveReport
        /// The push after settling, when one was asked for.
        public var push: PushSummary?
    }

    /// Settles the selected errors one way, then (with `thenPush`) pushes the tables they belong
    /// to. A resolution that needs the server's copy (`--theirs`, `--ours`, `--merge`) reads it from
    /// the server now, since the copy recorded with the error may be stale (`Resolver`); without a
    /// remote, or when it cannot be reached, the recorded copy serves, and `--cancel` and
    /// `--discard` need none.
    public func resolve(_ selection: ErrorSelection, with resolution: Resolution, thenPush: Bool) async throws(TSyncError)
        -> ResolveResult
    {
        try await resolve(ResolveRequest(selection, with: resolution), thenPush: thenPush)
    }

    /// Settles the errors `request` selects, as `resolve(_:with:thenPush:)` does, with its filter, preference and dry run.
    public func resolve(_ request: ResolveRequest, thenPush: Bool) async throws(TSyncError) -> ResolveResult {
        if thenPush { _ = try endpoint() }  // no remote: say so before settling anything
        guard try hasRemote() else {
            return ResolveResult(report: try await Resolver(store: store, remote: nil).resolve(request))
        }
        return try await withRemote { remote throws(TSyncError) in
            let report = try await Resolver(store: store, remote: remote).resolve(request)
            let tables = Array(Set(report.entries.map(\.error.table))).sorted()
            guard thenPush, !request.dryRun, !tables.isEmpty else { return ResolveResult(report: report) }
            let push = try await pushSettling(remote, tables: tables, policies: ConflictPolicies())
            events?(.pushed(push))
            // What the report says of each item is what the push left.
            var pushed = report
            for index in pushed.entries.indices {
                let error = pushed.entries[index].error
                pushed.entries[index].after = try store.itemState(table: error.table, id: error.itemID)
            }
            return ResolveResult(report: pushed, push: push)
        }
    }

    // MARK: - Accounts

    /// Logs in to the store's remote and saves the token (mode 0600) for that remote only.
    /// Returns the user id the server reports.
    public func login(user: String, password: String) async throws(TSyncError) -> String {
        try await login(user: user) { () throws(TSyncError) in password }
    }

    /// Logs in as `login(user:password:)` does, asking for the password only once the remote has
    /// answered as a sync server (`RemoteClient.checkServer`): an unreachable, untrusted or wrong
    /// remote is said before anyone types a password for it.
    public func login(user: String, password: () throws(TSyncError) -> String) async throws(TSyncError) -> String {
        let endpoint = try endpoint()
        let directory = store.location.directory
        let device = Credentials.deviceToken(storeDirectory: directory, remote: endpoint)
        let (token, userID, newDevice) = try await RemoteClient.withRemoteClient(
            endpoint: endpoint, token: nil, timeout: timeout, observer: exchanges, trust: try effectiveTrust(),
            proxy: proxies.proxy(for: endpoint), probeTable: try probeTable()
        ) {
            remote throws(TSyncError) in
            try await remote.checkServer()
            return try await remote.login(username: user, password: try password(), deviceToken: device)
        }
        try Credentials(remote: endpoint.base, user: user, token: token).save(storeDirectory: directory)
        if let newDevice, newDevice != device {
            // Best effort: without it the next login is only a stranger's, as before.
            try? Credentials.saveDeviceToken(newDevice, storeDirectory: directory, remote: endpoint)
        }
        return userID
    }

    /// The account the current credentials (the override or the saved token) reach on the
    /// remote: nil on a server without accounts; `.unauthorized` when it refuses them.
    public func whoami() async throws(TSyncError) -> String? {
        try await withRemote { remote throws(TSyncError) in try await remote.whoami() }
    }

    /// `whoami` with what the server says of the account's roles and groups and the token's scope.
    public func identity() async throws(TSyncError) -> RemoteIdentity {
        try await withRemote { remote throws(TSyncError) in try await remote.identity() }
    }

    /// What `logout` did: the remote the token was for, and why it could not be revoked there.
    public struct LogoutResult: Sendable, Equatable {
        /// The remote the token was for.
        public var remote: String
        /// Set when the server could not revoke the token (it stays valid there until it expires).
        public var notRevoked: String?
    }

    /// Revokes the saved token on its server and removes it from the store; the file goes even
    /// when the server cannot be reached. Nil when there was no saved token.
    public func logout() async throws(TSyncError) -> LogoutResult? {
        let directory = store.location.directory
        guard let saved = try Credentials.load(storeDirectory: directory) else { return nil }
        var notRevoked: String?
        do throws(TSyncError) {
            let endpoint = try RemoteEndpoint(saved.remote)
            try await RemoteClient.withRemoteClient(
                endpoint: endpoint, token: saved.token, timeout: timeout, observer: exchanges, trust: try effectiveTrust(),
                proxy: proxies.proxy(for: endpoint), probeTable: try probeTable()
            ) {
                remote throws(TSyncError) in
                try await remote.logout()
            }
        } catch  where error.kind != .unauthorized {
            notRevoked = error.message
        } catch {
            // Unauthorized: the token was already expired or revoked.
        }
        try Credentials.remove(storeDirectory: directory)
        return LogoutResult(remote: saved.remote, notRevoked: notRevoked)
    }
}
