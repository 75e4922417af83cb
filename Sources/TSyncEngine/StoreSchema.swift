import GRDB

/// The schema of a local store, created and upgraded by GRDB migrations.
///
/// ```sql
/// -- Tables the store knows: a table exists once something was inserted into it or pulled from it,
/// -- and until it is purged whole. (`tsync tables` lists only those with records, operations or a
/// -- saved query: a typo that pulled nothing is not shown as a table.) Names are case-insensitive,
/// -- as on the server: one spelling per table, the first it was given; another is refused
/// -- (`StoreRows.requireOneSpelling`), so no migration folds them.
/// tables(name TEXT PRIMARY KEY, created_at TEXT)
///
/// -- The working copy. `body` holds the user fields only (a JSON object, keys sorted); the system
/// -- properties have columns of their own. `created_at`, `updated_at` and `version` are NULL until
/// -- the server has seen the record: a record with a `version` came from the server. Local records
/// -- are never soft-deleted (a server record with `deleted: true` is removed), so there is no
/// -- `deleted` column; queries see `deleted` as false.
/// records(tbl, id, body TEXT, created_at TEXT, updated_at TEXT, version TEXT, PRIMARY KEY (tbl, id))
///
/// -- The operation queue (the seeds' MS_TableOperations), in `seq` order. For an insert or update
/// -- the body is read from `records` when the operation is pushed; `item` holds the deleted item
/// -- for a delete, and the item as sent while an operation is `inflight`.
/// operations(seq INTEGER PRIMARY KEY AUTOINCREMENT, tbl, item_id, kind insert|update|delete,
///            state pending|inflight, item TEXT, queued_at TEXT)
///
/// -- The last server copy (wire JSON) of an item with a pending change, so diff and conflicts can
/// -- show base / ours / theirs. A row exists only while the item has operations AND a server copy;
/// -- an item with operations and no row here is new (never seen by the server).
/// bases(tbl, id, item TEXT, PRIMARY KEY (tbl, id))
///
/// -- Failed operations (MS_TableOperationErrors): at most one per operation, removed with it.
/// errors(id INTEGER PRIMARY KEY AUTOINCREMENT, operation_seq UNIQUE REFERENCES operations ON DELETE
///        CASCADE, tbl, item_id, kind, http_status, message, sent_item, server_item, created_at)
///
/// -- Saved pull queries and their checkpoints on the pair (updatedAt, id), docs/DESIGN.md §2.1.
/// queries(tbl, query_id, filter, checkpoint_updated_at, checkpoint_id, last_pull_at,
///         PRIMARY KEY (tbl, query_id))
///
/// -- v2: the journal of `tsync log` (`Journal`). An entry is inserted when a command opens the
/// -- store and completed when it ends; finished_at and exit_code stay NULL for one that never ended.
/// journal(id INTEGER PRIMARY KEY AUTOINCREMENT, started_at, finished_at, command, arguments (JSON
///         array), remote, exit_code, counts (JSON object), items (JSON array of table/id), item_count)
///
/// -- v3: the newest server copy (wire JSON) of an item that a pull did not apply because the item
/// -- had operations queued. The pull's checkpoint moves past it, so no later pull brings it again:
/// -- `resolve` takes it when the local change goes (`--theirs`, `--discard`) or is rebased
/// -- (`--ours`, `--merge`). Removed once a newer copy is applied or the item is settled.
/// skipped(tbl, id, item TEXT, updated_at TEXT, PRIMARY KEY (tbl, id))
///
/// -- v4: the operations pushes delivered, whichever command pushed them, kept `DeliveredOperations.retention`
/// -- so that `tsync watch` reports each one once (`LiveSync`); `pushed_at` in Unix milliseconds.
/// pushes(id INTEGER PRIMARY KEY AUTOINCREMENT, tbl, item_id, kind, version, pushed_at INTEGER)
///
/// -- v5: the versions a command's pushes wrote (`PushedVersions` as JSON: the first 300 by name,
/// -- the count, the earliest updatedAt per table), NULL when they wrote none.
/// journal.versions TEXT
///
/// -- v6: the fields of a table in the order the user gave them (`FieldOrder`), a JSON array
/// -- of names, for `query --csv`'s columns; NULL until an insert or upsert gave some.
/// tables.field_order TEXT
///
/// -- v7: queries.stopped_at, when a pull of the query last stopped part way (a SIGINT or SIGTERM
/// -- between pages); NULL once a later page of it is written. `tsync status` says so.
/// ```
///
/// Timestamps are TEXT in the fixed form of `Timestamp.iso8601`, so text order is time order.
/// Never edit a shipped migration: stores in the field already ran it. Add a new one instead.
enum StoreSchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: records, queue, bases, errors, queries") { db in
            try db.execute(
                sql: """
                    CREATE TABLE tables (
                        name TEXT PRIMARY KEY NOT NULL,
                        created_at TEXT NOT NULL
                    ) WITHOUT ROWID;

                    CREATE TABLE records (
                        tbl TEXT NOT NULL,
                        id TEXT NOT NULL,
                        body TEXT NOT NULL,
                        created_at TEXT,
                        updated_at TEXT,
                        version TEXT,
                        PRIMARY KEY (tbl, id)
                    );

                    CREATE TABLE operations (
                        seq INTEGER PRIMARY KEY AUTOINCREMENT,
                        tbl TEXT NOT NULL,
                        item_id TEXT NOT NULL,
                        kind TEXT NOT NULL CHECK (kind IN ('insert', 'update', 'delete')),
                        state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'inflight')),
                        item TEXT,
                        queued_at TEXT NOT NULL
                    );
                    CREATE INDEX operations_by_item ON operations (tbl, item_id);

                    CREATE TABLE bases (
                        tbl TEXT NOT NULL,
                        id TEXT NOT NULL,
                        item TEXT NOT NULL,
                        PRIMARY KEY (tbl, id)
                    ) WITHOUT ROWID;

                    CREATE TABLE errors (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        operation_seq INTEGER NOT NULL UNIQUE REFERENCES operations (seq) ON DELETE CASCADE,
                        tbl TEXT NOT NULL,
                        item_id TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        http_status INTEGER,
                        message TEXT NOT NULL,
                        sent_item TEXT,
                        server_item TEXT,
                        created_at TEXT NOT NULL
                    );

                    CREATE TABLE queries (
                        tbl TEXT NOT NULL,
                        query_id TEXT NOT NULL,
                        filter TEXT,
                        checkpoint_updated_at TEXT,
                        checkpoint_id TEXT,
                        last_pull_at TEXT,
                        PRIMARY KEY (tbl, query_id)
                    ) WITHOUT ROWID;
                    """)
        }
        migrator.registerMigration("v2: journal") { db in
            try db.execute(
                sql: """
                    CREATE TABLE journal (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        started_at TEXT NOT NULL,
                        finished_at TEXT,
                        command TEXT NOT NULL,
                        arguments TEXT NOT NULL,
                        remote TEXT,
                        exit_code INTEGER,
                        counts TEXT,
                        items TEXT,
                        item_count INTEGER
                    );
                    """)
        }
        migrator.registerMigration("v3: server copies a pull skipped") { db in
            try db.execute(
                sql: """
                    CREATE TABLE skipped (
                        tbl TEXT NOT NULL,
                        id TEXT NOT NULL,
                        item TEXT NOT NULL,
                        updated_at TEXT,
                        PRIMARY KEY (tbl, id)
                    ) WITHOUT ROWID;
                    """)
        }
        migrator.registerMigration("v4: operations pushed") { db in
            try db.execute(
                sql: """
                    CREATE TABLE pushes (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        tbl TEXT NOT NULL,
                        item_id TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        version TEXT,
                        pushed_at INTEGER NOT NULL
                    );
                    """)
        }
        migrator.registerMigration("v5: versions pushes wrote") { db in
            try db.execute(sql: "ALTER TABLE journal ADD COLUMN versions TEXT")
        }
        migrator.registerMigration("v6: the order of a table's fields") { db in
            try db.execute(sql: "ALTER TABLE tables ADD COLUMN field_order TEXT")
        }
        migrator.registerMigration("v7: a saved query's pull that stopped part way") { db in
            try db.execute(sql: "ALTER TABLE queries ADD COLUMN stopped_at TEXT")
        }
        migrator.registerMigration("v8: the tables' schemas the server announced") { db in
            try db.execute(sql: "CREATE TABLE schemas (tbl TEXT PRIMARY KEY COLLATE NOCASE, tag TEXT NOT NULL, document TEXT NOT NULL)")
        }
        return migrator
    }
}
