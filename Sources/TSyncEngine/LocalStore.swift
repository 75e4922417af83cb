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
/// - the sync layer (queue, completion, errors, server pages, checkpoints): `Sync/LocalStore+Push.swift`,
///   `Sync/LocalStore+Pull.swift`, `Sync/LocalStore+Conflicts.swift`, `Sync/LocalStore+Items.swift`,
///   `LocalStore+Errors.swift`, `LocalStore+Queries.swift`, `LocalStore+Purge.swift`
public final class LocalStore: Sendable {
    /// Where the store lives: its directory, database and configuration file.
    public let location: StoreLocation
    /// A pool (WAL: readers never wait); a read-only queue when the store cannot be written.
    let pool: any DatabaseWriter

    /// How long a write waits for another process holding the store before giving up.
    public static let defaultBusyTimeout: TimeInterval = 5

    /// Stores up to this size are checked page by page (`PRAGMA quick_check`) when opened: about
    /// 50 ms at this size, growing with the file, so larger stores rely on SQLite reporting a damaged
    /// page when a command reads it.
    package static let quickCheckLimit = 16 * 1024 * 1024

    private init(location: StoreLocation, pool: any DatabaseWriter) {
        self.location = location
        self.pool = pool
    }

    /// Opens an existing store, upgrading its schema when this tsync knows newer migrations.
    ///
    /// An existing database is never treated as a new one: an empty file, a file that is not
    /// SQLite, a database without tsync's tables or with damaged pages is refused as damaged, so
    /// a queue that was lost is reported instead of silently replaced by an empty one. A store that
    /// cannot be written (permissions, read-only medium) opens read-only: reads work, changes fail
    /// with a message saying why.
    public static func open(_ location: StoreLocation, busyTimeout: TimeInterval = defaultBusyTimeout) throws(TSyncError)
        -> LocalStore
    {
        let size = try existingSize(location)
        guard size > 0 else {
            throw TSyncError(
                .failure, "the store database \(location.databasePath) is empty (0 bytes): it is damaged, not a new store",
                remedy: .restoreStore)
        }
        let pool = try openPool(location, busyTimeout: busyTimeout)
        try verify(pool, location: location, pageCheck: size <= quickCheckLimit)
        try migrate(pool, location: location)
        return LocalStore(location: location, pool: pool)
    }

    /// Creates the database of a new store (`initialize` on a path with no database yet).
    private static func create(_ location: StoreLocation, busyTimeout: TimeInterval) throws(TSyncError) -> LocalStore {
        let pool = try openPool(location, busyTimeout: busyTimeout, newPageSize: pageSize)
        try migrate(pool, location: location)
        return LocalStore(location: location, pool: pool)
    }

    private static func existingSize(_ location: StoreLocation) throws(TSyncError) -> Int {
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: location.databasePath)
            return (attributes[.size] as? NSNumber)?.intValue ?? 0
        } catch {
            throw TSyncError(.noStore, "no store database at \(location.databasePath)", remedy: .createStore)
        }
    }

    /// Refuses a database that is not a tsync store or has damaged pages.
    private static func verify(_ pool: any DatabaseWriter, location: StoreLocation, pageCheck: Bool) throws(TSyncError) {
        let damaged = "the store database \(location.databasePath) is damaged or not a tsync store"
        do {
            try pool.read { db in
                if pageCheck {
                    let result = try String.fetchAll(db, sql: "PRAGMA quick_check")
                    guard result == ["ok"] else {
                        throw TSyncError(.failure, damagedPages(result, location: location), remedy: .restoreStore)
                    }
                }
                guard try !StoreSchema.migrator.appliedIdentifiers(db).isEmpty else {
                    throw TSyncError.failure("\(damaged): it has none of tsync's tables")
                }
            }
        } catch {
            throw StoreFailure.map(error, location: location)
        }
    }

    /// One line for a failed page check: where the store is, what is wrong (how many problems,
    /// the first one), and what to do. SQLite's own report runs to a hundred lines, its first row
    /// several lines long.
    static func damagedPages(_ report: [String], location: StoreLocation) -> String {
        let problems = report.flatMap { $0.split(whereSeparator: \.isNewline) }
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("***") }
        let first = problems.first.map { ", the first: \(Identifiers.quoted(String($0.prefix(120))))" } ?? ""
        let count = problems.count >= 100 ? "100 or more problems" : problems.count == 1 ? "1 problem" : "\(problems.count) problems"
        return "the store database \(location.databasePath) is damaged: SQLite's page check found \(count)\(first)"
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
        let store = existed ? try open(location, busyTimeout: busyTimeout) : try create(location, busyTimeout: busyTimeout)
        var configuration = try store.configuration()
        if let remote { configuration.remote = remote }
        if remote != nil || !FileManager.default.fileExists(atPath: location.configurationPath) {
            try configuration.save(to: location.configurationPath)
        }
        return (store, existed)
    }

    // MARK: Configuration

    /// The store's settings (`config.json`), as `tsync config` shows them.
    package func configuration() throws(TSyncError) -> StoreConfiguration {
        try StoreConfiguration.load(from: location.configurationPath)
    }

    /// Writes the store's settings back to `config.json`.
    package func saveConfiguration(_ configuration: StoreConfiguration) throws(TSyncError) {
        try configuration.save(to: location.configurationPath)
    }

    // MARK: Database access

    /// The page size of a new store's database. SQLite's default, 4 KiB, made a bulk insert or a
    /// pull into a new store spend as much CPU in the kernel as the import of the same records
    /// spends in all: each page goes to the WAL (two writes), is read back and written to the
    /// database when the WAL is checkpointed, and at 4 KiB that was some 130,000 system calls for
    /// 300,000 records. 16 KiB pages make a quarter of them. A store made with 4 KiB pages keeps
    /// them: SQLite changes the page size of a WAL database only by rewriting it whole.
    package static let pageSize = 16_384

    /// Pages the WAL holds before a commit copies them into the database (SQLite's
    /// `wal_autocheckpoint`; its default is 1,000). A checkpoint waits for the disk twice (the WAL,
    /// then the database, `fdatasync`) and copies every page committed since the last one. A
    /// pull commits a page of records at a time, rewriting the last pages of its B-trees at each
    /// commit: at 1,000 pages (16 MiB of `pageSize`) a clone of 100,000 records checkpointed twice
    /// on its way and again when the store closed, waiting each time and copying the same pages
    /// again. At 4,096 pages (64 MiB) it checkpoints once, at the end. The last connection to
    /// close still checkpoints the whole WAL, so what a command wrote is on the disk when it ends.
    package static let walCheckpointPages = 4_096

    /// - Parameter newPageSize: the page size, for a database that does not exist yet.
    private static func openPool(_ location: StoreLocation, busyTimeout: TimeInterval, newPageSize: Int? = nil) throws(TSyncError)
        -> any DatabaseWriter
    {
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        configuration.foreignKeysEnabled = true
        configuration.label = "tsync"
        if let newPageSize {
            // Before the database is put in WAL mode, which fixes its page size.
            configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA page_size = \(newPageSize)") }
        }
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA wal_autocheckpoint = \(walCheckpointPages)") }
        let path = location.databasePath
        let writable =
            FileManager.default.fileExists(atPath: path)
            ? access(path, W_OK) == 0 && access(location.directory, W_OK) == 0
            : true
        do {
            if writable { return try DatabasePool(path: path, configuration: configuration) }
            configuration.readonly = true
            do {
                // Works while a writer keeps the WAL's shared-memory file open.
                let queue = try DatabaseQueue(path: path, configuration: configuration)
                _ = try queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") }
                return queue
            } catch {
                // Otherwise WAL would have to create that file next to the database, which a
                // read-only directory forbids: read the file as it stands (`immutable`), which is
                // right as long as nobody writes it meanwhile, and nobody who opens it this way can.
                return try DatabaseQueue(path: immutableURI(path), configuration: configuration)
            }
        } catch {
            throw StoreFailure.map(error, location: location)
        }
    }

    /// `file:PATH?immutable=1`, with the characters a URI reserves percent-encoded.
    private static func immutableURI(_ path: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "?#%")
        return "file:" + (path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path) + "?immutable=1"
    }

    private static func migrate(_ pool: any DatabaseWriter, location: StoreLocation) throws(TSyncError) {
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
            case .SQLITE_READONLY:
                return .failure("the store \(location.databasePath) is read-only (check its permissions): it can be read, not changed")
            case .SQLITE_CANTOPEN, .SQLITE_PERM:
                return .failure("cannot open \(location.databasePath): check its permissions")
            case .SQLITE_FULL:
                return .failure(
                    "the disk holding \(location.databasePath) is full: the step that needed the space was not saved (earlier ones are kept); free some space and run the command again"
                )
            default:
                return .failure("the store database failed: \(error.message ?? "\(error.resultCode)")")
            }
        }
        return .failure("the store failed: \(error)")
    }
}
