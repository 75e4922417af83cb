import TSyncModel

/// A `$filter` problem at a 1-based character position; `ODataParser` turns it into a TSyncError.
struct FilterSyntaxError: Error, Sendable {
    var position: Int
    var message: String
}

struct FilterToken: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        case identifier(String)
        case string(String)
        /// The digits of an integer, without sign: the parser applies a leading `-` before the
        /// range check, so that -9223372036854775808 is representable.
        case integer(String)
        case real(Double)
        case dateTime(Timestamp)
        case openParenthesis, closeParenthesis, comma, minus
        case end
    }

    var kind: Kind
    /// 1-based character position of the token's first character.
    var position: Int
}

extension FilterToken.Kind {
    /// How the token is named in an error message.
    var description: String {
        switch self {
        case .identifier(let name): "'\(name)'"
        case .string: "a string"
        case .integer, .real: "a number"
        case .dateTime: "a date"
        case .openParenthesis: "'('"
        case .closeParenthesis: "')'"
        case .comma: "','"
        case .minus: "'-'"
        case .end: "end of the filter"
        }
    }
}

/// Splits `$filter` text into tokens. Keywords and names are not told apart here; the parser does
/// that, because whether `eq` is an operator depends on where it stands.
struct FilterLexer {
    private let characters: [Character]
    private var index = 0

    init(_ text: String) {
        characters = Array(text)
    }

    static func tokens(_ text: String) throws(FilterSyntaxError) -> [FilterToken] {
        var lexer = FilterLexer(text)
        var tokens: [FilterToken] = []
        while true {
            let token = try lexer.next()
            tokens.append(token)
            if token.kind == .end { return tokens }
        }
    }

    private var current: Character? { index < characters.count ? characters[index] : nil }

    private mutating func next() throws(FilterSyntaxError) -> FilterToken {
        while let character = current, character.isWhitespace { index += 1 }
        let position = index + 1
        func token(_ kind: FilterToken.Kind) -> FilterToken {
            FilterToken(kind: kind, position: position)
        }
        guard let character = current else { return token(.end) }
        switch character {
        case "(": index += 1; return token(.openParenthesis)
        case ")": index += 1; return token(.closeParenthesis)
        case ",": index += 1; return token(.comma)
        case "-": index += 1; return token(.minus)
        case "'":
            let value = try string()
            if let next = current, next.isNameContinuation {
                throw FilterSyntaxError(
                    position: index + 1,
                    message: "unexpected character \(Self.describe(next)) right after the string "
                        + "\(Identifiers.quoted(value)) (write a quote inside a string as '')"
                )
            }
            return token(.string(value))
        case _ where character.isASCIIDigit: return token(try number())
        case _ where character.isNameStart:
            let name = identifier()
            if current == "'" { return token(try typedLiteral(name, position: position)) }
            return token(.identifier(name))
        default:
            throw FilterSyntaxError(position: position, message: "unexpected character \(Self.describe(character))")
        }
    }

    /// A quoted string; `''` stands for one quote.
    private mutating func string() throws(FilterSyntaxError) -> String {
        let opening = index + 1
        index += 1
        var value = ""
        while let character = current {
            index += 1
            if character == "'" {
                guard current == "'" else { return value }
                index += 1
            }
            value.append(character)
        }
        throw FilterSyntaxError(
            position: opening, message: "unterminated string (close it with ', and write a quote inside it as '')")
    }

    private mutating func identifier() -> String {
        var name = ""
        while let character = current, character.isNameContinuation {
            name.append(character)
            index += 1
        }
        return name
    }

    /// `datetime'…'` and `datetimeoffset'…'`; other OData typed literals (guid, binary, time) are
    /// not part of the subset.
    private mutating func typedLiteral(_ prefix: String, position: Int) throws(FilterSyntaxError) -> FilterToken.Kind {
        guard prefix == "datetime" || prefix == "datetimeoffset" else {
            throw FilterSyntaxError(
                position: position,
                message: "unsupported literal \(prefix)'…' (supported: strings, numbers, true, false, null, datetime'…', datetimeoffset'…')"
            )
        }
        let text = try string()
        guard let timestamp = Timestamp(iso8601: text) else {
            throw FilterSyntaxError(
                position: position,
                message: "invalid \(prefix) literal \(Identifiers.quoted(text)) (expected ISO 8601, e.g. 2026-01-31T09:30:00.000Z)"
            )
        }
        return .dateTime(timestamp)
    }

    /// Integers and reals: `12`, `1.5`, `1e3`, `2.5E-3`, with the OData type suffixes `L` (integer)
    /// and `d`, `f`, `m` (real) accepted and otherwise ignored.
    private mutating func number() throws(FilterSyntaxError) -> FilterToken.Kind {
        let start = index
        var text = digits()
        var isReal = false
        if current == "." {
            index += 1
            let fraction = digits()
            guard !fraction.isEmpty else {
                throw FilterSyntaxError(position: index + 1, message: "expected a digit after '.'")
            }
            text += "." + fraction
            isReal = true
        }
        if current == "e" || current == "E" {
            index += 1
            text += "e"
            if let sign = current, sign == "+" || sign == "-" {
                text.append(sign)
                index += 1
            }
            let exponent = digits()
            guard !exponent.isEmpty else {
                throw FilterSyntaxError(position: index + 1, message: "expected a digit in the exponent")
            }
            text += exponent
            isReal = true
        }
        switch current {
        case "L", "l":
            guard !isReal else {
                throw FilterSyntaxError(position: index + 1, message: "the suffix L marks an integer, not a real number")
            }
            index += 1
        case "d", "D", "f", "F", "m", "M":
            index += 1
            isReal = true
        default: break
        }
        if let next = current, next.isNameContinuation {
            throw FilterSyntaxError(position: index + 1, message: "unexpected character \(Self.describe(next)) after a number")
        }
        guard isReal else { return .integer(text) }
        guard let value = Double(text), value.isFinite else {
            throw FilterSyntaxError(position: start + 1, message: "the number \(text) is out of range")
        }
        return .real(value)
    }

    private mutating func digits() -> String {
        var text = ""
        while let character = current, character.isASCIIDigit {
            text.append(character)
            index += 1
        }
        return text
    }

    /// Names the character, with a hint for the operators people bring from other languages.
    private static func describe(_ character: Character) -> String {
        let shown =
            character.isWhitespace || character.unicodeScalars.contains { $0.properties.generalCategory == .control }
            ? Identifiers.quoted(String(character)) : "'\(character)'"
        switch character {
        case "=", "<", ">", "!":
            return shown + " (comparisons are written eq, ne, gt, ge, lt, le)"
        case "&", "|":
            return shown + " (use and, or, not)"
        case "+", "*", "/", "%":
            return shown + " (arithmetic is written add, sub, mul, div, mod)"
        case "\"":
            return shown + " (strings are quoted with ')"
        default:
            return shown
        }
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
    var isNameStart: Bool { isASCII && (isLetter || self == "_") }
    var isNameContinuation: Bool { isASCII && (isLetter || isNumber || self == "_") }
}
