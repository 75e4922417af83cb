/// Writes JSON deterministically: object keys sorted, `id` first, so output diffs cleanly and tests
/// and scripts can compare it byte for byte.
public enum JSONSerializer {
    public static func string(_ value: JSONValue, pretty: Bool = false) -> String {
        var output = ""
        write(value, to: &output, pretty: pretty, indent: 0)
        return output
    }

    public static func bytes(_ value: JSONValue, pretty: Bool = false) -> [UInt8] {
        Array(string(value, pretty: pretty).utf8)
    }

    /// Keys in output order: `id` first, the rest in code-point order.
    public static func orderedKeys<Value>(_ object: [String: Value]) -> [String] {
        object.keys.sorted { a, b in
            if a == "id" { return b != "id" }
            if b == "id" { return false }
            return a < b
        }
    }

    private static func write(_ value: JSONValue, to output: inout String, pretty: Bool, indent: Int) {
        switch value {
        case .null: output += "null"
        case .bool(let bool): output += bool ? "true" : "false"
        case .int(let int): output += String(int)
        case .double(let double): output += format(double)
        case .string(let string): writeString(string, to: &output)
        case .array(let elements):
            if elements.isEmpty { output += "[]"; return }
            output += "["
            for (offset, element) in elements.enumerated() {
                if offset > 0 { output += "," }
                if pretty { newline(&output, indent + 1) }
                write(element, to: &output, pretty: pretty, indent: indent + 1)
            }
            if pretty { newline(&output, indent) }
            output += "]"
        case .object(let object):
            if object.isEmpty { output += "{}"; return }
            output += "{"
            for (offset, key) in orderedKeys(object).enumerated() {
                if offset > 0 { output += "," }
                if pretty { newline(&output, indent + 1) }
                writeString(key, to: &output)
                output += pretty ? ": " : ":"
                write(object[key] ?? .null, to: &output, pretty: pretty, indent: indent + 1)
            }
            if pretty { newline(&output, indent) }
            output += "}"
        }
    }

    private static func newline(_ output: inout String, _ indent: Int) {
        output += "\n"
        output += String(repeating: "  ", count: indent)
    }

    /// Shortest text that reads back as the same double; whole reals keep a `.0` so they stay reals,
    /// and a negative zero stays negative (`-0.0`).
    public static func format(_ double: Double) -> String {
        if double == 0 { return double.sign == .minus ? "-0.0" : "0.0" }
        if double == double.rounded(), abs(double) < 1e15 {
            return String(Int64(double)) + ".0"
        }
        return "\(double)"
    }

    public static func writeString(_ string: String, to output: inout String) {
        // Fast path: most strings (ids, names, text) need no escaping and are copied whole;
        // appending scalar by scalar dominated bulk inserts.
        if !string.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            output += "\""
            output += string
            output += "\""
            return
        }
        output += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case "\u{08}": output += "\\b"
            case "\u{0C}": output += "\\f"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    output.unicodeScalars.append(scalar)
                }
            }
        }
        output += "\""
    }
}
