import Foundation
import TSyncEngine
import TSyncModel

/// The one place the command line turns its environment into the `RemoteSettings` of a
/// `SyncSession`.
enum RemoteAccess {
    /// Overrides the token saved by `tsync login` (CI, where the token comes from a secret store).
    static let tokenVariable = "TSYNC_TOKEN"

    /// Seconds one HTTP exchange may take, body included (default 30).
    static let timeoutVariable = "TSYNC_TIMEOUT"

    /// CA certificates trusted for https remotes instead of the system's, as OpenSSL, curl and git
    /// read them: a PEM bundle, and a directory of hashed certificates (`openssl rehash`).
    static let certificateFileVariable = "SSL_CERT_FILE"
    static let certificateDirectoryVariable = "SSL_CERT_DIR"

    /// The CAs the environment says to trust; a variable naming nothing readable is a usage error
    /// here rather than a failed handshake later.
    static func trust(_ environment: [String: String]) throws(TSyncError) -> CertificateTrust {
        let trust = CertificateTrust(file: environment[certificateFileVariable], directory: environment[certificateDirectoryVariable])
        for (variable, path) in [(certificateFileVariable, trust.file), (certificateDirectoryVariable, trust.directory)] {
            guard let path else { continue }
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw .usage(
                    "\(variable)=\(path) names nothing readable: point it to a PEM file of CA certificates (SSL_CERT_FILE) or a directory of them (SSL_CERT_DIR)"
                )
            }
        }
        return trust
    }

    /// The `SyncSession` of the command's session, made whole from the environment; what it does
    /// goes to the command's `tsync log` entry (`CommandSession.syncSession`).
    static func session(
        _ command: CommandSession, verbose: Bool = false, reportsProgress: Bool? = nil,
        events: (@Sendable (SyncSession.Event) -> Void)? = nil
    ) throws(TSyncError) -> SyncSession {
        try command.syncSession(
            remote: settings(ProcessInfo.processInfo.environment, verbose: verbose), events: events, reportsProgress: reportsProgress)
    }

    /// How the environment says to reach the remote: `TSYNC_TOKEN`, `TSYNC_TIMEOUT`, the CAs, the
    /// proxies, and `-v`'s description of each exchange.
    static func settings(_ environment: [String: String], verbose: Bool) throws(TSyncError) -> RemoteSettings {
        var timeout = RemoteSettings.defaultTimeout
        if let text = environment[timeoutVariable], !text.isEmpty {
            guard let seconds = Int(text), seconds >= 1 else {
                throw .usage("\(timeoutVariable)=\(text) is not a number of seconds (1 or more)")
            }
            timeout = .seconds(seconds)
        }
        var exchanges: RemoteExchange.Observer?
        if verbose { exchanges = { exchange in Console.note(describe(exchange)) } }
        return try RemoteSettings(
            tokenOverride: environment[tokenVariable], timeout: timeout, trust: try trust(environment),
            proxies: try ProxySettings(environment: environment), exchanges: exchanges)
    }

    /// `-v`: "GET http://…/tables/todo?… [via proxy HOST:PORT] -> 200 (12 ms, 3.4 kB)". Headers
    /// and bodies are never shown, so neither is a token or a password (nor the proxy's).
    static func describe(_ exchange: RemoteExchange) -> String {
        let milliseconds = exchange.duration.milliseconds
        let answer = exchange.status.map(String.init) ?? "no answer"
        var sizes: [String] = ["\(milliseconds) ms"]
        if exchange.bytesSent > 0 { sizes.append("sent \(exchange.bytesSent) B") }
        sizes.append("received \(exchange.bytesReceived) B")
        let via = exchange.proxy.map { " via proxy \($0)" } ?? ""
        return "\(exchange.method) \(exchange.url)\(via) -> \(answer) (\(sizes.joined(separator: ", ")))"
    }
}
