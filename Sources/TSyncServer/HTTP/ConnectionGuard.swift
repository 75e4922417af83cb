import CoreMetrics
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOSSL
import Synchronization

/// HTTP/1.1 connections with the limits a server facing the internet needs (docs/DESIGN.md §10):
///
/// - at most `maximumConnections` open at once: one more is answered 503 and closed (under TLS,
///   the 503 goes after the handshake, encrypted, so the client can read it);
/// - a request's head must arrive within `headerTimeout` of its first byte (or of the connection
///   opening), so a client sending a byte a second cannot hold a connection;
/// - a request's body must arrive within `bodyTimeout` of its head, else 408 and the connection
///   is closed, so a body trickling a byte every few seconds cannot hold it either;
/// - a connection with no request under way is closed after `idleTimeout` (Hummingbird's own);
/// - `Expect: 100-continue` is answered `100 Continue` when the head arrives;
/// - a client that closes its side while its request is under way has gone: the connection is
///   closed, so the work for it stops (`QueryDeadline`).
struct GuardedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let inner: HTTP1Channel
    let limits: ConnectionLimits

    init(responder: @escaping HTTPChannelHandler.Responder, limits: ConnectionLimits) {
        self.limits = limits
        inner = HTTP1Channel(
            responder: responder,
            configuration: .init(idleTimeout: limits.idleTimeout))
    }

    static let receiveBuffers = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65536)

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            // First on the HTTP side: right after the TLS handler when there is one, so that its
            // 503 is encrypted like every answer (a plain 503 on a TLS connection reads to the
            // client as a server that does not speak TLS). Its timers still start with the
            // connection, so the header timeout covers the handshake too.
            let operations = channel.pipeline.syncOperations
            // A connection keeps its receive buffer while it is open, a held read for as long as
            // it waits: start at 512 bytes (a read's request head fits), not NIO's 2 KB; it grows
            // as reads fill it, as before.
            try channel.syncOptions?.setOption(ChannelOptions.recvAllocator, value: Self.receiveBuffers)
            if let tls = try? operations.handler(type: NIOSSLServerHandler.self) {
                try operations.addHandler(ConnectionGuard(limits: limits), position: .after(tls))
                try operations.addHandler(TLSPeerGone(), position: .after(tls))
            } else {
                try operations.addHandler(ConnectionGuard(limits: limits), position: .first)
            }
        }.flatMap {
            inner.setup(channel: channel, logger: logger)
        }.flatMapThrowing { value in
            // Where the HTTP version is still known (NIOHTTP1's parts, before HTTP types).
            let decoder = try channel.pipeline.syncOperations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try channel.pipeline.syncOperations.addHandler(HTTPExchange(), position: .after(decoder))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

/// The limits, and the count of open connections they share across event loops.
final class ConnectionLimits: Sendable {
    let maximumConnections: Int
    /// Connections one client address (`ClientAddress.shareKey`) may hold; trusted proxies are
    /// held to the server's limit only.
    let clientConnections: Int
    /// The last places, kept for addresses that hold no connection yet: an address that holds
    /// some is refused once fewer than this are free, so a newcomer finds room even when a few
    /// addresses have taken their whole share (docs/DESIGN.md §10.1).
    let reserved: Int
    let headerTimeout: TimeAmount
    let bodyTimeout: TimeAmount
    let idleTimeout: TimeAmount
    /// Trusted proxies, in `ClientAddress.canonical` form.
    let trustedProxies: Set<String>
    /// How long a refused connection is kept, reading and dropping what the client sends, after
    /// its 503: closing at once would make the kernel answer the client's request with a reset,
    /// which can destroy the 503 before the client reads it.
    static let refusalLinger = TimeAmount.seconds(2)
    /// After SIGTERM, how long an upload still arriving may take before it is answered 503 and its
    /// connection closed (nothing of it has been written), so it cannot hold the stop for up to
    /// the body timeout (docs/DESIGN.md §10.1).
    static let uploadGrace = TimeAmount.seconds(10)
    /// How long a connection the server closes waits for its answer to reach the socket.
    static let flushGrace = TimeAmount.seconds(5)
    private let open = Mutex(0)
    private let shares = ClientShares()
    /// Called once, when the server begins to stop (the first connection told to quiesce).
    private let onStop: @Sendable () -> Void
    private let stopped = Atomic(false)
    /// `tsync_open_connections`, set as the count moves, and the refusals counted.
    private let metrics: ServerMetrics?

    init(
        maximumConnections: Int, clientConnections: Int? = nil, headerTimeout: TimeAmount, bodyTimeout: TimeAmount = .seconds(60),
        idleTimeout: TimeAmount, trustedProxies: Set<String> = [], metrics: ServerMetrics? = nil,
        onStop: @escaping @Sendable () -> Void = {}
    ) {
        self.metrics = metrics
        self.onStop = onStop
        self.maximumConnections = maximumConnections
        self.clientConnections = clientConnections ?? maximumConnections
        self.reserved = maximumConnections / 8
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.idleTimeout = idleTimeout
        self.trustedProxies = trustedProxies
    }

    /// Why a connection was not taken.
    enum Refusal: Error {
        /// The server holds its limit (or only the places kept for newcomers are left): 503.
        case full
        /// The client's address holds its share: 429.
        case clientShare
    }

    /// Takes a place for a new connection from `peer`; returns the key to give back, or why not.
    func acquire(peer: String?) -> Result<String?, Refusal> {
        let key = peer.flatMap { trustedProxies.contains(ClientAddress.canonical($0) ?? $0) ? nil : ClientAddress.shareKey($0) }
        let result = open.withLock { count -> Result<String?, Refusal> in
            guard count < maximumConnections else { return .failure(.full) }
            if let key {
                let holding = shares.count(key)
                guard holding < clientConnections else { return .failure(.clientShare) }
                guard holding == 0 || count < maximumConnections - reserved else { return .failure(.full) }
                _ = shares.take(key, limit: clientConnections)
            }
            count += 1
            metrics?.openConnections.set(count)
            return .success(key)
        }
        if case .failure(let refusal) = result {
            metrics?.recordShareRefusal(refusal == .full ? .connections : .clientConnections)
        }
        return result
    }

    func release(_ key: String?) {
        open.withLock { count in
            count -= 1
            metrics?.openConnections.set(count)
            if let key { shares.give(key) }
        }
    }

    var openConnections: Int { open.withLock { $0 } }

    /// The server begins to stop (Hummingbird tells every open connection to quiesce).
    func stopping() {
        if !stopped.exchange(true, ordering: .relaxed) { onStop() }
    }
}

/// First in the pipeline on the bytes of HTTP (after TLS, if any): counts the connection, and
/// closes it when a request head takes longer than the header timeout. `HTTPExchange`, after the HTTP decoder, tells it
/// when a head has arrived and when a response has ended.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private let limits: ConnectionLimits
    private var counted = false
    /// The share key the connection counts under (nil: a trusted proxy's, or no address).
    private var shareKey: String?
    /// Refused (over the connection limit): answered 503, input read and dropped until it closes.
    private var refused = false
    /// Waiting for the head of the next request (true between a response and the next head).
    private var awaitingHead = true
    /// A request's head has arrived and its end not yet.
    private var awaitingBody = false
    /// The response to the current request has begun (its head was written).
    private var responding = false
    /// When the head awaited must have arrived: timed from its first byte (or the connection's start).
    private var headDue: NIODeadline?
    /// When the body under way must have arrived.
    private var bodyDue: NIODeadline?
    /// One timer for both, due at the earliest of them or before it. It moves only when it fires
    /// early, not with each request: a scheduled task made and cancelled for the head and again
    /// for the body of every request was 3.6% of the server's CPU following a table (docs/
    /// PERFORMANCE.md), where a watcher asks again after every page.
    private var timer: (due: NIODeadline, task: Scheduled<Void>)?
    /// Armed while the socket takes nothing more of an answer: a client that stops reading it
    /// for the idle timeout is gone, and the answer queued for it is dropped with the connection.
    private var writeDeadline: Scheduled<Void>?
    private var context: ChannelHandlerContext?
    /// A close from the server's side, done once the writes before it are on the socket (or at
    /// `flushGrace`).
    private var deferredClose: (mode: CloseMode, promise: EventLoopPromise<Void>?)?
    private var uploadCutoff: Scheduled<Void>?
    /// Waiting for the connection to take more (`whenWritable`).
    private var writableWaiters: [EventLoopPromise<Void>] = []

    init(limits: ConnectionLimits) {
        self.limits = limits
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { admit(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        admit(context)
        context.fireChannelActive()
    }

    private func admit(_ context: ChannelHandlerContext) {
        guard !counted, !refused else { return }
        switch limits.acquire(peer: context.channel.remoteAddress?.ipAddress) {
        case .success(let key):
            shareKey = key
            counted = true
            arm(context)
        case .failure(let refusal):
            let (status, message) =
                refusal == .full
                ? ("503 Service Unavailable", "the server has too many open connections; try again later")
                : (
                    "429 Too Many Requests",
                    "this address has \(limits.clientConnections) connections open, as many as the server gives one client; close some or try again later"
                )
            let body = #"{"error":"\#(message)"}"#
            let answer =
                "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nRetry-After: 1\r\nConnection: close\r\n\r\n\(body)"
            refused = true
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(.byteBuffer(ByteBuffer(string: answer)))).whenComplete { _ in
                loopBound.value.close(mode: .output, promise: nil)
            }
            context.eventLoop.scheduleTask(in: ConnectionLimits.refusalLinger) { loopBound.value.close(promise: nil) }
        }
    }

    /// Succeeds once the connection takes more (at once when it does now, or when it closes):
    /// what a writer waits for between slices of an answer, on the event loop, after the writes
    /// it has handed on (`ResponseShareMiddleware`).
    func whenWritable(_ eventLoop: any EventLoop) -> EventLoopFuture<Void> {
        guard let context, context.channel.isActive, !context.channel.isWritable else { return eventLoop.makeSucceededVoidFuture() }
        let promise = eventLoop.makePromise(of: Void.self)
        writableWaiters.append(promise)
        return promise.futureResult
    }

    private func wakeWriters() {
        let waiters = writableWaiters
        writableWaiters = []
        for waiter in waiters { waiter.succeed() }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            wakeWriters()
            writeDeadline?.cancel()
            writeDeadline = nil
        } else if writeDeadline == nil {
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            writeDeadline = context.eventLoop.scheduleTask(in: limits.idleTimeout) { loopBound.value.close(promise: nil) }
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        writeDeadline?.cancel()
        writeDeadline = nil
        uploadCutoff?.cancel()
        uploadCutoff = nil
        wakeWriters()
        timer?.task.cancel()
        timer = nil
        headDue = nil
        bodyDue = nil
        if counted {
            counted = false
            limits.release(shareKey)
        }
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if refused { return }
        if awaitingHead, headDue == nil { arm(context) }
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed, refused || !awaitingHead {
            // Refused and done sending; or gone while its request is under way (an HTTP/1.1
            // client does not half-close and then wait for its answer).
            context.close(promise: nil)
            return
        }
        if event is ChannelShouldQuiesceEvent { limits.stopping() }
        if event is ChannelShouldQuiesceEvent, counted, awaitingBody, !responding {
            // Stopping while an upload arrives: it gets a while to finish, then 503 (and close).
            let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
            uploadCutoff = context.eventLoop.scheduleTask(in: ConnectionLimits.uploadGrace) {
                loopBound.value.answerAndClose(
                    "503 Service Unavailable", "the server is stopping and the request body did not arrive in time; send it again",
                    retry: true)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// A close from the server's side (Hummingbird closes a connection when it stops, or after
    /// `Connection: close`) would drop what is not on the socket yet: the rest of an answer whose
    /// transaction has committed. It waits for those writes, at most `flushGrace`; a second close
    /// goes at once. The socket takes writes in order, so an empty write after them is on it
    /// when they are: one promise for the close, not one for every write of every answer (two or
    /// three an answer, each with its callback, for each of the reads one commit wakes).
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard mode == .all, deferredClose == nil, context.channel.isActive else {
            context.close(mode: mode, promise: promise)
            return
        }
        deferredClose = (mode, promise)
        let written = context.eventLoop.makePromise(of: Void.self)
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        written.futureResult.whenComplete { _ in loopBound.value.closeDeferred() }
        context.writeAndFlush(wrapOutboundOut(.byteBuffer(ByteBuffer())), promise: written)
        context.eventLoop.scheduleTask(in: ConnectionLimits.flushGrace) { loopBound.value.closeDeferred() }
    }

    private func closeDeferred() {
        guard let context, let (mode, promise) = deferredClose else { return }
        deferredClose = nil
        context.close(mode: mode, promise: promise)
    }

    /// The decoder delivered a request head: its time limit no longer applies, the body's starts.
    /// `Expect: 100-continue` is answered here, before the route reads the body.
    func headArrived(expectsContinue: Bool) {
        awaitingHead = false
        awaitingBody = true
        responding = false
        headDue = nil
        guard let context, counted else { return }
        if expectsContinue {
            context.writeAndFlush(wrapOutboundOut(.byteBuffer(ByteBuffer(string: "HTTP/1.1 100 Continue\r\n\r\n"))), promise: nil)
        }
        let due = NIODeadline.now() + limits.bodyTimeout
        bodyDue = due
        schedule(due, context)
    }

    /// The request's body has all arrived.
    func bodyArrived() {
        awaitingBody = false
        bodyDue = nil
        uploadCutoff?.cancel()
        uploadCutoff = nil
    }

    func responseStarted() {
        responding = true
    }

    /// A request's whole head and body have arrived, and no answer to it has begun.
    var awaitsAnswer: Bool { counted && !refused && !awaitingHead && !awaitingBody && !responding && context != nil }

    /// Writes an answer's bytes, made above (`HTTPExchange.deliver`), and flushes them: one
    /// `writev`; `promise` is done when they are on the socket.
    func write(_ head: ByteBuffer, _ body: ByteBuffer, promise: EventLoopPromise<Void>?) {
        guard let context else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        context.write(wrapOutboundOut(.byteBuffer(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.byteBuffer(body)), promise: promise)
    }

    /// Writes bytes made above (a streamed answer's line, `HTTPExchange.streamLine`) and flushes them.
    func write(_ bytes: ByteBuffer, promise: EventLoopPromise<Void>?) {
        guard let context else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        context.writeAndFlush(wrapOutboundOut(.byteBuffer(bytes)), promise: promise)
    }

    /// A response ended: the next request's head is timed from its first byte.
    func responseEnded() {
        awaitingHead = true
        responding = false
    }

    /// The timer is due: a head that did not arrive in time closes the connection; a body that
    /// did not is answered 408 when no answer has begun, then the connection closes. Otherwise
    /// the timer is set again for what is still awaited.
    private func timerFired() {
        timer = nil
        guard let context else { return }
        let now = NIODeadline.now()
        if let due = headDue, due <= now {
            headDue = nil
            context.close(promise: nil)
        }
        if let due = bodyDue, due <= now {
            bodyDue = nil
            answerAndClose("408 Request Timeout", "the request body did not arrive in time", retry: false)
        }
        if let due = [headDue, bodyDue].compactMap({ $0 }).min() { schedule(due, context) }
    }

    /// Makes the timer due at `due` at the latest.
    private func schedule(_ due: NIODeadline, _ context: ChannelHandlerContext) {
        if let timer, timer.due <= due { return }
        timer?.task.cancel()
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        timer = (due, context.eventLoop.scheduleTask(deadline: due) { loopBound.value.timerFired() })
    }

    /// While the body is awaited: answers `status` (when no answer has begun) and closes.
    fileprivate func answerAndClose(_ status: String, _ message: String, retry: Bool) {
        guard let context, awaitingBody else { return }
        guard !responding else {
            context.close(promise: nil)
            return
        }
        responding = true
        let body = #"{"error":"\#(message)"}"#
        let answer =
            "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
            + (retry ? "Retry-After: 1\r\n" : "") + "Connection: close\r\n\r\n\(body)"
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.byteBuffer(ByteBuffer(string: answer)))).whenComplete { _ in
            loopBound.value.close(promise: nil)
        }
    }

    private func arm(_ context: ChannelHandlerContext) {
        guard counted, headDue == nil else { return }
        let due = NIODeadline.now() + limits.headerTimeout
        headDue = due
        schedule(due, context)
    }
}
