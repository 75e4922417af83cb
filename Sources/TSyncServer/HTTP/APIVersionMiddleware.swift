import Hummingbird

/// `ZUMO-API-VERSION` (header, or query parameter as older clients send it): absent means 2.0.0;
/// any major version other than 2 is refused with 400 (docs/DESIGN.md §4).
struct APIVersionMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try Self.check(request)
        return try await next(request, context)
    }

    /// Not async, so that its locals stay out of the async frame every request in flight keeps.
    @inline(never)
    private static func check(_ request: Request) throws {
        let value = try request.headers.value(of: .zumoAPIVersion) ?? QueryString(request.uri.query).value(for: "ZUMO-API-VERSION")
        if let value {
            let major = value.trimmingSpaces().split(separator: ".", maxSplits: 1).first.flatMap { Int($0) }
            guard major == 2 else {
                throw APIError.badRequest("unsupported ZUMO-API-VERSION \(value.prefix(40)): this server speaks 2.0.0")
            }
        }
    }
}
