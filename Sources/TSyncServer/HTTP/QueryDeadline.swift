import NIOCore
import Synchronization

/// A read's database work, bounded (docs/DESIGN.md §10): it stops when it takes longer than the
/// query timeout, and when the client it is for has gone. Stopping is cancellation: GRDB
/// interrupts SQLite's statement (`sqlite3_interrupt`) when its task is cancelled; on PostgreSQL
/// the storage cancels the statement in the database (`pg_cancel_backend`), and the
/// connection's `statement_timeout` stops it there as well. The work takes the database in
/// `client`'s share (`ReadShares`, docs/DESIGN.md §10.1), and its wait for a share is within
/// the deadline.
enum QueryDeadline {
    /// How often the connection is looked at while the work runs.
    static let clientCheckInterval = Duration.milliseconds(100)

    /// `wait`, when given, keeps how long the work waited for the database (`Server-Timing`).
    static func run<T: Sendable>(
        seconds: Int, channel: (any Channel)?, client: String? = nil, wait: DatabaseWait = DatabaseWait(),
        _ work: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await ReadShares.$client.withValue(client) { try await run(seconds: seconds, channel: channel, wait: wait, work) }
    }

    /// Told by the storage when the work has a connection of the database (`reached`): a
    /// deadline that passes before says the database was busy, not the query slow.
    @TaskLocal static var wait: DatabaseWait?

    private static func run<T: Sendable>(
        seconds: Int, channel: (any Channel)?, wait: DatabaseWait, _ work: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T.self) { group in
            group.addTask { try await $wait.withValue(wait) { try await work() } }
            group.addTask {
                try await Task.sleep(for: .seconds(seconds))
                throw QueryTimedOut(seconds: seconds, waitedForDatabase: !wait.isOver)
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

extension ServerRequestContext {
    /// Whose share of the database the request's reads take (docs/DESIGN.md §10.1): its account,
    /// else its client's address, an IPv6 address by its /64 (what one subscriber is given).
    var readClient: String? {
        if let accountName { return "account " + accountName }
        return clientAddress.map { "address " + Self.network($0) }
    }

    /// An address with no `:` is not IPv6, and is not parsed to find so: a read of every
    /// watcher following a table asks this.
    static func network(_ address: String) -> String {
        guard address.utf8.contains(UInt8(ascii: ":")) else { return address }
        return networkInGeneral(address)
    }

    static func networkInGeneral(_ address: String) -> String {
        guard case .v6(let socket)? = try? SocketAddress(ipAddress: address, port: 0) else { return address }
        var raw = socket.address.sin6_addr
        let prefix = withUnsafeBytes(of: &raw) { Array($0.prefix(8)) }
        return stride(from: 0, to: 8, by: 2).map { String(UInt16(prefix[$0]) << 8 | UInt16(prefix[$0 + 1]), radix: 16) }
            .joined(separator: ":") + "::/64"
    }
}

/// Whether a request's work has reached the database (`QueryDeadline.wait`), and how long it
/// waited for it: its turn in the read shares and the pool, which a page's answer tells the
/// client (`Server-Timing: queue`), so that a crowd of pulls can tell a queue from a slow network.
final class DatabaseWait: Sendable {
    private let began = ContinuousClock.now
    /// Nanoseconds from `began` to the first `reached`, -1 before.
    private let waited = Atomic<Int64>(-1)

    /// The work has its connection (PostgreSQL) or reader (SQLite) and runs.
    func reached() {
        let elapsed = ContinuousClock.now - began
        let nanoseconds = elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000
        _ = waited.compareExchange(expected: -1, desired: max(0, nanoseconds), ordering: .relaxed)
    }

    var isOver: Bool { waited.load(ordering: .relaxed) >= 0 }

    /// The time the work waited for the database, once it reached it.
    var duration: Duration? {
        let nanoseconds = waited.load(ordering: .relaxed)
        return nanoseconds < 0 ? nil : .nanoseconds(nanoseconds)
    }
}

/// A query ran past the query timeout and was stopped: 503, with a message that says so and
/// what the client can change, among what it sent.
struct QueryTimedOut: Error, CustomStringConvertible {
    /// The limit, when known.
    var seconds: Int?
    /// The deadline passed while the work still waited for the database (every connection was
    /// busy): the query itself was not slow.
    var waitedForDatabase = false
    /// What the client can ask for instead, e.g. "narrow the $filter or ask for smaller pages".
    var advice: String?

    var message: String {
        let limit = seconds.map { " (\($0) s)" } ?? ""
        if waitedForDatabase {
            return "the server's database was busy: no connection came free within the query timeout\(limit); try again later"
        }
        return "the query took longer than the server allows\(limit) and was stopped" + (advice.map { ": " + $0 } ?? "")
    }

    var description: String { message }
}

/// The client closed its connection while its request was being worked on: the work stops, and
/// the request is logged as 499 (nginx's "client closed request"), not as a failure of the server.
struct ClientGone: Error {}
