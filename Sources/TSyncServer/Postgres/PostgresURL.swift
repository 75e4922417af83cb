import Foundation
import PostgresNIO
import TSyncModel

/// Where a PostgreSQL server database is: `postgres://USER[:PASS]@HOST[:PORT]/DB[?sslmode=MODE]`.
///
/// The spelling is libpq's, so the URL an operator already has for `psql` works unchanged.
/// A password on the command line shows up in `ps`, so it may come from `PGPASSWORD` instead
/// (as with `psql`); the URL's own password wins when both are given. A host that is a directory
/// (percent-encoded: `postgres://tsync@%2Fvar%2Frun%2Fpostgresql/tsync`) means the server's Unix
/// socket in it, as with libpq.
public struct PostgresURL: Sendable, Equatable, CustomStringConvertible {
    /// How much TLS to ask for, with libpq's names and meanings.
    public enum TLSMode: String, Sendable, CaseIterable {
        /// Plain TCP.
        case disable
        /// TLS when the server offers it, without checking its certificate (libpq's default).
        case prefer
        /// TLS or no connection, without checking the certificate.
        case require
        /// TLS, and the certificate must chain to a trusted root.
        case verifyCA = "verify-ca"
        /// TLS, and the certificate must also name the host.
        case verifyFull = "verify-full"
    }

    /// A host name or address, or the directory of the server's Unix socket (starts with `/`).
    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    public var database: String
    public var tlsMode: TLSMode

    public static let defaultPort = 5432

    /// Parses the URL. `environment` supplies `PGPASSWORD` when the URL carries no password: the
    /// caller's environment (the command line passes the process's), since libraries read none.
    public init(parsing text: String, environment: [String: String]) throws(TSyncError) {
        let example = "e.g. postgres://tsync:secret@127.0.0.1:5432/tsync"
        guard text.hasPrefix("postgres://") || text.hasPrefix("postgresql://"),
            let components = URLComponents(string: text)
        else {
            throw .usage(
                "invalid PostgreSQL URL \(Identifiers.quoted(Self.redacted(text))): use postgres://USER[:PASS]@HOST[:PORT]/DB, \(example)")
        }
        guard let host = components.host, !host.isEmpty else {
            throw .usage("the PostgreSQL URL has no host: \(example)")
        }
        guard let username = components.user, !username.isEmpty else {
            throw .usage("the PostgreSQL URL has no user name: \(example)")
        }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty, !database.contains("/") else {
            throw .usage("the PostgreSQL URL names no database (the path after the host): \(example)")
        }
        var tlsMode = TLSMode.prefer
        for item in components.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                guard let value = item.value, let mode = TLSMode(rawValue: value) else {
                    let modes = TLSMode.allCases.map(\.rawValue).joined(separator: ", ")
                    throw .usage("unknown sslmode \(Identifiers.quoted(item.value ?? "")) in the PostgreSQL URL: use one of \(modes)")
                }
                tlsMode = mode
            default:
                throw .usage("unknown parameter \(Identifiers.quoted(item.name)) in the PostgreSQL URL: only sslmode is understood")
            }
        }
        // IPv6 literals arrive bracketed from some Foundation versions.
        var bareHost = host
        if bareHost.hasPrefix("["), bareHost.hasSuffix("]") { bareHost = String(bareHost.dropFirst().dropLast()) }
        self.host = bareHost
        self.port = components.port ?? Self.defaultPort
        self.username = username
        self.password = components.password ?? environment["PGPASSWORD"]
        self.database = database
        self.tlsMode = tlsMode
    }

    /// The socket libpq would use for a directory host: `DIR/.s.PGSQL.PORT`.
    var unixSocketPath: String? {
        host.hasPrefix("/") ? host + (host.hasSuffix("/") ? "" : "/") + ".s.PGSQL.\(port)" : nil
    }

    /// The URL without its password, for messages and logs.
    public var description: String {
        if unixSocketPath != nil {
            return "postgres://\(username)@\(host.replacing("/", with: "%2F")):\(port)/\(database)"
        }
        let hostPart = host.contains(":") ? "[\(host)]" : host
        return "postgres://\(username)@\(hostPart):\(port)/\(database)"
    }

    /// The text of a URL someone typed, with any password replaced, for error messages.
    static func redacted(_ text: String) -> String {
        guard let at = text.lastIndex(of: "@"), let schemeEnd = text.range(of: "://")?.upperBound,
            schemeEnd < at, let colon = text[schemeEnd..<at].firstIndex(of: ":")
        else { return text }
        return String(text[..<colon]) + ":***" + String(text[at...])
    }

    /// How long opening one connection may take.
    static let connectTimeout: Duration = .seconds(10)

    /// The PostgresNIO pool configuration for this URL.
    func clientConfiguration(maximumConnections: Int) -> PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS
        switch tlsConfiguration {
        case nil: tls = .disable
        case let configuration? where tlsMode == .prefer: tls = .prefer(configuration)
        case let configuration?: tls = .require(configuration)
        }
        var configuration =
            if let unixSocketPath {
                PostgresClient.Configuration(unixSocketPath: unixSocketPath, username: username, password: password, database: database)
            } else {
                PostgresClient.Configuration(host: host, port: port, username: username, password: password, database: database, tls: tls)
            }
        configuration.options.maximumConnections = maximumConnections
        configuration.options.connectTimeout = Self.connectTimeout
        // PostgresNIO's keep-alive writes its `SELECT 1` without looking whether the connection
        // is still open, and never answers a statement written after it closed (`sentIfOpen`):
        // one that met a connection PostgreSQL was ending (a restart ends every idle one) held the
        // pool's run, and with it the stop of `serve`, for ever. An idle connection is closed
        // after a minute anyway, having been kept alive once.
        configuration.options.keepAliveBehavior = nil
        return configuration
    }

    /// The configuration of a single connection, made once at start to report what is wrong (the
    /// pool would retry quietly instead).
    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        let tls: PostgresConnection.Configuration.TLS
        switch tlsConfiguration {
        case nil: tls = .disable
        case let configuration? where tlsMode == .prefer: tls = .prefer(try NIOSSLContext(configuration: configuration))
        case let configuration?: tls = .require(try NIOSSLContext(configuration: configuration))
        }
        var configuration =
            if let unixSocketPath {
                PostgresConnection.Configuration(unixSocketPath: unixSocketPath, username: username, password: password, database: database)
            } else {
                PostgresConnection.Configuration(
                    host: host, port: port, username: username, password: password, database: database, tls: tls)
            }
        configuration.options.connectTimeout = .seconds(Int64(Self.connectTimeout.components.seconds))
        return configuration
    }

    /// The TLS settings libpq would use for `tlsMode`; nil for none.
    private var tlsConfiguration: TLSConfiguration? {
        var configuration = TLSConfiguration.makeClientConfiguration()
        switch tlsMode {
        case .disable: return nil
        case .prefer, .require: configuration.certificateVerification = .none
        case .verifyCA: configuration.certificateVerification = .noHostnameVerification
        case .verifyFull: configuration.certificateVerification = .fullVerification
        }
        return configuration
    }
}
