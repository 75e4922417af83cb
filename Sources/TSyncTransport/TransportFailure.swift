import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Why a connection failed, in a few words, read from swift-nio's error types rather than from
/// their descriptions, which name internal types (`SingleConnectionFailure(...)`): the one reading
/// shared by the client's messages (`ConnectionFailure`) and the server's, for its PostgreSQL.
public enum TransportFailure {
    /// The cause of a failed connection or exchange; nil when `error` is none of swift-nio's
    /// connection errors.
    public static func words(_ error: any Error) -> String? {
        let ioErrors: [IOError]
        if let unresolved = unresolvedHost(error) { return unresolved }
        if let error = error as? NIOConnectionError {
            ioErrors = error.connectionErrors.compactMap { $0.error as? IOError }
            if ioErrors.isEmpty, error.connectionErrors.contains(where: { isTimeout($0.error) }) { return connectTimedOut }
        } else if let error = error as? IOError {
            ioErrors = [error]
        } else if isTimeout(error) {
            return connectTimedOut
        } else {
            return nil
        }
        if ioErrors.contains(where: { $0.errnoCode == ECONNREFUSED }) { return "connection refused: nothing listens at that port" }
        guard let code = ioErrors.first?.errnoCode else { return nil }
        switch code {
        case ECONNRESET: return "the connection was reset"
        case EPIPE: return "the connection was closed"
        case ETIMEDOUT: return "connection timed out"
        case ENETUNREACH, EHOSTUNREACH: return "no route to the host"
        default: return "network error: " + String(cString: strerror(code)).lowercased()
        }
    }

    /// The words for a connection that was not made in time.
    public static let connectTimedOut = "connection timed out: nothing answered at that address"

    /// The words for a host name that does not resolve; nil when `error` is no such failure.
    public static func unresolvedHost(_ error: any Error) -> String? {
        guard let error = error as? NIOConnectionError, error.connectionErrors.isEmpty,
            error.dnsAError != nil || error.dnsAAAAError != nil
        else { return nil }
        return "cannot resolve host \(error.host) (no such name, or no DNS answer)"
    }

    private static func isTimeout(_ error: any Error) -> Bool {
        if let error = error as? ChannelError, case .connectTimeout = error { return true }
        return false
    }
}
