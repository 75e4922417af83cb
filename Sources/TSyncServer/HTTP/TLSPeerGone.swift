import NIOCore
import NIOSSL

/// Closes a TLS connection at once when the server closes it and the peer's side has already
/// ended, instead of waiting out the TLS handler's 5 s for a close_notify that cannot come.
///
/// The server closes a connection after a `Connection: close` answer (HTTP/1.0, or a client that
/// asks), on its idle timeout, and on a stop; swift-nio-ssl then sends its close_notify and waits
/// for the peer's until its `shutdownTimeout`. A peer whose TCP side has ended (curl after an
/// HTTP/1.0 answer, a balancer that went away) sends nothing more: the socket stayed open 5 s, and
/// a stop (SIGTERM) waited for it. What the answer wrote still reaches the socket first: the
/// socket is closed once every write queued before the close has been written to it.
final class TLSPeerGone: ChannelDuplexHandler {
    typealias InboundIn = NIOAny
    typealias OutboundIn = NIOAny

    /// The peer's TCP side ended (seen after the TLS handler, which passes the event on).
    private var inputClosed = false
    /// The server began to close the connection.
    private var closing = false
    private var closed = false

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            inputClosed = true
            if closing { closeSocket(context: context) }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        // The TLS handler first: it writes its close_notify (and begins its wait).
        context.close(mode: mode, promise: promise)
        guard mode == .all else { return }
        closing = true
        if inputClosed { closeSocket(context: context) }
    }

    /// Closes the socket below the TLS handler once what is queued (the answer, the close_notify)
    /// has been written to it; the TLS handler's own timeout still bounds a peer that reads nothing.
    private func closeSocket(context: ChannelHandlerContext) {
        guard !closed, let tls = try? context.pipeline.syncOperations.context(handlerType: NIOSSLServerHandler.self) else { return }
        closed = true
        let written = context.eventLoop.makePromise(of: Void.self)
        tls.writeAndFlush(NIOAny(ByteBuffer()), promise: written)
        written.futureResult.assumeIsolated().whenComplete { _ in tls.close(mode: .all, promise: nil) }
    }
}
