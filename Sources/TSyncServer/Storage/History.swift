import TSyncModel

/// What a version of a record's history records the write as (docs/DESIGN.md §6.5).
public enum HistoryOperation: String, Sendable, CaseIterable {
    case insert, update, delete, undelete
}

/// One version of a record, as `GET /tables/$history/{table}/{id}` answers it.
public struct RecordVersion: Sendable {
    public var version: String
    public var updatedAt: String
    /// The account that wrote it; nil without one (`--no-auth`, or a version seeded from a record
    /// stored before history was kept).
    public var user: String?
    public var operation: HistoryOperation
    /// The whole record as the protocol sends it (a delete keeps the body it deleted).
    public var item: PageRecord
}

/// How long the server keeps what it would otherwise keep forever (`--keep-history`,
/// `--keep-deleted`).
public struct Retention: Sendable, Equatable {
    /// Versions older than this are pruned, but never the one a record had at the cutoff; zero
    /// keeps none and turns the history off.
    public var history: Duration
    /// Soft-deleted records whose `updatedAt` is older than this are removed; zero keeps them forever.
    public var deleted: Duration

    public init(history: Duration = .seconds(30 * 86_400), deleted: Duration = .seconds(90 * 86_400)) {
        self.history = history
        self.deleted = deleted
    }

    public var keepsHistory: Bool { history > .zero }

    /// The oldest time a table can be read at, at `now`.
    public func oldestReadable(now: Timestamp) -> Timestamp {
        Timestamp(millisecondsSinceEpoch: now.millisecondsSinceEpoch - history.milliseconds)
    }

    /// The `updatedAt` below which a tombstone is removed at `now`; nil when they are kept forever.
    public func tombstoneCutoff(now: Timestamp) -> Timestamp? {
        deleted > .zero ? Timestamp(millisecondsSinceEpoch: now.millisecondsSinceEpoch - deleted.milliseconds) : nil
    }

    /// How often the pruning runs: hourly, or a tenth of the shorter duration when that is less
    /// (at least every second), so a short duration is held to within a tenth of itself.
    public var pruningInterval: Duration {
        let spans = [history, deleted].filter { $0 > .zero }.map { $0 / 10 }
        return max(.seconds(1), ([.seconds(3600)] + spans).min() ?? .seconds(3600))
    }
}

/// What one run of `ServerStorage.maintain` did, for the server log.
public struct MaintenanceReport: Sendable, Equatable {
    /// Current records given a version because they had none (written before history was kept).
    public var seeded = 0
    public var versionsPruned = 0
    public var tombstonesRemoved = 0

    public init(seeded: Int = 0, versionsPruned: Int = 0, tombstonesRemoved: Int = 0) {
        self.seeded = seeded
        self.versionsPruned = versionsPruned
        self.tombstonesRemoved = tombstonesRemoved
    }
}
