import Foundation
import Hummingbird
import TSyncModel
import TSyncQuery

/// The Mobile Apps v2 table endpoints (DESIGN §4) over a `ServerStorage`.
struct TableRoutes: Sendable {
    let storage: any ServerStorage
    let configuration: ServerConfiguration

    func register(on group: RouterGroup<ServerRequestContext>) {
        group.get(":table", use: list)
        group.post(":table", use: insert)
        group.get(":table/:id", use: read)
        group.patch(":table/:id", use: update)
        group.delete(":table/:id", use: delete)
        group.post(":table/:id", use: undelete)
    }

    // MARK: - Reads

    @Sendable func list(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let table = try tableName(context)
        let parameters = try QueryString(request.uri.query)
        let options = try ListOptions(parameters, configuration: configuration)
        let page = try await storage.query(table: table, options.query, scope: try scope(table, context))

        let items = JSONValue.array(page.records.map { options.project($0.wireObject) })
        var headers: HTTPFields = [:]
        if options.query.top > 0, page.records.count == options.query.top {
            let next = nextPageURL(request, parameters: parameters, skip: options.query.skip + options.query.top)
            headers[.link] = "<\(next)>; rel=next"
        }
        if let count = page.totalCount {
            return JSONResponse.make(.ok, ["results": items, "count": .int(Int64(count))], headers: headers)
        }
        return JSONResponse.make(.ok, items, headers: headers)
    }

    @Sendable func read(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let (table, id) = try tableAndID(context)
        guard let record = try await storage.record(table: table, id: id, scope: try scope(table, context)),
            !record.system.deleted
        else { throw APIError.notFound(table: table, id: id) }
        return JSONResponse.item(.ok, record)
    }

    // MARK: - Writes

    @Sendable func insert(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let table = try tableName(context)
        let body = try await request.jsonObject(limit: configuration.maximumBodyBytes)
        // System properties in the body are dropped (never stored): existing clients send them.
        let record = try Record(wire: body, generateID: { UUID().uuidString.lowercased() })
        switch try await storage.insert(table: table, record: Record(id: record.id, fields: record.fields), scope: try scope(table, context)) {
        case .inserted(let stored):
            return JSONResponse.item(.created, stored)
        case .exists(let existing?):
            throw APIError(.conflict, "", item: existing)
        case .exists(nil):
            throw APIError(.conflict, "an item with id \(Identifiers.quoted(record.id)) already exists: choose another id")
        }
    }

    @Sendable func update(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let (table, id) = try tableAndID(context)
        var body = try await request.jsonObject(limit: configuration.maximumBodyBytes)
        if let bodyID = body["id"], !bodyID.isNull, bodyID != .string(id) {
            throw APIError.badRequest("the id in the body (\(JSONSerializer.string(bodyID))) is not the id in the URL (\(Identifiers.quoted(id)))")
        }
        body["id"] = .string(id)
        let record = try Record(wire: body)
        // If-Match wins; a version in the body alone is the older way to ask the same, answered 409.
        let ifMatch = try expectedVersion(request)
        let expected = ifMatch ?? record.system.version.map { .oneOf([$0]) } ?? .any
        let outcome = try await storage.modify(
            table: table, id: id, change: .update(record.fields), expectedVersion: expected, scope: try scope(table, context)
        )
        return try respond(to: outcome, table: table, id: id, staleStatus: ifMatch == nil ? .conflict : .preconditionFailed)
    }

    @Sendable func delete(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let (table, id) = try tableAndID(context)
        let outcome = try await storage.modify(
            table: table, id: id, change: .softDelete, expectedVersion: try expectedVersion(request) ?? .any,
            scope: try scope(table, context)
        )
        return try respond(to: outcome, table: table, id: id, staleStatus: .preconditionFailed)
    }

    @Sendable func undelete(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let (table, id) = try tableAndID(context)
        let outcome = try await storage.modify(
            table: table, id: id, change: .undelete, expectedVersion: try expectedVersion(request) ?? .any,
            scope: try scope(table, context)
        )
        return try respond(to: outcome, table: table, id: id, staleStatus: .preconditionFailed)
    }

    private func respond(to outcome: ModifyOutcome, table: String, id: String, staleStatus: HTTPResponse.Status) throws -> Response {
        switch outcome {
        case .modified(let record): return JSONResponse.item(.ok, record)
        case .notFound: throw APIError.notFound(table: table, id: id)
        case .versionMismatch(let current): throw APIError(staleStatus, "", item: current)
        }
    }

    // MARK: - Request parts

    private func tableName(_ context: ServerRequestContext) throws -> String {
        let table = try QueryString.decodePathSegment(Substring(context.parameters.get("table") ?? ""))
        try Identifiers.validateTableName(table)
        return table
    }

    private func tableAndID(_ context: ServerRequestContext) throws -> (String, String) {
        let id = try QueryString.decodePathSegment(Substring(context.parameters.get("id") ?? ""))
        try Identifiers.validateRecordID(id)
        return (try tableName(context), id)
    }

    private func scope(_ table: String, _ context: ServerRequestContext) throws(APIError) -> OwnerScope {
        guard configuration.isPerUser(table) else { return .shared }
        guard let account = context.accountName else { throw APIError.unauthorized }
        return .owner(account)
    }

    private func expectedVersion(_ request: Request) throws(APIError) -> ExpectedVersion? {
        guard let header = request.headers[.ifMatch] else { return nil }
        return try ETag.expectedVersion(fromIfMatch: header)
    }

    /// The same request with `$skip` advanced, as an absolute URL for `Link: <…>; rel=next`.
    private func nextPageURL(_ request: Request, parameters: QueryString, skip: Int) -> String {
        let scheme = request.headers[.forwardedProto] == "https" ? "https" : "http"
        let authority = request.head.authority ?? "\(configuration.host):\(configuration.port)"
        return "\(scheme)://\(authority)\(request.uri.path)?\(parameters.replacing("$skip", with: String(skip)))"
    }
}
