import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import TSyncModel

/// The live route (docs/DESIGN.md §4, §8.1): a page read with `Prefer: wait=N` (RFC 7240) that
/// would be empty is held until a commit to its table, or N seconds (at most `maximumSeconds`),
/// and then answered with the same query run again. A plain v2 server ignores the preference;
/// `tsync serve` says it applied it (`Preference-Applied: wait=N`), which is how a client
/// discovers the route, and asks proxies not to buffer (`X-Accel-Buffering: no`).
struct LiveWait: Sendable {
    /// The longest wait granted: under the 15–25 s that proxies and load balancers keep an idle
    /// request open, so a held request is never cut by one.
    static let maximumSeconds = 25

    /// The seconds asked for, nil when the request has no `wait` preference. Read on every held
    /// read's every request: the header as tsync sends it (`wait=N`) is read from its bytes, any
    /// other the general way (`requestedInGeneral`).
    static func requested(_ prefer: String?) -> Int? {
        guard let prefer else { return nil }
        let bytes = prefer.utf8
        if bytes.count > 5, bytes.count <= 9, bytes.starts(with: "wait=".utf8),
            bytes.dropFirst(5).allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        {
            return bytes.dropFirst(5).reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        }
        return requestedInGeneral(prefer)
    }

    /// `requested` for any header: each preference's first token, trimmed, matched without case.
    static func requestedInGeneral(_ prefer: String) -> Int? {
        for preference in prefer.split(separator: ",") {
            let token = preference.split(separator: ";").first?.trimmingCharacters(in: .whitespaces) ?? ""
            let parts = token.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, parts[0].lowercased() == "wait" else { continue }
            let value = parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            guard let seconds = Int(value), seconds >= 0 else { return nil }
            return seconds
        }
        return nil
    }

    let feed: ChangeFeed
    /// Requests held at once (`--max-watchers`).
    let limit: Int
    /// Counts the reads held now and the queries run for them.
    var metrics: ServerMetrics? = nil

    /// Runs `query` at once; when its page is empty and a wait was granted, again after each
    /// commit to `table` that may answer `interest` (`ChangeFeed.committed`), until it is not empty or the wait is over. Returns the page and the
    /// seconds granted (0 when the server holds its limit of waiters already). A held read's
    /// query is shared with every other held read that asks `question` at the same generation
    /// (`ChangeFeed.answer`): `query` must depend on nothing else.
    ///
    /// With `head` (the answer's head for a page and the seconds granted), a commit may write the
    /// answer itself (`LiveDelivery`): the page it was written with is returned, as it would have
    /// been, and the request's own answer is the same. With `stream` too, the answer may be a
    /// stream (`streamed`): an empty page is returned once it has ended, and the request's own
    /// answer is dropped.
    func page(
        table: String, _ question: LiveQuestion, _ interest: LiveInterest, seconds: Int, channel: (any Channel)?,
        head: (@Sendable (PageBody, Int) -> HTTPResponse)? = nil, stream: LiveStream? = nil,
        _ query: @escaping @Sendable () async throws -> PageBody
    ) async throws -> (PageBody, granted: Int) {
        let granted = min(seconds, Self.maximumSeconds)
        guard granted > 0, feed.admit(limit: limit, table: table) else { return (try await query(), 0) }
        metrics?.liveWaiting.increment()
        defer {
            feed.release(table: table)
            metrics?.liveWaiting.decrement()
        }
        // Counted where it runs: a query shared by many held reads runs, and counts, once.
        let counted: @Sendable () async throws -> PageBody = { [metrics] in
            metrics?.recordLiveQuery()
            return try await query()
        }
        let deadline = ContinuousClock.now + .seconds(granted)
        var delivery: LiveDelivery?
        while true {
            // Taken before the query: a commit while it runs wakes the wait below at once.
            let generation = feed.generation(table)
            let page = try await feed.answer(table: table, question, generation: generation, counted)
            // A stream asked for, by a client that is not a page or more behind: this page is
            // its first line, the rest follow on the same answer. A line goes out whole, so one
            // longer than an answer's slice goes its request's way (`ResponseShareMiddleware`).
            if let stream, delivery == nil, page.count < stream.top, page.count == 0 || page.position != nil,
                page.bytes.readableBytes <= LiveDelivery.maximumBytes, let channel, let head, !feed.isStopping,
                await streamed(stream, table: table, first: page, head: head, granted: granted, channel: channel, until: deadline)
            {
                return (PageBody(bytes: ByteBuffer(), count: 0), granted)
            }
            // Stopping: what there is now is the answer, so the server stops without delay.
            if page.count > 0 || ContinuousClock.now >= deadline || feed.isStopping || channel?.isActive == false
                || Task.isCancelled
            {
                return (page, granted)
            }
            if delivery == nil, let channel, let head {
                delivery = LiveDelivery(channel: channel, head: { head($0, granted) }, query: counted)
            }
            if let written = await feed.wait(
                table: table, question, interest, after: generation, until: deadline, channel: channel, delivery: delivery)
            {
                return (written, granted)
            }
        }
    }
}

extension LiveWait {
    /// Answers with a stream (`LiveStream`): `first` and the head, chunked, then the pages that
    /// commits bring until `deadline` (`LiveStreams`), then the answer's end. False, and nothing
    /// written, when the connection cannot take a stream (HTTP/1.0, a request pipelined ahead).
    /// Not inlined: its locals would stay in every held read's frame (docs/PERFORMANCE.md, "Fan-out").
    @inline(never)
    private func streamed(
        _ stream: LiveStream, table: String, first: PageBody, head: @Sendable (PageBody, Int) -> HTTPResponse, granted: Int,
        channel: any Channel, until deadline: ContinuousClock.Instant
    ) async -> Bool {
        var streamed = head(first, granted)
        streamed.headerFields[.contentLength] = nil
        streamed.headerFields[.pageEnd] = nil
        streamed.headerFields[.contentType] = "application/x-ndjson; charset=utf-8"
        streamed.headerFields[.transferEncoding] = "chunked"
        if let applied = streamed.headerFields[.preferenceApplied] { streamed.headerFields[.preferenceApplied] = applied + ", stream" }
        let head = streamed
        let line = first.count > 0 ? LiveStream.chunk(first.bytes, allocator: channel.allocator) : nil
        let loop = channel.eventLoop
        let started = try? await loop.submit { () -> NIOLoopBound<HTTPExchange>? in
            guard let exchange = try? channel.pipeline.syncOperations.handler(type: HTTPExchange.self),
                exchange.startStream(head, first: line)
            else { return nil }
            return NIOLoopBound(exchange, eventLoop: loop)
        }.get()
        guard let exchange = started else { return false }
        await feed.streams.follow(
            LiveStreams.Open(stream: stream, channel: channel, exchange: exchange), table: ChangeFeed.key(table),
            from: first.position ?? stream.start, until: deadline)
        try? await loop.submit { exchange.value.endStream() }.get()
        return true
    }
}

/// What a held read asks, besides its table: two reads that ask the same get the same page.
struct LiveQuestion: Hashable, Sendable {
    /// Whose records.
    let scope: OwnerScope
    /// The read's query parameters (`ListOptions.parameterNames`), decoded, in their order.
    let parameters: [String]
    /// Worked out once: a commit looks up the question of every waiter it may wake, and each
    /// woken read its shared answer, 10,000 lookups for one commit to 10,000 held reads.
    private let hashed: Int

    init(scope: OwnerScope, parameters: [String]) {
        self.scope = scope
        self.parameters = parameters
        var hasher = Hasher()
        hasher.combine(scope)
        hasher.combine(parameters)
        hashed = hasher.finalize()
    }

    static func == (left: LiveQuestion, right: LiveQuestion) -> Bool {
        left.hashed == right.hashed && left.scope == right.scope && left.parameters == right.parameters
    }

    func hash(into hasher: inout Hasher) { hasher.combine(hashed) }
}

/// A page as sent: its body, and how many records it holds.
struct PageBody: Sendable {
    var bytes: ByteBuffer
    var count: Int
    /// `RecordPage.deletedHorizon`, for `X-TSync-Deleted-Horizon`.
    var deletedHorizon: Timestamp? = nil
    /// How long the read waited for the database (`DatabaseWait`), for `Server-Timing`.
    var queued: Duration? = nil
    /// Where it ends (`PageEnd.value`), `X-TSync-Page-End`'s value when a header can carry it.
    var end: String? = nil

    /// Its last record, where a stream goes on from (`LiveStream`): read from `end`. (Not kept
    /// beside it: every held read's frames carry pages, and those frames are most of what a held
    /// read costs.)
    var position: StreamPosition? { end.flatMap(StreamPosition.init(pageEnd:)) }
}

extension HTTPField.Name {
    static let prefer = HTTPField.Name("Prefer")!
    static let preferenceApplied = HTTPField.Name("Preference-Applied")!
    static let accelBuffering = HTTPField.Name("X-Accel-Buffering")!
}
