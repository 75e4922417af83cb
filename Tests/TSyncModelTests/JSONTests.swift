import Testing
@testable import TSyncModel

@Suite struct JSONTests {
    @Test func roundTripsValues() throws {
        let text = #"{"id":"k","a":[1,2.5,"x\n\"y\"",true,null],"b":{"c":-9007199254740993}}"#
        let value = try JSONParser.parse(text)
        #expect(JSONSerializer.string(value) == text)
        #expect(value.objectValue?["b"]?.objectValue?["c"] == .int(-9007199254740993))
    }

    /// The server writes records straight to bytes; they must be the bytes of the general path.
    @Test(arguments: [
        SystemProperties(),
        SystemProperties(
            createdAt: Timestamp(millisecondsSinceEpoch: 1_700_000_000_123),
            updatedAt: Timestamp(millisecondsSinceEpoch: 1_700_000_000_456),
            version: "v\"1", deleted: true),
    ])
    func recordsWrittenDirectlyMatchTheirWireObject(system: SystemProperties) {
        let fields: [String: JSONValue] = [
            "A": 1, "b": "x", "createdAa": true, "createdAz": .null, "deletedX": [1, "2"], "e\u{301}": 2.5, "updatedAt2": 3,
            "versio": ["k": "v"], "zz": "\n\u{1}", "ü": "é",
        ]
        for record in [Record(id: "r\"1", fields: fields, system: system), Record(id: "r2", fields: [:], system: system)] {
            var direct: [UInt8] = []
            JSONSerializer.writeRecord(record, to: &direct)
            #expect(direct == JSONSerializer.bytes(.object(record.wireObject)), "\(String(decoding: direct, as: UTF8.self))")
        }
    }

    /// A field named as a system member present, or `id`, leaves the direct path for the
    /// general one; named as one absent, it is written as a field. Either way, the same bytes.
    @Test func recordsWithFieldsNamedAsSystemMembersMatchTheirWireObject() {
        let full = SystemProperties(
            createdAt: Timestamp(millisecondsSinceEpoch: 1_700_000_000_123),
            updatedAt: Timestamp(millisecondsSinceEpoch: 1_700_000_000_456), version: "v1", deleted: false)
        let clashes: [[String: JSONValue]] = [
            ["id": "inner"], ["deleted": true], ["createdAt": "x", "a": 1], ["updatedAt": 1, "zz": 2], ["version": "mine"],
            ["a": 1, "id": 2, "z": 3], ["zzz": 1, "version": .null],
        ]
        for fields in clashes {
            for system in [SystemProperties(), full] {
                let record = Record(id: "r", fields: fields, system: system)
                var direct: [UInt8] = Array("prefix,".utf8)
                JSONSerializer.writeRecord(record, to: &direct)
                #expect(direct == Array("prefix,".utf8) + JSONSerializer.bytes(.object(record.wireObject)), "\(fields)")
            }
        }
    }

    /// Strings without escapes: ASCII ones are made directly, others validated as UTF-8; both
    /// must read as the general decoding reads them, and invalid UTF-8 must still be refused.
    @Test func unescapedStringsReadAsValidatedUTF8() throws {
        for text in ["", "plain", "a b~", "é", "x😀y", "\u{7F}", "mixed é and ASCII"] {
            let bytes = Array("[\"".utf8) + Array(text.utf8) + Array("\"]".utf8)
            #expect(try JSONParser.parse(bytes: bytes) == .array([.string(text)]), "\(text)")
        }
        for invalid: [UInt8] in [[0x80], [0x61, 0xC3], [0xED, 0xA0, 0x80], [0xFF, 0x61]] {
            #expect(throws: TSyncError.self) { try JSONParser.parse(bytes: Array("\"".utf8) + invalid + Array("\"".utf8)) }
        }
    }

    @Test func reportsLineAndColumn() {
        #expect(throws: TSyncError.invalidInput("invalid JSON at line 2, column 7: unexpected '}', expected a value")) {
            try JSONParser.parse("{\"a\": 1,\n \"b\": }")
        }
    }

    @Test func rejectsTrailingGarbageAndBadNumbers() {
        #expect(throws: TSyncError.self) { try JSONParser.parse("{} x") }
        #expect(throws: TSyncError.self) { try JSONParser.parse("01") }
        #expect(throws: TSyncError.self) { try JSONParser.parse("\"\u{01}\"") }
        #expect(throws: TSyncError.self) { try JSONParser.parse("[1,]") }
    }

    @Test func decodesEscapesAndSurrogates() throws {
        #expect(try JSONParser.parse(#""\u00e9\ud83d\ude00\/""#) == .string("é😀/"))
        #expect(throws: TSyncError.self) { try JSONParser.parse(#""\ud83d""#) }
    }

    @Test func parsesStreamsAsArrayOrNDJSON() throws {
        #expect(try JSONParser.parseStream(bytes: Array("[{\"a\":1},{\"a\":2}]".utf8)).count == 2)
        #expect(try JSONParser.parseStream(bytes: Array("{\"a\":1}\n{\"a\":2}\n\n{\"a\":3}\n".utf8)).count == 3)
        #expect(try JSONParser.parseStream(bytes: []).isEmpty)
    }

    @Test func keepsWholeRealsReal() throws {
        #expect(JSONSerializer.string(.double(2)) == "2.0")
        #expect(try JSONParser.parse("2.0") == .double(2))
        #expect(JSONValue.int(2).jsonEquals(.double(2)))
    }
}

@Suite struct TimestampTests {
    @Test func formatsAndParsesMilliseconds() throws {
        let stamp = try #require(Timestamp(iso8601: "2026-11-23T09:24:23.123Z"))
        #expect(stamp.iso8601 == "2026-11-23T09:24:23.123Z")
        #expect(Timestamp(iso8601: "2026-11-23T10:24:23.1239+01:00") == stamp)
        #expect(Timestamp(iso8601: "1969-12-31T23:59:59.999Z")?.millisecondsSinceEpoch == -1)
        #expect(Timestamp(millisecondsSinceEpoch: -1).iso8601 == "1969-12-31T23:59:59.999Z")
        #expect(Timestamp(iso8601: "2024-02-29")?.iso8601 == "2024-02-29T00:00:00.000Z")
        #expect(Timestamp(iso8601: "2023-02-29") == nil)
        #expect(Timestamp(iso8601: "2023-01-01T25:00:00Z") == nil)
        // The fixed-width form has a reader of its own: it refuses what the general one refuses.
        for bad in [
            "2023-02-29T00:00:00.000Z", "2023-13-01T00:00:00.000Z", "2023-00-01T00:00:00.000Z", "2023-01-00T00:00:00.000Z",
            "2023-01-01T24:00:00.000Z", "2023-01-01T23:60:00.000Z", "2023-01-01T23:59:60.000Z", "2023-01-01T23:59:59.0a0Z",
        ] {
            #expect(Timestamp(iso8601: bad) == nil, "\(bad)")
        }
        #expect(Timestamp(iso8601: "2024-02-29T23:59:59.999Z")?.iso8601 == "2024-02-29T23:59:59.999Z")
    }

    /// Instants a pull's page may hold: runs on one day (the memo's case), day and year
    /// boundaries either side, leap days, the first and last four-digit years and beyond them.
    static var instants: [Int64] {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> Int64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int64(bitPattern: state >> 1)
        }
        let day: Int64 = 86_400_000
        var instants: [Int64] = [0, -1, 1, day - 1, day, -day, -day - 1, 1_795_971_168_044, 1_709_164_800_000, 1_709_251_199_999]
        // The first instant of 0000, the last of 9999, 2000-02-29 and 2100-03-01.
        let edges: [Int64] = [-62_167_219_200_000, 253_402_300_799_999, 951_782_400_000, 4_107_542_400_000]
        for edge in edges {
            let around: [Int64] = [edge - day, edge - 1, edge, edge + 1, edge + day]
            instants += around
        }
        for _ in 0..<400 { instants.append(next() % 400_000_000_000_000) }  // within years -10,700 to 14,600
        for _ in 0..<200 { instants.append(1_795_000_000_000 + next() % (3 * day)) }  // three days, in no order
        var run: Int64 = 1_795_971_168_044
        for _ in 0..<200 {
            run += next() % 5_000 + 1
            instants.append(run)
        }
        return instants
    }

    @Test func aDayMemoWritesWhatTheGeneralWriterWrites() {
        var memo = Timestamp.DayMemo()
        for milliseconds in Self.instants {
            let stamp = Timestamp(millisecondsSinceEpoch: milliseconds)
            var bytes: [UInt8] = [1, 2]
            stamp.appendISO8601(to: &bytes, memo: &memo)
            #expect(bytes == [1, 2] + Array(stamp.iso8601.utf8), "\(milliseconds)")
        }
    }

    /// The memo reads a text exactly when it is in the fixed-width form, and as the general parser
    /// (`Timestamp.parsed`, beneath every fast path) does; any other text, however close (every byte of valid texts changed in turn), it leaves
    /// to the general parser, with a memo that holds the text's own date, another, or none.
    @Test func aDayMemoReadsWhatTheGeneralParserReads() {
        let replacements = Array("09-:T.Z a/".utf8) + [0x80, 0x00, UInt8(ascii: "z"), UInt8(ascii: "+")]
        var kept = Timestamp.DayMemo()
        for milliseconds in Self.instants {
            let stamp = Timestamp(millisecondsSinceEpoch: milliseconds)
            let text = Array(stamp.iso8601.utf8)
            func read(_ text: [UInt8], _ memo: inout Timestamp.DayMemo) -> Timestamp? {
                text.withUnsafeBufferPointer { Timestamp.fixedWidth($0, memo: &memo) }
            }
            // Outside years 0-9999 the text is longer, or not one the parser takes back ("00-1-…").
            let fixed = text.count == 24 && text.withUnsafeBufferPointer(Timestamp.parsed) == stamp
            var fresh = Timestamp.DayMemo()
            #expect(read(text, &fresh) == (fixed ? stamp : nil), "\(stamp.iso8601)")
            #expect(read(text, &kept) == (fixed ? stamp : nil), "\(stamp.iso8601)")
            guard fixed else { continue }
            for position in text.indices {
                for byte in replacements where byte != text[position] {
                    var changed = text
                    changed[position] = byte
                    let general = changed.withUnsafeBufferPointer(Timestamp.parsed)
                    let fixed = general.map { Array($0.iso8601.utf8) == changed } ?? false
                    var sameDay = fresh
                    var none = Timestamp.DayMemo()
                    for memo in [read(changed, &sameDay), read(changed, &none), read(changed, &kept)] {
                        #expect(memo == (fixed ? general : nil), "\(String(decoding: changed, as: UTF8.self))")
                    }
                }
            }
        }
    }
}

@Suite struct IdentifierTests {
    @Test func rejectsPathAndControlCharacters() {
        for bad in ["", "a/b", "a\\b", "a\"b", "a+b", "a?b", "a`b", "a\u{7}b", String(repeating: "x", count: 256)] {
            #expect(throws: TSyncError.self) { try Identifiers.validateRecordID(bad) }
        }
        #expect(throws: Never.self) { try Identifiers.validateRecordID("todo-1 é") }
        // Short ids are held in the string itself, long ones in a buffer: the check reads both.
        let long = String(repeating: "y", count: 40)
        for bad in ["a\u{7F}b", "\u{1F}", long + "/", "/" + long, long + "\u{85}", long + "\u{0}"] {
            #expect(throws: TSyncError.self, "\(bad)") { try Identifiers.validateRecordID(bad) }
        }
        for good in ["item-0000001", long, long + "é", " ~", String(repeating: "z", count: 255)] {
            #expect(throws: Never.self, "\(good)") { try Identifiers.validateRecordID(good) }
        }
    }

    @Test func tableNames() {
        #expect(throws: Never.self) { try Identifiers.validateTableName("TodoItem_2") }
        for bad in ["", "1a", "a-b", "a b", "a.b", String(repeating: "t", count: 65)] {
            #expect(throws: TSyncError.self) { try Identifiers.validateTableName(bad) }
        }
    }

    @Test func recordSplitsSystemProperties() throws {
        let record = try Record(wire: [
            "id": "1", "text": "x", "version": "v1", "deleted": false,
            "updatedAt": "2026-01-01T00:00:00.000Z",
        ])
        #expect(record.fields == ["text": "x"])
        #expect(record.system.version == "v1")
        #expect(record.wireObject["updatedAt"] == "2026-01-01T00:00:00.000Z")
        #expect(throws: TSyncError.self) { try Record(wire: ["id": 5]) }
        #expect(try Record(wire: ["text": "y"], generateID: { "gen" }).id == "gen")
    }
}

/// Text compares byte for byte, as on the wire and in the databases (docs/DESIGN.md §12).
@Suite struct JSONByteEqualityTests {
    @Test func canonicallyEquivalentStringsAreDifferentValues() {
        let composed = JSONValue.string("\u{E9}")
        let decomposed = JSONValue.string("e\u{301}")
        #expect("\u{E9}" == "e\u{301}", "Swift's own String equality, which JSONValue must not use")
        #expect(composed != decomposed)
        #expect(!composed.jsonEquals(decomposed))
        #expect(Set([composed, decomposed]).count == 2)
        #expect(JSONValue.object(["k": composed]) != .object(["k": decomposed]))
        #expect(JSONValue.object(["\u{E9}": 1]) != .object(["e\u{301}": 1]))
        #expect(JSONValue.object(["a": 1, "b": [true, "x"]]) == .object(["b": [true, "x"], "a": 1]))
        #expect(Set([JSONValue.object(["a": 1, "b": 2]), .object(["b": 2, "a": 1])]).count == 1)
    }
}

extension JSONByteEqualityTests {
    @Test func keysThatDifferOnlyInNormalizationAreRefusedNotMerged() throws {
        let text = "{\"id\": \"a\", \"\u{E9}\": 1, \"e\u{301}\": 2}"
        #expect {
            try JSONParser.parse(text)
        } throws: { error in
            guard let error = error as? TSyncError else { return false }
            return error.kind == .invalidInput && error.message.contains("Unicode normalization")
        }
    }

    /// Before, the last value of a name given twice won silently.
    @Test func aNameGivenTwiceIsRefusedWithItsPosition() throws {
        let cases: [(text: String, line: Int, column: Int, name: String)] = [
            (#"{"id":"u3","a":1,"a":2}"#, 1, 18, #""a""#),
            ("[{\"x\": 1},\n {\"y\": {\"z\": 1,\n  \"z\": 2}}]", 3, 3, #""z""#),
            (#"{"\u00e9": 1, "\u00e9": 2}"#, 1, 15, "\"\u{E9}\""),
        ]
        for (text, line, column, name) in cases {
            #expect {
                try JSONParser.parse(text)
            } throws: { error in
                guard let error = error as? TSyncError else { return false }
                return error.kind == .invalidInput
                    && error.message == "invalid JSON at line \(line), column \(column): the field name \(name) appears twice in one object"
            }
        }
        #expect(throws: TSyncError.self) { try JSONParser.parseStream(bytes: Array("{\"a\":1}\n{\"b\":1,\"b\":1}".utf8)) }
        #expect(try JSONParser.parse(#"{"a": {"x": 1}, "b": {"x": 2}}"#).objectValue?.count == 2, "the same name in two objects")
    }
}

/// Numbers are kept exactly or refused, never silently changed.
@Suite struct JSONNumberTests {
    @Test func negativeZeroSurvivesARoundTrip() throws {
        let value = try JSONParser.parse(#"{"a": -0.0, "b": 0.0, "c": -0}"#)
        #expect(value.objectValue?["a"] == .double(-0.0))
        #expect(value.objectValue?["a"] != .double(0.0))
        #expect(value.objectValue?["c"] == .int(0), "an integer has one zero")
        let text = JSONSerializer.string(value)
        #expect(text.contains(#""a":-0.0"#) && text.contains(#""b":0.0"#), "\(text)")
        #expect(try JSONParser.parse(text) == value)
    }

    @Test func integersBeyond64BitsAreRefused() throws {
        #expect(try JSONParser.parse("9223372036854775807") == .int(Int64.max))
        #expect(try JSONParser.parse("-9223372036854775808") == .int(Int64.min))
        for text in ["9223372036854775808", "-9223372036854775809", #"{"n": 123456789012345678901234567890}"#] {
            #expect {
                try JSONParser.parse(text)
            } throws: { error in
                (error as? TSyncError)?.message.contains("does not fit in 64 bits") == true
            }
        }
        // Reals are reals: a large one with an exponent or a fraction is still accepted.
        #expect(try JSONParser.parse("1.2345678901234568e+29") == .double(1.2345678901234568e+29))
    }
}
