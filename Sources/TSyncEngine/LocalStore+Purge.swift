import GRDB
import TSyncModel
import TSyncQuery

/// What `purge` removed.
public struct PurgeResult: Sendable, Equatable {
    public var records = 0
    /// Operations dropped by a forced purge.
    public var operations = 0
    /// Saved queries (checkpoints) of the table that were dropped.
    public var queries = 0
}

extension LocalStore {
    /// Removes local records of `table` (those matching the OData `filter`, or all).
    ///
    /// Refused while the table has pending operations, unless `force`: then the table's operations
    /// (with their errors and bases) are dropped too. The table's saved queries are always dropped,
    /// because their checkpoints would otherwise stop the next pull from fetching the purged
    /// records again.
    @discardableResult
    public func purge(table: String, filter: String? = nil, force: Bool = false) throws(TSyncError) -> PurgeResult {
        try Identifiers.validateTableName(table)
        var whereSQL = ""
        var values: [SQLValue] = []
        if let filter {
            let expression = try ODataParser.parseFilter(filter)
            let clause = try SQLRenderer(schema: RecordQuery.schema).whereClause(expression, firstArgumentIndex: 3)
            whereSQL = " AND (" + clause.sql + ")"
            values = clause.arguments
        }
        return try write { db in
            try StoreRows.requireTable(db, table)
            let pending = try Int.fetchOne(db, sql: "SELECT count(*) FROM operations WHERE tbl = ?", arguments: [table]) ?? 0
            if pending > 0, !force {
                throw TSyncError.failure(
                    "\(table) has \(pending) pending operation\(pending == 1 ? "" : "s"); push first (`tsync push`), or purge with --force to drop them")
            }
            var result = PurgeResult()
            if pending > 0 {
                try db.execute(sql: "DELETE FROM operations WHERE tbl = ?", arguments: [table])
                try db.execute(sql: "DELETE FROM bases WHERE tbl = ?", arguments: [table])
                result.operations = pending
            }
            try db.execute(
                sql: """
                    DELETE FROM records WHERE tbl = ? AND id IN (
                        SELECT id FROM (SELECT id, body, created_at, updated_at, version, 0 AS deleted FROM records WHERE tbl = ?)
                        WHERE 1\(whereSQL))
                    """,
                arguments: StatementArguments([table.databaseValue, table.databaseValue] + values.map(\.databaseValue)))
            result.records = db.changesCount
            try db.execute(sql: "DELETE FROM queries WHERE tbl = ?", arguments: [table])
            result.queries = db.changesCount
            return result
        }
    }
}
