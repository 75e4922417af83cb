import Hummingbird
import TSyncModel

/// Responses with JSON bodies, written by `JSONSerializer` so the output is the same bytes the
/// client library and tests compare against.
enum JSONResponse {
    static func make(_ status: HTTPResponse.Status, _ value: JSONValue, headers: HTTPFields = [:]) -> Response {
        make(status, bytes: JSONSerializer.bytes(value), headers: headers)
    }

    /// A body already written as JSON.
    static func make(_ status: HTTPResponse.Status, bytes: [UInt8], headers: HTTPFields = [:]) -> Response {
        var headers = headers
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// One record with its `ETag` (the quoted version, docs/DESIGN.md §4).
    static func item(_ status: HTTPResponse.Status, _ record: Record, headers: HTTPFields = [:]) -> Response {
        var headers = headers
        if let version = record.system.version { headers[.eTag] = EntityTag.quoted(version) }
        var bytes: [UInt8] = []
        JSONSerializer.writeRecord(record, to: &bytes)
        return make(status, bytes: bytes, headers: headers)
    }

    static func error(_ status: HTTPResponse.Status, _ message: String, headers: HTTPFields = [:]) -> Response {
        make(status, ["error": .string(message)], headers: headers)
    }
}

extension ExpectedVersion {
    /// The precondition an `If-Match` header states (`EntityTag.ifMatch`): 400 when it names no
    /// tag at all; a list of weak tags only matches nothing (412).
    init(ifMatch header: String) throws(APIError) {
        switch EntityTag.ifMatch(header) {
        case .any: self = .any
        case .versions(let versions, let hadWeakTags):
            guard !versions.isEmpty || hadWeakTags else {
                throw .badRequest("invalid If-Match header: expected a quoted version, e.g. If-Match: \"abc\"")
            }
            self = .oneOf(versions)
        }
    }
}

extension StringProtocol {
    func trimmingSpaces() -> String {
        // Found from each end, not by reversing the whole text twice (every page request of a
        // pull trims its filter).
        let isText: (Character) -> Bool = { $0 != " " && $0 != "\t" }
        guard let first = firstIndex(where: isText), let last = lastIndex(where: isText) else { return "" }
        return String(self[first...last])
    }
}
