import HTTPTypes
import NIOCore
import NIOHTTP1

/// Right after the HTTP decoder, the one handler of ours on a request's parts and its answer's
/// (each handler is a hop for every part of every answer, three an answer, for each of the reads
/// one commit wakes):
///
/// - tells `ConnectionGuard` when a request's head and its end arrive, and when the answer to it
///   begins and ends (its timers);
/// - closes a connection after its answer when the request did not ask to keep it (HTTP/1.0
///   without `Connection: keep-alive`, or `Connection: close`), saying so in the answer:
///   Hummingbird only looks at `Connection: close`, and would keep an HTTP/1.0 client's
///   connection open;
/// - answers a request NIO's HTTP/1.1 parser refuses (a head larger than its limit, a malformed
///   line) as every other error is: `{"error"}` with the reason, then the connection closed,
///   instead of the parser's bare 400 with no body (found by schemathesis: a 98 KB query string
///   of bounded parameters). When an answer is already under way on the connection, the error
///   goes on to NIO's own handler, which closes it;
/// - writes a held read's answer that its request has not written yet (`deliver`, `LiveDelivery`),
///   and drops the same answer when the request writes it; likewise a streamed answer, line by
///   line (`startStream`, `LiveStream`).
final class HTTPExchange: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private var guardHandler: ConnectionGuard?
    /// Requests read whose answer has not ended, oldest first (a status can only be written when
    /// none is): whether each closes the connection after its answer (HTTP/1.0 without
    /// `Connection: keep-alive`, or `Connection: close`). A client may send requests before the
    /// answers to those before them (pipelining): the last one's wish is not the first one's.
    private var unanswered: [Pending] = []
    private var refused = false
    /// Answers written by `deliver` that their requests have yet to write: dropped when they do.
    private var delivered = 0
    private var context: ChannelHandlerContext?
    /// A streamed answer under way (`startStream`): whether the connection closes after it.
    private var streaming: Bool?

    /// A request read and not yet answered.
    private struct Pending {
        /// HTTP/1.0 without `Connection: keep-alive`, or `Connection: close`.
        var closes: Bool
        /// HTTP/1.1 or later: its answer may be chunked.
        var chunks: Bool
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        guardHandler = try? context.pipeline.syncOperations.handler(type: ConnectionGuard.self)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    /// Writes the answer to the request under way, ahead of the request itself, as `write` would
    /// write it (the guard told, `connection: close` and the close when the request asked for it);
    /// its request then writes the same answer, which is dropped. False, and nothing written,
    /// unless exactly one request is under way, its body all arrived and no answer begun.
    func deliver(_ head: HTTPResponse, body: ByteBuffer) -> Bool {
        guard let context, context.channel.isActive, unanswered.count == 1, delivered == 0, !refused, let guardHandler,
            guardHandler.awaitsAnswer
        else { return false }
        guardHandler.responseStarted()
        let closeAfterAnswer = unanswered.removeFirst().closes
        delivered = 1
        guardHandler.responseEnded()
        let bytes = LiveDelivery.bytes(head, closing: closeAfterAnswer, allocator: context.channel.allocator)
        guardHandler.write(bytes, body, promise: Self.closing(context, closeAfterAnswer))
        return true
    }

    /// When `closes`, a promise whose completion closes the connection: for the last write of an
    /// answer after which it closes (once that write is on the socket).
    private static func closing(_ context: ChannelHandlerContext, _ closes: Bool) -> EventLoopPromise<Void>? {
        guard closes else { return nil }
        let written = context.eventLoop.makePromise(of: Void.self)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        written.futureResult.whenComplete { _ in loopBound.value.close(promise: nil) }
        return written
    }

    /// Begins a streamed answer to the request under way (`LiveStream`): writes `head` (chunked)
    /// and `first`, a line already framed, when there is one; its lines follow by `streamLine`,
    /// its end by `endStream`, and its request's own answer is dropped. False, and nothing
    /// written, where `deliver` would refuse, or when the request is HTTP/1.0.
    func startStream(_ head: HTTPResponse, first: ByteBuffer?) -> Bool {
        guard let context, context.channel.isActive, unanswered.count == 1, unanswered[0].chunks, delivered == 0, !refused,
            streaming == nil, let guardHandler, guardHandler.awaitsAnswer
        else { return false }
        guardHandler.responseStarted()
        let closes = unanswered.removeFirst().closes
        delivered = 1
        streaming = closes
        let bytes = LiveDelivery.bytes(head, closing: closes, allocator: context.channel.allocator)
        guardHandler.write(bytes, first ?? ByteBuffer(), promise: nil)
        return true
    }

    /// Writes one line (a framed chunk) of the streamed answer under way.
    func streamLine(_ chunk: ByteBuffer) -> LiveStreams.Written {
        guard streaming != nil, let context, context.channel.isActive, let guardHandler else { return .closed }
        guard context.channel.isWritable else { return .busy }
        guardHandler.write(chunk, promise: nil)
        return .written
    }

    /// Ends the streamed answer under way, and closes the connection after it when its request
    /// asked; its request's own answer, written next, is dropped.
    func endStream() {
        guard let closes = streaming, let context, let guardHandler else { return }
        streaming = nil
        guardHandler.responseEnded()
        guard context.channel.isActive else { return }
        guardHandler.write(LiveStream.lastChunk, promise: Self.closing(context, closes))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            unanswered.append(
                Pending(closes: !head.isKeepAlive, chunks: head.version.major > 1 || (head.version.major == 1 && head.version.minor >= 1)))
            // As HTTP types read it: the values of every field of the name, joined.
            guardHandler?.headArrived(expectsContinue: head.headers["expect"].joined(separator: ", ").lowercased() == "100-continue")
        case .end: guardHandler?.bodyArrived()
        case .body: break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if delivered > 0 {
            // The answer `deliver` wrote already: its request's own copy goes no further.
            if case .end = unwrapOutboundIn(data) { delivered -= 1 }
            promise?.succeed()
            return
        }
        switch unwrapOutboundIn(data) {
        case .head(var head):
            guardHandler?.responseStarted()
            guard unanswered.first?.closes == true else { return context.write(data, promise: promise) }
            head.headers.replaceOrAdd(name: "connection", value: "close")
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            let closeAfterAnswer = unanswered.isEmpty ? false : unanswered.removeFirst().closes
            guardHandler?.responseEnded()
            guard let written = Self.closing(context, closeAfterAnswer) else { return context.write(data, promise: promise) }
            written.futureResult.cascade(to: promise)
            context.writeAndFlush(data, promise: written)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parserError = error as? HTTPParserError, unanswered.isEmpty, !refused else {
            context.fireErrorCaught(error)
            return
        }
        refused = true
        let (status, message) = Self.answer(parserError)
        var body = context.channel.allocator.buffer(capacity: message.utf8.count + 16)
        body.writeString(#"{"error":"#)
        var quoted: [UInt8] = []
        for byte in message.utf8 {
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { quoted.append(UInt8(ascii: "\\")) }
            quoted.append(byte)
        }
        body.writeString("\"")
        body.writeBytes(quoted)
        body.writeString("\"}")
        let head = HTTPResponseHead(
            version: .http1_1, status: status,
            headers: [
                "content-type": "application/json; charset=utf-8", "content-length": String(body.readableBytes), "connection": "close",
            ])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in loopBound.value.close(promise: nil) }
    }

    static func answer(_ error: HTTPParserError) -> (HTTPResponseStatus, String) {
        switch error {
        case .headerOverflow:
            return (.requestHeaderFieldsTooLarge, "the request's head (its URL and headers) is too large: send a shorter query")
        default:
            return (.badRequest, "the request is not valid HTTP/1.1 (\(error))")
        }
    }
}
