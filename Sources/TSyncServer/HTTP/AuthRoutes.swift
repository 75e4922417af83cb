import Hummingbird
import TSyncModel

/// `POST /.auth/login/custom`, `POST /.auth/logout` and `GET /.auth/me` (docs/DESIGN.md §4).
struct AuthRoutes: Sendable {
    let authenticator: Authenticator
    let configuration: ServerConfiguration
    var metrics: ServerMetrics? = nil

    func register(on group: RouterGroup<ServerRequestContext>) {
        group.on(ServedRoutes.login, use: login)
        group.on(ServedRoutes.logout, use: logout)
        group.on(ServedRoutes.me, use: me)
    }

    /// Whose the presented token is (`tsync whoami`, a tsync extension): `{"user": {"userId",
    /// "roles", "groups", "token": {"readOnly", "tables"}}}` ("tables" null for every table); a
    /// missing or invalid token is 401, except on a server without accounts, which answers
    /// `{"user": null}` (anyone may use it).
    @Sendable func me(_ request: Request, context: ServerRequestContext) async throws -> Response {
        if let token = AuthMiddleware.token(in: request), let caller = try await authenticator.caller(forToken: token),
            let name = caller.account
        {
            let scope = caller.token ?? TokenScope()
            return JSONResponse.make(
                .ok,
                [
                    "user": [
                        "userId": .string(name), "roles": .array(caller.roles.sorted().map(JSONValue.string)),
                        "groups": .array(caller.groups.sorted().map(JSONValue.string)),
                        "token": [
                            "readOnly": .bool(scope.readOnly),
                            "tables": scope.tables.map { .array($0.sorted().map(JSONValue.string)) } ?? .null,
                        ],
                    ]
                ])
        }
        guard configuration.requiresAuthentication else { return JSONResponse.make(.ok, ["user": .null]) }
        throw APIError.unauthorized
    }

    @Sendable func login(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let body = try await request.jsonObject(limit: configuration.maximumBodyBytes)
        guard case .string(let username)? = body["username"], case .string(let password)? = body["password"] else {
            throw APIError.badRequest("send {\"username\": \"…\", \"password\": \"…\"}, both strings")
        }
        // As the log shows it: bounded, and a token sent as a name (by mistake) redacted.
        let shown = LogText.bounded(QueryRedaction.redactingTokens(username))
        // A tsync extension (docs/DESIGN.md §11): the device token of an earlier login, if any.
        let deviceToken = body["deviceToken"]?.stringValue
        switch try await authenticator.login(
            username: username, password: password, clientAddress: context.clientAddress, deviceToken: deviceToken)
        {
        case .success(let token, let accountName, let device):
            context.requestUser.withLock { $0 = accountName }
            return JSONResponse.make(
                .ok, ["authenticationToken": .string(token), "user": ["userId": .string(accountName)], "deviceToken": .string(device)])
        case .invalidCredentials:
            metrics?.recordLoginFailure()
            context.logger.warning(
                "failed login for \"\(shown)\" from \(context.clientAddress ?? "-")",
                metadata: [
                    "user": .string(shown), "client": .string(context.clientAddress ?? "-"), LogFields.inMessage: "1",
                ])
            throw APIError(.unauthorized, "wrong user name or password")
        case .throttled(let seconds):
            metrics?.recordLoginThrottled()
            context.logger.warning(
                "login throttled for \"\(shown)\" from \(context.clientAddress ?? "-"): too many failures, retry in \(seconds) s",
                metadata: [
                    "user": .string(shown), "client": .string(context.clientAddress ?? "-"), LogFields.inMessage: "1",
                ])
            var error = APIError(
                .tooManyRequests,
                "too many failed logins: try again in \(Duration.seconds(seconds).spoken), or ask the server's operator to unlock the account (tsync user unlock NAME)"
            )
            error.headers[.retryAfter] = String(seconds)
            throw error
        }
    }

    /// Revokes the presented token; a missing or already invalid token is 401.
    @Sendable func logout(_ request: Request, context: ServerRequestContext) async throws -> Response {
        guard let token = AuthMiddleware.token(in: request), try await authenticator.accountName(forToken: token) != nil else {
            throw APIError.unauthorized
        }
        try await authenticator.logout(token: token)
        return JSONResponse.make(.ok, [:])
    }
}
