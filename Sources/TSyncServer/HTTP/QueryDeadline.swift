import NIOCore

/// A read's database work, bounded (docs/DESIGN.md §10): it stops when it takes longer than the
/// query timeout, and when the client it is for has gone. Stopping is cancellation: GRDB
/// interrupts SQLite's statement (`sqlite3_interrupt`) when its task is cancelled; on PostgreSQL
/// the connection's `statement_timeout` stops the statement on the database's side as well.
enum QueryDeadline {
    /// How often the connection is looked at while the work runs.
    static let clientCheckInterval = Duration.milliseconds(100)

    static func run<T: Sendable>(
        seconds: Int, channel: (any Channel)?, _ work: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T.self) { group in
            group.addTask { try await work() }
            group.addTask {
                try await Task.sleep(for: .seconds(seconds))
                throw QueryTimedOut(seconds: seconds)
            }
            if let channel {
                group.addTask {
                    while channel.isActive { try await Task.sleep(for: clientCheckInterval) }
                    throw ClientGone()
                }
            }
            defer { group.cancelAll() }
            guard let value = try await group.next() else { throw CancellationError() }
            return value
        }
    }
}

/// A query ran past the query timeout and was stopped: 503, with a message that says so.
struct QueryTimedOut: Error, CustomStringConvertible {
    /// The limit, when known.
    var seconds: Int?

    var message: String {
        let limit = seconds.map { " (\($0) s)" } ?? ""
        return "the query took longer than the server allows\(limit) and was stopped: narrow the $filter or ask for smaller pages"
    }

    var description: String { message }
}

/// The client closed its connection while its request was being worked on: the work stops, and
/// the request is logged as 499 (nginx's "client closed request"), not as a failure of the server.
struct ClientGone: Error {}
