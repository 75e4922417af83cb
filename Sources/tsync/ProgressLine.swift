#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Foundation
import TSyncEngine

/// A one-line progress display on stderr for long pushes and pulls: only on a terminal, never with
/// `-q`, redrawn at most ten times a second, and erased when the command ends so the summary line
/// stands alone.
final class ProgressLine: @unchecked Sendable {  // `lock` guards the mutable state
    private let enabled: Bool
    private let lock = NSLock()
    private var lastDraw = 0.0
    private var drawn = false

    init(quiet: Bool) {
        enabled = !quiet && isatty(STDERR_FILENO) == 1
    }

    /// A `SyncProgress` that draws "VERB done/total" (or "VERB done" when the total is unknown).
    func reporter(_ verb: String) -> SyncProgress? {
        guard enabled else { return nil }
        return { [self] done, total in
            let now = Date().timeIntervalSince1970
            let draw = lock.withLock { () -> Bool in
                guard now - lastDraw >= 0.1 || (total.map { done >= $0 } ?? false) else { return false }
                lastDraw = now
                drawn = true
                return true
            }
            guard draw else { return }
            var text = "\r\u{1B}[K\(verb) \(done)"
            if let total, total > 0 {
                text += "/\(total) (\(done * 100 / total)%)"
            }
            FileHandle.standardError.write(Data(text.utf8))
        }
    }

    /// Draws the progress events of a `SyncSession` and erases the line when a push or pull ends.
    func handle(_ event: SyncSession.Event) {
        switch event {
        case .progress(let phase, let done, let total): reporter(phase)?(done, total)
        case .pushed, .pulled: finish()
        }
    }

    /// Erases the line, if anything was drawn.
    func finish() {
        guard enabled, lock.withLock({ drawn }) else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}
