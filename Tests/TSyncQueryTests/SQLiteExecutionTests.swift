import GRDB
import TSyncModel
import Testing

@testable import TSyncQuery

/// Runs renderings against a real SQLite database: the only proof that the SQL means what the
/// filter says.
struct SQLiteTable {
    static let schema = SQLSchema(dialect: .sqlite, bodyColumn: "body", systemColumns: SQLSchema.snakeCaseSystemColumns)
    static let renderer = SQLRenderer(schema: schema)

    /// id, createdAt, updatedAt, version, deleted, body
    static let records: [(String, String, String, String, Int, String)] = [
        (
            "a", "2026-01-01T00:00:00.000Z", "2026-01-03T00:00:00.000Z", "v1", 0,
            #"{"text":"Buy milk","n":5,"price":2.5,"done":false,"when":"2026-03-15T08:30:45.000Z","lo":1,"hi":2}"#
        ),
        (
            "b", "2026-01-01T00:00:01.000Z", "2026-01-03T00:00:00.000Z", "v1", 0,
            #"{"text":"buy bread","n":-3,"price":-2.5,"done":true,"when":"2025-12-31T23:59:59.999Z","lo":3,"hi":3}"#
        ),
        (
            "c", "2026-01-02T00:00:00.000Z", "2026-01-03T00:00:00.000Z", "v2", 1,
            #"{"text":"it's done","n":10,"price":10.0,"done":true,"lo":5,"hi":4}"#
        ),
        (
            "d", "2026-01-02T12:00:00.000Z", "2026-01-04T00:00:00.000Z", "v1", 0,
            #"{"text":"  Padded  ","n":0,"price":0.5,"done":null,"when":"2026-02-01"}"#
        ),
        (
            "e", "2025-06-30T00:00:00.000Z", "2026-01-02T00:00:00.000Z", "v3", 0,
            #"{"text":"\u00dcn\u00efcode \u2713","n":7,"price":7.75,"when":"not a date"}"#
        ),
        // Values of the "wrong" JSON kind: they must never match typed comparisons.
        (
            "f", "2026-01-05T00:00:00.000Z", "2026-01-05T00:00:00.000Z", "v1", 0,
            #"{"text":5,"n":"5","price":"2.5","done":"true","when":20260101}"#
        ),
        ("g", "2026-01-06T00:00:00.000Z", "2026-01-06T00:00:00.000Z", "v1", 0, "{}"),
        (
            "h", "2026-01-07T00:00:00.000Z", "2026-01-07T00:00:00.000Z", "v1", 0,
            #"{"text":"x') or 1=1 --","n":9223372036854775807,"price":1e300,"tags":["a","b"],"obj":{"k":1}}"#
        ),
    ]
    static let allIDs: Set<String> = Set(records.map(\.0))
    /// Records whose `text` is a JSON string.
    static let textIDs: Set<String> = ["a", "b", "c", "d", "e", "h"]

    let queue: DatabaseQueue

    init() throws {
        queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(
                sql: "CREATE TABLE t (id TEXT PRIMARY KEY, created_at TEXT, updated_at TEXT, version TEXT, deleted INTEGER, body TEXT)")
            for (id, created, updated, version, deleted, body) in Self.records {
                try db.execute(
                    sql: "INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)", arguments: [id, created, updated, version, deleted, body])
            }
        }
    }

    static func arguments(_ values: [SQLValue]) -> StatementArguments {
        StatementArguments(
            values.map { value -> (any DatabaseValueConvertible)? in
                switch value {
                case .null: nil
                case .bool(let flag): flag
                case .int(let number): number
                case .double(let number): number
                case .text(let text): text
                }
            })
    }

    func ids(_ filter: String) throws -> Set<String> {
        let fragment = try Self.renderer.whereClause(try ODataParser.parseFilter(filter))
        #expect(fragment.sql.filter { $0 == "?" }.count == fragment.arguments.count)
        return try queue.read { db in
            Set(try String.fetchAll(db, sql: "SELECT id FROM t WHERE \(fragment.sql)", arguments: Self.arguments(fragment.arguments)))
        }
    }

    func orderedIDs(orderBy: String, filter: String? = nil) throws -> [String] {
        var sql = "SELECT id FROM t"
        var arguments: [SQLValue] = []
        if let filter {
            let fragment = try Self.renderer.whereClause(try ODataParser.parseFilter(filter))
            sql += " WHERE \(fragment.sql)"
            arguments += fragment.arguments
        }
        let order = try Self.renderer.orderBy(try ODataParser.parseOrderBy(orderBy))
        sql += " ORDER BY \(order.sql)"
        arguments += order.arguments
        return try queue.read { db in try String.fetchAll(db, sql: sql, arguments: Self.arguments(arguments)) }
    }
}

/// A filter and the exact ids it must select from `SQLiteTable.records`.
struct FilterCase: Sendable, CustomTestStringConvertible {
    var filter: String
    var expected: Set<String>
    var testDescription: String { filter }

    init(_ filter: String, _ expected: Set<String>) {
        self.filter = filter
        self.expected = expected
    }
}

private let all = SQLiteTable.allIDs
private let texts = SQLiteTable.textIDs

@Suite struct SQLiteExecutionTests {
    let table: SQLiteTable

    init() throws {
        table = try SQLiteTable()
    }

    static let comparisons: [FilterCase] = [
        FilterCase("text eq 'Buy milk'", ["a"]),
        FilterCase("text ne 'Buy milk'", all.subtracting(["a"])),
        FilterCase("text gt 'a'", ["b", "c", "e", "h"]),  // byte order: 'B' < 'a' < 'b', ' ' first
        FilterCase("text lt 'B'", ["d"]),
        FilterCase("text ge 'it''s done'", ["c", "e", "h"]),
        FilterCase("text le 'Buy milk'", ["a", "d"]),
        FilterCase("n eq 5", ["a"]),
        FilterCase("n ne 5", all.subtracting(["a"])),
        FilterCase("n gt 0", ["a", "c", "e", "h"]),
        FilterCase("n ge 0", ["a", "c", "d", "e", "h"]),
        FilterCase("n lt 0", ["b"]),
        FilterCase("n le 0", ["b", "d"]),
        FilterCase("n eq 9223372036854775807", ["h"]),
        FilterCase("n gt -9223372036854775808", ["a", "b", "c", "d", "e", "h"]),
        FilterCase("price eq 2.5", ["a"]),
        FilterCase("price eq 10", ["c"]),
        FilterCase("price gt 7.75", ["c", "h"]),
        FilterCase("price lt 1e-1", ["b"]),
        FilterCase("done eq true", ["b", "c"]),
        FilterCase("done eq false", ["a"]),
        FilterCase("done ne true", ["a", "d", "e", "f", "g", "h"]),
        FilterCase("done", ["b", "c"]),
        FilterCase("done eq null", ["d", "e", "g", "h"]),
        FilterCase("done ne null", ["a", "b", "c", "f"]),
        FilterCase("null eq done", ["d", "e", "g", "h"]),
        FilterCase("text eq null", ["g"]),
        FilterCase("text ne null", all.subtracting(["g"])),
        FilterCase("tags eq null", all.subtracting(["h"])),
        FilterCase("n gt null", []),
        FilterCase("null eq null", all),
        // Two user fields compare as JSON values; two missing values are equal (null-safe eq).
        FilterCase("lo lt hi", ["a"]),
        FilterCase("lo gt hi", ["c"]),
        FilterCase("lo eq hi", ["b", "d", "e", "f", "g", "h"]),
        FilterCase("lo ne hi", ["a", "c"]),
        // Two fields of different kinds are neither equal nor ordered (docs/FILTERS.md), whatever
        // order SQLite (numbers < text) or jsonb (strings < numbers) gives them: f has 5 and "5".
        FilterCase("n gt text", []),
        FilterCase("text gt n", []),
        FilterCase("n ne text", all.subtracting(["g"])),  // both missing: equal
        // A field holding another JSON kind than the literal counts as null.
        FilterCase("text eq 5", ["f"]),
        FilterCase("n eq '5'", ["f"]),
        FilterCase("done eq 'true'", ["f"]),
        FilterCase("price eq '2.5'", ["f"]),
        FilterCase("n ge 'a'", []),
        // Injection-looking input is one bound string.
        FilterCase("text eq 'x'') or 1=1 --'", ["h"]),
        FilterCase("text eq '; DROP TABLE t; --'", []),
    ]

    @Test(arguments: comparisons) func comparison(_ test: FilterCase) throws {
        #expect(try table.ids(test.filter) == test.expected)
    }

    static let logic: [FilterCase] = [
        FilterCase("true", all),
        FilterCase("false", []),
        FilterCase("text eq 'Buy milk' or n eq -3", ["a", "b"]),
        FilterCase("done and n gt 5", ["c"]),
        FilterCase("not done", ["a"]),
        FilterCase("not (n gt 0)", ["b", "d"]),
        FilterCase("not (text eq 'Buy milk')", all.subtracting(["a"])),
        FilterCase("done eq true and (n lt 0 or n gt 5)", ["b", "c"]),
        FilterCase("n eq 5 or n eq -3 and done eq false", ["a"]),
        FilterCase("(n eq 5 or n eq -3) and done eq true", ["b"]),
        FilterCase("not done eq false", ["b", "c"]),
        // Both sides null (f, g) are equal: eq is null-safe.
        FilterCase("done eq (n gt 0)", ["c", "f", "g"]),
        FilterCase((0..<300).map { "id eq 'x\($0)'" }.joined(separator: " or ") + " or id eq 'e'", ["e"]),
    ]

    @Test(arguments: logic) func logical(_ test: FilterCase) throws {
        #expect(try table.ids(test.filter) == test.expected)
    }

    static let arithmetic: [FilterCase] = [
        FilterCase("n add 1 eq 6", ["a"]),
        FilterCase("n sub 1 eq -4", ["b"]),
        FilterCase("n mul 2 eq 20", ["c"]),
        FilterCase("n div 2 eq 3", ["e"]),  // integers divide to an integer
        FilterCase("n div 2 eq 2", ["a"]),
        FilterCase("n div 2.0 eq 2.5", ["a"]),
        FilterCase("n mul 1.0 div 2 eq 2.5", ["a"]),  // a real stays real (the server, binding 1.0 as a double, lost that on PostgreSQL)
        FilterCase("round(price) div 2 eq 1", ["a"]),  // round gives an integer (SQLite gave 3.0, so 1.5)
        FilterCase("price div 2 eq 1.25", ["a"]),
        FilterCase("n div -2 eq 1", ["b"]),  // truncates toward zero
        FilterCase("n mod 3 eq 1", ["c", "e", "h"]),
        FilterCase("n mod 3 eq 0", ["b", "d"]),
        FilterCase("price mod 2 eq 0.5", ["a", "d"]),
        FilterCase("price mod 2 eq -0.5", ["b"]),
        FilterCase("price mod 2 eq 0", ["c", "h"]),  // 1e300 is even
        FilterCase("7.5 mod -2 eq 1.5 and -7 mod 2 eq -1 and 7 mod 2.5 eq 2", all),
        FilterCase("-n eq 3", ["b"]),
        FilterCase("-price eq -2.5", ["a"]),
        FilterCase("- -n eq 5", ["a"]),
        FilterCase("n div 0 eq null", all),
        FilterCase("n mod 0 eq null", all),
        FilterCase("n add 1 mul 2 eq 7", ["a"]),
        FilterCase("(n add 1) mul 2 eq 12", ["a"]),
        FilterCase("n sub 1 sub 1 eq 3", ["a"]),
        FilterCase("n add 1 gt 0", ["a", "c", "d", "e", "h"]),  // overflow of h does not raise
        FilterCase("n add lo eq hi add 4", ["a", "d", "e", "f", "g", "h"]),  // null eq null
    ]

    @Test(arguments: arithmetic) func arithmeticOperator(_ test: FilterCase) throws {
        #expect(try table.ids(test.filter) == test.expected)
    }

    static let functions: [FilterCase] = [
        FilterCase("substringof('milk', text)", ["a"]),
        FilterCase("substringof('uy', text)", ["a", "b"]),
        FilterCase("substringof('UY', text)", []),
        FilterCase("substringof('', text)", texts),
        FilterCase("substringof('1=1', text)", ["h"]),
        FilterCase("startswith(text, 'Buy')", ["a"]),
        FilterCase("startswith(text, 'buy')", ["b"]),
        FilterCase("startswith(text, 'it''s')", ["c"]),
        FilterCase("startswith(text, '')", texts),
        FilterCase("not startswith(text, 'Buy')", texts.subtracting(["a"])),
        FilterCase("endswith(text, 'bread')", ["b"]),
        FilterCase("endswith(text, 'e')", ["c"]),
        FilterCase("endswith(text, '')", texts),
        FilterCase("endswith(text, 'a suffix longer than any of the texts')", []),
        FilterCase("endswith(text, 'Buy milk')", ["a"]),
        FilterCase("length(text) eq 9", ["b", "c", "e"]),  // characters, not bytes
        FilterCase("length(text) eq 10", ["d"]),
        FilterCase("length(text) eq null", ["f", "g"]),
        FilterCase("tolower(text) eq 'buy milk'", ["a"]),
        FilterCase("toupper(text) eq 'BUY BREAD'", ["b"]),
        FilterCase("trim(text) eq 'Padded'", ["d"]),
        FilterCase("indexof(text, 'milk') eq 4", ["a"]),
        FilterCase("indexof(text, 'B') eq 0", ["a"]),
        FilterCase("indexof(text, 'zzz') eq -1", texts),
        FilterCase("concat(text, '!') eq 'Buy milk!'", ["a"]),
        FilterCase("concat('[', concat(text, ']')) eq '[buy bread]'", ["b"]),
        FilterCase("concat(text, null) eq null", all),
        FilterCase("substring(text, 4) eq 'milk'", ["a"]),
        FilterCase("substring(text, 0, 3) eq 'Buy'", ["a"]),
        FilterCase("substring(text, 4, 2) eq 'mi'", ["a"]),
        FilterCase("substring(text, -2, 3) eq 'Buy'", ["a"]),
        FilterCase("substring(text, 1.9, 2) eq 'uy'", ["a", "b"]),
        FilterCase("substring(text, 0, -1) eq null", all),
        FilterCase("substring(text, 100) eq ''", texts),
        FilterCase("substring(text, 9223372036854775807, 9223372036854775807) eq ''", texts),
        FilterCase("replace(text, 'milk', 'eggs') eq 'Buy eggs'", ["a"]),
        FilterCase("replace(text, '', 'x') eq 'Buy milk'", ["a"]),
        FilterCase("year(when) eq 2026", ["a", "d"]),
        FilterCase("year(when) eq 2025", ["b"]),
        FilterCase("month(when) eq 2", ["d"]),
        FilterCase("month(when) eq 12", ["b"]),
        FilterCase("day(when) eq 15", ["a"]),
        FilterCase("day(when) eq 1", ["d"]),
        FilterCase("hour(when) eq 8", ["a"]),
        FilterCase("hour(when) eq 23", ["b"]),
        FilterCase("hour(when) eq null", ["c", "d", "e", "f", "g", "h"]),
        FilterCase("minute(when) eq 59", ["b"]),
        FilterCase("minute(when) eq 30", ["a"]),
        FilterCase("second(when) eq 45", ["a"]),
        FilterCase("second(when) eq 59", ["b"]),
        FilterCase("year(createdAt) eq 2025", ["e"]),
        FilterCase("month(updatedAt) eq 1", all),
        FilterCase("day(createdAt) eq 2", ["c", "d"]),
        FilterCase("hour(createdAt) eq 12", ["d"]),
        FilterCase("second(createdAt) eq 1", ["b"]),
        FilterCase("year(datetime'2026-05-06T07:08:09Z') eq 2026", all),
        FilterCase("round(price) eq 3", ["a"]),
        FilterCase("round(price) eq -3", ["b"]),  // half away from zero
        FilterCase("round(price) eq 8", ["e"]),
        FilterCase("round(price) eq 10", ["c"]),
        FilterCase("floor(price) eq 2", ["a"]),
        FilterCase("floor(price) eq -3", ["b"]),
        FilterCase("floor(price) eq 0", ["d"]),
        FilterCase("floor(price) eq 7", ["e"]),
        FilterCase("floor(price) eq 10", ["c"]),
        FilterCase("floor(n) eq 5", ["a"]),
        FilterCase("ceiling(price) eq 3", ["a"]),
        FilterCase("ceiling(price) eq -2", ["b"]),
        FilterCase("ceiling(price) eq 1", ["d"]),
        FilterCase("ceiling(price) eq 8", ["e"]),
        FilterCase("ceiling(price) eq 10", ["c"]),
        FilterCase("ceiling(n) eq -3", ["b"]),
        FilterCase("floor(price) eq null", ["f", "g"]),
        FilterCase("floor(price) eq 1e300", ["h"]),
        // Nested reuse: each operand evaluated once through a subquery, at every level.
        FilterCase("floor(ceiling(floor(price add 0.5) sub 0.25) mul 1.5) eq 4", ["a"]),
        FilterCase("(n add 1) mod (lo add 1) eq 0", ["a"]),
        FilterCase("endswith(concat(text, '!'), concat('k', '!'))", ["a"]),
        FilterCase("startswith(tolower(text), tolower('BUY'))", ["a", "b"]),
        FilterCase("year(concat('2026-01-01', substring(text, 0, 0))) eq 2026", texts),
        FilterCase("substring(text, n sub n add 4, lo add 1) eq 'mi'", ["a"]),
        FilterCase("ceiling(price) eq 1e300", ["h"]),
        FilterCase("round(price) eq 1e300", ["h"]),
        FilterCase("floor(n) eq 9223372036854775807", ["h"]),
        FilterCase("ceiling(-0.5) eq 0 and floor(-0.5) eq -1 and floor(0.5) eq 0 and ceiling(0.5) eq 1", all),
        FilterCase("substring(text, 1e300) eq ''", texts),
        FilterCase("substring(text, 1, 1e300) eq 'uy milk'", ["a"]),
    ]

    @Test(arguments: functions) func function(_ test: FilterCase) throws {
        #expect(try table.ids(test.filter) == test.expected)
    }

    static let systemProperties: [FilterCase] = [
        FilterCase("id eq 'a'", ["a"]),
        FilterCase("id ne 'a'", all.subtracting(["a"])),
        FilterCase("id gt 'f'", ["g", "h"]),
        FilterCase("id le 'b'", ["a", "b"]),
        FilterCase("deleted eq true", ["c"]),
        FilterCase("deleted", ["c"]),
        FilterCase("not deleted", all.subtracting(["c"])),
        FilterCase("deleted eq false", all.subtracting(["c"])),
        FilterCase("deleted ne true", all.subtracting(["c"])),
        FilterCase("version eq 'v2'", ["c"]),
        FilterCase("version eq null", []),
        FilterCase("createdAt lt datetime'2026-01-01T00:00:00Z'", ["e"]),
        FilterCase("createdAt ge datetime'2026-01-02T00:00:00Z'", ["c", "d", "f", "g", "h"]),
        FilterCase("updatedAt eq datetimeoffset'2026-01-03T01:00:00+01:00'", ["a", "b", "c"]),
        FilterCase("updatedAt gt '2026-01-05'", ["f", "g", "h"]),
        FilterCase("startswith(createdAt, '2026-01-0')", all.subtracting(["e"])),
        FilterCase("updatedAt eq createdAt", ["f", "g", "h"]),
        // The incremental-pull checkpoint of docs/DESIGN.md §2.1.
        FilterCase(
            "updatedAt gt datetime'2026-01-03T00:00:00.000Z' or (updatedAt eq datetime'2026-01-03T00:00:00.000Z' and id gt 'a')",
            ["b", "c", "d", "f", "g", "h"]),
    ]

    @Test(arguments: systemProperties) func systemProperty(_ test: FilterCase) throws {
        #expect(try table.ids(test.filter) == test.expected)
    }

    @Test func orderBy() throws {
        // NULL (missing) first, then numbers, then text (f holds "5").
        #expect(try table.orderedIDs(orderBy: "n") == ["g", "b", "d", "a", "e", "c", "h", "f"])
        #expect(try table.orderedIDs(orderBy: "n desc") == ["f", "h", "c", "e", "a", "d", "b", "g"])
        // Booleans are 1/0; ties (and nulls) are broken by id ascending.
        #expect(try table.orderedIDs(orderBy: "done desc") == ["f", "b", "c", "a", "d", "e", "g", "h"])
        #expect(try table.orderedIDs(orderBy: "updatedAt desc") == ["h", "g", "f", "d", "a", "b", "c", "e"])
        #expect(try table.orderedIDs(orderBy: "updatedAt, id desc") == ["e", "c", "b", "a", "d", "f", "g", "h"])
        #expect(try table.orderedIDs(orderBy: "id desc") == ["h", "g", "f", "e", "d", "c", "b", "a"])
        #expect(try table.orderedIDs(orderBy: "deleted desc, text") == ["c", "g", "f", "d", "a", "b", "h", "e"])
        #expect(try table.orderedIDs(orderBy: "price", filter: "n ge 0 and price lt 100") == ["d", "a", "e", "c"])
    }
}

/// SQLite parses with a fixed stack: a rendering nested too deeply fails when it is prepared
/// ("parser stack overflow"). Such filters must be refused as bad input before any SQL runs, and
/// filters of every shape up to a useful depth must run.
@Suite struct SQLiteParserDepthTests {
    /// Found by the filter fuzzer (scripts/fuzz.sh): 36 unary minuses made SQLite fail.
    static let fuzzFound = "year(d) eq 2026 and -n mod 3 ne " + String(repeating: "-", count: 35) + "round(n) and floor(-(2)) le 1"

    static func nested(_ open: String, _ inner: String, _ close: String, _ count: Int, _ tail: String = "") -> String {
        String(repeating: open, count: count) + inner + String(repeating: close, count: count) + tail
    }

    /// Each shape, and the depth it must still run at.
    static let shapes: [(String, Int, @Sendable (Int) -> String)] = [
        ("not", 20, { nested("not ", "done", "", $0) }),
        ("minus", 20, { nested("-", "n", "", $0, " eq 1") }),
        ("tolower", 20, { nested("tolower(", "text", ")", $0, " eq 'a'") }),
        ("substring", 20, { nested("substring(", "text", ", n, 2)", $0, " eq 'a'") }),
        ("floor", 5, { nested("floor(", "price", ")", $0, " eq 1") }),
        ("mod", 5, { "n" + String(repeating: " mod 3", count: $0) + " eq 1" }),
        ("add", 20, { "n" + String(repeating: " add 1", count: $0) + " eq 1" }),
        ("right add", 20, { nested("1 add (", "n", ")", $0, " eq 1") }),
        ("comparisons", 20, { nested("(done eq ", "lo", ")", $0) }),
        ("and", 20, { nested("done and (", "done", ")", $0) }),
    ]

    @Test func tooDeepIsBadInputNotAnSQLiteError() throws {
        let table = try SQLiteTable()
        #expect(throws: TSyncError.self) { try table.ids(Self.fuzzFound) }
        for (name, usable, make) in Self.shapes {
            var refusedAt: Int?
            for depth in 1...90 {
                guard let filter = try? ODataParser.parseFilter(make(depth)) else { break }
                do {
                    _ = try table.ids(make(depth))
                    #expect(refusedAt == nil, "\(name) runs at depth \(depth) but was refused at \(refusedAt ?? 0)")
                } catch let error as TSyncError {
                    #expect(error.message.contains("nests too deeply for SQLite"), "\(name) at depth \(depth): \(error)")
                    refusedAt = refusedAt ?? depth
                    _ = filter
                } catch {
                    Issue.record("\(name) at depth \(depth) reached SQLite and failed there: \(error)")
                    break
                }
            }
            #expect((refusedAt ?? .max) > usable, "\(name) is refused at depth \(refusedAt ?? 0), below \(usable)")
        }
    }
}
