public enum SQLDialect: Sendable {
    case sqlite, postgres
}

/// A bound argument. Booleans are `.int(1)`/`.int(0)` in SQLite renderings (that is how SQLite
/// stores them and how `json_extract` returns JSON true/false) and `.bool` in PostgreSQL ones.
public enum SQLValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case text(String)
}

/// SQL text with its bound arguments, in placeholder order.
public struct SQLFragment: Sendable, Equatable {
    public var sql: String
    public var arguments: [SQLValue]

    public init(sql: String, arguments: [SQLValue] = []) {
        self.sql = sql
        self.arguments = arguments
    }
}

/// How the caller's table stores a record: user fields in one JSON column (SQLite: TEXT holding a
/// JSON object; PostgreSQL: jsonb), system properties in their own columns.
/// Timestamps (createdAt/updatedAt) are stored as TEXT in the fixed form Timestamp.iso8601
/// ("2026-11-23T09:24:23.123Z") on both backends, so text order is time order.
///
/// Column types the renderer relies on: `deleted` INTEGER 0/1 in SQLite, boolean in PostgreSQL;
/// every other system column text. Column names are written double-quoted, exactly as given.
/// In PostgreSQL, text comparisons and text sort keys use `COLLATE "C"` (byte order, as SQLite
/// compares); declare the text columns `COLLATE "C"` so that their indexes serve those queries.
/// A system property missing from `systemColumns` is looked up in the JSON column instead.
public struct SQLSchema: Sendable {
    public var dialect: SQLDialect
    /// e.g. "body"
    public var bodyColumn: String
    /// e.g. ["id": "id", "createdAt": "created_at", "updatedAt": "updated_at", "version": "version", "deleted": "deleted"]
    public var systemColumns: [String: String]
    /// User fields the table has an index on (`SQLSchema.indexExpression`). Comparisons of such a
    /// field with a literal, `startswith` on it, and `$orderby` on it are rendered so that the
    /// database can use that index; the results are exactly those without it.
    public var indexedFields: Set<String>
    /// PostgreSQL: `concat` and `replace` call `tsync_concat` and `tsync_replace`, which the
    /// database defines (the server's schema) to refuse a string longer than a bound before
    /// building it, as SQLite's length limit does; PostgreSQL's own build strings up to 1 GB.
    public var boundsStrings: Bool

    public init(
        dialect: SQLDialect, bodyColumn: String, systemColumns: [String: String], indexedFields: Set<String> = [],
        boundsStrings: Bool = false
    ) {
        self.dialect = dialect
        self.bodyColumn = bodyColumn
        self.systemColumns = systemColumns
        self.indexedFields = indexedFields
        self.boundsStrings = boundsStrings
    }

    /// The expression an index on the user field `name` must be built on, so that the renderings
    /// of `indexedFields` match it (field names are simple names: letters, digits, `_`). SQLite:
    /// the field's JSON value as `json_extract` gives it, its path written literally.
    public func indexExpression(_ name: String) -> String {
        switch dialect {
        case .sqlite: "json_extract(\"\(bodyColumn)\", '$.\"\(name)\"')"
        case .postgres: "(\"\(bodyColumn)\"->>'\(name)')"
        }
    }

    /// The field's JSON value with its key written literally, as sort keys read it: SQLite's
    /// `indexExpression`; on PostgreSQL the jsonb value (JSON null as SQL NULL).
    public func valueExpression(_ name: String) -> String {
        switch dialect {
        case .sqlite: indexExpression(name)
        case .postgres: "NULLIF(\"\(bodyColumn)\"->'\(name)', 'null'::jsonb)"
        }
    }

    /// PostgreSQL's second index on the field: its value when it is a number (the `numeric`
    /// reading of a comparison, its key written literally); nil for SQLite, whose one index holds
    /// numbers and text alike.
    public func numberIndexExpression(_ name: String) -> String? {
        switch dialect {
        case .sqlite: nil
        case .postgres:
            "(CASE WHEN jsonb_typeof(\"\(bodyColumn)\"->'\(name)') = 'number' THEN (\"\(bodyColumn)\"->>'\(name)')::numeric END)"
        }
    }

    /// The column names of the example above: snake_case system columns.
    public static let snakeCaseSystemColumns: [String: String] = [
        "id": "id", "createdAt": "created_at", "updatedAt": "updated_at", "version": "version", "deleted": "deleted",
    ]
}
