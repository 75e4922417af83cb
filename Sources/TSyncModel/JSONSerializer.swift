/// Writes JSON deterministically: object keys sorted, `id` first, so output diffs cleanly and tests
/// and scripts can compare it byte for byte.
public enum JSONSerializer {
    public static func string(_ value: JSONValue, pretty: Bool = false) -> String {
        String(decoding: bytes(value, pretty: pretty), as: UTF8.self)
    }

    /// Output is built as bytes: appending to a `String` piece by piece cost a third of a server's
    /// time answering a batch.
    public static func bytes(_ value: JSONValue, pretty: Bool = false) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        write(value, to: &output, pretty: pretty, indent: 0)
        return output
    }

    /// Appends `value`, compact, to `output`: for writers that assemble a larger document.
    public static func write(_ value: JSONValue, to output: inout [UInt8]) {
        write(value, to: &output, pretty: false, indent: 0)
    }

    /// Appends a record as the protocol sends it: the bytes of `.object(record.wireObject)`,
    /// written without building that object (a server answers with thousands per request), nor
    /// a list of its system members, nor a lookup of each of their names among the fields: the
    /// sorted fields are merged with the system members in their fixed order, and a field that
    /// bears the name of one present (or `id`) sends the record back to the general path.
    public static func writeRecord(_ record: Record, to output: inout [UInt8]) {
        let start = output.count
        output.append(contentsOf: #"{"id":"#.utf8)
        writeString(record.id, to: &output)
        let sorted = record.fields.sorted { $0.key < $1.key }
        var next = 0
        /// Writes the fields that sort before `name` (all that are left without one); false when
        /// one is `name` itself, or `id`.
        func fields(before name: String?, _ output: inout [UInt8]) -> Bool {
            while next < sorted.count {
                let (key, value) = sorted[next]
                if let name, !(key < name) { return key != name }
                next += 1
                if key == "id" { return false }
                output.append(UInt8(ascii: ","))
                writeString(key, to: &output)
                output.append(UInt8(ascii: ":"))
                write(value, to: &output)
            }
            return true
        }
        /// The members `wireObject` adds, in code-point order (`createdAt` < `deleted` < `updatedAt` < `version`).
        func system(_ output: inout [UInt8]) -> Bool {
            if let createdAt = record.system.createdAt {
                guard fields(before: "createdAt", &output) else { return false }
                output.append(contentsOf: #","createdAt":""#.utf8)
                createdAt.appendISO8601(to: &output)
                output.append(UInt8(ascii: "\""))
            }
            guard fields(before: "deleted", &output) else { return false }
            output.append(contentsOf: (record.system.deleted ? #","deleted":true"# : #","deleted":false"#).utf8)
            if let updatedAt = record.system.updatedAt {
                guard fields(before: "updatedAt", &output) else { return false }
                output.append(contentsOf: #","updatedAt":""#.utf8)
                updatedAt.appendISO8601(to: &output)
                output.append(UInt8(ascii: "\""))
            }
            if let version = record.system.version {
                guard fields(before: "version", &output) else { return false }
                output.append(contentsOf: #","version":"#.utf8)
                writeString(version, to: &output)
            }
            return fields(before: nil, &output)
        }
        guard system(&output) else {
            // Not a record as `Record(wire:)` makes them: the general path decides.
            output.removeSubrange(start...)
            return write(.object(record.wireObject), to: &output)
        }
        output.append(UInt8(ascii: "}"))
    }

    /// Key order of the output: `id` first, the rest in code-point order.
    private static func keyPrecedes(_ a: String, _ b: String) -> Bool {
        if a == "id" { return b != "id" }
        if b == "id" { return false }
        return a < b
    }

    private static func write(_ value: JSONValue, to output: inout [UInt8], pretty: Bool, indent: Int) {
        switch value {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let bool): output.append(contentsOf: (bool ? "true" : "false").utf8)
        case .int(let int): output.append(contentsOf: String(int).utf8)
        case .double(let double): output.append(contentsOf: format(double).utf8)
        case .string(let string): writeString(string, to: &output)
        case .array(let elements):
            if elements.isEmpty { output.append(contentsOf: "[]".utf8); return }
            output.append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { output.append(UInt8(ascii: ",")) }
                if pretty { newline(&output, indent + 1) }
                write(element, to: &output, pretty: pretty, indent: indent + 1)
            }
            if pretty { newline(&output, indent) }
            output.append(UInt8(ascii: "]"))
        case .object(let object):
            if object.isEmpty { output.append(contentsOf: "{}".utf8); return }
            output.append(UInt8(ascii: "{"))
            // Sorting the pairs, not the keys, spares a hash lookup per member.
            for (offset, member) in object.sorted(by: { keyPrecedes($0.key, $1.key) }).enumerated() {
                if offset > 0 { output.append(UInt8(ascii: ",")) }
                if pretty { newline(&output, indent + 1) }
                writeString(member.key, to: &output)
                if pretty { output.append(contentsOf: ": ".utf8) } else { output.append(UInt8(ascii: ":")) }
                write(member.value, to: &output, pretty: pretty, indent: indent + 1)
            }
            if pretty { newline(&output, indent) }
            output.append(UInt8(ascii: "}"))
        }
    }

    private static func newline(_ output: inout [UInt8], _ indent: Int) {
        output.append(UInt8(ascii: "\n"))
        output.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * indent))
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
        var bytes: [UInt8] = []
        writeString(string, to: &bytes)
        output += String(decoding: bytes, as: UTF8.self)
    }

    /// A string's UTF-8 copied byte for byte (a Swift string is valid UTF-8, and JSON needs
    /// nothing above U+001F escaped), with quotes, backslashes and control characters escaped.
    public static func writeString(_ string: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        // Nearly every string has nothing to escape: then it is copied whole, not byte by byte.
        let plain = string.utf8.withContiguousStorageIfAvailable { bytes in
            guard !bytes.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else { return false }
            output.append(contentsOf: bytes)
            return true
        }
        if plain == true {
            output.append(UInt8(ascii: "\""))
            return
        }
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): output.append(contentsOf: #"\\"#.utf8)
            case 0x0A: output.append(contentsOf: #"\n"#.utf8)
            case 0x0D: output.append(contentsOf: #"\r"#.utf8)
            case 0x09: output.append(contentsOf: #"\t"#.utf8)
            case 0x08: output.append(contentsOf: #"\b"#.utf8)
            case 0x0C: output.append(contentsOf: #"\f"#.utf8)
            case ..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                output.append(contentsOf: #"\u00"#.utf8)
                output.append(hex[Int(byte >> 4)])
                output.append(hex[Int(byte & 0x0F)])
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}
