import Foundation
import TSyncModel

/// Where the server database lives, from `--db`: `sqlite:PATH` now, `postgres://…` in a later release.
public enum DatabaseLocation: Sendable, Equatable {
    case sqlite(path: String)

    public static let defaultValue = "sqlite:tsync-server.db"

    public init(parsing text: String) throws(TSyncError) {
        if text.hasPrefix("sqlite:") {
            var path = String(text.dropFirst("sqlite:".count))
            // Accept the URL-looking spelling too: sqlite:///abs/path and sqlite://rel/path.
            if path.hasPrefix("//") { path = String(path.dropFirst(2)) }
            guard !path.isEmpty else {
                throw .usage("--db sqlite: needs a file path, e.g. --db sqlite:tsync-server.db")
            }
            self = .sqlite(path: path)
        } else if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
            throw .usage("PostgreSQL is not supported yet: use --db sqlite:PATH for now")
        } else {
            throw .usage("unknown database \(Identifiers.quoted(text)): use --db sqlite:PATH (e.g. sqlite:tsync-server.db)")
        }
    }

    /// Opens the storage backend for this location. With `mustExist`, a database that is not
    /// there is an error rather than a new empty one (a typo in `--db` should not go unnoticed).
    public func open(mustExist: Bool = false) throws -> any ServerStorage {
        switch self {
        case .sqlite(let path):
            if mustExist, !FileManager.default.fileExists(atPath: path) {
                throw TSyncError.invalidInput(
                    "no server database at \(Identifiers.quoted(path)): check --db (`tsync serve` and `tsync user add` create it)"
                )
            }
            return try SQLiteStorage(path: path)
        }
    }
}
