import Logging
import NIOCore
import PostgresNIO
import Synchronization
import TSyncModel
import TSyncTransport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A pool of connections to one PostgreSQL database, with the schema brought up to date.
///
/// Obtained only through `withDatabase`, which runs the pool for exactly as long as its body:
/// PostgresNIO needs `PostgresClient.run()` to be running while queries are made, and a scope
/// makes it impossible to forget to stop it.
final class PostgresDatabase: Sendable {
    let url: PostgresURL
    private let client: PostgresClient
    let logger: Logger
    /// Every statement's limit (`statement_timeout`, set when each connection opens); nil for none.
    let statementTimeoutSeconds: Int?
    /// The pool's connections, shared between clients (`ReadShares`, docs/DESIGN.md §10.1).
    let shares: ReadShares
    /// What each transaction sets for itself (`set_config(…, true)`, as `SET LOCAL`); nil for
    /// nothing. Not startup parameters: a pooler such as PgBouncer refuses them or drops them, and
    /// in transaction pooling a setting of the session would stay with whichever server connection
    /// ran it, for another client.
    private let settings: PostgresStatement?
    /// Begins each statement's text (`/*tsync 1f3a-17*/`), unique to one use of a connection: how a
    /// cancel finds the statement in `pg_stat_activity` whichever server process runs it.
    private let tagPrefix = "/*tsync " + String(UInt64.random(in: 0...UInt64.max), radix: 16) + "-"
    private let uses = Atomic<UInt64>(0)
    /// `GET /ready`'s looks (`checkReady`), and the session they look through.
    let readiness = ReadinessCheck()
    let readinessSession = ReadinessSession()

    private init(url: PostgresURL, client: PostgresClient, logger: Logger, statementTimeoutSeconds: Int?, maximumConnections: Int) {
        self.url = url
        self.client = client
        self.logger = logger
        self.statementTimeoutSeconds = statementTimeoutSeconds
        shares = ReadShares(connections: maximumConnections)
        if let statementTimeoutSeconds {
            // Stops a query the server would otherwise finish for nobody (docs/DESIGN.md §10).
            // A transaction left open between its statements (an instance stalled mid-write)
            // holds its write floor, and pull-shaped reads stop below it until it ends
            // (docs/DESIGN.md §10): PostgreSQL ends it after the same time.
            var settings = PostgresStatement("SELECT set_config('statement_timeout', ")
            let milliseconds = settings.bind("\(statementTimeoutSeconds * 1000)")
            settings.append("\(milliseconds), true), set_config('idle_in_transaction_session_timeout', \(milliseconds), true)")
            self.settings = settings
        } else {
            settings = nil
        }
    }

    /// Connects, creates or upgrades the schema (`migrations`, normally `PostgresSchema.migrations`;
    /// nil leaves the database as it is), runs `body`, and closes the connections however `body` ends.
    @discardableResult
    static func withDatabase<Result: Sendable>(
        url: PostgresURL, maximumConnections: Int = 20, migrations: [PostgresMigration]? = PostgresSchema.migrations,
        statementTimeoutSeconds: Int? = nil, logger: Logger = Logger(label: "tsync.postgres"),
        _ body: @Sendable (PostgresDatabase) async throws -> Result
    ) async throws -> Result {
        let configuration = url.clientConfiguration(maximumConnections: maximumConnections)
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let database = PostgresDatabase(
            url: url, client: client, logger: logger, statementTimeoutSeconds: statementTimeoutSeconds,
            maximumConnections: maximumConnections)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            try await database.waitUntilReachable()
            if let migrations { try await PostgresSchema.migrate(database, migrations: migrations) }
            do {
                let result = try await body(database)
                await database.readinessSession.close()
                return result
            } catch {
                await database.readinessSession.close()
                throw error
            }
        }
    }

    // MARK: - Statements

    /// Runs one statement in a transaction of its own and returns its rows.
    @discardableResult
    func rows(_ statement: PostgresStatement) async throws -> [PostgresRow] {
        do {
            return try await withConnection { transaction in try await transaction.alone(statement.query) }
        } catch {
            throw translated(error)
        }
    }

    /// Runs `statement` in no transaction, for what PostgreSQL refuses in one (`CREATE DATABASE`,
    /// `VACUUM`): without the transaction's settings (`rows`).
    func untransacted(_ statement: PostgresStatement) async throws {
        do {
            try await withConnection { transaction in try await transaction.execute(statement) }
        } catch {
            throw translated(error)
        }
    }

    /// Runs `statement` (a PL/pgSQL function's call) in a transaction of its own and gives its rows
    /// to `body`, on the connection's time. The statement is not prepared on the server: a named
    /// statement would stay with one server connection, which a transaction pooler gives to
    /// another client after each transaction.
    func call<Statement: PostgresPreparedStatement, Result: Sendable>(
        _ statement: Statement, _ body: ([Statement.Row]) throws -> Result
    ) async throws -> Result {
        do {
            return try await withConnection { transaction in
                do {
                    let query = PostgresQuery(unsafeSQL: Statement.sql, binds: try statement.makeBindings())
                    return try body(try await transaction.alone(query).map(statement.decodeRow))
                } catch {
                    // A look at the writers (`tsync_pull_page`) that failed between taking their
                    // lock and letting it go must not leave it with the server connection.
                    _ = try? await transaction.rows(PostgresStatement("SELECT pg_advisory_unlock_all()"))
                    throw error
                }
            }
        } catch {
            throw translated(error)
        }
    }

    /// Runs `body` in one transaction on one connection. The transaction commits when `body`
    /// returns `.commit`, and rolls back when it returns `.rollback` or throws.
    /// - Parameter readOnly: `body` writes nothing (a pull-shaped page): `BEGIN` and `COMMIT` are
    ///   queued on the connection and not waited for, sparing the request two of its four waits
    ///   (PostgresNIO runs a connection's statements in the order they were sent). Were `BEGIN`
    ///   to fail, the statements would each run alone, each with its own snapshot, which is all a
    ///   page's cap needs (docs/DESIGN.md §10); a write transaction waits for both.
    func transaction<Result: Sendable>(
        readOnly: Bool = false, _ body: (PostgresTransaction) async throws -> PostgresTransaction.Outcome<Result>
    ) async throws -> Result {
        do {
            return try await withConnection { transaction in
                try await transaction.begin(waiting: !readOnly)
                let outcome: PostgresTransaction.Outcome<Result>
                do {
                    outcome = try await body(transaction)
                } catch {
                    // The original error matters more than a failed rollback; a broken connection
                    // is discarded by the pool anyway.
                    _ = try? await transaction.execute(PostgresStatement("ROLLBACK"))
                    // A pull's look at the writers takes a session lock and lets it go in the same
                    // statement (`WriteFloor.pullCap`); should that statement fail in between, the
                    // lock must not stay with the connection and keep the table's writers out.
                    _ = try? await transaction.execute(PostgresStatement("SELECT pg_advisory_unlock_all()"))
                    throw error
                }
                switch outcome {
                case .commit(let value) where readOnly:
                    transaction.send(PostgresStatement("COMMIT"))
                    return value
                case .commit(let value):
                    try await transaction.execute(PostgresStatement("COMMIT"))
                    return value
                case .rollback(let value):
                    try await transaction.execute(PostgresStatement("ROLLBACK"))
                    return value
                }
            }
        } catch {
            throw translated(error)
        }
    }

    // MARK: - Connection and errors

    /// A connection of the pool for `body`, in a share of the current client's (`ReadShares`).
    /// When the task is cancelled (its client left, or its deadline passed: `QueryDeadline`)
    /// while `body` runs, the statement is cancelled in the database as well (PostgresNIO only
    /// stops waiting for it). The cancel names the statement by its tag, not by a server process:
    /// behind a transaction pooler the process that ran one statement may run another client's
    /// next, and a statement that has ended by the time the cancel comes is not cancelled.
    private func withConnection<Result: Sendable>(_ body: (PostgresTransaction) async throws -> Result) async throws -> Result {
        try await shares.run {
            try await client.withConnection { connection in
                QueryDeadline.wait?.reached()
                let tag = tagPrefix + String(uses.add(1, ordering: .relaxed).newValue, radix: 16) + "*/ "
                let transaction = PostgresTransaction(connection: connection, logger: logger, tag: tag, settings: settings)
                let cancel = Mutex<(done: Bool, sent: Task<Void, Never>?)>((false, nil))
                let result: Swift.Result<Result, any Error>
                do {
                    result = .success(
                        try await withTaskCancellationHandler {
                            try await body(transaction)
                        } onCancel: {
                            cancel.withLock { state in
                                guard !state.done, state.sent == nil else { return }
                                state.sent = Task { [client, logger] in
                                    var statement = PostgresStatement("SELECT pg_cancel_backend(pid) FROM pg_stat_activity ")
                                    statement.append("WHERE state = 'active' AND pid <> pg_backend_pid() ")
                                    statement.append(
                                        "AND left(query, \(statement.bind(Int64(tag.utf8.count)))::integer) = \(statement.bind(tag))")
                                    // Not `client.query`: it writes on the connection it leases without a
                                    // look, and one that closed meanwhile would hold the request for ever.
                                    _ = try? await client.withConnection { connection in
                                        _ = try await connection.sentIfOpen(statement.query, logger: logger).get()
                                    }
                                }
                            }
                        })
                } catch {
                    result = .failure(error)
                }
                let sent = cancel.withLock { state in
                    state.done = true
                    return state.sent
                }
                await sent?.value
                return try result.get()
            }
        }
    }

    /// Opens and closes one connection outside the pool, so that a wrong host, password or
    /// database name fails at once with PostgreSQL's reason; the pool would only retry and log.
    private func waitUntilReachable() async throws {
        do {
            let connection = try await PostgresConnection.connect(
                configuration: try url.connectionConfiguration(), id: 0, logger: logger)
            try await connection.close()
        } catch {
            throw translated(error)
        }
    }

    /// A cause under a PostgresNIO connection error, in words that are never its generic text.
    private static func words(_ cause: any Error) -> String {
        guard let inner = cause as? PSQLError else { return String(describing: cause) }
        if let message = inner.serverInfo?[.message] {
            return message + (inner.serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? "")
        }
        return "\(inner.code)"
    }

    /// The cause, in words, when `error` says PostgreSQL ended a connection that was open (the
    /// server's message, or "" when it gave none); nil for any other error, among them a connect
    /// that failed, which is "cannot reach". A session ended by `pg_terminate_backend` or a restart
    /// is not a server that does not run, and the next connection may well work.
    static func ended(_ error: any Error) -> String? {
        if error is PostgresConnectionClosed { return "" }
        guard let error = error as? PSQLError else { return nil }
        if error.code == .server, let sqlState = error.serverInfo?[.sqlState] {
            // admin_shutdown (also `pg_terminate_backend`), crash_shutdown
            guard sqlState == "57P01" || sqlState == "57P02" else { return nil }
            return words(error)
        }
        let cause = error.underlying.map { TransportFailure.words($0) ?? words($0) } ?? ""
        switch error.code {
        case .serverClosedConnection, .uncleanShutdown:
            return cause
        case .connectionError:
            // A reset or a broken pipe of an open connection; a connect's failure is something else.
            guard let io = error.underlying as? IOError, io.errnoCode == ECONNRESET || io.errnoCode == EPIPE else { return nil }
            return cause
        default:
            return nil
        }
    }

    /// Makes a PostgresNIO error into one an operator can act on. Messages carry the server's
    /// wording but never the SQL text or a bound value.
    func translated(_ error: any Error) -> any Error {
        if let ended = Self.ended(error) { return DatabaseConnectionEnded(url: url, cause: ended) }
        if error is TSyncError || error is CancellationError || error is PostgresServerError || error is QueryTimedOut
            || error is DatabaseConnectionEnded
        {
            return error
        }
        if let error = error as? PostgresDecodingError {
            // Its description is PostgresNIO's generic one; its data is a record's: neither is said.
            return TSyncError.failure(
                "PostgreSQL at \(url): column \(error.columnName) (\(error.postgresType)) cannot be read as \(error.targetType)")
        }
        guard let error = error as? PSQLError else {
            return TSyncError.failure("PostgreSQL at \(url): \(error)")
        }
        if error.code == .server, let sqlState = error.serverInfo?[.sqlState] {
            let message = error.serverInfo?[.message] ?? "error \(sqlState)"
            switch sqlState {
            case "57014":  // query_canceled: statement_timeout
                return QueryTimedOut(seconds: statementTimeoutSeconds)
            case "25006":  // read_only_sql_transaction
                return TSyncError.failure(
                    "PostgreSQL at \(url) takes no writes: \(message) (SQLSTATE 25006): this is a read-only replica (hot standby), "
                        + "or the database is read-only (default_transaction_read_only): point --db at the primary")
            case "3D000":
                return TSyncError.failure("PostgreSQL at \(url): \(message): create it first (createdb \(url.database))")
            case _ where sqlState.hasPrefix("28"):
                return TSyncError.failure(
                    "PostgreSQL at \(url) refused the login: \(message): check the user and password (in the URL or PGPASSWORD)")
            case _ where sqlState.hasPrefix("08") || sqlState.hasPrefix("57P") || sqlState == "53300":
                return TSyncError.failure("PostgreSQL at \(url) is not available: \(message)")
            default:
                return PostgresServerError(sqlState: sqlState, message: message, url: url)
            }
        }
        switch error.code {
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .poolClosed, .uncleanShutdown:
            // swift-nio's reason, never its types' names; PostgresNIO's own, as it words it (a
            // PSQLError's description is a generic text: one underneath, as a connection the
            // server terminated, is said by the server's message, else by its code).
            let cause = error.underlying.map { ": " + (TransportFailure.words($0) ?? Self.words($0)) } ?? ""
            return TSyncError.failure("cannot reach PostgreSQL at \(url)\(cause): check that the server runs and that the URL is right")
        case .sslUnsupported:
            return TSyncError.failure(
                "PostgreSQL at \(url) does not offer TLS: add ?sslmode=disable to the URL, or enable ssl on the server")
        case .authMechanismRequiresPassword:
            return TSyncError.failure("PostgreSQL at \(url) asks for a password: put it in the URL or in PGPASSWORD")
        case .tooManyParameters:
            return TSyncError.invalidInput("the request needs more query parameters than PostgreSQL accepts: make the $filter shorter")
        default:
            return TSyncError.failure("PostgreSQL at \(url): \(error.code)")
        }
    }
}

/// An error the PostgreSQL server reported for a statement, with its SQLSTATE so that callers
/// can tell a client's bad value (class 22) from a fault of the server.
struct PostgresServerError: Error, CustomStringConvertible {
    var sqlState: String
    var message: String
    var url: PostgresURL

    var description: String { "PostgreSQL at \(url): \(message) (SQLSTATE \(sqlState))" }

    /// A unique constraint was violated.
    var isUniqueViolation: Bool { sqlState == "23505" }
    /// The transaction was chosen to end a deadlock.
    var isDeadlock: Bool { sqlState == "40P01" }
    /// A value could not be stored or compared (e.g. `\u0000` in jsonb, a NUL in text).
    var isDataException: Bool { sqlState.hasPrefix("22") }
    /// The statement is beyond a limit of the server (e.g. expression nesting).
    var isProgramLimit: Bool { sqlState.hasPrefix("54") }
}

/// The connection had closed when a statement was to be sent on it (`sentIfOpen`).
struct PostgresConnectionClosed: Error {}

/// PostgreSQL ended a connection that was open (`PostgresDatabase.ended`): the server runs, and
/// the work may well succeed when tried again, so a request is answered 503, "not now", which a
/// client sends again, not 500.
struct DatabaseConnectionEnded: Error, CustomStringConvertible {
    var url: PostgresURL
    /// PostgreSQL's words, or "" when it gave none.
    var cause: String

    var description: String {
        "PostgreSQL at \(url) ended the connection before the work was done\(cause.isEmpty ? "" : " (" + cause + ")"); try again"
    }

    /// What a client is told: not the database's address.
    static let answer = "the server's database ended its connection before the request was done; try again"
}

/// One connection inside `BEGIN … COMMIT`. Only `PostgresDatabase` makes one.
struct PostgresTransaction {
    enum Outcome<Value: Sendable> {
        case commit(Value)
        /// Nothing the transaction did is kept; the value is still returned.
        case rollback(Value)
    }

    fileprivate let connection: PostgresConnection
    fileprivate let logger: Logger
    /// Begins the text of every statement sent (`PostgresDatabase.withConnection`).
    fileprivate let tag: String
    /// What the transaction sets after `BEGIN` (`PostgresDatabase.settings`).
    fileprivate let settings: PostgresStatement?

    @discardableResult
    func rows(_ statement: PostgresStatement) async throws -> [PostgresRow] {
        try await sent(tagged(statement.query)).get().rows
    }

    func execute(_ statement: PostgresStatement) async throws {
        _ = try await rows(statement)
    }

    /// Queues `statement` on the connection without waiting for it (its outcome is not looked at).
    func send(_ statement: PostgresStatement) {
        _ = sent(tagged(statement.query))
    }

    /// `BEGIN`, whatever the database's default isolation: the write floors and pull caps
    /// (docs/DESIGN.md §10) need each statement to see what committed before it started. Then the
    /// settings, queued: should they fail, the transaction's next statement fails.
    fileprivate func begin(waiting: Bool) async throws {
        let begin = PostgresStatement("BEGIN ISOLATION LEVEL READ COMMITTED")
        if waiting { try await execute(begin) } else { send(begin) }
        if let settings { send(settings) }
    }

    /// `query` in a transaction of its own, sent with its `BEGIN` and `COMMIT` in one go: one
    /// round trip, as a statement in autocommit, with the transaction's isolation and settings.
    /// When `query` fails, the `COMMIT` ends the failed transaction (PostgreSQL rolls it back).
    fileprivate func alone(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await begin(waiting: false)
        let result = sent(tagged(query))
        let commit = sent(tagged(PostgresStatement("COMMIT").query))
        let rows = try await result.get().rows
        _ = try await commit.get()
        return rows
    }

    private func sent(_ query: PostgresQuery) -> EventLoopFuture<PostgresQueryResult> {
        connection.sentIfOpen(query, logger: logger)
    }

    private func tagged(_ query: PostgresQuery) -> PostgresQuery {
        var query = query
        query.sql = tag + query.sql
        return query
    }
}

extension PostgresConnection {
    /// `query` sent, or failed when the connection has closed. PostgresNIO never answers a
    /// statement written after its connection closed (the write fails with no one told), and a
    /// connection closes whenever the server ends it: a transaction left idle past
    /// `idle_in_transaction_session_timeout` while a loaded machine's event loop stalls, a
    /// session ended by `pg_terminate_backend` or a restart. The `ROLLBACK` after such a failure
    /// waited for ever. Looked at and written on the connection's event loop, where it closes:
    /// nothing can close it in between. Every statement tsync sends goes this way.
    func sentIfOpen(_ query: PostgresQuery, logger: Logger) -> EventLoopFuture<PostgresQueryResult> {
        let loop = eventLoop
        return loop.flatSubmit { [self] in
            guard !isClosed else { return loop.makeFailedFuture(PostgresConnectionClosed()) }
            return self.query(query, logger: logger)
        }
    }
}
