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

    /// Opens the storage backend for this location.
    public func open() throws -> any ServerStorage {
        switch self {
        case .sqlite(let path): try SQLiteStorage(path: path)
        }
    }
}
