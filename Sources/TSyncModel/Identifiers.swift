/// Validation of the names that end up in URLs, file paths and SQL identifiers.
///
/// Record ids travel in URL paths, so characters that change a path's meaning or that the Mobile
/// Apps servers reject are refused on both ends, before anything is stored or sent.
public enum Identifiers {
    public static let maximumIDLength = 255
    public static let maximumTableNameLength = 64
    private static let forbiddenIDCharacters: Set<Unicode.Scalar> = ["/", "\\", "\"", "+", "?", "`"]
    /// `forbiddenIDCharacters` as bits of the printable ASCII bytes (bit `byte - 0x20`): a test per
    /// byte of every id an insert of a million records checks, with no array search.
    private static let forbiddenIDMask: UInt128 = forbiddenIDCharacters.reduce(0) { $0 | 1 << ($1.value - 0x20) }

    public static func validateRecordID(_ id: String) throws(TSyncError) {
        if id.isEmpty { throw .invalidInput("invalid id: it is empty") }
        if id.utf8.count > maximumIDLength {
            throw .invalidInput("invalid id: longer than \(maximumIDLength) bytes")
        }
        // Fast path for the usual ASCII id: a byte check instead of a Unicode property lookup.
        let forbidden = forbiddenIDMask
        let allowed = { (byte: UInt8) in byte >= 0x20 && byte < 0x7F && forbidden & 1 << (byte - 0x20) == 0 }
        // Over the bytes at once where the string has them so (a native string, short or long):
        // a byte at a time through `utf8` was 3% of an insert's CPU, for every record's id.
        if id.utf8.withContiguousStorageIfAvailable({ $0.allSatisfy(allowed) }) ?? id.utf8.allSatisfy(allowed) { return }
        for scalar in id.unicodeScalars {
            if scalar.properties.generalCategory == .control {
                throw .invalidInput("invalid id \(quoted(id)): it contains a control character")
            }
            if forbiddenIDCharacters.contains(scalar) {
                throw .invalidInput("invalid id \(quoted(id)): it contains '\(scalar)' (ids may not contain / \\ \" + ? or `)")
            }
        }
    }

    /// Table names become SQL identifiers and URL segments: an ASCII letter or `_`, then letters,
    /// digits or `_`, at most 64 in all.
    public static func validateTableName(_ name: String) throws(TSyncError) {
        guard isSimpleName(name), name.utf8.count <= maximumTableNameLength else {
            throw .invalidInput(
                "invalid table name \(quoted(name)): use letters, digits and '_', starting with a letter or '_', at most \(maximumTableNameLength) characters"
            )
        }
    }

    /// `[A-Za-z_][A-Za-z0-9_]*`: the names a filter may use for fields.
    public static func isSimpleName(_ name: String) -> Bool {
        guard let first = name.utf8.first, isLetter(first) || first == UInt8(ascii: "_") else { return false }
        return name.utf8.allSatisfy { isLetter($0) || isDigit($0) || $0 == UInt8(ascii: "_") }
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// A value quoted for an error message, with control characters made visible.
    public static func quoted(_ text: String) -> String {
        var output = ""
        JSONSerializer.writeString(text, to: &output)
        return output
    }
}
