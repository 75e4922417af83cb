import Hummingbird

/// Resolves the token of a request (`X-ZUMO-AUTH: <token>` or `Authorization: Bearer <token>`) to
/// an account. With authentication required, a missing, unknown, revoked or expired token is 401.
struct AuthMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let authenticator: Authenticator
    let required: Bool
    /// Some table rule is `anyone`: a request without a token goes on, anonymous, and the rules
    /// decide (a request with a token that is not valid is still 401).
    var admitsAnonymous = false

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // One call of `next`, after the caller is known: the lookup's frame is gone by then, and
        // the frames under `next` (a held read's, for as long as it waits) take its place.
        try await next(request, authenticated(request, context))
    }

    /// The context of the request's caller: as it is without a token where that is allowed.
    @inline(never)
    private func authenticated(_ request: Request, _ context: Context) async throws -> Context {
        guard required else { return context }
        guard let token = Self.token(in: request) else {
            if admitsAnonymous { return context }
            throw APIError.unauthorized
        }
        return try Self.signedIn(context, try await authenticator.caller(forToken: token))
    }

    /// The context of the caller the token names; 401 when it names none. Not async, so that
    /// its locals stay out of the async frame every request in flight keeps.
    @inline(never)
    private static func signedIn(_ context: Context, _ caller: Caller?) throws -> Context {
        guard let caller, let name = caller.account else { throw APIError.unauthorized }
        var context = context
        context.accountName = name
        context.caller = caller
        context.requestUser.withLock { $0 = name }
        return context
    }

    static func token(in request: Request) -> String? {
        if let token = request.headers.value(of: .zumoAuth)?.trimmingSpaces(), !token.isEmpty { return token }
        if let authorization = request.headers.value(of: .authorization) {
            let parts = authorization.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "bearer" {
                let token = parts[1].trimmingSpaces()
                return token.isEmpty ? nil : token
            }
        }
        return nil
    }
}
