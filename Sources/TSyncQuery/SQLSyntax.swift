/// How a value is read in SQL: the type the surrounding expression expects of it.
///
/// A user field is rendered per kind: as text it is its value only when the JSON value is a
/// string, as a number only when it is a number, as a boolean only when it is true or false, and
/// NULL otherwise. So `price gt 5` never matches `"price": "9"`, on either backend. As `.json` it
/// is the JSON value itself (SQLite: what `json_extract` returns; PostgreSQL: jsonb with JSON null
/// turned into SQL NULL), used when two fields are compared and for sort keys.
enum SQLValueKind: Sendable, Equatable {
    case text, number, boolean, json

    init(_ type: FilterType) {
        switch type {
        case .string, .dateTime: self = .text
        case .number: self = .number
        case .boolean: self = .boolean
        case .json, .null: self = .json
        }
    }
}

/// What differs between SQLite and PostgreSQL. Each method receives its operands already
/// rendered in the kinds the filter's types call for, and returns a self-contained expression
/// (parenthesized where an operator could bind to its surroundings).
protocol SQLSyntax: Sendable {
    func identifier(_ name: String) -> SQLTemplate
    /// A user field of the JSON body column.
    func jsonField(_ name: String, body: String, as kind: SQLValueKind) -> SQLTemplate
    /// A literal bound as an argument; `null` is written as a (typed) NULL.
    func literal(_ literal: FilterLiteral, as kind: SQLValueKind) -> SQLTemplate
    /// Null-safe equality: NULL equals NULL, NULL differs from any value.
    func equal(_ left: SQLTemplate, _ right: SQLTemplate, negated: Bool) -> SQLTemplate
    /// `<`, `<=`, `>`, `>=` for values of the given kind.
    func order(_ op: String, _ left: SQLTemplate, _ right: SQLTemplate, kind: SQLValueKind) -> SQLTemplate
    /// OData `div`: integer division when both operands are integers, NULL for a zero divisor.
    /// `realOperand` tells that one operand is a real literal, as some backends cannot see that.
    func divide(_ left: SQLTemplate, _ right: SQLTemplate, realOperand: Bool) -> SQLTemplate
    /// OData `mod`: the remainder of truncated division (sign of the dividend), on reals too; NULL
    /// for a zero divisor.
    func remainder(_ left: SQLTemplate, _ right: SQLTemplate) -> SQLTemplate
    func function(_ function: FilterFunction, _ arguments: [SQLTemplate]) -> SQLTemplate
    func sortKey(_ expression: SQLTemplate, kind: SQLValueKind, descending: Bool, nullable: Bool) -> SQLTemplate
    /// A condition on an index's expression (`SQLSchema.indexExpression`) that `field op literal`
    /// (the field read as `kind`) implies, so the database can read the index's range instead of
    /// the table; nil when there is none. It is AND-ed with the comparison itself, which decides.
    /// `number` is the expression of a second index holding the field's number value, where the
    /// backend keeps one (`SQLSchema.numberIndexExpression`).
    func indexRange(_ op: BinaryOperator, _ indexed: SQLTemplate, number: SQLTemplate?, _ literal: FilterLiteral, kind: SQLValueKind)
        -> SQLTemplate?
    /// The same for `startswith(field, prefix)`.
    func prefixRange(_ indexed: SQLTemplate, prefix: String) -> SQLTemplate?
}

extension SQLSyntax {
    func quoted(_ name: String) -> SQLTemplate {
        SQLTemplate(stringLiteral: "\"" + name.replacing("\"", with: "\"\"") + "\"")
    }

    func identifier(_ name: String) -> SQLTemplate { quoted(name).leaf() }

    /// Lets `body` use each operand several times while the SQL evaluates (and binds) each
    /// operand that is not a leaf once, through a correlated scalar subquery:
    /// `(SELECT body(tsync_v1, …) FROM (SELECT operand AS tsync_v1, …) AS tsync_shared)`.
    func reusing(_ operands: [SQLTemplate], _ body: ([SQLTemplate]) -> SQLTemplate) -> SQLTemplate {
        var columns: [SQLTemplate] = []
        var names: [SQLTemplate] = []
        for operand in operands {
            if operand.isLeaf {
                names.append(operand)
            } else {
                let name = SQLTemplate(stringLiteral: "tsync_v\(columns.count + 1)")
                columns.append("\(operand) AS \(name)")
                names.append(name)
            }
        }
        guard !columns.isEmpty else { return body(operands) }
        return "(SELECT \(body(names)) FROM (SELECT \(SQLTemplate.joined(columns, separator: ", "))) AS tsync_shared)"
    }
}

/// Where the date functions read their digits in ISO 8601 text (`2026-01-31T09:30:05.000Z`), and
/// how much of the text must have the ISO shape for the digits to be read at all (otherwise NULL).
///
/// Reading digits rather than converting to a timestamp type never raises on bad text, and gives
/// the same answer on both backends. Text with a UTC offset other than `Z` is read as written.
struct DatePart {
    enum Shape {
        /// `YYYY-MM-DD`
        case date
        /// `YYYY-MM-DDThh:mm` (`T`, `t` or a space)
        case minutes
        /// `YYYY-MM-DDThh:mm:ss`
        case seconds
    }

    var offset: Int
    var length: Int
    var shape: Shape

    init?(_ function: FilterFunction) {
        switch function {
        case .year: (offset, length, shape) = (1, 4, .date)
        case .month: (offset, length, shape) = (6, 2, .date)
        case .day: (offset, length, shape) = (9, 2, .date)
        case .hour: (offset, length, shape) = (12, 2, .minutes)
        case .minute: (offset, length, shape) = (15, 2, .minutes)
        case .second: (offset, length, shape) = (18, 2, .seconds)
        default: return nil
        }
    }
}

extension String {
    /// The smallest string greater than every string that starts with this one, in code-point
    /// (UTF-8 byte) order: the last scalar that can grow grows by one, skipping the surrogates;
    /// nil when every scalar is U+10FFFF (or the string is empty).
    var prefixSuccessor: String? {
        var scalars = Array(unicodeScalars)
        while let last = scalars.popLast() {
            let next = last.value == 0xD7FF ? 0xE000 : last.value + 1
            if let grown = Unicode.Scalar(next) {
                scalars.append(grown)
                var result = ""
                result.unicodeScalars.append(contentsOf: scalars)
                return result
            }
        }
        return nil
    }
}

extension BinaryOperator {
    /// The SQL operator of a comparison that an index range can serve (`ne` cannot).
    var sqlComparison: SQLTemplate? {
        switch self {
        case .eq: "="
        case .gt: ">"
        case .ge: ">="
        case .lt: "<"
        case .le: "<="
        default: nil
        }
    }
}
