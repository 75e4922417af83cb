/// A strict RFC 8259 parser that reports where input goes wrong.
///
/// Foundation's parser says little more than "not in the correct format"; people feeding records
/// from shell pipelines need the line and column, and the engine needs integers kept as integers.
public struct JSONParser {
    private let bytes: [UInt8]
    private var index = 0
    private let maximumDepth = 512
    /// Integers beyond 64 bits: refused (input) or read as reals (`parseStored`).
    private var wideIntegersAsReals = false

    private init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Parses JSON a database gave back. PostgreSQL's jsonb writes a real without its exponent or
    /// fraction when it can (`1e20` comes back as `100000000000000000000`), so an integer too
    /// wide for 64 bits is read as the real it was stored as instead of refused.
    public static func parseStored(_ text: String) throws(TSyncError) -> JSONValue {
        try parseOne(Array(text.utf8), wideIntegersAsReals: true)
    }

    /// Parses exactly one JSON value (surrounding white space allowed).
    public static func parse(_ text: String) throws(TSyncError) -> JSONValue {
        try parse(bytes: Array(text.utf8))
    }

    public static func parse(bytes: [UInt8]) throws(TSyncError) -> JSONValue {
        try parseOne(bytes, wideIntegersAsReals: false)
    }

    private static func parseOne(_ bytes: [UInt8], wideIntegersAsReals: Bool) throws(TSyncError) -> JSONValue {
        var parser = JSONParser(bytes)
        parser.wideIntegersAsReals = wideIntegersAsReals
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        if parser.index < parser.bytes.count {
            throw parser.error("unexpected \(parser.describeCurrent()) after the end of the JSON value")
        }
        return value
    }

    /// Parses a stream of values: one JSON array (its elements are returned), or values one after
    /// the other separated by white space (NDJSON). An empty input gives no values.
    public static func parseStream(bytes: [UInt8]) throws(TSyncError) -> [JSONValue] {
        var parser = JSONParser(bytes)
        parser.skipWhitespace()
        if parser.index < bytes.count, bytes[parser.index] == UInt8(ascii: "[") {
            let value = try parser.parseValue(depth: 0)
            parser.skipWhitespace()
            if parser.index < bytes.count {
                throw parser.error("unexpected \(parser.describeCurrent()) after the closing ']'")
            }
            if case .array(let elements) = value { return elements }
            return [value]
        }
        var values: [JSONValue] = []
        while parser.index < bytes.count {
            values.append(try parser.parseValue(depth: 0))
            parser.skipWhitespace()
        }
        return values
    }

    // MARK: - Grammar

    private mutating func parseValue(depth: Int) throws(TSyncError) -> JSONValue {
        guard index < bytes.count else { throw error("unexpected end of input, expected a value") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectWord("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectWord("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectWord("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error("unexpected \(describeCurrent()), expected a value")
        }
    }

    private mutating func parseObject(depth: Int) throws(TSyncError) -> JSONValue {
        guard depth <= maximumDepth else { throw error("JSON nested deeper than \(maximumDepth) levels") }
        index += 1
        var object: [String: JSONValue] = [:]
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(object)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw error("unexpected \(describeCurrent()), expected a field name in double quotes")
            }
            let keyStart = index
            let key = try parseString()
            // A name given twice is refused, not settled by the last value: the text says two
            // things. Swift's dictionaries also merge keys that are canonically equivalent ("é"
            // as one code point or as "e" + U+0301), which JSON keeps apart: refused too, rather
            // than lose one.
            if let existing = object.index(forKey: key) {
                index = keyStart
                let name = JSONSerializer.string(.string(key))
                guard !object[existing].key.utf8.elementsEqual(key.utf8) else {
                    throw error("the field name \(name) appears twice in one object")
                }
                throw error(
                    "field names \(JSONSerializer.string(.string(object[existing].key))) and \(name) differ only in Unicode normalization; tsync cannot keep both"
                )
            }
            skipWhitespace()
            try expect(UInt8(ascii: ":"), "':' after the field name")
            skipWhitespace()
            object[key] = try parseValue(depth: depth)
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input, expected ',' or '}'") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(object) }
            throw error("unexpected \(describeCurrent()), expected ',' or '}'")
        }
    }

    private mutating func parseArray(depth: Int) throws(TSyncError) -> JSONValue {
        guard depth <= maximumDepth else { throw error("JSON nested deeper than \(maximumDepth) levels") }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input, expected ',' or ']'") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
            throw error("unexpected \(describeCurrent()), expected ',' or ']'")
        }
    }

    private mutating func parseString() throws(TSyncError) -> String {
        index += 1  // opening quote
        let start = index
        // Fast path: no escapes.
        var ascii = true
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                // ASCII is valid UTF-8 as it is: made without the generic validation, which
                // costs a type lookup for each string (the keys and values of every record).
                let string = ascii ? String(decoding: bytes[start..<index], as: UTF8.self) : try decodeUTF8(start..<index)
                index += 1
                return string
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw error("control character in a string (escape it)") }
            if byte >= 0x80 { ascii = false }
            index += 1
        }
        var buffer = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return try decodeUTF8(buffer)
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw error("unexpected end of input in a string escape") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): buffer.append(UInt8(ascii: "\""))
                case UInt8(ascii: "\\"): buffer.append(UInt8(ascii: "\\"))
                case UInt8(ascii: "/"): buffer.append(UInt8(ascii: "/"))
                case UInt8(ascii: "b"): buffer.append(0x08)
                case UInt8(ascii: "f"): buffer.append(0x0C)
                case UInt8(ascii: "n"): buffer.append(0x0A)
                case UInt8(ascii: "r"): buffer.append(0x0D)
                case UInt8(ascii: "t"): buffer.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try parseHex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                            bytes[index + 1] == UInt8(ascii: "u")
                        else { throw error("unpaired UTF-16 surrogate in \\u escape") }
                        index += 2
                        let low = try parseHex4()
                        guard (0xDC00...0xDFFF).contains(low) else {
                            throw error("unpaired UTF-16 surrogate in \\u escape")
                        }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw error("unpaired UTF-16 surrogate in \\u escape")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid \\u escape") }
                    buffer.append(contentsOf: Array(String(Character(unicode)).utf8))
                default:
                    index -= 1
                    throw error("invalid escape '\\\(Character(Unicode.Scalar(escape)))' in a string")
                }
            default:
                if byte < 0x20 { throw error("control character in a string (escape it)") }
                buffer.append(byte)
                index += 1
            }
        }
        throw error("unexpected end of input, the string is not closed")
    }

    private mutating func parseHex4() throws(TSyncError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("unexpected end of input in a \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("invalid hex digit in a \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    private mutating func parseNumber() throws(TSyncError) -> JSONValue {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number, expected a digit") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, isDigit(bytes[index]) { throw error("invalid number, leading zeros are not allowed") }
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number, expected a digit after '.'") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number, expected a digit in the exponent") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger {
            // Integers are kept exactly or refused: rounding one to a double would change it silently.
            guard let integer = Int64(text) else {
                if wideIntegersAsReals, let double = Double(text), double.isFinite { return .double(double) }
                index = start
                throw error("the integer \(text) does not fit in 64 bits; tsync keeps integers exactly, so send it as a string")
            }
            return .int(integer)
        }
        guard let double = Double(text), double.isFinite else { throw error("number out of range: \(text)") }
        return .double(double)
    }

    // MARK: - Helpers

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func expect(_ byte: UInt8, _ what: String) throws(TSyncError) {
        guard index < bytes.count, bytes[index] == byte else {
            throw error("unexpected \(describeCurrent()), expected \(what)")
        }
        index += 1
    }

    private mutating func expectWord(_ word: String) throws(TSyncError) {
        for byte in word.utf8 {
            guard index < bytes.count, bytes[index] == byte else {
                throw error("unexpected \(describeCurrent()), expected '\(word)'")
            }
            index += 1
        }
    }

    private func decodeUTF8(_ range: Range<Int>) throws(TSyncError) -> String {
        // Decoded straight from the slice: no intermediate array per string.
        guard let string = String(validating: bytes[range], as: UTF8.self) else { throw error("invalid UTF-8 in a string") }
        return string
    }

    private func decodeUTF8(_ buffer: [UInt8]) throws(TSyncError) -> String {
        guard let string = String(validating: buffer, as: UTF8.self) else { throw error("invalid UTF-8 in a string") }
        return string
    }

    private func describeCurrent() -> String {
        guard index < bytes.count else { return "end of input" }
        let byte = bytes[index]
        if byte >= 0x20 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x\(String(byte, radix: 16))"
    }

    private func error(_ message: String) -> TSyncError {
        var line = 1
        var column = 1
        for byte in bytes[0..<min(index, bytes.count)] {
            if byte == 0x0A {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        return .invalidInput("invalid JSON at line \(line), column \(column): \(message)")
    }
}
