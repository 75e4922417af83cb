import TSyncModel

/// The JSON array a statement reads with `json_each` (a batch's sequence numbers, or its rows of
/// strings), written straight as bytes: the same text as `JSONSerializer.string` of the
/// `JSONValue` array, without an array of values built for each row and serialised again (a
/// cost of its own, three times in each completion of a push).
struct JSONRowsText {
    private var bytes: [UInt8] = []
    private var first = true

    /// Room for about `count` rows of `bytesPerRow`.
    init(count: Int, bytesPerRow: Int) {
        bytes.reserveCapacity(count * bytesPerRow + 2)
        bytes.append(UInt8(ascii: "["))
    }

    /// A row that is one integer.
    mutating func append(_ value: Int64) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
    }

    /// A row of two strings.
    mutating func append(_ a: String, _ b: String) {
        beginRow(a)
        field(b)
        bytes.append(UInt8(ascii: "]"))
    }

    private mutating func beginRow(_ value: String) {
        separate()
        bytes.append(UInt8(ascii: "["))
        JSONSerializer.writeString(value, to: &bytes)
    }

    /// A row's next field.
    private mutating func field(_ value: String) {
        bytes.append(UInt8(ascii: ","))
        JSONSerializer.writeString(value, to: &bytes)
    }

    /// Whether no row was appended.
    var isEmpty: Bool { first }

    /// The array's text.
    var text: String {
        var bytes = bytes
        bytes.append(UInt8(ascii: "]"))
        return String(decoding: bytes, as: UTF8.self)
    }

    private mutating func separate() {
        if first { first = false } else { bytes.append(UInt8(ascii: ",")) }
    }
}
