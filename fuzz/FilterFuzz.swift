// libFuzzer target: the OData $filter / $orderby / $select parsers and both SQL renderers.
// Property: no input crashes; a filter that parses renders on both dialects or is refused with a
// TSyncError, never anything else.
import TSyncModel
import TSyncQuery

private let renderers = [SQLDialect.sqlite, .postgres].map { dialect in
    SQLRenderer(schema: SQLSchema(dialect: dialect, bodyColumn: "body", systemColumns: SQLSchema.snakeCaseSystemColumns))
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFilter(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let filter = try? ODataParser.parseFilter(text) {
        for renderer in renderers {
            if let fragment = try? renderer.whereClause(filter) {
                guard !fragment.sql.isEmpty else { fatalError("an empty WHERE clause") }
            }
        }
    }
    if let keys = try? ODataParser.parseOrderBy(text) {
        for renderer in renderers { _ = try? renderer.orderBy(keys) }
    }
    _ = try? ODataParser.parseSelect(text)
    return 0
}
