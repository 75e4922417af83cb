import Foundation

extension String {
    /// Whether the two texts are the same UTF-8 bytes, as SQLite compares them (Swift's `==`
    /// takes "é" and "e" + U+0301 for one text): their lengths first, then their storage in place.
    /// `elementsEqual` of the `utf8` views went a byte at a time: a sixth of a no-op upsert, and a
    /// tenth of a claim's inserts into its set of items, whose ids differ in their last bytes.
    func sameBytes(as other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        let same = utf8.withContiguousStorageIfAvailable { a in
            other.utf8.withContiguousStorageIfAvailable { b in
                guard let x = a.baseAddress, let y = b.baseAddress else { return true }  // both empty
                return memcmp(x, y, a.count) == 0
            }
        }
        return (same ?? nil) ?? utf8.elementsEqual(other.utf8)
    }
}
