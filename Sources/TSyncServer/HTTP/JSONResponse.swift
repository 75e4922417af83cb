import Hummingbird
import TSyncModel

/// Responses with JSON bodies, written by `JSONSerializer` so the output is the same bytes the
/// client library and tests compare against.
enum JSONResponse {
    static func make(_ status: HTTPResponse.Status, _ value: JSONValue, headers: HTTPFields = [:]) -> Response {
        var headers = headers
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: JSONSerializer.bytes(value))))
    }

    /// One record with its `ETag` (the quoted version, DESIGN §4).
    static func item(_ status: HTTPResponse.Status, _ record: Record, headers: HTTPFields = [:]) -> Response {
        var headers = headers
        if let version = record.system.version { headers[.eTag] = ETag.quoted(version) }
        return make(status, .object(record.wireObject), headers: headers)
    }

    static func error(_ status: HTTPResponse.Status, _ message: String, headers: HTTPFields = [:]) -> Response {
        make(status, ["error": .string(message)], headers: headers)
    }
}

/// `ETag` / `If-Match` values ↔ versions.
enum ETag {
    static func quoted(_ version: String) -> String { "\"" + version + "\"" }

    /// `If-Match: "v1", "v2"` → `.oneOf(["v1", "v2"])`; `*` → `.any`. `If-Match` compares strongly
    /// (RFC 9110 §13.1.1): a weak tag (`W/"v1"`) never matches, so it is dropped; a header of weak
    /// tags only matches nothing (`.oneOf([])`, answered 412).
    static func expectedVersion(fromIfMatch header: String) throws(APIError) -> ExpectedVersion {
        var versions: [String] = []
        var weakOnly = false
        for part in header.split(separator: ",") {
            var tag = Substring(part.trimmingSpaces())
            if tag == "*" { return .any }
            if tag.hasPrefix("W/") {
                weakOnly = true
                continue
            }
            if tag.count >= 2, tag.hasPrefix("\""), tag.hasSuffix("\"") { tag = tag.dropFirst().dropLast() }
            guard !tag.isEmpty else { continue }
            versions.append(String(tag))
        }
        guard !versions.isEmpty || weakOnly else {
            throw .badRequest("invalid If-Match header: expected a quoted version, e.g. If-Match: \"abc\"")
        }
        return .oneOf(versions)
    }
}

extension StringProtocol {
    func trimmingSpaces() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        return String(drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}
