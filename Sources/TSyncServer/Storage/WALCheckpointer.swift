import GRDB
import GRDBSQLite
import Synchronization

/// Checkpoints a SQLite WAL beside the writers instead of inside one of their commits.
///
/// SQLite's automatic checkpoint runs in the commit that takes the WAL past 1000 pages: that
/// request waits for pages to be copied into the database and for an fsync, and made the tail
/// (PATCH p99 17× its p50; 7.8× without). The pool's connections turn it off
/// (`wal_autocheckpoint = 0`) and report each commit's WAL size here (`sqlite3_wal_hook`); a task
/// of its own, on a connection of its own, copies the WAL back with PASSIVE checkpoints, which
/// take no lock a writer or reader waits for (docs/DESIGN.md §10).
///
/// A PASSIVE checkpoint never rewinds the WAL, and a writer rewinds it only when it begins just
/// after a checkpoint that caught up, which a steady stream of writes may never leave room for.
/// So past `restartPages` a RESTART checkpoint follows, queued with the writes on the pool's
/// writer: it copies what was committed since the PASSIVE one and waits for readers still on the
/// WAL (at most `busyTimeout`), and the writer's next transaction starts the WAL over. When readers
/// hold on longer, it tries again `checkpointPages` later. Not from this task's own connection:
/// there it polled for the write lock against a steady stream of writes, took up to 0.4 s to get
/// it, and then copied, under that lock, everything committed meanwhile (the WAL reached 75 MB).
/// Not TRUNCATE: cutting a 16 to 22 MiB file took 20 to 140 ms under the lock; the file stays at
/// its largest, and `journalSizeLimit` cuts it back after a burst.
final class WALCheckpointer: Sendable {
    /// New WAL pages that call for a checkpoint: SQLite's own default (4 MiB of 4 KiB pages).
    static let checkpointPages = 1000
    /// WAL pages past which the WAL is started over (16 MiB of 4 KiB pages).
    static let restartPages = 4 * checkpointPages
    /// The size a writer cuts the WAL file back to when it starts the WAL over: only a burst of
    /// writes faster than the checkpoints (a batch of many large records) leaves it larger.
    static let journalSizeLimit = 64 << 20
    /// How long a RESTART holds the writer waiting for readers before it gives up until next time.
    static let busyTimeout = 0.1

    private struct State {
        /// The WAL's pages at the last commit; fewer at a commit means a writer rewound it.
        var walPages = 0
        /// The WAL size at which the next checkpoint is due.
        var dueAt = WALCheckpointer.checkpointPages
    }

    private let state = Mutex(State())
    private let wakeUps: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    init() {
        (wakeUps, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Turns off SQLite's automatic checkpoint on `db` and reports its commits here. `self` must
    /// outlive the connection: the pool's configuration, which holds the connections, holds it.
    func watch(_ db: Database) throws {
        try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
        try db.execute(sql: "PRAGMA journal_size_limit = \(Self.journalSizeLimit)")
        sqlite3_wal_hook(
            db.sqliteConnection,
            { context, _, _, pages in
                if let context {
                    Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue().committed(walPages: Int(pages))
                }
                return SQLITE_OK
            }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Called by SQLite on the writer's thread after each commit: only a comparison, and a wake-up
    /// when a checkpoint is due.
    private func committed(walPages pages: Int) {
        let due = state.withLock { state in
            if pages < state.walPages { state.dueAt = Self.checkpointPages }
            state.walPages = pages
            return pages >= state.dueAt
        }
        if due { wake.yield() }
    }

    /// Checkpoints `pool`'s database whenever a commit says it is due, until cancelled. A
    /// checkpoint that fails is tried again at the next commit that finds one due.
    func run(pool: DatabasePool) async {
        var configuration = Configuration()
        configuration.label = "tsync-checkpoint"
        guard let connection = try? DatabaseQueue(path: pool.path, configuration: configuration) else { return }
        for await _ in wakeUps {
            var walPages =
                (try? await connection.writeWithoutTransaction { try $0.checkpoint(.passive).walFrameCount })
                ?? state.withLock { $0.walPages }
            if walPages >= Self.restartPages, (try? await pool.writeWithoutTransaction(Self.restart)) != nil {
                walPages = 0
            }
            state.withLock { $0.dueAt = walPages + Self.checkpointPages }
        }
    }

    /// A RESTART checkpoint on the pool's writer, which waits for readers for `busyTimeout` rather
    /// than the writer's own timeout: every write waits behind it.
    @Sendable private static func restart(_ db: Database) throws {
        sqlite3_busy_timeout(db.sqliteConnection, Int32(busyTimeout * 1000))
        defer { sqlite3_busy_timeout(db.sqliteConnection, Int32(SQLiteStorage.writerBusyTimeout * 1000)) }
        _ = try db.checkpoint(.restart)
    }
}
