import GRDB
import TSyncModel
import TSyncQuery

/// What `purge` removed.
package struct PurgeResult: Sendable, Equatable {
    /// Local records removed.
    package var records = 0
    /// The ids of the purged records (`records` of them), in no particular order: for the log.
    package var ids: [String] = []
    /// Operations dropped by a forced purge.
    package var operations = 0
    /// Saved queries (checkpoints) of the table that were dropped.
    package var queries = 0
}

extension LocalStore {
    /// Removes local records of `table`: all of them, or those matching the OData `filter`.
    ///
    /// Refused while an item to purge has pending operations (without a filter: while the table
    /// has any), unless `force`: then those operations, their errors and bases are dropped too.
    /// Operations of items the filter keeps are never touched. A whole table purged forgets its
    /// saved queries (the table is gone). A filtered purge keeps them unless `forgetQueries`: a
    /// checkpoint only says how far the server's changes have been read, and that stays true of
    /// every record kept, so keeping it is safe; the purged records come back when they change on
    /// the server, instead of the next pull downloading the whole table again. With `dryRun` the transaction is rolled back: the result is what the
    /// purge would drop, and nothing changes.
    @discardableResult
    package func purge(
        table: String, filter: String? = nil, force: Bool = false, forgetQueries: Bool = false, dryRun: Bool = false
    ) throws(TSyncError)
        -> PurgeResult
    {
        try Identifiers.validateTableName(table)
        // The ids to purge, as a subquery over the same view `query` uses.
        var matching = "SELECT id FROM (SELECT id, body, created_at, updated_at, version, 0 AS deleted FROM records WHERE tbl = ?)"
        var matchingArguments: [DatabaseValue] = [table.databaseValue]
        if let filter {
            let clause = try SQLRenderer(schema: RecordQuery.localSchema).whereClause(try ODataParser.parseFilter(filter))
            matching += " WHERE " + clause.sql
            matchingArguments += clause.arguments.map(\.databaseValue)
        }
        // Without a filter the whole table goes, pending deletes (which have no record) included.
        let itemCondition = filter == nil ? "tbl = ?" : "tbl = ? AND item_id IN (\(matching))"
        let itemArguments = StatementArguments([table.databaseValue] + (filter == nil ? [] : matchingArguments))
        return try write { db in
            var result = PurgeResult()
            try db.inSavepoint {
                result = try Self.purge(
                    db, table: table, force: force, forgetQueries: filter == nil || forgetQueries,
                    matching: (matching, matchingArguments), items: (itemCondition, itemArguments))
                // A whole table purged is forgotten: `query` then calls it unknown, as it was before.
                if filter == nil {
                    try db.execute(
                        sql: "DELETE FROM tables WHERE name = ? AND NOT EXISTS (SELECT 1 FROM operations WHERE tbl = ?)",
                        arguments: [table, table])
                }
                return dryRun ? .rollback : .commit
            }
            return result
        }
    }

    private static func purge(
        _ db: Database, table: String, force: Bool, forgetQueries: Bool, matching: (sql: String, arguments: [DatabaseValue]),
        items: (condition: String, arguments: StatementArguments)
    ) throws -> PurgeResult {
        let (itemCondition, itemArguments) = items
        let (matching, matchingArguments) = matching
        try StoreRows.requireTable(db, table)
        let pending =
            try Int.fetchOne(db, sql: "SELECT count(*) FROM operations WHERE \(itemCondition)", arguments: itemArguments) ?? 0
        if pending > 0, !force {
            throw TSyncError(
                .failure, "\(table) has \(pending) pending operation\(pending == 1 ? "" : "s") on the records to purge",
                remedy: .pushOrForcePurge)
        }
        var result = PurgeResult()
        if pending > 0 {
            try db.execute(
                sql: "DELETE FROM bases WHERE tbl = ? AND id IN (SELECT item_id FROM operations WHERE \(itemCondition))",
                arguments: [table] + itemArguments)
            try db.execute(
                sql: "DELETE FROM skipped WHERE tbl = ? AND id IN (SELECT item_id FROM operations WHERE \(itemCondition))",
                arguments: [table] + itemArguments)
            try db.execute(sql: "DELETE FROM operations WHERE \(itemCondition)", arguments: itemArguments)
            result.operations = pending
        }
        // RETURNING hands back the ids as it deletes: no second pass over the table.
        result.ids = try String.fetchAll(
            db, sql: "DELETE FROM records WHERE tbl = ? AND id IN (\(matching)) RETURNING id",
            arguments: StatementArguments([table.databaseValue] + matchingArguments))
        result.records = result.ids.count
        if forgetQueries {
            try db.execute(sql: "DELETE FROM queries WHERE tbl = ?", arguments: [table])
            result.queries = db.changesCount
        }
        return result
    }
}
