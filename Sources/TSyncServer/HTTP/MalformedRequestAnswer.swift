import NIOCore
import NIOHTTP1

/// A request NIO's HTTP/1.1 parser refuses (a head larger than its limit, a malformed line) is
/// answered as every other error is: `{"error"}` with the reason, then the connection closed,
/// instead of the parser's bare 400 with no body (found by schemathesis: a 98 KB query string of
/// bounded parameters). Sits right after the decoder; when an answer is already under way on the
/// connection, the error goes on to NIO's own handler, which closes it.
final class MalformedRequestAnswer: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Requests read whose answer has not ended: a status can only be written when none is.
    private var unanswered = 0
    private var refused = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { unanswered += 1 }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { unanswered = max(0, unanswered - 1) }
        context.write(data, promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parserError = error as? HTTPParserError, unanswered == 0, !refused else {
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
