import Foundation
import Hummingbird
import TSyncModel

/// What the protocol answers to one write: the status, and the item (the stored record for a
/// success, the server's copy for 409/412) or an error message.
struct WriteAnswer {
    var status: HTTPResponse.Status
    var item: Record?
    var message: String?
    /// 400 for a record that does not match the table's schema: where and why, each.
    var violations: [SchemaViolation] = []

    /// `request`'s write is read where it is: a copy of it was a cost of each answer of a batch.
    init(_ outcome: WriteOutcome, for request: WriteRequest) {
        switch outcome {
        case .inserted(let record): self.init(.created, item: record)
        case .modified(let record): self.init(.ok, item: record)
        case .exists(let existing?): self.init(.conflict, item: existing)
        case .exists(nil):
            self.init(.conflict, message: "an item with id \(Identifiers.quoted(request.write.id)) already exists: choose another id")
        case .notFound: self.init(.notFound, message: APIError.notFound(table: request.write.table, id: request.write.id).message)
        case .versionMismatch(let current): self.init(request.staleStatus, item: current)
        case .unstorable(let message): self.init(.badRequest, message: message)
        case .invalid(let violations):
            self.init(.badRequest, message: APIError.schemaMessage(table: request.write.table, violations))
            self.violations = violations
        case .overTableLimit(let message), .forbidden(let message): self.init(.forbidden, message: message)
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
        violations = error.violations
    }

    /// The single routes' response: the item with its `ETag`, or the error as `ErrorMiddleware` writes it.
    func response() throws(APIError) -> Response {
        guard (200..<300).contains(status.code), let item else {
            var error = APIError(status, message ?? "", item: item)
            error.violations = violations
            throw error
        }
        return JSONResponse.item(status, item)
    }

    /// Appends one entry of the batch route's `results`: `{"id", "index", "item", "status"}` or
    /// `{"error", "id", "index", "status"}` (keys in the serializer's order). `index` (the
    /// operation's position in the request) and `id` (its item's, when it named one) let a client
    /// pair each result with its operation and refuse an answer that does not pair;
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
        // Numbers appended as digits: an interpolated string was made (and allocated) for each.
        output.append(contentsOf: #""index":"#.utf8)
        output.append(contentsOf: String(index).utf8)
        output.append(UInt8(ascii: ","))
        if let item {
            output.append(contentsOf: #""item":"#.utf8)
            JSONSerializer.writeRecord(item, to: &output)
            output.append(UInt8(ascii: ","))
        }
        output.append(contentsOf: #""status":"#.utf8)
        output.append(contentsOf: String(status.code).utf8)
        if !violations.isEmpty {
            output.append(contentsOf: #","violations":"#.utf8)
            JSONSerializer.write(APIError.violationsJSON(violations), to: &output)
        }
        output.append(UInt8(ascii: "}"))
    }
}
