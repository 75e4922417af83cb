import Testing
import TSyncModel

@testable import TSyncEngine

/// The fast readers of pulls and inserts (`StoredPageDecoder`, `NewRecordsDecoder`,
/// `CSVRecords.prepared`) must store exactly what the general path (parse, `Record(wire:)`,
/// `StoredJSON.encode`) stores, and leave to it whatever they are not sure of.
@Suite struct StoredFormTests {
    static let records: [Record] = [
        Record(
            id: "a1", fields: ["text": "hello", "n": 1, "done": false, "tags": ["x", "y"], "meta": ["z": 1, "a": "é", "id": 3]],
            system: SystemProperties(
                createdAt: Timestamp(millisecondsSinceEpoch: 1_700_000_000_000),
                updatedAt: Timestamp(millisecondsSinceEpoch: 1_700_000_000_001),
                version: "v1")),
        Record(
            id: "a2",
            fields: [
                "zeta": .double(1.5), "big": .int(.max), "neg": .int(.min), "e": .double(1e5), "s": "quote \" \\ \n \u{1} é /",
                "nested": ["b": ["d": [], "c": [:]], "a": .null], "uni": "日本語",
            ],
            system: SystemProperties(updatedAt: Timestamp(millisecondsSinceEpoch: 1_700_000_000_002), version: "v2", deleted: true)),
        Record(id: "a3", fields: [:], system: SystemProperties(updatedAt: Timestamp(millisecondsSinceEpoch: 1_700_000_000_003))),
    ]

    /// The general path's result for a page.
    static func general(_ page: String) throws -> [StoredRecord] {
        var items: [JSONValue] = []
        switch try JSONParser.parse(page) {
        case .array(let array): items = array
        case .object(let object): if case .array(let array)? = object["results"] { items = array }
        default: break
        }
        return try items.map { item in StoredRecord(try Record(wire: item.objectValue ?? [:])) }
    }

    @Test func aPageAsTheServerWritesItIsReadAsTheGeneralPathReadsIt() throws {
        var bytes = Array(#"{"count":3,"results":["#.utf8)
        for (offset, record) in Self.records.enumerated() {
            if offset > 0 { bytes.append(UInt8(ascii: ",")) }
            JSONSerializer.writeRecord(record, to: &bytes)
        }
        bytes.append(contentsOf: "]}".utf8)
        let decoded = try #require(StoredPageDecoder.decode(bytes))
        #expect(decoded.totalCount == 3)
        #expect(decoded.records == (try Self.general(String(decoding: bytes, as: UTF8.self))))
        #expect(decoded.records == Self.records.map(StoredRecord.init))
    }

    /// The next page's position, guessed from a page's bytes before it is read: the last
    /// record's, on a page as `tsync serve` writes it; nil where it cannot tell.
    @Test func theLastRecordsPositionIsGuessedFromTheBytes() throws {
        var bytes = Array("[".utf8)
        for (offset, record) in Self.records.enumerated() {
            if offset > 0 { bytes.append(UInt8(ascii: ",")) }
            JSONSerializer.writeRecord(record, to: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
        let guess = try #require(StoredPageDecoder.lastPosition(bytes))
        #expect(guess.id == "a3" && guess.updatedAt == Timestamp(millisecondsSinceEpoch: 1_700_000_000_003))
        for page in [
            "[]", #"[{"updatedAt":"2026-01-02T03:04:05.006Z","id":"r"}]"#, #"[{"id":"r","text":"x"}]"#, #"[{"id":"r","updatedAt":null}]"#,
        ] {
            #expect(StoredPageDecoder.lastPosition(Array(page.utf8)) == nil, "\(page)")
        }
        // Only a guess: an object of that shape among the last record's fields misleads it (the
        // pull checks the guess against the page once read).
        let misleading = #"[{"id":"r","updatedAt":"2026-01-02T03:04:05.006Z","z":{"id":"x","updatedAt":"2099-01-01T00:00:00.000Z"}}]"#
        #expect(StoredPageDecoder.lastPosition(Array(misleading.utf8))?.id == "x")
    }

    @Test func otherOrdersAndSpacingAreReadToo() throws {
        let page = #"[ {"z":1, "version":null, "a":[1 , 2.50], "updatedAt":"2026-01-02T03:04:05.006Z", "id":"r", "deleted":false} ]"#
        let decoded = try #require(StoredPageDecoder.decode(Array(page.utf8)))
        #expect(decoded.records == (try Self.general(page)))
        #expect(decoded.records.first?.body == #"{"a":[1,2.5],"z":1}"#)
    }

    /// Each of these the general path refuses or reads differently: the fast reader gives up.
    @Test func whatItIsNotSureOfIsLeftToTheGeneralPath() {
        let pages = [
            #"[{"id":"r","x":1,"x":2}]"#,  // a name twice
            #"[{"id":"r","\u00e9":1}]"#,  // an escaped name
            #"[{"id":"r","é":1}]"#,  // a name beyond ASCII
            #"[{"id":"r","n":99999999999999999999}]"#,  // beyond 64 bits
            #"[{"id":"a/b"}]"#,  // an invalid id
            #"[{"x":1}]"#,  // no id
            #"[{"id":"r","updatedAt":"yesterday"}]"#,
            #"[{"id":"r","deleted":"no"}]"#,
            #"[{"id":"r","version":1}]"#,
            #"[{"id":"r"},3]"#,
            #"[{"id":"r"}"#,
            #"{"results":[],"next":"x"}"#,
            #"{"count":1}"#,
        ]
        for page in pages { #expect(StoredPageDecoder.decode(Array(page.utf8)) == nil, "\(page)") }
    }

    @Test func newRecordsAreStoredAsTheGeneralPathStoresThem() throws {
        let input = """
            {"text":"b","id":"n1","createdAt":"whatever","version":5,"deleted":true,"updatedAt":null,"meta":{"z":1,"a":2}}
            {"id":"n2","e":1E5,"s":"\\u00e9\\n","neg":-0}
            [1]
            """
        // The third line is an array, which the general path refuses: all is left to it.
        #expect(NewRecordsDecoder.decode(Array(input.utf8)) == nil)
        let valid = String(input.split(separator: "\n").prefix(2).joined(separator: "\n"))
        let fast = try #require(NewRecordsDecoder.decode(Array(valid.utf8)))
        let general = try RecordInput.objects(from: Array(valid.utf8)).map { object in
            let record = try RecordInput.newRecord(object)
            return (id: record.id, body: StoredJSON.encode(record.fields))
        }
        #expect(fast.map(\.id) == general.map(\.id))
        #expect(fast.map(\.body) == general.map(\.body))
        #expect(fast.map(\.body) == [#"{"meta":{"a":2,"z":1},"text":"b"}"#, #"{"e":100000.0,"neg":0,"s":"é\n"}"#])
        let generated = try #require(NewRecordsDecoder.decode(Array(#"[{"x":1},{"id":null}]"#.utf8)))
        #expect(generated.allSatisfy { $0.id.count == 36 })
    }

    /// The readers put a record's fields in order once and reuse that order while the next
    /// records name the same fields in the same order: records that then change their order, their
    /// set, a name's length or a name's last letter, and nested objects at a body's start and end,
    /// are stored as the general path stores them, and a name given twice is still refused.
    @Test func recordsWhoseFieldsRepeatAndThenChangeAreStoredAsTheGeneralPathStoresThem() throws {
        let long = String(repeating: "x", count: 40)
        let fields = [
            #"{"text":"a","b":1}"#, #"{"text":"b","b":2}"#, #"{"b":3,"text":"c"}"#, #"{"text":"d","b":4,"c":5}"#, #"{"text":"e","b":5}"#,
            #"{"text":"f","bb":5,"c":6}"#, #"{"tex":"g","b":1,"c":2}"#, #"{"texu":"h","b":1,"c":2}"#, #"{"text":"i","c":1,"b":2}"#,
            #"{"text":"j","c":1,"b":2}"#, #"{"x":{"z":1,"y":{"q":2,"p":3}},"a":"\#(long)"}"#,
            #"{"x":{"z":1,"y":{"q":2,"p":3}},"a":"\#(long)"}"#, #"{"b":"\#(long)","a":{"z":1,"y":2}}"#,
            #"{"b":"\#(long)","a":{"z":1,"y":2}}"#, #"{"z":1,"y":2}"#,
        ]
        // Every other record with its id last, which the serializer writes first.
        let lines = fields.enumerated().map { offset, line in offset % 2 == 0 ? line.dropLast() + #","id":"n\#(offset)"}"# : line }
        let input = Array(lines.joined(separator: "\n").utf8)
        let fast = try #require(NewRecordsDecoder.decode(input))
        let general = try RecordInput.objects(from: input).map { object in
            let record = try RecordInput.newRecord(object)
            return (id: record.id, body: StoredJSON.encode(record.fields))
        }
        #expect(fast.count == fields.count)
        #expect(fast.map(\.body) == general.map(\.body))
        #expect(fast[1].body == #"{"b":2,"text":"b"}"#)
        #expect(fast[9].body == #"{"b":2,"c":1,"text":"j"}"#)
        #expect(fast[11].body == #"{"a":"\#(long)","x":{"y":{"p":3,"q":2},"z":1}}"#)
        // The same number of names as the order kept, one of them twice.
        #expect(NewRecordsDecoder.decode(Array("{\"text\":\"a\",\"b\":1}\n{\"text\":\"a\",\"text\":2}".utf8)) == nil)
        #expect(NewRecordsDecoder.decode(Array("{\"c\":1,\"b\":1}\n{\"c\":1,\"b\":2,\"b\":3}".utf8)) == nil)

        // A page of the same records, read by the pull's reader.
        let pageRecords = fields.enumerated().map { offset, line in #"{"id":"p\#(offset)","# + line.dropFirst() }
        let page = "[" + pageRecords.joined(separator: ",") + "]"
        let decoded = try #require(StoredPageDecoder.decode(Array(page.utf8)))
        #expect(decoded.records == (try Self.general(page)))
        #expect(decoded.records.map(\.body) == fast.map(\.body))
    }

    /// A member's `,"name":` and a string's quotes are copied from the input in one piece where
    /// it has them so: white space before or after a ',' or a ':', an id or an ignored property
    /// just before a field (whose ',' is not the body's), and the same inside nested objects and
    /// arrays, in and out of order, are stored as the general path stores them.
    @Test func membersWrittenWithAndWithoutSpacingAreStoredAsTheGeneralPathStoresThem() throws {
        let lines = [
            #"{"id":"s1","a":"x","b" :1 ,"c": "y","d" : {"e":"f" , "g" :[ "h","i" ,{"j" :"k","l":null}]},"m":"é"}"#,
            #"{"id":"s2", "b":1,"a" :"x","version":"v1","d":{ "g":["h"],"e" :"f"},"c":"y"}"#,
            #"{ "a":"x","id":"s3","createdAt":"2026-01-02T03:04:05.006Z","m":"" ,"b":true}"#,
            #"{"m":"é","updatedAt":null,"b":2,"a":"\u00e9","id":"s4"}"#,
            #"{"a":"x","b":1,"c":"y","d":{"e":"f","g":["h","i",{"j":"k","l":null}]},"m":"é","id":"s5"}"#,
        ]
        let input = Array(lines.joined(separator: "\n").utf8)
        let fast = try #require(NewRecordsDecoder.decode(input))
        let general = try RecordInput.objects(from: input).map { object in
            let record = try RecordInput.newRecord(object)
            return (id: record.id, body: StoredJSON.encode(record.fields))
        }
        #expect(fast.map(\.id) == general.map(\.id))
        #expect(fast.map(\.body) == general.map(\.body))
        #expect(fast[0].body == #"{"a":"x","b":1,"c":"y","d":{"e":"f","g":["h","i",{"j":"k","l":null}]},"m":"é"}"#)
        #expect(fast[0].body == fast[4].body)
        #expect(fast[1].body == #"{"a":"x","b":1,"c":"y","d":{"e":"f","g":["h"]}}"#)
        #expect(fast[2].body == #"{"a":"x","b":true,"m":""}"#)
        #expect(fast[3].body == #"{"a":"é","b":2,"m":"é"}"#)

        // The same records as a page, read by the pull's reader.
        let page = "[" + lines.joined(separator: " ,") + "]"
        let decoded = try #require(StoredPageDecoder.decode(Array(page.utf8)))
        #expect(decoded.records == (try Self.general(page)))
        #expect(decoded.records.map(\.body) == fast.map(\.body))
    }

    @Test func csvRowsAreStoredAsTheGeneralPathStoresThem() throws {
        let text = "id,text,n,obj,createdAt,zz,é\r\nc1,\"hi, there\",12,{\"b\":1,\"a\":[1,2]},2020,true,x\nc2,plain,-0,null,,\"\",\n"
        let fast = try #require(CSVRecords.prepared(from: text))
        let general = try CSVRecords.objects(from: text).map { object in
            let record = try RecordInput.newRecord(object)
            return (id: record.id, body: StoredJSON.encode(record.fields))
        }
        #expect(fast.map(\.id) == general.map(\.id))
        #expect(fast.map(\.body) == general.map(\.body))
        #expect(CSVRecords.prepared(from: "id,a\n\"x/y\",1\n") == nil)
        #expect(CSVRecords.prepared(from: "id,a,a\n1,2,3\n") == nil)
    }
}
