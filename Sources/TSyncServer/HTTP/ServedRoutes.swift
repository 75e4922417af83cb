import HTTPTypes

/// Every route `tsync serve` answers, declared once: the route files register these, and
/// `/openapi.json` describes them (`OpenAPIDocument`).
enum ServedRoutes {
    // MARK: Root

    static let health = RouteDeclaration(
        method: .get, group: "", path: "health", summary: "Liveness: the process answers.",
        success: (200, .object(description: #"{"status": "ok"}"#)), authenticated: false)
    static let ready = RouteDeclaration(
        method: .get, group: "", path: "ready", summary: "Readiness: the database answers a trivial read in time (503 otherwise).",
        success: (200, .object(description: #"{"status": "ready"}"#)), authenticated: false)
    static let metrics = RouteDeclaration(
        method: .get, group: "", path: "metrics", summary: "Prometheus metrics (--metrics).",
        success: (200, .text(description: "Prometheus text exposition format")), authenticated: false)
    static let openAPI = RouteDeclaration(
        method: .get, group: "", path: "openapi.json", summary: "This description of the server's API (OpenAPI 3.1).",
        success: (200, .object(description: "an OpenAPI 3.1 document")), authenticated: false)

    // MARK: Accounts

    static let login = RouteDeclaration(
        method: .post, group: "/.auth", path: "login/custom", summary: "Log in: a token for X-ZUMO-AUTH.", body: .login,
        success: (200, .object(description: #"{"authenticationToken", "user": {"userId"}}"#)), authenticated: false)
    static let logout = RouteDeclaration(
        method: .post, group: "/.auth", path: "logout", summary: "Revoke the token sent.",
        success: (200, .object(description: "{}")), authenticated: false)
    static let me = RouteDeclaration(
        method: .get, group: "/.auth", path: "me", summary: "The account the token sent belongs to (null without accounts).",
        success: (200, .object(description: #"{"user": {"userId"} or null}"#)), authenticated: false)

    // MARK: Tables

    static func list(_ configuration: ServerConfiguration) -> RouteDeclaration {
        RouteDeclaration(
            method: .get, group: "/tables", path: ":table",
            summary: "A page of the table's records (Link: next page; Prefer: wait=N holds an empty page until a commit).",
            query: QueryParameter.pageRead(configuration), success: (200, .page))
    }
    static let insert = RouteDeclaration(
        method: .post, group: "/tables", path: ":table", summary: "Insert a record (201; 409 with the stored one when the id is taken).",
        body: .record, success: (201, .record))
    static let read = RouteDeclaration(
        method: .get, group: "/tables", path: ":table/:id", summary: "One record.", success: (200, .record))
    static let update = RouteDeclaration(
        method: .patch, group: "/tables", path: ":table/:id", summary: "Merge fields into a record (If-Match: 412 when stale).",
        body: .record, success: (200, .record))
    static let delete = RouteDeclaration(
        method: .delete, group: "/tables", path: ":table/:id", summary: "Soft-delete a record (If-Match: 412 when stale).",
        success: (200, .record))
    static let undelete = RouteDeclaration(
        method: .post, group: "/tables", path: ":table/:id", summary: "Undelete a soft-deleted record.", success: (200, .record))

    // MARK: Extensions

    static let batchDescription = RouteDeclaration(
        method: .get, group: "/tables", path: "$batch", summary: "The batch route's limits.",
        success: (200, .object(description: #"{"maxOperations", "maxBytes", "maxItemBytes", "atomic"}"#)))
    static let batch = RouteDeclaration(
        method: .post, group: "/tables", path: "$batch", summary: "Apply writes in order in one transaction (atomic: all or none).",
        body: .batch, success: (200, .object(description: #"{"results": [{"index", "id", "status", "item" or "error"}]}"#)))
    static let historyDescription = RouteDeclaration(
        method: .get, group: "/tables", path: "$history", summary: "How long versions and deleted records are kept.",
        success: (200, .object(description: #"{"keepSeconds", "keepDeletedSeconds"}"#)))
    static func tableAt(_ configuration: ServerConfiguration) -> RouteDeclaration {
        RouteDeclaration(
            method: .get, group: "/tables", path: "$history/:table", summary: "The table as it was at a time.",
            query: [QueryParameter(name: "at", kind: .time, description: "ISO 8601 time.", required: true)]
                + QueryParameter.pageRead(configuration),
            success: (200, .page))
    }
    static let versions = RouteDeclaration(
        method: .get, group: "/tables", path: "$history/:table/:id", summary: "A record's versions, newest first.",
        query: [
            QueryParameter(name: "$top", kind: .integer(minimum: 0, maximum: nil), description: "Versions per page."),
            QueryParameter(name: "$skip", kind: .integer(minimum: 0, maximum: nil), description: "Versions to skip."),
        ],
        success: (200, .object(description: #"{"results": [{"version", "updatedAt", "user", "operation", "item"}]}"#)))
    static let schema = RouteDeclaration(
        method: .get, group: "/tables", path: "$schema/:table", summary: "The table's JSON Schema (404 without one).",
        success: (200, .object(description: #"{"table", "tag", "schema"}"#)))

    /// The routes a server with `configuration` answers.
    static func all(_ configuration: ServerConfiguration) -> [RouteDeclaration] {
        var routes = [health, ready, openAPI]
        if configuration.exposesMetrics { routes.append(metrics) }
        routes += [login, logout, me]
        if configuration.maximumBatchOperations > 0 { routes += [batchDescription, batch] }
        // Answered 404 "keeps no history" under --keep-history 0: how a client discovers it.
        routes += [historyDescription, tableAt(configuration), versions]
        routes.append(schema)
        routes += [list(configuration), insert, read, update, delete, undelete]
        return routes
    }
}
