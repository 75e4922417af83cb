import Foundation
import Synchronization
import TSyncModel
import TSyncQuery

/// What `pull` should fetch.
public struct PullRequest: Sendable {
    /// The table to pull.
    public var table: String
    /// OData `$filter` of the user; nil for the whole table. With a saved query id and no filter
    /// given, the saved filter is used.
    public var filter: String?
    /// The id of the saved query whose checkpoint the pull resumes and moves; nil: no checkpoint.
    public var queryID: String?
    /// Records asked for per page, at most (the server may take fewer, and says so); nil: the
    /// pull's own choice (`PullPageSize`).
    public var pageSize: Int?
    /// Forget the query's checkpoint first (and accept a changed filter).
    public var reset: Bool
    /// Seconds the server may hold each request while there is nothing new (`Prefer: wait`, the
    /// live route of `tsync watch`, docs/DESIGN.md §8.1); nil for a plain pull. With a query id only.
    public var wait: Int?

    /// Records per page when `--page-size` is not given, until the server says how many it takes.
    public static let defaultPageSize = 1000
    /// The most records per page a pull asks for without `--page-size`, where the server takes as
    /// many: a clone's pages are a chain of requests (docs/DESIGN.md §8), and at 5,000 records a
    /// clone of 100,000 asks 25 times, not 100 (docs/PERFORMANCE.md, "Pages the server takes").
    public static let largestPageSize = 5000

    /// A pull of `table`.
    public init(table: String, filter: String? = nil, queryID: String? = nil, pageSize: Int? = nil, reset: Bool = false) {
        self.table = table
        self.filter = filter
        self.queryID = queryID
        self.pageSize = pageSize
        self.reset = reset
    }
}

/// What a pull did, for `pull --json`.
public struct PullSummary: Sendable, Equatable {
    /// The table pulled.
    public var table: String
    /// The saved query pulled, if any.
    public var queryID: String?
    /// What the pull did to the local records.
    public var counts = PullCounts()
    /// The push of the table's pending operations that ran first.
    public var push = PushSummary()
    /// What stopped that push when the pull went on without it (`SyncSession.pull`).
    public var pushFailure: TSyncError?
    /// The records received.
    package var items = ItemSample()
    /// The checkpoint after the pull (query ids only).
    package var checkpoint: Checkpoint?
    /// The pull stopped early on a `StopRequest`, after a whole page: what it wrote is kept, and
    /// with a query id the same pull resumes from the checkpoint.
    public var interrupted = false
    /// What the user should know though the pull succeeded (a record stamped later than the
    /// clocks allow, which holds the checkpoint back), in words.
    public var warnings: [String] = []
    /// Set when the server had removed deleted records past the query's checkpoint, and what
    /// the pull did about it (`resyncPastHorizon`, docs/DESIGN.md §15).
    package var horizonResync: HorizonResync?
    /// Whether the table's schema was looked at (once a pull: `refreshSchema`).
    var schemaSeen = false
}

/// Reads a table from the server page by page into the store (docs/DESIGN.md §1 Pull, §2.1, §2.5).
///
/// With a query id the pull is incremental and pages by key, not by offset: every request asks for
/// the records after the checkpoint of the last stored page, ordered by `updatedAt, id`. So records
/// changed while the pull runs are neither skipped (an offset would shift under them) nor looped
/// over, and a pull killed between pages resumes where it stopped; it never reads `Link`. Without a
/// query id the pull follows `Link` when the server sends it (once checked:
/// `RemoteEndpoint.nextPage`), else `$skip`.
package struct Puller: Sendable {
    /// The store pulled into.
    package var store: LocalStore
    /// The server pulled from.
    package var remote: any SyncRemote

    /// When set and stopped, the pull ends after the page it is writing.
    package var stopRequest: StopRequest?
    /// Sees each page once it is written, with what it changed (`PageResult.changes`), and the
    /// server's answer to a `wait` (`StoredPage.waitApplied`): `tsync watch`'s events.
    package var pageObserver: (@Sendable (_ table: String, _ result: PageResult, _ page: StoredPage) async -> Void)?
    /// Called when a page's deleted horizon made the pull read the query whole and drop what the
    /// server no longer has (`resyncPastHorizon`), before that page is written: `watch` reports it.
    package var resyncObserver: (@Sendable (_ table: String, _ resync: HorizonResync) async -> Void)?

    /// A puller from `remote` into `store`; a `stopRequest` ends it between pages.
    package init(store: LocalStore, remote: any SyncRemote, stopRequest: StopRequest? = nil) {
        self.store = store
        self.remote = remote
        self.stopRequest = stopRequest
    }

    /// Pages a pull with a query id writes in one transaction: each commit rewrote page 1, the
    /// B-trees' last leaves and roots and the query's row into the WAL, a third of a clone's WAL
    /// at a page a commit. A pull holds this many read pages before it writes them, or fewer
    /// that hold `recordsACommit` (one page of 5,000: about 3 MB each, as decoded), and a pull
    /// killed meanwhile reads them again; four pages of 1,000 saved no more.
    static let pagesACommit = 3
    static let recordsACommit = 3000

    /// Checks a pull request before anything is sent.
    package static func validate(_ request: PullRequest) throws(TSyncError) {
        try Identifiers.validateTableName(request.table)
        if let size = request.pageSize, size < 1 { throw .usage("the page size must be at least 1") }
        if let filter = request.filter { _ = try ODataParser.parseFilter(filter) }
    }

    /// Reads the table into the store. The push of its pending operations that a pull starts with
    /// is the caller's (`SyncSession.pull`), so that it goes the one way every push goes.
    package func pull(_ request: PullRequest, progress: SyncProgress? = nil) async throws(TSyncError) -> PullSummary {
        try Self.validate(request)
        var summary = PullSummary(table: request.table, queryID: request.queryID)
        if let queryID = request.queryID {
            try await pullIncrementally(request, queryID: queryID, summary: &summary, progress: progress)
        } else {
            try await pullByPages(request, summary: &summary, progress: progress)
        }
        return summary
    }

    private func pullIncrementally(
        _ request: PullRequest, queryID: String, summary: inout PullSummary, progress: SyncProgress?
    ) async throws(TSyncError) {
        guard !queryID.isEmpty, !queryID.contains(where: { $0.isNewline }) else {
            throw .usage("a query id must be a non-empty single-line name")
        }
        let saved = try store.savedQuery(table: request.table, queryID: queryID)
        var filter = request.filter
        var checkpoint = saved?.checkpoint
        if let saved {
            if filter == nil {
                filter = saved.filter
            } else if filter != saved.filter && !request.reset {
                throw TSyncError(
                    .usage,
                    "query id \(Identifiers.quoted(queryID)) was saved with the filter \(saved.filter.map(Identifiers.quoted) ?? "(none)")",
                    remedy: .keepOrResetSavedFilter)
            }
            if request.reset { checkpoint = nil }
        }
        let userFilter = filter
        let pageSize = PullPageSize(chosen: request.pageSize)
        @Sendable func pageRequest(at position: PullPosition) -> PageRequest {
            var page = PageRequest(
                table: request.table, filter: Checkpoint.filter(user: userFilter, after: position.checkpoint),
                orderBy: Checkpoint.orderBy, top: pageSize.current, skip: position.skip > 0 ? position.skip : nil)
            page.wait = request.wait
            return page
        }
        var position = PullPosition(checkpoint: checkpoint)
        // The checkpoint the store keeps: `position`'s, except that it never passes the clock's
        // bound (`Checkpoint.bound`): a record stamped in the future is written, and comes again
        // with the next pull, which says so again.
        var kept = checkpoint
        var first = pageRequest(at: position)
        // The total, for the progress line; none without one (a count of a large table can take
        // the server longer than the page, and the pull does not need it).
        first.inlineCount = request.wait == nil && progress != nil
        // A plain pull asks for the next page as soon as it knows where a page ends: from the
        // server's `X-TSync-Page-End` before the body, or else guessed from the body's bytes
        // (`StoredPageDecoder.lastPosition`); the page asked so is used only when the page, once
        // read, gives the same position (`takeAhead`), else dropped and the right one asked.
        let ahead: PageFetch.Ahead? =
            request.wait == nil
            ? { @Sendable guess in pageRequest(at: PullPosition(checkpoint: Checkpoint(updatedAt: guess.updatedAt, id: guess.id))) }
            : nil
        // A held read's long wait is the server's answer, not a queue: only a plain pull is paced.
        let pace = request.wait == nil ? PullPace() : nil
        var fetching: PageFetch? = PageFetch(remote, first, ahead: ahead, pace: pace)
        var total: Int?
        // The ids read while walking a run of equal timestamps by offset: a page of the walk that
        // brings none new means the server ignores $skip there, which would loop forever.
        var run = Set<Int>()
        // Refused before anything of the page is written: the checkpoint stays where the records
        // are known to be complete.
        func checked(_ page: StoredPage, from position: PullPosition) throws(TSyncError) -> PullPosition {
            try checkVersions(page.records, of: request.table)
            do throws(TSyncError) {
                return try Checkpoint.position(afterStored: page.records, from: position)
            } catch {
                throw TSyncError(
                    .failure, "pulling \(request.table) from \(remote.endpoint): \(error.message)", remedy: .pullWithoutQueryID)
            }
        }
        defer { fetching?.cancel() }
        // Pages read and checked, not yet written: written together in one transaction, each with
        // its checkpoint (`applyServerPages`), so a pull killed meanwhile keeps whole pages. `watch`
        // writes and tells each page as it comes.
        var held: [(page: StoredPage, query: SavedQuery)] = []
        // Writes the held pages; true when a stop request ends the pull after them.
        func writeHeld() async throws(TSyncError) -> Bool {
            guard !held.isEmpty else { return false }
            let pages = held
            held.removeAll(keepingCapacity: true)
            let results = try await store.applyServerPages(table: request.table, pages.map { ($0.page.records, $0.query) })
            var stops = false
            for (index, result) in zip(pages.indices, results) {
                stops = stopsAfter(
                    pages[index].page, applied: result, summary: &summary, total: &total,
                    more: index < pages.count - 1 || fetching != nil, progress: progress)
            }
            return stops
        }
        func readPages() async throws(TSyncError) {
            while let current = fetching {
                var page = try await current.page()
                fetching = nil
                pageSize.learn(page.maximumTop)
                // The page asked ahead of this one, unless it is taken below.
                defer { current.cancel() }
                if Self.startsResync(page, checkpoint: checkpoint, summary: summary), try await writeHeld() { break }
                try await resyncPastHorizon(page, table: request.table, filter: userFilter, checkpoint: checkpoint, summary: &summary)
                try await refreshSchema(page, table: request.table, summary: &summary)
                var next = try checked(page, from: position)
                // A walk by $skip would rest on this one answer: a page that only repeats records at
                // the checkpoint's own time is what a server with finer timestamps sends, and also
                // what a cache or proxy replaying an earlier answer sends, and walking on by $skip
                // after a replay passes over records for good. The same read is asked
                // again, and the walk starts only when the server answers it with the same records;
                // an answer that differs is taken instead, and checked from the start.
                var asked = 1
                while next.skip > 0, position.skip == 0 {
                    let again = try await PageFetch(remote, pageRequest(at: position)).page()
                    if Self.sameRecords(again.records, page.records) { break }
                    asked += 1
                    guard asked < 4 else {
                        throw TSyncError(
                            .failure,
                            "pulling \(request.table) from \(remote.endpoint): the server answered the same read differently \(asked) times (a cache or proxy replaying answers?), so no position after the checkpoint can be trusted; nothing of these pages was written",
                            remedy: .pullWithoutQueryID)
                    }
                    page = again
                    next = try checked(page, from: position)
                }
                if next.skip > 0, !page.records.isEmpty {
                    if position.skip == 0 { run.removeAll() }
                    let before = run.count
                    for record in page.records { run.insert(Self.fingerprint(record.id)) }
                    if run.count == before {
                        throw TSyncError(
                            .failure,
                            "pulling \(request.table) from \(remote.endpoint): the server sent the same records again inside a run of equal updatedAt values (it ignores $skip there), so the pull cannot get past them",
                            remedy: .pullWithoutQueryID)
                    }
                }
                // The records the clock allows a checkpoint to pass: a prefix, since the page is in
                // updatedAt order. The others are written, and the checkpoint stays before them. The
                // walk goes on from the last of the prefix too: a record stamped in the future by a
                // proxy or a cache (its real copy sits earlier in the walk) would otherwise end this
                // pull at the year 9999 with the records after it unread; a record that really is in
                // the future comes again alone at the walk's end, and then ends it.
                let bound = Checkpoint.bound(now: Timestamp.now(), serverDate: page.serverDate)
                let within = page.records.prefix { ($0.updatedAt.map { $0 <= bound }) ?? true }
                if within.count == page.records.count {
                    // (An empty page leaves it where it is.)
                    if !page.records.isEmpty { kept = next.checkpoint }
                } else {
                    if !within.isEmpty {
                        next = try Checkpoint.position(afterStored: Array(within), from: position)
                        kept = next.checkpoint
                    }
                    let early = page.records[within.count]
                    if summary.warnings.isEmpty {
                        summary.warnings.append(
                            "the server sent \(Identifiers.quoted("\(request.table)/\(early.id)")) with updatedAt \(early.updatedAt?.iso8601 ?? "?"), later than the clocks allow (at most \(bound.iso8601): the later of this machine's clock and the server's, plus a minute): the record is written, but the checkpoint of \(Identifiers.quoted(queryID)) stays before it, so every pull reads it again"
                        )
                    }
                }
                position = next
                // A page shorter than asked is not the end (a server may cap $top without a Link, as
                // the Azure servers do): only an empty page is.
                if !page.records.isEmpty {
                    fetching = current.takeAhead(at: position) ?? PageFetch(remote, pageRequest(at: position), ahead: ahead, pace: pace)
                }
                let query = SavedQuery(
                    table: request.table, queryID: queryID, filter: filter, checkpoint: kept, lastPullAt: Timestamp.now())
                if let observer = pageObserver {
                    let result = try store.applyServerPage(table: request.table, stored: page.records, saving: query, detailed: true)
                    await observer(request.table, result, page)
                    if stopsAfter(page, applied: result, summary: &summary, total: &total, more: fetching != nil, progress: progress) {
                        break
                    }
                    continue
                }
                held.append((page, query))
                // Held until there are `pagesACommit` or `recordsACommit`, the last page is read or a
                // stop is asked; what is held when a read or a check fails is written before the
                // failure is reported.
                let heldRecords = held.reduce(0) { $0 + $1.page.records.count }
                if held.count >= Self.pagesACommit || heldRecords >= Self.recordsACommit || fetching == nil
                    || stopRequest?.isStopped == true
                {
                    if try await writeHeld() { break }
                }
            }
        }
        do throws(TSyncError) {
            try await readPages()
        } catch {
            // What was read and checked before the failure is kept, as when each page was written
            // as it came.
            _ = try? await writeHeld()
            throw error
        }
        summary.checkpoint = kept
        // For `tsync status`: this query stopped part way, and its next pull goes on from here.
        if summary.interrupted { try store.markStopped(table: request.table, queryID: queryID) }
    }

    private func pullByPages(_ request: PullRequest, summary: inout PullSummary, progress: SyncProgress?) async throws(TSyncError) {
        var skip = 0
        // A page the server links to is asked as linked; the others as `pageSize` says.
        let pageSize = PullPageSize(chosen: request.pageSize)
        var first = PageRequest(table: request.table, filter: request.filter, orderBy: "id", top: pageSize.current)
        first.inlineCount = progress != nil  // the total, for the progress line
        let pace = PullPace()
        var fetching: PageFetch? = PageFetch(remote, first, pace: pace)
        var total: Int?
        defer { fetching?.cancel() }
        // A server that ignores $skip, or whose next links go round in a circle, would send the
        // same records forever, in the same order (docs/DESIGN.md §8) or shuffled: a link
        // followed twice, or a page that brings no record not seen before, stops the pull with an
        // error (exit 1: the server misbehaves, and what came may not be all). An id is kept as
        // an eight-byte hash, however large the pull.
        var links = Set<String>()
        var seen = Set<Int>()
        let asked = PageRequest(table: request.table, filter: request.filter, orderBy: "id", top: pageSize.current)
        while let current = fetching {
            let page = try await current.page()
            fetching = nil
            pageSize.learn(page.maximumTop)
            try await refreshSchema(page, table: request.table, summary: &summary)
            // Followed only once checked: this origin, this table, the query asked.
            let nextLink = try page.nextLink.map { link throws(TSyncError) in
                try remote.endpoint.nextPage(link: link, of: asked, what: "pulling \(request.table) from \(remote.endpoint)")
            }
            if let link = nextLink, !links.insert(link).inserted {
                throw .failure(
                    "pulling \(request.table) from \(remote.endpoint): the server's next-page links go round in a circle; stopped after \(summary.counts.received) records, which may not be all"
                )
            }
            try checkVersions(page.records, of: request.table)
            var new = 0
            for record in page.records where seen.insert(Self.fingerprint(record.id)).inserted { new += 1 }
            if !page.records.isEmpty, new == 0 {
                throw .failure(
                    "pulling \(request.table) from \(remote.endpoint): the server sent a page of records it had sent before (it ignores $skip, or its pages overlap); stopped after \(summary.counts.received) records, which may not be all"
                )
            }
            skip += page.records.count
            // A page shorter than asked is not the end unless the server says so with an empty
            // page; a link is followed while it brings records.
            if !page.records.isEmpty {
                fetching = PageFetch(
                    remote,
                    PageRequest(
                        table: request.table, filter: request.filter, orderBy: "id", top: pageSize.current, skip: skip,
                        nextLink: nextLink),
                    pace: pace)
            }
            let result = try store.applyServerPage(table: request.table, stored: page.records)
            if stopsAfter(page, applied: result, summary: &summary, total: &total, more: fetching != nil, progress: progress) { break }
        }
    }

    /// What both pull loops do once a page is written: count it, report progress (against the
    /// total the first page gave), and say whether a stop request ends the pull here, between
    /// pages, while more are to come.
    private func stopsAfter(
        _ page: StoredPage, applied result: PageResult, summary: inout PullSummary, total: inout Int?, more: Bool, progress: SyncProgress?
    ) -> Bool {
        summary.counts.add(page: result, received: page.records.count)
        summary.items.add(table: summary.table, ids: page.records.lazy.map(\.id))
        total = total ?? page.totalCount
        progress?(summary.counts.received, total.map { max($0, summary.counts.received) })
        guard more, stopRequest?.isStopped == true else { return false }
        summary.interrupted = true
        return true
    }
}

extension Puller {
    /// Every record of a page must carry its version: the local copy sends it in `If-Match` when
    /// it is changed, and a copy without one could only overwrite the server's blindly.
    /// Such a page is refused, nothing of it written (docs/DESIGN.md §8).
    func checkVersions(_ records: [StoredRecord], of table: String) throws(TSyncError) {
        // By position: handed to a closure, each record was copied, its strings retained and released.
        if let index = records.indices.first(where: { records[$0].version?.isEmpty ?? true }) {
            throw .failure(
                "pulling \(table) from \(remote.endpoint): the server sent \(Identifiers.quoted(records[index].id)) without a version, so a later change to it could only overwrite the server's copy blindly; nothing of the page was written"
            )
        }
    }

    /// The same records, each at the same version, in the same order: the server answered a read
    /// twice alike.
    static func sameRecords(_ a: [StoredRecord], _ b: [StoredRecord]) -> Bool {
        a.count == b.count
            && zip(a, b).allSatisfy { $0.id.utf8.elementsEqual($1.id.utf8) && $0.version == $1.version && $0.updatedAt == $1.updatedAt }
    }

    /// A hash of an id's bytes: an equal one means the server sent the same record again. Eight
    /// bytes, however long the id.
    static func fingerprint(_ id: String) -> Int {
        var hasher = Hasher()
        for byte in id.utf8 { hasher.combine(byte) }
        hasher.combine(0 as UInt8)
        return hasher.finalize()
    }
}

/// One page request, started at once so it overlaps with writing the previous page.
private final class PageFetch: Sendable {
    /// The request of the page after a page, from the position guessed from its bytes.
    typealias Ahead = @Sendable (_ guess: (id: String, updatedAt: Timestamp)) -> PageRequest

    private let task: Task<Result<StoredPage, TSyncError>, Never>
    /// The position this page was asked from, when it was asked ahead on a guess.
    private let guessed: PullPosition?
    /// The fetch of the next page, started on a guess once this page has arrived, while the
    /// page is fewer than `depth` pages ahead of the one the pull waits for: however slow the
    /// writes, a pull holds a few pages, not the table.
    private let next: Next

    /// Pages asked for ahead of the one the pull waits for.
    static let depth = 4

    private final class Next: Sendable {
        private struct State {
            var fetch: PageFetch?
            /// How to ask for the page after this one, once the page is here and it may.
            var start: (@Sendable (_ budget: Int) -> PageFetch)?
            /// Pages this one may still ask for ahead of itself.
            var budget: Int
            var cancelled = false
            /// Where the page ends was told already (by the server's header or the body's guess).
            var told = false
        }
        private let state: Mutex<State>

        init(budget: Int) {
            state = Mutex(State(budget: budget))
        }

        /// Where the page ends is known: `start` asks for the next, now if the budget allows. Only
        /// the first word counts: the server's header comes before the body's guess, and a wrong
        /// one costs the request it started (`takeAhead`), never a second request in flight.
        func arrived(_ start: @escaping @Sendable (_ budget: Int) -> PageFetch) {
            state.withLock { state in
                guard !state.cancelled, !state.told else { return }
                state.told = true
                if state.budget > 0 { state.fetch = start(state.budget - 1) } else { state.start = start }
            }
        }

        /// The pull came closer: this page may ask `budget` pages ahead (and the pages it asked
        /// for one fewer each). Locks are taken from a page to the next, never back.
        func raise(to budget: Int) {
            state.withLock { state in
                guard !state.cancelled, budget > state.budget else { return }
                state.budget = budget
                if let fetch = state.fetch {
                    fetch.next.raise(to: budget - 1)
                } else if let start = state.start.take() {
                    state.fetch = start(budget - 1)
                }
            }
        }

        func take() -> PageFetch? { state.withLock { $0.fetch.take() } }

        func cancel() {
            state.withLock { state in
                state.cancelled = true
                state.start = nil
                return state.fetch.take()
            }?.cancel()
        }
    }

    /// tsync's own client reads the page straight into the store's form; with `ahead`, it asks
    /// for the pages after it as they arrive (only tsync's own client: another remote reads one
    /// page at a time). `budget`: pages it may ask for ahead of itself.
    /// `pace`: the pull's, which sets how long the request waits before it is sent and learns
    /// from its round trip.
    init(
        _ remote: any SyncRemote, _ request: PageRequest, ahead: Ahead? = nil, guessed: PullPosition? = nil, budget: Int = depth,
        pace: PullPace? = nil
    ) {
        self.guessed = guessed
        let next = Next(budget: budget)
        self.next = next
        task = Task {
            if let gap = pace?.gap, gap > .zero {
                // Cancelled while it waits, the read below ends at once with the cancellation.
                try? await Task.sleep(for: gap)
            }
            @Sendable func ends(_ guess: (id: String, updatedAt: Timestamp)) {
                guard let ahead else { return }
                let position = PullPosition(checkpoint: Checkpoint(updatedAt: guess.updatedAt, id: guess.id))
                next.arrived { budget in PageFetch(remote, ahead(guess), ahead: ahead, guessed: position, budget: budget, pace: pace) }
            }
            // Where the page ends: said by the server with the headers (`X-TSync-Page-End`), so
            // the next request overlaps this body; else guessed from the body as it arrives.
            let page = await Self.read(remote, request, pace: pace, ends: { id, updatedAt in ends((id, updatedAt)) }) { body in
                if let guess = StoredPageDecoder.lastPosition(body) { ends(guess) }
            }
            if case .success(let page) = page, let client = remote as? RemoteClient { Self.streamOn(page, client, request, next) }
            return page
        }
    }

    /// The page after a page of a streamed answer: the answer's next line (`PageLines`), which
    /// goes on from the page's last record, `guessed`.
    private init(_ client: RemoteClient, lines: PageLines, _ request: PageRequest, guessed: PullPosition, budget: Int) {
        self.guessed = guessed
        let next = Next(budget: budget)
        self.next = next
        task = Task {
            do throws(TSyncError) {
                let page = try await client.streamedPage(lines, request)
                Self.streamOn(page, client, request, next)
                return .success(page)
            } catch {
                return .failure(error)
            }
        }
    }

    /// For a page of a streamed answer: the page after it is the answer's next line, read now.
    private static func streamOn(_ page: StoredPage, _ client: RemoteClient, _ request: PageRequest, _ next: Next) {
        guard let lines = page.lines, let last = page.records.last, let updatedAt = last.updatedAt else { return }
        let position = PullPosition(checkpoint: Checkpoint(updatedAt: updatedAt, id: last.id))
        next.arrived { budget in PageFetch(client, lines: lines, request, guessed: position, budget: budget) }
    }

    /// The fetch of the page after this one, when it was asked ahead at `position`; a fetch asked
    /// at another position is cancelled (and the ones it asked for).
    func takeAhead(at position: PullPosition) -> PageFetch? {
        guard let fetch = next.take() else { return nil }
        guard fetch.guessed == position else {
            fetch.cancel()
            return nil
        }
        fetch.next.raise(to: Self.depth)
        return fetch
    }

    /// The page; cancelling the caller cancels the request (a live pull's held request ends
    /// with the watch).
    func page() async throws(TSyncError) -> StoredPage {
        let task = task
        return try await withTaskCancellationHandler {
            await task.value
        } onCancel: {
            task.cancel()
        }.get()
    }

    /// Cancels the request, and the one asked ahead of it.
    func cancel() {
        task.cancel()
        next.cancel()
    }

    /// The page, its round trip (and the server's word on its queue) told to `pace` as soon as it
    /// is known (an answer that is no page tells nothing).
    private static func read(
        _ remote: any SyncRemote, _ request: PageRequest, pace: PullPace?,
        ends: @escaping @Sendable (_ id: String, _ updatedAt: Timestamp) -> Void, arrived: @escaping @Sendable ([UInt8]) -> Void
    ) async -> Result<StoredPage, TSyncError> {
        let sent = ContinuousClock.now
        do throws(TSyncError) {
            if let client = remote as? RemoteClient {
                return .success(
                    try await client.readStoredPage(
                        request,
                        arrived: { body, queued in
                            pace?.answered(after: ContinuousClock.now - sent, queued: queued)
                            arrived(body)
                        }, ends: ends))
            }
            let page = StoredPage(try await remote.readPage(request))
            pace?.answered(after: ContinuousClock.now - sent)
            return .success(page)
        } catch {
            return .failure(error)
        }
    }
}

/// How long a pull waits before it asks for its next page: nothing while the server answers about
/// as fast as it ever did, more while its answers come later than that (docs/DESIGN.md §8).
///
/// A pull has one page request in flight at a time (`PageFetch` asks the next as the page before
/// arrives, from its headers on), so a crowd of pulls keeps one request each at the servers, and the time a request
/// spends there is the crowd over what the servers serve a second (Little's law): 200 clones,
/// 215 pages a second, near a second a page, all of it queue. A pull that waits before asking
/// takes no longer, since the servers serve no more pages a second for its asking sooner, but the
/// queue moves from the server, where it holds connections and memory and makes every answer
/// late, to the clients. As delay-based congestion control does (LEDBAT, RFC 6817), the queue is
/// told from the round trip: the least of the last two round trips over the least this pull has
/// seen. While that is more than `target`, the gap before each request grows by half the excess;
/// once it is below, the gap shrinks to four fifths a page, and to half while the queue is under
/// half of `target` (the crowd has thinned: the last pulls of a crowd, or a lone pull after a
/// burst, need not wait out gaps learnt in it). So a lone pull, whose round trip stays at its
/// least (however long the network makes it), never waits, and a single slow answer (a server's
/// checkpoint, a lost packet) does not count, since the next one is quick. A crowd that starts at
/// one moment would learn slowly from round trips alone: each pull's first round trips are queued
/// already, and one that never had a quick answer sees no queue (LEDBAT's latecomer;
/// docs/PERFORMANCE.md, "Pacing the pull"). So where the server says how long a read waited for
/// its database (`Server-Timing: queue`, as `tsync serve` does), the queue is the larger of the
/// two: the least of the last two waits it said, or what the round trips tell.
final class PullPace: Sendable {
    private struct State {
        /// The least round trip seen: the server and the network with no queue.
        var least: Duration?
        var previous: Duration?
        /// The wait the server said for the request before (`Server-Timing: queue`).
        var previousQueued: Duration?
        var gap = Duration.zero
    }
    private let state = Mutex(State())

    /// Queueing a pull accepts before it waits between requests.
    static let target = Duration.milliseconds(100)
    /// The longest gap: the pull stays alive in any crowd (a request's deadline is far longer).
    static let longest = Duration.seconds(4)

    /// The time to wait before sending the next request.
    var gap: Duration { state.withLock { $0.gap } }

    /// Learns from a request's round trip, the time from its sending to its whole answer, and
    /// from the time the server says the request waited for its database, if it says.
    func answered(after roundTrip: Duration, queued: Duration? = nil) {
        state.withLock { state in
            let least = min(state.least ?? roundTrip, roundTrip)
            state.least = least
            let recent = min(state.previous ?? roundTrip, roundTrip)
            state.previous = roundTrip
            var queue = recent - least
            if let queued {
                queue = max(queue, min(state.previousQueued ?? queued, queued))
            }
            state.previousQueued = queued
            if queue > Self.target {
                state.gap = min(Self.longest, state.gap + (queue - Self.target) / 2)
            } else {
                state.gap = queue < Self.target / 2 ? state.gap / 2 : state.gap * 4 / 5
                if state.gap < .milliseconds(1) { state.gap = .zero }
            }
        }
    }
}
