import Hummingbird
import NIOCore
import Synchronization

/// Per-request state: who is signed in and where the request comes from (for login throttling).
struct ServerRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// Set by `AuthMiddleware` when a valid token came with the request.
    var accountName: String?
    /// Who asks, as the table rules see it (`AccessRules`): the account, its roles and groups,
    /// and the token's scope. Set by `AuthMiddleware`.
    var caller = Caller.anonymous
    /// The account the request acted as, for its log line: set where the account becomes known
    /// (`AuthMiddleware`, a login) and read by `RequestLogMiddleware` after the answer, outside.
    let requestUser = RequestUser()
    /// The TCP peer: the client itself, or a proxy in front of the server.
    let peerAddress: String?
    /// The client as far as it can be trusted: the peer, or for a trusted proxy the address it
    /// forwarded for (set by `ClientAddressMiddleware`).
    var clientAddress: String?
    /// The peer is a `--trusted-proxy`: its `X-Forwarded-*` and `Forwarded` headers are believed.
    var fromTrustedProxy = false
    /// The connection, so that work for a client that has gone can stop (`QueryDeadline`).
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
        peerAddress = source.channel.remoteAddress?.ipAddress
        clientAddress = peerAddress
    }
}

/// The account a request acted as: a class, since the context is a value that the middleware
/// copies, and the log line must see what a route set on its copy.
final class RequestUser: Sendable {
    private let name = Mutex<String?>(nil)
    private let id = Mutex("")

    func withLock<Result: Sendable>(_ body: (inout String?) -> Result) -> Result { name.withLock { body(&$0) } }

    /// The request's `X-Request-Id`, chosen by `RequestLogMiddleware` before the route runs: a
    /// held read's answer may be written outside its request (`LiveDelivery`) and carries it too.
    var requestID: String {
        get { id.withLock { $0 } }
        set { id.withLock { $0 = newValue } }
    }
}
