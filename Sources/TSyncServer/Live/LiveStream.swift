import HTTPTypes
import NIOCore
import TSyncModel
import TSyncQuery

/// A held read that stays open (docs/DESIGN.md §8.1): asked for with `Prefer: wait=N, stream`,
/// an incremental pull's read (`updatedAt, id` order, no `$skip`, `$select` or count) is answered
/// with one page at once and then, for up to N seconds, each later page as a line of its chunked
/// body: the records after the last one sent, written by the commits that bring them
/// (`LiveStreams`). A page is a line: the JSON array a read's body would be, then `\n`.
///
/// Why: a watcher of a busy table that asks again after every page costs the server a whole
/// request per page (its head parsed, the middlewares, the route, the answer's head), about
/// 100 µs; a line written to an open answer costs a write. A plain v2 server, and a tsync server
/// before this one, ignore the preference, and the client reads a page as it always did.
///
/// A class: a held read's async frames carry one reference to it, not its parts (those frames are
/// most of what a held read costs, docs/PERFORMANCE.md, "Fan-out").
final class LiveStream: Sendable {
    /// The read's question without its checkpoint: reads of the same question at the same place
    /// are answered by one query and one line of bytes.
    let question: LiveQuestion
    let interest: LiveInterest
    /// The page size: a full page means more may follow at once.
    let top: Int
    /// The page after `position` (nil: the read's own filter, as the client sent it).
    let page: @Sendable (StreamPosition?) async throws -> PageBody
    /// Where the client's own filter starts, when it is an incremental pull's checkpoint.
    let start: StreamPosition?

    init(
        question: LiveQuestion, interest: LiveInterest, top: Int, page: @escaping @Sendable (StreamPosition?) async throws -> PageBody,
        start: StreamPosition?
    ) {
        self.question = question
        self.interest = interest
        self.top = top
        self.page = page
        self.start = start
    }

    /// Whether `prefer` asks for a stream: a preference `stream` (RFC 7240: unknown ones are
    /// ignored, so a server that does not stream holds the read as it would without it).
    static func requested(_ prefer: String?) -> Bool {
        guard let prefer, prefer.utf8.count > 6 else { return false }
        return prefer.split(separator: ",").contains { preference in
            preference.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() == "stream"
        }
    }

    /// A read's filter split into the user's part and an incremental pull's checkpoint
    /// (`FilterExpression.pullAfter`, as tsync sends it: alone, or AND-ed after the user's).
    static func split(_ filter: FilterExpression?) -> (user: FilterExpression?, start: StreamPosition?) {
        guard let filter else { return (nil, nil) }
        if let position = filter.pullPosition { return (nil, StreamPosition(updatedAt: position.updatedAt, id: position.id)) }
        if case .binary(.and, let user, let after) = filter, let position = after.pullPosition {
            return (user, StreamPosition(updatedAt: position.updatedAt, id: position.id))
        }
        return (filter, nil)
    }

    /// The filter of the page after `position`: the user's part AND-ed with "after it", the
    /// form a pull sends (so the storage's pull paths serve it).
    static func filter(user: FilterExpression?, after position: StreamPosition) -> FilterExpression {
        let after = FilterExpression.pullAfter(updatedAt: position.updatedAt, id: position.id)
        return user.map { .binary(.and, $0, after) } ?? after
    }

    /// A page as a chunk of the answer's body: its size in hex, the page and `\n`, CRLF.
    static func chunk(_ page: ByteBuffer, allocator: ByteBufferAllocator) -> ByteBuffer {
        let size = page.readableBytes + 1
        var chunk = allocator.buffer(capacity: size + 16)
        chunk.writeString(String(size, radix: 16))
        chunk.writeStaticString("\r\n")
        chunk.writeImmutableBuffer(page)
        chunk.writeStaticString("\n\r\n")
        return chunk
    }

    /// The chunked body's end.
    static let lastChunk = ByteBuffer(string: "0\r\n\r\n")
}

/// Where a stream stands: the last record sent, in `updatedAt, id` order. A class, for the same
/// reason as `LiveStream`: every page (`PageBody`) carries one, and held reads carry pages.
final class StreamPosition: Hashable, Sendable {
    let updatedAt: Timestamp
    let id: String

    /// The last record of a page from its `X-TSync-Page-End` value (`PageEnd`: the time, a space,
    /// the id); nil when the time does not parse.
    convenience init?(pageEnd: String) {
        guard let space = pageEnd.firstIndex(of: " "), let time = Timestamp(iso8601: String(pageEnd[..<space])) else { return nil }
        self.init(updatedAt: time, id: String(pageEnd[pageEnd.index(after: space)...]))
    }

    init(updatedAt: Timestamp, id: String) {
        self.updatedAt = updatedAt
        self.id = id
    }

    static func == (left: StreamPosition, right: StreamPosition) -> Bool { left.updatedAt == right.updatedAt && left.id == right.id }

    func hash(into hasher: inout Hasher) {
        hasher.combine(updatedAt)
        hasher.combine(id)
    }
}

extension HTTPField.Name {
    static let transferEncoding = HTTPField.Name("Transfer-Encoding")!
}
