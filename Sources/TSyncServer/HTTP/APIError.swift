import HTTPTypes
import Hummingbird
import TSyncModel

/// The server's error: an answer other than success, as a route decides it. As Hummingbird's
/// `HTTPResponseError` it is its own response: `{"error": message}`, or the record itself for
/// 409/412 (what Mobile Apps clients read as the server's copy), with its `ETag`.
///
/// `TSyncError`, which the shared layers below throw, becomes one here (`init?(_:)`), from the
/// kinds a server can meet; anything else is the server's own failure (500, `ErrorMiddleware`).
struct APIError: HTTPResponseError {
    var status: HTTPResponse.Status
    var message: String
    /// The server's copy of the item, sent as the body instead of the message.
    var item: Record?
    var headers: HTTPFields = [:]
    /// For a record that does not match its table's schema: sent as `violations`, `[{"path",
    /// "reason"}]`, beside the message (docs/DESIGN.md §16).
    var violations: [SchemaViolation] = []

    init(_ status: HTTPResponse.Status, _ message: String, item: Record? = nil) {
        self.status = status
        self.message = message
        self.item = item
    }

    /// The answer to a `TSyncError` of the shared layers: bad input (a filter, a body, a name) is
    /// the client's (400), a refused login 401. Nil for every other kind: those describe the
    /// client's side of sync (a queue, a store, a server out of reach) and reach a server only as a
    /// bug, which `ErrorMiddleware` logs and answers with a bare 500.
    init?(_ error: TSyncError) {
        switch error.kind {
        case .invalidInput, .usage: self.init(.badRequest, error.message)
        case .unauthorized: self.init(.unauthorized, error.message)
        default: return nil
        }
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        if let item { return JSONResponse.item(status, item, headers: headers) }
        guard !violations.isEmpty else { return JSONResponse.error(status, message, headers: headers) }
        return JSONResponse.make(status, ["error": .string(message), "violations": Self.violationsJSON(violations)], headers: headers)
    }

    /// The message of a 400 for a record that does not match its table's schema; its first words
    /// are what a client tells this refusal by.
    static func schemaMessage(table: String, _ violations: [SchemaViolation]) -> String {
        "the item \(RecordSchema.refusalWords) \(Identifiers.quoted(table)): \(SchemaViolation.summary(violations, limit: .max))"
    }

    static func violationsJSON(_ violations: [SchemaViolation]) -> JSONValue {
        .array(violations.map { .object(["path": .string($0.path), "reason": .string($0.reason)]) })
    }

    static func badRequest(_ message: String) -> APIError { APIError(.badRequest, message) }

    static func notFound(table: String, id: String) -> APIError {
        APIError(.notFound, "no item \(Identifiers.quoted(id)) in table \(Identifiers.quoted(table))")
    }

    static let unauthorized = APIError(
        .unauthorized, "authentication required: log in with POST /.auth/login/custom and send the token in X-ZUMO-AUTH"
    )
}
