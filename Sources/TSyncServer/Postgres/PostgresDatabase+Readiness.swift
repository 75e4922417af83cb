import PostgresNIO
import Synchronization
import TSyncModel

extension PostgresDatabase {
    /// Ready when the readiness session answers (a connection of its own, not one of the pool's,
    /// which under load are all taken: `ReadinessCheck`), and the database takes writes: a hot
    /// standby, or a database turned read-only (`ALTER DATABASE … SET
    /// default_transaction_read_only = on`, which new sessions get), would answer every read and
    /// refuse every write.
    func checkReady() async throws {
        try await readiness.check { [self] in try await lookReady() }
    }

    private func lookReady() async throws {
        @Sendable func lookThroughSession() async throws -> (replica: Bool, readOnly: String) {
            try await answer(through: try await readinessSession.connection { [self] in try await openReadinessConnection() })
        }
        let look: (replica: Bool, readOnly: String)
        do {
            look = try await lookThroughSession()
        } catch let error where Self.ended(error) != nil {
            // The kept session had ended (PostgreSQL ended it: a restart, `pg_terminate_backend`):
            // that says nothing of the database now, so a new one is asked at once.
            do {
                look = try await lookThroughSession()
            } catch {
                throw translated(error)
            }
        }
        if look.replica {
            throw DatabaseTakesNoWrites(
                reason: "the database is a read-only replica",
                detail: "PostgreSQL at \(url) is a read-only replica (hot standby): every write would fail; point --db at the primary")
        }
        if look.readOnly == "on" {
            throw DatabaseTakesNoWrites(
                reason: "the database is read-only",
                detail:
                    "PostgreSQL at \(url) begins its transactions read-only (default_transaction_read_only is on): every write would fail")
        }
    }

    /// What `connection` says of the database: a session closed fails at once, one that does
    /// not answer within `ReadinessSession.answerLimit` is closed; either way it is dropped. A
    /// session PostgreSQL ended is said untranslated (`ended`), to be looked through again.
    private func answer(through connection: PostgresConnection) async throws -> (replica: Bool, readOnly: String) {
        do {
            return try await withThrowingTaskGroup(of: (Bool, String)?.self) { [self] group in
                group.addTask { [self] in
                    let statement = PostgresStatement("SELECT pg_is_in_recovery(), current_setting('transaction_read_only')")
                    let rows = try await connection.sentIfOpen(statement.query, logger: logger).get().rows
                    return try rows.first?.decode((Bool, String).self) ?? (false, "off")
                }
                // A session that never answers (a peer gone without a word) is closed, which ends
                // the statement, so the next look opens another instead of waiting on this one.
                group.addTask { [self] in
                    try await Task.sleep(for: ReadinessSession.answerLimit)
                    await readinessSession.drop(connection)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let look = first else {
                    throw TSyncError.failure(
                        "the readiness session gave no answer within \(ReadinessSession.answerLimit.components.seconds) s")
                }
                return look
            }
        } catch let error where Self.ended(error) != nil {
            await readinessSession.drop(connection)
            throw error
        } catch {
            await readinessSession.drop(connection)
            throw translated(error)
        }
    }

    private func openReadinessConnection() async throws -> PostgresConnection {
        do {
            return try await PostgresConnection.connect(configuration: try url.connectionConfiguration(), id: 2, logger: logger)
        } catch {
            throw translated(error)
        }
    }
}

/// The connection `GET /ready` looks through, kept open. A new session costs PostgreSQL a process
/// of its own, which on a loaded machine took 5–7 s to start (200 clones through three
/// instances: a balancer that waits 1 s took every instance out at once), where a statement on an
/// open session answers in a millisecond. What a session says of writes is fixed when it begins
/// (`ALTER DATABASE … SET default_transaction_read_only` reaches new sessions only, as it reaches
/// the pool's when they are replaced), so the session is renewed every `renewal`: in the
/// background, never on an answer's path, the old one answering until the new one is open.
final class ReadinessSession: Sendable {
    /// How long a look waits on the session before closing it.
    static let answerLimit = Duration.seconds(5)
    let renewal: Duration
    private struct State {
        var connection: PostgresConnection?
        var opened = ContinuousClock.now
        var renewing = false
        var closed = false
    }
    private let state = Mutex(State())

    init(renewal: Duration = .seconds(3)) {
        self.renewal = renewal
    }

    /// The open session, or one opened now when there is none (at the first look, and after a
    /// failed one).
    func connection(open: @escaping @Sendable () async throws -> PostgresConnection) async throws -> PostgresConnection {
        enum Next {
            case use(PostgresConnection)
            case renew(PostgresConnection)
            case open
        }
        let now = ContinuousClock.now
        let next: Next = state.withLock { state in
            guard let connection = state.connection else { return .open }
            guard now - state.opened >= renewal, !state.renewing else { return .use(connection) }
            state.renewing = true
            return .renew(connection)
        }
        switch next {
        case .use(let connection):
            return connection
        case .renew(let connection):
            Task { await renew(open) }
            return connection
        case .open:
            let opened = try await open()
            return await keep(opened, replacing: false)
        }
    }

    /// Forgets a session a look failed on, so that the next look opens another.
    func drop(_ connection: PostgresConnection) async {
        let dropped = state.withLock { state in
            guard let kept = state.connection, kept === connection else { return false }
            state.connection = nil
            return true
        }
        if dropped { try? await connection.close() }
    }

    /// Closes the session: the database's pool is closing.
    func close() async {
        let connection = state.withLock { state in
            state.closed = true
            defer { state.connection = nil }
            return state.connection
        }
        try? await connection?.close()
    }

    private func renew(_ open: @Sendable () async throws -> PostgresConnection) async {
        guard let fresh = try? await open() else {
            state.withLock { $0.renewing = false }
            return
        }
        _ = await keep(fresh, replacing: true)
    }

    /// Keeps `fresh` as the session and returns the session to use. Two first looks may each
    /// open one: the second uses the first's and closes its own. A renewal replaces the session,
    /// and a look may still be reading from the old one, which is closed once that is surely over.
    private func keep(_ fresh: PostgresConnection, replacing: Bool) async -> PostgresConnection {
        enum Kept {
            case closing
            case another(PostgresConnection)
            case fresh(replaced: PostgresConnection?)
        }
        let kept: Kept = state.withLock { state in
            if replacing { state.renewing = false }
            if state.closed { return .closing }
            if let other = state.connection, !replacing { return .another(other) }
            defer {
                state.connection = fresh
                state.opened = .now
            }
            return .fresh(replaced: state.connection)
        }
        switch kept {
        case .closing:
            try? await fresh.close()
            return fresh
        case .another(let other):
            try? await fresh.close()
            return other
        case .fresh(let replaced):
            if let replaced {
                try? await Task.sleep(for: .seconds(1))
                try? await replaced.close()
            }
            return fresh
        }
    }
}
