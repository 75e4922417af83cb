import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTPCompression
import NIOPosix
import NIOSSL
import TSyncModel
import TSyncTransport

/// What went wrong before a server answered: the one place that reads the transport's error types
/// (swift-nio, swift-nio-ssl, AsyncHTTPClient) into an `Unanswered`, so no internal type name
/// reaches a message. A cause it does not know is said as "the connection failed".
enum ConnectionFailure {
    /// The error for a failed exchange with `endpoint`.
    static func error(_ error: any Error, endpoint: RemoteEndpoint) -> TSyncError {
        if let description = TransportFailure.unresolvedHost(error) {
            return Unanswered.unresolvedHost(endpoint, description: description).error
        }
        if let hostnameOnly = refusedCertificate(error) {
            // Without the chain (`CertificateDiagnosis` reads it when it can reach the server again).
            return CertificateDiagnosis.explain(nil, endpoint: endpoint, hostnameOnly: hostnameOnly, now: Date())
        }
        if let error = error as? NIOSSLError {
            if case .handshakeFailed(let cause) = error {
                let text = String(describing: cause)
                let why =
                    text.contains("WRONG_VERSION_NUMBER")
                    ? "what answered at that port does not speak TLS (a plain HTTP port?)"
                    : "the server and this client share no TLS version or cipher, or the server closed the connection"
                return Unanswered.handshakeFailed(endpoint, why: why).error
            }
            if case .failedToLoadCertificate = error {
                return Unanswered.unloadableCAFile.error
            }
        }
        if let error = error as? NIOHTTPDecompression.DecompressionError, error == .limit {
            // As for a body past the bound as it came: retrying cannot help, smaller pages can.
            return TSyncError(
                .failure,
                "the answer of \(endpoint) decodes (Content-Encoding) to more than \(RemoteClient.maximumAnswerBytes >> 20) MiB, the most an answer may hold",
                remedy: .smallerPages)
        }
        if let what = undecodable(error) {
            // The server (or something on the way) answered: "cannot reach" would send the user
            // looking at the network.
            return Unanswered.undecodable(endpoint, what: what).error
        }
        return Unanswered.unreachable(endpoint, cause: words(error), neverSent: RemoteClient.failedToConnect(error)).error
    }

    /// Why an answer that arrived cannot be read, nil when `error` is no such failure: a
    /// compressed body that does not decode (or decodes past the bound), or bytes that are not HTTP.
    static func undecodable(_ error: any Error) -> String? {
        if error is NIOHTTPDecompression.DecompressionError || error is NIOHTTPDecompression.ExtraDecompressionError {
            return "its compressed body (Content-Encoding) is damaged"
        }
        if error is HTTPParserError { return "it is not valid HTTP" }
        return nil
    }

    /// Whether the handshake refused the server's certificate: true when only its name did not
    /// match (the chain was trusted), false when the chain failed verification (untrusted,
    /// expired, not yet valid), nil for any other failure.
    static func refusedCertificate(_ error: any Error) -> Bool? {
        if let error = error as? NIOSSLExtraError, error == .failedToValidateHostname { return true }
        if let error = error as? NIOSSLError, case .handshakeFailed(let cause) = error,
            String(describing: cause).contains("CERTIFICATE_VERIFY_FAILED")
        {
            return false
        }
        return nil
    }

    /// The cause of a failed exchange in a few words, from the error's type rather than its text:
    /// never the networking library's own description.
    static func words(_ error: any Error) -> String {
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout: return TransportFailure.connectTimedOut
            case .remoteConnectionClosed: return "the server closed the connection"
            case .readTimeout, .deadlineExceeded: return "no answer in time"
            default: break
            }
        }
        if let words = TransportFailure.words(error) { return words }
        if error is HTTPClientError { return "the HTTP exchange failed" }
        return "the connection failed"
    }
}
