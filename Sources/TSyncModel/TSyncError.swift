/// The one error type that crosses layer boundaries.
///
/// Libraries throw it with a message a user can act on; only the command line turns a `Kind` into an
/// exit code (see `ExitCode` in the `tsync` target), so the table in DESIGN §3 lives in one place.
public struct TSyncError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The command line was used wrongly (exit 64).
        case usage
        /// Input data is bad: invalid JSON, invalid filter, unknown table or id (exit 65).
        case invalidInput
        /// Push or pull finished, but operations failed and sit in the error table (exit 2).
        case operationsFailed
        /// The server could not be reached; nothing was lost (exit 3).
        case unreachable
        /// Authentication is missing or was rejected (exit 4).
        case unauthorized
        /// Anything else (exit 1): a missing store, a busy store, an unexpected server answer.
        case failure
    }

    public var kind: Kind
    public var message: String
    /// For `.unreachable`: the request certainly never left this machine (the connection was
    /// refused or never established), so the server cannot have applied it. When false, a write
    /// may have arrived and only its answer was lost.
    public var requestNeverSent: Bool

    public init(_ kind: Kind, _ message: String, requestNeverSent: Bool = false) {
        self.kind = kind
        self.message = message
        self.requestNeverSent = requestNeverSent
    }

    public var description: String { message }

    public static func invalidInput(_ message: String) -> TSyncError { TSyncError(.invalidInput, message) }
    public static func failure(_ message: String) -> TSyncError { TSyncError(.failure, message) }
    public static func usage(_ message: String) -> TSyncError { TSyncError(.usage, message) }
}
