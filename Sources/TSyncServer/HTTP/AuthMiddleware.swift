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
        guard required else { return try await next(request, context) }
        guard let token = Self.token(in: request) else {
            if admitsAnonymous { return try await next(request, context) }
            throw APIError.unauthorized
        }
        return try await signedIn(token, request, context, next: next)
    }

    /// The request passed on as the caller the token names. A function of its own: its frame
    /// (the context with the caller, the lookup) is not kept by the requests that carry no
    /// token, held reads among them.
    @inline(never)
    private func signedIn(
        _ token: String, _ request: Request, _ context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let caller = try await authenticator.caller(forToken: token)
        return try await next(request, Self.signedIn(context, caller))
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
        if let token = request.headers[.zumoAuth]?.trimmingSpaces(), !token.isEmpty { return token }
        if let authorization = request.headers[.authorization] {
            let parts = authorization.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "bearer" {
                let token = parts[1].trimmingSpaces()
                return token.isEmpty ? nil : token
            }
        }
        return nil
    }
}
