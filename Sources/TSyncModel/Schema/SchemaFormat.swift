/// The `format`s a schema may assert. JSON Schema 2020-12 makes `format` an annotation unless a
/// validator says it asserts; tsync's does, for these, and refuses a schema naming another (a
/// format that looks checked and is not would be worse than none).
enum SchemaFormat: String, CaseIterable, Sendable {
    case dateTime = "date-time"
    case date
    case email
    case uuid

    var spoken: String {
        switch self {
        case .dateTime: "a date-time (RFC 3339, e.g. 2026-01-31T09:30:00Z)"
        case .date: "a date (YYYY-MM-DD)"
        case .email: "an email address"
        case .uuid: "a UUID (8-4-4-4-12 hexadecimal digits)"
        }
    }

    func accepts(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        switch self {
        case .date: return bytes.count == 10 && Self.isDate(bytes[...])
        case .dateTime: return Self.isDateTime(bytes)
        case .email: return Self.isEmail(text)
        case .uuid: return Self.isUUID(bytes)
        }
    }

    private static func digits(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard !bytes.isEmpty, bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return bytes.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    /// `YYYY-MM-DD` with a day that exists in that month.
    private static func isDate(_ bytes: ArraySlice<UInt8>) -> Bool {
        let b = Array(bytes)
        guard b.count == 10, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
            let year = digits(b[0..<4]), let month = digits(b[5..<7]), let day = digits(b[8..<10]),
            (1...12).contains(month), day >= 1
        else { return false }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let lengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        return day <= lengths[month - 1]
    }

    /// RFC 3339 `date-time`: a date, `T` (or `t`, or a space is not allowed), `hh:mm:ss`, an
    /// optional fraction, and `Z` or `±hh:mm`.
    private static func isDateTime(_ b: [UInt8]) -> Bool {
        guard b.count >= 20, isDate(b[0..<10]), b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t"),
            b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"),
            let hour = digits(b[11..<13]), let minute = digits(b[14..<16]), let second = digits(b[17..<19]),
            hour < 24, minute < 60, second <= 60
        else { return false }
        var index = 19
        if b[index] == UInt8(ascii: ".") {
            index += 1
            let start = index
            while index < b.count, b[index] >= 0x30, b[index] <= 0x39 { index += 1 }
            guard index > start, index < b.count else { return false }
        }
        let zone = b[index...]
        if zone.count == 1 { return zone.first == UInt8(ascii: "Z") || zone.first == UInt8(ascii: "z") }
        let z = Array(zone)
        guard z.count == 6, z[0] == UInt8(ascii: "+") || z[0] == UInt8(ascii: "-"), z[3] == UInt8(ascii: ":"),
            let zoneHour = digits(z[1..<3]), let zoneMinute = digits(z[4..<6])
        else { return false }
        return zoneHour < 24 && zoneMinute < 60
    }

    /// One `@`, a non-empty local part without spaces, and a domain of dot-separated labels of
    /// letters, digits and hyphens (with at least one dot). Not every address RFC 5321 allows,
    /// but every one a person types.
    private static func isEmail(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, let local = parts.first, let domain = parts.last, !local.isEmpty, local.utf8.count <= 64,
            !local.contains(where: { $0 == " " || $0.isNewline }), !local.hasPrefix("."), !local.hasSuffix("."),
            !local.contains("..")
        else { return false }
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2 else { return false }
        return labels.allSatisfy { label in
            !label.isEmpty && label.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                && label.unicodeScalars.allSatisfy { ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-") }
        }
    }

    private static func isUUID(_ b: [UInt8]) -> Bool {
        guard b.count == 36 else { return false }
        for (index, byte) in b.enumerated() {
            if [8, 13, 18, 23].contains(index) {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                let hex = (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x66)
                guard hex else { return false }
            }
        }
        return true
    }
}
