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
        // With no trusted proxy (most servers) the peer's address is not parsed to be looked up.
        context.fromTrustedProxy =
            !trusted.isEmpty && context.peerAddress.map { trusted.contains(ClientAddress.canonical($0) ?? $0) } ?? false
        context.clientAddress = ClientAddress.resolve(
            peer: context.peerAddress, forwardedFor: request.headers[values: .forwardedFor], trusted: trusted)
        return context
    }
}
