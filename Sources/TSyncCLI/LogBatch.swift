#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Dispatch
import Synchronization

/// The server's request lines, written to a descriptor in batches: one `write(2)` for the lines of
/// a few milliseconds, not one for each. A wake of held reads answers thousands of requests at
/// once, and each line's own system call was 2–3% of an answer's CPU (docs/PERFORMANCE.md,
/// "Fan-out"). Every line is still written, whole and in the order it was added: the bytes are
/// taken and written under one lock (`writing`), so two flushes cannot pass each other, while
/// adding a line waits only for the short lock around the buffer. A line that must not wait (the
/// server's own lines, warnings, errors) is written with what is pending (`writeNow`), and the
/// serve command flushes before it returns, so a clean stop loses nothing; a crash may lose the
/// last `delay` of request lines.
final class LogBatch: Sendable {
    static let standardError = LogBatch(descriptor: STDERR_FILENO, delay: .milliseconds(10))
    /// Pending bytes that are written at once, without waiting for the timer.
    static let capacity = 64 << 10

    private struct Pending {
        var bytes: [UInt8] = []
        /// A flush is on the timer: the next line need not ask for one.
        var scheduled = false
    }

    private let descriptor: Int32
    /// How long a line may wait for the ones after it.
    private let delay: DispatchTimeInterval
    private let pending = Mutex(Pending())
    /// Held while bytes are taken and written, so batches reach the descriptor in order.
    private let writing = Mutex(())

    init(descriptor: Int32, delay: DispatchTimeInterval) {
        self.descriptor = descriptor
        self.delay = delay
    }

    /// Adds `line` (a newline is added); it is written within `delay`, or at once when the
    /// pending bytes reach `capacity`.
    func add(_ line: String) {
        var line = line
        let (full, schedule) = line.withUTF8 { text in
            pending.withLock { pending -> (Bool, Bool) in
                pending.bytes.append(contentsOf: text)
                pending.bytes.append(UInt8(ascii: "\n"))
                let schedule = !pending.scheduled
                pending.scheduled = true
                return (pending.bytes.count >= Self.capacity, schedule)
            }
        }
        if full {
            flush()
        } else if schedule {
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [self] in flush() }
        }
    }

    /// Writes `line` now, after every line added before it.
    func writeNow(_ line: String) {
        writing.withLock { _ in
            var bytes = take()
            bytes.append(contentsOf: line.utf8)
            bytes.append(UInt8(ascii: "\n"))
            write(bytes)
        }
    }

    /// Writes every pending line.
    func flush() {
        writing.withLock { _ in write(take()) }
    }

    private func take() -> [UInt8] {
        pending.withLock { pending in
            pending.scheduled = false
            var bytes: [UInt8] = []
            swap(&bytes, &pending.bytes)
            return bytes
        }
    }

    private func write(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        _ = bytes.withUnsafeBufferPointer { Console.writeAll(descriptor, $0) }
    }
}
