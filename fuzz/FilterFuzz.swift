import CSQLite
import TSyncModel
import TSyncQuery

/// libFuzzer target for the `$filter` parser and both SQL renderers (run by scripts/fuzz.sh).
///
/// Properties, beyond "never crashes": a filter that parses renders on SQLite and on PostgreSQL
/// without error (the parser has already type-checked it); its `odataText` parses back to an equal
/// expression, which renders to the same SQL; the SQLite rendering (and any `$orderby`'s) runs
/// without error on a real SQLite table of awkward records; `$orderby` and `$select` never crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFilter(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let keys = try? ODataParser.parseOrderBy(text) {
        for renderer in renderers {
            guard let order = try? renderer.orderBy(keys) else { fatalError("a parsed $orderby does not render: \(text)") }
            if renderer.schema.dialect == .sqlite { table.run("SELECT id FROM t ORDER BY " + order.sql, order.arguments, text) }
        }
    }
    _ = try? ODataParser.parseSelect(text)
    guard let filter = try? ODataParser.parseFilter(text) else { return 0 }
    guard let rendered = render(filter, text) else { return 0 }
    table.run("SELECT id FROM t WHERE " + rendered[0].sql, rendered[0].arguments, text)
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
    guard render(reparsed, written).map({ $0 == rendered }) ?? false else {
        fatalError("odataText renders to other SQL\nfilter: \(text)\nwritten: \(written)")
    }
    return 0
}

let renderers = [SQLDialect.sqlite, .postgres].map {
    SQLRenderer(schema: SQLSchema(dialect: $0, bodyColumn: "body", systemColumns: SQLSchema.snakeCaseSystemColumns))
}

/// Both renderings, or nil when the filter nests too deeply for SQLite (the one refusal a parsed
/// filter may meet; PostgreSQL must still render it).
func render(_ filter: FilterExpression, _ text: String) -> [SQLFragment]? {
    var fragments: [SQLFragment] = []
    var tooDeepForSQLite = false
    for renderer in renderers {
        do {
            fragments.append(try renderer.whereClause(filter, firstArgumentIndex: renderer.schema.dialect == .sqlite ? 1 : 3))
        } catch where renderer.schema.dialect == .sqlite && error.message.contains("nests too deeply for SQLite") {
            tooDeepForSQLite = true
        } catch {
            fatalError("a parsed filter does not render on \(renderer.schema.dialect): \(error)\nfilter: \(text)")
        }
    }
    return tooDeepForSQLite ? nil : fragments
}

/// An in-memory SQLite table laid out as the server's and the client's, holding values of every
/// JSON kind, so that rendered SQL is not only built but run.
final class SQLiteTable {
    private var db: OpaquePointer?
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    init() {
        guard sqlite3_open(":memory:", &db) == SQLITE_OK else { fatalError("cannot open SQLite") }
        let bodies = [
            #"{"text":"Buy milk","n":5,"price":2.5,"done":false,"when":"2026-03-15T08:30:45.000Z","a":1,"b":2}"#,
            #"{"text":"\u00dcn\u00efcode","n":-3,"price":1e300,"done":true,"when":"2026-02-01","a":"1","b":[1]}"#,
            #"{"text":5,"n":"5","price":null,"done":"true","when":20260101,"a":{"k":1},"b":true}"#,
            #"{"n":9223372036854775807,"price":-0.5,"a":-9223372036854775808}"#,
            "{}",
        ]
        exec("CREATE TABLE t (id TEXT PRIMARY KEY, created_at TEXT, updated_at TEXT, version TEXT, deleted INTEGER, body TEXT)")
        for (index, body) in bodies.enumerated() {
            let quoted = body.replacing("'", with: "''")
            exec("INSERT INTO t VALUES ('r\(index)', '2026-01-0\(index + 1)T00:00:00.000Z', '2026-01-0\(index + 1)T12:00:00.000Z', 'v1', \(index % 2), '\(quoted)')")
        }
    }

    private func exec(_ sql: String) {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { fatalError("setup failed: \(String(cString: sqlite3_errmsg(db)))") }
    }

    /// Prepares, binds and steps through every row; any SQLite error is a bug of the renderer.
    func run(_ sql: String, _ arguments: [SQLValue], _ input: String) {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else {
            fatalError("SQLite refuses the rendering: \(String(cString: sqlite3_errmsg(db)))\ninput: \(input)\nSQL: \(sql)")
        }
        defer { sqlite3_finalize(statement) }
        guard Int(sqlite3_bind_parameter_count(statement)) == arguments.count else {
            fatalError("\(arguments.count) arguments for \(sqlite3_bind_parameter_count(statement)) placeholders\ninput: \(input)")
        }
        for (offset, argument) in arguments.enumerated() {
            let index = Int32(offset + 1)
            switch argument {
            case .null: sqlite3_bind_null(statement, index)
            case .bool(let flag): sqlite3_bind_int64(statement, index, flag ? 1 : 0)
            case .int(let number): sqlite3_bind_int64(statement, index, number)
            case .double(let number): sqlite3_bind_double(statement, index, number)
            case .text(let text): sqlite3_bind_text(statement, index, text, -1, Self.transient)
            }
        }
        while true {
            let status = sqlite3_step(statement)
            if status == SQLITE_DONE { return }
            guard status == SQLITE_ROW else {
                fatalError("SQLite fails running the rendering: \(String(cString: sqlite3_errmsg(db)))\ninput: \(input)\nSQL: \(sql)")
            }
        }
    }
}

nonisolated(unsafe) let table = SQLiteTable()
