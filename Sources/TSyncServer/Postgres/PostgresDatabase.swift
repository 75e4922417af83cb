import Logging
import PostgresNIO
import Synchronization
import TSyncModel
import TSyncTransport

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
    /// Each connection's server process (`pg_backend_pid()`), by the pool's connection id: what
    /// `pg_cancel_backend` names to stop its statement.
    private let backends = Mutex<[Int: Int32]>([:])

    private init(url: PostgresURL, client: PostgresClient, logger: Logger, statementTimeoutSeconds: Int?, maximumConnections: Int) {
        self.url = url
        self.client = client
        self.logger = logger
        self.statementTimeoutSeconds = statementTimeoutSeconds
        shares = ReadShares(connections: maximumConnections)
    }

    /// Connects, creates or upgrades the schema (`migrations`, normally `PostgresSchema.migrations`;
    /// nil leaves the database as it is), runs `body`, and closes the connections however `body` ends.
    @discardableResult
    static func withDatabase<Result: Sendable>(
        url: PostgresURL, maximumConnections: Int = 20, migrations: [PostgresMigration]? = PostgresSchema.migrations,
        statementTimeoutSeconds: Int? = nil, logger: Logger = Logger(label: "tsync.postgres"),
        _ body: @Sendable (PostgresDatabase) async throws -> Result
    ) async throws -> Result {
        var configuration = url.clientConfiguration(maximumConnections: maximumConnections)
        // Statements outside `transaction` (`SingleInsert`'s call) need each statement to see what
        // committed before it started (docs/DESIGN.md §10), whatever the database's default.
        configuration.options.additionalStartupParameters.append(("default_transaction_isolation", "read committed"))
        if let statementTimeoutSeconds {
            // Stops a query the server would otherwise finish for nobody (docs/DESIGN.md §10).
            configuration.options.additionalStartupParameters.append(("statement_timeout", "\(statementTimeoutSeconds * 1000)"))
            // A transaction left open between its statements (an instance stalled mid-write)
            // holds its write floor, and pull-shaped reads stop below it until it ends
            // (docs/DESIGN.md §10): PostgreSQL ends it after the same time.
            configuration.options.additionalStartupParameters.append(
                ("idle_in_transaction_session_timeout", "\(statementTimeoutSeconds * 1000)"))
        }
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let database = PostgresDatabase(
            url: url, client: client, logger: logger, statementTimeoutSeconds: statementTimeoutSeconds,
            maximumConnections: maximumConnections)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            try await database.waitUntilReachable()
            if let migrations { try await PostgresSchema.migrate(database, migrations: migrations) }
            return try await body(database)
        }
    }

    // MARK: - Statements

    /// Runs one statement outside any explicit transaction and returns its rows.
    @discardableResult
    func rows(_ statement: PostgresStatement) async throws -> [PostgresRow] {
        do {
            return try await withConnection { connection in try await connection.query(statement.query, logger: logger).collect() }
        } catch {
            throw translated(error)
        }
    }

    /// Runs a prepared statement outside any explicit transaction (prepared on each connection
    /// when first run there) and gives its rows to `body`, on the connection's time.
    func call<Statement: PostgresPreparedStatement, Result: Sendable>(
        _ statement: Statement, _ body: ([Statement.Row]) throws -> Result
    ) async throws -> Result {
        do {
            return try await withConnection { connection in
                do {
                    var rows: [Statement.Row] = []
                    for try await row in try await connection.execute(statement, logger: logger) { rows.append(row) }
                    return try body(rows)
                } catch {
                    // As in `transaction`: a look at the writers (`tsync_pull_page`) that failed
                    // between taking their lock and letting it go must not leave it with the connection.
                    _ = try? await connection.query(PostgresStatement("SELECT pg_advisory_unlock_all()").query, logger: logger).collect()
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
            return try await withConnection { connection in
                let transaction = PostgresTransaction(connection: connection, logger: logger)
                // Whatever the database's default: the write floors and pull caps (docs/DESIGN.md
                // §10) need each statement to see what committed before it started.
                let begin = PostgresStatement("BEGIN ISOLATION LEVEL READ COMMITTED")
                if readOnly { transaction.send(begin) } else { try await transaction.execute(begin) }
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
    /// stops waiting for it), and the connection goes back to the pool only once the cancel was
    /// sent, so that it cannot reach the connection's next statement.
    private func withConnection<Result: Sendable>(_ body: (PostgresConnection) async throws -> Result) async throws -> Result {
        try await shares.run {
            try await client.withConnection { connection in
                let process = try await backendProcess(connection)
                let cancel = Mutex<(done: Bool, sent: Task<Void, Never>?)>((false, nil))
                let result: Swift.Result<Result, any Error>
                do {
                    result = .success(
                        try await withTaskCancellationHandler {
                            try await body(connection)
                        } onCancel: {
                            cancel.withLock { state in
                                guard !state.done, state.sent == nil else { return }
                                state.sent = Task { [client, logger] in
                                    let statement = PostgresStatement("SELECT pg_cancel_backend(\(process))")
                                    _ = try? await client.query(statement.query, logger: logger).collect()
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

    /// The server process of `connection`, asked once per connection.
    private func backendProcess(_ connection: PostgresConnection) async throws -> Int32 {
        if let known = backends.withLock({ $0[connection.id] }) { return known }
        let rows = try await connection.query(PostgresStatement("SELECT pg_backend_pid()").query, logger: logger).collect()
        let process = try rows.first?.decode(Int32.self) ?? 0
        backends.withLock { known in
            // Connections the pool closed leave their ids behind: forget them now and then.
            if known.count > 1000 { known = [:] }
            known[connection.id] = process
        }
        return process
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

    /// Makes a PostgresNIO error into one an operator can act on. Messages carry the server's
    /// wording but never the SQL text or a bound value.
    func translated(_ error: any Error) -> any Error {
        if error is TSyncError || error is CancellationError { return error }
        guard let error = error as? PSQLError else {
            return TSyncError.failure("PostgreSQL at \(url): \(error)")
        }
        if error.code == .server, let sqlState = error.serverInfo?[.sqlState] {
            let message = error.serverInfo?[.message] ?? "error \(sqlState)"
            switch sqlState {
            case "57014":  // query_canceled: statement_timeout
                return QueryTimedOut(seconds: statementTimeoutSeconds)
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
            // swift-nio's reason, never its types' names; PostgresNIO's own, as it words it.
            let cause = error.underlying.map { ": " + (TransportFailure.words($0) ?? String(describing: $0)) } ?? ""
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

/// One connection inside `BEGIN … COMMIT`. Only `PostgresDatabase.transaction` makes one.
struct PostgresTransaction {
    enum Outcome<Value: Sendable> {
        case commit(Value)
        /// Nothing the transaction did is kept; the value is still returned.
        case rollback(Value)
    }

    fileprivate let connection: PostgresConnection
    fileprivate let logger: Logger

    @discardableResult
    func rows(_ statement: PostgresStatement) async throws -> [PostgresRow] {
        try await connection.query(statement.query, logger: logger).collect()
    }

    func execute(_ statement: PostgresStatement) async throws {
        _ = try await rows(statement)
    }

    /// Queues `statement` on the connection without waiting for it (its outcome is not looked at).
    func send(_ statement: PostgresStatement) {
        let _: EventLoopFuture<PostgresQueryResult> = connection.query(statement.query, logger: logger)
    }
}
