import Foundation

extension DatabaseLocation {
    /// The database as the start-up log names it: a SQLite file by its absolute path, a
    /// PostgreSQL URL without its password.
    public var logDescription: String {
        switch self {
        case .sqlite(let path): "sqlite:" + Self.absolute(path)
        case .postgres(let url): url.description
        }
    }

    /// The SQLite file that does not exist yet (so opening it creates it), as an absolute path.
    public var sqliteFileToCreate: String? {
        guard case .sqlite(let path) = self, !FileManager.default.fileExists(atPath: path) else { return nil }
        return Self.absolute(path)
    }

    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : URL(fileURLWithPath: path).standardizedFileURL.path
    }
}
