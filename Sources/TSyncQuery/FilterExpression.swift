import TSyncModel

/// A parsed OData v3 `$filter` (docs/DESIGN.md §4): the one representation that both the client's local
/// queries and the server's table reads render to SQL, so a filter means the same on both ends.
public indirect enum FilterExpression: Sendable, Equatable {
    case literal(FilterLiteral)
    /// A member name, e.g. `text`, `updatedAt`: a system property or a user field.
    case field(String)
    case not(FilterExpression)
    /// Unary minus.
    case negate(FilterExpression)
    case binary(BinaryOperator, FilterExpression, FilterExpression)
    case function(FilterFunction, [FilterExpression])
}

public enum FilterLiteral: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    /// `datetime'…'` and `datetimeoffset'…'`, normalized to a UTC instant.
    case dateTime(Timestamp)
}

public enum BinaryOperator: String, Sendable {
    case eq, ne, gt, ge, lt, le, and, or, add, sub, mul, div, mod
}

public enum FilterFunction: String, Sendable, CaseIterable {
    case substringof, startswith, endswith, length, tolower, toupper, trim, indexof, concat, substring, replace
    case year, month, day, hour, minute, second, round, floor, ceiling
}

/// One `$orderby` key.
public struct SortKey: Sendable, Equatable {
    public var field: String
    public var descending: Bool

    public init(field: String, descending: Bool = false) {
        self.field = field
        self.descending = descending
    }
}

extension BinaryOperator {
    /// OData v3 binding strength (higher binds tighter): or < and < eq/ne < gt/ge/lt/le < add/sub <
    /// mul/div/mod. Unary `not` and `-` bind tighter than all of these.
    var precedence: Int {
        switch self {
        case .or: 1
        case .and: 2
        case .eq, .ne: 3
        case .gt, .ge, .lt, .le: 4
        case .add, .sub: 5
        case .mul, .div, .mod: 6
        }
    }

    var isLogical: Bool { self == .and || self == .or }
    var isComparison: Bool { precedence == 3 || precedence == 4 }
    var isArithmetic: Bool { precedence >= 5 }
}
