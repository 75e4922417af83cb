import GRDB
import TSyncQuery

/// The SQLite layout of the server database.
///
/// Fixed tables (prefix `tsync_`) are created by a migrator. Record tables are created when a table
/// is first written: one SQL table per sync table, named `t_<name in lower case>` (SQLite folds the
/// case of identifiers anyway, so `Todo` and `todo` are one table), system properties in columns
/// and user fields as a JSON text in `body`.
enum SQLiteSchema {
    static let migrator: DatabaseMigrator = {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: accounts, tokens, login attempts, table clocks") { db in
            try db.execute(
                sql: """
                    CREATE TABLE tsync_accounts (
                        name TEXT PRIMARY KEY NOT NULL,
                        password_hash TEXT NOT NULL,
                        created_at TEXT NOT NULL
                    );
                    CREATE TABLE tsync_tokens (
                        token_hash TEXT PRIMARY KEY NOT NULL,
                        account_name TEXT NOT NULL,
                        expires_at INTEGER NOT NULL
                    );
                    CREATE INDEX tsync_tokens_by_account ON tsync_tokens(account_name);
                    CREATE INDEX tsync_tokens_by_expiry ON tsync_tokens(expires_at);
                    CREATE TABLE tsync_login_attempts (
                        key TEXT PRIMARY KEY NOT NULL,
                        attempts INTEGER NOT NULL,
                        window_end INTEGER NOT NULL
                    );
                    CREATE INDEX tsync_login_attempts_by_end ON tsync_login_attempts(window_end);
                    CREATE TABLE tsync_table_clocks (
                        table_name TEXT PRIMARY KEY NOT NULL,
                        last_updated_at INTEGER NOT NULL
                    );
                    """
            )
        }
        migrator.registerMigration("v2: known clients") { db in
            try db.execute(
                sql: """
                    CREATE TABLE tsync_known_clients (
                        key TEXT PRIMARY KEY NOT NULL,
                        account_name TEXT NOT NULL,
                        expires_at INTEGER NOT NULL
                    );
                    CREATE INDEX tsync_known_clients_by_account ON tsync_known_clients(account_name, expires_at);
                    CREATE INDEX tsync_known_clients_by_expiry ON tsync_known_clients(expires_at);
                    """
            )
        }
        migrator.registerMigration("v3: record history, deleted horizons") { db in
            // docs/DESIGN.md §6.5. `seq` (the rowid) orders a record's versions; the index serves a
            // record's versions newest first and a table at a time (each id's newest version
            // before it, in id order, its `seq` read from the index).
            try db.execute(
                sql: """
                    CREATE TABLE tsync_history (
                        seq INTEGER PRIMARY KEY,
                        table_name TEXT NOT NULL,
                        id TEXT NOT NULL,
                        created_at TEXT NOT NULL,
                        updated_at TEXT NOT NULL,
                        version TEXT NOT NULL,
                        deleted INTEGER NOT NULL,
                        owner TEXT,
                        user_name TEXT,
                        operation TEXT NOT NULL,
                        body TEXT NOT NULL
                    );
                    CREATE INDEX tsync_history_by_record ON tsync_history(table_name, id, updated_at);
                    CREATE TABLE tsync_deleted_horizons (
                        table_name TEXT PRIMARY KEY NOT NULL,
                        horizon TEXT NOT NULL
                    );
                    """
            )
        }
        migrator.registerMigration("v4: who created each table") { db in
            // docs/DESIGN.md §10.1: the tables an account created count against its limit. Tables
            // made before are nobody's. The owner index of tables made before it is made here,
            // once, rather than at every start-up.
            try db.execute(
                sql: """
                    CREATE TABLE tsync_tables (
                        table_name TEXT PRIMARY KEY NOT NULL,
                        account_name TEXT,
                        created_at TEXT NOT NULL
                    );
                    CREATE INDEX tsync_tables_by_account ON tsync_tables(account_name);
                    """)
            let tables = try String.fetchAll(
                db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 't\\_%' ESCAPE '\\'")
            for sqlName in tables {
                try db.execute(
                    sql: "INSERT INTO tsync_tables (table_name, account_name, created_at) VALUES (?, NULL, strftime('%Y-%m-%dT%H:%M:%fZ'))",
                    arguments: [tableKey(sqlName: sqlName)])
                try createOwnerIndex(db, sqlName: sqlName)
            }
        }
        migrator.registerMigration("v5: roles and groups of accounts, scoped tokens") { db in
            // docs/DESIGN.md §11.1: read with the token on every request, so a change applies to
            // every instance's next request.
            try db.execute(
                sql: """
                    CREATE TABLE tsync_account_labels (
                        account_name TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        label TEXT NOT NULL,
                        PRIMARY KEY (account_name, kind, label)
                    );
                    ALTER TABLE tsync_tokens ADD COLUMN scope TEXT NOT NULL DEFAULT '';
                    """)
        }
        migrator.registerMigration("v6: records that leave or come into an account's view") { db in
            // docs/DESIGN.md §11.1: a record's exit from a group, written with the write; an
            // account's joins and leaves, at a time of every table's clock; when each label was
            // given ('' before: always).
            try db.execute(
                sql: """
                    CREATE TABLE tsync_record_exits (
                        table_name TEXT NOT NULL,
                        grp TEXT NOT NULL,
                        id TEXT NOT NULL,
                        at TEXT NOT NULL,
                        PRIMARY KEY (table_name, grp, at, id)
                    ) WITHOUT ROWID;
                    CREATE INDEX tsync_record_exits_by_at ON tsync_record_exits(at);
                    CREATE TABLE tsync_label_changes (
                        account_name TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        label TEXT NOT NULL,
                        joined INTEGER NOT NULL,
                        at TEXT NOT NULL,
                        since TEXT NOT NULL,
                        PRIMARY KEY (account_name, at, kind, label)
                    ) WITHOUT ROWID;
                    CREATE INDEX tsync_label_changes_by_at ON tsync_label_changes(at);
                    ALTER TABLE tsync_account_labels ADD COLUMN since TEXT NOT NULL DEFAULT '';
                    """)
        }
        migrator.registerMigration("v7: a record's exits by id") { db in
            // docs/DESIGN.md §11.1: a pull takes only a record's last exit, looked up by id.
            try db.execute(sql: "CREATE INDEX tsync_record_exits_by_id ON tsync_record_exits(table_name, id, at)")
        }
        return migrator
    }()

    /// Applies the migrations `pool` lacks. Two processes that open a new file at once (two
    /// `tsync user add`, or one and a server) both find it without migrations, and GRDB's
    /// migrator looks at what is applied before its transactions, so the second one's step fails
    /// on what the first one created ("table … already exists"). A step that fails after another
    /// process applied more steps is tried again from what is now applied.
    static func migrate(_ pool: DatabasePool) throws {
        var applied = try pool.read { db in try migrator.appliedIdentifiers(db) }
        while true {
            do {
                return try migrator.migrate(pool)
            } catch {
                let now = try pool.read { db in try migrator.appliedIdentifiers(db) }
                guard now.isStrictSuperset(of: applied) else { throw error }
                applied = now
            }
        }
    }

    /// The SQL name of a sync table; `table` is already validated, so it is a safe identifier.
    static func recordTableName(_ table: String) -> String { "t_" + table.lowercased() }

    /// The name of the sync table whose SQL table is `sqlName` (`recordTableName`'s inverse).
    static func tableKey(sqlName: String) -> String { String(sqlName.dropFirst(2)) }

    /// The key of a table in `tsync_table_clocks`, `tsync_history` and `tsync_deleted_horizons`.
    static func clockKey(_ table: String) -> String { table.lowercased() }

    static func createRecordTable(_ db: Database, sqlName: String) throws {
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS "\(sqlName)" (
                    id TEXT PRIMARY KEY NOT NULL,
                    created_at TEXT NOT NULL,
                    updated_at TEXT NOT NULL,
                    version TEXT NOT NULL,
                    deleted INTEGER NOT NULL DEFAULT 0,
                    owner TEXT,
                    body TEXT NOT NULL
                );
                CREATE INDEX IF NOT EXISTS "\(sqlName)_by_updated" ON "\(sqlName)"(updated_at, id);
                """
        )
        try createOwnerIndex(db, sqlName: sqlName)
    }

    /// `(owner, updated_at, id)`: a per-user read walks its own user's records only, so what it
    /// costs (and how long it takes) says nothing about how much other users keep. Made for every
    /// table, since a table becomes per-user by a flag at start-up.
    static func createOwnerIndex(_ db: Database, sqlName: String) throws {
        try db.execute(sql: "CREATE INDEX IF NOT EXISTS \"\(sqlName)_by_owner\" ON \"\(sqlName)\"(owner, updated_at, id)")
    }

    /// The index of an indexed field: on its value, then `id` (the `$orderby` tie-break); for a
    /// per-user table, on the owner first.
    static func createIndex(_ db: Database, sqlName: String, _ field: IndexedField) throws {
        let expression = querySchema.indexExpression(field.field)
        let columns = field.perUser ? "owner, \(expression), id" : field.grouped ? "\(expression), updated_at, id" : "\(expression), id"
        try db.execute(sql: "CREATE INDEX IF NOT EXISTS \"\(field.indexName(sqlName))\" ON \"\(sqlName)\"(\(columns))")
    }

    /// Registers a new table as `account`'s (nil: nobody's) in `tsync_tables`, unless the account
    /// has created `limit` tables already; false then. Without a limit (0) nothing is registered:
    /// a table made then is nobody's.
    static func registerTable(_ db: Database, sqlName: String, account: String?, limit: Int, now: String) throws -> Bool {
        guard limit > 0 else { return true }
        if let account,
            try Int.fetchOne(
                db, sql: "SELECT count(*) FROM tsync_tables WHERE account_name = ?", arguments: [account]) ?? 0 >= limit
        {
            return false
        }
        try db.execute(
            sql: "INSERT INTO tsync_tables (table_name, account_name, created_at) VALUES (?, ?, ?) ON CONFLICT (table_name) DO NOTHING",
            arguments: [tableKey(sqlName: sqlName), account, now])
        return true
    }

    /// Names of the indexed-field indexes a record table has.
    static func fieldIndexes(_ db: Database, sqlName: String) throws -> [String] {
        try String.fetchAll(
            db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND name LIKE ? ESCAPE '\\' ORDER BY name",
            arguments: [sqlName, sqlName.replacing("_", with: "\\_") + "\\_ix\\_%"])
    }

    static let recordColumns = "id, created_at, updated_at, version, deleted, owner, body"

    /// How TSyncQuery addresses a record: system properties by column, user fields inside `body`.
    static let querySchema = SQLSchema(
        dialect: .sqlite, bodyColumn: "body",
        systemColumns: [
            "id": "id", "createdAt": "created_at", "updatedAt": "updated_at", "version": "version", "deleted": "deleted",
        ]
    )
}
