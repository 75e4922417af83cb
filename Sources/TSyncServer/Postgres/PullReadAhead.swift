import Synchronization

/// Pages of tsync's pull walk read one ahead: when a page of the walk comes back full, the page
/// after it is read at once, while this one travels to the client, and the client's request for
/// it (tsync's client asks as soon as a page has arrived) takes it instead of reading again. On
/// PostgreSQL a page's read is a round trip to another process and most of a request's time; this
/// takes it off the path from one request to the next (docs/DESIGN.md §10).
///
/// A page read ahead is the page its request would have got had it come when the read began:
/// a page is complete below its cap whenever it is read (what commits later is stamped at or above
/// the cap), so giving it a little later is the same as the request having come a little earlier,
/// which the protocol allows anyway.
///
/// What a client can make the server hold is bounded: at most `capacity` pages wait, each for
/// at most `lifetime`, and a read ahead is started only from a page a request read.
final class PullReadAhead: Sendable {
    /// Walks whose next page may wait at once.
    let capacity: Int
    /// How long a page read ahead waits for its request.
    let lifetime: Duration

    init(capacity: Int = 16, lifetime: Duration = .seconds(2)) {
        self.capacity = capacity
        self.lifetime = lifetime
    }

    private struct Entry {
        var read: Task<PullPage.Page?, any Error>
        var started: ContinuousClock.Instant
    }

    private let entries = Mutex<[PullPage.Walk: Entry]>([:])
    /// Pages given from a read ahead (the tests read it to see that the requests took them).
    let pagesTaken = Atomic<Int>(0)

    /// The page of `walk`: the one read ahead for it if there is one, else `read`'s. When the page
    /// is full, the walk's next page is read ahead with `read`.
    func page(
        _ walk: PullPage.Walk, read: @escaping @Sendable (PullPage.Walk) async throws -> PullPage.Page?
    ) async throws -> PullPage.Page? {
        // A read ahead that failed is not the request's failure: it reads again.
        let ahead = take(walk)
        var page = try? await ahead?.value
        if page == nil {
            page = try await read(walk)
        } else {
            pagesTaken.add(1, ordering: .relaxed)
        }
        if let page, page.written.count == walk.top, let last = page.last {
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

    /// The page read ahead for `walk`, if it has not waited too long.
    private func take(_ walk: PullPage.Walk) -> Task<PullPage.Page?, any Error>? {
        let entry = entries.withLock { $0.removeValue(forKey: walk) }
        guard let entry else { return nil }
        guard entry.started.duration(to: .now) < lifetime else {
            entry.read.cancel()
            return nil
        }
        return entry.read
    }

    private func start(_ walk: PullPage.Walk, read: @escaping @Sendable (PullPage.Walk) async throws -> PullPage.Page?) {
        let now = ContinuousClock.now
        let expired = entries.withLock { entries -> [Task<PullPage.Page?, any Error>] in
            let old = entries.filter { now - $0.value.started >= lifetime }
            for walk in old.keys { entries[walk] = nil }
            if entries[walk] == nil, entries.count < capacity {
                entries[walk] = Entry(read: Task { try await read(walk) }, started: now)
            }
            return old.values.map(\.read)
        }
        for read in expired { read.cancel() }
    }
}
