import TSyncModel

/// Renders a `$filter` and an `$orderby` as parameterized SQL for one table layout.
///
/// Typing decides how each side of a comparison is read (see `SQLValueKind`):
/// - a field compared with a string literal compares text, with a number compares numbers, with
///   true/false compares booleans, with `datetime'…'` compares the fixed ISO text
///   (`2026-01-31T09:30:00.000Z`: user fields holding dates must use that form to compare in time
///   order); a field whose JSON value is of another kind counts as NULL there;
/// - system properties have fixed types: `id` and `version` text, `createdAt`/`updatedAt` ISO
///   text, `deleted` boolean;
/// - two user fields compare when both hold numbers, both strings or both booleans; values of
///   different kinds (and arrays, objects) are neither equal nor ordered (docs/FILTERS.md);
/// - function arguments and arithmetic operands are read as the function or operator expects;
/// - `eq`/`ne` are null-safe: `x eq null` holds when x is missing or null, `x ne 'a'` holds when x is
///   missing. Other comparisons with NULL are not true;
/// - a user field standing alone as a condition (`$filter=done`) holds when it is JSON true.
///
/// The SQL text holds no user input: literals and field names are bound arguments.
public struct SQLRenderer: Sendable {
    public let schema: SQLSchema
    private let syntax: any SQLSyntax

    public init(schema: SQLSchema) {
        self.schema = schema
        switch schema.dialect {
        case .sqlite: syntax = SQLiteSyntax()
        case .postgres: syntax = PostgresSyntax(boundsStrings: schema.boundsStrings)
        }
    }

    /// A boolean SQL expression. Every literal and JSON path is a bound argument, never spliced
    /// into the SQL text. Placeholders: `?` for SQLite; `$n` for PostgreSQL starting at
    /// `firstArgumentIndex`. The expression is self-contained: it can be joined to others with AND.
    public func whereClause(_ filter: FilterExpression, firstArgumentIndex: Int = 1) throws(TSyncError) -> SQLFragment {
        try checkDepth(filter)
        let type: FilterType
        do {
            type = try FilterTyping.type(of: filter)
        } catch {
            throw .invalidInput("invalid $filter: \(error.message)")
        }
        guard type == .boolean || type.isFlexible else {
            throw .invalidInput("invalid $filter: the filter must be a condition (true or false), not \(type.name)")
        }
        let fragment = try render(filter, as: .boolean, wherever: true).fragment(schema.dialect, firstArgumentIndex: firstArgumentIndex)
        if schema.dialect == .sqlite, SQLiteSyntax.parserNesting(fragment.sql) > SQLiteSyntax.maximumParserNesting {
            throw .invalidInput(
                "invalid $filter: it nests too deeply for SQLite to run (nested functions, arithmetic and comparisons add up): simplify it")
        }
        return fragment
    }

    /// "ORDER BY ..." body (without the keywords) that always ends with the id tie-break
    /// (`id` ascending unless id was already a key). User fields sort as JSON values (see
    /// `SQLSyntax.sortKey`); NULL sorts first ascending, last descending, on both backends.
    public func orderBy(_ keys: [SortKey], firstArgumentIndex: Int = 1) throws(TSyncError) -> SQLFragment {
        var terms: [SQLTemplate] = []
        for key in keys {
            try validateName(key.field)
            terms.append(sortTerm(key))
        }
        if !keys.contains(where: { $0.field == "id" }) {
            terms.append(sortTerm(SortKey(field: "id", descending: false)))
        }
        return SQLTemplate.joined(terms, separator: ", ").fragment(schema.dialect, firstArgumentIndex: firstArgumentIndex)
    }

    private func sortTerm(_ key: SortKey) -> SQLTemplate {
        let kind = SQLValueKind(FilterType.ofField(key.field))
        if let column = schema.systemColumns[key.field] {
            return syntax.sortKey(syntax.identifier(column), kind: kind, descending: key.descending, nullable: false)
        }
        if key.field == "id" {
            return syntax.sortKey(syntax.identifier("id"), kind: kind, descending: key.descending, nullable: false)
        }
        // An indexed field's value is written as its index's expression (the same value), so
        // `$orderby` + `$top` walks the index instead of sorting the table (SQLite).
        let value =
            schema.indexedFields.contains(key.field)
            ? SQLTemplate(stringLiteral: schema.valueExpression(key.field)).leaf()
            : syntax.jsonField(key.field, body: schema.bodyColumn, as: .json)
        return syntax.sortKey(value, kind: .json, descending: key.descending, nullable: true)
    }

    /// The columns of an index that serves `$orderby=field` (ascending, and descending but for
    /// the `id` tie-break): the sort keys of the field, as `orderBy` writes them when it is indexed.
    /// PostgreSQL needs it (its JSON sort key is two expressions); SQLite's index on the value
    /// serves already.
    public func sortIndexColumns(_ field: String) throws(TSyncError) -> String {
        try validateName(field)
        var schema = self.schema
        schema.indexedFields.insert(field)
        return SQLRenderer(schema: schema).sortTerm(SortKey(field: field)).fragment(schema.dialect, firstArgumentIndex: 1).sql
    }

    // MARK: Rendering

    /// Renders `expression` read as `kind`. Only fields and null depend on `kind`; every other node
    /// has one rendering, and the type check has made sure it fits.
    ///
    /// `wherever` is true for a condition the WHERE clause takes as it is, or through AND and OR
    /// only: there a row counts when the condition is true, and false and NULL (unknown) do the
    /// same. Only there is a comparison joined with its index range (`range AND comparison` is
    /// false where the comparison alone is unknown, which NOT, or `eq` of booleans, would tell).
    private func render(_ expression: FilterExpression, as kind: SQLValueKind, wherever: Bool = false) throws(TSyncError)
        -> SQLTemplate
    {
        switch expression {
        case .literal(let literal):
            return syntax.literal(literal, as: kind).leaf()
        case .field(let name):
            try validateName(name)
            if let column = schema.systemColumns[name] { return syntax.identifier(column) }
            return syntax.jsonField(name, body: schema.bodyColumn, as: kind).leaf()
        case .not(let operand):
            return "(NOT \(try render(operand, as: .boolean)))"
        case .negate(let operand):
            return "(- \(try render(operand, as: .number)))"
        case .binary(let op, let left, let right):
            return try binary(op, left, right, wherever: wherever)
        case .function(let function, let arguments):
            var rendered: [SQLTemplate] = []
            for (parameter, argument) in zip(function.signature.parameters, arguments) {
                rendered.append(try render(argument, as: parameter == .number ? .number : .text))
            }
            let call = syntax.function(function, rendered)
            if wherever, function == .startswith, arguments.count == 2, case .field(let name) = arguments[0],
                case .literal(.string(let prefix)) = arguments[1], let indexed = indexExpression(name),
                let range = syntax.prefixRange(indexed, prefix: prefix)
            {
                return "(\(range) AND \(call))"
            }
            return call
        }
    }

    /// The text of the literal in `field op literal` (either way round), when it is text.
    private static func literalText(_ left: FilterExpression, _ right: FilterExpression) -> String? {
        switch (left, right) {
        case (.field, .literal(.string(let text))), (.literal(.string(let text)), .field): return text
        case (.field, .literal(.dateTime(let time))), (.literal(.dateTime(let time)), .field): return time.iso8601
        default: return nil
        }
    }

    /// The expression of the index on the user field `name`, if it has one.
    private func indexExpression(_ name: String) -> SQLTemplate? {
        guard schema.indexedFields.contains(name), schema.systemColumns[name] == nil else { return nil }
        return SQLTemplate(stringLiteral: schema.indexExpression(name)).leaf()
    }

    /// For `field op literal` (either way round) on an indexed field: a range of the index that the
    /// comparison implies, to AND with it.
    private func indexRange(_ op: BinaryOperator, _ left: FilterExpression, _ right: FilterExpression, kind: SQLValueKind)
        -> SQLTemplate?
    {
        let mirrored: [BinaryOperator: BinaryOperator] = [.eq: .eq, .gt: .lt, .ge: .le, .lt: .gt, .le: .ge]
        func range(_ op: BinaryOperator, _ name: String, _ literal: FilterLiteral) -> SQLTemplate? {
            guard let indexed = indexExpression(name) else { return nil }
            let number = schema.numberIndexExpression(name).map { SQLTemplate(stringLiteral: $0).leaf() }
            return syntax.indexRange(op, indexed, number: number, literal, kind: kind)
        }
        switch (left, right) {
        case (.field(let name), .literal(let literal)): return range(op, name, literal)
        case (.literal(let literal), .field(let name)): return mirrored[op].flatMap { range($0, name, literal) }
        default: return nil
        }
    }

    private func binary(_ op: BinaryOperator, _ left: FilterExpression, _ right: FilterExpression, wherever: Bool)
        throws(TSyncError) -> SQLTemplate
    {
        switch op {
        case .and:
            return "(\(try render(left, as: .boolean, wherever: wherever)) AND \(try render(right, as: .boolean, wherever: wherever)))"
        case .or: return "(\(try render(left, as: .boolean, wherever: wherever)) OR \(try render(right, as: .boolean, wherever: wherever)))"
        case .add, .sub, .mul, .div, .mod:
            let l = try render(left, as: .number)
            let r = try render(right, as: .number)
            switch op {
            case .add: return "(\(l) + \(r))"
            case .sub: return "(\(l) - \(r))"
            case .mul: return "(\(l) * \(r))"
            case .div: return syntax.divide(l, r, realOperand: left.isRealLiteral || right.isRealLiteral)
            default: return syntax.remainder(l, r)
            }
        case .eq, .ne, .gt, .ge, .lt, .le:
            let leftType = try type(of: left)
            let rightType = try type(of: right)
            if op == .eq || op == .ne, rightType == .null || leftType == .null {
                let other = rightType == .null ? left : right
                let value = try render(other, as: SQLValueKind(try type(of: other)))
                return op == .eq ? "(\(value) IS NULL)" : "(\(value) IS NOT NULL)"
            }
            let kind = SQLValueKind(FilterTyping.comparisonType(leftType, rightType) ?? .json)
            if kind == .json { return try fieldComparison(op, left, right) }
            let l = try render(left, as: kind)
            let r = try render(right, as: kind)
            let comparison: SQLTemplate
            switch op {
            case .eq: comparison = syntax.equal(l, r, negated: false)
            case .ne: return syntax.equal(l, r, negated: true)
            case .gt: comparison = syntax.order(">", l, r, kind: kind)
            case .ge: comparison = syntax.order(">=", l, r, kind: kind)
            case .lt: comparison = syntax.order("<", l, r, kind: kind)
            default: comparison = syntax.order("<=", l, r, kind: kind)
            }
            guard wherever, let range = indexRange(op, left, right, kind: kind) else { return comparison }
            if op == .eq, kind == .text, schema.dialect == .sqlite, let text = Self.literalText(left, right),
                text.first != "{", text.first != "["
            {
                // SQLite's index value is text only for a string (its text) or an object or array
                // (its JSON text, which starts with `{` or `[`): equal to any other text, the field
                // is that string. The range decides alone, and no row's JSON is read again for its
                // type (most of a group's pull page, whose rule is such an equality).
                return range
            }
            return "(\(range) AND \(comparison))"
        }
    }

    /// Two user fields (or a field and null, ordered): they compare when both hold numbers, both
    /// strings (by bytes) or both booleans; values of different kinds, arrays and objects are never
    /// equal and never ordered, whatever order each backend gives its JSON values (SQLite: numbers
    /// before text, true equal to 1; PostgreSQL: strings before numbers). Missing and null equal
    /// each other only. Each kind is read as in any other comparison, so no new SQL is needed: the
    /// first kind under which both sides are not NULL decides.
    private func fieldComparison(_ op: BinaryOperator, _ left: FilterExpression, _ right: FilterExpression)
        throws(TSyncError) -> SQLTemplate
    {
        var terms: [SQLTemplate] = []
        for kind in [SQLValueKind.number, .text, .boolean] {
            let l = try render(left, as: kind)
            let r = try render(right, as: kind)
            switch op {
            case .eq, .ne: terms.append("(\(l) = \(r))")
            case .gt: terms.append(syntax.order(">", l, r, kind: kind))
            case .ge: terms.append(syntax.order(">=", l, r, kind: kind))
            case .lt: terms.append(syntax.order("<", l, r, kind: kind))
            default: terms.append(syntax.order("<=", l, r, kind: kind))
            }
        }
        guard op == .eq || op == .ne else { return "COALESCE(\(SQLTemplate.joined(terms, separator: ", ")))" }
        let bothNull: SQLTemplate = "(\(try render(left, as: .json)) IS NULL AND \(try render(right, as: .json)) IS NULL)"
        let equal: SQLTemplate = "(\(bothNull) OR COALESCE(\(SQLTemplate.joined(terms, separator: ", ")), FALSE))"
        return op == .eq ? equal : "(NOT \(equal))"
    }

    private func type(of expression: FilterExpression) throws(TSyncError) -> FilterType {
        do {
            return try FilterTyping.type(of: expression)
        } catch {
            throw .invalidInput("invalid $filter: \(error.message)")
        }
    }

    private func validateName(_ name: String) throws(TSyncError) {
        guard Identifiers.isSimpleName(name) else {
            throw .invalidInput(
                "invalid field name \(Identifiers.quoted(name)): use letters, digits and '_', starting with a letter or '_'")
        }
    }

    /// Trees built by hand bypass the parser's depth limit; every walk here is recursive.
    private func checkDepth(_ expression: FilterExpression) throws(TSyncError) {
        func exceeds(_ expression: FilterExpression, _ remaining: Int) -> Bool {
            guard remaining > 0 else { return true }
            switch expression {
            case .literal, .field: return false
            case .not(let operand), .negate(let operand): return exceeds(operand, remaining - 1)
            case .binary(_, let left, let right): return exceeds(left, remaining - 1) || exceeds(right, remaining - 1)
            case .function(_, let arguments): return arguments.contains { exceeds($0, remaining - 1) }
            }
        }
        if exceeds(expression, FilterParser.maximumDepth) {
            throw .invalidInput("invalid $filter: it is nested more than \(FilterParser.maximumDepth) levels deep")
        }
    }
}

extension FilterExpression {
    /// A real-number literal, possibly negated: PostgreSQL's numeric cannot tell 2.0 from 2 once
    /// bound, so `div` needs to know.
    var isRealLiteral: Bool {
        switch self {
        case .literal(.double): true
        case .negate(let operand): operand.isRealLiteral
        default: false
        }
    }
}
