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
            // A quoted cell is text, whatever it holds: every text comes back as it was, the
            // empty one included; an absent field stays absent.
            #expect(try CSVRecords.objects(from: text) == objects, "\(text.debugDescription)")
        }
    }

    /// Texts that look like something else: each must stay text.
    static let lookalikes = [
        "", "null", "true", "false", "0", "-0.5", "1e3", "007", "+1", "12", "9007199254740993", "[]", "{}",
        #"{"x":[1,2]}"#, "[1,2]", " ", "\"\"", "é", "日本", "a,b", "line\nbreak", "\r\n",
    ]

    /// A generated JSON value of any type, nested up to `depth` levels.
    static func value(_ rng: inout Seeded, depth: Int) -> JSONValue {
        switch Int.random(in: 0..<(depth > 0 ? 8 : 6), using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2:
            let ints: [Int64] = [0, 1, -1, 42, Int64.max, Int64.min, 9_007_199_254_740_993, -9_007_199_254_740_993]
            return .int(ints.randomElement(using: &rng) ?? 0)
        case 3:
            let reals: [Double] = [
                -0.5, -0.0, 0.0, 2.0, 0.1, 1e300, -1e-300, .leastNonzeroMagnitude, 123_456.789, Double.greatestFiniteMagnitude,
            ]
            return .double(reals.randomElement(using: &rng) ?? 0)
        case 4: return .string(lookalikes.randomElement(using: &rng) ?? "")
        case 5:
            let text = (0..<Int.random(in: 0...6, using: &rng)).map { _ in pieces.randomElement(using: &rng) ?? "" }.joined()
            return .string(text)
        case 6:
            return .array((0..<Int.random(in: 0...3, using: &rng)).map { _ in value(&rng, depth: depth - 1) })
        default:
            var object: [String: JSONValue] = [:]
            for index in 0..<Int.random(in: 0...3, using: &rng) {
                object[["k", "é", "a,b", "\"q\"", "x y"][index % 5] + "\(index)"] = value(&rng, depth: depth - 1)
            }
            return .object(object)
        }
    }

    /// `query --csv | insert --csv` gives back every record exactly, whatever JSON its
    /// fields hold: texts that look like numbers, booleans, null or JSON, empty texts, nested
    /// objects and arrays, 64-bit and big integers, -0.5 and -0.0, non-ASCII.
    @Test func generatedRecordsOfEveryJSONTypeComeBackExactly() throws {
        var rng = Seeded(state: 0xD1B5_4A32_D192_ED03)
        for _ in 0..<500 {
            let columns = ["id"] + (0..<Int.random(in: 1...5, using: &rng)).map { "f\($0)" }
            var objects: [[String: JSONValue]] = []
            for row in 0..<Int.random(in: 1...6, using: &rng) {
                var object: [String: JSONValue] = ["id": .string(["r\(row)", "null\(row)", "\(row)", "é\(row)", "a,\"b\"\(row)"][row % 5])]
                for column in columns.dropFirst() where Int.random(in: 0..<5, using: &rng) > 0 {
                    object[column] = Self.value(&rng, depth: 3)
                }
                objects.append(object)
            }
            let text = CSVRecords.text(objects, columns: columns)
            let read = try CSVRecords.objects(from: text)
            #expect(read == objects, "\(text.debugDescription)")
            #expect(CSVRecords.text(read, columns: columns) == text, "the same bytes again")
        }
    }

    @Test func aQuotedCellIsTextAndOnlyAnUnquotedOneIsTyped() throws {
        let text =
            "id,a,b,c,d,e,f,g,h\r\n1,\"12\",12,\"null\",null,\"\",,\"[1,2]\",[1,2]\r\n2,{\"x\":[1,\"a,b\"]},[],true,\"true\",-0.5,[x,y\r\n"
        let read = try CSVRecords.objects(from: text)
        #expect(
            read[0] == [
                "id": "1", "a": "12", "b": 12, "c": "null", "d": .null, "e": "", "g": "[1,2]", "h": [1, 2],
            ])
        #expect(read[1] == ["id": "2", "a": ["x": [1, "a,b"]], "b": [], "c": true, "d": "true", "e": -0.5, "f": "[x", "g": "y"])
    }
}
