import TSyncModel

/// A read of one table with the OData query options of the protocol, parsed and checked: what
/// `tsync query` asks of the local store and what `GET /tables/{table}` asks of the server's
/// storage. Each renders it into its own SQL with `SQLRenderer`.
public struct RecordQuery: Sendable {
    public var filter: FilterExpression?
    public var orderBy: [SortKey]
    /// At most this many records; nil for all of them.
    public var top: Int?
    public var skip: Int?
    /// Members to keep in the output (system properties may be named); nil keeps everything.
    public var select: [String]?
    /// Soft-deleted records too (the server's `__includeDeleted`; local records never are).
    public var includeDeleted: Bool
    /// Count the matching records over all pages as well (the server's `$inlinecount=allpages`).
    public var includeTotalCount: Bool

    public init(
        filter: FilterExpression? = nil, orderBy: [SortKey] = [], top: Int? = nil, skip: Int? = nil, select: [String]? = nil,
        includeDeleted: Bool = false, includeTotalCount: Bool = false
    ) {
        self.filter = filter
        self.orderBy = orderBy
        self.top = top
        self.skip = skip
        self.select = select
        self.includeDeleted = includeDeleted
        self.includeTotalCount = includeTotalCount
    }

    /// Parses the options' text (`$filter`, `$orderby`, `$select` syntax).
    public init(filter: String?, orderBy: String?, top: Int?, skip: Int?, select: String?) throws(TSyncError) {
        self.init(
            filter: try filter.map { text throws(TSyncError) in try ODataParser.parseFilter(text) },
            orderBy: try orderBy.map { text throws(TSyncError) in try ODataParser.parseOrderBy(text) } ?? [],
            top: top, skip: skip,
            select: try select.map { text throws(TSyncError) in try ODataParser.parseSelect(text) })
    }

    /// The member names the query refers to (filter, order and select), in first-use order.
    public var fieldNames: [String] {
        var names: [String] = []
        func add(_ name: String) { if !names.contains(name) { names.append(name) } }
        func walk(_ expression: FilterExpression) {
            switch expression {
            case .literal: break
            case .field(let name): add(name)
            case .not(let inner), .negate(let inner): walk(inner)
            case .binary(_, let left, let right):
                walk(left)
                walk(right)
            case .function(_, let arguments): arguments.forEach(walk)
            }
        }
        if let filter { walk(filter) }
        orderBy.forEach { add($0.field) }
        select?.forEach(add)
        return names
    }

    /// A record's wire object reduced to the selected members (all of it without `$select`).
    public func project(_ object: [String: JSONValue]) -> [String: JSONValue] {
        guard let select else { return object }
        var projected: [String: JSONValue] = [:]
        for name in select { if let value = object[name] { projected[name] = value } }
        return projected
    }
}
