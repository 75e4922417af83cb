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
/// So past `truncatePages` the WAL is truncated (TRUNCATE): that holds the write lock, but only
/// for the frames committed since the PASSIVE checkpoint just before it, and for readers still
/// on the WAL for at most `busyTimeout`, and while the file is cut (20 to 140 ms measured for
/// 16 to 22 MiB under the release bench). When readers hold on longer, it tries again
/// `checkpointPages` later. Not RESTART (cheaper under the lock): measured, writers did not
/// start the WAL over after it and the file grew to 75 to 121 MB.
final class WALCheckpointer: Sendable {
    /// New WAL pages that call for a checkpoint: SQLite's own default (4 MiB of 4 KiB pages).
    static let checkpointPages = 1000
    /// WAL pages past which the WAL is truncated (16 MiB of 4 KiB pages).
    static let truncatePages = 4 * checkpointPages
    /// How long a TRUNCATE waits for the writer and readers before it gives up until next time.
    static let busyTimeout = 1.0

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

    /// Checkpoints the database at `path` whenever a commit says it is due, until cancelled.
    /// A checkpoint that fails is tried again at the next commit that finds one due.
    func run(path: String) async {
        var configuration = Configuration()
        configuration.busyMode = .timeout(Self.busyTimeout)
        configuration.label = "tsync-checkpoint"
        guard let connection = try? DatabaseQueue(path: path, configuration: configuration) else { return }
        for await _ in wakeUps {
            let walPages = (try? await connection.writeWithoutTransaction(Self.checkpoint)) ?? state.withLock { $0.walPages }
            state.withLock { $0.dueAt = walPages + Self.checkpointPages }
        }
    }

    /// One PASSIVE checkpoint, and a TRUNCATE when the WAL is past `truncatePages`. Returns the
    /// WAL's pages after them.
    @Sendable private static func checkpoint(_ db: Database) throws -> Int {
        let walPages = try db.checkpoint(.passive).walFrameCount
        guard walPages >= truncatePages else { return walPages }
        return try db.checkpoint(.truncate).walFrameCount
    }
}
