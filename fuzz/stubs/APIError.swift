/// Stand-in for TSyncServer's APIError (which carries Hummingbird's HTTP status) so that the pure
/// query-string decoding can be compiled into a fuzz binary without the HTTP stack.
struct APIError: Error {
    var message: String
    static func badRequest(_ message: String) -> APIError { APIError(message: message) }
}
