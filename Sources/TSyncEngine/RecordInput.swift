import Foundation
import TSyncModel

/// Turns what a user typed or piped into records and patches.
///
/// System properties in input are not user fields. `id` names the record; `createdAt`,
/// `updatedAt`, `version` and `deleted` belong to the server and are IGNORED in JSON input, so the
/// output of `tsync get`/`query` can be edited and fed back.
public enum RecordInput {
    /// System properties other than `id`.
    static let serverProperties: Set<String> = ["createdAt", "updatedAt", "version", "deleted"]

    /// The records of an input stream (a JSON array or NDJSON), each of which must be an object.
    public static func objects(from bytes: [UInt8]) throws(TSyncError) -> [[String: JSONValue]] {
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
    public static func object(from text: String) throws(TSyncError) -> [String: JSONValue] {
        let value = try JSONParser.parse(text)
        guard let object = value.objectValue else {
            throw .invalidInput(
                "expected one JSON object, got \(value.kindName); to insert many records, pipe a JSON array or NDJSON to stdin")
        }
        return object
    }

    /// A new local record: server properties dropped, the id validated or generated.
    static func newRecord(_ object: [String: JSONValue]) throws(TSyncError) -> Record {
        var object = object
        // Look before removing: the copy a removal makes is a bulk insert's main cost here.
        for name in serverProperties where object[name] != nil { object.removeValue(forKey: name) }
        return try Record(wire: object, generateID: { UUID().uuidString.lowercased() })
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
