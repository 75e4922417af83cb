#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import TSyncModel

/// One `tsync serve` per SQLite file: the server holds an exclusive `flock` on the database file
/// for as long as it runs, and a second server is refused it. Two servers on one file write
/// correctly (SQLite's own locks), but each wakes only its own live readers, so a watcher on one
/// would not hear of a write through the other for as long as it waits. Several instances are
/// what PostgreSQL is for (`PostgresChangeListener`).
///
/// `flock`, not `fcntl`: SQLite takes its own locks on the file with `fcntl`, which the two do not
/// touch, and an `fcntl` lock of ours would be dropped when SQLite closes any descriptor of the
/// file. The `tsync user` commands take no lock: they are short writes, which SQLite serializes.
final class SQLiteServeLock: Sendable {
    private let descriptor: Int32

    /// Takes the lock on the file at `path`, creating the (empty) file when there is none.
    init(path: String) throws {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            throw TSyncError.failure("cannot open the server database \(Identifiers.quoted(path)): \(reason)")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let busy = errno == EWOULDBLOCK
            let reason = String(cString: strerror(errno))
            close(descriptor)
            guard busy else { throw TSyncError.failure("cannot lock the server database \(Identifiers.quoted(path)): \(reason)") }
            throw TSyncError.failure(
                "another tsync serve is serving \(Identifiers.quoted(path)): a SQLite database takes one server; "
                    + "for several instances, use PostgreSQL (--db postgres://USER@HOST/DB)")
        }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }
}
