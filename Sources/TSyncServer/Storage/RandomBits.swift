import Foundation
import Synchronization

/// Random 64-bit values from the system's generator, fetched 512 at a time: a batch of a thousand
/// writes otherwise made a thousand `getrandom` calls, one per new version.
final class RandomBits: Sendable {
    static let shared = RandomBits()

    private struct Batch {
        var buffer = [UInt64](repeating: 0, count: 512)
        var used = 512
    }

    private let batch = Mutex(Batch())

    func next() -> UInt64 {
        batch.withLock { batch in
            if batch.used == batch.buffer.count {
                batch.buffer.withUnsafeMutableBytes { bytes in
                    if let start = bytes.baseAddress { arc4random_buf(start, bytes.count) }  // glibc 2.36: getrandom
                }
                batch.used = 0
            }
            defer { batch.used += 1 }
            return batch.buffer[batch.used]
        }
    }
}
