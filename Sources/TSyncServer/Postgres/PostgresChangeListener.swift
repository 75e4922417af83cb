import Logging
import PostgresNIO

/// One `LISTEN` connection per instance (docs/DESIGN.md §8.1): every write transaction on
/// PostgreSQL sends `NOTIFY tsync_changes, 'INSTANCE TABLE'`, which PostgreSQL delivers only when
/// it commits, so a write through any instance wakes the live route's waiters on every instance.
/// An instance has woken its own waiters already and skips its own notifications. When the
/// connection is lost it is opened again (after a second) and every waiter is woken, since
/// notifications may have been missed meanwhile.
struct PostgresChangeListener: Sendable {
    static let channel = "tsync_changes"

    let storage: PostgresStorage
    let logger: Logger

    func run() async {
        guard let feed = storage.changes else { return }
        let database = storage.database
        while !Task.isCancelled {
            do {
                let connection = try await PostgresConnection.connect(
                    configuration: try database.url.connectionConfiguration(), id: 1, logger: logger)
                defer { Task { try? await connection.close() } }
                feed.wakeAll()
                try await connection.listen(on: Self.channel) { notifications in
                    for try await notification in notifications {
                        let parts = notification.payload.split(separator: " ", maxSplits: 1)
                        guard parts.count == 2, parts[0] != storage.instance else { continue }
                        feed.committed([String(parts[1])])
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("live route: listening for other instances' commits failed (\(error)); trying again")
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }
}
