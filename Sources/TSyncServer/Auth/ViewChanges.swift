import TSyncModel
import TSyncQuery

/// What an account's pull-shaped read of a `group:` or `role:` table gets besides the records it
/// may read now: records that left its view, as deletions, and records that came into it by a
/// change of its groups or roles, as they are now (docs/DESIGN.md §11.1). Each is placed at the
/// time of its change, a time of the table's clock, so an incremental pull meets it after its
/// checkpoint exactly once.
public struct ViewChanges: Sendable, Hashable {
    enum Rule: Sendable, Hashable {
        /// `group:FIELD`.
        case group(field: String)
        /// `role:R`.
        case role(String)
    }

    var account: String
    var rule: Rule
    /// The caller's groups and roles as read with its token. The page is read under them, and
    /// answered only if they still hold in the page's own read: a page never passes a change
    /// of labels it was not asked under.
    var groups: Set<String>
    var roles: Set<String>

    /// Whether the account may read the table's records now (false: a `role:` table whose role
    /// it lost, whose pull then gets only the deletions).
    var readsRecords: Bool {
        if case .role(let role) = rule { return roles.contains(role) }
        return true
    }

    /// Whether `query` is a pull's: deleted records included, in `updatedAt` order. Only such a
    /// read gets the changes; any other is answered from the records it may read now.
    static func applies(to query: RecordQuery) -> Bool {
        query.includeDeleted && query.orderBy.first == SortKey(field: "updatedAt")
    }

    /// Where a page starts: after (`at`, `id`), or at or after `at` when `id` is nil and
    /// `inclusive` (a filter this does not know is bounded below only, and the rest is left to
    /// the merge's check).
    struct Position: Sendable, Hashable {
        var at: String
        var id: String?
        var inclusive: Bool
    }

    /// The position `filter` starts at: tsync's checkpoint (`updatedAt ge T and (updatedAt gt T
    /// or updatedAt eq T and id gt I)`), a plain client's `updatedAt gt T` or `ge T`, or the
    /// lowest `updatedAt` any other filter admits; nil for the start.
    static func position(_ filter: FilterExpression?) -> Position? {
        guard let filter else { return nil }
        if let checkpoint = checkpoint(filter) { return checkpoint }
        if let strict = strictBound(filter) { return Position(at: strict.iso8601, id: nil, inclusive: false) }
        return PullBound.lowest(filter).map { Position(at: $0.iso8601, id: nil, inclusive: true) }
    }

    /// tsync's checkpoint as the filter or one of its AND terms: the view's group filter, and a
    /// pull's own filter, are ANDed with it. Read as a bound on time alone, the next page met the
    /// last one's changes at its time again (a tombstone twice, at each page's end).
    private static func checkpoint(_ filter: FilterExpression) -> Position? {
        if case .binary(.and, .binary(.ge, .field("updatedAt"), .literal(.dateTime(let from))), let after) = filter,
            case .binary(.or, .binary(.gt, .field("updatedAt"), .literal(.dateTime(let later))), let same) = after,
            case .binary(.and, .binary(.eq, .field("updatedAt"), .literal(.dateTime(let equal))), let idAfter) = same,
            case .binary(.gt, .field("id"), .literal(.string(let id))) = idAfter, from == later, later == equal
        {
            return Position(at: from.iso8601, id: id, inclusive: false)
        }
        if case .binary(.and, let left, let right) = filter { return checkpoint(left) ?? checkpoint(right) }
        return nil
    }

    /// `updatedAt gt T` as the filter or one of its AND terms.
    private static func strictBound(_ filter: FilterExpression) -> Timestamp? {
        switch filter {
        case .binary(.gt, .field("updatedAt"), .literal(.dateTime(let time))): return time
        case .binary(.and, let left, let right): return strictBound(left) ?? strictBound(right)
        default: return nil
        }
    }

    /// Whether a change placed at (`at`, `id`) comes after `position`.
    static func isAfter(_ position: Position?, at: String, id: String) -> Bool {
        guard let position else { return true }
        if let after = position.id { return at > position.at || (at == position.at && id > after) }
        return position.inclusive ? at >= position.at : at > position.at
    }

    /// One arm's rows (a kind of change, or the records readable now), in page order, and
    /// whether it stopped at its limit (then rows after its last may exist).
    struct Arm: Sendable {
        var items: [PageRecord]
        var full: Bool
    }

    /// The page of `arms` merged in (`updatedAt`, `id`) order: only up to the last row of every
    /// arm that stopped at its limit (beyond it that arm may hold rows this page did not see),
    /// one row per position, then `skip` and `top`.
    static func merge(_ arms: [Arm], skip: Int, top: Int?) -> [PageRecord] {
        var cut: Key?
        for arm in arms where arm.full {
            if let last = arm.items.last.map(key) { cut = cut.map { min($0, last) } ?? last }
        }
        var merged: [(Key, Int, PageRecord)] = []
        for (index, arm) in arms.enumerated() {
            for item in arm.items {
                let key = key(item)
                if let cut, cut < key { break }
                merged.append((key, index, item))
            }
        }
        merged.sort { ($0.0, $0.1) < ($1.0, $1.1) }
        var page: [PageRecord] = []
        var previous: Key?
        for (key, _, item) in merged where key != previous {
            previous = key
            page.append(item)
        }
        let rest = page.dropFirst(skip)
        return Array(top.map { rest.prefix($0) } ?? rest)
    }

    /// A row's place in page order.
    struct Key: Comparable, Hashable {
        var at: String
        var id: String
        static func < (a: Key, b: Key) -> Bool { (a.at, a.id) < (b.at, b.id) }
    }

    static func key(_ item: PageRecord) -> Key {
        switch item {
        case .stored(let id, _, let updatedAt, _, _, _): return Key(at: updatedAt, id: id)
        case .parsed(let record): return Key(at: record.system.updatedAt?.iso8601 ?? "", id: record.id)
        }
    }
}
