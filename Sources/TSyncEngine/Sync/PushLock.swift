#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Foundation
import TSyncModel

/// One push at a time per store: an exclusive `flock` on `.tsync/push.lock`, held while a push
/// runs.
///
/// It is what makes an operation found "in flight" unambiguous: with the lock held, no live
/// process is sending it, so it is a leftover of a push that died (killed, crashed) and is sent
/// again with the item saved when it was claimed. The kernel drops the lock when the process
/// dies, so a killed push never blocks the next one. Local changes, reads and pulls of pages do
/// not take it.
final class PushLock {
    private let descriptor: Int32

    /// Waits up to `timeout` for the lock.
    init(store: LocalStore, timeout: TimeInterval = 10) throws(TSyncError) {
        let path = store.location.file(named: "push.lock")
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw .failure("cannot open \(path): \(String(cString: strerror(errno)))")
        }
        let deadline = Date().addingTimeInterval(timeout)
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, Date() < deadline else {
                close(descriptor)
                throw .failure("another tsync is pushing from this store; try again when it has finished")
            }
            usleep(50_000)
        }
        self.descriptor = descriptor
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
