import Testing
import TSyncModel

@testable import TSyncEngine

/// `JSONRowsText` writes what the general path (`JSONSerializer.string` of the `JSONValue`
/// array) writes, byte for byte, strings that need escaping included.
@Suite struct JSONRowsTextTests {
    static let strings = ["items", "", "quote \" \\ /", "line\nfeed\t\u{1}\u{1F}", "é", "e\u{301}", "日本語", "😀", "null"]

    @Test func integersAsTheSerializerWritesThem() {
        let values: [Int64] = [0, 1, -1, 42, .max, .min]
        var rows = JSONRowsText(count: 1, bytesPerRow: 1)
        for value in values { rows.append(value) }
        #expect(rows.text == JSONSerializer.string(.array(values.map { .int($0) })))
        #expect(JSONRowsText(count: 0, bytesPerRow: 8).text == JSONSerializer.string(.array([])))
    }

    /// Empty until a row is appended, whatever its kind (a completion skips its statement then).
    @Test func isEmptyUntilARowIsAppended() {
        var rows = JSONRowsText(count: 1, bytesPerRow: 8)
        #expect(rows.isEmpty)
        rows.append("", "")
        #expect(!rows.isEmpty)
        var numbers = JSONRowsText(count: 1, bytesPerRow: 8)
        numbers.append(0)
        #expect(!numbers.isEmpty)
    }

    @Test func pairsAsTheSerializerWritesThem() throws {
        var rows = JSONRowsText(count: 2, bytesPerRow: 4)
        var general: [JSONValue] = []
        for a in Self.strings {
            for b in Self.strings.reversed() {
                rows.append(a, b)
                general.append(.array([.string(a), .string(b)]))
            }
        }
        #expect(rows.text == JSONSerializer.string(.array(general)))
        #expect(try JSONParser.parse(rows.text) == .array(general))
    }
}
