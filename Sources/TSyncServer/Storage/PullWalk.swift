import TSyncModel
import TSyncQuery

/// One page of tsync's pull walk: pages ordered by `updatedAt, id`, from the start or after a
/// checkpoint (`FilterExpression.pullAfter`), without `$skip`, `$select` or a count: whose records,
/// from where, how many. Both backends read such a page their quick way, and read the walk's next
/// page ahead of its request (`PullReadAhead`).
struct PullWalk: Hashable, Sendable {
    /// Where a page of the walk starts: after this `updatedAt` and `id` (both empty: from the start).
    struct Start: Hashable, Sendable {
        var updatedAt: String
        var id: String
    }

    /// The table's key in its backend (`PostgresSchema.tableKey`, SQLite's table name).
    var table: String
    /// The user whose records these are, on a per-user table.
    var owner: String?
    var includeDeleted: Bool
    var start: Start
    var top: Int
    /// A group's walk on PostgreSQL (`tsync_pull_group_page`): nil for a table's or a user's.
    var view: PullPage.GroupView? = nil

    /// The order of the walk, which the `(updated_at, id)` index serves.
    static let order = [SortKey(field: "updatedAt"), SortKey(field: "id")]

    /// `query` of the table keyed `table` as a page of the walk; nil for any other query.
    init?(table: String, _ query: RecordQuery, scope: OwnerScope) {
        guard query.select == nil, query.orderBy == Self.order, (query.skip ?? 0) == 0, !query.includeTotalCount,
            let top = query.top, top <= Int(Int32.max)
        else { return nil }
        if let filter = query.filter {
            guard let position = filter.pullPosition else { return nil }
            start = Start(updatedAt: position.updatedAt.iso8601, id: position.id)
        } else {
            start = Start(updatedAt: "", id: "")
        }
        switch scope {
        case .shared: owner = nil
        case .owner(let name): owner = name
        }
        self.table = table
        self.includeDeleted = query.includeDeleted
        self.top = top
    }

    init(table: String, owner: String?, includeDeleted: Bool, start: Start, top: Int) {
        self.table = table
        self.owner = owner
        self.includeDeleted = includeDeleted
        self.start = start
        self.top = top
    }

    /// The page after this one, which ended at `last`.
    func next(after last: Start) -> PullWalk {
        var next = self
        next.start = last
        return next
    }

    /// `query` (a page of some walk of the same table) as this walk's page: its filter is this
    /// walk's start. Nil when the start's time cannot be read back.
    func query(like query: RecordQuery) -> RecordQuery? {
        var query = query
        query.top = top
        if start.updatedAt.isEmpty, start.id.isEmpty {
            query.filter = nil
        } else {
            guard let time = Timestamp(iso8601: start.updatedAt) else { return nil }
            query.filter = .pullAfter(updatedAt: time, id: start.id)
        }
        return query
    }
}

/// A page of the walk as a backend read it: how many records, and where the last one stands.
protocol PullWalkPage: Sendable {
    var walkedCount: Int { get }
    var walkEnd: PullWalk.Start? { get }
    /// The bytes the page holds (what a page read ahead keeps while it waits).
    var walkedBytes: Int { get }
}

extension RecordPage: PullWalkPage {
    var walkedCount: Int { count }
    /// A walk's page has no `$select`, so it is written; a page of items would read nothing ahead.
    var walkedBytes: Int { written?.bytes.count ?? Int.max }
    var walkEnd: PullWalk.Start? { end.map { PullWalk.Start(updatedAt: $0.updatedAt, id: $0.id) } }
}
