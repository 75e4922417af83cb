import GRDB
import Testing
import TSyncModel

@testable import TSyncEngine

/// A streamed `insert --csv` reads most rows straight from the input's bytes into the stored
/// body (`CSVRecords.Layout.record(in:from:body:cells:)`); what it stores must be what the general
/// path (`CSVRecords.objects`, `RecordInput.newRecord`, `StoredJSON.encode`) stores for the same
/// input, cell kind by cell kind, however the input is cut into reads.
@Suite struct StreamedCSVTests {
    /// Input handed over `piece` bytes at a time, so rows and cells are cut at every place.
    final class Pieces: ByteSource {
        let bytes: [UInt8]
        let piece: Int
        var offset = 0

        init(_ bytes: [UInt8], piece: Int) {
            self.bytes = bytes
            self.piece = piece
        }

        func read(into buffer: inout [UInt8], limit: Int) throws(TSyncError) -> Int {
            let count = min(piece, limit, bytes.count - offset)
            buffer.append(contentsOf: bytes[offset..<offset + count])
            offset += count
            return count
        }
    }

    /// The records a streamed insert takes from `bytes`; nil where it leaves the input to the
    /// general path.
    static func streamed(_ bytes: [UInt8], piece: Int) throws -> [(id: String, body: String)]? {
        var records = StreamedRecords(Pieces(bytes, piece: piece), format: .csv)
        var batch: [(id: String, body: String)] = []
        while true {
            switch try records.next(into: &batch, limit: batch.count + 3) {
            case .more: continue
            case .end: return batch
            case .declined: return nil
            }
        }
    }

    static func general(_ bytes: [UInt8]) throws -> [(id: String, body: String)] {
        try CSVRecords.objects(from: String(decoding: bytes, as: UTF8.self)).map { object in
            let record = try RecordInput.newRecord(object)
            return (id: record.id, body: StoredJSON.encode(record.fields))
        }
    }

    /// Streams `text` cut into reads of several sizes and expects the general path's records.
    static func expectSameAsGeneral(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let general = try general(bytes)
        for piece in [1, 2, 5, 64, 1 << 20] {
            let streamed = try #require(try Self.streamed(bytes, piece: piece), "declined, piece \(piece)", sourceLocation: sourceLocation)
            #expect(streamed.map(\.id) == general.map(\.id), "piece \(piece)", sourceLocation: sourceLocation)
            #expect(streamed.map(\.body) == general.map(\.body), "piece \(piece)", sourceLocation: sourceLocation)
        }
    }

    @Test func cellsOfEveryKindAreStoredAsTheGeneralPathStoresThem() throws {
        // One row per value in the column v: every kind a cell can be read as, and the texts that
        // come close to one (the fast reader writes some cells verbatim and must know which).
        let cells = [
            "0", "7", "-12", "123456789012345678", "-123456789012345678", "1234567890123456789", "9223372036854775808",
            "-0", "007", "+1", "1.5", "-3.5e2", "1E3", "1e", "1.", "-", "--1", "0x10", "12a",
            "true", "false", "null", "True", "NULL", "tru", "nulls",
            "", "\"\"", "\"12\"", "\"true\"", "\"null\"", "\"-0\"", " x ", " 1", "1 ", "a\tb", "back\\slash", "slash/",
            "\"say \"\"hi\"\"\"", "\"a, b\"", "\"line\nbreak\"", "\"crlf\r\ninside\"", "\"\"\"\"", "\"é \"\"q\"\"\"",
            "é", "日本語", "\"日本語\"", "e\u{301}", "{\"b\":1,\"a\":[1,2]}", "[]", "{}", "[1,\"x,y\"]", "{x", "[1", "[", "{",
            "\u{1}ctl",
        ]
        var text = "id,v,w\n"
        for (offset, cell) in cells.enumerated() { text += "r\(offset),\(cell),w\(offset)\n" }
        try Self.expectSameAsGeneral(Array(text.utf8))
    }

    @Test func rowsOfEveryShapeAreStoredAsTheGeneralPathStoresThem() throws {
        let inputs = [
            // CRLF, CR and LF line ends; blank lines; no line end at the end.
            "id,a,b\r\n1,x,2\r\n\r\n2,y,3\r3,z,4\n\n\n4,w,5",
            // Fewer cells than the header, a trailing comma, an empty last cell at the input's end.
            "id,a,b,c\n1\n2,x\n3,x,\n4,,,\n5,x,y,",
            // A byte order mark; server properties and a column whose name needs escaping.
            "\u{FEFF}id,createdAt,version,\"q\"\"name\",é,z\n1,2020,v1,x,y,9\n",
            // Columns in an order other than the body's, the id column not first.
            "zeta,alpha,id,mid\n1,2,a,3\n4,5,b,6\n",
            // A quoted cell last in the input, and one ending exactly at the end.
            "id,a\n1,\"x\ny\"\n2,\"\"",
        ]
        for input in inputs { try Self.expectSameAsGeneral(Array(input.utf8)) }
        // Bytes that are not UTF-8 are read as Swift reads them, repaired, in a cell of every kind.
        try Self.expectSameAsGeneral(Array("id,a,b\n1,".utf8) + [0xFF, 0x41] + Array(",\"".utf8) + [0xC3] + Array("\"\n".utf8))
    }

    @Test func idsWithUnicodeAreStoredAsTheGeneralPathStoresThem() throws {
        let ids = ["ключ-1", "é", "e\u{301}", "日本語", "\"quoted id\"", "\"a,b\"", "emoji-🙂", " spaced "]
        var text = "v,id\n"
        for (offset, id) in ids.enumerated() { text += "\(offset),\(id)\n" }
        try Self.expectSameAsGeneral(Array(text.utf8))
        // Without an id cell each record gets a generated one, the body the same.
        let generated = try #require(try Self.streamed(Array("id,v\n,1\n,2\n".utf8), piece: 1 << 20))
        #expect(generated.map(\.id.count) == [36, 36])
        #expect(generated.map(\.body) == [#"{"v":1}"#, #"{"v":2}"#])
    }

    @Test func whatTheGeneralPathRefusesIsLeftToIt() throws {
        let inputs = [
            "id,a\n\"x/y\",1\n",  // an invalid id
            "id,a\n1,2,3\n",  // more cells than the header
            "id,a\n1,x\"y\n",  // a quote inside an unquoted cell
            "id,a\n1,\"x\"y\n",  // text after a closing quote
            "id,a\n1,\"open\n",  // a quoted cell never closed
            "id,a\n1,{\"a\":1}x\n",  // a JSON object and more, so a quote inside an unquoted cell
            "id,a,a\n1,2,3\n",  // a name twice
        ]
        for input in inputs {
            for piece in [1, 64, 1 << 20] {
                #expect(try Self.streamed(Array(input.utf8), piece: piece) == nil, "\(input.debugDescription), piece \(piece)")
            }
        }
    }

    @Test func aStreamedInsertLeavesTheStoresChecksOn() throws {
        // The insert turns CHECK constraints off for its own rows; after it the store's
        // connection checks again, in the statements it had cached too.
        let temporary = try TemporaryStore()
        let store = temporary.store
        let input = Array("id,n\na,1\nb,2\n".utf8)
        #expect(store.insert(table: "todo", streaming: Pieces(input, piece: 1 << 20), csv: true, inserted: { _ in }) == 2)
        #expect(throws: TSyncError.self) {
            try store.write { db in try db.execute(sql: "UPDATE operations SET kind = 'bogus'") }
        }
        #expect(throws: TSyncError.self) {
            try store.write { db in
                try store.insertRows(db, table: "todo", [("c", "{}")][...], queuedAt: "x")
                try db.execute(sql: "UPDATE operations SET state = 'lost' WHERE item_id = 'c'")
            }
        }
        #expect(try store.queue("todo", "a") == ["insert"])
        #expect(try store.record(table: "todo", id: "c") == nil)
    }
}
