import Foundation
import Hummingbird
import TSyncModel

/// A write as the protocol states it — method, table, id, body, precondition — turned into a
/// `RecordWrite`, and the storage's outcome turned back into what the protocol answers. The single
/// routes and the batch route both go through here, so a write means the same and answers the same
/// whichever way it comes (docs/DESIGN.md §4).
struct WriteRequest {
    var write: RecordWrite
    /// 412 when the precondition came as `If-Match`, 409 when only as `version` in the body.
    var staleStatus: HTTPResponse.Status

    enum Method: String {
        /// `POST /tables/{table}` (insert), or `POST /tables/{table}/{id}` (undelete).
        case post = "POST"
        case patch = "PATCH"
        case delete = "DELETE"
    }

    /// - Parameters:
    ///   - ifMatch: the `If-Match` header value, if any.
    ///   - body: the JSON object of a POST (insert) or PATCH.
    ///   - user: the account that asks (kept in the record's history).
    ///   - schema: the table's record type, which what it stores must match.
    init(
        method: Method, table: String, id: String?, body: [String: JSONValue]?, ifMatch: String?, scope: OwnerScope, user: String?,
        schema: RecordSchema? = nil
    ) throws(APIError) {
        try Self.validate(table: table, id: id)
        let expected = try ifMatch.map { header throws(APIError) in try ExpectedVersion(ifMatch: header) }
        switch (method, id) {
        case (.post, nil):
            guard let body else { throw APIError.badRequest("an insert needs the item: a JSON object") }
            // System properties in the body are dropped (never stored): existing clients send them.
            let record = try Self.record { () throws(TSyncError) in
                try Record(wire: body, generateID: { UUID().uuidString.lowercased() })
            }
            write = RecordWrite(table: table, action: .insert(Record(id: record.id, fields: record.fields)), scope: scope)
            staleStatus = .conflict
        case (.post, let id?):
            write = RecordWrite(table: table, action: .modify(id: id, change: .undelete, expected: expected ?? .any), scope: scope)
            staleStatus = .preconditionFailed
        case (.patch, let id?):
            var body = body ?? [:]
            if let bodyID = body["id"], !bodyID.isNull, bodyID != .string(id) {
                throw APIError.badRequest(
                    "the id in the body (\(JSONSerializer.string(bodyID))) is not the id in the URL (\(Identifiers.quoted(id)))")
            }
            body["id"] = .string(id)
            let record = try Self.record { () throws(TSyncError) in try Record(wire: body) }
            // If-Match wins; a version in the body alone is the older way to ask the same, answered 409.
            let precondition = expected ?? record.system.version.map { .oneOf([$0]) } ?? .any
            write = RecordWrite(table: table, action: .modify(id: id, change: .update(record.fields), expected: precondition), scope: scope)
            staleStatus = expected == nil ? .conflict : .preconditionFailed
        case (.delete, let id?):
            write = RecordWrite(table: table, action: .modify(id: id, change: .softDelete, expected: expected ?? .any), scope: scope)
            staleStatus = .preconditionFailed
        case (.patch, nil), (.delete, nil):
            throw APIError.badRequest("\(method.rawValue) needs the id of the item")
        }
        write.user = user
        write.schema = schema
    }

    private static func validate(table: String, id: String?) throws(APIError) {
        do {
            try Identifiers.validateTableName(table)
            if let id { try Identifiers.validateRecordID(id) }
        } catch {
            throw APIError.badRequest(error.message)
        }
    }

    private static func record(_ make: () throws(TSyncError) -> Record) throws(APIError) -> Record {
        do {
            return try make()
        } catch {
            throw APIError.badRequest(error.message)
        }
    }
}
