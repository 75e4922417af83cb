// The part of the server's APIError that QueryString.swift uses, without HTTPTypes, so the
// query-string fuzz target builds from that one source file.
struct APIError: Error {
    var message: String
    static func badRequest(_ message: String) -> APIError { APIError(message: message) }
}
