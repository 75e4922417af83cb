import GRDB
import TSyncModel
import TSyncQuery

/// A read of one local table with the OData options of `tsync query` (the same language the server
/// speaks, rendered by TSyncQuery into SQLite over the `records` table).
public struct RecordQuery: Sendable {
    public var filter: FilterExpression?
    public var orderBy: [SortKey]
    public var top: Int?
    public var skip: Int?
    /// Fields to keep in the output (system properties may be named); nil keeps everything.
    public var select: [String]?

    public init(
        filter: FilterExpression? = nil, orderBy: [SortKey] = [], top: Int? = nil, skip: Int? = nil,
        select: [String]? = nil
    ) {
        self.filter = filter
        self.orderBy = orderBy
        self.top = top
        self.skip = skip
        self.select = select
    }

    /// Parses the text of the command-line options.
    public init(filter: String?, orderBy: String?, top: Int?, skip: Int?, select: String?) throws(TSyncError) {
        self.init(
            filter: try filter.map { text throws(TSyncError) in try ODataParser.parseFilter(text) },
            orderBy: try orderBy.map { text throws(TSyncError) in try ODataParser.parseOrderBy(text) } ?? [],
            top: top, skip: skip,
            select: try select.map { text throws(TSyncError) in try ODataParser.parseSelect(text) })
    }

    /// The record as output: its wire object, reduced to the selected fields.
    public func project(_ record: TSyncModel.Record) -> [String: JSONValue] {
        let wire = record.wireObject
        guard let select else { return wire }
        var projected: [String: JSONValue] = [:]
        for name in select { if let value = wire[name] { projected[name] = value } }
        return projected
    }

    /// How the `records` table looks to the renderer. Local records are never soft-deleted, so the
    /// query runs over a view with a constant `deleted` column.
    static let schema = SQLSchema(
        dialect: .sqlite, bodyColumn: "body",
        systemColumns: [
            "id": "id", "createdAt": "created_at", "updatedAt": "updated_at", "version": "version", "deleted": "deleted",
        ])

    /// The SELECT for `table`, its arguments bound, never spliced.
    func sql(table: String) throws(TSyncError) -> (sql: String, arguments: StatementArguments) {
        let renderer = SQLRenderer(schema: Self.schema)
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
