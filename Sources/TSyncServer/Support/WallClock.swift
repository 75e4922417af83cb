import Foundation
import TSyncModel

/// The current time at the millisecond precision that `updatedAt`, token expiries and login windows use.
public enum WallClock {
    public static func now() -> Timestamp {
        Timestamp(millisecondsSinceEpoch: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
    }
}
