/// Writing a filter back as `$filter` text: the engine combines a user's filter with its own
/// conditions (the pull checkpoint of docs/DESIGN.md §2.1) and sends the result over the wire.
///
/// The text parses back to an equal expression: parentheses are written wherever precedence
/// alone would build a different tree.
extension FilterExpression: CustomStringConvertible {
    public var description: String { odataText }

    public var odataText: String {
        switch self {
        case .literal(let literal): return literal.odataText
        case .field(let name): return name
        case .not(let operand): return "not " + operand.operandText
        case .negate(let operand):
            // `-5` would read back as the literal -5, not as the negation of 5.
            if case .literal(.int) = operand { return "-(" + operand.odataText + ")" }
            if case .literal(.double) = operand { return "-(" + operand.odataText + ")" }
            return "-" + operand.operandText
        case .binary(let op, let left, let right):
            return left.childText(of: op, isRight: false) + " " + op.rawValue + " " + right.childText(of: op, isRight: true)
        case .function(let function, let arguments):
            return function.rawValue + "(" + arguments.map(\.odataText).joined(separator: ", ") + ")"
        }
    }

    /// The operand of a unary operator: parenthesized unless it is a single term.
    private var operandText: String {
        switch self {
        case .binary: "(" + odataText + ")"
        case .literal(.int(let value)) where value < 0: "(" + odataText + ")"
        case .literal(.double(let value)) where value < 0: "(" + odataText + ")"
        default: odataText
        }
    }

    private func childText(of parent: BinaryOperator, isRight: Bool) -> String {
        guard case .binary(let op, _, _) = self else { return odataText }
        // Same-level operators associate to the left; and/or chains are rebuilt balanced by the
        // parser, so nested and/or keep their parentheses to come back as the same tree.
        let needsParentheses =
            op.precedence < parent.precedence
            || (op.precedence == parent.precedence && (isRight || parent.isLogical))
        return needsParentheses ? "(" + odataText + ")" : odataText
    }
}

extension FilterLiteral {
    public var odataText: String {
        switch self {
        case .null: "null"
        case .bool(let flag): flag ? "true" : "false"
        case .int(let value): String(value)
        case .double(let value): value.description
        // Most texts (a pull's checkpoint id on every page) hold no quote: `replacing` cost more
        // than the rest of the filter's text.
        case .string(let text) where !text.utf8.contains(UInt8(ascii: "'")): "'" + text + "'"
        case .string(let text): "'" + text.replacing("'", with: "''") + "'"
        case .dateTime(let timestamp): "datetimeoffset'" + timestamp.iso8601 + "'"
        }
    }
}
