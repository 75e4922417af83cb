import TSyncModel
import TSyncQuery

/// libFuzzer target for the `$filter` parser and both SQL renderers (run by scripts/fuzz.sh).
///
/// Properties, beyond "never crashes": a filter that parses renders on SQLite and on PostgreSQL
/// without error (the parser has already type-checked it); its `odataText` parses back to an equal
/// expression, which renders to the same SQL; `$orderby` and `$select` never crash either.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFilter(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let keys = try? ODataParser.parseOrderBy(text) {
        for renderer in renderers { _ = try? renderer.orderBy(keys) }
    }
    _ = try? ODataParser.parseSelect(text)
    guard let filter = try? ODataParser.parseFilter(text) else { return 0 }
    let rendered = render(filter, text)
    let written = filter.odataText
    let reparsed: FilterExpression
    do {
        reparsed = try ODataParser.parseFilter(written)
    } catch {
        fatalError("odataText does not parse back: \(error)\nfilter: \(text)\nwritten: \(written)")
    }
    guard reparsed == filter else {
        fatalError("odataText parses back to another tree\nfilter: \(text)\nwritten: \(written)\nagain: \(reparsed.odataText)")
    }
    guard render(reparsed, written) == rendered else {
        fatalError("odataText renders to other SQL\nfilter: \(text)\nwritten: \(written)")
    }
    return 0
}

let renderers = [SQLDialect.sqlite, .postgres].map {
    SQLRenderer(schema: SQLSchema(dialect: $0, bodyColumn: "body", systemColumns: SQLSchema.snakeCaseSystemColumns))
}

func render(_ filter: FilterExpression, _ text: String) -> [SQLFragment] {
    renderers.map { renderer in
        do {
            return try renderer.whereClause(filter, firstArgumentIndex: 3)
        } catch {
            fatalError("a parsed filter does not render on \(renderer.schema.dialect): \(error)\nfilter: \(text)")
        }
    }
}
