import HTTPTypes
import TSyncModel

/// An answer other than success, as a route decides it. `ErrorMiddleware` turns it into a response:
/// `{"error": message}`, or the record itself for 409/412 (what Mobile Apps clients read as the
/// server's copy), with its `ETag`.
struct APIError: Error {
    var status: HTTPResponse.Status
    var message: String
    /// The server's copy of the item, sent as the body instead of the message.
    var item: Record?
    var headers: HTTPFields = [:]

    init(_ status: HTTPResponse.Status, _ message: String, item: Record? = nil) {
        self.status = status
        self.message = message
        self.item = item
    }

    static func badRequest(_ message: String) -> APIError { APIError(.badRequest, message) }

    static func notFound(table: String, id: String) -> APIError {
        APIError(.notFound, "no item \(Identifiers.quoted(id)) in table \(Identifiers.quoted(table))")
    }

    static let unauthorized = APIError(
        .unauthorized, "authentication required: log in with POST /.auth/login/custom and send the token in X-ZUMO-AUTH"
    )
}
