// TEMPORARY: replaced by the query helper's library.
//
// A minimal implementation of the TSyncQuery contract (common brief) so that the server builds and
// its tests run before the real library is merged. It parses the OData v3 subset and renders it for
// SQLite only. Delete this whole file when merging the query helper's branch.

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

public enum BinaryOperator: String, Sendable { case eq, ne, gt, ge, lt, le, and, or, add, sub, mul, div, mod }

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

// MARK: - Parser

public enum ODataParser {
    public static func parseFilter(_ text: String) throws(TSyncError) -> FilterExpression {
        var parser = StubParser(tokens: try StubLexer.tokens(text), length: text.unicodeScalars.count)
        let expression = try parser.parseOr(depth: 0)
        if let token = parser.peek { throw parser.error(at: token.position, "unexpected \(token.text)") }
        return expression
    }

    public static func parseOrderBy(_ text: String) throws(TSyncError) -> [SortKey] {
        try text.split(separator: ",", omittingEmptySubsequences: false).map { (part) throws(TSyncError) -> SortKey in
            let words = part.split(separator: " ")
            guard let name = words.first.map(String.init), Identifiers.isSimpleName(name), words.count <= 2 else {
                throw .invalidInput("invalid $orderby: \(Identifiers.quoted(String(part)))")
            }
            let direction = words.count == 2 ? words[1].lowercased() : "asc"
            guard direction == "asc" || direction == "desc" else {
                throw .invalidInput("invalid $orderby direction \(Identifiers.quoted(direction)): use asc or desc")
            }
            return SortKey(field: name, descending: direction == "desc")
        }
    }

    public static func parseSelect(_ text: String) throws(TSyncError) -> [String] {
        try text.split(separator: ",", omittingEmptySubsequences: false).map { (part) throws(TSyncError) -> String in
            let name = part.trimmingSpaces
            guard Identifiers.isSimpleName(name) else {
                throw .invalidInput("invalid $select field \(Identifiers.quoted(name))")
            }
            return name
        }
    }
}

extension Substring {
    fileprivate var trimmingSpaces: String {
        String(drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
    }
}

private struct StubToken {
    enum Kind { case word, literal(FilterLiteral), open, close, comma }
    var kind: Kind
    var text: String
    var position: Int
}

private enum StubLexer {
    static func tokens(_ text: String) throws(TSyncError) -> [StubToken] {
        let scalars = Array(text.unicodeScalars)
        var tokens: [StubToken] = []
        var index = 0
        func isWordScalar(_ s: Unicode.Scalar) -> Bool {
            (s >= "a" && s <= "z") || (s >= "A" && s <= "Z") || (s >= "0" && s <= "9") || s == "_" || s == "."
        }
        while index < scalars.count {
            let scalar = scalars[index]
            let position = index + 1
            switch scalar {
            case " ", "\t", "\n", "\r": index += 1
            case "(": tokens.append(StubToken(kind: .open, text: "'('", position: position)); index += 1
            case ")": tokens.append(StubToken(kind: .close, text: "')'", position: position)); index += 1
            case ",": tokens.append(StubToken(kind: .comma, text: "','", position: position)); index += 1
            case "'":
                let string = try readString(scalars, &index, position)
                tokens.append(StubToken(kind: .literal(.string(string)), text: "string", position: position))
            case "-" where index + 1 < scalars.count && scalars[index + 1] >= "0" && scalars[index + 1] <= "9"
                && !(tokens.last.map(isOperand) ?? false):
                index += 1
                let token = try readNumber(scalars, &index, position, negative: true)
                tokens.append(token)
            case "-": tokens.append(StubToken(kind: .word, text: "-", position: position)); index += 1
            case "0"..."9":
                tokens.append(try readNumber(scalars, &index, position, negative: false))
            default:
                guard isWordScalar(scalar) else {
                    throw .invalidInput("invalid $filter at position \(position): unexpected character '\(scalar)'")
                }
                var word = ""
                while index < scalars.count, isWordScalar(scalars[index]) {
                    word.unicodeScalars.append(scalars[index])
                    index += 1
                }
                let lower = word.lowercased()
                if (lower == "datetime" || lower == "datetimeoffset"), index < scalars.count, scalars[index] == "'" {
                    let text = try readString(scalars, &index, position)
                    guard let stamp = Timestamp(iso8601: text) else {
                        throw .invalidInput("invalid $filter at position \(position): invalid date \(Identifiers.quoted(text))")
                    }
                    tokens.append(StubToken(kind: .literal(.dateTime(stamp)), text: "date", position: position))
                } else if lower == "true" || lower == "false" {
                    tokens.append(StubToken(kind: .literal(.bool(lower == "true")), text: word, position: position))
                } else if lower == "null" {
                    tokens.append(StubToken(kind: .literal(.null), text: word, position: position))
                } else {
                    tokens.append(StubToken(kind: .word, text: word, position: position))
                }
            }
        }
        return tokens
    }

    static func isOperand(_ token: StubToken) -> Bool {
        switch token.kind {
        case .literal, .close: return true
        case .word: return !["and", "or", "not", "eq", "ne", "gt", "ge", "lt", "le", "add", "sub", "mul", "div", "mod", "-"].contains(token.text)
        default: return false
        }
    }

    static func readString(_ scalars: [Unicode.Scalar], _ index: inout Int, _ position: Int) throws(TSyncError) -> String {
        index += 1
        var string = ""
        while index < scalars.count {
            if scalars[index] == "'" {
                if index + 1 < scalars.count, scalars[index + 1] == "'" {
                    string.unicodeScalars.append("'")
                    index += 2
                    continue
                }
                index += 1
                return string
            }
            string.unicodeScalars.append(scalars[index])
            index += 1
        }
        throw .invalidInput("invalid $filter at position \(position): the string is not closed")
    }

    static func readNumber(_ scalars: [Unicode.Scalar], _ index: inout Int, _ position: Int, negative: Bool) throws(TSyncError) -> StubToken {
        var text = negative ? "-" : ""
        var isReal = false
        while index < scalars.count {
            let s = scalars[index]
            if s >= "0" && s <= "9" { text.unicodeScalars.append(s) }
            else if s == "." || s == "e" || s == "E" { isReal = true; text.unicodeScalars.append(s) }
            else if (s == "+" || s == "-"), text.last == "e" || text.last == "E" { text.unicodeScalars.append(s) }
            else { break }
            index += 1
        }
        if index < scalars.count, ["L", "l", "M", "m", "d", "D", "f", "F"].contains(scalars[index]) { index += 1 }
        if !isReal, let int = Int64(text) {
            return StubToken(kind: .literal(.int(int)), text: text, position: position)
        }
        guard let double = Double(text), double.isFinite else {
            throw .invalidInput("invalid $filter at position \(position): invalid number \(text)")
        }
        return StubToken(kind: .literal(.double(double)), text: text, position: position)
    }
}

private struct StubParser {
    var tokens: [StubToken]
    var length: Int
    var index = 0
    let maximumDepth = 100

    var peek: StubToken? { index < tokens.count ? tokens[index] : nil }

    func error(at position: Int, _ message: String) -> TSyncError {
        .invalidInput("invalid $filter at position \(position): \(message)")
    }

    var endPosition: Int { length + 1 }

    mutating func takeWord(_ words: [String]) -> String? {
        guard let token = peek, case .word = token.kind, words.contains(token.text.lowercased()) else { return nil }
        index += 1
        return token.text.lowercased()
    }

    mutating func parseOr(depth: Int) throws(TSyncError) -> FilterExpression {
        guard depth < maximumDepth else { throw error(at: peek?.position ?? endPosition, "the filter nests too deeply") }
        var left = try parseAnd(depth: depth + 1)
        while takeWord(["or"]) != nil { left = .binary(.or, left, try parseAnd(depth: depth + 1)) }
        return left
    }

    mutating func parseAnd(depth: Int) throws(TSyncError) -> FilterExpression {
        var left = try parseComparison(depth: depth)
        while takeWord(["and"]) != nil { left = .binary(.and, left, try parseComparison(depth: depth)) }
        return left
    }

    mutating func parseComparison(depth: Int) throws(TSyncError) -> FilterExpression {
        var left = try parseAdditive(depth: depth)
        while let op = takeWord(["eq", "ne", "gt", "ge", "lt", "le"]), let binary = BinaryOperator(rawValue: op) {
            left = .binary(binary, left, try parseAdditive(depth: depth))
        }
        return left
    }

    mutating func parseAdditive(depth: Int) throws(TSyncError) -> FilterExpression {
        var left = try parseMultiplicative(depth: depth)
        while let op = takeWord(["add", "sub"]), let binary = BinaryOperator(rawValue: op) {
            left = .binary(binary, left, try parseMultiplicative(depth: depth))
        }
        return left
    }

    mutating func parseMultiplicative(depth: Int) throws(TSyncError) -> FilterExpression {
        var left = try parseUnary(depth: depth)
        while let op = takeWord(["mul", "div", "mod"]), let binary = BinaryOperator(rawValue: op) {
            left = .binary(binary, left, try parseUnary(depth: depth))
        }
        return left
    }

    mutating func parseUnary(depth: Int) throws(TSyncError) -> FilterExpression {
        guard depth < maximumDepth else { throw error(at: peek?.position ?? endPosition, "the filter nests too deeply") }
        if takeWord(["not"]) != nil { return .not(try parseUnary(depth: depth + 1)) }
        if takeWord(["-"]) != nil { return .negate(try parseUnary(depth: depth + 1)) }
        return try parsePrimary(depth: depth + 1)
    }

    mutating func parsePrimary(depth: Int) throws(TSyncError) -> FilterExpression {
        guard let token = peek else { throw error(at: endPosition, "unexpected end of the filter, expected a value") }
        index += 1
        switch token.kind {
        case .literal(let literal): return .literal(literal)
        case .open:
            let inner = try parseOr(depth: depth + 1)
            guard let close = peek, case .close = close.kind else {
                throw error(at: peek?.position ?? endPosition, "expected ')'")
            }
            index += 1
            return inner
        case .word:
            if let next = peek, case .open = next.kind {
                guard let function = FilterFunction(rawValue: token.text.lowercased()) else {
                    throw error(at: token.position, "unknown function \(token.text)")
                }
                index += 1
                var arguments: [FilterExpression] = []
                if let close = peek, case .close = close.kind {
                    index += 1
                } else {
                    while true {
                        arguments.append(try parseOr(depth: depth + 1))
                        guard let separator = peek else { throw error(at: endPosition, "expected ')'") }
                        index += 1
                        if case .comma = separator.kind { continue }
                        if case .close = separator.kind { break }
                        throw error(at: separator.position, "expected ',' or ')'")
                    }
                }
                return .function(function, arguments)
            }
            guard Identifiers.isSimpleName(token.text) else { throw error(at: token.position, "unexpected \(token.text)") }
            if ["and", "or", "eq", "ne", "gt", "ge", "lt", "le", "add", "sub", "mul", "div", "mod"].contains(token.text.lowercased()) {
                throw error(at: token.position, "unexpected \(token.text), expected a value")
            }
            return .field(token.text)
        case .close, .comma:
            throw error(at: token.position, "unexpected \(token.text), expected a value")
        }
    }
}

// MARK: - SQLite rendering

public struct SQLRenderer: Sendable {
    private let schema: SQLSchema

    public init(schema: SQLSchema) {
        self.schema = schema
    }

    public func whereClause(_ filter: FilterExpression, firstArgumentIndex: Int = 1) throws(TSyncError) -> SQLFragment {
        guard schema.dialect == .sqlite else { throw .failure("the temporary TSyncQuery stub renders SQLite only") }
        return try render(filter)
    }

    public func orderBy(_ keys: [SortKey], firstArgumentIndex: Int = 1) throws(TSyncError) -> SQLFragment {
        guard schema.dialect == .sqlite else { throw .failure("the temporary TSyncQuery stub renders SQLite only") }
        var parts: [String] = []
        var arguments: [SQLValue] = []
        for key in keys {
            let field = column(key.field)
            parts.append(field.sql + (key.descending ? " DESC" : " ASC"))
            arguments += field.arguments
        }
        if !keys.contains(where: { $0.field == "id" }) { parts.append(column("id").sql + " ASC") }
        return SQLFragment(sql: parts.joined(separator: ", "), arguments: arguments)
    }

    private func column(_ name: String) -> SQLFragment {
        if let column = schema.systemColumns[name] { return SQLFragment(sql: "\"\(column)\"", arguments: []) }
        return SQLFragment(sql: "json_extract(\"\(schema.bodyColumn)\", ?)", arguments: [.text("$.\"\(name)\"")])
    }

    private func render(_ expression: FilterExpression) throws(TSyncError) -> SQLFragment {
        switch expression {
        case .field(let name): return column(name)
        case .literal(let literal):
            switch literal {
            case .null: return SQLFragment(sql: "NULL", arguments: [])
            case .bool(let value): return SQLFragment(sql: "?", arguments: [.bool(value)])
            case .int(let value): return SQLFragment(sql: "?", arguments: [.int(value)])
            case .double(let value): return SQLFragment(sql: "?", arguments: [.double(value)])
            case .string(let value): return SQLFragment(sql: "?", arguments: [.text(value)])
            case .dateTime(let value): return SQLFragment(sql: "?", arguments: [.text(value.iso8601)])
            }
        case .not(let inner): return wrap("(NOT ", [try render(inner)], ")")
        case .negate(let inner): return wrap("(- ", [try render(inner)], ")")
        case .binary(let op, let left, let right):
            let l = try render(left)
            let r = try render(right)
            let sqlOperator: String
            switch op {
            case .eq: sqlOperator = "IS"
            case .ne: sqlOperator = "IS NOT"
            case .gt: sqlOperator = ">"
            case .ge: sqlOperator = ">="
            case .lt: sqlOperator = "<"
            case .le: sqlOperator = "<="
            case .and: sqlOperator = "AND"
            case .or: sqlOperator = "OR"
            case .add: sqlOperator = "+"
            case .sub: sqlOperator = "-"
            case .mul: sqlOperator = "*"
            case .div: sqlOperator = "/"
            case .mod: sqlOperator = "%"
            }
            return SQLFragment(sql: "(\(l.sql) \(sqlOperator) \(r.sql))", arguments: l.arguments + r.arguments)
        case .function(let function, let arguments):
            var rendered: [SQLFragment] = []
            for argument in arguments { rendered.append(try render(argument)) }
            return try renderFunction(function, rendered)
        }
    }

    private func wrap(_ prefix: String, _ parts: [SQLFragment], _ suffix: String, separator: String = ", ") -> SQLFragment {
        SQLFragment(sql: prefix + parts.map(\.sql).joined(separator: separator) + suffix, arguments: parts.flatMap(\.arguments))
    }

    private func renderFunction(_ function: FilterFunction, _ a: [SQLFragment]) throws(TSyncError) -> SQLFragment {
        let arity: [FilterFunction: ClosedRange<Int>] = [
            .substringof: 2...2, .startswith: 2...2, .endswith: 2...2, .indexof: 2...2, .concat: 2...2,
            .substring: 2...3, .replace: 3...3,
        ]
        guard (arity[function] ?? 1...1).contains(a.count) else {
            throw .invalidInput("invalid $filter: wrong number of arguments to \(function.rawValue)")
        }
        func dateField(_ format: String) -> SQLFragment { wrap("CAST(strftime('\(format)', ", [a[0]], ") AS INTEGER)") }
        switch function {
        case .substringof: return wrap("(instr(", [a[1], a[0]], ") > 0)")
        case .startswith: return wrap("(substr(", [a[0], wrap("1, length(", [a[1]], ")")], ") = ") + a[1] + ")"
        case .endswith:
            return wrap("(length(", [a[0]], ") >= length(") + a[1] + ") AND substr(" + a[0] + ", length(" + a[0]
                + ") - length(" + a[1] + ") + 1) = " + a[1] + ")"
        case .length: return wrap("length(", [a[0]], ")")
        case .tolower: return wrap("lower(", [a[0]], ")")
        case .toupper: return wrap("upper(", [a[0]], ")")
        case .trim: return wrap("trim(", [a[0]], ")")
        case .indexof: return wrap("(instr(", [a[0], a[1]], ") - 1)")
        case .concat: return wrap("(", [a[0], a[1]], ")", separator: " || ")
        case .substring:
            return a.count == 2 ? wrap("substr(", [a[0], a[1] + " + 1"], ")") : wrap("substr(", [a[0], a[1] + " + 1", a[2]], ")")
        case .replace: return wrap("replace(", a, ")")
        case .year: return dateField("%Y")
        case .month: return dateField("%m")
        case .day: return dateField("%d")
        case .hour: return dateField("%H")
        case .minute: return dateField("%M")
        case .second: return dateField("%S")
        case .round: return wrap("round(", [a[0]], ")")
        case .floor:
            return wrap("(CASE WHEN ", [a[0]], " < CAST(") + a[0] + " AS INTEGER) THEN CAST(" + a[0] + " AS INTEGER) - 1 ELSE CAST("
                + a[0] + " AS INTEGER) END)"
        case .ceiling:
            return wrap("(CASE WHEN ", [a[0]], " > CAST(") + a[0] + " AS INTEGER) THEN CAST(" + a[0] + " AS INTEGER) + 1 ELSE CAST("
                + a[0] + " AS INTEGER) END)"
        }
    }
}

extension SQLFragment {
    fileprivate static func + (lhs: SQLFragment, rhs: SQLFragment) -> SQLFragment {
        SQLFragment(sql: lhs.sql + rhs.sql, arguments: lhs.arguments + rhs.arguments)
    }

    fileprivate static func + (lhs: SQLFragment, rhs: String) -> SQLFragment {
        SQLFragment(sql: lhs.sql + rhs, arguments: lhs.arguments)
    }
}
