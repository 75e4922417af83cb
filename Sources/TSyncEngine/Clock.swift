import Foundation
import TSyncModel

extension Timestamp {
    /// The current time, truncated to the millisecond like every stored timestamp.
    static func now() -> Timestamp {
        Timestamp(millisecondsSinceEpoch: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
    }
}
