import Foundation
import TSyncModel

/// Turns what a user typed or piped into records and patches.
///
/// System properties in input are not user fields. `id` names the record; `createdAt`,
/// `updatedAt`, `version` and `deleted` belong to the server and are IGNORED in JSON input, so the
/// output of `tsync get`/`query` can be edited and fed back.
package enum RecordInput {
    /// System properties other than `id`.
    static let serverProperties: Set<String> = ["createdAt", "updatedAt", "version", "deleted"]

    /// The records of an input stream (a JSON array or NDJSON), each of which must be an object.
    package static func objects(from bytes: [UInt8]) throws(TSyncError) -> [[String: JSONValue]] {
        let values = try JSONParser.parseStream(bytes: bytes)
        var objects: [[String: JSONValue]] = []
        objects.reserveCapacity(values.count)
        for (offset, value) in values.enumerated() {
            guard let object = value.objectValue else {
                throw .invalidInput("record \(offset + 1) is \(value.kindName), expected a JSON object")
            }
            objects.append(object)
        }
        return objects
    }

    /// One object given as a command-line argument.
    package static func object(from text: String) throws(TSyncError) -> [String: JSONValue] {
        let value = try JSONParser.parse(text)
        guard let object = value.objectValue else {
            throw .invalidInput(
                "expected one JSON object, got \(value.kindName); to insert many records, pipe a JSON array or NDJSON to stdin")
        }
        return object
    }

    /// The id of a record inserted without one: a lowercase UUID, as the Azure clients make.
    static func newID() -> String { UUID().uuidString.lowercased() }

    /// A new local record: server properties dropped, the id validated or generated.
    static func newRecord(_ object: [String: JSONValue]) throws(TSyncError) -> Record {
        var object = object
        // Look before removing: the copy a removal makes is a bulk insert's main cost here.
        for name in serverProperties where object[name] != nil { object.removeValue(forKey: name) }
        return try Record(wire: object, generateID: newID)
    }

    /// The user fields of a patch for record `id`: server properties dropped; an `id`, if present,
    /// must be the record's own.
    static func patch(_ object: [String: JSONValue], id: String) throws(TSyncError) -> [String: JSONValue] {
        var object = object
        for name in serverProperties { object.removeValue(forKey: name) }
        if let given = object.removeValue(forKey: "id"), given != .string(id) {
            throw .invalidInput(
                "the JSON has \"id\": \(JSONSerializer.string(given)), but the record is \(Identifiers.quoted(id)); ids cannot change")
        }
        return object
    }
}

/// How records and items are written into the database.
enum StoredJSON {
    static func encode(_ object: [String: JSONValue]) -> String {
        JSONSerializer.string(.object(object))
    }

    static func decodeObject(_ text: String, what: @autoclosure () -> String) throws(TSyncError) -> [String: JSONValue] {
        guard let object = (try? JSONParser.parse(text))?.objectValue else {
            throw .failure("the store holds a damaged \(what()); it is not a JSON object")
        }
        return object
    }
}

/// Records for `insert`, read from a user's input. Input as tsync itself writes it, and most
/// input people pipe, is read straight into the store's form (ids and body text) without a
/// `JSONValue` per record; anything the fast readers are not sure of is read the general way
/// (`RecordInput.objects`, `CSVRecords.objects`), which decides and words every error.
package struct NewRecords: Sendable {
    enum Form: Sendable {
        case objects([[String: JSONValue]])
        /// Validated, server properties dropped, ids generated where missing.
        case prepared([(id: String, body: String)])
    }
    let form: Form
    /// The fields in the input's order (`FieldOrder`), which the store keeps for the table.
    let fieldOrder: [String]

    /// Records given as objects (`insert(table:objects:)`'s rules apply), their fields in
    /// `fieldOrder` as the user gave them (`FieldOrder.names(json:)` reads it from JSON).
    package init(objects: [[String: JSONValue]], fieldOrder: [String] = []) {
        form = .objects(objects)
        self.fieldOrder = fieldOrder
    }

    private init(prepared: [(id: String, body: String)], fieldOrder: [String]) {
        form = .prepared(prepared)
        self.fieldOrder = fieldOrder
    }

    package var isEmpty: Bool {
        switch form {
        case .objects(let objects): objects.isEmpty
        case .prepared(let prepared): prepared.isEmpty
        }
    }

    /// The records of a JSON array or NDJSON stream. `requiringIDs` (upsert's): a record without
    /// an id is left to the general way, which says so, rather than given a new one.
    package static func json(_ bytes: [UInt8], requiringIDs: Bool = false) throws(TSyncError) -> NewRecords {
        let fieldOrder = FieldOrder.names(json: bytes)
        if let prepared = NewRecordsDecoder.decode(bytes, requiringIDs: requiringIDs) {
            return NewRecords(prepared: prepared, fieldOrder: fieldOrder)
        }
        return NewRecords(objects: try RecordInput.objects(from: bytes), fieldOrder: fieldOrder)
    }

    /// The records of CSV text (`CSVRecords`' rules); `requiringIDs` as for `json`.
    package static func csv(_ text: String, requiringIDs: Bool = false) throws(TSyncError) -> NewRecords {
        try csv(Array(text.utf8), requiringIDs: requiringIDs)
    }

    /// The records of CSV bytes, read by the reader a streamed `insert` uses (`StreamedRecords`:
    /// from the bytes, no text or cell per cell) where it takes the whole input; else the
    /// general way (`CSVRecords.objects`), which decides and words every error.
    package static func csv(_ bytes: [UInt8], requiringIDs: Bool = false) throws(TSyncError) -> NewRecords {
        var stream = StreamedRecords(WholeInput(bytes), format: .csv, requiringIDs: requiringIDs)
        var prepared: [(id: String, body: String)] = []
        // No field order: no header was read (an empty input), which is the general way's to word.
        if (try? stream.next(into: &prepared, limit: .max)) == .end, !stream.fieldOrder.isEmpty {
            return NewRecords(prepared: prepared, fieldOrder: stream.fieldOrder)
        }
        let text = String(decoding: bytes, as: UTF8.self)
        return NewRecords(objects: try CSVRecords.objects(from: text), fieldOrder: FieldOrder.names(csv: text))
    }

    /// An input held whole, given to `StreamedRecords` a piece at a time.
    private final class WholeInput: ByteSource {
        private let bytes: [UInt8]
        private var offset = 0

        init(_ bytes: [UInt8]) {
            self.bytes = bytes
        }

        func read(into buffer: inout [UInt8], limit: Int) -> Int {
            let end = min(offset + limit, bytes.count)
            buffer.append(contentsOf: bytes[offset..<end])
            defer { offset = end }
            return end - offset
        }
    }
}

/// The fast reader of `NewRecords.json`: every record an object whose names are plain ASCII,
/// each once (`CanonicalJSONCursor`), whose `id` is a valid id, null or absent. Its result is what
/// `RecordInput.newRecord` and `StoredJSON.encode` make of the same input; nil: read it the
/// general way.
enum NewRecordsDecoder {
    static func decode(_ bytes: [UInt8], requiringIDs: Bool = false) -> [(id: String, body: String)]? {
        bytes.withUnsafeBufferPointer { buffer in
            var cursor = CanonicalJSONCursor(buffer)
            var records: [(id: String, body: String)] = []
            var body: [UInt8] = []
            body.reserveCapacity(512)
            var members = CanonicalJSONCursor.Members(start: 0)
            if cursor.take(UInt8(ascii: "[")) {
                if !cursor.take(UInt8(ascii: "]")) {
                    repeat {
                        guard let record = readRecord(&cursor, body: &body, members: &members, requiringID: requiringIDs) else {
                            return nil
                        }
                        records.append(record)
                    } while cursor.take(UInt8(ascii: ","))
                    guard cursor.take(UInt8(ascii: "]")) else { return nil }
                }
                cursor.skipWhitespace()
                return cursor.atEnd ? records : nil
            }
            cursor.skipWhitespace()
            while !cursor.atEnd {
                guard let record = readRecord(&cursor, body: &body, members: &members, requiringID: requiringIDs) else { return nil }
                records.append(record)
                cursor.skipWhitespace()
            }
            return records
        }
    }

    /// Nil too, with `requiringID`, for a record whose id is absent or null.
    /// `body` and `members` are the caller's, kept from one record to the next: each is a buffer
    /// that would otherwise be made for every record.
    static func readRecord(
        _ cursor: inout CanonicalJSONCursor, body: inout [UInt8], members: inout CanonicalJSONCursor.Members,
        requiringID: Bool = false
    ) -> (id: String, body: String)? {
        guard cursor.take(UInt8(ascii: "{")) else { return nil }
        body.removeAll(keepingCapacity: true)
        body.append(UInt8(ascii: "{"))
        var id: String??
        var ignored: [UInt8] = []
        var seenIgnored = Set<String>()
        members.reset(start: body.count)
        if !cursor.take(UInt8(ascii: "}")) {
            repeat {
                guard let name = cursor.memberName() else { return nil }
                if cursor.range(name, is: "id") {
                    guard id == nil else { return nil }
                    if cursor.null() {
                        id = .some(nil)
                    } else {
                        guard let text = cursor.plainStringValue(), (try? Identifiers.validateRecordID(text)) != nil else { return nil }
                        id = text
                    }
                } else if isServerProperty(name, cursor) {
                    // Ignored, as `RecordInput.newRecord` ignores it; still valid JSON, named once.
                    let text = String(decoding: UnsafeBufferPointer(rebasing: cursor.bytes[name]), as: UTF8.self)
                    guard seenIgnored.insert(text).inserted, cursor.copyValue(to: &ignored) else { return nil }
                } else {
                    members.begin(name, in: cursor, output: &body)
                    guard cursor.copyValue(to: &body) else { return nil }
                    members.end(output: body)
                }
            } while cursor.take(UInt8(ascii: ","))
            guard cursor.take(UInt8(ascii: "}")), members.finish(in: cursor, output: &body) else { return nil }
        }
        body.append(UInt8(ascii: "}"))
        if requiringID, (id ?? nil) == nil { return nil }
        return ((id ?? nil) ?? RecordInput.newID(), String(decoding: body, as: UTF8.self))
    }

    private static func isServerProperty(_ name: Range<Int>, _ cursor: borrowing CanonicalJSONCursor) -> Bool {
        cursor.range(name, is: "createdAt") || cursor.range(name, is: "updatedAt") || cursor.range(name, is: "version")
            || cursor.range(name, is: "deleted")
    }
}
