import Synchronization
import TSyncModel
import TSyncQuery

/// The query options of `GET /tables/{table}`, checked: `$filter`, `$orderby`, `$top`, `$skip`,
/// `$select`, `$inlinecount`, `__includeDeleted`. Unknown parameters are ignored, as Mobile Apps
/// clients send some of their own (e.g. `__systemproperties`).
struct ListOptions {
    var query: RecordQuery

    /// The parameters a read understands: the only ones copied into the `Link` to the next page,
    /// each bounded here, so a client cannot make the server echo an unbounded header.
    static let parameterNames: Set<String> = ["$filter", "$orderby", "$top", "$skip", "$select", "$inlinecount", "__includeDeleted"]

    /// `filters` keeps the filters parsed lately (the list route's), nil to parse every one.
    init(_ parameters: QueryString, configuration: ServerConfiguration, filters: ParsedFilters? = nil) throws {
        query = RecordQuery()
        if let filter = try parameters.single("$filter"), filter.contains(where: Self.isText) {
            try Self.checkLength("$filter", filter, configuration)
            query.filter = try filters?.filter(filter) ?? ODataParser.parseFilter(filter)
        }
        if let orderBy = try parameters.single("$orderby"), orderBy.contains(where: Self.isText) {
            try Self.checkLength("$orderby", orderBy, configuration)
            // Counted before parsing: each field costs a sort key per matching record.
            // A `,` byte is a `,` character or part of one that is not; none but the count of
            // characters is asked for when the bytes allow it (the character split costs).
            let commas = orderBy.utf8.count { $0 == UInt8(ascii: ",") }
            let fields =
                commas < configuration.maximumOrderByFields
                ? commas + 1 : orderBy.split(separator: ",", omittingEmptySubsequences: false).count
            guard fields <= configuration.maximumOrderByFields else {
                throw APIError.badRequest(
                    "$orderby names \(fields) fields; at most \(configuration.maximumOrderByFields) are allowed (ties are always broken by id)"
                )
            }
            query.orderBy = try filters?.orderBy(orderBy) ?? ODataParser.parseOrderBy(orderBy)
        }
        if let select = try parameters.single("$select"), select.contains(where: Self.isText) {
            try Self.checkLength("$select", select, configuration)
            query.select = try ODataParser.parseSelect(select)
        }
        let top = try Self.count("$top", try parameters.single("$top"))
        if let top, top > configuration.maximumPageSize {
            var refusal = APIError.badRequest(
                "$top \(top) is over the maximum page size \(configuration.maximumPageSize): ask for fewer and follow the Link header")
            // A tsync client asks again for as many as this (docs/DESIGN.md §4).
            refusal.headers[.maximumTop] = String(configuration.maximumPageSize)
            throw refusal
        }
        query.top = configuration.pageSize(top: top)
        query.skip = try Self.count("$skip", try parameters.single("$skip"))
        switch try parameters.single("$inlinecount") {
        case nil, "none": break
        case "allpages": query.includeTotalCount = true
        case let other?: throw APIError.badRequest("invalid $inlinecount \(Identifiers.quoted(other)): use allpages or none")
        }
        switch try parameters.single("__includeDeleted")?.lowercased() {
        case nil, "false": break
        case "true": query.includeDeleted = true
        case let other?: throw APIError.badRequest("invalid __includeDeleted \(Identifiers.quoted(other)): use true or false")
        }
    }

    /// Refuses an option longer than `maximumFilterLength` characters. Counted in bytes first: a
    /// text of no more bytes has no more characters, and counting characters costs.
    private static func checkLength(_ name: String, _ text: String, _ configuration: ServerConfiguration) throws(APIError) {
        let limit = configuration.maximumFilterLength
        guard text.utf8.count <= limit || text.count <= limit else {
            throw .badRequest("\(name) is longer than \(limit) characters")
        }
    }

    /// Whether an option's text is more than spaces and tabs (a blank one is as if absent), found
    /// without trimming a copy of it.
    private static func isText(_ character: Character) -> Bool { character != " " && character != "\t" }

    /// A non-negative integer option. Large values are fine for `$skip` (SQLite skips rows) but
    /// must still fit a 32-bit count, which is more than any table here holds.
    private static func count(_ name: String, _ text: String?) throws(APIError) -> Int? {
        guard let text else { return nil }
        guard let value = Int32(text.trimmingSpaces()), value >= 0 else {
            throw .badRequest("invalid \(name) \(Identifiers.quoted(text)): use a whole number from 0 to \(Int32.max)")
        }
        return Int(value)
    }
}

/// `$filter`s and `$orderby`s parsed lately, by their text. Watchers that follow a table ask again
/// after each page from the checkpoint that page left them at, and watchers given the same page ask
/// with the same text: parsing it once for all of them takes most of what a request's options
/// cost. Their `$orderby` is the same on every request, and was parsed each time (2% of the
/// server's CPU following a table, docs/PERFORMANCE.md). At most `capacity` of each are kept
/// (then all are dropped), each of at most `longestKept` bytes (a checkpoint's filter is about
/// 200), so what clients can make it keep stays small; a text that fails to parse is not kept.
final class ParsedFilters: Sendable {
    static let capacity = 256
    static let longestKept = 512
    private let filters = Kept<FilterExpression>()
    private let orders = Kept<[SortKey]>()

    /// `ODataParser.parseFilter(text)`, parsed once while kept.
    func filter(_ text: String) throws(TSyncError) -> FilterExpression {
        try filters.value(text) { text throws(TSyncError) in try ODataParser.parseFilter(text) }
    }

    /// `ODataParser.parseOrderBy(text)`, parsed once while kept.
    func orderBy(_ text: String) throws(TSyncError) -> [SortKey] {
        try orders.value(text) { text throws(TSyncError) in try ODataParser.parseOrderBy(text) }
    }

    private final class Kept<Value: Sendable>: Sendable {
        private let parsed = Mutex<[String: Value]>([:])

        func value(_ text: String, parse: (String) throws(TSyncError) -> Value) throws(TSyncError) -> Value {
            guard text.utf8.count <= ParsedFilters.longestKept else { return try parse(text) }
            if let known = parsed.withLock({ $0[text] }) { return known }
            let value = try parse(text)
            parsed.withLock { parsed in
                if parsed.count >= ParsedFilters.capacity { parsed.removeAll(keepingCapacity: true) }
                parsed[text] = value
            }
            return value
        }
    }
}
