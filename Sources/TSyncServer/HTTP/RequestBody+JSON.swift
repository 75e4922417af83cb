import Hummingbird
import NIOCore
import TSyncModel

extension Request {
    /// The body as a JSON object, within `limit` bytes: 413 over the limit, 400 (with the line and
    /// column from `JSONParser`) when it is not JSON or not an object. `maximumValues`: 413 when the
    /// body holds more JSON values (keys included) than this, counted before it is parsed: parsed,
    /// a value costs several times its bytes (docs/DESIGN.md §10.1).
    func jsonObject(limit: Int, maximumValues: Int? = nil) async throws -> [String: JSONValue] {
        try await jsonBody(limit: limit, maximumValues: maximumValues).object
    }

    /// `jsonObject`, with the size of the body it was read from.
    func jsonBody(limit: Int, maximumValues: Int? = nil) async throws -> (object: [String: JSONValue], bytes: Int) {
        let bytes = try await bodyBytes(limit: limit)
        guard !bytes.isEmpty else { throw APIError.badRequest("the request has no body: send a JSON object") }
        if let maximumValues, Self.valueCount(bytes, stoppingAfter: maximumValues) > maximumValues {
            throw APIError(.contentTooLarge, "the request holds more than \(maximumValues) JSON values (keys included): split it")
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes: bytes)
        } catch {
            throw APIError.badRequest(error.message)
        }
        guard case .object(let object) = value else {
            throw APIError.badRequest("the body must be a JSON object, not \(value.kindName)")
        }
        return (object, bytes.count)
    }
}

extension Request {
    /// At least the JSON values of `bytes` (keys included) when it is JSON: one for the whole, one
    /// more for each `{`, `[`, `,` and `:` outside strings. Counts up to `limit + 1` only.
    static func valueCount(_ bytes: [UInt8], stoppingAfter limit: Int) -> Int {
        var count = 1
        var inString = false
        var escaped = false
        for byte in bytes {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["), UInt8(ascii: ","), UInt8(ascii: ":"):
                count += 1
                if count > limit { return count }
            default: break
            }
        }
        return count
    }

    /// How much of a body over the limit is read (and thrown away) before the 413 goes out.
    static let drainLimit = 64 << 20

    /// The body, within `limit` bytes. Over the limit the answer is 413 with `Connection: close`;
    /// the rest of the body is read and dropped first, up to `drainLimit`, because a client that
    /// sends its whole body before reading (no `Expect: 100-continue`, as Python's urllib does)
    /// would otherwise block on a full socket and never see the 413 (docs/DESIGN.md §10).
    func bodyBytes(limit: Int) async throws -> [UInt8] {
        var collected: [UInt8] = []
        var total = 0
        let declared = headers[.contentLength].flatMap { Int($0) }
        if let declared, declared <= limit { collected.reserveCapacity(declared) }
        for try await buffer in body {
            total += buffer.readableBytes
            if total <= limit && (declared ?? 0) <= limit {
                collected.append(contentsOf: buffer.readableBytesView)
            } else if total > Self.drainLimit {
                break
            }
        }
        if total > limit || (declared ?? 0) > limit { throw APIError.bodyTooLarge(limit: limit) }
        return collected
    }
}

extension APIError {
    static func bodyTooLarge(limit: Int) -> APIError {
        var error = APIError(.contentTooLarge, "the request body is larger than \(limit) bytes")
        error.headers[.connection] = "close"
        return error
    }
}
