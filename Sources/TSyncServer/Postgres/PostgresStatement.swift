import PostgresNIO
import TSyncQuery

/// SQL text and its bound values, built piece by piece: `$n` placeholders are numbered as values
/// are bound, and fragments rendered by TSyncQuery continue the numbering where the statement is.
///
/// Every value is bound, never spliced into the text; only identifiers and keywords the code
/// itself chooses are written as text.
struct PostgresStatement {
    private(set) var sql: String
    private(set) var bindings = PostgresBindings()

    init(_ sql: String = "") {
        self.sql = sql
    }

    /// The number the next placeholder gets: what to pass as TSyncQuery's `firstArgumentIndex`.
    var nextArgumentIndex: Int { bindings.count + 1 }

    mutating func append(_ text: String) {
        sql += text
    }

    /// Puts `text` (no placeholders) before the statement, e.g. `EXPLAIN `.
    mutating func prepend(_ text: String) {
        sql = text + sql
    }

    /// Binds `value` and returns its placeholder, e.g. `$3`.
    mutating func bind(_ value: SQLValue) -> String {
        switch value {
        case .null: bindings.appendNull()
        case .bool(let flag): bindings.append(flag)
        case .int(let number): bindings.append(number)
        case .double(let number): bindings.append(number)
        case .text(let text): bindings.append(text)
        }
        return "$\(bindings.count)"
    }

    mutating func bind(_ text: String) -> String { bind(.text(text)) }
    mutating func bind(_ number: Int64) -> String { bind(.int(number)) }
    mutating func bind(_ flag: Bool) -> String { bind(.bool(flag)) }
    mutating func bind(_ text: String?) -> String { bind(text.map(SQLValue.text) ?? .null) }

    /// Binds a text array, e.g. for `id = ANY($1)`.
    mutating func bind(_ texts: [String]) -> String {
        bindings.append(texts)
        return "$\(bindings.count)"
    }

    /// Binds a boolean array, e.g. for `unnest($1::boolean[])`.
    mutating func bind(_ flags: [Bool]) -> String {
        bindings.append(flags)
        return "$\(bindings.count)"
    }

    /// Appends a fragment that was rendered with `firstArgumentIndex: nextArgumentIndex`.
    mutating func append(_ fragment: SQLFragment) {
        sql += fragment.sql
        for argument in fragment.arguments { _ = bind(argument) }
    }

    var query: PostgresQuery { PostgresQuery(unsafeSQL: sql, binds: bindings) }
}
