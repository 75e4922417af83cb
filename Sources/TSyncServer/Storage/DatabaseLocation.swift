import Foundation
import Logging
import TSyncModel

/// Where the server database lives, from `--db`: `sqlite:PATH` or `postgres://USER[:PASS]@HOST[:PORT]/DB`.
public enum DatabaseLocation: Sendable, Equatable {
    case sqlite(path: String)
    case postgres(PostgresURL)

    public static let defaultValue = "sqlite:tsync-server.db"

    /// `environment` is where a PostgreSQL URL without a password finds `PGPASSWORD`.
    public init(parsing text: String, environment: [String: String] = [:]) throws(TSyncError) {
        if text.hasPrefix("sqlite:") {
            var path = String(text.dropFirst("sqlite:".count))
            // Accept the URL-looking spelling too: sqlite:///abs/path and sqlite://rel/path.
            if path.hasPrefix("//") { path = String(path.dropFirst(2)) }
            guard !path.isEmpty else {
                throw .usage("sqlite: needs a file path, e.g. sqlite:tsync-server.db")
            }
            self = .sqlite(path: path)
        } else if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
            self = .postgres(try PostgresURL(parsing: text, environment: environment))
        } else {
            throw .usage(
                "unknown database \(Identifiers.quoted(PostgresURL.redacted(text))): use sqlite:PATH (e.g. sqlite:tsync-server.db) or postgres://USER@HOST[:PORT]/DB"
            )
        }
    }

    /// Opens the storage backend (creating or upgrading its schema), runs `body` with it, and
    /// closes it however `body` ends. A scope rather than open/close because a PostgreSQL pool
    /// needs a task running beside its users for as long as it is open.
    ///
    /// With `mustExist`, a SQLite file that is not there is an error rather than a new empty
    /// database (a typo in `--db` should not go unnoticed). A PostgreSQL database must always
    /// exist already: tsync creates its tables, not the database.
    ///
    /// `queryTimeoutSeconds` bounds every statement on PostgreSQL (`statement_timeout`); SQLite's
    /// reads are stopped by the server's deadline instead (`QueryDeadline`).
    ///
    /// `serving` is for `tsync serve`, which stays: on PostgreSQL it listens for other instances'
    /// writes (at `listenAt`, `--listen-db`, when given), and it is refused a SQLite file another
    /// server holds. The short-lived `tsync user` commands do neither.
    public func withStorage<Result: Sendable>(
        mustExist: Bool = false, logger: Logger = Logger(label: "tsync.storage"), queryTimeoutSeconds: Int? = nil,
        serving: Bool = false, listenAt: DatabaseLocation? = nil, _ body: @Sendable (any ServerStorage) async throws -> Result
    ) async throws -> Result {
        var listenURL: PostgresURL?
        switch (self, listenAt) {
        case (_, nil): break
        case (.postgres, .postgres(let url)?): listenURL = url
        case (.sqlite, _?): throw TSyncError.usage("--listen-db is for a PostgreSQL --db: SQLite's server wakes its own watchers")
        case (.postgres, .sqlite?): throw TSyncError.usage("--listen-db must be a postgres:// URL of the --db database")
        }
        switch self {
        case .sqlite(let path):
            if mustExist, !FileManager.default.fileExists(atPath: path) {
                throw TSyncError(.invalidInput, "no server database at \(Identifiers.quoted(path))", remedy: .checkDatabaseLocation)
            }
            let lock = serving ? try SQLiteServeLock(path: path) : nil
            defer { withExtendedLifetime(lock) {} }
            let storage = try SQLiteStorage(path: path)
            return try await storage.withCheckpoints { try await body(storage) }
        case .postgres(let url):
            return try await PostgresStorage.withStorage(
                url: url, logger: logger, statementTimeoutSeconds: queryTimeoutSeconds, listens: serving, listenURL: listenURL
            ) { storage in try await body(storage) }
        }
    }
}
