import PostgresNIO
import TSyncModel

/// A request that inserts one record, in one round trip: a PL/pgSQL function (schema step 4)
/// runs the statements of a write transaction (`WriteFloor.register`, the locked read, the
/// `INSERT`) as one autocommit call, instead of five round trips (`BEGIN`, floor, read,
/// `INSERT`, `COMMIT`) that kept the server's time in task switches (docs/DESIGN.md §10).
///
/// What keeps the write floor's argument true inside one call: under READ COMMITTED each
/// statement of a VOLATILE function takes a new snapshot (PostgreSQL's "Function Volatility
/// Categories"), so the read after the floor sees what committed before readers could see the
/// floor, as the separate statements did. The connections' default isolation is READ COMMITTED
/// (`PostgresDatabase`), and the function refuses to run under any other.
enum SingleInsert {
    /// The function as schema step 4 made it (a released step is never edited: step 6 replaces it).
    static let firstDefinition = #"""
        CREATE FUNCTION tsync_insert_one(
            table_key text, table_hash integer, writers_key integer, floor_key bigint, largest_floor bigint, now_ms bigint,
            channel text, payload text, record_id text, record_owner text, record_version text, record_body text,
            OUT stamp_ms bigint, OUT found_created_at text, OUT found_updated_at text, OUT found_version text,
            OUT found_deleted boolean, OUT found_owner text, OUT found_body text)
        LANGUAGE plpgsql VOLATILE AS $$
        DECLARE
            floor_ms bigint;
            newest_ms bigint;
            stamp text;
        BEGIN
            IF current_setting('transaction_isolation') <> 'read committed' THEN
                RAISE EXCEPTION 'tsync_insert_one needs READ COMMITTED, not %', current_setting('transaction_isolation');
            END IF;
            -- The floor (WriteFloor.register), its two shared locks and the table's NOTIFY, which
            -- PostgreSQL delivers when the call commits: also when it writes nothing, since a held
            -- read may have stopped below the floor.
            SELECT greatest(now_ms, (extract(epoch FROM max(r.updated_at)::timestamptz) * 1000)::bigint + 1) INTO floor_ms
                FROM tsync_records AS r WHERE r.table_name = table_key;
            PERFORM pg_advisory_xact_lock_shared(writers_key, table_hash),
                pg_advisory_xact_lock_shared(floor_key | greatest(0, least(floor_ms, largest_floor))), pg_notify(channel, payload);
            -- A new snapshot from here on: the record, locked, when the id is taken.
            SELECT r.created_at, r.updated_at, r.version, r.deleted, r.owner, r.body::text
                INTO found_created_at, found_updated_at, found_version, found_deleted, found_owner, found_body
                FROM tsync_records AS r WHERE r.table_name = table_key AND r.id = record_id FOR UPDATE;
            IF FOUND THEN
                RETURN;
            END IF;
            SELECT (extract(epoch FROM max(r.updated_at)::timestamptz) * 1000)::bigint INTO newest_ms
                FROM tsync_records AS r WHERE r.table_name = table_key;
            -- WriteFloor.stamp; the text is Timestamp.iso8601's.
            stamp_ms := greatest(floor_ms, now_ms, newest_ms + 1);
            stamp := to_char(timestamp '1970-01-01' + stamp_ms * interval '1 millisecond', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
            INSERT INTO tsync_records (table_name, id, created_at, updated_at, version, deleted, owner, body, body_text)
                VALUES (table_key, record_id, stamp, stamp, record_version, false, record_owner, record_body::jsonb, record_body);
        END
        $$
        """#

    /// Schema step 6: step 4's function, which also appends the record's first version to the
    /// history (`keep_history`), with the account that wrote it.
    static let functionDefinition = #"""
        CREATE FUNCTION tsync_insert_one(
            table_key text, table_hash integer, writers_key integer, floor_key bigint, largest_floor bigint, now_ms bigint,
            channel text, payload text, record_id text, record_owner text, record_version text, record_body text,
            record_user text, keep_history boolean,
            OUT stamp_ms bigint, OUT found_created_at text, OUT found_updated_at text, OUT found_version text,
            OUT found_deleted boolean, OUT found_owner text, OUT found_body text)
        LANGUAGE plpgsql VOLATILE AS $$
        DECLARE
            floor_ms bigint;
            newest_ms bigint;
            stamp text;
        BEGIN
            IF current_setting('transaction_isolation') <> 'read committed' THEN
                RAISE EXCEPTION 'tsync_insert_one needs READ COMMITTED, not %', current_setting('transaction_isolation');
            END IF;
            -- The floor (WriteFloor.register), its two shared locks and the table's NOTIFY, which
            -- PostgreSQL delivers when the call commits: also when it writes nothing, since a held
            -- read may have stopped below the floor.
            SELECT greatest(now_ms, (extract(epoch FROM max(r.updated_at)::timestamptz) * 1000)::bigint + 1) INTO floor_ms
                FROM tsync_records AS r WHERE r.table_name = table_key;
            PERFORM pg_advisory_xact_lock_shared(writers_key, table_hash),
                pg_advisory_xact_lock_shared(floor_key | greatest(0, least(floor_ms, largest_floor))), pg_notify(channel, payload);
            -- A new snapshot from here on: the record, locked, when the id is taken.
            SELECT r.created_at, r.updated_at, r.version, r.deleted, r.owner, r.body::text
                INTO found_created_at, found_updated_at, found_version, found_deleted, found_owner, found_body
                FROM tsync_records AS r WHERE r.table_name = table_key AND r.id = record_id FOR UPDATE;
            IF FOUND THEN
                RETURN;
            END IF;
            SELECT (extract(epoch FROM max(r.updated_at)::timestamptz) * 1000)::bigint INTO newest_ms
                FROM tsync_records AS r WHERE r.table_name = table_key;
            -- WriteFloor.stamp; the text is Timestamp.iso8601's.
            stamp_ms := greatest(floor_ms, now_ms, newest_ms + 1);
            stamp := to_char(timestamp '1970-01-01' + stamp_ms * interval '1 millisecond', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
            INSERT INTO tsync_records (table_name, id, created_at, updated_at, version, deleted, owner, body, body_text)
                VALUES (table_key, record_id, stamp, stamp, record_version, false, record_owner, record_body::jsonb, record_body);
            -- Its version, in the same call (docs/DESIGN.md §6.5).
            IF keep_history THEN
                INSERT INTO tsync_history (table_name, id, created_at, updated_at, version, deleted, owner, user_name, operation, body_text)
                    VALUES (table_key, record_id, stamp, stamp, record_version, false, record_owner, record_user, 'insert', record_body);
            END IF;
        END
        $$
        """#

    /// What the call did.
    enum Answer {
        /// Stored with this `updatedAt` (and `createdAt`).
        case inserted(Timestamp)
        /// The id is taken: the stored record (as the locked read of a write transaction gives
        /// it) and its owner.
        case found(Record, owner: String?)
    }

    /// Drops step 4's function, whose arguments step 6's extends.
    static let dropFirstDefinition =
        "DROP FUNCTION tsync_insert_one(text, integer, integer, bigint, bigint, bigint, text, text, text, text, text, text)"

    /// Inserts `record` (its id, version and fields as the write rules made them) into table `key`,
    /// and its version into the history when `keepHistory`, as written by `user`.
    static func run(
        _ database: PostgresDatabase, key: String, record: Record, owner: String?, user: String?, keepHistory: Bool, now: Timestamp,
        notice: (channel: String, payload: String)
    ) async throws -> Answer {
        var statement = PostgresStatement("SELECT * FROM tsync_insert_one(")
        let hash = WriteFloor.tableHash(key)
        let arguments = [
            statement.bind(key), statement.bind(hash) + "::integer", statement.bind(WriteFloor.writersKey) + "::integer",
            statement.bind(hash << Int64(WriteFloor.floorBits)), statement.bind(WriteFloor.largestFloor),
            statement.bind(now.millisecondsSinceEpoch), statement.bind(notice.channel), statement.bind(notice.payload),
            statement.bind(record.id), statement.bind(owner), statement.bind(record.system.version ?? ""),
            statement.bind(JSONSerializer.string(.object(record.fields))), statement.bind(user), statement.bind(keepHistory),
        ]
        statement.append(arguments.joined(separator: ", ") + ")")
        guard let row = try await database.rows(statement).first else {
            throw TSyncError.failure("PostgreSQL at \(database.url): tsync_insert_one gave no row")
        }
        let (stamp, createdAt, updatedAt, version, deleted, foundOwner, body) = try row.decode(
            (Int64?, String?, String?, String?, Bool?, String?, String?).self)
        if let stamp { return .inserted(Timestamp(millisecondsSinceEpoch: stamp)) }
        guard let createdAt, let updatedAt, let version, let deleted, let body else {
            throw TSyncError.failure("PostgreSQL at \(database.url): tsync_insert_one gave neither a time nor a record")
        }
        let found = try PostgresStorage.record(
            id: record.id, createdAt: createdAt, updatedAt: updatedAt, version: version, deleted: deleted, body: body)
        return .found(found, owner: foundOwner)
    }
}
