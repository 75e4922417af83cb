import Foundation
import HTTPTypes
import NIOCore
import Synchronization
import TSyncModel

/// How a held read's answer is written outside its request (docs/DESIGN.md §8.1): when a commit
/// wakes the held reads of one question, the feed works out their shared page once and writes
/// each answer to its connection from the connection's event loop, head and body at once, before
/// any of their request tasks runs again. Each request then goes on as it would (its log line,
/// its metrics, its keep-alive), and the answer it makes, the same, is not written again
/// (`HTTPExchange.deliver`). Without this, every answer waits for its request's task to run
/// through the middlewares and Hummingbird's writer: 10,000 woken reads were 10,000 task runs
/// ahead of the last answer's bytes.
final class LiveDelivery: Sendable {
    /// Pages larger than this go the request's own way: its answer is written in slices, and
    /// charged to the client's unread bytes (`ResponseShareMiddleware`).
    static let maximumBytes = ResponseShareMiddleware.slice

    let channel: any Channel
    /// The answer's head for a page: every field the request's own answer would have, in its order.
    let head: @Sendable (PageBody) -> HTTPResponse
    /// The read's query, which every held read of its question shares (`ChangeFeed.answer`).
    let query: @Sendable () async throws -> PageBody

    init(
        channel: any Channel, head: @escaping @Sendable (PageBody) -> HTTPResponse,
        query: @escaping @Sendable () async throws -> PageBody
    ) {
        self.channel = channel
        self.head = head
        self.query = query
    }

    /// Writes the answer of `page`; on the channel's event loop. False when it was not written
    /// (the connection closed, or it is not at a point where an answer can go), and the request
    /// answers as it would have.
    func write(_ page: PageBody) -> Bool {
        guard page.bytes.readableBytes <= Self.maximumBytes,
            let exchange = try? channel.pipeline.syncOperations.handler(type: HTTPExchange.self)
        else { return false }
        return exchange.deliver(head(page), body: page.bytes)
    }

    /// `head` as NIO's HTTP/1.1 encoder writes it, after `HTTP1ToHTTPServerCodec`: the status
    /// line, each field's name as given, `connection: close` last when the connection closes
    /// after it (`HTTPExchange`).
    static func bytes(_ head: HTTPResponse, closing: Bool, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 256)
        if head.status == .ok {
            buffer.writeStaticString("HTTP/1.1 200 OK\r\n")
        } else {
            buffer.writeString("HTTP/1.1 \(head.status.code) \(head.status.reasonPhrase)\r\n")
        }
        for field in head.headerFields {
            buffer.writeString(field.name.rawName)
            buffer.writeStaticString(": ")
            buffer.writeString(field.value)
            buffer.writeStaticString("\r\n")
        }
        if closing { buffer.writeStaticString("connection: close\r\n") }
        buffer.writeStaticString("\r\n")
        return buffer
    }
}

/// The `Date` field as Hummingbird writes it on every answer (RFC 9110's IMF-fixdate), for an
/// answer written outside Hummingbird (`LiveDelivery`).
enum HTTPDate {
    private static let days = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The last second written, and its text: one commit's thousands of answers write one.
    private static let last = Mutex((second: Int.min, text: ""))

    static var now: String {
        let second = Int(Date().timeIntervalSince1970)
        return last.withLock { last in
            if last.second != second { last = (second, text(secondsSince1970: second)) }
            return last.text
        }
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func text(secondsSince1970 seconds: Int) -> String {
        let day = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let second = seconds - day * 86_400
        let (year, month, dayOfMonth) = Timestamp.civil(fromDays: Int64(day))
        let weekday = days[((day % 7) + 7) % 7]
        let time = "\(two(second / 3600)):\(two(second / 60 % 60)):\(two(second % 60))"
        return "\(weekday), \(two(Int(dayOfMonth))) \(months[Int(month) - 1]) \(year) \(time) GMT"
    }

    private static func two(_ value: Int) -> String { value < 10 ? "0\(value)" : String(value) }
}
