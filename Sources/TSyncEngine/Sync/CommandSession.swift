import Foundation
import Synchronization
import TSyncModel

/// One run of a command (or of any program's unit of work) against a store: it opens the store,
/// keeps the run's `tsync log` entry (docs/DESIGN.md §9.3), runs the sync workflows with one
/// `StopRequest`, and says how each ended as a `Verdict`.
///
/// Why the engine owns it: a program that drives the engine gets the same log entry and the same
/// verdicts as the command line, which only parses, calls, prints and maps the verdict to an exit
/// code. A long-running workflow (a live sync) is a session like the others: it runs until its
/// `stopRequest` is stopped, records each push and pull as it ends, and is finished once.
public final class CommandSession: Sendable {
    /// What the log entry of a run says about it: the command's name, and its arguments and
    /// remote as they may be shown (the caller removes secrets; see `Journal`).
    public struct JournalEntry: Sendable {
        /// The name the log shows (`tsync log`), e.g. "push".
        public var command: String
        /// The arguments as the log keeps them: without secrets, long ones cut.
        public var arguments: [String]

        /// The entry of `command`, run with `arguments`, from which the caller has already removed secrets.
        public init(command: String, arguments: [String]) {
            self.command = command
            self.arguments = arguments
        }
    }

    /// How a workflow ended, decided here for every workflow so that its users map it to their
    /// own outcome (the command line: exit codes 0, 2, 130/143) in one place.
    public enum Verdict: Sendable, Equatable {
        /// Everything asked for was done.
        case succeeded
        /// The workflow ran, but this many operations of its tables are in the error table.
        case operationsFailed(Int)
        /// A stop request ended it early (with the signal it was given, 0 for none); what it did is
        /// kept. `error` is what ended it after the stop was asked for (a server that stopped
        /// answering while the answers in flight were awaited), nil when it stopped cleanly.
        case interrupted(signal: Int32, error: TSyncError?)
    }

    /// A workflow's result (nil when an error ended it after a stop request) and its verdict.
    public struct Outcome<Result: Sendable>: Sendable {
        /// What the workflow returned; nil when an error ended it after a stop request.
        public var result: Result?
        /// How it ended.
        public var verdict: Verdict
    }

    private struct State {
        var entry: Int64?
        var counts = JournalCounts()
        var items = ItemSample()
        var written = PushedVersions()
    }

    /// The store the session opened (or was given).
    public let store: LocalStore
    /// Stops the running workflow at its next safe point; the caller decides when (the command
    /// line: on SIGINT or SIGTERM).
    public let stopRequest: StopRequest
    /// Why the run has no log entry although one was asked for (the store could not write it);
    /// the run goes on without one.
    public let journalProblem: TSyncError?
    private let state: Mutex<State>

    /// A session on an open store; with `journal`, its log entry begins now (a run killed before it
    /// ends leaves an entry without an end, never half of one).
    public init(store: LocalStore, journal: JournalEntry?, stopRequest: StopRequest = StopRequest()) {
        self.store = store
        self.stopRequest = stopRequest
        var entry: Int64?
        var problem: TSyncError?
        if let journal {
            let remote = (try? store.configuration().remote).flatMap { $0 }.map(Journal.withoutCredentials)
            do throws(TSyncError) {
                entry = try store.beginJournalEntry(command: journal.command, arguments: journal.arguments, remote: remote)
            } catch {
                problem = error
            }
        }
        self.journalProblem = problem
        self.state = Mutex(State(entry: entry))
    }

    /// Opens the store at `location`, then begins the session as `init` does.
    public convenience init(opening location: StoreLocation, journal: JournalEntry?, stopRequest: StopRequest = StopRequest())
        throws(TSyncError)
    {
        self.init(store: try LocalStore.open(location), journal: journal, stopRequest: stopRequest)
    }

    /// Whether the run has a log entry to finish.
    package var isJournaled: Bool { state.withLock { $0.entry != nil } }

    // MARK: - What the run did

    /// A push of this run, for its log entry (a `syncSession` records its own).
    package func record(push summary: PushSummary) {
        state.withLock { state in
            state.counts.add(summary)
            state.items.add(summary.items)
            state.written.add(summary.written)
        }
    }

    /// A pull of this run (with the push before it), for its log entry.
    package func record(pull summary: PullSummary) {
        state.withLock { state in
            state.counts.add(summary.push)
            state.items.add(summary.push.items)
            state.written.add(summary.push.written)
            state.counts.pulled += summary.counts.received
            state.items.add(summary.items)
        }
    }

    /// Errors this run settled (or tried to) one way, for its log entry.
    package func record(resolve report: ResolveReport, as resolution: Resolution) {
        state.withLock { state in
            for entry in report.entries {
                state.items.add(table: entry.error.table, id: entry.error.itemID)
                if case .settled = entry.outcome { state.counts.settled[resolution.rawValue, default: 0] += 1 }
            }
        }
    }

    /// Records this run changed locally (insert, update, delete, purge), for its log entry.
    public func record(changed table: String, ids: some Collection<String>) {
        state.withLock { state in
            state.counts.changed += ids.count
            state.items.add(table: table, ids: ids)
        }
    }

    /// Records `count` items of `table` changed, of which `firstIDs` are the first (at least
    /// `ItemSample.limit` of them, or all): a streamed insert does not hold every id.
    package func record(changed table: String, count: Int, firstIDs: [String]) {
        state.withLock { state in
            state.counts.changed += count
            state.items.add(table: table, ids: firstIDs, of: count)
        }
    }

    // MARK: - The workflows

    /// A `SyncSession` of this run: its stop request, and every push and pull it finishes goes
    /// to the log entry before `events` sees it. `reportsProgress` (by default: whether there are
    /// `events`) says whether they show progress, which costs a pull a count on the server.
    public func syncSession(
        remote: RemoteSettings = .standard, events: (@Sendable (SyncSession.Event) -> Void)? = nil,
        reportsProgress: Bool? = nil
    ) throws(TSyncError) -> SyncSession {
        let logged: @Sendable (SyncSession.Event) -> Void = { [self] event in
            switch event {
            case .pushed(let summary): record(push: summary)
            case .pulled(let summary): record(pull: summary)
            case .progress: break
            }
            events?(event)
        }
        return try SyncSession(
            store: store, remote: remote, stopRequest: stopRequest, events: logged, reportsProgress: reportsProgress ?? (events != nil))
    }

    /// Pushes (`SyncSession.push`); fails while the error table holds errors of the pushed tables,
    /// new or old (docs/DESIGN.md §3).
    public func push(_ session: SyncSession, tables: [String]?, atomic: Bool, policies: ConflictPolicies) async throws(TSyncError)
        -> Outcome<PushSummary>
    {
        try await run { () throws(TSyncError) in
            try await session.push(tables: tables, atomic: atomic, policies: policies)
        } verdict: { summary throws(TSyncError) in
            (summary.interrupted, summary.failed > 0 || summary.heldBack > 0 ? summary.failed + summary.heldBack : 0)
        }
    }

    /// Pulls (`SyncSession.pull`); fails while the error table holds operations of the table.
    public func pull(_ session: SyncSession, _ request: PullRequest, policies: ConflictPolicies) async throws(TSyncError)
        -> Outcome<PullSummary>
    {
        try await run { () throws(TSyncError) in
            try await session.pull(request, policies: policies)
        } verdict: { summary throws(TSyncError) in
            (summary.interrupted, try store.operationErrors(table: request.table).count)
        }
    }

    /// Pushes, then pulls every saved query (`SyncSession.sync`); fails while the error table holds
    /// any operation.
    public func sync(_ session: SyncSession, policies: ConflictPolicies) async throws(TSyncError) -> Outcome<SyncSession.SyncReport> {
        try await run { () throws(TSyncError) in
            try await session.sync(policies: policies)
        } verdict: { report throws(TSyncError) in
            (report.push.interrupted || report.pulls.contains(where: \.interrupted), try store.operationErrors().count)
        }
    }

    /// Runs any workflow of this session (a live sync runs here until it is stopped): `verdict`
    /// says whether its result was cut short and how many operations it left failed. An error
    /// after a stop request ends the run as interrupted; any other error is thrown.
    public func run<Result: Sendable>(
        _ workflow: () async throws(TSyncError) -> Result,
        verdict: (Result) throws(TSyncError) -> (interrupted: Bool, failed: Int)
    ) async throws(TSyncError) -> Outcome<Result> {
        let result: Result
        do {
            result = try await workflow()
        } catch {
            guard let signal = stopRequest.stopSignal else { throw error }
            return Outcome(result: nil, verdict: .interrupted(signal: signal, error: error))
        }
        let (interrupted, failed) = try verdict(result)
        if interrupted, let signal = stopRequest.stopSignal {
            return Outcome(result: result, verdict: .interrupted(signal: signal, error: nil))
        }
        return Outcome(result: result, verdict: failed > 0 ? .operationsFailed(failed) : .succeeded)
    }

    // MARK: - The end

    /// Ends the log entry with the run's exit code (the caller's number for how it ended) and what
    /// it recorded; `dropped` forgets the entry instead (a command refused before it did anything).
    /// Each step is one transaction. Returns a warning for the caller to show: the store's
    /// log.maxEntries could not be read, so the default applied (a bad setting costs no entry).
    @discardableResult
    public func finish(exitCode: Int, dropped: Bool = false) throws(TSyncError) -> TSyncError? {
        let (entry, counts, items, written) = state.withLock { state in
            defer { state.entry = nil }
            return (state.entry, state.counts, state.items, state.written)
        }
        guard let entry else { return nil }
        if dropped {
            try store.dropJournalEntry(entry)
            return nil
        }
        var warning: TSyncError?
        let keep: Int
        do throws(TSyncError) {
            keep = try store.configuration().logMaxEntries()
        } catch {
            warning = error
            keep = Journal.defaultMaxEntries
        }
        try store.finishJournalEntry(entry, exitCode: exitCode, counts: counts, items: items, written: written, keep: keep)
        return warning
    }
}

extension Journal {
    /// A URL without its user:password part; any other text as it is.
    package static func withoutCredentials(_ text: String) -> String {
        guard let components = URLComponents(string: text), components.scheme != nil,
            components.user != nil || components.password != nil
        else { return text }
        var hidden = components
        hidden.user = nil
        hidden.password = nil
        return hidden.string ?? "***"
    }
}
