/// PostgreSQL renderings. The body column is jsonb; every placeholder carries a cast (`$2::text`,
/// `$3::numeric`, `$4::boolean`) so the server infers each parameter's type.
///
/// - A user field is read through `jsonb_typeof` first, so a cast never meets a value of the
///   wrong kind: no filter can make a query raise.
/// - `eq`/`ne` are `IS NOT DISTINCT FROM` / `IS DISTINCT FROM` (null-safe).
/// - Text ordering uses `COLLATE "C"` (byte order, as SQLite), whatever the database's collation.
/// - Numbers are `numeric`. `div` truncates when both operands are integers (scale 0), as SQLite
///   does; a zero divisor gives NULL instead of an error.
/// - Sort keys put NULL first ascending and last descending, as SQLite does.
struct PostgresSyntax: SQLSyntax {
    /// `concat` and `replace` through the database's bounded functions (`SQLSchema.boundsStrings`).
    var boundsStrings = false

    func jsonField(_ name: String, body: String, as kind: SQLValueKind) -> SQLTemplate {
        let key = SQLTemplate.argument(.text(name), postgresType: "text")
        let body = identifier(body)
        switch kind {
        case .json: return "NULLIF(\(body)->\(key), 'null'::jsonb)"
        case .text: return "(CASE WHEN jsonb_typeof(\(body)->\(key)) = 'string' THEN \(body)->>\(key) END)"
        case .number:
            return "(CASE WHEN jsonb_typeof(\(body)->\(key)) = 'number' THEN (\(body)->>\(key))::numeric END)"
        case .boolean:
            return "(CASE WHEN jsonb_typeof(\(body)->\(key)) = 'boolean' THEN (\(body)->>\(key))::boolean END)"
        }
    }

    func literal(_ literal: FilterLiteral, as kind: SQLValueKind) -> SQLTemplate {
        switch literal {
        case .null:
            switch kind {
            case .text: "NULL::text"
            case .number: "NULL::numeric"
            case .boolean: "NULL::boolean"
            case .json: "NULL::jsonb"
            }
        case .bool(let flag): .argument(.bool(flag), postgresType: "boolean")
        case .int(let number): .argument(.int(number), postgresType: "numeric")
        // A double reaches numeric with no fractional digits when it is whole (2.0 becomes 2),
        // and `div` would then truncate `n mul 2.0 div 4`; adding 0.0 keeps it a real (scale 1).
        case .double(let number): "(\(SQLTemplate.argument(.double(number), postgresType: "numeric")) + 0.0)"
        case .string(let text): .argument(.text(text), postgresType: "text")
        case .dateTime(let timestamp): .argument(.text(timestamp.iso8601), postgresType: "text")
        }
    }

    func equal(_ left: SQLTemplate, _ right: SQLTemplate, negated: Bool) -> SQLTemplate {
        negated ? "(\(left) IS DISTINCT FROM \(right))" : "(\(left) IS NOT DISTINCT FROM \(right))"
    }

    func order(_ op: String, _ left: SQLTemplate, _ right: SQLTemplate, kind: SQLValueKind) -> SQLTemplate {
        let op = SQLTemplate(stringLiteral: op)
        return kind == .text ? "(\(left) COLLATE \"C\" \(op) \(right))" : "(\(left) \(op) \(right))"
    }

    func divide(_ left: SQLTemplate, _ right: SQLTemplate, realOperand: Bool) -> SQLTemplate {
        if realOperand { return "(\(left) / NULLIF(\(right), 0))" }
        return reusing([left, right]) { v in
            let quotient: SQLTemplate = "\(v[0]) / NULLIF(\(v[1]), 0)"
            return "(CASE WHEN scale(\(v[0])) = 0 AND scale(\(v[1])) = 0 THEN trunc(\(quotient)) ELSE \(quotient) END)"
        }
    }

    func remainder(_ left: SQLTemplate, _ right: SQLTemplate) -> SQLTemplate {
        "(\(left) % NULLIF(\(right), 0))"
    }

    func function(_ function: FilterFunction, _ a: [SQLTemplate]) -> SQLTemplate {
        switch function {
        case .substringof: return "(strpos(\(a[1]), \(a[0])) > 0)"
        case .startswith: return reusing([a[1]]) { p in "(left(\(a[0]), length(\(p[0]))) = \(p[0]))" }
        case .endswith: return reusing([a[1]]) { p in "(right(\(a[0]), length(\(p[0]))) = \(p[0]))" }
        case .length: return "(length(\(a[0]))::numeric)"
        // Under the "C" collation PostgreSQL maps ASCII letters only, as SQLite's lower/upper do;
        // under the database's collation 'Ä' would become 'ä' on one backend and not the other.
        case .tolower: return "lower(\(a[0]) COLLATE \"C\")"
        case .toupper: return "upper(\(a[0]) COLLATE \"C\")"
        case .trim: return "trim(\(a[0]))"
        case .indexof: return "((strpos(\(a[0]), \(a[1])) - 1)::numeric)"
        case .concat: return boundsStrings ? "tsync_concat(\(a[0]), \(a[1]))" : "(\(a[0]) || \(a[1]))"
        case .substring:
            // OData counts from 0, substr from 1. Clamped into integer range so that no number
            // makes the cast raise; a negative start counts as 0 and a negative length gives NULL
            // (substr would raise).
            return reusing(Array(a.dropFirst())) { v in
                let start: SQLTemplate = """
                    (CASE WHEN \(v[0]) < 0 THEN 1 WHEN \(v[0]) < 2147483646 THEN trunc(\(v[0]))::integer + 1 \
                    WHEN \(v[0]) >= 2147483646 THEN 2147483647 END)
                    """
                guard v.count > 1 else { return "substr(\(a[0]), \(start))" }
                let length: SQLTemplate = """
                    (CASE WHEN \(v[1]) >= 0 AND \(v[1]) < 2147483647 THEN trunc(\(v[1]))::integer \
                    WHEN \(v[1]) >= 2147483647 THEN 2147483647 END)
                    """
                return "substr(\(a[0]), \(start), \(length))"
            }
        case .replace:
            return boundsStrings ? "tsync_replace(\(a[0]), \(a[1]), \(a[2]))" : "replace(\(a[0]), \(a[1]), \(a[2]))"
        case .year, .month, .day, .hour, .minute, .second:
            guard let part = DatePart(function) else { return "NULL::numeric" }
            let digits = "^[0-9]{4}-[0-9]{2}-[0-9]{2}"
            let shape: String
            switch part.shape {
            case .date: shape = digits
            case .minutes: shape = digits + "[Tt ][0-9]{2}:[0-9]{2}"
            case .seconds: shape = digits + "[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}"
            }
            let pattern = SQLTemplate(stringLiteral: "'\(shape)'")
            let range = SQLTemplate(stringLiteral: "\(part.offset), \(part.length)")
            return reusing([a[0]]) { d in
                "(CASE WHEN \(d[0]) ~ \(pattern) THEN substr(\(d[0]), \(range))::numeric END)"
            }
        case .round: return "round(\(a[0]))"
        case .floor: return "floor(\(a[0]))"
        case .ceiling: return "ceil(\(a[0]))"
        }
    }

    /// Two indexes: on the field's text (`body->>'name'`, `COLLATE "C"`), which for a string is the
    /// string itself, so a text comparison implies the same comparison of the index's value; and
    /// on its number reading, which is the very expression a number comparison compares.
    func indexRange(_ op: BinaryOperator, _ indexed: SQLTemplate, number: SQLTemplate?, _ literal: FilterLiteral, kind: SQLValueKind)
        -> SQLTemplate?
    {
        guard let comparison = op.sqlComparison else { return nil }
        switch (kind, literal) {
        case (.number, .int), (.number, .double):
            guard let number else { return nil }
            return "(\(number) \(comparison) \(self.literal(literal, as: .number)))"
        case (.text, .string), (.text, .dateTime):
            return "(\(indexed) COLLATE \"C\" \(comparison) \(self.literal(literal, as: .text)))"
        default:
            return nil
        }
    }

    func prefixRange(_ indexed: SQLTemplate, prefix: String) -> SQLTemplate? {
        guard !prefix.isEmpty else { return nil }
        let low = literal(.string(prefix), as: .text)
        guard let successor = prefix.prefixSuccessor else { return "(\(indexed) COLLATE \"C\" >= \(low))" }
        return "(\(indexed) COLLATE \"C\" >= \(low) AND \(indexed) COLLATE \"C\" < \(literal(.string(successor), as: .text)))"
    }

    func sortKey(_ expression: SQLTemplate, kind: SQLValueKind, descending: Bool, nullable: Bool) -> SQLTemplate {
        if kind == .json {
            // jsonb compares strings in the database's default collation, which cannot be
            // overridden. Two keys keep jsonb's order between kinds but compare strings by bytes,
            // as every other text comparison here (and SQLite) does: first the value with every
            // string made equal, then the string's text under "C".
            let kinds: SQLTemplate = "(CASE WHEN jsonb_typeof(\(expression)) = 'string' THEN '\"\"'::jsonb ELSE \(expression) END)"
            let strings: SQLTemplate = "(CASE WHEN jsonb_typeof(\(expression)) = 'string' THEN \(expression) #>> '{}' END)"
            return
                "\(sortKey(kinds, kind: .boolean, descending: descending, nullable: nullable)), \(sortKey(strings, kind: .text, descending: descending, nullable: nullable))"
        }
        var key = kind == .text ? "\(expression) COLLATE \"C\"" : expression
        key = descending ? "\(key) DESC" : "\(key) ASC"
        guard nullable else { return key }
        return descending ? "\(key) NULLS LAST" : "\(key) NULLS FIRST"
    }
}
