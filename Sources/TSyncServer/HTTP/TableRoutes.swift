import Foundation
import Hummingbird
import NIOCore
import TSyncModel
import TSyncQuery

/// The Mobile Apps v2 table endpoints (docs/DESIGN.md §4) over a `ServerStorage`.
struct TableRoutes: Sendable {
    let storage: any ServerStorage
    let configuration: ServerConfiguration
    /// Counts the live route's held reads and queries.
    let metrics: ServerMetrics?
    /// The table rules in force (`ServerConfiguration.rules`), worked out once.
    let rules: AccessRules
    /// The `$filter`s read lately, parsed.
    let filters = ParsedFilters()

    init(storage: any ServerStorage, configuration: ServerConfiguration, metrics: ServerMetrics? = nil) {
        self.storage = storage
        self.configuration = configuration
        self.metrics = metrics
        rules = configuration.rules
    }

    func register(on group: RouterGroup<ServerRequestContext>) {
        group.on(ServedRoutes.list(configuration), use: list)
        group.on(ServedRoutes.insert, use: insert)
        group.on(ServedRoutes.read, use: read)
        group.on(ServedRoutes.update, use: update)
        group.on(ServedRoutes.delete, use: delete)
        group.on(ServedRoutes.undelete, use: undelete)
        group.put(":table", use: methodNotAllowed("GET, POST"))
        group.put(":table/:id", use: methodNotAllowed("GET, PATCH, DELETE, POST"))
    }

    /// 405 with the methods the path has (`PUT` is not in the protocol: PATCH updates).
    private func methodNotAllowed(_ allowed: String) -> @Sendable (Request, ServerRequestContext) async throws -> Response {
        { request, _ in
            var error = APIError(.methodNotAllowed, "\(request.method) is not allowed here: use \(allowed)")
            error.headers[.allow] = allowed
            throw error
        }
    }

    // MARK: - Reads

    @Sendable func list(_ request: Request, context: ServerRequestContext) async throws -> Response {
        // Worked out in a function that is not async, into one object: a held read's handler
        // keeps its async frame for as long as it waits, and this keeps that frame small (the
        // frames of the requests held are most of what a held read costs, docs/PERFORMANCE.md).
        let read = try listRead(request, context)
        guard let live = read.live else { return read.response(try await read.page(context.channel)) }
        let (page, granted) = try await live.wait.page(
            table: read.table, live.question, live.interest, seconds: live.seconds, channel: context.channel,
            head: read.deliveredHead(request, context), stream: live.stream, { try await read.page(nil) })
        return read.response(page, granted: granted)
    }

    /// A list read, worked out from its request: its query, how its page is read, and whether it
    /// is held (the live route).
    @inline(never)
    private func listRead(_ request: Request, _ context: ServerRequestContext) throws -> ListRead {
        let table = try tableName(context)
        let parameters = try QueryString(request.uri.query)
        let options = try ListOptions(parameters, configuration: configuration, filters: filters)
        // The rules' view: a group's records only, by a filter ANDed with the client's, so the
        // page, its count and a held read's answer see nothing outside it.
        // A pull of an account also gets what left or came into its view (docs/DESIGN.md §11.1).
        let view = try rules.readView(table, context.caller, pulling: ViewChanges.applies(to: options.query))
        let scope = view.scope
        let storage = storage
        let timeout = configuration.queryTimeoutSeconds
        let query = view.narrowing(options.query)
        let client = context.readClient
        // The page as sent, worked out under the query deadline; `channel` nil for a held read,
        // whose query may be shared with other clients' (one leaving stops nobody's answer).
        let pageOf: @Sendable (RecordQuery, (any Channel)?) async throws -> PageBody = { query, channel in
            do {
                let wait = DatabaseWait()
                // A pull's page, when it is short and the client's share is free, is read where
                // the request is (`ServerStorage.quickQuery`); any other the general way.
                if channel != nil, view.changes == nil,
                    let page = try await QueryDeadline.$wait.withValue(
                        wait, operation: { try await storage.quickQuery(table: table, query, scope: scope, client: client) })
                {
                    var body = try Self.body(page, query)
                    body.queued = wait.duration
                    return body
                }
                let page = try await QueryDeadline.run(seconds: timeout, channel: channel, client: client, wait: wait) {
                    () async throws -> RecordPage in
                    guard let changes = view.changes else { return try await storage.query(table: table, query, scope: scope) }
                    guard let page = try await storage.query(table: table, query, scope: scope, changes: changes) else {
                        throw APIError(.forbidden, view.refusal ?? "this table is not readable by this account")
                    }
                    return page
                }
                var body = try Self.body(page, query)
                body.queued = wait.duration
                return body
            } catch var error as QueryTimedOut {
                // Only what the request asked for: a pull that sent no $filter is not told to narrow one.
                var advice = query.filter == nil ? [] : ["narrow the $filter"]
                if query.includeTotalCount { advice.append("leave out $inlinecount") }
                advice.append("ask for smaller pages")
                error.advice = advice.dropLast().joined(separator: ", ") + (advice.count > 1 ? " or " : "") + (advice.last ?? "")
                throw error
            }
        }
        let page: @Sendable ((any Channel)?) async throws -> PageBody = { channel in try await pageOf(query, channel) }
        var live: ListRead.Live?
        // The live route (docs/DESIGN.md §8.1): an empty page is held until a commit or the wait ends.
        let prefer = request.headers.value(of: .prefer)
        if let seconds = LiveWait.requested(prefer), let feed = storage.changes, configuration.maximumWatchers > 0 {
            let named = parameters.items.filter { ListOptions.parameterNames.contains($0.name) }
            let question = LiveQuestion(scope: scope, parameters: named.flatMap { [$0.name, $0.value] } + view.key)
            // With changes, the client's own filter: a record that leaves the view is a change
            // for the reads of the group it left, which the view's filter would rule out.
            let interest = LiveInterest(
                scope: scope, includeDeleted: query.includeDeleted, filter: view.changes == nil ? query.filter : options.query.filter)
            var stream: LiveStream?
            // Streamed (`LiveStream`): an incremental pull's read, whose last record is a place to go on from.
            if LiveStream.requested(prefer), let top = options.query.top, top > 0, options.query.orderBy == PageEnd.order,
                (options.query.skip ?? 0) == 0, options.query.select == nil, !options.query.includeTotalCount, view.changes == nil
            {
                let (user, start) = LiveStream.split(options.query.filter)
                let asked = options.query
                stream = LiveStream(
                    // The question without its checkpoint: the `$filter` is the user's part alone.
                    question: LiveQuestion(
                        scope: scope,
                        parameters: named.filter { $0.name != "$filter" }.flatMap { [$0.name, $0.value] } + [
                            "$filter", user?.odataText ?? "",
                        ]
                            + view.key),
                    interest: interest, top: top,
                    page: { position in
                        guard let position else { return try await pageOf(query, nil) }
                        var next = asked
                        next.filter = LiveStream.filter(user: user, after: position)
                        return try await pageOf(view.narrowing(next), nil)
                    }, start: start)
            }
            live = ListRead.Live(
                wait: LiveWait(feed: feed, limit: configuration.maximumWatchers, metrics: metrics), seconds: seconds, question: question,
                interest: interest, stream: stream)
        }
        // A full page links the next one (`Link: <…>; rel=next`).
        var next: (top: Int, link: NextPageLink)?
        if let top = options.query.top, top > 0 {
            next = (top, nextPage(request, context, parameters: parameters, skip: (options.query.skip ?? 0) + top))
        }
        return ListRead(
            table: table, page: page, live: live, next: next, schemaTag: configuration.schema(of: table)?.tag,
            maximumTop: configuration.maximumPageSize)
    }

    /// A page's body, written straight to bytes in the serializer's key order: `{"count", "results"}`.
    static func body(_ page: RecordPage, _ query: RecordQuery) throws -> PageBody {
        var body = ByteBuffer()
        body.reserveCapacity(64 + (page.written?.bytes.count ?? 256 * page.items.count))
        if let count = page.totalCount { body.writeString(#"{"count":\#(count),"results":"#) }
        body.writeInteger(UInt8(ascii: "["))
        if let written = page.written, query.select == nil {
            body.writeBytes(written.bytes)
        } else {
            var records: [UInt8] = []
            if query.select == nil {
                for (index, item) in page.items.enumerated() {
                    if index > 0 { records.append(UInt8(ascii: ",")) }
                    try item.write(to: &records)
                }
            } else {
                for (index, record) in try page.records().enumerated() {
                    if index > 0 { records.append(UInt8(ascii: ",")) }
                    JSONSerializer.write(.object(query.project(record.wireObject)), to: &records)
                }
            }
            body.writeBytes(records)
        }
        body.writeInteger(UInt8(ascii: "]"))
        if page.totalCount != nil { body.writeInteger(UInt8(ascii: "}")) }
        return PageBody(bytes: body, count: page.count, deletedHorizon: page.deletedHorizon, end: PageEnd.value(page, query))
    }

    @Sendable func read(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let (table, id) = try tableAndID(context)
        guard let record = try await readable(table: table, id: id, context), !record.system.deleted else {
            throw APIError.notFound(table: table, id: id)
        }
        return JSONResponse.item(.ok, record)
    }

    /// The record, soft-deleted or not, when the caller may read it; nil when it is missing or
    /// may not be read, alike, so that nothing says whether it exists. A 401 stays a 401.
    func readable(table: String, id: String, _ context: ServerRequestContext) async throws -> Record? {
        guard let view = try readableView(table, context) else { return nil }
        let storage = storage
        let record = try await QueryDeadline.run(
            seconds: configuration.queryTimeoutSeconds, channel: context.channel, client: context.readClient,
            { try await storage.record(table: table, id: id, scope: view.scope) })
        return record.flatMap { view.admits($0) ? $0 : nil }
    }

    // MARK: - Writes

    @Sendable func insert(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let table = try tableName(context)
        let body = try await request.jsonObject(limit: configuration.maximumBodyBytes)
        return try await write(.post, table: table, id: nil, body: body, request, context)
    }

    @Sendable func update(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let (table, id) = try tableAndID(context)
        let body = try await request.jsonObject(limit: configuration.maximumBodyBytes)
        // `If-None-Match: *` asks for the write only where there is no item (RFC 9110 §13.1.2),
        // which an update can never have: an item that is there answers 412 with it.
        if request.headers[.ifNoneMatch]?.trimmingCharacters(in: .whitespaces) == "*",
            let current = try await readable(table: table, id: id, context), !current.system.deleted
        {
            throw APIError(.preconditionFailed, "If-None-Match: * and the item exists", item: current)
        }
        return try await write(.patch, table: table, id: id, body: body, request, context)
    }

    @Sendable func delete(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let (table, id) = try tableAndID(context)
        return try await write(.delete, table: table, id: id, body: nil, request, context)
    }

    @Sendable func undelete(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let (table, id) = try tableAndID(context)
        return try await write(.post, table: table, id: id, body: nil, request, context)
    }

    /// A single write is a batch of one: the same request rules, storage path and answers as
    /// `POST /tables/$batch` (`WriteRequest`, `WriteAnswer`).
    private func write(
        _ method: WriteRequest.Method, table: String, id: String?, body: [String: JSONValue]?, _ request: Request,
        _ context: ServerRequestContext
    ) async throws -> Response {
        let write = try writeRequest(method, table: table, id: id, body: body, ifMatch: request.headers[.ifMatch], context)
        let outcomes = try await storage.write([write.write], atomic: false)
        guard let outcome = outcomes.first else { throw APIError(.internalServerError, "the storage gave no answer") }
        return try WriteAnswer(outcome, for: write).response()
    }

    // MARK: - Request parts

    func tableName(_ context: ServerRequestContext) throws -> String {
        let table = try QueryString.decodePathSegment(Substring(context.parameters.get("table") ?? ""))
        try Identifiers.validateTableName(table)
        return table
    }

    func tableAndID(_ context: ServerRequestContext) throws -> (String, String) {
        let id = try QueryString.decodePathSegment(Substring(context.parameters.get("id") ?? ""))
        try Identifiers.validateRecordID(id)
        return (try tableName(context), id)
    }

    /// `readView`, nil when the table is closed to the caller (a 403 there): the routes that
    /// read one record answer that 404, as for any record the caller may not read.
    func readableView(_ table: String, _ context: ServerRequestContext) throws(APIError) -> ReadView? {
        let caller = context.caller
        let rules = rules
        switch Result(catching: { () throws(APIError) -> ReadView in try rules.readView(table, caller) }) {
        case .success(let view): return view
        case .failure(let error):
            if error.status == .forbidden { return nil }
            throw error
        }
    }

    /// What the caller may read of `table` (`AccessRules.readView`): every route that reads asks here.
    func readView(_ table: String, _ context: ServerRequestContext) throws(APIError) -> ReadView {
        try rules.readView(table, context.caller)
    }

    /// A write as the protocol states it, with what the table rules require of it
    /// (`AccessRules.writeAccess`): the single routes and the batch route build theirs here.
    /// What every write of one operation on one table by one caller shares, whatever its record:
    /// the scope and access the rules give, and the table's schema.
    struct WritePermit {
        var scope: OwnerScope
        var access: WriteAccess
        var schema: RecordSchema?
    }

    /// The permit of `operation` on `table` for the caller: 400 for a bad table name, 401 or 403
    /// from the rules. A batch asks once per table and operation, not once per write: a push
    /// sends thousands of writes to one table, and the answer depends on nothing else.
    func writePermit(_ table: String, _ operation: AccessOperation, _ context: ServerRequestContext) throws(APIError) -> WritePermit {
        do {
            try Identifiers.validateTableName(table)
        } catch {
            throw APIError.badRequest(error.message)
        }
        let (scope, access) = try rules.writeAccess(table, operation, context.caller)
        return WritePermit(scope: scope, access: access, schema: configuration.schema(of: table))
    }

    /// The operation a write asks the rules for.
    static func accessOperation(_ method: WriteRequest.Method, id: String?) -> AccessOperation {
        switch (method, id) {
        case (.post, nil): .insert
        case (.delete, _): .delete
        default: .update
        }
    }

    /// - Parameter permit: `writePermit` of this table and operation, when the caller has it already.
    func writeRequest(
        _ method: WriteRequest.Method, table: String, id: String?, body: [String: JSONValue]?, ifMatch: String?,
        _ context: ServerRequestContext, permit: WritePermit? = nil
    ) throws(APIError) -> WriteRequest {
        let asked: WritePermit
        if let permit {
            asked = permit
        } else {
            asked = try writePermit(table, Self.accessOperation(method, id: id), context)
        }
        var request = try WriteRequest(
            method: method, table: table, id: id, body: body, ifMatch: ifMatch, scope: asked.scope, user: context.accountName,
            schema: asked.schema)
        request.write.access = asked.access
        // An insert the rules refuse is refused here, before the storage would create its table.
        if case .insert(let record) = request.write.action, let message = asked.access.refusal(current: nil, owner: nil, next: record) {
            throw APIError(.forbidden, message)
        }
        return request
    }

    /// The same request with `$skip` advanced, as an absolute URL for `Link: <…>; rel=next`: with
    /// only the parameters a read understands (each bounded), and the scheme the request came in
    /// on: `https` when this server serves TLS, or when a trusted proxy says its client used it
    /// (`X-Forwarded-Proto`, or `proto=` in `Forwarded`).
    func nextPageURL(
        _ request: Request, _ context: ServerRequestContext, parameters: QueryString, skip: Int,
        keeping: Set<String> = ListOptions.parameterNames
    ) -> String {
        nextPage(request, context, parameters: parameters, skip: skip, keeping: keeping).url
    }

    /// `nextPageURL`, not yet written out: a list read makes one for every page, and only a
    /// full page links it.
    func nextPage(
        _ request: Request, _ context: ServerRequestContext, parameters: QueryString, skip: Int,
        keeping: Set<String> = ListOptions.parameterNames
    ) -> NextPageLink {
        var scheme = configuration.tls == nil ? "http" : "https"
        if context.fromTrustedProxy {
            let forwarded = request.headers[.forwarded]?.lowercased() ?? ""
            if request.headers[.forwardedProto]?.lowercased() == "https" || forwarded.contains("proto=https") { scheme = "https" }
        }
        let authority = request.head.authority ?? "\(configuration.host):\(configuration.port)"
        return NextPageLink(prefix: "\(scheme)://\(authority)\(request.uri.path)?", parameters: parameters, skip: skip, keeping: keeping)
    }
}

/// The address of the page after this one (`TableRoutes.nextPage`).
struct NextPageLink: Sendable {
    /// Scheme, authority and path, up to the `?`.
    let prefix: String
    let parameters: QueryString
    let skip: Int
    let keeping: Set<String>

    var url: String { prefix + parameters.replacing("$skip", with: String(skip), keeping: keeping) }
}

/// A list read worked out before its page is read (`TableRoutes.listRead`): an object, so that
/// the handler's async frame holds one reference to it.
private final class ListRead: Sendable {
    /// What a held read waits with.
    struct Live: Sendable {
        let wait: LiveWait
        let seconds: Int
        let question: LiveQuestion
        let interest: LiveInterest
        /// Set when the read asks for a stream and can be one.
        let stream: LiveStream?
    }

    let table: String
    let page: @Sendable ((any Channel)?) async throws -> PageBody
    /// Set when the read asks to be held and the server holds reads.
    let live: Live?
    /// The page size asked for, and the next page's address.
    let next: (top: Int, link: NextPageLink)?
    let schemaTag: String?
    /// The largest `$top` the server takes (`--max-top`).
    let maximumTop: Int

    init(
        table: String, page: @escaping @Sendable ((any Channel)?) async throws -> PageBody, live: Live?,
        next: (top: Int, link: NextPageLink)?,
        schemaTag: String?, maximumTop: Int
    ) {
        self.table = table
        self.page = page
        self.live = live
        self.next = next
        self.schemaTag = schemaTag
        self.maximumTop = maximumTop
    }

    /// The head of the answer a commit writes for this held read outside its request
    /// (`LiveDelivery`), for a page and the wait granted: `response`'s, with the fields that the
    /// request's way out adds (`RequestLogMiddleware`, then Hummingbird's `Date` and `Server`), in
    /// their order. Nil for a request whose answer is not plain (HEAD has no body).
    @inline(never)
    func deliveredHead(_ request: Request, _ context: ServerRequestContext) -> (@Sendable (PageBody, Int) -> HTTPResponse)? {
        guard request.method == .get else { return nil }
        var outer: HTTPFields = [:]
        RequestLogMiddleware.addFields(to: &outer, request, requestID: context.requestUser.requestID)
        return { [self, outer] page, granted in
            var head = response(page, granted: granted).head
            head.headerFields.append(contentsOf: outer)
            head.headerFields.set(HTTPDate.now, for: .date)
            head.headerFields.set(SyncServer.serverName, for: .server)
            return head
        }
    }

    /// The answer, with the headers that depend on the page; `granted` is the wait applied, for a held read.
    @inline(never)
    func response(_ page: PageBody, granted: Int? = nil) -> Response {
        var headers: HTTPFields = [:]
        // Room for these and the ones added on the way out (`Content-Length`, the log's, `Date`,
        // `Server`): grown one by one, the fields were copied four times an answer.
        headers.reserveCapacity(12)
        if let granted {
            headers.set("wait=\(granted)", for: .preferenceApplied)
            headers.set("no", for: .accelBuffering)
        }
        if let next, page.count == next.top { headers.set("<\(next.link.url)>; rel=next", for: .link) }
        // Tombstones older than this were removed (`--keep-deleted`): a client whose checkpoint
        // is older may have missed deletes (docs/DESIGN.md §6.5).
        if let horizon = page.deletedHorizon { headers.set(horizon.iso8601, for: .deletedHorizon) }
        // The table's record type, by its tag: a client reads `GET /tables/$schema/{table}` when
        // it changed (docs/DESIGN.md §16).
        if let schemaTag { headers.set(schemaTag, for: .schemaTag) }
        // Where the page ends, ahead of its body: the client asks for the next page meanwhile.
        if let end = page.end.flatMap(PageEnd.header) { headers.set(end, for: .pageEnd) }
        // How many records a page may hold: a pull asks for as many (docs/DESIGN.md §4).
        headers.set(String(maximumTop), for: .maximumTop)
        // How long the read waited for the database: a pull slows down while it grows
        // (`PullPace`, docs/DESIGN.md §8). A held read's answer may be shared, and says nothing.
        if granted == nil, let queued = page.queued { headers.set(ServerTiming.queue(queued), for: .serverTiming) }
        headers.set("application/json; charset=utf-8", for: .contentType)
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: page.bytes))
    }
}
