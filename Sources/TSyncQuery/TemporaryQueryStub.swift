// TEMPORARY: replaced by the query helper's library.
//
// A minimal stand-in for the TSyncQuery contract (see /work/briefs/common.md) so the engine and the
// `query --filter` / `purge --filter` commands compile and can be tested before the real library is
// merged. It understands only: field names, literals ('text', integers, reals, true, false, null),
// eq ne gt ge lt le and or not, parentheses, and startswith/substringof/tolower/toupper/length.
// Delete this file when the real TSyncQuery lands: the public names below are the contract's.
import TSyncModel

public indirect enum FilterExpression: Sendable, Equatable {
    case literal(FilterLiteral)
    case field(String)
    case not(FilterExpression)
    case negate(FilterExpression)
    case binary(BinaryOperator, FilterExpression, FilterExpression)
    case function(FilterFunction, [FilterExpression])
}

public enum FilterLiteral: Sendable, Equatable {
    case null, bool(Bool), int(Int64), double(Double), string(String), dateTime(Timestamp)
}

public enum BinaryOperator: String, Sendable {
    case eq, ne, gt, ge, lt, le, and, or, add, sub, mul, div, mod
}

public enum FilterFunction: String, Sendable {
    case substringof, startswith, endswith, length, tolower, toupper, trim, indexof, concat, substring, replace,
        year, month, day, hour, minute, second, round, floor, ceiling
}

public struct SortKey: Sendable, Equatable {
    public var field: String
    public var descending: Bool
    public init(field: String, descending: Bool) {
        self.field = field
        self.descending = descending
    }
}

public enum ODataParser {
    public static func parseFilter(_ text: String) throws(TSyncError) -> FilterExpression {
        var parser = StubParser(text)
        let expression = try parser.parseOr()
        if let token = parser.peek() {
            throw parser.error(at: token.position, "unexpected '\(token.text)'")
        }
        return expression
    }

    public static func parseOrderBy(_ text: String) throws(TSyncError) -> [SortKey] {
        var keys: [SortKey] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let words = part.split(separator: " ")
            guard let name = words.first.map(String.init), Identifiers.isSimpleName(name), words.count <= 2 else {
                throw .invalidInput("invalid $orderby: \(Identifiers.quoted(String(part)))")
            }
            var descending = false
            if words.count == 2 {
                switch words[1].lowercased() {
                case "desc": descending = true
                case "asc": descending = false
                default: throw .invalidInput("invalid $orderby: expected asc or desc after \(name)")
                }
            }
            keys.append(SortKey(field: name, descending: descending))
        }
        return keys
    }

    public static func parseSelect(_ text: String) throws(TSyncError) -> [String] {
        let names = text.split(separator: ",", omittingEmptySubsequences: false).map {
            String($0).trimmingSpaces()
        }
        for name in names where !Identifiers.isSimpleName(name) {
            throw .invalidInput("invalid $select: \(Identifiers.quoted(name)) is not a field name")
        }
        return names
    }
}

public enum SQLDialect: Sendable { case sqlite, postgres }
public enum SQLValue: Sendable, Hashable { case null, bool(Bool), int(Int64), double(Double), text(String) }

public struct SQLFragment: Sendable, Equatable {
    public var sql: String
    public var arguments: [SQLValue]
    public init(sql: String, arguments: [SQLValue]) {
        self.sql = sql
        self.arguments = arguments
    }
}

public struct SQLSchema: Sendable {
    public var dialect: SQLDialect
    public var bodyColumn: String
    public var systemColumns: [String: String]
    public init(dialect: SQLDialect, bodyColumn: String, systemColumns: [String: String]) {
        self.dialect = dialect
        self.bodyColumn = bodyColumn
        self.systemColumns = systemColumns
    }
}

public struct SQLRenderer: Sendable {
    public let schema: SQLSchema
    public init(schema: SQLSchema) { self.schema = schema }

    public func whereClause(_ filter: FilterExpression, firstArgumentIndex: Int = 1) throws(TSyncError) -> SQLFragment {
        var arguments: [SQLValue] = []
        let sql = try render(filter, &arguments)
        return SQLFragment(sql: sql, arguments: arguments)
    }

    public func orderBy(_ keys: [SortKey], firstArgumentIndex: Int = 1) throws(TSyncError) -> SQLFragment {
        var arguments: [SQLValue] = []
        var parts: [String] = []
        for key in keys {
            parts.append(column(key.field, &arguments) + (key.descending ? " DESC" : " ASC"))
        }
        if !keys.contains(where: { $0.field == "id" }) { parts.append(schema.systemColumns["id"] ?? "id") }
        return SQLFragment(sql: parts.joined(separator: ", "), arguments: arguments)
    }

    private func column(_ name: String, _ arguments: inout [SQLValue]) -> String {
        if let column = schema.systemColumns[name] { return column }
        arguments.append(.text("$.\"\(name)\""))
        return "json_extract(\(schema.bodyColumn), ?)"
    }

    private func render(_ expression: FilterExpression, _ arguments: inout [SQLValue]) throws(TSyncError) -> String {
        switch expression {
        case .literal(let literal):
            switch literal {
            case .null: return "NULL"
            case .bool(let value): arguments.append(.int(value ? 1 : 0))
            case .int(let value): arguments.append(.int(value))
            case .double(let value): arguments.append(.double(value))
            case .string(let value): arguments.append(.text(value))
            case .dateTime(let value): arguments.append(.text(value.iso8601))
            }
            return "?"
        case .field(let name):
            return column(name, &arguments)
        case .not(let inner):
            return "(NOT " + (try render(inner, &arguments)) + ")"
        case .negate(let inner):
            return "(-" + (try render(inner, &arguments)) + ")"
        case .binary(let op, let left, let right):
            let lhs = try render(left, &arguments)
            let rhs = try render(right, &arguments)
            let symbol: String
            switch op {
            case .eq: symbol = "IS"
            case .ne: symbol = "IS NOT"
            case .gt: symbol = ">"
            case .ge: symbol = ">="
            case .lt: symbol = "<"
            case .le: symbol = "<="
            case .and: symbol = "AND"
            case .or: symbol = "OR"
            case .add: symbol = "+"
            case .sub: symbol = "-"
            case .mul: symbol = "*"
            case .div: symbol = "/"
            case .mod: symbol = "%"
            }
            return "(\(lhs) \(symbol) \(rhs))"
        case .function(let function, let args):
            var rendered: [String] = []
            for argument in args { rendered.append(try render(argument, &arguments)) }
            switch (function, rendered.count) {
            case (.startswith, 2): return "(instr(\(rendered[0]), \(rendered[1])) = 1)"
            case (.substringof, 2): return "(instr(\(rendered[1]), \(rendered[0])) > 0)"
            case (.tolower, 1): return "lower(\(rendered[0]))"
            case (.toupper, 1): return "upper(\(rendered[0]))"
            case (.length, 1): return "length(\(rendered[0]))"
            default: throw .invalidInput("invalid $filter: \(function.rawValue) is not supported here")
            }
        }
    }
}

private struct StubToken {
    enum Kind { case word, string, number, symbol }
    var kind: Kind
    var text: String
    var position: Int
}

private struct StubParser {
    private var tokens: [StubToken] = []
    private var index = 0
    private var lexError: TSyncError?

    init(_ text: String) {
        let scalars = Array(text.unicodeScalars)
        var i = 0
        while i < scalars.count {
            let c = scalars[i]
            if c == " " { i += 1; continue }
            let start = i
            if c == "'" {
                var value = ""
                i += 1
                var closed = false
                while i < scalars.count {
                    if scalars[i] == "'" {
                        if i + 1 < scalars.count, scalars[i + 1] == "'" { value.unicodeScalars.append("'"); i += 2; continue }
                        closed = true
                        i += 1
                        break
                    }
                    value.unicodeScalars.append(scalars[i])
                    i += 1
                }
                if !closed {
                    lexError = .invalidInput("invalid $filter at position \(start + 1): the string is not closed")
                    return
                }
                tokens.append(StubToken(kind: .string, text: value, position: start + 1))
            } else if c == "(" || c == ")" || c == "," {
                tokens.append(StubToken(kind: .symbol, text: String(c), position: start + 1))
                i += 1
            } else if c.properties.numericType != nil || c == "-" || c == "." {
                while i < scalars.count,
                    scalars[i].properties.numericType != nil || scalars[i] == "." || (i == start && scalars[i] == "-")
                {
                    i += 1
                }
                tokens.append(StubToken(kind: .number, text: Self.text(scalars[start..<i]), position: start + 1))
            } else if c.properties.isAlphabetic || c == "_" {
                while i < scalars.count,
                    scalars[i].properties.isAlphabetic || scalars[i] == "_" || scalars[i].properties.numericType != nil
                {
                    i += 1
                }
                tokens.append(StubToken(kind: .word, text: Self.text(scalars[start..<i]), position: start + 1))
            } else {
                lexError = .invalidInput("invalid $filter at position \(start + 1): unexpected '\(c)'")
                return
            }
        }
    }

    private static func text(_ scalars: ArraySlice<Unicode.Scalar>) -> String {
        var string = ""
        string.unicodeScalars.append(contentsOf: scalars)
        return string
    }

    func peek() -> StubToken? { index < tokens.count ? tokens[index] : nil }

    func error(at position: Int, _ message: String) -> TSyncError {
        .invalidInput("invalid $filter at position \(position): \(message)")
    }

    private mutating func nextWord(_ word: String) -> Bool {
        guard let token = peek(), token.kind == .word, token.text == word else { return false }
        index += 1
        return true
    }

    mutating func parseOr() throws(TSyncError) -> FilterExpression {
        if let lexError { throw lexError }
        var left = try parseAnd()
        while nextWord("or") { left = .binary(.or, left, try parseAnd()) }
        return left
    }

    private mutating func parseAnd() throws(TSyncError) -> FilterExpression {
        var left = try parseNot()
        while nextWord("and") { left = .binary(.and, left, try parseNot()) }
        return left
    }

    private mutating func parseNot() throws(TSyncError) -> FilterExpression {
        if nextWord("not") { return .not(try parseNot()) }
        let left = try parsePrimary()
        if let token = peek(), token.kind == .word,
            let op = BinaryOperator(rawValue: token.text), [.eq, .ne, .gt, .ge, .lt, .le].contains(op)
        {
            index += 1
            return .binary(op, left, try parsePrimary())
        }
        return left
    }

    private mutating func parsePrimary() throws(TSyncError) -> FilterExpression {
        guard let token = peek() else {
            let end = tokens.last.map { $0.position + $0.text.count } ?? 1
            throw error(at: end, "unexpected end of the filter, expected a value")
        }
        index += 1
        switch token.kind {
        case .string: return .literal(.string(token.text))
        case .number:
            if let int = Int64(token.text) { return .literal(.int(int)) }
            if let double = Double(token.text) { return .literal(.double(double)) }
            throw error(at: token.position, "invalid number '\(token.text)'")
        case .symbol:
            guard token.text == "(" else { throw error(at: token.position, "unexpected '\(token.text)'") }
            let inner = try parseOr()
            guard let close = peek(), close.text == ")" else {
                throw error(at: peek()?.position ?? token.position, "expected ')'")
            }
            index += 1
            return inner
        case .word:
            switch token.text {
            case "true": return .literal(.bool(true))
            case "false": return .literal(.bool(false))
            case "null": return .literal(.null)
            default: break
            }
            if let open = peek(), open.text == "(" {
                guard let function = FilterFunction(rawValue: token.text) else {
                    throw error(at: token.position, "unknown function '\(token.text)'")
                }
                index += 1
                var arguments: [FilterExpression] = []
                while true {
                    arguments.append(try parseOr())
                    guard let next = peek() else { throw error(at: token.position, "expected ')'") }
                    index += 1
                    if next.text == ")" { break }
                    if next.text != "," { throw error(at: next.position, "expected ',' or ')'") }
                }
                return .function(function, arguments)
            }
            if BinaryOperator(rawValue: token.text) != nil {
                throw error(at: token.position, "expected a value before '\(token.text)'")
            }
            return .field(token.text)
        }
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        String(self.drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
    }
}
