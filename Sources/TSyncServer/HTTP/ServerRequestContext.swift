import Hummingbird
import NIOCore

/// Per-request state: who is signed in and where the request comes from (for login throttling).
struct ServerRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// Set by `AuthMiddleware` when a valid token came with the request.
    var accountName: String?
    let clientAddress: String?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        clientAddress = source.channel.remoteAddress?.ipAddress
    }
}
