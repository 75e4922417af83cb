import Hummingbird

/// Sets `ServerRequestContext.clientAddress` from the peer and, for trusted proxies, from
/// `X-Forwarded-For` (see `ClientAddress`). Runs first, so the request log shows the same address
/// that login throttling counts.
struct ClientAddressMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    /// In `ClientAddress.canonical` form; configuration validation has refused anything unreadable.
    let trusted: Set<String>

    init(trustedProxies: Set<String>) {
        trusted = Set(trustedProxies.compactMap { ClientAddress.canonical($0) })
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try await next(request, addressed(request, context))
    }

    /// The context with the client's address. Not async, so that its locals stay out of the
    /// async frame every request in flight keeps.
    @inline(never)
    private func addressed(_ request: Request, _ context: Context) -> Context {
        var context = context
        // Looked up once: the client's address comes from the proxy's header only then.
        guard let peer = context.peerAddress, ClientAddress.isTrustedProxy(peer, trusted: trusted) else { return context }
        context.fromTrustedProxy = true
        context.clientAddress = ClientAddress.forwarded(by: peer, request.headers[values: .forwardedFor], trusted: trusted)
        return context
    }
}
