import Hummingbird
import NIOCore
import TSyncModel
import TSyncQuery

/// The history of records, a tsync extension of the v2 protocol (docs/DESIGN.md §4, §6.5), read
/// like the table routes it stands beside:
///
/// - `GET /tables/$history` describes it: `{"keepSeconds", "keepDeletedSeconds"}`; 404 on a
///   server that keeps no history (`--keep-history 0`), which is how a client discovers it.
/// - `GET /tables/$history/{table}/{id}?$top&$skip`: the record's versions, newest first,
///   `{"results": [{"version", "updatedAt", "user", "operation", "item"}, …]}`, paged with `Link`.
/// - `GET /tables/$history/{table}?at=TIME&…`: the table as it was at `TIME`, read with the
///   options and answered in the form of `GET /tables/{table}`.
///
/// Every access rule of a read applies: a per-user record's versions are another user's 404.
/// `$` cannot start a table name, so the paths never clash with a table's.
struct HistoryRoutes: Sendable {
    let storage: any ServerStorage
    let configuration: ServerConfiguration
    let tables: TableRoutes
    /// The wall clock the oldest readable time is measured from.
    let clock: @Sendable () -> Timestamp

    func register(on group: RouterGroup<ServerRequestContext>) {
        group.on(ServedRoutes.historyDescription, use: describe)
        group.on(ServedRoutes.tableAt(configuration), use: tableAt)
        group.on(ServedRoutes.versions, use: versions)
    }

    private var retention: Retention { configuration.retention }

    @Sendable func describe(_ request: Request, context: ServerRequestContext) async throws -> Response {
        try checkKept()
        return JSONResponse.make(
            .ok,
            [
                "keepSeconds": .int(retention.history.components.seconds),
                "keepDeletedSeconds": .int(retention.deleted.components.seconds),
            ])
    }

    @Sendable func versions(_ request: Request, context: ServerRequestContext) async throws -> Response {
        try checkKept()
        let (table, id) = try tables.tableAndID(context)
        // A table closed to the caller has no history for it: 404, as a read of a record answers.
        guard let view = try tables.readableView(table, context) else { throw APIError.notFound(table: table, id: id) }
        let scope = view.scope
        let parameters = try QueryString(request.uri.query)
        let query = try ListOptions(parameters, configuration: configuration).query
        let top = query.top ?? configuration.defaultPageSize
        let skip = query.skip ?? 0
        let storage = storage
        let versions = try await QueryDeadline.run(
            seconds: configuration.queryTimeoutSeconds, channel: context.channel, client: context.readClient
        ) {
            try await storage.versions(table: table, id: id, scope: scope, top: top, skip: skip)
        }
        // Of its versions, those the caller's view takes: one from when the record was in a
        // group the caller is not in is not the caller's to read.
        let readable = try versions.filter { version in try view.group == nil || view.admits(version.item.record()) }
        // A record nobody may see here has no history here either, as a read answers it.
        if readable.isEmpty, skip == 0 { throw APIError.notFound(table: table, id: id) }
        var body = Array(#"{"results":["#.utf8)
        for (index, version) in readable.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body.append(contentsOf: #"{"version":"#.utf8)
            JSONSerializer.write(.string(version.version), to: &body)
            body.append(contentsOf: #","updatedAt":"#.utf8)
            JSONSerializer.write(.string(version.updatedAt), to: &body)
            body.append(contentsOf: #","user":"#.utf8)
            JSONSerializer.write(version.user.map(JSONValue.string) ?? .null, to: &body)
            body.append(contentsOf: #","operation":"#.utf8)
            JSONSerializer.write(.string(version.operation.rawValue), to: &body)
            body.append(contentsOf: #","item":"#.utf8)
            try version.item.write(to: &body)
            body.append(UInt8(ascii: "}"))
        }
        body.append(contentsOf: "]}".utf8)
        var headers: HTTPFields = [:]
        if top > 0, versions.count == top {
            headers[.link] = "<\(tables.nextPageURL(request, context, parameters: parameters, skip: skip + top))>; rel=next"
        }
        return JSONResponse.make(.ok, bytes: body, headers: headers)
    }

    @Sendable func tableAt(_ request: Request, context: ServerRequestContext) async throws -> Response {
        try checkKept()
        let table = try tables.tableName(context)
        let view = try tables.readView(table, context)
        let scope = view.scope
        let parameters = try QueryString(request.uri.query)
        guard let text = try parameters.single("at"), !text.trimmingSpaces().isEmpty else {
            throw APIError.badRequest("at is missing: give the time to read the table at, e.g. at=2026-01-31T12:00:00.000Z")
        }
        guard text.count <= 64, let time = Timestamp(iso8601: text.trimmingSpaces()) else {
            throw APIError.badRequest("invalid at \(Identifiers.quoted(text)): give an ISO 8601 time, e.g. 2026-01-31T12:00:00.000Z")
        }
        let oldest = retention.oldestReadable(now: clock())
        guard time >= oldest else {
            throw APIError.badRequest(
                "at \(time.iso8601) is older than the history this server keeps: the oldest time available is \(oldest.iso8601)")
        }
        let query = view.narrowing(try ListOptions(parameters, configuration: configuration).query)
        let storage = storage
        let page = try await QueryDeadline.run(
            seconds: configuration.queryTimeoutSeconds, channel: context.channel, client: context.readClient
        ) {
            try await storage.query(table: table, at: time, query, scope: scope)
        }
        let body = try TableRoutes.body(page, query)
        var headers: HTTPFields = [:]
        if let top = query.top, top > 0, page.count == top {
            let next = tables.nextPageURL(
                request, context, parameters: parameters, skip: (query.skip ?? 0) + top, keeping: ListOptions.parameterNames.union(["at"]))
            headers[.link] = "<\(next)>; rel=next"
        }
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: body.bytes))
    }

    /// 404 on a server that keeps no history: the route is not there.
    private func checkKept() throws(APIError) {
        guard retention.keepsHistory else { throw APIError(.notFound, "this server keeps no history") }
    }
}
