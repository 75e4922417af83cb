import PostgresNIO
import Synchronization
import TSyncModel

/// The tables of `tsync_tables` and who created them, on PostgreSQL (docs/DESIGN.md §10.1): a
/// write transaction that inserts into a table this instance has not seen registered registers
/// it first, in the same transaction, unless its account has created `limit` tables already.
/// Without a limit (0) nothing is registered: a table made then is nobody's.
final class TableRegistry: Sendable {
    /// Tables known to be registered (tables are never dropped, so a known name stays true).
    private let known = Mutex<Set<String>>([])
    /// Tables one account may create; 0 for no limit.
    let limit = Atomic(0)

    /// The key of the lock that makes one account's table creations count one after another:
    /// two 32-bit keys, this one and the account's hash ("tstb" in ASCII), apart from
    /// `WriteFloor`'s.
    static let lockKey: Int64 = 0x7473_7462

    func isKnown(_ key: String) -> Bool { known.withLock { $0.contains(key) } }

    func remember(_ keys: some Sequence<String>) { known.withLock { $0.formUnion(keys) } }

    /// Registers table `key` as `account`'s inside `transaction`, or finds it registered; false
    /// when the account may create no more tables.
    func register(_ transaction: PostgresTransaction, key: String, account: String?, now: Timestamp) async throws -> Bool {
        if try await exists(transaction, key) { return true }
        let limit = limit.load(ordering: .relaxed)
        if let account {
            var lock = PostgresStatement("SELECT pg_advisory_xact_lock(")
            lock.append(lock.bind(Self.lockKey) + "::integer, hashtext(" + lock.bind(account) + "))")
            try await transaction.execute(lock)
        }
        var insert = PostgresStatement("INSERT INTO tsync_tables (table_name, account_name, created_at) SELECT ")
        let owner = insert.bind(account) + "::text"
        let bound = insert.bind(Int64(limit))
        insert.append(insert.bind(key) + ", \(owner), " + insert.bind(now.iso8601))
        insert.append(" WHERE \(owner) IS NULL OR (SELECT count(*) FROM tsync_tables WHERE account_name = \(owner)) < \(bound)")
        insert.append(" ON CONFLICT (table_name) DO NOTHING RETURNING 1")
        if try await !transaction.rows(insert).isEmpty { return true }
        // Nothing inserted: over the limit, or another transaction registered it meanwhile.
        return try await exists(transaction, key)
    }

    private func exists(_ transaction: PostgresTransaction, _ key: String) async throws -> Bool {
        var select = PostgresStatement("SELECT 1 FROM tsync_tables WHERE table_name = ")
        select.append(select.bind(key))
        return try await !transaction.rows(select).isEmpty
    }
}
