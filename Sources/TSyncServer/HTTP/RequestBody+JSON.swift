import Hummingbird
import NIOCore
import TSyncModel

extension Request {
    /// The body as a JSON object, within `limit` bytes: 413 over the limit, 400 (with the line and
    /// column from `JSONParser`) when it is not JSON or not an object.
    func jsonObject(limit: Int) async throws -> [String: JSONValue] {
        if let length = headers[.contentLength].flatMap({ Int($0) }), length > limit {
            throw APIError.bodyTooLarge(limit: limit)
        }
        let buffer: ByteBuffer
        do {
            buffer = try await body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw APIError.bodyTooLarge(limit: limit)
        }
        let bytes = Array(buffer.readableBytesView)
        guard !bytes.isEmpty else { throw APIError.badRequest("the request has no body: send a JSON object") }
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes: bytes)
        } catch {
            throw APIError.badRequest(error.message)
        }
        guard case .object(let object) = value else {
            throw APIError.badRequest("the body must be a JSON object, not \(value.kindName)")
        }
        return object
    }
}

extension APIError {
    static func bodyTooLarge(limit: Int) -> APIError {
        APIError(.contentTooLarge, "the request body is larger than \(limit) bytes")
    }
}
