import TSyncModel

/// How writers of one table run in parallel while an incremental pull still skips nothing
/// (docs/DESIGN.md §10).
///
/// A write transaction first registers a *floor*, a time its `updatedAt` will not be below, as a
/// shared transaction-level advisory lock whose key holds the table's hash and the floor: shared
/// locks never wait on each other, PostgreSQL shows them to every session at once (`pg_locks`),
/// and they end with the transaction, whether it commits, rolls back or its connection dies. Its
/// later statements stamp the records at least the floor and more than every `updatedAt` they
/// see. A pull-shaped read first looks at the table's newest `updatedAt` (M) and then at the
/// floors registered (L, the least), and reads its page, in a later statement, below both
/// (`updated_at < min(L, M + 1)`). What that page leaves out cannot come back below it: a
/// transaction whose floor was seen stamps at least L; one not seen registered after the look,
/// so its next statement saw M and it stamps above.
enum WriteFloor {
    /// Bits of the key for the floor (milliseconds since 1970: enough until 2109); a floor past
    /// them is registered as the largest that fits, which is below it and so still true (one
    /// before 1970, which no wall clock gives, as 0).
    static let floorBits = 42
    static let largestFloor: Int64 = (1 << floorBits) - 1
    /// Bits of the key for the table (21: the key stays positive). Two tables with the same
    /// hash see each other's floors: their reads are capped lower than they need, never higher.
    static let tableBits = 21
    /// With the table's hash, the key of a second shared lock every writer of the table holds:
    /// a reader that can take it exclusively knows, without reading `pg_locks` (0.2 ms of the
    /// database's time), that no writer is in flight. Two 32-bit keys, so apart from every
    /// 64-bit one. ("tswr" in ASCII.)
    static let writersKey: Int64 = 0x7473_7772

    /// The table part of a lock key, already shifted: FNV-1a of the table key, so every instance
    /// computes the same.
    static func tableHash(_ key: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return Int64(hash & ((1 << UInt64(tableBits)) - 1))
    }

    /// Registers this transaction's floor for table `key` and returns it: the wall clock, or the
    /// newest `updatedAt` of the table + 1 ms when that is later. A statement of its own, before
    /// the statements that read records, so that they see what committed before readers could
    /// see the floor.
    /// - Parameter notice: a `NOTIFY` (channel, payload) sent by the same statement, sparing a
    ///   round trip: PostgreSQL delivers it when, and only if, the transaction commits.
    static func register(
        _ transaction: PostgresTransaction, key: String, now: Timestamp, notice: (channel: String, payload: String)? = nil
    ) async throws -> Timestamp {
        // The floor first: the columns after it (the locks', the notice's) are void.
        var statement = PostgresStatement("SELECT f.floor, pg_advisory_xact_lock_shared(")
        statement.append(statement.bind(writersKey) + "::integer, " + statement.bind(tableHash(key)) + "::integer), ")
        statement.append("pg_advisory_xact_lock_shared(")
        let hash = statement.bind(tableHash(key) << Int64(floorBits))
        let largest = statement.bind(largestFloor)
        statement.append("\(hash) | greatest(0, least(f.floor, \(largest))))")
        if let notice { statement.append(", pg_notify(\(statement.bind(notice.channel)), \(statement.bind(notice.payload)))") }
        let clock = statement.bind(now.millisecondsSinceEpoch)
        statement.append(
            " FROM (SELECT greatest(\(clock), (extract(epoch FROM max(updated_at)::timestamptz) * 1000)::bigint + 1) AS floor "
                + "FROM tsync_records WHERE table_name = \(statement.bind(key))) AS f")
        guard let row = try await transaction.rows(statement).first else { return now }
        let floor = try row.makeRandomAccess()[0].decode(Int64?.self)
        return Timestamp(millisecondsSinceEpoch: floor ?? now.millisecondsSinceEpoch)
    }

    /// The `updatedAt` of a transaction's writes to one table: its floor, the wall clock, or
    /// 1 ms past the newest it saw (the table's, and its locked records', which may be newer),
    /// whichever is last.
    static func stamp(floor: Timestamp, now: Timestamp, newest: Timestamp?) -> Timestamp {
        let next = newest.map { Timestamp(millisecondsSinceEpoch: $0.millisecondsSinceEpoch + 1) } ?? floor
        return max(floor, now, next)
    }

    /// The cap of a pull-shaped page of table `key`: read only records whose `updatedAt` is
    /// before it; nil when nothing may be read yet (the table had no record when it looked).
    /// Also turns off sorts for the transaction (`PostgresStorage.query`), sparing a round trip.
    static func pullCap(_ transaction: PostgresTransaction, key: String) async throws -> Timestamp? {
        // No writer in flight when the writers' lock can be taken; it is let go at once (a
        // writer that comes meanwhile waits microseconds, and other readers are not kept out).
        // Else the floors.
        var statement = PostgresStatement("SELECT set_config('enable_sort', 'off', true), (SELECT max(updated_at) FROM tsync_records ")
        statement.append("WHERE table_name = \(statement.bind(key))), ")
        let hash = statement.bind(tableHash(key))
        let writers = "\(statement.bind(writersKey))::integer, \(hash)::integer"
        statement.append(
            "CASE WHEN pg_try_advisory_lock(\(writers)) THEN (CASE WHEN pg_advisory_unlock(\(writers)) THEN NULL::bigint END) ")
        statement.append("ELSE (SELECT min(((l.classid::bigint & 1023) << 32) | l.objid::bigint) ")
        statement.append("FROM pg_locks AS l WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.classid::bigint >> 10 = \(hash)")
        statement.append(" AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())) END")
        guard let row = try await transaction.rows(statement).first else { return nil }
        let (_, newestText, floor) = try row.decode((String?, String?, Int64?).self)
        guard let newest = newestText.flatMap(Timestamp.init(iso8601:)) else { return nil }
        let afterNewest = Timestamp(millisecondsSinceEpoch: newest.millisecondsSinceEpoch + 1)
        guard let floor else { return afterNewest }
        return min(afterNewest, Timestamp(millisecondsSinceEpoch: floor))
    }
}
