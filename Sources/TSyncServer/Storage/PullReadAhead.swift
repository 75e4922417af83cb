import Synchronization

/// Pages of tsync's pull walk read one ahead: when a page of the walk comes back full, the page
/// after it is read at once, while this one travels to the client, and the client's request for
/// it (tsync's client asks as soon as a page has arrived) takes it instead of reading again. On
/// PostgreSQL a page's read is a round trip to another process and most of a request's time; on
/// SQLite it is most of the server's time for a page, and a clone's requests follow one another,
/// each sent when the page before arrives. This takes the read off the path from one request to
/// the next (docs/DESIGN.md §10).
///
/// A page read ahead is the page its request would have got had it come when the read began:
/// a page is complete below its cap whenever it is read (what commits later is stamped at or above
/// the cap), so giving it a little later is the same as the request having come a little earlier,
/// which the protocol allows anyway. Where the database can say whether anything committed since
/// (`version`: SQLite's `data_version`), a page is given only if nothing did: the page a read
/// would give now. Otherwise the request reads, and reads nothing ahead: while writes come, a
/// page read ahead would mostly be read twice.
///
/// What a client can make the server hold is bounded: at most `capacity` pages wait, each for
/// at most `lifetime`, and a read ahead is started only from a page a request read, of at most
/// `maximumBytes` (the next is read ahead as large: a page of 5,000 records of 1 MiB is read by
/// its request, not kept waiting).
final class PullReadAhead<Page: PullWalkPage>: Sendable {
    /// Walks whose next page may wait at once.
    let capacity: Int
    /// How long a page read ahead waits for its request.
    let lifetime: Duration
    /// The largest page after which the next one is read ahead.
    let maximumBytes: Int

    /// The database's count of commits, where it keeps one; nil when it cannot be read.
    private let version: (@Sendable () -> UInt64?)?

    init(
        capacity: Int = 16, lifetime: Duration = .seconds(2), maximumBytes: Int = 4 << 20, version: (@Sendable () -> UInt64?)? = nil
    ) {
        self.capacity = capacity
        self.lifetime = lifetime
        self.maximumBytes = maximumBytes
        self.version = version
    }

    private struct Entry {
        var read: Task<Page?, any Error>
        var started: ContinuousClock.Instant
        /// `version` before the read began.
        var version: UInt64?
    }

    private let entries = Mutex<[PullWalk: Entry]>([:])
    /// Pages given from a read ahead (the tests read it to see that the requests took them).
    let pagesTaken = Atomic<Int>(0)

    /// The page of `walk`: the one read ahead for it if there is one, else `read`'s. When the page
    /// is full, the walk's next page is read ahead with `read`.
    func page(
        _ walk: PullWalk, read: @escaping @Sendable (PullWalk) async throws -> Page?
    ) async throws -> Page? {
        // A read ahead that failed is not the request's failure: it reads again.
        let (ahead, overtaken) = take(walk)
        var page = try? await ahead?.value
        if page == nil {
            page = try await read(walk)
        } else {
            pagesTaken.add(1, ordering: .relaxed)
        }
        if !overtaken, let page, page.walkedCount == walk.top, page.walkedBytes <= maximumBytes, let last = page.walkEnd {
            start(walk.next(after: last), read: read)
        }
        return page
    }

    /// Cancels the reads in flight and forgets the pages waiting.
    func cancelAll() {
        let reads = entries.withLock { entries in
            defer { entries = [:] }
            return entries.values.map(\.read)
        }
        for read in reads { read.cancel() }
    }

    /// The page read ahead for `walk`, if it has not waited too long and nothing committed since
    /// its read began; `overtaken` when something did.
    private func take(_ walk: PullWalk) -> (read: Task<Page?, any Error>?, overtaken: Bool) {
        let entry = entries.withLock { $0.removeValue(forKey: walk) }
        guard let entry else { return (nil, false) }
        guard entry.started.duration(to: .now) < lifetime else {
            entry.read.cancel()
            return (nil, false)
        }
        if let version, entry.version == nil || entry.version != version() {
            entry.read.cancel()
            return (nil, true)
        }
        return (entry.read, false)
    }

    private func start(_ walk: PullWalk, read: @escaping @Sendable (PullWalk) async throws -> Page?) {
        let now = ContinuousClock.now
        // Read before the read begins: a commit after this is seen at `take`, whether the read
        // saw it or not.
        let before = version?()
        let expired = entries.withLock { entries -> [Task<Page?, any Error>] in
            let old = entries.filter { now - $0.value.started >= lifetime }
            for walk in old.keys { entries[walk] = nil }
            if entries[walk] == nil, entries.count < capacity {
                entries[walk] = Entry(read: Task { try await read(walk) }, started: now, version: before)
            }
            return old.values.map(\.read)
        }
        for read in expired { read.cancel() }
    }
}
