/// The static type of a filter expression, known before any record is read.
///
/// Literals, system properties and function results have a fixed type. A user field does not: its
/// JSON value may be of any kind and differ from record to record, so it is `.json` and takes the
/// type that the expression around it expects (see `SQLRenderer`). Checking types up front lets the
/// parser report `length(5)` with a position instead of letting SQL silently return nothing.
enum FilterType: Sendable, Equatable {
    case string, number, boolean, dateTime, null
    /// A user field: a JSON value whose kind is only known per record.
    case json

    /// How a user reads the type in an error message.
    var name: String {
        switch self {
        case .string: "a string"
        case .number: "a number"
        case .boolean: "a boolean"
        case .dateTime: "a date"
        case .null: "null"
        case .json: "a field"
        }
    }

    /// True for `.json` and `.null`, which fit wherever a value is expected.
    var isFlexible: Bool { self == .json || self == .null }

    /// The type of a member name. System properties have fixed types whatever column stores them.
    static func ofField(_ name: String) -> FilterType {
        switch name {
        case "id", "version": .string
        case "createdAt", "updatedAt": .dateTime
        case "deleted": .boolean
        default: .json
        }
    }

    static func of(_ literal: FilterLiteral) -> FilterType {
        switch literal {
        case .null: .null
        case .bool: .boolean
        case .int, .double: .number
        case .string: .string
        case .dateTime: .dateTime
        }
    }
}

/// A type rule broken; the parser adds the position, the renderer names the construct.
struct FilterTypeError: Error, Sendable {
    var message: String
}

/// The typing rules of the `$filter` language, one node at a time.
enum FilterTyping {
    static func not(_ operand: FilterType) throws(FilterTypeError) -> FilterType {
        guard operand == .boolean || operand.isFlexible else {
            throw FilterTypeError(message: "'not' needs a boolean operand, not \(operand.name)")
        }
        return .boolean
    }

    static func negate(_ operand: FilterType) throws(FilterTypeError) -> FilterType {
        guard operand == .number || operand.isFlexible else {
            throw FilterTypeError(message: "unary '-' needs a number, not \(operand.name)")
        }
        return .number
    }

    static func binary(_ op: BinaryOperator, _ left: FilterType, _ right: FilterType) throws(FilterTypeError)
        -> FilterType
    {
        if op.isLogical {
            for operand in [left, right] where !(operand == .boolean || operand.isFlexible) {
                throw FilterTypeError(message: "'\(op.rawValue)' needs boolean operands, not \(operand.name)")
            }
            return .boolean
        }
        if op.isArithmetic {
            for operand in [left, right] where !(operand == .number || operand.isFlexible) {
                throw FilterTypeError(message: "'\(op.rawValue)' needs numbers, not \(operand.name)")
            }
            return .number
        }
        guard comparisonType(left, right) != nil else {
            throw FilterTypeError(message: "'\(op.rawValue)' cannot compare \(left.name) with \(right.name)")
        }
        if op != .eq, op != .ne, left == .boolean || right == .boolean {
            throw FilterTypeError(message: "booleans can only be compared with 'eq' or 'ne', not '\(op.rawValue)'")
        }
        return .boolean
    }

    /// The type both sides of a comparison are read as, or nil when they cannot be compared.
    /// A fixed type wins over a field; a date and a string compare as text; two fields (or null)
    /// compare as JSON values.
    static func comparisonType(_ left: FilterType, _ right: FilterType) -> FilterType? {
        switch (left, right) {
        case _ where left == right: return left == .null ? .json : left
        case (.json, _), (.null, _): return right.isFlexible ? .json : right
        case (_, .json), (_, .null): return left
        case (.string, .dateTime), (.dateTime, .string): return .string
        default: return nil
        }
    }

    static func function(_ function: FilterFunction, _ arguments: [FilterType]) throws(FilterTypeError) -> FilterType {
        let signature = function.signature
        guard signature.arity.contains(arguments.count) else {
            let expected =
                signature.arity.count == 1
                ? "\(signature.arity.lowerBound) argument\(signature.arity.lowerBound == 1 ? "" : "s")"
                : "\(signature.arity.lowerBound) or \(signature.arity.upperBound) arguments"
            throw FilterTypeError(message: "\(function.rawValue)() takes \(expected), not \(arguments.count)")
        }
        for (index, (parameter, argument)) in zip(signature.parameters, arguments).enumerated()
        where !parameter.accepts(argument) {
            throw FilterTypeError(
                message: "\(function.rawValue)() needs \(parameter.name) as argument \(index + 1), not \(argument.name)"
            )
        }
        return signature.result
    }

    /// The type of a whole expression, checking every node on the way.
    static func type(of expression: FilterExpression) throws(FilterTypeError) -> FilterType {
        switch expression {
        case .literal(let literal): return .of(literal)
        case .field(let name): return .ofField(name)
        case .not(let operand): return try not(type(of: operand))
        case .negate(let operand): return try negate(type(of: operand))
        case .binary(let op, let left, let right): return try binary(op, type(of: left), type(of: right))
        case .function(let function, let arguments):
            var types: [FilterType] = []
            for argument in arguments { types.append(try type(of: argument)) }
            return try self.function(function, types)
        }
    }
}

/// What a function takes and returns (OData v3 canonical functions).
struct FunctionSignature: Sendable {
    enum Parameter: Sendable {
        case text, number, date

        var name: String {
            switch self {
            case .text: "a string"
            case .number: "a number"
            case .date: "a date"
            }
        }

        /// Dates are ISO 8601 text, so they may stand where text is expected and the other way
        /// round (`startswith(updatedAt, '2026-01')`, `year('2026-01-05T…')`).
        func accepts(_ type: FilterType) -> Bool {
            if type.isFlexible { return true }
            switch self {
            case .text, .date: return type == .string || type == .dateTime
            case .number: return type == .number
            }
        }
    }

    var parameters: [Parameter]
    var arity: ClosedRange<Int>
    var result: FilterType
}

extension FilterFunction {
    var signature: FunctionSignature {
        switch self {
        case .substringof, .startswith, .endswith:
            FunctionSignature(parameters: [.text, .text], arity: 2...2, result: .boolean)
        case .length: FunctionSignature(parameters: [.text], arity: 1...1, result: .number)
        case .tolower, .toupper, .trim: FunctionSignature(parameters: [.text], arity: 1...1, result: .string)
        case .indexof: FunctionSignature(parameters: [.text, .text], arity: 2...2, result: .number)
        case .concat: FunctionSignature(parameters: [.text, .text], arity: 2...2, result: .string)
        case .substring: FunctionSignature(parameters: [.text, .number, .number], arity: 2...3, result: .string)
        case .replace: FunctionSignature(parameters: [.text, .text, .text], arity: 3...3, result: .string)
        case .year, .month, .day, .hour, .minute, .second:
            FunctionSignature(parameters: [.date], arity: 1...1, result: .number)
        case .round, .floor, .ceiling: FunctionSignature(parameters: [.number], arity: 1...1, result: .number)
        }
    }
}
