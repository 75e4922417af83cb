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
    /// Free space below which a write would likely fail (a transaction appends pages to the WAL).
    static let leastFreeBytes: UInt64 = 1 << 20

    /// Ready when a read of the schema succeeds and the path still names the file the server
    /// opened: a database removed or replaced under a running server would take every later write
    /// into a file nobody will open again, so that is not ready either. Nor is a database whose
    /// disk is full or read-only: it answers every read and fails every write.
    public func checkReady() async throws {
        if let openedFile, SQLiteFileIdentity(path: pool.path) != openedFile {
            throw TSyncError.failure(
                "the database file \(Identifiers.quoted(pool.path)) was removed or replaced since the server opened it")
        }
        var disk = statvfs()
        if statvfs(pool.path, &disk) == 0 {
            if disk.f_flag & UInt(ST_RDONLY) != 0 {
                throw DatabaseTakesNoWrites(
                    reason: "the database's file system is read-only",
                    detail: "the file system of \(Identifiers.quoted(pool.path)) is read-only: every write would fail")
            }
            let free = UInt64(disk.f_bavail) * UInt64(disk.f_frsize)
            if free < Self.leastFreeBytes {
                throw DatabaseTakesNoWrites(
                    reason: "the database's disk is full",
                    detail: "the disk of \(Identifiers.quoted(pool.path)) has \(free) bytes free: writes would fail; free some space")
            }
        }
        _ = try await pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") }
    }
}
