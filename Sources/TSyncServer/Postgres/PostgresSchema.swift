import PostgresNIO
import TSyncModel
import TSyncQuery

/// One step of the PostgreSQL schema. Steps are applied in `version` order, each exactly once,
/// and recorded in `schema_migrations`; a released step is never edited, only followed by another.
struct PostgresMigration: Sendable {
    var version: Int
    var name: String
    /// Run in order inside the migration transaction (PostgreSQL DDL is transactional).
    var statements: [String]
}

/// The PostgreSQL layout of the server database, created and upgraded by the server itself.
///
/// All sync tables share one `tsync_records` table keyed by (table, id), so a sync table needs no
/// DDL when it is first written (no `CREATE TABLE` racing between instances) and a later
/// migration changes every table at once. Table names are stored in lower case: sync table names
/// are case-insensitive, as on SQLite.
///
/// Text columns that TSyncQuery compares or sorts are `COLLATE "C"`, the byte order its
/// PostgreSQL rendering asks for, so that the (table, updated_at, id) index serves incremental
/// pulls. Timestamps are TEXT in `Timestamp.iso8601` form, whose text order is time order.
enum PostgresSchema {
    static let migrations: [PostgresMigration] = [
        PostgresMigration(
            version: 1, name: "records, table clocks, accounts, tokens, login attempts",
            statements: [
                """
                CREATE TABLE tsync_records (
                    table_name text COLLATE "C" NOT NULL,
                    id text COLLATE "C" NOT NULL,
                    created_at text COLLATE "C" NOT NULL,
                    updated_at text COLLATE "C" NOT NULL,
                    version text COLLATE "C" NOT NULL,
                    deleted boolean NOT NULL DEFAULT false,
                    owner text,
                    body jsonb NOT NULL,
                    PRIMARY KEY (table_name, id)
                )
                """,
                "CREATE INDEX tsync_records_by_updated ON tsync_records (table_name, updated_at, id)",
                // The last updatedAt given out per table, in milliseconds. Its row was the per-table
                // write lock; no longer written since writers run in parallel (`WriteFloor`).
                """
                CREATE TABLE tsync_table_clocks (
                    table_name text COLLATE "C" PRIMARY KEY,
                    last_updated_at bigint NOT NULL
                )
                """,
                """
                CREATE TABLE tsync_accounts (
                    name text PRIMARY KEY,
                    password_hash text NOT NULL,
                    created_at text NOT NULL
                )
                """,
                """
                CREATE TABLE tsync_tokens (
                    token_hash text PRIMARY KEY,
                    account_name text NOT NULL,
                    expires_at bigint NOT NULL
                )
                """,
                "CREATE INDEX tsync_tokens_by_account ON tsync_tokens (account_name)",
                "CREATE INDEX tsync_tokens_by_expiry ON tsync_tokens (expires_at)",
                """
                CREATE TABLE tsync_login_attempts (
                    key text PRIMARY KEY,
                    attempts integer NOT NULL,
                    window_end bigint NOT NULL
                )
                """,
                "CREATE INDEX tsync_login_attempts_by_end ON tsync_login_attempts (window_end)",
            ]
        ),
        PostgresMigration(
            version: 2, name: "known clients",
            statements: [
                """
                CREATE TABLE tsync_known_clients (
                    key text PRIMARY KEY,
                    account_name text NOT NULL,
                    expires_at bigint NOT NULL
                )
                """,
                "CREATE INDEX tsync_known_clients_by_account ON tsync_known_clients (account_name, expires_at)",
                "CREATE INDEX tsync_known_clients_by_expiry ON tsync_known_clients (expires_at)",
                // A per-user read walks its own user's records only (docs/DESIGN.md §10).
                "CREATE INDEX tsync_records_by_owner ON tsync_records (table_name, owner, updated_at, id)",
            ]
        ),
        PostgresMigration(
            version: 3, name: "the body as tsync wrote it",
            statements: [
                // jsonb keeps no text: a page read from it had every record parsed and written again.
                // `body_text` holds the JSON tsync stored, which a page sends as it is (docs/DESIGN.md
                // §6.3); NULL in rows written before this step, which are parsed as before.
                "ALTER TABLE tsync_records ADD COLUMN body_text text"
            ]
        ),
        PostgresMigration(
            version: 4, name: "a single insert in one round trip",
            statements: [SingleInsert.firstDefinition]
        ),
        PostgresMigration(
            version: 5, name: "a pull's page in one round trip",
            statements: [PullPage.functionDefinition]
        ),
        PostgresMigration(
            version: 6, name: "record history, deleted horizons",
            statements: [
                // docs/DESIGN.md §6.5: one row per version of a record, written in the write's own
                // transaction. `seq` orders the versions of one record written in one transaction
                // (they share their `updatedAt`); the index serves a record's versions newest
                // first and a table at a time (each id's newest version before it, in id order).
                """
                CREATE TABLE tsync_history (
                    table_name text COLLATE "C" NOT NULL,
                    id text COLLATE "C" NOT NULL,
                    seq bigint GENERATED ALWAYS AS IDENTITY,
                    created_at text COLLATE "C" NOT NULL,
                    updated_at text COLLATE "C" NOT NULL,
                    version text COLLATE "C" NOT NULL,
                    deleted boolean NOT NULL,
                    owner text,
                    user_name text,
                    operation text NOT NULL,
                    body_text text NOT NULL
                )
                """,
                "CREATE INDEX tsync_history_by_record ON tsync_history (table_name, id, updated_at, seq)",
                // Per table, the newest `updatedAt` of a tombstone `--keep-deleted` removed.
                """
                CREATE TABLE tsync_deleted_horizons (
                    table_name text COLLATE "C" PRIMARY KEY,
                    horizon text COLLATE "C" NOT NULL
                )
                """,
                SingleInsert.dropFirstDefinition,
                SingleInsert.functionDefinition,
            ]
        ),
        PostgresMigration(
            version: 7, name: "bounded strings in filters",
            statements: StringBound.functionDefinitions
        ),
        PostgresMigration(
            version: 8, name: "who created each table",
            statements: [
                // docs/DESIGN.md §10.1: the tables an account created count against its limit
                // (`TableRegistry`). Tables made before are nobody's.
                """
                CREATE TABLE tsync_tables (
                    table_name text COLLATE "C" PRIMARY KEY,
                    account_name text,
                    created_at text NOT NULL
                )
                """,
                "CREATE INDEX tsync_tables_by_account ON tsync_tables (account_name)",
                """
                INSERT INTO tsync_tables (table_name, account_name, created_at)
                SELECT DISTINCT table_name, NULL::text, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
                FROM tsync_records
                """,
            ]
        ),
        PostgresMigration(
            version: 9, name: "roles and groups of accounts, scoped tokens",
            statements: [
                // docs/DESIGN.md §11.1: read with the token on every request, so a change applies
                // to every instance's next request.
                """
                CREATE TABLE tsync_account_labels (
                    account_name text NOT NULL,
                    kind text NOT NULL,
                    label text COLLATE "C" NOT NULL,
                    PRIMARY KEY (account_name, kind, label)
                )
                """,
                "ALTER TABLE tsync_tokens ADD COLUMN scope text NOT NULL DEFAULT ''",
            ]
        ),
        PostgresMigration(
            version: 10, name: "records that leave or come into an account's view",
            statements: [
                // docs/DESIGN.md §11.1: a record's exit from a group, written with the write; an
                // account's joins and leaves, at a time past every table's; when each label was
                // given ('' before: always).
                """
                CREATE TABLE tsync_record_exits (
                    table_name text COLLATE "C" NOT NULL,
                    grp text COLLATE "C" NOT NULL,
                    id text COLLATE "C" NOT NULL,
                    at text COLLATE "C" NOT NULL,
                    PRIMARY KEY (table_name, grp, at, id)
                )
                """,
                "CREATE INDEX tsync_record_exits_by_at ON tsync_record_exits (at)",
                """
                CREATE TABLE tsync_label_changes (
                    account_name text NOT NULL,
                    kind text NOT NULL,
                    label text COLLATE "C" NOT NULL,
                    joined boolean NOT NULL,
                    at text COLLATE "C" NOT NULL,
                    since text COLLATE "C" NOT NULL,
                    PRIMARY KEY (account_name, at, kind, label)
                )
                """,
                "CREATE INDEX tsync_label_changes_by_at ON tsync_label_changes (at)",
                "ALTER TABLE tsync_account_labels ADD COLUMN since text COLLATE \"C\" NOT NULL DEFAULT ''",
            ]
        ),
        PostgresMigration(
            version: 11, name: "a record's exits by id",
            statements: [
                // docs/DESIGN.md §11.1: a pull takes only a record's last exit, looked up by id.
                "CREATE INDEX tsync_record_exits_by_id ON tsync_record_exits (table_name, id, at)"
            ]
        ),
        PostgresMigration(
            version: 12, name: "a group's pull page in one round trip",
            statements: [PullPage.groupFunctionDefinition]
        ),
    ]

    /// How TSyncQuery addresses a record: system properties by column, user fields inside `body`.
    static let querySchema = SQLSchema(
        dialect: .postgres, bodyColumn: "body", systemColumns: SQLSchema.snakeCaseSystemColumns, boundsStrings: true)

    static let recordColumns = "id, created_at, updated_at, version, deleted, owner, body"

    /// The columns of a page: the body's text where it was kept, else its jsonb (never both: a
    /// page of large records would cross the connection twice).
    static let pageColumns = "id, created_at, updated_at, version, deleted, body_text, CASE WHEN body_text IS NULL THEN body END"

    /// The key of a sync table in `tsync_records` and `tsync_table_clocks`.
    static func tableKey(_ table: String) -> String { table.lowercased() }

    /// Key of the advisory lock that serializes migrations between instances starting together.
    /// (An arbitrary constant: "tsyn" in ASCII.)
    static let migrationLockKey: Int64 = 0x7473_796E

    /// Applies the migrations the database lacks, in one transaction under an advisory lock:
    /// when several instances start at once, one migrates and the others then find nothing to do.
    static func migrate(_ database: PostgresDatabase, migrations: [PostgresMigration]) async throws {
        let known = migrations.map(\.version).max() ?? 0
        try await database.transaction { transaction in
            try await transaction.execute(PostgresStatement("SET LOCAL statement_timeout = 0"))
            var lock = PostgresStatement("SELECT pg_advisory_xact_lock(")
            lock.append(lock.bind(migrationLockKey) + ")")
            try await transaction.execute(lock)
            try await transaction.execute(
                PostgresStatement(
                    """
                    CREATE TABLE IF NOT EXISTS schema_migrations (
                        version integer PRIMARY KEY,
                        name text NOT NULL,
                        applied_at text NOT NULL
                    )
                    """))
            var applied = Set<Int>()
            for row in try await transaction.rows(PostgresStatement("SELECT version FROM schema_migrations")) {
                applied.insert(Int(try row.decode(Int32.self)))
            }
            if let newest = applied.max(), newest > known {
                throw TSyncError.failure(
                    "the PostgreSQL database at \(database.url) has schema version \(newest), newer than this tsync knows (\(known)): upgrade tsync"
                )
            }
            for migration in migrations.sorted(by: { $0.version < $1.version }) where !applied.contains(migration.version) {
                for sql in migration.statements { try await transaction.execute(PostgresStatement(sql)) }
                var record = PostgresStatement("INSERT INTO schema_migrations (version, name, applied_at) VALUES (")
                record.append(record.bind(Int64(migration.version)) + ", " + record.bind(migration.name) + ", ")
                record.append(#"to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))"#)
                try await transaction.execute(record)
                database.logger.info("PostgreSQL schema: applied migration \(migration.version) (\(migration.name))")
            }
            return .commit(())
        }
    }
}
