import GRDB
import TSyncModel

/// The order of a table's fields as the user gave them, for `query --csv`'s columns
/// (docs/DESIGN.md §6.1). A body is stored with its names sorted and JSON input is read into a
/// dictionary, so the order is taken from the input's text, once per input: a CSV header's
/// columns, or the names of the first JSON object as written. The store keeps it per table
/// (`tables.field_order`, a JSON array), and a name first given later is appended.
package enum FieldOrder {
    /// `names` (a CSV header, an object's names) without `id`, which always comes first. The
    /// system properties stay where the user put them: `query --csv | insert --csv` keeps its
    /// columns in their place.
    static func names(header names: [String]) -> [String] {
        names.filter { $0 != "id" }
    }

    /// The names of the first object of JSON text (one object, an array of objects or
    /// NDJSON), in the order written. It stops at the first name or value the canonical cursor
    /// is not sure of (a name beyond plain ASCII): the names after it are left to `columns`.
    static func names(json bytes: UnsafeBufferPointer<UInt8>, from start: Int = 0) -> [String] {
        var cursor = CanonicalJSONCursor(bytes)
        cursor.index = start
        _ = cursor.take(UInt8(ascii: "["))
        guard cursor.take(UInt8(ascii: "{")) else { return [] }
        var names: [String] = []
        var skipped: [UInt8] = []
        repeat {
            guard let name = cursor.memberName() else { break }
            names.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[name]), as: UTF8.self))
            skipped.removeAll(keepingCapacity: true)
            guard cursor.copyValue(to: &skipped) else { break }
        } while cursor.take(UInt8(ascii: ","))
        return Self.names(header: names)
    }

    package static func names(json bytes: [UInt8]) -> [String] {
        bytes.withUnsafeBufferPointer { names(json: $0) }
    }

    /// The names a CSV text's header gives, in its order; none without a header row.
    package static func names(csv text: String) -> [String] {
        var reader = CSVReader(text)
        guard let header = try? reader.row() else { return [] }
        return names(header: header.cells.map(\.text))
    }

    /// Appends to the order kept for `table` (registered) the names of `names` it does not hold.

    static func remember(_ db: Database, table: String, _ names: [String]) throws {
        guard !names.isEmpty else { return }
        let before = try remembered(db, table: table)
        var order = before
        var known = Set(order)
        for name in names where known.insert(name).inserted { order.append(name) }
        guard order.count > before.count else { return }
        try db.execute(
            sql: "UPDATE tables SET field_order = ? WHERE name = ?",
            arguments: [JSONSerializer.string(.array(order.map(JSONValue.string))), table])
    }

    /// The order kept for `table`; empty when none is (a table only pulled, or a store from
    /// before it was kept).
    static func remembered(_ db: Database, table: String) throws -> [String] {
        guard let text = try String.fetchOne(db, sql: "SELECT field_order FROM tables WHERE name = ?", arguments: [table]),
            case .array(let values)? = try? JSONParser.parseStored(text)
        else { return [] }
        return values.compactMap { if case .string(let name) = $0 { name } else { nil } }
    }

    /// `query --csv`'s columns for `objects` (records in `get --json`'s shape): `id`, then the
    /// remembered names the records have, in their order, then every other name they have by
    /// name (the system properties among them, where they always were, unless the input that
    /// gave the order placed them, as `query --csv` writes them).
    static func columns(_ objects: [[String: JSONValue]], remembered: [String]) -> [String] {
        var names = Set<String>()
        for object in objects { names.formUnion(object.keys) }
        names.remove("id")
        let first = remembered.filter { names.remove($0) != nil }
        return ["id"] + first + names.sorted()
    }
}

extension LocalStore {
    /// The columns `query --csv` prints for `objects`, records of `table` (`FieldOrder.columns`).
    package func csvColumns(table: String, for objects: [[String: JSONValue]]) throws(TSyncError) -> [String] {
        let remembered = try read { db in try FieldOrder.remembered(db, table: table) }
        return FieldOrder.columns(objects, remembered: remembered)
    }
}
