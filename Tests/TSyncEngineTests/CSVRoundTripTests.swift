import Testing
import TSyncModel

@testable import TSyncEngine

/// `insert --csv` reads what `query --csv` writes, cell for cell: generated cells full of commas,
/// quotes, line breaks of every kind, spaces at both ends and non-ASCII text must come back
/// exactly (the reader is tsync's own: SwiftCSV trimmed spaces and made records of blank lines,
/// CSV.swift reads a misplaced quote to the end of the input without a word; see docs/DESIGN.md §12).
@Suite struct CSVRoundTripTests {
    /// A small seeded generator (xorshift64*): the same cases on every run, so a failure repeats.
    struct Seeded: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            return state &* 2_685_821_657_736_338_717
        }
    }

    static let pieces = ["a", "Z", "1", "0", " ", ",", "\"", "\"\"", "\n", "\r", "\r\n", "é", "日", "-", ".", "e", "true", "null", "{", "'"]

    @Test func generatedCellsComeBackExactly() throws {
        var rng = Seeded(state: 0x9E37_79B9_7F4A_7C15)
        for _ in 0..<500 {
            let columns = ["id"] + (0..<Int.random(in: 1...4, using: &rng)).map { "f\($0)" }
            var objects: [[String: JSONValue]] = []
            for row in 0..<Int.random(in: 1...6, using: &rng) {
                var object: [String: JSONValue] = ["id": .string("r\(row)")]
                for column in columns.dropFirst() where Bool.random(using: &rng) {
                    let cell = (0..<Int.random(in: 0...6, using: &rng)).map { _ in Self.pieces.randomElement(using: &rng) ?? "" }.joined()
                    object[column] = .string(cell)
                }
                objects.append(object)
            }
            let text = CSVRecords.text(objects, columns: columns)
            let read = try CSVRecords.objects(from: text)
            // What reading promises: a cell's text exactly, typed by the documented rules, and an
            // empty cell left out.
            let expected = objects.map { object in
                object.reduce(into: [String: JSONValue]()) { result, member in
                    guard case .string(let cell) = member.value, !cell.isEmpty else { return }
                    result[member.key] = member.key == "id" ? .string(cell) : CSVRecords.value(of: cell)
                }
            }
            #expect(read == expected, "\(text.debugDescription)")
        }
    }
}
