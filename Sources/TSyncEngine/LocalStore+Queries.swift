import GRDB
import TSyncModel

/// A pull query saved under an id (the seeds' MS_TableConfig delta token).
package struct SavedQuery: Sendable, Equatable {
    /// The table the query pulls.
    package var table: String
    /// The query's id (`pull --query-id`), which names its checkpoint.
    package var queryID: String
    /// The OData filter of the pull, as given.
    package var filter: String?
    /// Where the last pull of this query stopped; nil before the first or after `--reset`.
    package var checkpoint: Checkpoint?
    /// When this query was last pulled; nil when never.
    package var lastPullAt: Timestamp?
    /// When a pull of this query stopped part way (SIGINT/SIGTERM between pages), with more to
    /// come: the checkpoint is where it stopped, and the next pull goes on from there. Nil when
    /// the last pull wrote its pages to the end (a page written clears it).
    package var stoppedAt: Timestamp?

    /// A saved query as stored.
    package init(
        table: String, queryID: String, filter: String?, checkpoint: Checkpoint? = nil, lastPullAt: Timestamp? = nil,
        stoppedAt: Timestamp? = nil
    ) {
        self.table = table
        self.queryID = queryID
        self.filter = filter
        self.checkpoint = checkpoint
        self.lastPullAt = lastPullAt
        self.stoppedAt = stoppedAt
    }
}

extension LocalStore {
    /// The saved query `queryID` of `table`; nil when none is saved.
    package func savedQuery(table: String, queryID: String) throws(TSyncError) -> SavedQuery? {
        try read { db in
            try StoreRows.savedQueries(db, where: "tbl = ? AND query_id = ?", [table, queryID]).first
        }
    }

    /// Every saved query, by table then id.
    package func savedQueries() throws(TSyncError) -> [SavedQuery] {
        try read { db in try StoreRows.savedQueries(db) }
    }

    /// Creates or replaces a saved query (with its checkpoint).
    package func saveQuery(_ query: SavedQuery) throws(TSyncError) {
        try write { db in try StoreRows.saveQuery(db, query) }
    }

    /// Records that a pull of the query stopped part way, after the page it wrote last
    /// (`SavedQuery.stoppedAt`).
    package func markStopped(table: String, queryID: String) throws(TSyncError) {
        try write { db in
            try db.execute(
                sql: "UPDATE queries SET stopped_at = ? WHERE tbl = ? AND query_id = ?",
                arguments: [Timestamp.now().iso8601, table, queryID])
        }
    }

    @discardableResult
    package func deleteQuery(table: String, queryID: String) throws(TSyncError) -> Bool {
        try write { db in
            try db.execute(sql: "DELETE FROM queries WHERE tbl = ? AND query_id = ?", arguments: [table, queryID])
            return db.changesCount > 0
        }
    }
}

extension StoreRows {
    static func savedQueries(
        _ db: Database, where condition: String = "1", _ arguments: StatementArguments = []
    ) throws -> [SavedQuery] {
        try Row.fetchAll(
            db,
            sql: """
                SELECT tbl, query_id, filter, checkpoint_updated_at, checkpoint_id, last_pull_at, stopped_at FROM queries
                WHERE \(condition) ORDER BY tbl, query_id
                """,
            arguments: arguments
        ).map { row in
            var checkpoint: Checkpoint?
            if let text: String = row[3], let updatedAt = Timestamp(iso8601: text), let id: String = row[4] {
                checkpoint = Checkpoint(updatedAt: updatedAt, id: id)
            }
            return SavedQuery(
                table: row[0], queryID: row[1], filter: row[2], checkpoint: checkpoint,
                lastPullAt: (row[5] as String?).flatMap(Timestamp.init(iso8601:)),
                stoppedAt: (row[6] as String?).flatMap(Timestamp.init(iso8601:)))
        }
    }

    /// Once a page of a pull: from the connection's cache (preparing the upsert each time was
    /// 2% of a clone's client CPU).
    static func saveQuery(_ db: Database, _ query: SavedQuery) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO queries (tbl, query_id, filter, checkpoint_updated_at, checkpoint_id, last_pull_at, stopped_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (tbl, query_id) DO UPDATE SET filter = excluded.filter,
                    checkpoint_updated_at = excluded.checkpoint_updated_at, checkpoint_id = excluded.checkpoint_id,
                    last_pull_at = excluded.last_pull_at, stopped_at = excluded.stopped_at
                """
        ).execute(
            arguments: [
                query.table, query.queryID, query.filter, query.checkpoint?.updatedAt.iso8601, query.checkpoint?.id,
                query.lastPullAt?.iso8601, query.stoppedAt?.iso8601,
            ])
    }
}
