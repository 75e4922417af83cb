import PropertyBased
import Testing

@testable import TSyncModel

/// Properties of the JSON model and `Timestamp` over generated inputs. Bodies record
/// failures with `#expect` and never throw: `propertyCheck` does not report an error thrown by a body.
@Suite struct PropertyTests {
    /// The store and the wire keep values as the serializer writes them: parsing that text must give the
    /// very value back, byte for byte (`==` is exact), compact and pretty.
    @Test func serializedValuesParseBackUnchanged() async {
        await propertyCheck(count: 400, input: Arbitrary.values) { value in
            #expect(parsed(JSONSerializer.bytes(value)) == value)
            #expect(parsed(Array(JSONSerializer.string(value, pretty: true).utf8)) == value)
        }
    }

    /// Output is canonical (keys sorted, `id` first, one spelling per number): a value read back from its
    /// own output writes the same bytes, so records diff cleanly and scripts compare them byte for byte.
    @Test func serializationIsCanonical() async {
        await propertyCheck(count: 400, input: Arbitrary.values) { value in
            let compact = JSONSerializer.bytes(value)
            let pretty = JSONSerializer.bytes(value, pretty: true)
            #expect(parsed(compact).map { JSONSerializer.bytes($0) } == compact)
            #expect(parsed(pretty).map { JSONSerializer.bytes($0, pretty: true) } == pretty)
        }
    }

    /// The server writes records without building their wire object, merging the sorted user fields with
    /// the system members; the bytes must be those of the general path whatever the keys and properties.
    @Test func recordsWrittenDirectlyMatchTheirWireObject() async {
        await propertyCheck(count: 400, input: Arbitrary.texts, Arbitrary.fields, Arbitrary.systems) { id, fields, system in
            let record = Record(id: id, fields: fields, system: system)
            var direct: [UInt8] = []
            JSONSerializer.writeRecord(record, to: &direct)
            #expect(direct == JSONSerializer.bytes(.object(record.wireObject)))
        }
    }

    /// `createdAt`/`updatedAt` travel and are stored as text and compared as text (checkpoints, SQL): for
    /// years 0001–9999 the text must have one fixed shape, read back to the same instant, and sort as time.
    @Test func timestampsRoundTripAndSortAsText() async {
        await propertyCheck(count: 500, input: Arbitrary.milliseconds, Arbitrary.milliseconds, Gen.int64(in: -1500...1500)) {
            a, b, delta in
            let t = Timestamp(millisecondsSinceEpoch: a)
            let text = t.iso8601
            let shape = "dddd-dd-ddTdd:dd:dd.dddZ".utf8
            #expect(text.utf8.count == 24, "\(text)")
            #expect(zip(shape, text.utf8).allSatisfy { $0 == UInt8(ascii: "d") ? (48...57).contains($1) : $0 == $1 }, "\(text)")
            #expect((1...9999).contains(Int(text.prefix(4)) ?? 0), "\(text)")
            #expect(Timestamp(iso8601: text) == t, "\(text)")
            #expect(t.withISO8601 { String(decoding: $0, as: UTF8.self) } == text)
            let near = min(max(a + delta, Arbitrary.instants.lowerBound), Arbitrary.instants.upperBound)
            for other in [b, near].map(Timestamp.init(millisecondsSinceEpoch:)) {
                #expect((t < other) == (text < other.iso8601), "\(text) \(other.iso8601)")
                #expect((t == other) == (text == other.iso8601), "\(text) \(other.iso8601)")
            }
        }
    }

    /// The parser reads untrusted bytes (request bodies, shell pipelines): anything either parses or is
    /// refused with an invalid-input error that says where, never a trap; and whatever parses round-trips.
    @Test func parserSurvivesArbitraryBytes() async {
        await propertyCheck(count: 2000, input: Arbitrary.noise) { bytes in
            _ = try? JSONParser.parseStream(bytes: bytes)
            _ = try? JSONParser.parseStored(String(decoding: bytes, as: UTF8.self))
            let value: JSONValue
            do throws(TSyncError) {
                value = try JSONParser.parse(bytes: bytes)
            } catch {
                #expect(error.kind == .invalidInput && error.message.hasPrefix("invalid JSON at line "), "\(error)")
                return
            }
            #expect(parsed(JSONSerializer.bytes(value)) == value)
        }
    }

    /// A pull stores user fields copied by `CanonicalJSONCursor` instead of parsed and written
    /// again: what it copies must be the serializer's bytes for the parser's value, and it must
    /// copy every value whose names are plain ASCII, however it is spaced or ordered.
    @Test func canonicalCopyIsTheSerializersOutput() async {
        await propertyCheck(count: 400, input: Arbitrary.values) { value in
            let compact = JSONSerializer.bytes(value)
            for text in [compact, JSONSerializer.bytes(value, pretty: true), Self.reversingMembers(compact)] {
                let copied = Self.canonicalCopy(text)
                if let copied { #expect(copied == compact, "\(String(decoding: text, as: UTF8.self))") }
                if Self.namesArePlainASCII(value) { #expect(copied != nil, "\(String(decoding: text, as: UTF8.self))") }
            }
        }
    }

    /// On any bytes, the canonical copy either gives up or agrees with the parser and serializer.
    @Test func canonicalCopyAgreesWithTheParserOnArbitraryBytes() async {
        await propertyCheck(count: 2000, input: Arbitrary.noise) { bytes in
            guard let copied = Self.canonicalCopy(bytes) else { return }
            let value = try? JSONParser.parse(bytes: bytes)
            #expect(value.map { JSONSerializer.bytes($0) } == copied, "\(String(decoding: bytes, as: UTF8.self))")
        }
    }

    /// The canonical copy of one whole value, or nil.
    private static func canonicalCopy(_ bytes: [UInt8]) -> [UInt8]? {
        bytes.withUnsafeBufferPointer { buffer in
            var cursor = CanonicalJSONCursor(buffer)
            var output: [UInt8] = []
            guard cursor.copyValue(to: &output) else { return nil }
            cursor.skipWhitespace()
            return cursor.atEnd ? output : nil
        }
    }

    private static func namesArePlainASCII(_ value: JSONValue) -> Bool {
        switch value {
        case .array(let elements): return elements.allSatisfy(namesArePlainASCII)
        case .object(let object):
            return object.allSatisfy { member in
                member.key.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
                    && namesArePlainASCII(member.value)
            }
        default: return true
        }
    }

    /// The same JSON with the members of its outermost object in reverse order (input people type
    /// is rarely sorted).
    private static func reversingMembers(_ bytes: [UInt8]) -> [UInt8] {
        guard case .object(let object)? = try? JSONParser.parse(bytes: bytes), !object.isEmpty else { return bytes }
        var output = Array("{".utf8)
        for (offset, member) in object.sorted(by: { $0.key > $1.key }).enumerated() {
            if offset > 0 { output.append(UInt8(ascii: ",")) }
            JSONSerializer.writeString(member.key, to: &output)
            output.append(UInt8(ascii: ":"))
            JSONSerializer.write(member.value, to: &output)
        }
        output.append(UInt8(ascii: "}"))
        return output
    }

    /// The value `bytes` parse to; failing to parse is an issue.
    private func parsed(_ bytes: [UInt8]) -> JSONValue? {
        do { return try JSONParser.parse(bytes: bytes) } catch {
            Issue.record("does not parse: \(error) in \(String(decoding: bytes, as: UTF8.self))")
            return nil
        }
    }
}

/// The generators. `JSONValue` is recursive, which PropertyBased's combinators cannot express, so trees
/// are drawn by hand and shrunk by `smaller`.
private enum Arbitrary {
    typealias RNG = any SeededRandomNumberGenerator

    static let values = Generator<JSONValue, [JSONValue]>(run: { rng in value(depth: 0, &rng) }, shrink: { smaller($0) })
    static let texts = Generator<String, [String]>(run: { rng in text(&rng) }, shrink: { shorter($0) })
    /// User fields: objects with any key but a system property's name.
    static let fields = Generator<JSONValue, [JSONValue]>(run: { rng in .object(object(depth: 1, &rng)) }, shrink: { smaller($0) })
        .compactMap { $0.objectValue?.filter { !SystemProperties.names.contains($0.key) } }
    static let systems = zip(timestamps.optional, timestamps.optional, texts.optional, Gen.bool)
        .map { SystemProperties(createdAt: $0.0, updatedAt: $0.1, version: $0.2, deleted: $0.3) }

    /// 0001-01-01T00:00:00.000Z through 9999-12-31T23:59:59.999Z.
    static let instants: ClosedRange<Int64> = -62_135_596_800_000...253_402_300_799_999
    static let instantEdges: [Int64] = [instants.lowerBound, instants.lowerBound + 1, -1, 0, 1, 951_782_400_000, instants.upperBound]
    static let milliseconds = Generator<Int64, Shrink.Integer<Int64>>(
        run: { rng in Int.random(in: 0..<8, using: &rng) == 0 ? pick(instantEdges, &rng) : Int64.random(in: instants, using: &rng) },
        shrink: { $0.shrink(within: instants) })
    static let timestamps = milliseconds.map { Timestamp(millisecondsSinceEpoch: $0) }
    static let intEdges: [Int64] = [.min, .min + 1, -1, 0, 1, 9_007_199_254_740_993, .max - 1, .max]

    static func value(depth: Int, _ rng: inout RNG) -> JSONValue {
        switch Int.random(in: 0..<(depth < 4 ? 10 : 6), using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return .int(Int.random(in: 0..<3, using: &rng) == 0 ? pick(intEdges, &rng) : Int64.random(in: .min ... .max, using: &rng))
        case 3: return .double(double(&rng))
        case 4, 5: return .string(text(&rng))
        case 6, 7: return .array((0..<Int.random(in: 0...4, using: &rng)).map { _ in value(depth: depth + 1, &rng) })
        default: return .object(object(depth: depth + 1, &rng))
        }
    }

    static let doubleEdges: [Double] = [
        0, -0.0, 0.1, -2.5, 1e15 - 1, 1e15, -1e15, 1e16, 9_007_199_254_740_992, 1e-7, 1.5e300, .ulpOfOne,
        .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .leastNormalMagnitude, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
    ]

    static func double(_ rng: inout RNG) -> Double {
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: return pick(doubleEdges, &rng)
        case 1: return (Double.random(in: -1...1, using: &rng) * pick([1e3, 1e9, 1e15, 1e16, 1e18], &rng)).rounded()  // whole reals
        case 2: return Double.random(in: -1000...1000, using: &rng)
        default:  // any finite bit pattern: every exponent, subnormals included
            while true {
                let double = Double(bitPattern: UInt64.random(in: .min ... .max, using: &rng))
                if double.isFinite { return double }
            }
        }
    }

    /// Escapes of every kind, combining marks, a BOM, a line separator, astral scalars, a ZWJ sequence.
    static let textPieces = [
        "a", "Z", "0", " ", "\"", "\\", "/", "\u{0}", "\u{1}", "\u{1F}", "\u{7F}", "\n", "\r\n", "\t", "\u{8}", "\u{C}",
        "\u{E9}", "e\u{301}", "\u{301}", "\u{436}", "\u{4E2D}", "\u{FEFF}", "\u{2028}", "\u{FFFF}", "\u{1F600}",
        "\u{1F469}\u{200D}\u{1F467}", "\u{1D11E}", "\u{10FFFF}",
    ]

    static func text(_ rng: inout RNG) -> String {
        var scalars = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0...12, using: &rng) {
            if Int.random(in: 0..<5, using: &rng) > 0 { scalars += pick(textPieces, &rng).unicodeScalars; continue }
            let top = pick([0x7F, 0x7FF, 0xFFFF, 0x10FFFF] as [UInt32], &rng)
            var scalar: Unicode.Scalar?
            while scalar == nil { scalar = Unicode.Scalar(UInt32.random(in: 0...top, using: &rng)) }  // not a surrogate
            scalars.append(scalar ?? " ")
        }
        return String(scalars)
    }

    /// No combining marks in keys: canonically equivalent keys would merge in a Swift dictionary. Whole
    /// keys include the system names and their neighbours in sort order.
    static let keyPieces = [
        "a", "b", "k", "x", "Z", "0", "9", "_", "\u{E9}", "\u{F1}", "\u{FC}", "\u{DF}", "\u{436}", "\u{4E2D}", "\u{1F600}",
    ]
    static let wholeKeys = [
        "", "id", "createdAt", "createdA", "createdAu", "deleted", "deletedX", "updatedAt", "updatedAt2", "version", "versio", "v", "~",
    ]

    static func object(depth: Int, _ rng: inout RNG) -> [String: JSONValue] {
        var object: [String: JSONValue] = [:]
        for _ in 0..<Int.random(in: 0...6, using: &rng) {
            let key =
                Bool.random(using: &rng)
                ? pick(wholeKeys, &rng) : (0..<Int.random(in: 1...5, using: &rng)).map { _ in pick(keyPieces, &rng) }.joined()
            object[key] = value(depth: depth, &rng)
        }
        return object
    }

    /// Candidates each strictly smaller than `value` (null, a child, one member fewer, one member
    /// smaller), so shrinking ends.
    static func smaller(_ value: JSONValue) -> [JSONValue] {
        var candidates: [JSONValue] = value.isNull ? [] : [.null]
        switch value {
        case .null, .bool, .int, .double: break
        case .string(let text): candidates += shorter(text).map(JSONValue.string)
        case .array(let elements):
            candidates += elements + dropping(elements).map(JSONValue.array)
            for index in elements.indices {
                candidates += smaller(elements[index]).map {
                    var copy = elements; copy[index] = $0; return .array(copy)
                }
            }
        case .object(let object):
            candidates += object.values
            for key in object.keys { var fewer = object; fewer[key] = nil; candidates.append(.object(fewer)) }
            for (key, member) in object {
                candidates += smaller(member).map {
                    var copy = object; copy[key] = $0; return .object(copy)
                }
            }
        }
        return candidates
    }

    static func shorter(_ text: String) -> [String] {
        dropping(Array(text.unicodeScalars)).map { String(String.UnicodeScalarView($0)) }
    }

    /// Each way to leave one element out.
    static func dropping<T>(_ elements: [T]) -> [[T]] {
        elements.indices.map {
            var fewer = elements; fewer.remove(at: $0); return fewer
        }
    }

    /// Bytes near JSON: punctuation, digits, words and their prefixes, escapes, UTF-8, and any byte at all.
    static let noiseTokens = [
        "{", "}", "[", "]", ",", ":", "\"", "\\", "\\u", "d83d", "\\udc00", "00e9", "-", "+", ".", "e", "E", "0", "1", "9",
        "123", "true", "fals", "null", "nul", " ", "\n", "\t", "a", "\u{E9}", "\u{1F600}", "\"k\":", "1e400", "9223372036854775808",
    ].map { Array($0.utf8) }
    static let noise = Generator<[UInt8], [[UInt8]]>(
        run: { rng in
            // Half the inputs are mangled JSON, which gets deep into the parser before it goes wrong (or parses).
            var bytes = Bool.random(using: &rng) ? Array(JSONSerializer.bytes(value(depth: 2, &rng)).prefix(64)) : []
            for _ in 0..<Int.random(in: bytes.isEmpty ? 0...64 : 1...3, using: &rng) {
                let piece =
                    Int.random(in: 0..<4, using: &rng) == 0 ? [UInt8.random(in: .min ... .max, using: &rng)] : pick(noiseTokens, &rng)
                let at = Int.random(in: 0...bytes.count, using: &rng)
                bytes.replaceSubrange(at..<min(at + Int.random(in: 0...1, using: &rng), bytes.count), with: piece)
            }
            return Array(bytes.prefix(64))
        },
        shrink: { dropping($0) })

    static func pick<T>(_ options: [T], _ rng: inout RNG) -> T { options[Int.random(in: options.indices, using: &rng)] }
}

/// `WrittenDuration`: the one form of a duration on every flag and config key.
@Suite struct WrittenDurationTests {
    @Test func readsEachUnitAndBareSeconds() {
        let cases: [(String, Int?)] = [
            ("90s", 90), ("15m", 900), ("12h", 43_200), ("30d", 2_592_000), ("86400", 86_400), ("0", 0), ("-2", -2),
            ("5x", nil), ("", nil), ("h", nil), ("1.5h", nil), ("+3", nil), (" 3", nil), ("3 s", nil), ("1h30m", nil),
            ("-", nil), ("99999999999999999999d", nil), ("153722867280912931d", nil),
        ]
        for (text, seconds) in cases {
            #expect(WrittenDuration(text)?.seconds == seconds, "\(text)")
        }
    }

    @Test func writesTheLargestWholeUnit() {
        #expect(WrittenDuration(seconds: 2_592_000).description == "30d")
        #expect(WrittenDuration(seconds: 129_600).description == "36h")
        #expect(WrittenDuration(seconds: 5_400).description == "90m")
        #expect(WrittenDuration(seconds: 45).description == "45s")
        #expect(WrittenDuration(seconds: 0).description == "0s")
        #expect(WrittenDuration(seconds: -120).description == "-2m")
    }
}
