import GRDB
import Testing
import TSyncModel

@testable import TSyncEngine

/// A streamed insert reads its input on a thread of its own while the transaction writes what was
/// read (`RecordsAhead`). Past the read-ahead (`LocalStore.readAhead`) the two run at once: what
/// the store holds after must be what the general path makes of the same input, and a record the
/// fast readers leave to the general path, or one that breaks the store's rules, however late,
/// must leave the store as it was.
@Suite struct RecordsAheadTests {
    /// More records than the read-ahead holds, so most are read while the transaction writes.
    static let count = LocalStore.readAhead.records * 2 + 77

    static func ndjson(_ count: Int = count, line: (Int) -> String = { #"{"id":"r\#($0)","n":\#($0),"text":"record \#($0)"}"# })
        -> [UInt8]
    {
        Array((0..<count).map(line).joined(separator: "\n").utf8)
    }

    /// What the store holds of `table`: each record's id and body, and its queue, in order.
    static func contents(_ store: LocalStore, _ table: String) throws -> [String] {
        try store.read { db in
            try String.fetchAll(db, sql: "SELECT id || ' ' || body FROM records WHERE tbl = ? ORDER BY rowid", arguments: [table])
                + String.fetchAll(db, sql: "SELECT item_id || ' ' || kind FROM operations WHERE tbl = ? ORDER BY seq", arguments: [table])
        }
    }

    @Test(arguments: [1 << 20, 4_093])
    func aLongInputIsStoredAsTheGeneralPathStoresIt(piece: Int) throws {
        let input = Self.ndjson()
        let streamed = try TemporaryStore()
        var ids: [String] = []
        let count = streamed.store.insert(
            table: "todo", streaming: StreamedCSVTests.Pieces(input, piece: piece), csv: false, inserted: { ids.append($0) })
        #expect(count == Self.count)
        #expect(ids == (0..<Self.count).map { "r\($0)" })
        let general = try TemporaryStore()
        _ = try general.store.insert(table: "todo", records: try NewRecords.json(input))
        #expect(try Self.contents(streamed.store, "todo") == Self.contents(general.store, "todo"))
    }

    @Test func aLateRecordForTheGeneralPathLeavesTheStoreAsItWas() throws {
        let temporary = try TemporaryStore()
        try temporary.store.insert(table: "todo", objects: [["id": .string("taken")]])
        let before = try Self.contents(temporary.store, "todo")
        let last = Self.count - 1
        let inputs: [(String, [UInt8])] = [
            ("invalid JSON", Self.ndjson { $0 == last ? #"{"id":"bad","n":}"# : #"{"id":"r\#($0)","n":\#($0)}"# }),
            ("an id the store has", Self.ndjson { $0 == last ? #"{"id":"taken"}"# : #"{"id":"r\#($0)","n":\#($0)}"# }),
            ("an id given twice", Self.ndjson { $0 == last ? #"{"id":"r7"}"# : #"{"id":"r\#($0)","n":\#($0)}"# }),
        ]
        for (what, input) in inputs {
            let count = temporary.store.insert(
                table: "todo", streaming: StreamedCSVTests.Pieces(input, piece: 1 << 20), csv: false, inserted: { _ in })
            #expect(count == nil, "\(what)")
            #expect(try Self.contents(temporary.store, "todo") == before, "\(what)")
        }
        // And the store takes a good input after them.
        #expect(
            temporary.store.insert(
                table: "todo", streaming: StreamedCSVTests.Pieces(Self.ndjson(), piece: 1 << 20), csv: false, inserted: { _ in })
                == Self.count)
    }
}
