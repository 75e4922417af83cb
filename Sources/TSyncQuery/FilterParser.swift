import TSyncModel

/// Recursive-descent (precedence-climbing) parser for the `$filter` subset of docs/DESIGN.md §4.
///
/// Every node is type-checked as it is built, so a filter that could never be translated is
/// reported with the position of the operator or function at fault, before any SQL exists.
///
/// Chains of `and` / `or` are built as balanced trees: both operators are associative, and a
/// balanced tree keeps a filter of hundreds of `id eq '…' or …` terms shallow enough for the
/// depth limit, which protects every recursive walk over the tree (rendering, type checks).
struct FilterParser {
    /// The deepest nesting accepted, counted in parentheses, unary operators, function calls and
    /// tree depth alike.
    static let maximumDepth = 100

    private struct Node {
        var expression: FilterExpression
        var type: FilterType
        var depth: Int
    }

    private let tokens: [FilterToken]
    private var index = 0
    private var nesting = 0

    private init(tokens: [FilterToken]) {
        self.tokens = tokens
    }

    static func parse(_ text: String) throws(FilterSyntaxError) -> FilterExpression {
        var parser = FilterParser(tokens: try FilterLexer.tokens(text))
        guard parser.current.kind != .end else {
            throw FilterSyntaxError(position: 1, message: "the filter is empty")
        }
        let node = try parser.expression(minimumPrecedence: 1)
        guard parser.current.kind == .end else {
            throw parser.unexpected("expected an operator such as and, or, eq")
        }
        let position = parser.tokens[0].position
        try check(position) { () throws(FilterTypeError) in
            if node.type != .boolean, !node.type.isFlexible {
                throw FilterTypeError(message: "the filter must be a condition (true or false), not \(node.type.name)")
            }
        }
        return node.expression
    }

    private var current: FilterToken { tokens[index] }

    private mutating func advance() -> FilterToken {
        let token = tokens[index]
        if index < tokens.count - 1 { index += 1 }
        return token
    }

    // MARK: Binary operators

    private var currentOperator: BinaryOperator? {
        guard case .identifier(let name) = current.kind else { return nil }
        return BinaryOperator(rawValue: name)
    }

    private mutating func expression(minimumPrecedence: Int) throws(FilterSyntaxError) -> Node {
        var left = try unary()
        while let op = currentOperator, op.precedence >= minimumPrecedence {
            if op.isLogical {
                left = try logicalChain(op, first: left)
                continue
            }
            let position = advance().position
            let right = try expression(minimumPrecedence: op.precedence + 1)
            let type = try Self.check(position) { () throws(FilterTypeError) in
                try FilterTyping.binary(op, left.type, right.type)
            }
            left = try node(.binary(op, left.expression, right.expression), type, children: [left, right], at: position)
        }
        return left
    }

    /// `a or b or c …` (or the same with `and`), built as a balanced tree.
    private mutating func logicalChain(_ op: BinaryOperator, first: Node) throws(FilterSyntaxError) -> Node {
        var operands = [first]
        let firstPosition = current.position
        try checkLogicalOperand(first, op, at: firstPosition)
        while currentOperator == op {
            let position = advance().position
            let operand = try expression(minimumPrecedence: op.precedence + 1)
            try checkLogicalOperand(operand, op, at: position)
            operands.append(operand)
        }
        return try balanced(op, operands[...], at: firstPosition)
    }

    private func checkLogicalOperand(_ operand: Node, _ op: BinaryOperator, at position: Int) throws(FilterSyntaxError) {
        _ = try Self.check(position) { () throws(FilterTypeError) in
            try FilterTyping.binary(op, operand.type, .boolean)
        }
    }

    /// Splits so that the left half is the larger: two and three operands come out exactly as a
    /// left-associative parse would build them.
    private func balanced(_ op: BinaryOperator, _ operands: ArraySlice<Node>, at position: Int) throws(FilterSyntaxError)
        -> Node
    {
        if operands.count == 1, let only = operands.first { return only }
        let middle = operands.startIndex + (operands.count + 1) / 2
        let left = try balanced(op, operands[..<middle], at: position)
        let right = try balanced(op, operands[middle...], at: position)
        return try node(.binary(op, left.expression, right.expression), .boolean, children: [left, right], at: position)
    }

    // MARK: Unary operators and primaries

    private mutating func unary() throws(FilterSyntaxError) -> Node {
        let token = current
        if case .identifier("not") = token.kind {
            _ = advance()
            let operand = try nested(at: token.position) { (parser: inout FilterParser) throws(FilterSyntaxError) in try parser.unary() }
            let type = try Self.check(token.position) { () throws(FilterTypeError) in try FilterTyping.not(operand.type) }
            return try node(.not(operand.expression), type, children: [operand], at: token.position)
        }
        if token.kind == .minus {
            _ = advance()
            switch current.kind {
            case .integer(let digits):
                let number = advance()
                return Node(expression: .literal(.int(try Self.integer("-" + digits, at: number.position))), type: .number, depth: 1)
            case .real(let value):
                _ = advance()
                return Node(expression: .literal(.double(-value)), type: .number, depth: 1)
            default:
                let operand = try nested(at: token.position) { (parser: inout FilterParser) throws(FilterSyntaxError) in try parser.unary()
                }
                let type = try Self.check(token.position) { () throws(FilterTypeError) in
                    try FilterTyping.negate(operand.type)
                }
                return try node(.negate(operand.expression), type, children: [operand], at: token.position)
            }
        }
        return try primary()
    }

    private mutating func primary() throws(FilterSyntaxError) -> Node {
        let token = advance()
        func literal(_ value: FilterLiteral) -> Node {
            Node(expression: .literal(value), type: .of(value), depth: 1)
        }
        switch token.kind {
        case .string(let text): return literal(.string(text))
        case .integer(let digits): return literal(.int(try Self.integer(digits, at: token.position)))
        case .real(let value): return literal(.double(value))
        case .dateTime(let timestamp): return literal(.dateTime(timestamp))
        case .openParenthesis:
            let inner = try nested(at: token.position) { (parser: inout FilterParser) throws(FilterSyntaxError) in
                try parser.expression(minimumPrecedence: 1)
            }
            try expectClosing(openedAt: token.position)
            return inner
        case .identifier(let name):
            switch name {
            case "true": return literal(.bool(true))
            case "false": return literal(.bool(false))
            case "null": return literal(.null)
            default: break
            }
            if BinaryOperator(rawValue: name) != nil {
                throw FilterSyntaxError(position: token.position, message: "expected a value before the operator '\(name)'")
            }
            if current.kind == .openParenthesis { return try call(name, at: token.position) }
            return Node(expression: .field(name), type: .ofField(name), depth: 1)
        case .end:
            throw FilterSyntaxError(position: token.position, message: "unexpected end of the filter, expected a value")
        default:
            throw FilterSyntaxError(position: token.position, message: "expected a value, found \(token.kind.description)")
        }
    }

    private mutating func call(_ name: String, at position: Int) throws(FilterSyntaxError) -> Node {
        guard let function = FilterFunction(rawValue: name) else {
            var message = "unknown function '\(name)'"
            let lowercased = name.lowercased()
            if FilterFunction(rawValue: lowercased) != nil {
                message += " (function names are lowercase: \(lowercased))"
            } else if BinaryOperator(rawValue: lowercased) != nil || lowercased == "not" {
                message += " (operators are lowercase: \(lowercased))"
            }
            throw FilterSyntaxError(position: position, message: message)
        }
        let opening = advance().position
        var arguments: [Node] = []
        if current.kind != .closeParenthesis {
            repeat {
                if !arguments.isEmpty { _ = advance() }
                arguments.append(
                    try nested(at: current.position) { (parser: inout FilterParser) throws(FilterSyntaxError) in
                        try parser.expression(minimumPrecedence: 1)
                    })
            } while current.kind == .comma
        }
        try expectClosing(openedAt: opening)
        let type = try Self.check(position) { () throws(FilterTypeError) in
            try FilterTyping.function(function, arguments.map(\.type))
        }
        return try node(.function(function, arguments.map(\.expression)), type, children: arguments, at: position)
    }

    private mutating func expectClosing(openedAt opening: Int) throws(FilterSyntaxError) {
        guard current.kind == .closeParenthesis else {
            throw unexpected("expected ')' to close the '(' at position \(opening)")
        }
        _ = advance()
    }

    // MARK: Helpers

    /// Runs a nested parse, refusing to go deeper than `maximumDepth`: deep input must be an error,
    /// never a stack overflow.
    private mutating func nested(at position: Int, _ body: (inout FilterParser) throws(FilterSyntaxError) -> Node)
        throws(FilterSyntaxError) -> Node
    {
        nesting += 1
        defer { nesting -= 1 }
        guard nesting <= Self.maximumDepth else { throw tooDeep(at: position) }
        return try body(&self)
    }

    private func node(_ expression: FilterExpression, _ type: FilterType, children: [Node], at position: Int)
        throws(FilterSyntaxError) -> Node
    {
        let depth = 1 + (children.map(\.depth).max() ?? 0)
        guard depth <= Self.maximumDepth else { throw tooDeep(at: position) }
        return Node(expression: expression, type: type, depth: depth)
    }

    private func tooDeep(at position: Int) -> FilterSyntaxError {
        FilterSyntaxError(position: position, message: "the filter is nested more than \(Self.maximumDepth) levels deep")
    }

    /// "unexpected X, <expectation>", with a hint when X is an operator written in capitals.
    private func unexpected(_ expectation: String) -> FilterSyntaxError {
        var message = "unexpected \(current.kind.description), \(expectation)"
        if case .identifier(let name) = current.kind, name != name.lowercased(),
            BinaryOperator(rawValue: name.lowercased()) != nil || name.lowercased() == "not"
        {
            message += " (operators are lowercase: \(name.lowercased()))"
        }
        return FilterSyntaxError(position: current.position, message: message)
    }

    private static func integer(_ text: String, at position: Int) throws(FilterSyntaxError) -> Int64 {
        guard let value = Int64(text) else {
            throw FilterSyntaxError(
                position: position,
                message: "the integer \(text) does not fit in 64 bits (write a real such as \(text).0 for a larger number)")
        }
        return value
    }

    private static func check<T>(_ position: Int, _ rule: () throws(FilterTypeError) -> T) throws(FilterSyntaxError) -> T {
        do {
            return try rule()
        } catch {
            throw FilterSyntaxError(position: position, message: error.message)
        }
    }
}
