import Logging
import PostgresNIO
import Synchronization
import TSyncModel

/// One `LISTEN` connection per instance (docs/DESIGN.md §8.1): every write transaction on
/// PostgreSQL sends `NOTIFY tsync_changes, 'INSTANCE TABLE'`, which PostgreSQL delivers only when
/// it commits, so a write through any instance wakes the live route's waiters on every instance.
/// An instance has woken its own waiters already and skips its own notifications. When the
/// connection is lost it is opened again (after a second) and every waiter is woken, since
/// notifications may have been missed meanwhile.
///
/// Each time it listens, it sends itself a notification through the pool (its instance alone as
/// the payload, which every other instance skips) and waits for it: a transaction pooler
/// (PgBouncer in `pool_mode = transaction`) lets `LISTEN` run but gives its server connection to
/// other clients afterwards, so nothing would ever arrive, and without this the only sign would
/// be watchers on other instances waiting in vain.
struct PostgresChangeListener: Sendable {
    static let channel = "tsync_changes"
    /// How long the notification it sent itself may take to arrive.
    static let probeTimeout = Duration.seconds(5)

    let storage: PostgresStorage
    /// Where to listen: the database of `--db`, unless `--listen-db` names another way to it.
    let url: PostgresURL
    let logger: Logger

    /// Listens until cancelled. `started` is told once, when it first hears itself, or why it
    /// cannot (it goes on trying, and says so in the log).
    func run(started: @escaping @Sendable (Swift.Result<Void, any Error>) -> Void) async {
        guard let feed = storage.changes else { return started(.success(())) }
        let database = storage.database
        let reported = Flag()
        // Tells `started`, the first time; says whether it did.
        let report: @Sendable (Swift.Result<Void, any Error>) -> Bool = { result in
            guard reported.set() else { return false }
            started(result)
            return true
        }
        while !Task.isCancelled {
            do {
                let connection = try await PostgresConnection.connect(
                    configuration: try url.connectionConfiguration(), id: 1, logger: logger)
                defer { Task { try? await connection.close() } }
                feed.wakeAll()
                try await connection.listen(on: Self.channel) { notifications in
                    let heard = Flag()
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            var probe = PostgresStatement("SELECT pg_notify('\(Self.channel)', ")
                            probe.append(probe.bind(storage.instance) + ")")
                            let failure: any Error
                            do {
                                try await database.rows(probe)
                                try await Task.sleep(for: Self.probeTimeout)
                                guard !heard.isSet else { return }
                                failure = unheard()
                            } catch {
                                if Task.isCancelled { return }
                                failure = error
                            }
                            if !report(.failure(failure)) { logger.error("live route: \(failure)") }
                        }
                        for try await notification in notifications {
                            if notification.payload == storage.instance {
                                _ = heard.set()
                                _ = report(.success(()))
                                continue
                            }
                            let parts = notification.payload.split(separator: " ", maxSplits: 1)
                            guard parts.count == 2, parts[0] != storage.instance else { continue }
                            feed.committed([String(parts[1])])
                        }
                        try await group.waitForAll()
                    }
                }
            } catch {
                if Task.isCancelled { return }
                let words = database.translated(error)
                if !report(.failure(words)) {
                    logger.warning("live route: listening for other instances' commits failed (\(words)); trying again")
                }
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// What to do when the notification sent to itself never came.
    private func unheard() -> TSyncError {
        let seconds = Self.probeTimeout.components.seconds
        let through = url == storage.database.url ? "--db" : "--listen-db"
        return TSyncError.failure(
            "LISTEN at \(url) heard nothing within \(seconds) s of a NOTIFY: writes through other instances would not wake this one's "
                + "live reads (a transaction pooler, such as PgBouncer with pool_mode = transaction, in \(through)?): "
                + "give --listen-db a URL of PostgreSQL itself or of a session-mode pool")
    }
}

/// Whether something happened yet, seen from several tasks.
private final class Flag: Sendable {
    private let value = Atomic(false)

    /// Sets it; true when it was not set before.
    func set() -> Bool { !value.exchange(true, ordering: .relaxed) }

    var isSet: Bool { value.load(ordering: .relaxed) }
}
