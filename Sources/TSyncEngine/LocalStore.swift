import Foundation
import GRDB
import TSyncModel

/// A local tsync store: the working copy of remote tables, the operation queue, the bases of
/// pending items, the error table and the pull checkpoints, in one SQLite database (WAL).
///
/// Every public method is one transaction: it either happens entirely or not at all, so an error
/// (bad input, a busy store, a crash) leaves the store as it was. Several processes may use one
/// store: writers wait for each other up to `busyTimeout`, readers never wait (WAL).
///
/// The methods are grouped by who calls them:
/// - local changes (`insert`, `update`, `delete`): `LocalStore+Changes.swift`
/// - reads (`record`, `query`, `tables`, `status`, `diff`): `LocalStore+Reads.swift`, `+Status`, `+Diff`
/// - the sync layer (queue, completion, errors, server pages, checkpoints): `LocalStore+Sync.swift`,
///   `LocalStore+Errors.swift`, `LocalStore+Queries.swift`, `LocalStore+Purge.swift`
public final class LocalStore: Sendable {
    public let location: StoreLocation
    let pool: DatabasePool

    /// How long a write waits for another process holding the store before giving up.
    public static let defaultBusyTimeout: TimeInterval = 5

    private init(location: StoreLocation, pool: DatabasePool) {
        self.location = location
        self.pool = pool
    }

    /// Opens an existing store, upgrading its schema when this tsync knows newer migrations.
    public static func open(_ location: StoreLocation, busyTimeout: TimeInterval = defaultBusyTimeout) throws(TSyncError)
        -> LocalStore
    {
        let pool = try openPool(location, busyTimeout: busyTimeout)
        try migrate(pool, location: location)
        return LocalStore(location: location, pool: pool)
    }

    /// Creates `location` (and its parent directories) if needed, the database and the
    /// configuration; an existing store is reopened and its configuration kept.
    /// - Returns: the store, and whether it already existed.
    public static func initialize(
        _ location: StoreLocation, remote: String?, busyTimeout: TimeInterval = defaultBusyTimeout
    ) throws(TSyncError) -> (store: LocalStore, existed: Bool) {
        if let remote { try StoreConfiguration.validateRemote(remote) }
        let existed = FileManager.default.fileExists(atPath: location.databasePath)
        do {
            try FileManager.default.createDirectory(atPath: location.directory, withIntermediateDirectories: true)
        } catch {
            throw .failure("cannot create \(location.directory): \(error.localizedDescription)")
        }
        let store = try open(location, busyTimeout: busyTimeout)
        var configuration = try store.configuration()
        if let remote { configuration.remote = remote }
        if remote != nil || !FileManager.default.fileExists(atPath: location.configurationPath) {
            try configuration.save(to: location.configurationPath)
        }
        return (store, existed)
    }

    // MARK: Configuration

    public func configuration() throws(TSyncError) -> StoreConfiguration {
        try StoreConfiguration.load(from: location.configurationPath)
    }

    public func saveConfiguration(_ configuration: StoreConfiguration) throws(TSyncError) {
        try configuration.save(to: location.configurationPath)
    }

    // MARK: Database access

    private static func openPool(_ location: StoreLocation, busyTimeout: TimeInterval) throws(TSyncError) -> DatabasePool {
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        configuration.foreignKeysEnabled = true
        configuration.label = "tsync"
        do {
            return try DatabasePool(path: location.databasePath, configuration: configuration)
        } catch {
            throw StoreFailure.map(error, location: location)
        }
    }

    private static func migrate(_ pool: DatabasePool, location: StoreLocation) throws(TSyncError) {
        let migrator = StoreSchema.migrator
        do {
            // Read first: read-only commands must not take the write lock on an up-to-date store.
            let (complete, superseded) = try pool.read { db in
                (try migrator.hasCompletedMigrations(db), try migrator.hasBeenSuperseded(db))
            }
            if superseded {
                throw TSyncError.failure(
                    "the store in \(location.directory) was written by a newer tsync; upgrade tsync to use it")
            }
            if !complete { try migrator.migrate(pool) }
        } catch {
            throw StoreFailure.map(error, location: location)
        }
    }

    /// Runs `body` in a read transaction (a consistent snapshot).
    func read<T>(_ body: (Database) throws -> T) throws(TSyncError) -> T {
        do {
            return try pool.read(body)
        } catch {
            throw StoreFailure.map(error, location: location)
        }
    }

    /// Runs `body` in one immediate write transaction: all of it or nothing.
    func write<T>(_ body: (Database) throws -> T) throws(TSyncError) -> T {
        do {
            return try pool.write(body)
        } catch {
            throw StoreFailure.map(error, location: location)
        }
    }
}

/// Turns database errors into messages a user can act on. TSyncErrors thrown inside a
/// transaction pass through unchanged (the transaction was rolled back).
enum StoreFailure {
    static let busyMessage = "the store is busy (another tsync is using it); try again"

    static func map(_ error: any Error, location: StoreLocation) -> TSyncError {
        if let error = error as? TSyncError { return error }
        if let error = error as? DatabaseError {
            switch error.resultCode {
            case .SQLITE_BUSY, .SQLITE_LOCKED:
                return .failure(busyMessage)
            case .SQLITE_CORRUPT, .SQLITE_NOTADB:
                return .failure("the store database \(location.databasePath) is damaged or not a tsync store")
            case .SQLITE_READONLY, .SQLITE_CANTOPEN, .SQLITE_PERM:
                return .failure("cannot open \(location.databasePath) for writing: check its permissions")
            case .SQLITE_FULL:
                return .failure("the disk holding \(location.databasePath) is full; nothing was changed")
            default:
                return .failure("the store database failed: \(error.message ?? "\(error.resultCode)")")
            }
        }
        return .failure("the store failed: \(error)")
    }
}
