#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import GRDB
import TSyncModel

/// Which file a path named when the database was opened (device and inode).
struct SQLiteFileIdentity: Equatable, Sendable {
    let device: UInt64
    let inode: UInt64

    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}

extension SQLiteStorage {
    /// Ready when a read of the schema succeeds and the path still names the file the server
    /// opened: a database removed or replaced under a running server would take every later write
    /// into a file nobody will open again, so that is not ready either.
    public func checkReady() async throws {
        if let openedFile, SQLiteFileIdentity(path: pool.path) != openedFile {
            throw TSyncError.failure(
                "the database file \(Identifiers.quoted(pool.path)) was removed or replaced since the server opened it")
        }
        _ = try await pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") }
    }
}
