import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1

/// The router, every middleware and route included, called for a held read straight from the
/// connection's `HTTPExchange`, not through Hummingbird's connection loop (docs/DESIGN.md §8.1).
///
/// A watcher asks again after every page: following a table that takes 1,000 writes a second,
/// 1,000 watchers make about 17,000 requests a second, each a page of a few records. Through
/// Hummingbird's loop a request is three more hand-overs (the decoded head converted and queued
/// for the connection's task, the answer queued back and converted again), about a quarter of
/// what such an answer costs the server (docs/PERFORMANCE.md, "Held reads answered from the
/// exchange"). Here the same responder runs in a task of its own and its answer's parts are
/// written by `HTTPExchange` as the parts of any other answer are; what Hummingbird's loop does
/// around the responder is done alike (`respond`).
///
/// Only a GET that asks to be held (`Prefer: wait=N`), with no body and no `Expect`, comes here,
/// and only when no other request of the connection is under way: requests are answered in the
/// order they came, whichever way each takes. Everything else goes through Hummingbird.
struct DirectResponder: Sendable {
    let responder: RouterResponder<ServerRequestContext>
    let logger: Logger

    /// Whether the request of `head` is answered here.
    static func takes(_ head: HTTPRequestHead) -> Bool {
        head.method == .GET && head.headers["expect"].isEmpty && head.headers["content-length"].isEmpty
            && head.headers["transfer-encoding"].isEmpty
            && head.headers["prefer"].contains { LiveWait.requested($0) != nil }
    }

    /// Answers `head` (a request with no body) on `exchange`'s connection: what Hummingbird's
    /// application does for each request (a context for the channel, an error no middleware
    /// answered is a bare 500, `Date` and `Server` on every answer), the answer's parts handed
    /// to `exchange` on its event loop as they come.
    func respond(to head: HTTPRequest, channel: any Channel, exchange: NIOLoopBound<HTTPExchange>) async {
        let request = Request(head: head, body: RequestBody(buffer: ByteBuffer()))
        let context = ServerRequestContext(source: .init(channel: channel, logger: logger))
        var response: Response
        do {
            response = try await responder.respond(to: request, context: context)
        } catch {
            response = Response(status: .internalServerError, body: .init())
        }
        response.headers[.date] = HTTPDate.now
        response.headers[.server] = SyncServer.serverName
        let writer = ExchangeWriter(head: response.head, exchange: exchange)
        do {
            try await response.body.write(writer)
        } catch {
            // Hummingbird closes the connection of an answer that failed under way: its client
            // cannot tell the part written from a whole answer otherwise.
            exchange.eventLoop.execute { exchange.value.directFailed() }
        }
    }
}

/// Hands an answer's parts to `HTTPExchange`, in order, on its event loop. The first body part
/// is held until the next or the end, so that an answer of one buffer (a page) goes as one
/// hand-over: head, body and end. A writer that must not outrun its client waits for the
/// connection itself (`ResponseShareMiddleware`'s slices), as it does on Hummingbird's way.
private struct ExchangeWriter: ResponseBodyWriter {
    var head: HTTPResponse?
    var held: ByteBuffer?
    let exchange: NIOLoopBound<HTTPExchange>

    init(head: HTTPResponse, exchange: NIOLoopBound<HTTPExchange>) {
        self.head = head
        self.exchange = exchange
    }

    mutating func write(_ buffer: ByteBuffer) async throws {
        if held != nil { hand(end: false) }
        held = buffer
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
        hand(end: true)
    }

    private mutating func hand(end: Bool) {
        let head = head.map { HTTPResponseHead($0) }
        let body = held
        self.head = nil
        held = nil
        let exchange = exchange
        exchange.eventLoop.execute { exchange.value.writeDirect(head: head, body: body, end: end) }
    }
}
