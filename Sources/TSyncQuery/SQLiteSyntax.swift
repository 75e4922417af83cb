/// SQLite renderings (3.38 or later: the JSON functions are built in). Uses no math-extension
/// function (`floor`, `ceil`, `mod`), which SQLite builds may lack.
///
/// - A user field is `json_extract(body, ?)` with the argument `$."name"`; `json_type` on the same
///   path tells its JSON kind. JSON true/false come back as 1/0, so booleans bind as 1/0.
/// - `eq`/`ne` are `IS`/`IS NOT` (null-safe).
/// - Text compares in byte order (SQLite's BINARY collation); `tolower`/`toupper` change ASCII
///   letters only.
/// - `div` on two integers is integer division (SQLite's `/`); a zero divisor gives NULL.
struct SQLiteSyntax: SQLSyntax {
    func jsonField(_ name: String, body: String, as kind: SQLValueKind) -> SQLTemplate {
        let path = SQLTemplate.argument(.text("$.\"\(name)\""), postgresType: "text")
        let body = identifier(body)
        let value: SQLTemplate = "json_extract(\(body), \(path))"
        switch kind {
        case .json: return value
        case .text: return "(CASE json_type(\(body), \(path)) WHEN 'text' THEN \(value) END)"
        case .number: return "(CASE WHEN json_type(\(body), \(path)) IN ('integer', 'real') THEN \(value) END)"
        case .boolean: return "(CASE json_type(\(body), \(path)) WHEN 'true' THEN 1 WHEN 'false' THEN 0 END)"
        }
    }

    func literal(_ literal: FilterLiteral, as kind: SQLValueKind) -> SQLTemplate {
        switch literal {
        case .null: "NULL"
        case .bool(let flag): .argument(.int(flag ? 1 : 0), postgresType: "boolean")
        case .int(let number): .argument(.int(number), postgresType: "numeric")
        case .double(let number): .argument(.double(number), postgresType: "numeric")
        case .string(let text): .argument(.text(text), postgresType: "text")
        case .dateTime(let timestamp): .argument(.text(timestamp.iso8601), postgresType: "text")
        }
    }

    func equal(_ left: SQLTemplate, _ right: SQLTemplate, negated: Bool) -> SQLTemplate {
        negated ? "(\(left) IS NOT \(right))" : "(\(left) IS \(right))"
    }

    func order(_ op: String, _ left: SQLTemplate, _ right: SQLTemplate, kind: SQLValueKind) -> SQLTemplate {
        "(\(left) \(SQLTemplate(stringLiteral: op)) \(right))"
    }

    func divide(_ left: SQLTemplate, _ right: SQLTemplate, realOperand: Bool) -> SQLTemplate {
        "(\(left) / \(right))"
    }

    /// SQLite's `%` turns reals into integers first, so the remainder is computed as
    /// `a - b * trunc(a / b)`.
    func remainder(_ left: SQLTemplate, _ right: SQLTemplate) -> SQLTemplate {
        "(\(left) - \(right) * CAST(\(left) / \(right) AS INTEGER))"
    }

    func function(_ function: FilterFunction, _ a: [SQLTemplate]) -> SQLTemplate {
        switch function {
        case .substringof: return "(instr(\(a[1]), \(a[0])) > 0)"
        case .startswith: return "(substr(\(a[0]), 1, length(\(a[1]))) = \(a[1]))"
        case .endswith:
            return "(length(\(a[0])) >= length(\(a[1])) AND substr(\(a[0]), length(\(a[0])) - length(\(a[1])) + 1) = \(a[1]))"
        case .length: return "length(\(a[0]))"
        case .tolower: return "lower(\(a[0]))"
        case .toupper: return "upper(\(a[0]))"
        case .trim: return "trim(\(a[0]))"
        case .indexof: return "(instr(\(a[0]), \(a[1])) - 1)"
        case .concat: return "(\(a[0]) || \(a[1]))"
        case .substring:
            // OData counts from 0, substr from 1. A negative start counts as 0 and a negative
            // length gives NULL (substr would otherwise count them from the end).
            let start: SQLTemplate = "(CASE WHEN \(a[1]) < 0 THEN 1 WHEN \(a[1]) >= 0 THEN CAST(\(a[1]) AS INTEGER) + 1 END)"
            guard a.count > 2 else { return "substr(\(a[0]), \(start))" }
            return "substr(\(a[0]), \(start), (CASE WHEN \(a[2]) >= 0 THEN CAST(\(a[2]) AS INTEGER) END))"
        case .replace: return "replace(\(a[0]), \(a[1]), \(a[2]))"
        case .year, .month, .day, .hour, .minute, .second:
            guard let part = DatePart(function) else { return "NULL" }
            let digits = "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]"
            let shape: String
            switch part.shape {
            case .date: shape = digits + "*"
            case .minutes: shape = digits + "[Tt ][0-9][0-9]:[0-9][0-9]*"
            case .seconds: shape = digits + "[Tt ][0-9][0-9]:[0-9][0-9]:[0-9][0-9]*"
            }
            let pattern = SQLTemplate(stringLiteral: "'\(shape)'")
            let range = SQLTemplate(stringLiteral: "\(part.offset), \(part.length)")
            return "(CASE WHEN \(a[0]) GLOB \(pattern) THEN CAST(substr(\(a[0]), \(range)) AS INTEGER) END)"
        case .round: return "round(\(a[0]))"
        // CAST truncates toward zero; a comparison is 0 or 1, which corrects negative non-integers.
        case .floor: return "(CAST(\(a[0]) AS INTEGER) - (\(a[0]) < CAST(\(a[0]) AS INTEGER)))"
        case .ceiling: return "(CAST(\(a[0]) AS INTEGER) + (\(a[0]) > CAST(\(a[0]) AS INTEGER)))"
        }
    }

    /// SQLite sorts NULL first ascending and last descending; JSON values sort NULL, then numbers
    /// (booleans are 0/1), then text.
    func sortKey(_ expression: SQLTemplate, kind: SQLValueKind, descending: Bool, nullable: Bool) -> SQLTemplate {
        descending ? "\(expression) DESC" : "\(expression) ASC"
    }
}
