import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes

/// HTTP/1.1 connections with the limits a server facing the internet needs (issue 9.4):
///
/// - at most `maximumConnections` open at once: one more is answered 503 and closed at once;
/// - a request's head must arrive within `headerTimeout` of its first byte (or of the connection
///   opening), so a client sending a byte a second cannot hold a connection;
/// - a connection with no request under way is closed after `idleTimeout` (Hummingbird's own).
struct GuardedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let inner: HTTP1Channel
    let limits: ConnectionLimits

    init(responder: @escaping HTTPChannelHandler.Responder, limits: ConnectionLimits) {
        self.limits = limits
        inner = HTTP1Channel(
            responder: responder,
            configuration: .init(additionalChannelHandlers: [RequestHeadSignal()], idleTimeout: limits.idleTimeout))
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(ConnectionGuard(limits: limits), position: .first)
        }.flatMap {
            inner.setup(channel: channel, logger: logger)
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

/// The limits, and the count of open connections they share across event loops.
final class ConnectionLimits: Sendable {
    let maximumConnections: Int
    let headerTimeout: TimeAmount
    let idleTimeout: TimeAmount
    private let open = LockedValue(0)

    init(maximumConnections: Int, headerTimeout: TimeAmount, idleTimeout: TimeAmount) {
        self.maximumConnections = maximumConnections
        self.headerTimeout = headerTimeout
        self.idleTimeout = idleTimeout
    }

    /// Takes a place for a new connection; false when the server is full.
    func acquire() -> Bool {
        open.withLock { count in
            guard count < maximumConnections else { return false }
            count += 1
            return true
        }
    }

    func release() { open.withLock { $0 -= 1 } }

    var openConnections: Int { open.withLock { $0 } }
}

/// First in the pipeline, on raw bytes: counts the connection, and closes it when a request head
/// takes longer than the header timeout. `RequestHeadSignal`, after the HTTP decoder, tells it
/// when a head has arrived and when a response has ended.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private let limits: ConnectionLimits
    private var counted = false
    /// Waiting for the head of the next request (true between a response and the next head).
    private var awaitingHead = true
    private var deadline: Scheduled<Void>?

    init(limits: ConnectionLimits) {
        self.limits = limits
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { admit(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        admit(context)
        context.fireChannelActive()
    }

    private func admit(_ context: ChannelHandlerContext) {
        guard !counted else { return }
        guard limits.acquire() else {
            let body = #"{"error":"the server has too many open connections; try again later"}"#
            let answer =
                "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nRetry-After: 1\r\nConnection: close\r\n\r\n\(body)"
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(.byteBuffer(ByteBuffer(string: answer)))).whenComplete { _ in
                loopBound.value.close(promise: nil)
            }
            return
        }
        counted = true
        arm(context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        if counted {
            counted = false
            limits.release()
        }
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if awaitingHead, deadline == nil { arm(context) }
        context.fireChannelRead(data)
    }

    /// The decoder delivered a request head: its time limit no longer applies.
    func headArrived() {
        awaitingHead = false
        deadline?.cancel()
        deadline = nil
    }

    /// A response ended: the next request's head is timed from its first byte.
    func responseEnded() {
        awaitingHead = true
    }

    private func arm(_ context: ChannelHandlerContext) {
        guard counted, deadline == nil else { return }
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        deadline = context.eventLoop.scheduleTask(in: limits.headerTimeout) {
            loopBound.value.close(promise: nil)
        }
    }
}

/// After the HTTP decoder: tells `ConnectionGuard` when a request head arrives and when the
/// response to it has been written.
final class RequestHeadSignal: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var guardHandler: ConnectionGuard?

    func handlerAdded(context: ChannelHandlerContext) {
        guardHandler = try? context.pipeline.syncOperations.handler(type: ConnectionGuard.self)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { guardHandler?.headArrived() }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { guardHandler?.responseEnded() }
        context.write(data, promise: promise)
    }
}
