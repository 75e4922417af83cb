import Foundation
import TSyncModel

/// Where a store lives on disk: `<root>/.tsync/` holding the database and the configuration.
///
/// Found the way git finds `.git`: an explicit directory (`--store`/`-C`), else `TSYNC_DIR`, else the
/// nearest `.tsync/` from the working directory upwards. An explicit directory is taken as given
/// (no upward search), so a script that names a store never silently uses another one.
public struct StoreLocation: Sendable, Equatable {
    /// The store's directory name, found in the working directory or a parent.
    package static let directoryName = ".tsync"
    /// The SQLite database's file name in the store directory.
    package static let databaseFileName = "store.sqlite"
    /// The settings file's name in the store directory.
    package static let configurationFileName = "config.json"

    /// The `.tsync` directory itself.
    public let directory: String

    /// The directory that holds `.tsync/` (the "working tree").
    package var root: String { (directory as NSString).deletingLastPathComponent }
    /// The SQLite database of the store.
    public var databasePath: String { (directory as NSString).appendingPathComponent(Self.databaseFileName) }
    /// The store's `config.json`.
    package var configurationPath: String {
        (directory as NSString).appendingPathComponent(Self.configurationFileName)
    }

    /// A file the store may keep next to its database (e.g. a saved token), by name.
    package func file(named name: String) -> String { (directory as NSString).appendingPathComponent(name) }

    static let notAStore = "not a tsync store"

    /// Resolves the store for a command.
    /// - Parameters:
    ///   - explicit: the `--store`/`-C` value, if given.
    ///   - environment: the process environment (`TSYNC_DIR` is read from it).
    ///   - workingDirectory: where the upward search starts.
    public static func find(
        explicit: String?, environment: [String: String], workingDirectory: String
    ) throws(TSyncError) -> StoreLocation {
        if let explicit, !explicit.isEmpty {
            return try named(absolute(explicit, from: workingDirectory), source: "the path given")
        }
        if let fromEnvironment = environment["TSYNC_DIR"], !fromEnvironment.isEmpty {
            return try named(absolute(fromEnvironment, from: workingDirectory), source: "TSYNC_DIR")
        }
        var directory = standardized(workingDirectory)
        while true {
            let candidate = (directory as NSString).appendingPathComponent(directoryName)
            if isDirectory(candidate) { return try checked(StoreLocation(directory: candidate)) }
            let parent = (directory as NSString).deletingLastPathComponent
            if parent == directory || parent.isEmpty { break }
            directory = parent
        }
        throw TSyncError(
            .noStore, "\(notAStore): no \(directoryName)/ in \(standardized(workingDirectory)) or any parent directory",
            remedy: .createStore)
    }

    /// The location `tsync init DIR` creates: `DIR/.tsync`.
    public static func forInitializing(_ path: String, workingDirectory: String) -> StoreLocation {
        StoreLocation(directory: (absolute(path, from: workingDirectory) as NSString).appendingPathComponent(directoryName))
    }

    /// A directory named explicitly: the directory holding `.tsync/`, or the `.tsync` directory itself.
    private static func named(_ path: String, source: String) throws(TSyncError) -> StoreLocation {
        let nested = (path as NSString).appendingPathComponent(directoryName)
        if isDirectory(nested) { return try checked(StoreLocation(directory: nested)) }
        let location = StoreLocation(directory: path)
        if FileManager.default.fileExists(atPath: location.databasePath) { return location }
        throw TSyncError(.noStore, "\(notAStore): \(path) (from \(source)) has no \(directoryName)/", remedy: .createStore)
    }

    private static func checked(_ location: StoreLocation) throws(TSyncError) -> StoreLocation {
        guard FileManager.default.fileExists(atPath: location.databasePath) else {
            throw TSyncError(
                .failure, "the store in \(location.directory) has no \(databaseFileName)", remedy: .repairStore(root: location.root))
        }
        return location
    }

    /// `path` made absolute against `workingDirectory`, with `.` and `..` resolved.
    package static func absolute(_ path: String, from workingDirectory: String) -> String {
        if path.hasPrefix("/") { return standardized(path) }
        return standardized((workingDirectory as NSString).appendingPathComponent(path))
    }

    private static func standardized(_ path: String) -> String {
        let result = (path as NSString).standardizingPath
        return result.isEmpty ? "/" : result
    }

    static func isDirectory(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }
}
