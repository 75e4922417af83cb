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
    /// SQLite (3.40, as Debian ships it) parses with a fixed stack of 100 entries: SQL nested more
    /// deeply than that fails with "parser stack overflow" when the statement is prepared. Found by
    /// fuzzing: 36 unary minuses or 8 nested `floor` were enough. `parserNesting` estimates what a
    /// rendering needs, counting an open parenthesis as 4 and a subquery (`SELECT`) inside one as
    /// 5 more; measured failures start at 116 (29 parentheses), and renderings above 104 are refused.
    static let maximumParserNesting = 104

    static func parserNesting(_ sql: String) -> Int {
        var frames = [0]  // the SELECTs opened inside each open parenthesis
        var deepest = 0
        var quote: Character?
        var word = ""
        for character in sql + " " {
            if let open = quote {
                if character == open { quote = nil }
                continue
            }
            if character.isLetter {
                word.append(character)
                continue
            }
            if word == "SELECT" { frames[frames.count - 1] += 1 }
            word = ""
            switch character {
            case "'", "\"": quote = character
            case "(": frames.append(0)
            case ")": if frames.count > 1 { frames.removeLast() }
            default: break
            }
            deepest = max(deepest, 4 * (frames.count - 1) + 5 * frames.reduce(0, +))
        }
        return deepest
    }

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
        reusing([left, right]) { v in "(\(v[0]) - \(v[1]) * \(truncated("\(v[0]) / \(v[1])")))" }
    }

    /// Whether `x` is at least 2^52 away from zero: such reals are whole already, and CAST would
    /// clamp them to 64 bits.
    private func isWhole(_ x: SQLTemplate) -> SQLTemplate {
        "\(x) >= 4503599627370496 OR \(x) <= -4503599627370496"
    }

    /// `x` rounded toward zero without the math extension.
    private func truncated(_ x: SQLTemplate) -> SQLTemplate {
        "(CASE WHEN \(isWhole(x)) THEN \(x) ELSE CAST(\(x) AS INTEGER) END)"
    }

    /// `x` rounded down or up: CAST truncates toward zero, and a comparison is 0 or 1, which
    /// corrects non-integers on the far side of zero.
    private func rounded(_ x: SQLTemplate, up: Bool) -> SQLTemplate {
        reusing([x]) { v in
            let x = v[0]
            let correction: SQLTemplate = up ? "+ (\(x) > CAST(\(x) AS INTEGER))" : "- (\(x) < CAST(\(x) AS INTEGER))"
            return "(CASE WHEN \(isWhole(x)) THEN \(x) ELSE CAST(\(x) AS INTEGER) \(correction) END)"
        }
    }

    func function(_ function: FilterFunction, _ a: [SQLTemplate]) -> SQLTemplate {
        switch function {
        case .substringof: return "(instr(\(a[1]), \(a[0])) > 0)"
        case .startswith:
            return reusing([a[1]]) { p in "(substr(\(a[0]), 1, length(\(p[0]))) = \(p[0]))" }
        case .endswith:
            return reusing(a) { v in
                "(length(\(v[0])) >= length(\(v[1])) AND substr(\(v[0]), length(\(v[0])) - length(\(v[1])) + 1) = \(v[1]))"
            }
        case .length: return "length(\(a[0]))"
        case .tolower: return "lower(\(a[0]))"
        case .toupper: return "upper(\(a[0]))"
        case .trim: return "trim(\(a[0]))"
        case .indexof: return "(instr(\(a[0]), \(a[1])) - 1)"
        case .concat: return "(\(a[0]) || \(a[1]))"
        case .substring:
            // OData counts from 0, substr from 1. A negative start counts as 0 and a negative
            // length gives NULL (substr would otherwise count them from the end); both are
            // clamped to 2^31 - 1, past any SQLite string, as a huge real start wraps around.
            return reusing(Array(a.dropFirst())) { v in
                let start: SQLTemplate = """
                    (CASE WHEN \(v[0]) < 0 THEN 1 WHEN \(v[0]) < 2147483646 THEN CAST(\(v[0]) AS INTEGER) + 1 \
                    WHEN \(v[0]) >= 2147483646 THEN 2147483647 END)
                    """
                guard v.count > 1 else { return "substr(\(a[0]), \(start))" }
                let length: SQLTemplate = """
                    (CASE WHEN \(v[1]) >= 0 AND \(v[1]) < 2147483647 THEN CAST(\(v[1]) AS INTEGER) \
                    WHEN \(v[1]) >= 2147483647 THEN 2147483647 END)
                    """
                return "substr(\(a[0]), \(start), \(length))"
            }
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
            return reusing([a[0]]) { d in
                "(CASE WHEN \(d[0]) GLOB \(pattern) THEN CAST(substr(\(d[0]), \(range)) AS INTEGER) END)"
            }
        // An integer, as floor and ceiling give and as PostgreSQL's round does: `round(x) div 2`
        // divides integers.
        case .round:
            return reusing([a[0]]) { v in "(CASE WHEN \(isWhole(v[0])) THEN \(v[0]) ELSE CAST(round(\(v[0])) AS INTEGER) END)" }
        case .floor: return rounded(a[0], up: false)
        case .ceiling: return rounded(a[0], up: true)
        }
    }

    /// SQLite orders NULL, then numbers (JSON true and false are 1 and 0), then text (arrays and
    /// objects come back as their JSON text), so a range on the raw value bounds one kind: `< ''`
    /// keeps numbers below any text, `>= ''` keeps text. Booleans and numbers share the number
    /// range; the comparison AND-ed with the range tells them apart.
    func indexRange(_ op: BinaryOperator, _ indexed: SQLTemplate, number: SQLTemplate?, _ literal: FilterLiteral, kind: SQLValueKind)
        -> SQLTemplate?
    {
        let value: SQLTemplate
        switch (kind, literal) {
        case (.number, .int), (.number, .double), (.text, .string), (.text, .dateTime): value = self.literal(literal, as: kind)
        case (.boolean, .bool(let flag)) where op == .eq: return flag ? "(\(indexed) = 1)" : "(\(indexed) = 0)"
        default: return nil
        }
        // Ranges are bounded on both sides, so the planner (which has no statistics) sees them as
        // narrow: the lowest double is below every number, '' below every text, x'' (a blob)
        // above every text.
        switch (op, kind) {
        case (.eq, _): return "(\(indexed) = \(value))"
        case (.gt, .number): return "(\(indexed) > \(value) AND \(indexed) < '')"
        case (.ge, .number): return "(\(indexed) >= \(value) AND \(indexed) < '')"
        case (.lt, .number): return "(\(indexed) < \(value) AND \(indexed) >= -1.7976931348623157e308)"
        case (.le, .number): return "(\(indexed) <= \(value) AND \(indexed) >= -1.7976931348623157e308)"
        case (.gt, _): return "(\(indexed) > \(value) AND \(indexed) < x'')"
        case (.ge, _): return "(\(indexed) >= \(value) AND \(indexed) < x'')"
        case (.lt, _): return "(\(indexed) < \(value) AND \(indexed) >= '')"
        case (.le, _): return "(\(indexed) <= \(value) AND \(indexed) >= '')"
        default: return nil
        }
    }

    func prefixRange(_ indexed: SQLTemplate, prefix: String) -> SQLTemplate? {
        guard !prefix.isEmpty else { return nil }
        let low = literal(.string(prefix), as: .text)
        guard let successor = prefix.prefixSuccessor else { return "(\(indexed) >= \(low) AND \(indexed) < x'')" }
        return "(\(indexed) >= \(low) AND \(indexed) < \(literal(.string(successor), as: .text)))"
    }

    /// SQLite sorts NULL first ascending and last descending; JSON values sort NULL, then numbers
    /// (booleans are 0/1), then text.
    func sortKey(_ expression: SQLTemplate, kind: SQLValueKind, descending: Bool, nullable: Bool) -> SQLTemplate {
        descending ? "\(expression) DESC" : "\(expression) ASC"
    }
}
