import Foundation

/// Random 64-bit values from the system's generator, fetched 512 at a time: a batch of a thousand
/// writes otherwise made a thousand `getrandom` calls, one per new version.
final class RandomBits: @unchecked Sendable {  // `lock` guards `buffer` and `used`
    static let shared = RandomBits()

    private let lock = NSLock()
    private var buffer = [UInt64](repeating: 0, count: 512)
    private var used = 512

    func next() -> UInt64 {
        lock.withLock {
            if used == buffer.count {
                buffer.withUnsafeMutableBytes { bytes in
                    if let start = bytes.baseAddress { arc4random_buf(start, bytes.count) }  // glibc 2.36: getrandom
                }
                used = 0
            }
            defer { used += 1 }
            return buffer[used]
        }
    }
}
