import GRDB
import TSyncModel
import TSyncQuery

/// `tsync query` over the store's `records` table (docs/DESIGN.md §5): the same query options the server
/// takes, rendered by TSyncQuery into SQLite.
extension RecordQuery {
    /// How the `records` table looks to the renderer. Local records are never soft-deleted, so the
    /// query runs over a view with a constant `deleted` column.
    static let localSchema = SQLSchema(
        dialect: .sqlite, bodyColumn: "body",
        systemColumns: [
            "id": "id", "createdAt": "created_at", "updatedAt": "updated_at", "version": "version", "deleted": "deleted",
        ])

    /// The SELECT for `table`, its arguments bound, never spliced.
    func localSQL(table: String) throws(TSyncError) -> (sql: String, arguments: StatementArguments) {
        let renderer = SQLRenderer(schema: Self.localSchema)
        var sql = """
            SELECT \(StoreRows.recordColumns) FROM (
                SELECT id, body, created_at, updated_at, version, 0 AS deleted FROM records WHERE tbl = ?
            )
            """
        var values: [SQLValue] = [.text(table)]
        if let filter {
            let clause = try renderer.whereClause(filter, firstArgumentIndex: values.count + 1)
            sql += " WHERE " + clause.sql
            values += clause.arguments
        }
        let order = try renderer.orderBy(orderBy, firstArgumentIndex: values.count + 1)
        sql += " ORDER BY " + order.sql
        values += order.arguments
        if top != nil || skip != nil {
            sql += " LIMIT ? OFFSET ?"
            values += [.int(Int64(top ?? -1)), .int(Int64(skip ?? 0))]
        }
        return (sql, StatementArguments(values.map(\.databaseValue)))
    }
}

extension SQLValue {
    var databaseValue: DatabaseValue {
        switch self {
        case .null: .null
        case .bool(let value): value.databaseValue
        case .int(let value): value.databaseValue
        case .double(let value): value.databaseValue
        case .text(let value): value.databaseValue
        }
    }
}
