import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import NIOHTTP1
import TSyncModel

/// Speaks the Mobile Apps v2 table protocol (docs/DESIGN.md §4) to one server.
///
/// It knows nothing of the local store: push and pull decide what to send and what an answer means
/// for the queue. A rejected operation (409, 412, 404, 5xx…) is an answer, not an error, so push can
/// record it and go on; only an unreachable server (`.unreachable`) or a refused token
/// (`.unauthorized`) is thrown, because those stop the whole command.
///
/// One client owns one connection pool with keep-alive; create it with `withRemoteClient` so the
/// pool is shut down however the command ends.
package struct RemoteClient: Sendable {
    /// The server this client speaks to.
    package let endpoint: RemoteEndpoint
    let token: String?
    private let http: HTTPClient
    private let timeout: TimeAmount
    private let observer: RemoteExchange.Observer?
    /// The proxy every exchange goes through, nil when direct.
    let proxy: RemoteProxy?
    /// A table whose route proves the remote a sync server when the batch route's discovery does
    /// not (`ServerCheck`); nil when the store has none yet.
    let probeTable: String?
    /// Whether the remote has proven a sync server in this command: nothing is written before.
    let serverCheck = ServerCheck()
    /// The CAs trusted, for a second look at a certificate the handshake refused.
    let trust: CertificateTrust

    init(
        endpoint: RemoteEndpoint, token: String?, http: HTTPClient, timeout: TimeAmount, observer: RemoteExchange.Observer?,
        proxy: RemoteProxy? = nil, probeTable: String? = nil, trust: CertificateTrust = CertificateTrust()
    ) {
        self.endpoint = endpoint
        self.trust = trust
        self.proxy = proxy
        self.probeTable = probeTable
        self.token = token
        self.http = http
        self.timeout = timeout
        self.observer = observer
    }

    /// Runs `body` with a client whose connection pool lives exactly as long as the call.
    package static func withRemoteClient<Result: Sendable>(
        endpoint: RemoteEndpoint,
        token: String?,
        timeout: Duration = .seconds(30),
        observer: RemoteExchange.Observer? = nil,
        trust: CertificateTrust = CertificateTrust(),
        proxy: RemoteProxy? = nil,
        probeTable: String? = nil,
        _ body: (RemoteClient) async throws(TSyncError) -> Result
    ) async throws(TSyncError) -> Result {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(Int64(timeout.components.seconds)))
        configuration.redirectConfiguration = .disallow
        configuration.tlsConfiguration = trust.tlsConfiguration
        // A compressed answer is bounded by what it decodes to, not by its ratio: a page of
        // records that repeat their field names compresses well over 50:1 (a proxy's gzip of a
        // page of 1,000 similar records is 200:1), and a ratio refused it.
        configuration.decompression = .enabled(limit: .size(Self.maximumAnswerBytes))
        // A refused connection is an answer: fail at once (exit 3) instead of retrying until the
        // connect timeout, so an offline push returns immediately.
        configuration.connectionPool.retryConnectionEstablishment = false
        // No spans: tsync sets up no tracing system, and each request's span (its URL parsed
        // again for the span's attributes) went to one that drops them, 1-2% of a clone's CPU.
        configuration.tracing.tracer = nil
        if let proxy {
            configuration.proxy = .server(
                host: proxy.host, port: proxy.port,
                authorization: proxy.username.map { .basic(username: $0, password: proxy.password ?? "") })
        }
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let client = RemoteClient(
            endpoint: endpoint, token: token, http: http, timeout: .seconds(Int64(timeout.components.seconds)), observer: observer,
            proxy: proxy, probeTable: probeTable, trust: trust)
        let outcome: Swift.Result<Result, TSyncError>
        do {
            outcome = .success(try await body(client))
        } catch {
            outcome = .failure(error)
        }
        try? await http.shutdown()
        return try outcome.get()
    }

    // MARK: - Accounts

    /// `POST /.auth/login/custom`; returns the token, the user id and, from `tsync serve`, a device
    /// token to send with later logins (docs/DESIGN.md §11; other servers ignore the field).
    package func login(username: String, password: String, deviceToken: String? = nil) async throws(TSyncError) -> (
        token: String, userID: String, deviceToken: String?
    ) {
        var body: JSONValue = ["username": .string(username), "password": .string(password)]
        if let deviceToken { body = ["username": .string(username), "password": .string(password), "deviceToken": .string(deviceToken)] }
        let response = try await send(.POST, endpoint.url(path: ["/.auth", "login", "custom"]), body: body, authenticated: false)
        switch response.status {
        case 200, 201:
            guard let object = response.json?.objectValue, let token = object["authenticationToken"]?.stringValue,
                !token.trimmingCharacters(in: .whitespaces).isEmpty
            else {
                throw TSyncError(
                    .unauthorized,
                    "\(endpoint) answered the login with HTTP \(response.status) but no token; nothing was saved (is it a tsync or Mobile Apps server?)"
                )
            }
            let userID = object["user"]?.objectValue?["userId"]?.stringValue ?? username
            // A token for another account (a proxy or cache answering another user's login)
            // would make every later write that account's.
            guard userID.caseInsensitiveCompare(username) == .orderedSame else {
                throw TSyncError(
                    .unauthorized,
                    "\(endpoint) answered the login of \(Identifiers.quoted(username)) with a token for \(Identifiers.quoted(userID)); nothing was saved"
                )
            }
            return (token, userID, object["deviceToken"]?.stringValue)
        case 401, 403:
            throw TSyncError(.unauthorized, "login refused: \(response.errorMessage ?? "wrong user name or password")")
        case 429:
            // The server's own words (tsync's name the wait and the operator's unlock), else the wait.
            let wait = RetryAfter(response.headers).map { " (\($0))" } ?? ""
            throw TSyncError(.unauthorized, "login refused: \(response.errorMessage ?? "too many failed logins\(wait)")")
        default:
            throw .failure("login failed with HTTP \(response.status): \(response.errorMessage ?? "no message")")
        }
    }

    /// `POST /.auth/logout`: revokes the token on the server.
    package func logout() async throws(TSyncError) {
        let response = try await send(.POST, endpoint.url(path: ["/.auth", "logout"]), body: nil)
        guard (200..<300).contains(response.status) || response.status == 401 else {
            throw .failure("logout failed with HTTP \(response.status): \(response.errorMessage ?? "no message")")
        }
    }

    /// `GET /.auth/me` (a tsync extension): the account the token belongs to, nil on a server
    /// without accounts. A server without the route (a plain v2 server) is a failure that says so.
    package func whoami() async throws(TSyncError) -> String? {
        try await identity().user
    }

    /// `GET /.auth/me` in full: the account, and (from servers with table rules) its roles,
    /// groups and the token's scope.
    package func identity() async throws(TSyncError) -> RemoteIdentity {
        let response = try await send(.GET, endpoint.url(path: ["/.auth", "me"]), body: nil)
        guard response.status == 200, let object = response.json?.objectValue, let user = object["user"] else {
            throw .failure(
                "\(endpoint) answered HTTP \(response.status) to GET /.auth/me: it does not tell whose a token is (not a tsync server?)")
        }
        return RemoteIdentity(user.objectValue)
    }

    // MARK: - Tables

    /// Reads one page of a table. `next` (from a previous page's `Link`) wins over the other
    /// parameters, since it carries them already.
    package func readPage(_ request: PageRequest) async throws(TSyncError) -> Page {
        try page(from: try await pageAnswer(request), request)
    }

    /// The answer to a page read. One refused (400) for asking more records than the server takes,
    /// by a server that says how many it takes (`X-TSync-Max-Top`, docs/DESIGN.md §4), is asked
    /// again once for that many: an operator may lower `--max-top` under what a client asks by
    /// default. A link is the server's own, and asked as it is.
    private func pageAnswer(
        _ request: PageRequest, parsesSuccess: Bool = true, headed: (@Sendable (HTTPHeaders) -> Void)? = nil
    ) async throws(TSyncError) -> HTTPAnswer {
        func ask(_ request: PageRequest) async throws(TSyncError) -> HTTPAnswer {
            let url = request.nextLink ?? endpoint.url(path: ["tables", request.table], query: request.queryItems)
            // A held read asks to be a stream (`PageLines`); a server that does not stream holds it
            // as it would without, and a plain v2 server ignores both.
            return try await send(
                .GET, url, bytes: nil, prefer: request.wait.map { "wait=\($0), stream" }, parsesSuccess: parsesSuccess,
                streams: request.wait != nil, headed: headed)
        }
        let response = try await ask(request)
        guard response.status == 400, request.nextLink == nil, let top = request.top,
            let largest = Self.maximumTop(response.headers), largest < top
        else { return response }
        var smaller = request
        smaller.top = largest
        return try await ask(smaller)
    }

    /// A page in the store's form: a page as `tsync serve` writes it is read straight into it
    /// (`StoredPageDecoder`); any other goes the way of `readPage`, with its rules and errors.
    /// `arrived` sees a 200's body before it is read (`Puller` guesses the next page's position
    /// from it, to ask for that page while this one is read), with the time the server says the
    /// read waited for its database (`Server-Timing: queue`), if it says.
    /// `ends`: told where the page ends, before its body is read, when the server says so in its
    /// headers (`X-TSync-Page-End`, which `tsync serve` sends): a claim, checked by the caller
    /// against the page once it is read.
    package func readStoredPage(
        _ request: PageRequest, arrived: (@Sendable ([UInt8], _ queued: Duration?) -> Void)? = nil,
        ends: (@Sendable (_ id: String, _ updatedAt: Timestamp) -> Void)? = nil
    ) async throws(TSyncError) -> StoredPage {
        var headed: (@Sendable (HTTPHeaders) -> Void)?
        if let ends {
            headed = { headers in
                if let end = Self.pageEnd(headers) { ends(end.id, end.updatedAt) }
            }
        }
        let response = try await pageAnswer(request, parsesSuccess: false, headed: headed)
        if let lines = response.lines { return try await streamedPage(lines, request) }
        if response.status == 200 { arrived?(response.body, ServerTiming.queue(in: response.headers["Server-Timing"])) }
        return try storedPage(response, request)
    }

    /// A 200's page (or the error of any other answer) in the store's form.
    private func storedPage(_ answer: HTTPAnswer, _ request: PageRequest) throws(TSyncError) -> StoredPage {
        var response = answer
        if response.status == 200, let decoded = StoredPageDecoder.decode(response.body) {
            var page = StoredPage(
                records: decoded.records, nextLink: LinkHeader.next(in: response.headers), totalCount: decoded.totalCount,
                waitApplied: waitApplied(response, request), serverDate: HTTPDate.parse(response.headers.first(name: "Date")))
            page.deletedHorizon = Self.deletedHorizon(response.headers)
            page.schemaTag = Self.schemaTag(response.headers)
            page.maximumTop = Self.maximumTop(response.headers)
            serverCheck.prove()
            return page
        }
        if response.status == 200 { response.parse() }
        return StoredPage(try page(from: response, request))
    }

    /// The next page of a streamed answer (`PageLines`) that has records, read as a page with the
    /// answer's head; an empty page when the answer ends. The page carries the lines, for the
    /// page after it (`StoredPage.lines`). A line cut or unreadable fails as a cut page does.
    package func streamedPage(_ lines: PageLines, _ request: PageRequest) async throws(TSyncError) -> StoredPage {
        while true {
            let line: [UInt8]?
            do {
                line = try await lines.next()
            } catch let error as TSyncError {
                throw error
            } catch {
                await lines.cancel()
                throw readFailed(request, "failed: its streamed answer ended early (\(ConnectionFailure.words(error)))", notNow: true)
            }
            // A blank line is no page (a keep-alive some proxy or a later server may send).
            if let line, line.allSatisfy({ [9, 10, 13, 32].contains($0) }) { continue }
            var answer = HTTPAnswer(status: 200, headers: lines.headers, json: nil)
            answer.body = line ?? Array("[]".utf8)
            var page = try storedPage(answer, request)
            // A stream has no `Link`: its next page is its next line.
            page.nextLink = nil
            if line == nil || !page.records.isEmpty {
                if line != nil { page.lines = lines }
                return page
            }
        }
    }

    func page(from response: HTTPAnswer, _ request: PageRequest) throws(TSyncError) -> Page {
        if response.status == 200, response.json == nil, response.hasBody, !response.isJSON {
            throw notASyncServer(response, instead: "a page of records")
        }
        guard response.status == 200 else {
            var error = readFailed(
                request, "failed with HTTP \(response.status): \(response.errorMessage ?? "no message")",
                notNow: Self.isNotNow(response.status))
            if error.kind == .failure { error.refusedStatus = response.status }
            throw error
        }
        if response.json == nil {
            // Cut or damaged on the way (a proxy, a dropped connection behind it): the reader's
            // own words keep its position in the page.
            let why = response.jsonError.map { "its page is not valid JSON (\($0.message))" } ?? "its page is empty"
            throw readFailed(request, "failed: \(why)", notNow: true)
        }
        let items: [JSONValue]
        var totalCount: Int?
        switch response.json {
        case .array(let array)?: items = array
        case .object(let object)?:
            guard case .array(let array)? = object["results"] else { fallthrough }
            items = array
            if case .int(let count)? = object["count"], count >= 0 { totalCount = Int(count) }
        default:
            throw .failure("pulling \(request.table): the server's answer is not a JSON array")
        }
        var records: [Record] = []
        records.reserveCapacity(items.count)
        for item in items {
            guard let object = item.objectValue else {
                throw .failure("pulling \(request.table): the server sent \(item.kindName) instead of a record")
            }
            do {
                records.append(try Record(wire: object))
            } catch {
                // The server's data, not the user's input: exit 1, not 65.
                throw .failure("pulling \(request.table): the server sent a record that is not valid (\(error.message))")
            }
        }
        serverCheck.prove()
        var page = Page(
            records: records, nextLink: LinkHeader.next(in: response.headers), totalCount: totalCount,
            waitApplied: waitApplied(response, request), serverDate: HTTPDate.parse(response.headers.first(name: "Date")),
            deletedHorizon: Self.deletedHorizon(response.headers))
        page.schemaTag = Self.schemaTag(response.headers)
        page.maximumTop = Self.maximumTop(response.headers)
        return page
    }

    /// A page read that failed, in the one set of words every reader of pages shares (pulls,
    /// settling and `push --check`: the words name the reading, not one of its callers). `notNow` (`isNotNow`: a 5xx, a cut or unreadable page) is exit 3, as the same
    /// answer to a write is: nothing of the page was written and the same read may work later;
    /// otherwise (a 4xx: no such table, forbidden) it is the server's refusal, exit 1.
    private func readFailed(_ request: PageRequest, _ what: String, notNow: Bool) -> TSyncError {
        let fact = "reading table \(request.table) from \(endpoint) \(what)"
        return notNow ? Unanswered.notNow(fact: fact, neverSent: false).error : TSyncError(.failure, fact)
    }

    /// Whether an answer's status says "not now" rather than "no": the server failed (5xx) or
    /// asks to be asked later (429). The one classification of statuses that reads and writes
    /// share: a write so answered stays in flight (`Pusher.verified`), a read so answered failed
    /// for now (docs/DESIGN.md §8).
    package static func isNotNow(_ status: Int) -> Bool { status >= 500 || status == 429 }

    /// The server's answer to the request's `wait`: nil when it asked none or was told nothing.
    private func waitApplied(_ response: HTTPAnswer, _ request: PageRequest) -> Int? {
        request.wait == nil ? nil : LiveWaitHeader.applied(response.headers.first(name: "Preference-Applied"))
    }

    /// `POST /tables/{table}`.
    package func insert(table: String, item: [String: JSONValue]) async throws(TSyncError) -> RemoteAnswer {
        let response = try await send(.POST, endpoint.url(path: ["tables", table]), body: .object(item))
        return try answer(response)
    }

    /// `PATCH /tables/{table}/{id}` with `If-Match` when a version is known, and that version as
    /// the body's `version` too: a proxy that strips `If-Match` leaves the body's, which v2 servers
    /// check in its place (`tsync serve` answers 409), so the update still meets another writer's
    /// change instead of overwriting it.
    package func update(table: String, id: String, item: [String: JSONValue], version: String?) async throws(TSyncError) -> RemoteAnswer {
        var body = item
        if let version { body["version"] = .string(version) }
        let response = try await send(
            .PATCH, endpoint.url(path: ["tables", table, id]), body: .object(body), ifMatch: version)
        return try answer(response)
    }

    /// `DELETE /tables/{table}/{id}` with `If-Match` when a version is known.
    package func delete(table: String, id: String, version: String?) async throws(TSyncError) -> RemoteAnswer {
        let response = try await send(.DELETE, endpoint.url(path: ["tables", table, id]), body: nil, ifMatch: version)
        return try answer(response)
    }

    /// `POST /tables/{table}/{id}` (no body): undeletes a soft-deleted item, with `If-Match` when a
    /// version is known.
    package func undelete(table: String, id: String, version: String?) async throws(TSyncError) -> RemoteAnswer {
        let response = try await send(.POST, endpoint.url(path: ["tables", table, id]), body: nil, ifMatch: version)
        return try answer(response)
    }

    /// `GET /tables/{table}/{id}`: the server's copy, or nil when it has none.
    package func read(table: String, id: String) async throws(TSyncError) -> RemoteAnswer {
        try answer(try await send(.GET, endpoint.url(path: ["tables", table, id]), body: nil))
    }

    // MARK: - Batches (a tsync extension, discovered)

    /// What `GET /tables/$batch` says of the server's batch route; nil when the server has none (a
    /// plain v2 server answers 404, an older tsync 400, either way not this shape).
    /// The first discovery of a command is also its check that the remote is a sync server at all
    /// (`ServerCheck`), before any write.
    package func batchCapabilities() async throws(TSyncError) -> BatchCapabilities? {
        if case .discovered(let capabilities) = try await proveServer() { return capabilities }
        // Discovery: a plain v2 server may answer an HTML 404 here (no such route), which says
        // nothing against it; only tsync's own "no such endpoint" does (a wrong path prefix).
        return Self.capabilities(try await send(.GET, endpoint.url(path: ["tables", "/$batch"]), body: nil, discovering: true))
    }

    /// The batch route's description in a discovery answer; nil when it is not one.
    static func capabilities(_ response: HTTPAnswer) -> BatchCapabilities? {
        guard response.status == 200, let object = response.json?.objectValue,
            case .int(let operations)? = object["maxOperations"], operations >= 1,
            case .int(let bytes)? = object["maxBytes"], bytes >= 1
        else { return nil }
        var itemBytes = bytes
        if case .int(let limit)? = object["maxItemBytes"] { itemBytes = limit }
        return BatchCapabilities(
            maxOperations: Int(operations), maxBytes: Int(bytes), maxItemBytes: Int(itemBytes),
            atomic: object["atomic"]?.boolValue ?? false)
    }

    /// `POST /tables/$batch`: the operations in order, one answer each, as the single routes would
    /// answer them. `.tooLarge` when the server refuses the batch for its size (split it).
    package func batch(_ operations: [BatchOperation], atomic: Bool) async throws(TSyncError) -> BatchReply {
        // Each operation is serialized once: its bytes are what `encodedSize` measured.
        var body = Array(#"{"atomic":\#(atomic),"operations":["#.utf8)
        var items: [Range<Int>?] = []
        items.reserveCapacity(operations.count)
        for (index, operation) in operations.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            items.append(operation.write(to: &body))
        }
        body.append(contentsOf: Array("]}".utf8))
        var response = try await send(.POST, endpoint.url(path: ["tables", "/$batch"]), bytes: body, parsesSuccess: false)
        if response.status == 413 { return .tooLarge(response.errorMessage ?? "the batch is too large") }
        guard (200..<300).contains(response.status) else {
            // A failure of the batch as a whole (a proxy that does not route it answers 404) is
            // never an operation's answer: handing it to each operation made a 404 "deleted on
            // the server", which `--on-conflict theirs` then settled by dropping the user's work.
            // The operations stay in flight.
            throw endpoint.unexplained(
                "it answered the batch with HTTP \(response.status) (\(response.errorMessage ?? "no sync server's error body"))",
                operations: operations.count)
        }
        // tsync serve's answer, read from its bytes; any other (or one the reader is unsure of) parsed.
        if response.status == 200,
            let (answers, asSent) = try BatchResults.read(
                response.body, to: operations, sentItems: { index in items[index].map { body[$0] } }, endpoint: endpoint)
        {
            return .answers(answers, fieldsAsSent: asSent)
        }
        if response.status == 200 { response.parse() }
        guard response.status == 200, case .array(let results)? = response.json?.objectValue?["results"] else {
            // The server may have applied the batch; its answer is unreadable. The operations
            // stay in flight and the next push learns their fate.
            if !response.isJSON && response.hasBody { throw notASyncServer(response, instead: "the batch's results") }
            throw Unanswered.unreadableBatch(endpoint, status: response.status).error
        }
        return .answers(try BatchResults.match(results, to: operations, endpoint: endpoint))
    }

    // MARK: - Transport

    /// Turns an HTTP answer into a `RemoteAnswer`; accepts what other Mobile Apps servers do
    /// (204 with no body, `version` only in the `ETag`). A success whose body is not JSON at all
    /// (an HTML page from a captive portal or a proxy) is not an answer of a sync server: it is
    /// thrown as `.unreachable`, so the operation stays queued (docs/DESIGN.md §2.4, §4).
    private func answer(_ response: HTTPAnswer) throws(TSyncError) -> RemoteAnswer {
        // A body labelled JSON that does not parse (damaged, or HTML labelled JSON) is read back
        // instead: the read-back tells whether the write was applied (`Pusher.verified`).
        if (200..<300).contains(response.status), response.json == nil, response.hasBody, !response.isJSON {
            throw notASyncServer(response, instead: "a JSON record")
        }
        var record: Record?
        if let object = response.json?.objectValue, let parsed = try? Record(wire: object) {
            record = parsed
            if record?.system.version == nil, let tag = response.headers.first(name: "ETag") {
                record?.system.version = EntityTag.version(from: tag)
            }
        }
        if (200..<300).contains(response.status) {
            return .accepted(status: response.status, record: record)
        }
        return .rejected(
            status: response.status,
            message: response.errorMessage ?? "HTTP \(response.status)",
            serverRecord: record)
    }

    func send(
        _ method: HTTPMethod, _ url: String, body: JSONValue?, ifMatch: String? = nil, authenticated: Bool = true,
        discovering: Bool = false
    ) async throws(TSyncError) -> HTTPAnswer {
        try await send(
            method, url, bytes: body.map { JSONSerializer.bytes($0) }, ifMatch: ifMatch, authenticated: authenticated,
            discovering: discovering)
    }

    func send(
        _ method: HTTPMethod, _ url: String, bytes body: [UInt8]?, ifMatch: String? = nil, authenticated: Bool = true,
        discovering: Bool = false, prefer: String? = nil, parsesSuccess: Bool = true, streams: Bool = false,
        headed: (@Sendable (HTTPHeaders) -> Void)? = nil
    ) async throws(TSyncError) -> HTTPAnswer {
        // Nothing is written to a remote before it has shown itself a sync server (`ServerCheck`):
        // push checks in its discovery; this catches every other write (login, logout).
        if method != .GET, !serverCheck.isProven { _ = try await proveServer() }
        var answer: HTTPAnswer
        var asked = 0
        while true {
            let token = EchoCheck.token()
            let request = request(method, url, body: body, ifMatch: ifMatch, authenticated: authenticated, prefer: prefer, echo: token)
            asked += 1
            if let answered = try await exchange(request, bytesSent: body?.count ?? 0, echo: token, streams: streams, headed: headed) {
                answer = answered
                break
            }
            // Another request's answer (`EchoCheck`): a read is asked again, as a cache that
            // keys its answers wrongly may answer right the next time; a write is not sent twice.
            guard method == .GET, asked < Self.echoAttempts else {
                // Only a table's write leaves operations queued; a login's is simply tried again.
                let path = Self.path(of: url)
                throw Unanswered.anotherRequests(
                    endpoint, request: "\(method.rawValue) \(path)", asked: asked, write: method != .GET && path.contains("/tables/")
                )
                .error
            }
        }
        // A page's 200 is read by its caller, most often without a `JSONValue` (`readStoredPage`).
        if parsesSuccess || answer.status != 200 { answer.parse() }
        try screen(answer, method: method, url: url, authenticated: authenticated, discovering: discovering)
        return answer
    }

    /// How many times a read is asked whose answers are other requests' (`EchoCheck`).
    static let echoAttempts = 3

    /// The request as the protocol sends it: its version, the token, `If-Match`, the body, and the
    /// token its answer must echo (`EchoCheck`).
    private func request(
        _ method: HTTPMethod, _ url: String, body: [UInt8]?, ifMatch: String?, authenticated: Bool, prefer: String?, echo: String
    ) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url)
        if let prefer { request.headers.add(name: "Prefer", value: prefer) }
        request.method = method
        request.headers.add(name: "ZUMO-API-VERSION", value: "2.0.0")
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: EchoCheck.header, value: echo)
        // A cache that follows HTTP asks the server again; one that does not is caught by the echo.
        if method == .GET { request.headers.add(name: "Cache-Control", value: "no-cache") }
        if authenticated, let token {
            request.headers.add(name: "X-ZUMO-AUTH", value: token)
        }
        if let ifMatch {
            request.headers.add(name: "If-Match", value: EntityTag.quoted(ifMatch))
        }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        return request
    }

    /// One exchange, its answer's body read whole (not parsed), told to the observer; a failure
    /// before an answer is thrown in words (`failedExchange`). Nil, its body unread, when the
    /// answer is another request's (it echoes a token other than `echo`: `EchoCheck`).
    /// `headed` sees a 200's headers before its body is read. With `streams`, a 200 that says it is
    /// a stream (`Preference-Applied: …, stream`) is returned with its body unread, as `lines`.
    private func exchange(
        _ request: HTTPClientRequest, bytesSent: Int, echo: String, streams: Bool = false,
        headed: (@Sendable (HTTPHeaders) -> Void)? = nil
    ) async throws(TSyncError) -> HTTPAnswer? {
        // One deadline for the whole exchange, body included: a server that sends its headers at
        // once and then a byte every few seconds must not hold a command for minutes (docs/DESIGN.md §8).
        let deadline = NIODeadline.now() + timeout
        let response: HTTPClientResponse
        // The body is gathered straight into the array the answer keeps: gathered into a
        // `ByteBuffer` first, each page of a pull was copied twice.
        var bytes: [UInt8] = []
        let started = ContinuousClock.now
        var answered: Int?
        var lines: PageLines?
        let (observer, proxy, method, url) = (observer, proxy?.description, request.method.rawValue, request.url)
        let report: @Sendable (_ status: Int?, _ received: Int) -> Void = { status, received in
            observer?(
                RemoteExchange(
                    method: method, url: url, proxy: proxy, status: status, bytesSent: bytesSent, bytesReceived: received,
                    duration: ContinuousClock.now - started))
        }
        // A stream's exchange is told when it ends (`PageLines`).
        defer { if lines == nil { report(answered, bytes.count) } }
        do {
            response = try await http.execute(request, deadline: deadline)
            answered = Int(response.status.code)
            guard EchoCheck.answers(echo, headers: response.headers) else { return nil }
            if response.status == .ok { headed?(response.headers) }
            if streams, response.status == .ok, LiveWaitHeader.streamed(response.headers.first(name: "Preference-Applied")) {
                lines = PageLines(response, deadline: deadline) { received in report(200, received) }
                var answer = HTTPAnswer(status: 200, headers: response.headers, json: nil)
                answer.lines = lines
                return answer
            }
            // Room for the length the server names, up to 8 MiB (a page is a few hundred KB): a
            // hostile server could name the whole limit and send nothing.
            if let length = response.headers.first(name: "Content-Length").flatMap(Int.init), length > 0 {
                bytes.reserveCapacity(min(length, 8 << 20))
            }
            for try await chunk in response.body {
                guard NIODeadline.now() <= deadline else { throw HTTPClientError.deadlineExceeded }
                guard bytes.count + chunk.readableBytes <= Self.maximumAnswerBytes else {
                    throw TSyncError(
                        .failure, "the server's answer is larger than \(Self.maximumAnswerBytes >> 20) MiB", remedy: .smallerPages)
                }
                bytes.append(contentsOf: chunk.readableBytesView)
            }
        } catch let error as TSyncError {
            throw error
        } catch {
            var failure = await failedExchange(error)
            failure.noAnswer = ConnectionFailure.undecodable(error) == nil
            throw failure
        }
        var answer = HTTPAnswer(status: Int(response.status.code), headers: response.headers, json: nil)
        answer.body = bytes
        return answer
    }

    /// Throws for an answer that is no answer to the request, whatever was asked: "not now", a
    /// redirect, a refused token, or a sign that no v2 route is at the URL.
    private func screen(
        _ answer: HTTPAnswer, method: HTTPMethod, url: String, authenticated: Bool, discovering: Bool
    ) throws(TSyncError) {
        let status = answer.status
        // "Not now" from the server or a gateway: like an unreachable server, nothing is recorded
        // as failed; what was sent stays in flight (a 504 may still have been applied). 429 is
        // "not now" too, and says the request was refused, so nothing was applied;
        // the login route words its own 429 (too many failed logins).
        if [502, 503, 504].contains(status) || (status == 429 && authenticated) {
            let retry = RetryAfter(answer.headers).map { " (\($0))" } ?? ""
            // The server's own words when it gives them ("too many open connections").
            let said = answer.errorMessage.map { " (it said \(Identifiers.quoted($0)))" } ?? ""
            let why = (status == 429 ? "too many requests" : "it cannot serve now") + said
            throw Unanswered.notNow(
                fact: "the server at \(endpoint) answered HTTP \(status): \(why)\(retry)", neverSent: status == 429
            ).error
        }
        // A sync server never redirects (and redirects are not followed): a captive portal or a
        // login page of a proxy is in the way.
        if (300..<400).contains(status) {
            throw Unanswered.redirected(
                endpoint, request: "\(method.rawValue) \(Self.path(of: url))", target: answer.headers.first(name: "Location")
            ).error
        }
        if status == 401 && authenticated {
            throw TSyncError(
                .unauthorized,
                token == nil
                    ? "the server at \(endpoint) requires a login"
                    : "the server at \(endpoint) refused the token: it is not known to this server (expired, revoked, or minted for another database)",
                remedy: .logIn)
        }
        if let failure = notTheProtocol(answer, method: method, url: url, discovering: discovering) { throw failure }
    }

    /// The error for an exchange that ended without an answer tsync could read.
    private func failedExchange(_ error: any Error) async -> TSyncError {
        if let proxy, let failure = Self.proxyFailure(error, proxy: proxy, endpoint: endpoint) { return failure }
        if let hostnameOnly = ConnectionFailure.refusedCertificate(error) {
            // Expired, not yet valid, for other names or from an unknown CA: a second look at
            // the chain tells which (the handshake's error does not).
            return await CertificateDiagnosis.error(endpoint: endpoint, hostnameOnly: hostnameOnly, trust: trust, proxy: proxy)
        }
        return ConnectionFailure.error(error, endpoint: endpoint)
    }

    /// An answer that says no v2 route is at this URL, so the remote is not a sync server (or not
    /// at that path): tsync's own "no such endpoint" 404, or a 404, 405 or 501 whose body is not
    /// JSON (a static web server's page). Thrown as `.unreachable`, before any answer is taken for
    /// an operation's: nothing goes into the error table, what was sent stays in flight. A v2
    /// server's own 404 for an item carries JSON or nothing, and stays an answer.
    private func notTheProtocol(_ answer: HTTPAnswer, method: HTTPMethod, url: String, discovering: Bool) -> TSyncError? {
        let noSuchEndpoint = answer.status == 404 && answer.errorMessage?.hasPrefix("no such endpoint") == true
        let foreignPage = [404, 405, 501].contains(answer.status) && answer.hasBody && !answer.isJSON && !discovering
        guard noSuchEndpoint || foreignPage else { return nil }
        return notASyncServer(answer, method: method, url: url, sentNothing: false)
    }

    /// The remote is not a sync server, or not at that path: what it answered to which request, in
    /// a few words. `sentNothing` when said by the check before any write (`ServerCheck`), so
    /// nothing can have been applied; otherwise a write may have gone before this answer.
    func notASyncServer(_ answer: HTTPAnswer, method: HTTPMethod, url: String, sentNothing: Bool) -> TSyncError {
        let type = answer.headers.first(name: "Content-Type").map { ", \($0)" } ?? ""
        var excerpt = String(decoding: answer.body.prefix(160), as: UTF8.self)
            .split(whereSeparator: { $0.isNewline }).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        if excerpt.count > 80 { excerpt = String(excerpt.prefix(80)) + "…" }
        var said = answer.hasBody ? ": \(Identifiers.quoted(excerpt))" : ", no body"
        // A page with 200 where the protocol's JSON belongs: something answers for every URL.
        if (200..<300).contains(answer.status) { said += "; a captive portal or a proxy?" }
        let answered = "\(method.rawValue) \(Self.path(of: url)) with HTTP \(answer.status)\(type)\(said)"
        return Unanswered.notASyncServer(endpoint, answered: answered, sentNothing: sentNothing).error
    }

    /// A success answer that no sync server gives: the request reached something else.
    private func notASyncServer(_ response: HTTPAnswer, instead what: String) -> TSyncError {
        let type = response.headers.first(name: "Content-Type") ?? "no content type"
        return Unanswered.notJSON(endpoint, status: response.status, contentType: type, instead: what).error
    }

    /// The path of a URL, for messages (the query may be long).
    private static func path(of url: String) -> String {
        guard let components = URLComponents(string: url) else { return url }
        return components.percentEncodedPath
    }

    /// A failed exchange that the proxy, not the server, is the cause of: the proxy cannot be
    /// reached, wants credentials or will not open the tunnel. The request never reached the server.
    private static func proxyFailure(_ error: any Error, proxy: RemoteProxy, endpoint: RemoteEndpoint) -> TSyncError? {
        let what: String
        if failedToConnect(error) {
            what = "cannot reach the proxy \(proxy) (\(ConnectionFailure.words(error)))"
        } else if let error = error as? HTTPClientError, error == .proxyAuthenticationRequired {
            what = "the proxy \(proxy) asks for credentials (HTTP 407)\(proxy.username == nil ? "" : " and refused the ones given")"
        } else if let error = error as? HTTPClientError, error == .invalidProxyResponse {
            what = "the proxy \(proxy) refused to open a tunnel to \(endpoint.origin) (some proxies tunnel only to port 443)"
        } else if let error = error as? HTTPClientError, error == .httpProxyHandshakeTimeout {
            what = "the proxy \(proxy) did not open a tunnel to \(endpoint.origin) in time"
        } else {
            return nil
        }
        return Unanswered.proxyFailed(fact: what).error
    }

    /// The largest answer read into memory (a page of a pull, mostly).
    static let maximumAnswerBytes = 256 << 20

    /// Whether the exchange failed before a connection existed, so no byte of the request was sent.
    static func failedToConnect(_ error: any Error) -> Bool {
        if let error = error as? HTTPClientError, error == .connectTimeout { return true }
        if error is NIOConnectionError { return true }
        if let error = error as? IOError {
            return [ECONNREFUSED, ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL].contains(error.errnoCode)
        }
        return false
    }
}

/// An HTTP answer as the protocol layer sees it.
struct HTTPAnswer {
    var status: Int
    var headers: HTTPHeaders
    var json: JSONValue?

    /// The body as it came.
    var body: [UInt8] = []
    /// A streamed answer's lines, its body unread (`RemoteClient.exchange`).
    var lines: PageLines?

    /// Whether the answer had a body at all.
    var hasBody: Bool { !body.isEmpty }

    /// Whether the body says it is JSON (whether or not it parsed).
    var isJSON: Bool {
        headers.first(name: "Content-Type").map { $0.lowercased().contains("json") } ?? false
    }

    /// Why the body did not parse as JSON, when it did not (the reader's message, with its position).
    var jsonError: TSyncError?

    /// Reads the body as JSON: `json`, or `jsonError` saying where the reader stopped.
    mutating func parse() {
        guard !body.isEmpty else { return }
        do throws(TSyncError) {
            json = try JSONParser.parse(bytes: body)
        } catch {
            jsonError = error
        }
    }

    /// The `{"error": "..."}` message of Mobile Apps error bodies.
    var errorMessage: String? {
        guard let object = json?.objectValue else { return nil }
        return object["error"]?.stringValue ?? object["message"]?.stringValue
    }
}

/// What the server said to one write.
package enum RemoteAnswer: Sendable, Equatable {
    /// 2xx; the server's copy of the item when it sent one (a 204 carries none).
    case accepted(status: Int, record: Record?)
    /// Any other status: the operation failed on its own; `serverRecord` is the server's copy when
    /// it sent one (409, 412).
    case rejected(status: Int, message: String, serverRecord: Record?)
}

/// The server's batch route, as `GET /tables/$batch` describes it.
package struct BatchCapabilities: Sendable, Equatable {
    /// The most operations one batch may hold.
    package var maxOperations: Int
    /// The most bytes one batch body may hold.
    package var maxBytes: Int
    /// The most bytes one item of a batch may hold.
    package var maxItemBytes: Int
    /// Whether the server applies a batch all or nothing on request (`push --atomic`).
    package var atomic: Bool
}

/// One write of a batch, as the single route would take it.
package struct BatchOperation: Sendable {
    /// The HTTP method the operation stands for.
    package enum Method: String, Sendable {
        case insert = "POST"
        case update = "PATCH"
        case delete = "DELETE"
    }

    /// Insert (POST), update (PATCH) or delete (DELETE).
    package var method: Method
    /// The item's table.
    package var table: String
    /// The item's id.
    package var id: String
    /// The item of an insert or update.
    package var item: [String: JSONValue]?
    /// The version for `If-Match`.
    package var version: String?

    var json: JSONValue {
        var object: [String: JSONValue] = ["method": .string(method.rawValue), "table": .string(table)]
        if method != .insert { object["id"] = .string(id) }
        if let item { object["item"] = .object(item) }
        if let version { object["ifMatch"] = .string(EntityTag.quoted(version)) }
        return .object(object)
    }

    /// Appends the operation as it goes into a batch body: the bytes `JSONSerializer` writes for
    /// `json` (its members in the serializer's order: id, ifMatch, item, method, table). Returns
    /// where the item's bytes are in `output`, which the answer's record is compared with
    /// (`BatchResults.read`).
    @discardableResult
    func write(to output: inout [UInt8]) -> Range<Int>? {
        output.append(UInt8(ascii: "{"))
        if method != .insert {
            output.append(contentsOf: #""id":"#.utf8)
            JSONSerializer.writeString(id, to: &output)
            output.append(UInt8(ascii: ","))
        }
        if let version {
            output.append(contentsOf: #""ifMatch":"#.utf8)
            JSONSerializer.writeString(EntityTag.quoted(version), to: &output)
            output.append(UInt8(ascii: ","))
        }
        var itemRange: Range<Int>?
        if let item {
            output.append(contentsOf: #""item":"#.utf8)
            let start = output.count
            JSONSerializer.write(.object(item), to: &output)
            itemRange = start..<output.count
            output.append(UInt8(ascii: ","))
        }
        output.append(contentsOf: #""method":"#.utf8)
        JSONSerializer.writeString(method.rawValue, to: &output)
        output.append(contentsOf: #","table":"#.utf8)
        JSONSerializer.writeString(table, to: &output)
        output.append(UInt8(ascii: "}"))
        return itemRange
    }

    /// The operation as it goes into a batch body.
    package var encoded: [UInt8] {
        var bytes: [UInt8] = []
        write(to: &bytes)
        return bytes
    }

    /// Its size in a batch body, to keep batches under the server's byte limit.
    package var encodedSize: Int { encoded.count + 1 }
}

/// The server's answer to a batch: an answer per operation, or the whole batch refused as too large.
package enum BatchReply: Sendable, Equatable {
    /// One answer per operation, in order; `fieldsAsSent`: the positions of the answers whose
    /// record's user fields are, byte for byte, the item sent (`BatchResults.sameFields`), which
    /// a push then neither checks nor compares again.
    case answers([RemoteAnswer], fieldsAsSent: Set<Int> = [])
    /// 413: the batch holds too many operations or bytes for the server.
    case tooLarge(String)
}

/// One GET of a table.
package struct PageRequest: Sendable {
    /// The table to read.
    package var table: String
    /// `$filter`, OData as the server takes it.
    package var filter: String?
    /// `$orderby`.
    package var orderBy: String?
    /// `$top`: the most records in the page.
    package var top: Int?
    /// `$skip`: records passed over first.
    package var skip: Int?
    /// `__includeDeleted`: soft-deleted records too (a pull needs them to remove local copies).
    package var includeDeleted: Bool
    /// A `Link: rel=next` URL from the previous page; when set it is used as is.
    package var nextLink: String?
    /// Ask for the number of matching records over all pages (`$inlinecount=allpages`): the
    /// answer is then `{"results": [...], "count": N}` (`Page.totalCount`).
    package var inlineCount = false
    /// Seconds the server may hold the request while the page would be empty (`Prefer: wait=N`,
    /// the live route, docs/DESIGN.md §8.1); nil asks for no wait.
    package var wait: Int?

    /// A page request of `table`.
    package init(
        table: String, filter: String? = nil, orderBy: String? = nil, top: Int? = nil, skip: Int? = nil,
        includeDeleted: Bool = true, nextLink: String? = nil
    ) {
        self.table = table
        self.filter = filter
        self.orderBy = orderBy
        self.top = top
        self.skip = skip
        self.includeDeleted = includeDeleted
        self.nextLink = nextLink
    }

    var queryItems: [(String, String)] {
        var items: [(String, String)] = []
        if let filter { items.append(("$filter", filter)) }
        if let orderBy { items.append(("$orderby", orderBy)) }
        if let top { items.append(("$top", String(top))) }
        if let skip { items.append(("$skip", String(skip))) }
        if includeDeleted { items.append(("__includeDeleted", "true")) }
        if inlineCount { items.append(("$inlinecount", "allpages")) }
        return items
    }
}

/// One page of records read from the server.
package struct Page: Sendable {
    /// The page's records.
    package var records: [Record]
    /// The server's `Link` to the next page, as sent: only a pull without a query id follows it,
    /// once `RemoteEndpoint.nextPage` has checked it; nil on the last.
    package var nextLink: String?
    /// The server's count of the matching records over all pages, when it was asked and told.
    package var totalCount: Int?
    /// For a request with `wait`: the seconds the server says it applied (`Preference-Applied:
    /// wait=N`), nil when it said nothing, as a plain v2 server does.
    package var waitApplied: Int?
    /// The answer's `Date` (the server's clock), nil when absent or not an HTTP date: it bounds
    /// the checkpoint (`Checkpoint.bound`).
    package var serverDate: Timestamp? = nil
    /// The server removed the soft-deleted records up to this `updatedAt` (`X-TSync-Deleted-Horizon`,
    /// docs/DESIGN.md §15); nil from a server that says nothing of it.
    package var deletedHorizon: Timestamp? = nil
    /// The tag of the table's schema (`X-TSync-Schema`, docs/DESIGN.md §16); nil from a server
    /// that has none for it, or none at all.
    package var schemaTag: String? = nil
    /// The largest `$top` the server takes (`X-TSync-Max-Top`, docs/DESIGN.md §4); nil from a
    /// server that does not say.
    package var maximumTop: Int? = nil
}

/// `Preference-Applied: wait=N`, read.
enum LiveWaitHeader {
    /// Whether `Preference-Applied` says the answer is a stream (`PageLines`).
    static func streamed(_ value: String?) -> Bool {
        value?.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces).lowercased() == "stream" } ?? false
    }

    static func applied(_ value: String?) -> Int? {
        guard let value else { return nil }
        for part in value.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2, pair[0].lowercased() == "wait", let seconds = Int(pair[1]), seconds >= 0 { return seconds }
        }
        return nil
    }
}
