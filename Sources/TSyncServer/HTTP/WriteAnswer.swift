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
    init(
        method: Method, table: String, id: String?, body: [String: JSONValue]?, ifMatch: String?, scope: OwnerScope
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

/// What the protocol answers to one write: the status, and the item (the stored record for a
/// success, the server's copy for 409/412) or an error message.
struct WriteAnswer {
    var status: HTTPResponse.Status
    var item: Record?
    var message: String?

    init(_ outcome: WriteOutcome, for request: WriteRequest) {
        let write = request.write
        switch outcome {
        case .inserted(let record): self.init(.created, item: record)
        case .modified(let record): self.init(.ok, item: record)
        case .exists(let existing?): self.init(.conflict, item: existing)
        case .exists(nil):
            self.init(.conflict, message: "an item with id \(Identifiers.quoted(write.id)) already exists: choose another id")
        case .notFound: self.init(.notFound, message: APIError.notFound(table: write.table, id: write.id).message)
        case .versionMismatch(let current): self.init(request.staleStatus, item: current)
        case .unstorable(let message): self.init(.badRequest, message: message)
        case .notApplied:
            self.init(
                HTTPResponse.Status(code: 424, reasonPhrase: "Failed Dependency"),
                message: "not applied: another operation of this atomic batch failed, so none was written")
        }
    }

    init(_ status: HTTPResponse.Status, item: Record? = nil, message: String? = nil) {
        self.status = status
        self.item = item
        self.message = message
    }

    init(_ error: APIError) {
        self.init(error.status, item: error.item, message: error.message)
    }

    /// The single routes' response: the item with its `ETag`, or the error as `ErrorMiddleware` writes it.
    func response() throws(APIError) -> Response {
        guard (200..<300).contains(status.code), let item else {
            throw APIError(status, message ?? "", item: item)
        }
        return JSONResponse.item(status, item)
    }

    /// Appends one entry of the batch route's `results`: `{"id", "index", "item", "status"}` or
    /// `{"error", "id", "index", "status"}` (keys in the serializer's order). `index` (the
    /// operation's position in the request) and `id` (its item's, when it named one) let a client
    /// pair each result with its operation and refuse an answer that does not pair (issue 18.2);
    /// a plain client ignores them.
    func write(to output: inout [UInt8], index: Int, id: String?) {
        output.append(UInt8(ascii: "{"))
        if item == nil, let message {
            output.append(contentsOf: #""error":"#.utf8)
            JSONSerializer.writeString(message, to: &output)
            output.append(UInt8(ascii: ","))
        }
        if let id {
            output.append(contentsOf: #""id":"#.utf8)
            JSONSerializer.writeString(id, to: &output)
            output.append(UInt8(ascii: ","))
        }
        output.append(contentsOf: #""index":\#(index),"#.utf8)
        if let item {
            output.append(contentsOf: #""item":"#.utf8)
            JSONSerializer.writeRecord(item, to: &output)
            output.append(UInt8(ascii: ","))
        }
        output.append(contentsOf: #""status":\#(status.code)}"#.utf8)
    }
}
