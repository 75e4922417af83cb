import HTTPTypes
import Hummingbird
import TSyncModel

/// One route of `tsync serve`: the method and path it answers, and what `/openapi.json` says of
/// it (docs/DESIGN.md §4). The routes register through these (`RouterGroup.on(_:use:)`), and the
/// OpenAPI document is made from the same values (`OpenAPIDocument`), so a route cannot be
/// served without being described, nor described as other than it is served.
struct RouteDeclaration: Sendable {
    /// What a route's request body is.
    enum Body: Sendable, Equatable {
        /// A record's fields (`POST /tables/{table}`, `PATCH /tables/{table}/{id}`).
        case record
        /// `POST /tables/$batch`'s operations.
        case batch
        /// `POST /.auth/login/custom`'s name and password.
        case login
    }

    /// What a route's success answers with.
    enum Answer: Sendable {
        case record
        case page
        case object(description: String)
        case text(description: String)
        case empty
    }

    var method: HTTPRequest.Method
    /// The group the route is in (`/tables`, `/.auth`, or nothing for the root).
    var group: String
    /// The path within the group, in Hummingbird's form (`:table/:id`).
    var path: String
    var summary: String
    /// The query parameters it reads beyond the path's.
    var query: [QueryParameter] = []
    var body: Body? = nil
    var success: (status: Int, answer: Answer)
    /// Whether `tsync serve` asks for a token (`X-ZUMO-AUTH`) on it when accounts are on.
    var authenticated = true

    /// The OpenAPI path: `/tables/{table}/{id}`.
    var openAPIPath: String {
        let segments = path.split(separator: "/").map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }
        return "/" + (group.split(separator: "/").map(String.init) + segments).joined(separator: "/")
    }

    /// Whether `segments` (a request path's, split at `/`) is this route's path.
    func matches(_ segments: [Substring]) -> Bool {
        let pattern = openAPIPath.split(separator: "/")
        guard pattern.count == segments.count else { return false }
        return zip(pattern, segments).allSatisfy { $0.hasPrefix("{") || $0 == $1 }
    }

    /// The path parameters, in order.
    var pathParameters: [String] {
        path.split(separator: "/").filter { $0.hasPrefix(":") }.map { String($0.dropFirst()) }
    }

    /// Whether it writes records: it runs ahead of the reads (`RouterMethods.on(_:use:)`).
    var writesRecords: Bool { group == "/tables" && method != .get }
}

/// A query parameter a route reads, with the bound the server enforces.
struct QueryParameter: Sendable {
    enum Kind: Sendable {
        case string(maxLength: Int?)
        case integer(minimum: Int, maximum: Int?)
        case boolean
        case choice([String])
        case time
    }

    var name: String
    var kind: Kind
    var description: String
    var required = false

    /// The parameters of a page read (`ListOptions`), bounded as `configuration` bounds them.
    static func pageRead(_ configuration: ServerConfiguration) -> [QueryParameter] {
        [
            QueryParameter(
                name: "$filter", kind: .string(maxLength: configuration.maximumFilterLength),
                description: "OData filter over the records' fields (docs/FILTERS.md)."),
            QueryParameter(
                name: "$orderby", kind: .string(maxLength: configuration.maximumFilterLength),
                description: "Fields to sort by, each optionally `desc`; at most \(configuration.maximumOrderByFields) fields."),
            QueryParameter(
                name: "$top", kind: .integer(minimum: 0, maximum: configuration.maximumPageSize),
                description: "Records per page (default \(configuration.defaultPageSize))."),
            QueryParameter(name: "$skip", kind: .integer(minimum: 0, maximum: nil), description: "Records to skip."),
            QueryParameter(
                name: "$select", kind: .string(maxLength: configuration.maximumFilterLength),
                description: "Comma-separated fields to return (system properties always come)."),
            QueryParameter(
                name: "$inlinecount", kind: .choice(["allpages", "none"]),
                description: "`allpages`: answer `{\"count\", \"results\"}` with the count over all pages."),
            QueryParameter(name: "__includeDeleted", kind: .boolean, description: "Include soft-deleted records."),
        ]
    }
}

extension RouterMethods where Context == ServerRequestContext {
    /// Serves `route` with `handler` (on the router or one of its groups). A route that writes
    /// records runs ahead of the reads (`aheadOfReads`).
    @discardableResult
    func on(
        _ route: RouteDeclaration, use handler: @escaping @Sendable (Request, Context) async throws -> Response
    ) -> Self {
        on(RouterPath(stringLiteral: route.path), method: route.method, use: route.writesRecords ? aheadOfReads(handler) : handler)
    }
}

/// `handler` run at high priority (docs/DESIGN.md §8.1): the watchers of a table each ask again
/// as soon as they are answered, so under a thousand of them the cooperative pool's queue is never
/// empty, and a write whose every step queued behind their jobs ran at 110–220 a second, which
/// every watcher then waited for (docs/PERFORMANCE.md, "Fan-out"). Swift's executor on Linux runs
/// each priority on threads of its own, so a write no longer waits behind the reads' queue; the
/// kernel still shares the cores between both, and writes stay bounded by the clients' shares
/// (§10.1).
func aheadOfReads(
    _ handler: @escaping @Sendable (Request, ServerRequestContext) async throws -> Response
) -> @Sendable (Request, ServerRequestContext) async throws -> Response {
    { request, context in try await aheadOfReads { try await handler(request, context) } }
}

/// `work` in a task of high priority, cancelled with the task that waits for it. A task of its
/// own, not a child in a task group: measured so, the child did not get ahead (the same writer
/// reached 111–257 writes a second among a thousand watchers, against 437–680 this way).
func aheadOfReads<Value: Sendable>(_ work: @escaping @Sendable () async throws -> Value) async throws -> Value {
    let task = Task(priority: .high, operation: work)
    return try await withTaskCancellationHandler {
        try await task.value
    } onCancel: {
        task.cancel()
    }
}
