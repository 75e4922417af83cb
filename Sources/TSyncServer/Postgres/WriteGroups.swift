import Synchronization
import TSyncModel

/// Requests that write one record, queued per table for group commit on PostgreSQL
/// (`PostgresStorage.commitGroups`, docs/DESIGN.md §10).
///
/// A table's entry lives while its committer runs: made by the request that finds none, which
/// becomes the committer, and dropped by the committer when nothing waits and the clock has
/// passed the table's last time. So the entries are as many as the tables being written now,
/// not every table ever written.
final class WriteGroups: Sendable {
    /// A request waiting for its group's transaction.
    struct Request {
        var write: RecordWrite
        /// The change feed's ticket, taken before the request joined (before any floor).
        var ticket: UInt64?
        var answer: CheckedContinuation<[WriteOutcome], any Error>
    }

    private struct Table {
        var waiting: [Request] = []
        /// The last `updatedAt` this instance gave the table, in milliseconds.
        var last: Int64?
    }

    private let tables = Mutex<[String: Table]>([:])

    /// Queues `request` for table `key`; true when the caller is to run the table's committer.
    func join(_ request: Request, key: String) -> Bool {
        tables.withLock { tables in
            let leads = tables[key] == nil
            tables[key, default: Table()].waiting.append(request)
            return leads
        }
    }

    /// The last time given to table `key` in milliseconds, while its committer runs.
    func last(_ key: String) -> Int64? { tables.withLock { $0[key]?.last } }

    /// The requests of the table's next group (at most `maximum`); none, and the table's entry
    /// dropped, when nothing waits.
    func take(_ key: String, maximum: Int) -> [Request] {
        tables.withLock { tables in
            guard let waiting = tables[key]?.waiting, !waiting.isEmpty else {
                tables[key] = nil
                return []
            }
            let taken = Array(waiting.prefix(maximum))
            tables[key]?.waiting.removeFirst(taken.count)
            return taken
        }
    }

    /// Remembers that a group gave table `key` the time `stamp` (milliseconds).
    func gave(_ key: String, _ stamp: Int64) {
        tables.withLock { tables in
            guard var table = tables[key] else { return }
            table.last = max(table.last ?? stamp, stamp)
            tables[key] = table
        }
    }

    /// Tables with a committer running (tests: entries do not outlive their writes).
    var count: Int { tables.withLock { $0.count } }
}

extension WriteOutcome {
    /// The `updatedAt` a write that was done stored.
    var stamp: Timestamp? {
        switch self {
        case .inserted(let record), .modified(let record): record.system.updatedAt
        default: nil
        }
    }
}
