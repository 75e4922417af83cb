import PostgresNIO
import TSyncModel
import TSyncQuery

/// A page of an incremental pull in one round trip: a PL/pgSQL function (schema step 5) looks at
/// the table's writers (`WriteFloor.pullCap`) and reads the page below them, and gives the page
/// as one text. Before, a page took four statements (`BEGIN`, the look, the page, `COMMIT`), each
/// parsed and planned, and a row per record, each decoded by the server: a pull over PostgreSQL
/// took twice as long as over SQLite (docs/DESIGN.md §6.3, §10).
///
/// Only the walk tsync's client makes takes this path: pages ordered by `updatedAt, id`, from the
/// start or after a checkpoint (`Checkpoint.filterAfter`), without `$skip`, `$select` or a count.
/// Any other page, and a page whose text is not what this expects, takes the general path.
///
/// What keeps the write floor's argument true inside one call is what keeps it in
/// `tsync_insert_one` (`SingleInsert`): under READ COMMITTED each statement of a VOLATILE function
/// takes a new snapshot, so the page is read after the look at the writers, as the separate
/// statements were; and the function refuses any other isolation.
enum PullPage {
    typealias Start = PullWalk.Start
    typealias Walk = PullWalk

    /// A page the function read: its records, and where the last one stands.
    struct Page: PullWalkPage {
        var written: WrittenRecords
        var last: Start?
        var walkedCount: Int { written.count }
        var walkEnd: Start? { last }
        var walkedBytes: Int { written.bytes.count }
    }

    /// `query` of `table` as a page of the walk; nil for any other query.
    static func walk(table: String, _ query: RecordQuery, scope: OwnerScope) -> Walk? {
        PullWalk(table: PostgresSchema.tableKey(table), query, scope: scope)
    }
}

extension PullWalk {
    /// The values both functions begin with, in their parameters' order: the table, its
    /// writers' lock, the owner where `withOwner` (a group's function takes none), and the
    /// position and size of the page.
    func bindings(withOwner: Bool) -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(table)
        bindings.append(Int32(WriteFloor.tableHash(table)))
        bindings.append(Int32(WriteFloor.writersKey))
        if withOwner { bindings.append(owner) }
        bindings.append(includeDeleted)
        bindings.append(start.updatedAt)
        bindings.append(start.id)
        bindings.append(Int32(top))
        return bindings
    }
}

extension PullPage {
    /// The separators of the page's text: between the columns of a record, and between records.
    /// Neither can be in a column: ids refuse control characters (`Identifiers`), timestamps and
    /// versions are the server's, and JSON text escapes them. A page where one is anyway has a
    /// record with the wrong number of columns, and takes the general path.
    static let columnSeparator = UInt8(0x1F)
    static let recordSeparator = UInt8(0x1E)

    static let functionDefinition = #"""
        CREATE FUNCTION tsync_pull_page(
            table_key text, table_hash integer, writers_key integer, record_owner text, include_deleted boolean,
            after_updated text, after_id text, page_size integer, OUT page text)
        LANGUAGE plpgsql VOLATILE AS $$
        DECLARE
            newest text;
            floor_ms bigint;
            cap text;
        BEGIN
            IF current_setting('transaction_isolation') <> 'read committed' THEN
                RAISE EXCEPTION 'tsync_pull_page needs READ COMMITTED, not %', current_setting('transaction_isolation');
            END IF;
            -- Pull order is served by the (table, updated_at, id) index, also before the planner
            -- has statistics (PostgresStorage.query).
            PERFORM set_config('enable_sort', 'off', true);
            -- The look at the writers (WriteFloor.pullCap): the newest updatedAt, then the floors
            -- of the writers in flight, none when the writers' lock can be taken.
            SELECT max(r.updated_at) INTO newest FROM tsync_records AS r WHERE r.table_name = table_key;
            IF newest IS NULL THEN
                RETURN;
            END IF;
            IF pg_try_advisory_lock(writers_key, table_hash) THEN
                PERFORM pg_advisory_unlock(writers_key, table_hash);
            ELSE
                SELECT min(((l.classid::bigint & 1023) << 32) | l.objid::bigint) INTO floor_ms FROM pg_locks AS l
                    WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.classid::bigint >> 10 = table_hash
                    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database());
            END IF;
            -- Below the least floor and 1 ms past the newest; the text is Timestamp.iso8601's.
            cap := to_char(timestamp '1970-01-01'
                + least((extract(epoch FROM newest::timestamptz) * 1000)::bigint + 1, floor_ms) * interval '1 millisecond',
                'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
            -- A new snapshot from here on: the page, each record's columns and the records
            -- separated by PullPage's separators (flags: 't' or 'f' for deleted, then 'j' when the
            -- body is the jsonb's text, a row written before step 3).
            IF record_owner IS NULL THEN
                SELECT string_agg(concat_ws(E'\x1F', p.id, p.created_at, p.updated_at, p.version, p.flags, p.body), E'\x1E') INTO page
                    FROM (SELECT r.id, r.created_at, r.updated_at, r.version,
                            CASE WHEN r.deleted THEN 't' ELSE 'f' END || CASE WHEN r.body_text IS NULL THEN 'j' ELSE '' END AS flags,
                            coalesce(r.body_text, r.body::text) AS body
                        FROM tsync_records AS r
                        WHERE r.table_name = table_key AND (include_deleted OR NOT r.deleted)
                            AND (r.updated_at, r.id) > (after_updated COLLATE "C", after_id COLLATE "C") AND r.updated_at < cap COLLATE "C"
                        ORDER BY r.updated_at, r.id LIMIT page_size) AS p;
            ELSE
                SELECT string_agg(concat_ws(E'\x1F', p.id, p.created_at, p.updated_at, p.version, p.flags, p.body), E'\x1E') INTO page
                    FROM (SELECT r.id, r.created_at, r.updated_at, r.version,
                            CASE WHEN r.deleted THEN 't' ELSE 'f' END || CASE WHEN r.body_text IS NULL THEN 'j' ELSE '' END AS flags,
                            coalesce(r.body_text, r.body::text) AS body
                        FROM tsync_records AS r
                        WHERE r.table_name = table_key AND r.owner = record_owner AND (include_deleted OR NOT r.deleted)
                            AND (r.updated_at, r.id) > (after_updated COLLATE "C", after_id COLLATE "C") AND r.updated_at < cap COLLATE "C"
                        ORDER BY r.updated_at, r.id LIMIT page_size) AS p;
            END IF;
        END
        $$
        """#

    /// The call, its text and values (`PostgresDatabase.call` sends it unnamed: a pooler in
    /// transaction mode gives each transaction another server connection, where a statement
    /// prepared by name would be missing, or there already).
    struct Call: PostgresPreparedStatement {
        static let name = "tsync_pull_page"
        static let sql = "SELECT page FROM tsync_pull_page($1, $2, $3, $4, $5, $6, $7, $8)"
        typealias Row = PostgresRow

        var walk: Walk

        func makeBindings() throws -> PostgresBindings { walk.bindings(withOwner: true) }

        func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
    }

    /// The page of `walk`; nil when its text is not in the form this reads, for the general
    /// path to answer.
    static func read(_ database: PostgresDatabase, _ walk: Walk) async throws -> Page? {
        if let view = walk.view { return try await readGroup(database, walk, view) }
        return try await database.call(Call(walk: walk)) { rows in
            guard let cell = rows.first?.first else { return nil }
            return try page(of: cell, top: walk.top)
        }
    }

    /// The page of a call's text cell (NULL: no records); nil when it is not text.
    static func page(of cell: PostgresCell, top: Int) throws -> Page? {
        guard let text = cell.bytes else { return Page(written: WrittenRecords(), last: nil) }
        guard cell.format == .binary, cell.dataType == .text else { return nil }
        return try text.withBytes { try page($0, top: top) }
    }

    /// The records of a page's text, written out; nil when a record has other than six columns,
    /// when the records are not in the walk's order, or when there are more than `top`.
    static func page(_ text: UnsafeBufferPointer<UInt8>, top: Int) throws -> Page? {
        var written = WrittenRecords()
        var previous: (updatedAt: UnsafeBufferPointer<UInt8>, id: UnsafeBufferPointer<UInt8>)?
        var cursor = 0
        while cursor < text.count {
            guard written.count < top, let record = TextRecord(text, from: &cursor) else { return nil }
            if let previous {
                let later =
                    previous.updatedAt.lexicographicallyPrecedes(record.updatedAt)
                    || (previous.updatedAt.elementsEqual(record.updatedAt) && previous.id.lexicographicallyPrecedes(record.id))
                guard later else { return nil }
            }
            previous = (record.updatedAt, record.id)
            if record.fromJSONB {
                try written.append(record.pageRecord())
                continue
            }
            try written.appendStored(deleted: record.deleted) { writer, output in
                writer.id(record.id, to: &output)
                writer.createdAt(record.createdAt, to: &output)
                writer.updatedAt(record.updatedAt, to: &output)
                writer.version(record.version, to: &output)
                writer.fields(record.body, to: &output)
            } general: {
                try record.pageRecord()
            }
        }
        let last = previous.map {
            Start(updatedAt: String(decoding: $0.updatedAt, as: UTF8.self), id: String(decoding: $0.id, as: UTF8.self))
        }
        return Page(written: written, last: last)
    }

    /// One record of a page's text: its columns, in the text.
    private struct TextRecord {
        var id, createdAt, updatedAt, version, body: UnsafeBufferPointer<UInt8>
        var deleted: Bool
        /// The body is the jsonb's text (a row written before schema step 3), not tsync's.
        var fromJSONB: Bool

        /// Reads the record at `cursor` and moves it past the record's separator; nil when the
        /// record has other than six columns or unknown flags.
        init?(_ text: UnsafeBufferPointer<UInt8>, from cursor: inout Int) {
            func next(upTo separator: UInt8) -> UnsafeBufferPointer<UInt8>? {
                let start = cursor
                while cursor < text.count, text[cursor] != separator {
                    // A column separator in the last column, or a record one in the others.
                    if text[cursor] == PullPage.columnSeparator || text[cursor] == PullPage.recordSeparator { return nil }
                    cursor += 1
                }
                guard separator == PullPage.recordSeparator || cursor < text.count else { return nil }
                defer { cursor += 1 }
                return UnsafeBufferPointer(rebasing: text[start..<cursor])
            }
            guard let id = next(upTo: PullPage.columnSeparator), let createdAt = next(upTo: PullPage.columnSeparator),
                let updatedAt = next(upTo: PullPage.columnSeparator), let version = next(upTo: PullPage.columnSeparator),
                let flags = next(upTo: PullPage.columnSeparator), let body = next(upTo: PullPage.recordSeparator)
            else { return nil }
            // "t" or "f" (deleted or not), then "j" when the body is the jsonb's text.
            guard let flag = flags.first, flag == UInt8(ascii: "t") || flag == UInt8(ascii: "f"),
                flags.count == 1 || (flags.count == 2 && flags.last == UInt8(ascii: "j"))
            else { return nil }
            deleted = flag == UInt8(ascii: "t")
            fromJSONB = flags.count == 2
            (self.id, self.createdAt, self.updatedAt, self.version, self.body) = (id, createdAt, updatedAt, version, body)
        }

        /// The record for the general path (`PostgresStorage.pageRecord`).
        func pageRecord() throws -> PageRecord {
            func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String { String(decoding: bytes, as: UTF8.self) }
            let text = string(body)
            return try PostgresStorage.pageRecord(
                id: string(id), createdAt: string(createdAt), updatedAt: string(updatedAt), version: string(version), deleted: deleted,
                text: fromJSONB ? nil : text, jsonb: fromJSONB ? text : nil)
        }
    }
}
