import Testing
import TSyncModel
import TSyncQuery

@testable import TSyncServer

/// The two renderings of TSyncQuery must select the same records: many generated filters, run on
/// SQLite and on PostgreSQL over the same awkward records (values of the wrong kind, nulls,
/// missing fields, quotes, non-ASCII, numbers with and without fractions).
// Needs a PostgreSQL server: TSYNC_TEST_POSTGRES_URL (scripts/test.sh starts one).
@Suite(.enabled(if: PostgresTestDatabase.isConfigured, "TSYNC_TEST_POSTGRES_URL is not set: no PostgreSQL to test against"))
struct BackendAgreementTests {
    static let texts: [JSONValue?] = ["", "abc", "Abc", "a'b", "ÄÖü", "  pad ", "10", "x%_y", .null, nil, 5, true]
    static let numbers: [JSONValue?] = [-3, 0, 2, 7, 10, 2.5, -0.5, 1000, "5", .null, nil, false]
    static let flags: [JSONValue?] = [true, false, .null, nil, "true", 1]
    static let dates: [JSONValue?] = [
        "2026-01-31T09:30:05.000Z", "2025-12-31T23:59:59.999Z", "2026-06-15T00:00:00.000Z", "not a date", .null, nil,
    ]

    static var records: [Record] {
        (0..<48).map { index in
            var fields: [String: JSONValue] = [:]
            fields["s"] = texts[index % texts.count]
            fields["n"] = numbers[(index * 5) % numbers.count]
            fields["b"] = flags[(index * 7) % flags.count]
            fields["d"] = dates[(index * 11) % dates.count]
            return Record(id: "r\(index)", fields: fields)
        }
    }

    /// Cases a random walk may miss: case mapping beyond ASCII, LIKE-like characters, quotes.
    static let pinned = [
        "tolower(s) eq 'äöü'", "toupper(s) eq 'ÄÖÜ'", "tolower(s) eq 'abc'", "toupper(s) eq 'ABC'",
        "substringof('%', s)", "startswith(s, '_')", "endswith(s, '''b')", "length(s) eq 3", "indexof(s, 'Ö') eq 1",
        "s gt 'Z'", "s lt 'a'", "trim(s) eq 'pad'", "substring(s, 1, 1) eq 'Ö'",
        // Found by FilterOracleTests: PostgreSQL divided round(2.5) as an integer, SQLite as a real.
        "(round(round(n)) div -3) ge 0", "(floor(n) div 2) eq 1", "(ceiling(n) div 2) lt 0", "(round(n) mod 2) eq 1",
    ]

    @Test func generatedFiltersSelectTheSameRecordsOnBothBackends() async throws {
        var generator = FilterGenerator(seed: 0x7453_796E_6321)
        let filters = Self.pinned + (0..<400).map { _ in generator.condition(depth: 3) }
        let sqlite = try await Self.run(filters, on: .sqlite)
        let postgres = try await Self.run(filters, on: .postgres)
        var disagreements: [String] = []
        for (index, filter) in filters.enumerated() where sqlite[index] != postgres[index] {
            disagreements.append("\(filter)\n  sqlite:   \(sqlite[index])\n  postgres: \(postgres[index])")
        }
        #expect(disagreements.isEmpty, "\(disagreements.count) filters disagree, e.g.:\n\(disagreements.prefix(8).joined(separator: "\n"))")
        #expect(sqlite.filter { !$0.isEmpty && $0.count < Self.records.count }.count > filters.count / 4, "the filters discriminate")
    }

    @Test func singleKindSortKeysOrderAlikeOnBothBackends() async throws {
        let orders = ["s desc", "n", "b desc, n", "d", "updatedAt desc", "n desc, s"]
        let filters = [
            "s ne null and substringof('', s)", "n ge -100", "(b eq true or b eq false) and n ge -100", "d ge '0'", "true",
            "n ge -100 and substringof('', s)",
        ]
        for (order, filter) in zip(orders, filters) {
            let sqlite = try await Self.run([filter], orderBy: order, on: .sqlite)
            let postgres = try await Self.run([filter], orderBy: order, on: .postgres)
            #expect(sqlite == postgres, "$orderby=\(order) with $filter=\(filter)")
        }
    }

    /// The ids each filter selects, in the order the storage returns them.
    static func run(_ filters: [String], orderBy: String = "id", on backend: TestBackend) async throws -> [[String]] {
        try await backend.withFreshStorage(clock: { Timestamp(millisecondsSinceEpoch: 1_800_000_000_000) }) { storage in
            for record in records { _ = try await storage.insert(table: "agree", record: record, scope: .shared) }
            var results: [[String]] = []
            for filter in filters {
                let query = RecordQuery(
                    filter: try ODataParser.parseFilter(filter), orderBy: try ODataParser.parseOrderBy(orderBy), top: 1000)
                results.append(try await storage.query(table: "agree", query, scope: .shared).records().map(\.id))
            }
            return results
        }
    }
}

/// Random OData filters over the fields of `BackendAgreementTests`, reproducible from a seed.
/// Only constructs whose meaning both backends can share exactly are generated: arithmetic uses
/// integer literals on values that are exact in binary, so no rounding differs.
struct FilterGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    private mutating func next() -> UInt64 {  // SplitMix64
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    private mutating func pick<T>(_ choices: [T]) -> T { choices[Int(next() % UInt64(choices.count))] }

    mutating func condition(depth: Int) -> String {
        let kind = depth > 0 ? next() % 8 : 4 + next() % 4
        switch kind {
        case 0: return "not (\(condition(depth: depth - 1)))"
        case 1: return "(\(condition(depth: depth - 1))) and (\(condition(depth: depth - 1)))"
        case 2: return "(\(condition(depth: depth - 1))) or (\(condition(depth: depth - 1)))"
        case 3: return pick(["startswith", "endswith"]) + "(\(text(depth: depth - 1)), \(textLiteral()))"
        case 4:
            return
                "\(number(depth: depth)) \(pick(["eq", "ne", "gt", "ge", "lt", "le"])) \(pick(["-3", "0", "2", "3", "7", "1000", "null"]))"
        case 5: return "\(text(depth: depth)) \(pick(["eq", "ne", "gt", "ge", "lt", "le"])) \(pick([textLiteral(), "null"]))"
        case 6: return pick(["b eq true", "b ne false", "b eq null", "b", "not b", "substringof(\(textLiteral()), \(text(depth: 0)))"])
        default:
            return pick([
                "d gt datetime'2026-01-01T00:00:00Z'", "d le datetimeoffset'2026-01-31T09:30:05.000Z'",
                "year(d) eq 2026", "month(d) ge 6", "day(d) eq 31", "hour(d) eq 9", "minute(d) lt 30", "second(d) eq 59",
                "d eq null",
            ])
        }
    }

    private mutating func number(depth: Int) -> String {
        guard depth > 0, next() % 2 == 0 else { return pick(["n", "n", "length(s)", "indexof(s, 'b')", "-n"]) }
        let inner = number(depth: depth - 1)
        switch next() % 6 {
        case 0: return "(\(inner) \(pick(["add", "sub", "mul"])) \(pick(["-2", "0", "3"])))"
        case 1: return "(\(inner) \(pick(["div", "mod"])) \(pick(["2", "-3", "0"])))"
        case 2: return "\(pick(["round", "floor", "ceiling"]))(\(inner))"
        case 3: return "length(\(text(depth: depth - 1)))"
        case 4: return "indexof(\(text(depth: depth - 1)), \(textLiteral()))"
        default: return "(\(inner) add n)"
        }
    }

    private mutating func text(depth: Int) -> String {
        guard depth > 0, next() % 2 == 0 else { return "s" }
        let inner = text(depth: depth - 1)
        switch next() % 7 {
        case 0: return "tolower(\(inner))"
        case 1: return "toupper(\(inner))"
        case 2: return "trim(\(inner))"
        case 3: return "concat(\(inner), \(textLiteral()))"
        case 4: return "substring(\(inner), \(pick(["0", "1", "3", "-1"])))"
        case 5: return "substring(\(inner), \(pick(["0", "1"])), \(pick(["0", "2", "-1"])))"
        default: return "replace(\(inner), \(textLiteral()), \(textLiteral()))"
        }
    }

    private mutating func textLiteral() -> String {
        pick(["''", "'a'", "'b'", "'abc'", "'A'", "'a''b'", "'ä'", "'10'", "'%'", "'_'", "' '", "'pad'"])
    }
}
