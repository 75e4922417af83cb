import Foundation
import TSyncModel

/// `tsync serve --config FILE`: the settings of a TOML file, as the arguments they stand for.
///
/// The keys are serve's long flag names (`port = 8080`, `no-auth = true`, `index = ["todo.n"]`).
/// A strict reader of the TOML this needs, not a TOML library (which would build a C++ parser
/// into tsync for a dozen keys): top-level `key = value` lines, comments, basic and literal
/// strings, integers, booleans and arrays of those, possibly over several lines. Anything else
/// (a table, a float, a date, an unknown key, a value of the wrong type, a key given twice) is an
/// error naming the file, the line and the key.
struct ServeConfigFile {
    enum Kind {
        case flag, integer, string, strings
        /// An integer of seconds or a string in `WrittenDuration`'s form (`"30d"`).
        case duration
    }

    /// Every key and the kind of value it takes: serve's options, but `config` itself.
    static let keys: [String: Kind] = [
        "db": .string, "listen-db": .string, "host": .string, "port": .integer, "no-auth": .flag, "insecure": .flag, "per-user": .strings,
        "index": .strings, "max-top": .integer, "max-batch": .integer, "max-connections": .integer, "header-timeout": .duration,
        "idle-timeout": .duration, "body-timeout": .duration, "query-timeout": .duration, "trusted-proxy": .strings,
        "tls-cert": .string, "tls-key": .string, "token-ttl": .duration, "log-format": .string, "metrics": .flag,
        "max-watchers": .integer,
        "max-client-connections": .integer, "max-account-requests": .integer,
        "keep-history": .duration, "keep-deleted": .duration,
        "schema": .strings,
        "db-share": .integer, "max-tables": .integer, "access": .strings,
    ]

    enum Value: Equatable {
        case string(String)
        case integer(Int)
        case boolean(Bool)
        case array([Value])

        var kindName: String {
            switch self {
            case .string: "a string"
            case .integer: "an integer"
            case .boolean: "a boolean"
            case .array: "an array"
            }
        }
    }

    struct Entry: Equatable {
        var key: String
        var value: Value
        var line: Int
    }

    let path: String
    let entries: [Entry]

    /// Reads and checks the file: a missing or unreadable one is `.fileMissing` (66), one that is
    /// not valid is `.invalidConfiguration` (78).
    init(path: String) throws(TSyncError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw TSyncError(.fileMissing, "cannot read the config file \(Identifiers.quoted(path)): it is missing or unreadable")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw TSyncError(.invalidConfiguration, "the config file \(Identifiers.quoted(path)) is not UTF-8 text")
        }
        try self.init(path: path, text: text)
    }

    init(path: String, text: String) throws(TSyncError) {
        self.path = path
        var reader = TOMLReader(text: text, path: path)
        let entries = try reader.entries()
        var seen: [String: Int] = [:]
        for entry in entries {
            let place = "\(path) line \(entry.line)"
            guard let kind = Self.keys[entry.key] else {
                // A near key (log_format, max_top, prot) is named alone; otherwise every key is listed.
                let near = Spelling.didYouMean(entry.key, among: Array(Self.keys.keys))
                throw TSyncError(
                    .invalidConfiguration,
                    "\(place): unknown key \(Identifiers.quoted(entry.key))"
                        + (near.isEmpty
                            ? "; the keys are serve's long flag names: " + Self.keys.keys.sorted().joined(separator: ", ") : near))
            }
            if let first = seen[entry.key] {
                throw TSyncError(.invalidConfiguration, "\(place): \(entry.key) is already set on line \(first)")
            }
            seen[entry.key] = entry.line
            try Self.check(entry.value, kind: kind, place: place, key: entry.key)
        }
        self.entries = entries
    }

    private static func check(_ value: Value, kind: Kind, place: String, key: String) throws(TSyncError) {
        let expected: String
        switch (kind, value) {
        case (.flag, .boolean), (.integer, .integer), (.string, .string), (.strings, .string), (.duration, .integer),
            (.duration, .string):
            return
        case (.strings, .array(let items)) where items.allSatisfy({ if case .string = $0 { true } else { false } }): return
        case (.flag, _): expected = "true or false"
        case (.integer, _): expected = "an integer"
        case (.string, _): expected = "a string"
        case (.strings, _): expected = "an array of strings"
        case (.duration, _): expected = "a duration, an integer of seconds or a string such as \"30d\""
        }
        throw TSyncError(.invalidConfiguration, "\(place): \(key) takes \(expected), not \(value.kindName)")
    }

    /// The arguments the file stands for, leaving out every key `commandLine` gives itself (flags
    /// on the command line win; a repeatable one replaces the file's list rather than adding).
    func arguments(overriddenBy commandLine: [String]) -> [String] {
        let given = Set(commandLine.prefix { $0 != "--" }.compactMap(Self.longName))
        var arguments: [String] = []
        for entry in entries where !given.contains(entry.key) {
            switch entry.value {
            case .boolean(let on): if on { arguments.append("--" + entry.key) }
            case .integer(let number): arguments.append("--\(entry.key)=\(number)")
            case .string(let text): arguments.append("--\(entry.key)=\(text)")
            case .array(let items):
                for case .string(let text) in items { arguments.append("--\(entry.key)=\(text)") }
            }
        }
        return arguments
    }

    /// The string the file gives `key`, when it does (`db` for the `tsync user` commands).
    func string(_ key: String) -> String? {
        guard case .string(let text)? = entries.first(where: { $0.key == key })?.value else { return nil }
        return text
    }

    /// The line that set `key`, when this file did.
    func line(of key: String) -> Int? { entries.first { $0.key == key }?.line }

    /// `--name` of `--name` or `--name=value`.
    static func longName(_ argument: String) -> String? {
        guard argument.hasPrefix("--"), argument.count > 2 else { return nil }
        return String(argument.dropFirst(2).prefix { $0 != "=" })
    }
}

/// The TOML subset `ServeConfigFile` reads, line by line with the line numbers kept.
struct TOMLReader {
    private let scalars: [Unicode.Scalar]
    private let path: String
    private var index = 0
    private var line = 1

    init(text: String, path: String) {
        scalars = Array(text.unicodeScalars)
        self.path = path
    }

    mutating func entries() throws(TSyncError) -> [ServeConfigFile.Entry] {
        var entries: [ServeConfigFile.Entry] = []
        while true {
            skipBlankLinesAndComments()
            guard let scalar = peek() else { return entries }
            if scalar == "[" { throw fail("tables ([…]) are not supported: put serve's keys at the top level") }
            let keyLine = line
            let key = try readKey()
            skipSpaces()
            guard peek() == "=" else { throw fail("expected = after the key \(Identifiers.quoted(key))") }
            index += 1
            skipSpaces()
            let value = try readValue(key: key)
            skipSpaces()
            skipComment()
            if let next = peek(), next != "\n", next != "\r" {
                throw fail("unexpected \(Identifiers.quoted(String(next))) after the value of \(key): one key = value per line")
            }
            entries.append(.init(key: key, value: value, line: keyLine))
        }
    }

    private func peek() -> Unicode.Scalar? { index < scalars.count ? scalars[index] : nil }

    private func fail(_ message: String) -> TSyncError { TSyncError(.invalidConfiguration, "\(path) line \(line): \(message)") }

    private mutating func skipSpaces() {
        while let scalar = peek(), scalar == " " || scalar == "\t" { index += 1 }
    }

    private mutating func skipComment() {
        guard peek() == "#" else { return }
        while let scalar = peek(), scalar != "\n" { index += 1 }
    }

    /// Spaces, comments and line ends, counting lines; in arrays too.
    private mutating func skipBlankLinesAndComments() {
        while true {
            skipSpaces()
            skipComment()
            guard let scalar = peek(), scalar == "\n" || scalar == "\r" else { return }
            if scalar == "\n" { line += 1 }
            index += 1
        }
    }

    private mutating func readKey() throws(TSyncError) -> String {
        if peek() == "\"" || peek() == "'" { return try readString() }
        var key = ""
        while let scalar = peek(),
            scalar.properties.isASCIIHexDigit || ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
                || scalar == "-" || scalar == "_"
        {
            key.unicodeScalars.append(scalar)
            index += 1
        }
        guard !key.isEmpty else { throw fail("expected a key (e.g. port = 8080), found \(describe(peek()))") }
        if peek() == "." { throw fail("dotted keys are not supported: serve's keys are top-level names like \(key)") }
        return key
    }

    private mutating func readValue(key: String) throws(TSyncError) -> ServeConfigFile.Value {
        guard let scalar = peek() else { throw fail("\(key) has no value") }
        switch scalar {
        case "\"", "'":
            return .string(try readString())
        case "[":
            index += 1
            var items: [ServeConfigFile.Value] = []
            while true {
                skipBlankLinesAndComments()
                if peek() == "]" {
                    index += 1
                    return .array(items)
                }
                // serve takes arrays of strings only: an array inside one is refused as it opens,
                // so no nesting (20,000 levels crashed the reader) is ever read.
                if peek() == "[" { throw fail("\(key) holds an array inside an array: serve's arrays hold strings, [\"a\", \"b\"]") }
                items.append(try readValue(key: key))
                skipBlankLinesAndComments()
                if peek() == "," {
                    index += 1
                } else if peek() != "]" {
                    throw fail("expected , or ] in the array of \(key), found \(describe(peek()))")
                }
            }
        default:
            var word = ""
            while let next = peek(), !" \t\r\n#,]".unicodeScalars.contains(next) {
                word.unicodeScalars.append(next)
                index += 1
            }
            if word == "true" { return .boolean(true) }
            if word == "false" { return .boolean(false) }
            let digits = word.replacingOccurrences(of: "_", with: "")
            if !word.hasPrefix("_"), !word.hasSuffix("_"), !word.contains("__"), let number = Int(digits),
                digits.drop(while: { $0 == "+" || $0 == "-" }).allSatisfy(\.isASCII)
            {
                return .integer(number)
            }
            throw fail(
                "\(key) = \(word.isEmpty ? describe(scalar) : word) is not a value this file takes: use a \"string\", an integer, true or false, or [\"a\", \"b\"]"
            )
        }
    }

    /// A basic ("…", with escapes) or literal ('…') string on one line.
    private mutating func readString() throws(TSyncError) -> String {
        guard let quote = peek() else { throw fail("expected a string") }
        index += 1
        var text = ""
        while true {
            guard let scalar = peek(), scalar != "\n" else { throw fail("unterminated string: close it with \(quote) on the same line") }
            index += 1
            if scalar == quote { return text }
            if quote == "\"", scalar == "\\" {
                guard let escape = peek() else { throw fail("unterminated string") }
                index += 1
                switch escape {
                case "\"": text += "\""
                case "\\": text += "\\"
                case "n": text += "\n"
                case "t": text += "\t"
                case "r": text += "\r"
                case "u", "U":
                    let length = escape == "u" ? 4 : 8
                    guard index + length <= scalars.count,
                        let value = UInt32(String(String.UnicodeScalarView(scalars[index..<index + length])), radix: 16),
                        let decoded = Unicode.Scalar(value)
                    else { throw fail("invalid \\\(escape) escape in a string") }
                    index += length
                    text.unicodeScalars.append(decoded)
                default: throw fail("invalid escape \\\(escape) in a string (use \\\\ for a backslash)")
                }
            } else if scalar.value < 0x20 && scalar != "\t" || scalar.value == 0x7F {
                throw fail("a control character in a string: write it as an escape")
            } else {
                text.unicodeScalars.append(scalar)
            }
        }
    }

    private func describe(_ scalar: Unicode.Scalar?) -> String {
        guard let scalar else { return "the end of the file" }
        if scalar == "\n" || scalar == "\r" { return "the end of the line" }
        return Identifiers.quoted(String(scalar))
    }
}
