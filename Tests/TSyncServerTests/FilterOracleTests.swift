import Foundation
import Testing
import TSyncModel
import TSyncQuery

@testable import TSyncServer

/// A third opinion on `$filter` (docs/FILTERS.md): random filters over random records, run by SQLite,
/// by PostgreSQL when `TSYNC_TEST_POSTGRES_URL` is set, and by `FilterOracle`, a direct evaluation of
/// the parsed expression over the JSON records written for this test from docs/FILTERS.md alone,
/// sharing no code with the SQL renderers. Whichever of the three disagrees is wrong.
///
/// A failing case prints its seeds; `FilterOracleTests.reproduce(filterSeed:recordsSeed:)` rebuilds
/// its filter and records.
@Suite struct FilterOracleTests {
    /// Four rounds of 40 records and 150 filters; `TSYNC_FILTER_ORACLE_ROUNDS=N` runs N rounds (the
    /// long form, outside the default test run).
    static let rounds: [UInt64] = {
        let count = ProcessInfo.processInfo.environment["TSYNC_FILTER_ORACLE_ROUNDS"].flatMap { Int($0) } ?? 4
        return (1...max(1, count)).map { 0x5EED_0000 + UInt64($0) }
    }()
    static let filtersPerRound = 150

    @Test(arguments: TestBackend.available) func generatedFiltersAgreeWithTheOracle(backend: TestBackend) async throws {
        var disagreements: [String] = []
        var discriminating = 0
        var total = 0
        for round in Self.rounds {
            let records = RecordGenerator.records(seed: round, count: 40)
            let seeds = (0..<UInt64(Self.filtersPerRound)).map { round &* 1000 &+ $0 }
            let filters = seeds.map { FilterTextGenerator.filter(seed: $0) }
            let (stored, selected) = try await Self.run(filters, records: records, on: backend)
            for (index, filter) in filters.enumerated() {
                let parsed = try ODataParser.parseFilter(filter)
                let expected = stored.filter { FilterOracle.selects(parsed, $0) }.map(\.id)
                total += 1
                if !expected.isEmpty, expected.count < stored.count { discriminating += 1 }
                if expected != selected[index] {
                    let extra = Set(selected[index]).subtracting(expected).sorted()
                    let missing = Set(expected).subtracting(selected[index]).sorted()
                    let sample = (extra + missing).prefix(2).compactMap { id in stored.first { $0.id == id } }
                        .map { "\($0.id): \(JSONSerializer.string(.object($0.fields)))" }
                    disagreements.append(
                        "records seed \(round), filter seed \(seeds[index]): \(filter)\n  \(backend) also selects \(extra), "
                            + "misses \(missing)\n  e.g. \(sample.joined(separator: "\n       "))")
                }
            }
        }
        #expect(
            disagreements.isEmpty,
            "\(disagreements.count) of \(total) filters disagree on \(backend), e.g.:\n\(disagreements.prefix(6).joined(separator: "\n"))")
        #expect(discriminating > total / 3, "the filters discriminate: \(discriminating) of \(total)")
    }

    /// Indexes change how a filter is rendered (a range of the index AND the comparison itself),
    /// never what it selects or in which order: with every field indexed, the generated filters
    /// still agree with the oracle, boundary comparisons and prefixes select what the oracle does,
    /// and `$orderby` on each field gives the order it gives without indexes.
    @Test(arguments: TestBackend.available) func indexedFieldsSelectAndOrderAsWithout(backend: TestBackend) async throws {
        let fields = ["s", "t", "n", "m", "b", "d", "x"]
        var pinned: [String] = []
        for field in fields {
            for literal in ["'a'", "''", "'abc'", "'é'", "'10'", "0", "1", "2.5", "-3", "true", "false", "'2026-01-31T09:30:05.000Z'"] {
                for op in ["eq", "gt", "ge", "lt", "le"] { pinned.append("\(field) \(op) \(literal)") }
                pinned.append("\(literal) lt \(field)")
            }
            for prefix in ["'a'", "'ab'", "'e'", "'1'", "'2026'", "'Ä'", "''"] { pinned.append("startswith(\(field), \(prefix))") }
        }
        pinned = pinned.filter { (try? ODataParser.parseFilter($0)) != nil }  // booleans take eq only
        var disagreements: [String] = []
        for round in Self.rounds.prefix(2) {
            let records = RecordGenerator.records(seed: round, count: 40)
            let filters = pinned + (0..<UInt64(Self.filtersPerRound)).map { FilterTextGenerator.filter(seed: round &* 1000 &+ $0) }
            let orders = fields.flatMap { [[SortKey(field: $0)], [SortKey(field: $0, descending: true)]] }
            let (stored, selected, ordered) = try await Self.run(filters, records: records, on: backend, indexing: fields, orders: orders)
            let (_, _, unindexedOrder) = try await Self.run([], records: records, on: backend, orders: orders)
            for (index, filter) in filters.enumerated() {
                let parsed = try ODataParser.parseFilter(filter)
                let expected = stored.filter { FilterOracle.selects(parsed, $0) }.map(\.id)
                if expected != selected[index] { disagreements.append("\(filter): \(selected[index]) instead of \(expected)") }
            }
            for (index, order) in orders.enumerated() where ordered[index] != unindexedOrder[index] {
                disagreements.append("$orderby \(order): \(ordered[index]) instead of \(unindexedOrder[index])")
            }
        }
        #expect(
            disagreements.isEmpty,
            "\(disagreements.count) disagree on \(backend), e.g.:\n\(disagreements.prefix(6).joined(separator: "\n"))")
    }

    /// Inputs a generator may reach rarely, each once a disagreement.
    @Test(arguments: TestBackend.available) func pinnedCasesAgreeWithTheOracle(backend: TestBackend) async throws {
        let records: [Record] = [
            Record(id: "a", fields: ["n": 1, "m": 2.0, "s": "abc", "t": "abd", "b": true, "x": 1]),
            Record(id: "b", fields: ["n": 3, "m": 1.5, "s": "é", "t": "e\u{301}", "b": false, "x": true]),
            Record(id: "c", fields: ["n": 2.5, "m": 2, "s": "10", "t": 10, "b": 1, "x": "1"]),
            Record(id: "d", fields: ["n": -2.5, "m": .null, "s": ["a"], "t": ["k": 1], "x": false]),
        ]
        let filters = [
            "round(n) div 2 eq 1", "n mul 2.0 div 4 eq 0", "n mul 1.0 div 2 eq 1", "round(n) eq 3", "round(n) eq -3",
            "floor(n) div 2 eq 1", "ceiling(n) div 2 eq 1", "n eq x", "s eq t", "s lt t", "n lt m", "b eq x", "x ne n",
            "s eq null", "t gt s", "length(s) eq 1", "substring(s, 1) eq ''", "indexof(t, 'd') eq 2",
        ]
        let (stored, selected) = try await Self.run(filters, records: records, on: backend)
        for (index, filter) in filters.enumerated() {
            let parsed = try ODataParser.parseFilter(filter)
            let expected = stored.filter { FilterOracle.selects(parsed, $0) }.map(\.id)
            #expect(selected[index] == expected, "\(filter) on \(backend)")
        }
    }

    /// An indexed field's equality with text is its index's range alone on SQLite, unless the
    /// text could be an object's or array's JSON text (which the index holds for those): values
    /// of every kind whose index value or text reads like the literal, each selected only when
    /// the field is that very string.
    @Test(arguments: TestBackend.available) func indexedEqualityWithTextSelectsOnlyThatString(backend: TestBackend) async throws {
        let records: [Record] = [
            Record(id: "a", fields: ["s": ["a"], "t": ["k": 1], "x": 1]),
            Record(id: "b", fields: ["s": "[\"a\"]", "t": "{\"k\":1}", "x": "1"]),
            Record(id: "c", fields: ["s": "a", "t": .null, "x": true]),
            Record(id: "d", fields: ["s": "A", "t": 10, "x": "true"]),
            Record(id: "e", fields: ["s": "", "t": "10", "x": .object([:])]),
        ]
        let filters = [
            #"s eq '["a"]'"#, #"t eq '{"k":1}'"#, "x eq '1'", "x eq 'true'", "t eq '10'", "s eq 'a'", "'a' eq s", "s eq ''",
            "x eq '{}'", "t eq '2026-01-31T09:30:05.000Z'",
        ]
        let (stored, selected, _) = try await Self.run(filters, records: records, on: backend, indexing: ["s", "t", "x"], orders: [])
        for (index, filter) in filters.enumerated() {
            let parsed = try ODataParser.parseFilter(filter)
            let expected = stored.filter { FilterOracle.selects(parsed, $0) }.map(\.id)
            #expect(selected[index] == expected, "\(filter) on \(backend)")
        }
        #expect(selected[0] == ["b"] && selected[1] == ["b"] && selected[2] == ["b"] && selected[5] == ["c"])
    }

    /// The stored records (with their system properties) and the ids each filter selects, by id.
    static func run(_ filters: [String], records: [Record], on backend: TestBackend) async throws -> ([Record], [[String]]) {
        let (stored, selected, _) = try await run(filters, records: records, on: backend, orders: [])
        return (stored, selected)
    }

    /// The same, with indexes on `indexing` declared before the table exists, and the ids in
    /// each of `orders` too.
    static func run(
        _ filters: [String], records: [Record], on backend: TestBackend, indexing: [String] = [], orders: [[SortKey]]
    ) async throws -> ([Record], [[String]], [[String]]) {
        try await backend.withFreshStorage(clock: { Timestamp(millisecondsSinceEpoch: 1_800_000_000_000) }) { storage in
            _ = try await storage.declareIndexes(
                try indexing.map { field throws(TSyncError) in try IndexedField(table: "oracle", field: field) })
            for record in records { _ = try await storage.insert(table: "oracle", record: record, scope: .shared) }
            let order = [SortKey(field: "id")]
            let stored = try await storage.query(table: "oracle", RecordQuery(orderBy: order, top: 1000), scope: .shared).records()
            var selected: [[String]] = []
            for filter in filters {
                let query = RecordQuery(filter: try ODataParser.parseFilter(filter), orderBy: order, top: 1000)
                selected.append(try await storage.query(table: "oracle", query, scope: .shared).records().map(\.id))
            }
            var ordered: [[String]] = []
            for keys in orders {
                ordered.append(
                    try await storage.query(table: "oracle", RecordQuery(orderBy: keys, top: 1000), scope: .shared).records().map(\.id))
            }
            return (stored, selected, ordered)
        }
    }

    /// For a failing case: the filter and records a seed stands for.
    static func reproduce(filterSeed: UInt64, recordsSeed: UInt64) -> (String, [Record]) {
        (FilterTextGenerator.filter(seed: filterSeed), RecordGenerator.records(seed: recordsSeed, count: 40))
    }
}

// MARK: - The oracle

/// Evaluates a parsed `$filter` over one record as docs/FILTERS.md says, in plain Swift.
enum FilterOracle {
    /// A value during evaluation. `null` is SQL's unknown: missing fields, JSON null, values of
    /// another kind than the one expected, and what functions make of them.
    enum Value: Equatable {
        case null
        case bool(Bool)
        case int(Int64)
        case real(Double)
        case text(String)
        /// A user field compared with another user field: its JSON value as it is.
        case json(JSONValue)

        var number: Double? {
            switch self {
            case .int(let value): Double(value)
            case .real(let value): value
            default: nil
            }
        }
    }

    /// How the context reads a value (a user field becomes NULL when its JSON kind differs).
    enum Reading { case text, number, boolean, json }

    /// Static types, as docs/FILTERS.md lists them.
    enum StaticType { case string, number, boolean, dateTime, null, field }

    static func selects(_ filter: FilterExpression, _ record: Record) -> Bool {
        evaluate(filter, as: .boolean, record) == .bool(true)
    }

    static func type(of expression: FilterExpression) -> StaticType {
        switch expression {
        case .literal(.null): return .null
        case .literal(.bool): return .boolean
        case .literal(.int), .literal(.double): return .number
        case .literal(.string): return .string
        case .literal(.dateTime): return .dateTime
        case .field(let name):
            switch name {
            case "id", "version": return .string
            case "createdAt", "updatedAt": return .dateTime
            case "deleted": return .boolean
            default: return .field
            }
        case .not: return .boolean
        case .negate: return .number
        case .binary(let op, _, _):
            switch op {
            case .add, .sub, .mul, .div, .mod: return .number
            default: return .boolean
            }
        case .function(let function, _):
            switch function {
            case .substringof, .startswith, .endswith: return .boolean
            case .tolower, .toupper, .trim, .concat, .substring, .replace: return .string
            default: return .number
            }
        }
    }

    static func reading(_ type: StaticType) -> Reading {
        switch type {
        case .string, .dateTime: .text
        case .number: .number
        case .boolean: .boolean
        case .null, .field: .json
        }
    }

    /// What both sides of a comparison are read as: a fixed type wins over a field or null, a date
    /// and a string compare as text, two fields (or null) as JSON values.
    static func comparisonReading(_ left: StaticType, _ right: StaticType) -> Reading {
        let flexible: Set<StaticType> = [.null, .field]
        if flexible.contains(left), flexible.contains(right) { return .json }
        if flexible.contains(left) { return reading(right) }
        if flexible.contains(right) { return reading(left) }
        if left != right { return .text }  // string and date
        return reading(left)
    }

    static func evaluate(_ expression: FilterExpression, as reading: Reading, _ record: Record) -> Value {
        switch expression {
        case .literal(let literal):
            switch literal {
            case .null: return .null
            case .bool(let flag): return .bool(flag)
            case .int(let value): return .int(value)
            case .double(let value): return .real(value)
            case .string(let text): return .text(text)
            case .dateTime(let timestamp): return .text(timestamp.iso8601)
            }
        case .field(let name):
            return field(name, record, as: reading)
        case .not(let operand):
            guard case .bool(let flag) = evaluate(operand, as: .boolean, record) else { return .null }
            return .bool(!flag)
        case .negate(let operand):
            switch evaluate(operand, as: .number, record) {
            case .int(let value): return .int(-value)
            case .real(let value): return .real(-value)
            default: return .null
            }
        case .binary(let op, let left, let right):
            return binary(op, left, right, record)
        case .function(let function, let arguments):
            return call(function, arguments, record)
        }
    }

    static func field(_ name: String, _ record: Record, as reading: Reading) -> Value {
        switch name {
        case "id": return .text(record.id)
        case "version": return record.system.version.map(Value.text) ?? .null
        case "createdAt": return record.system.createdAt.map { .text($0.iso8601) } ?? .null
        case "updatedAt": return record.system.updatedAt.map { .text($0.iso8601) } ?? .null
        case "deleted": return .bool(record.system.deleted)
        default: break
        }
        let value = record.fields[name] ?? .null
        switch (reading, value) {
        case (_, .null): return .null
        case (.json, _): return .json(value)
        case (.text, .string(let text)): return .text(text)
        case (.number, .int(let number)): return .int(number)
        case (.number, .double(let number)): return .real(number)
        case (.boolean, .bool(let flag)): return .bool(flag)
        default: return .null
        }
    }

    static func binary(_ op: BinaryOperator, _ left: FilterExpression, _ right: FilterExpression, _ record: Record) -> Value {
        switch op {
        case .and, .or:
            let l = evaluate(left, as: .boolean, record)
            let r = evaluate(right, as: .boolean, record)
            let decisive = Value.bool(op == .or)
            if l == decisive || r == decisive { return decisive }
            if l == .null || r == .null { return .null }
            return .bool(op == .and)
        case .add, .sub, .mul, .div, .mod:
            return arithmetic(op, evaluate(left, as: .number, record), evaluate(right, as: .number, record))
        case .eq, .ne, .gt, .ge, .lt, .le:
            let leftType = type(of: left)
            let rightType = type(of: right)
            if op == .eq || op == .ne, leftType == .null || rightType == .null {
                let other = leftType == .null ? right : left
                let isNull = evaluate(other, as: reading(type(of: other)), record) == .null
                return .bool(op == .eq ? isNull : !isNull)
            }
            let reading = comparisonReading(leftType, rightType)
            let l = evaluate(left, as: reading, record)
            let r = evaluate(right, as: reading, record)
            if op == .eq || op == .ne {
                let equal: Bool
                switch (l, r) {
                case (.null, .null): equal = true
                case (.null, _), (_, .null): equal = false
                default: equal = compare(l, r) == 0
                }
                return .bool(op == .eq ? equal : !equal)
            }
            guard let order = compare(l, r) else { return .null }
            switch op {
            case .gt: return .bool(order > 0)
            case .ge: return .bool(order >= 0)
            case .lt: return .bool(order < 0)
            default: return .bool(order <= 0)
            }
        }
    }

    /// -1, 0, 1; nil when either is NULL or the two cannot be ordered.
    static func compare(_ left: Value, _ right: Value) -> Int? {
        switch (left, right) {
        case (.text(let a), .text(let b)): return bytes(a, b)
        case (.bool(let a), .bool(let b)): return a == b ? 0 : (a ? 1 : -1)
        case (.json(let a), .json(let b)): return compareJSON(a, b)
        default:
            guard let a = left.number, let b = right.number else { return nil }
            return a < b ? -1 : (a == b ? 0 : 1)
        }
    }

    /// Two user fields: numbers by value, strings by bytes, booleans false < true; values of
    /// different kinds (or arrays and objects) are never equal and not ordered.
    static func compareJSON(_ left: JSONValue, _ right: JSONValue) -> Int? {
        switch (left, right) {
        case (.string(let a), .string(let b)): return bytes(a, b)
        case (.bool(let a), .bool(let b)): return a == b ? 0 : (a ? 1 : -1)
        case (.int, .int), (.int, .double), (.double, .int), (.double, .double):
            return compare(number(left), number(right))
        default: return nil
        }
    }

    static func number(_ value: JSONValue) -> Value {
        switch value {
        case .int(let number): .int(number)
        case .double(let number): .real(number)
        default: .null
        }
    }

    static func bytes(_ a: String, _ b: String) -> Int {
        if a.utf8.elementsEqual(b.utf8) { return 0 }
        return a.utf8.lexicographicallyPrecedes(b.utf8) ? -1 : 1
    }

    /// Integers stay integers through `add`, `sub`, `mul`, `div` (truncating) and `mod`; a real
    /// operand makes the result real. A zero divisor gives NULL.
    static func arithmetic(_ op: BinaryOperator, _ left: Value, _ right: Value) -> Value {
        if case .int(let a) = left, case .int(let b) = right {
            switch op {
            case .add: return .int(a + b)
            case .sub: return .int(a - b)
            case .mul: return .int(a * b)
            case .div: return b == 0 ? .null : .int(a / b)
            default: return b == 0 ? .null : .int(a % b)
            }
        }
        guard let a = left.number, let b = right.number else { return .null }
        switch op {
        case .add: return .real(a + b)
        case .sub: return .real(a - b)
        case .mul: return .real(a * b)
        case .div: return b == 0 ? .null : .real(a / b)
        default: return b == 0 ? .null : .real(a.truncatingRemainder(dividingBy: b))
        }
    }

    static func call(_ function: FilterFunction, _ arguments: [FilterExpression], _ record: Record) -> Value {
        let numeric: Set<FilterFunction> = [.round, .floor, .ceiling]
        var values: [Value] = []
        for (index, argument) in arguments.enumerated() {
            let isNumber = numeric.contains(function) || (function == .substring && index > 0)
            let value = evaluate(argument, as: isNumber ? .number : .text, record)
            if value == .null { return .null }  // every function gives NULL for a NULL argument
            values.append(value)
        }
        func text(_ index: Int) -> [Unicode.Scalar] {
            if case .text(let string) = values[index] { return Array(string.unicodeScalars) }
            return []
        }
        func string(_ scalars: some Sequence<Unicode.Scalar>) -> Value {
            var result = ""
            result.unicodeScalars.append(contentsOf: scalars)
            return .text(result)
        }
        switch function {
        case .substringof: return .bool(index(of: text(0), in: text(1)) != nil)
        case .startswith: return .bool(text(0).starts(with: text(1)))
        case .endswith: return .bool(text(0).reversed().starts(with: text(1).reversed()))
        case .length: return .int(Int64(text(0).count))
        case .tolower: return string(text(0).map { ("A"..."Z").contains($0) ? Unicode.Scalar($0.value + 32)! : $0 })
        case .toupper: return string(text(0).map { ("a"..."z").contains($0) ? Unicode.Scalar($0.value - 32)! : $0 })
        case .trim:
            let scalars = text(0)
            guard let first = scalars.firstIndex(where: { $0 != " " }), let last = scalars.lastIndex(where: { $0 != " " })
            else { return .text("") }
            return string(scalars[first...last])
        case .indexof: return .int(Int64(index(of: text(1), in: text(0)) ?? -1))
        case .concat: return string(text(0) + text(1))
        case .substring:
            let scalars = text(0)
            guard let start = values[1].number else { return .null }
            let from = start < 0 ? 0 : Int(min(start.rounded(.towardZero), Double(Int32.max)))
            var to = scalars.count
            if values.count > 2 {
                guard let length = values[2].number, length >= 0 else { return .null }
                to = min(scalars.count, from + Int(min(length.rounded(.towardZero), Double(Int32.max))))
            }
            return from >= to ? .text("") : string(scalars[from..<to])
        case .replace:
            let (source, target, replacement) = (text(0), text(1), text(2))
            guard !target.isEmpty else { return string(source) }
            var result: [Unicode.Scalar] = []
            var position = 0
            while position < source.count {
                if source[position...].starts(with: target) {
                    result += replacement
                    position += target.count
                } else {
                    result.append(source[position])
                    position += 1
                }
            }
            return string(result)
        case .year, .month, .day, .hour, .minute, .second:
            return datePart(function, text(0))
        case .round, .floor, .ceiling:
            switch values[0] {
            case .int: return values[0]
            case .real(let value):
                let rule: FloatingPointRoundingRule =
                    function == .round ? .toNearestOrAwayFromZero : (function == .floor ? .down : .up)
                return .int(Int64(value.rounded(rule)))
            default: return .null
            }
        }
    }

    static func index(of needle: [Unicode.Scalar], in haystack: [Unicode.Scalar]) -> Int? {
        guard needle.count <= haystack.count else { return nil }
        return (0...(haystack.count - needle.count)).first { haystack[$0...].starts(with: needle) }
    }

    /// The digits of ISO 8601 text at fixed places, when the text has the shape up to them.
    static func datePart(_ function: FilterFunction, _ text: [Unicode.Scalar]) -> Value {
        let digit: (Unicode.Scalar) -> Bool = { ("0"..."9").contains($0) }
        var shape: [(Unicode.Scalar) -> Bool] = [digit, digit, digit, digit, { $0 == "-" }, digit, digit, { $0 == "-" }, digit, digit]
        let (offset, length): (Int, Int)
        switch function {
        case .year: (offset, length) = (0, 4)
        case .month: (offset, length) = (5, 2)
        case .day: (offset, length) = (8, 2)
        case .hour: (offset, length) = (11, 2)
        case .minute: (offset, length) = (14, 2)
        default: (offset, length) = (17, 2)
        }
        if offset >= 11 { shape += [{ "Tt ".unicodeScalars.contains($0) }, digit, digit, { $0 == ":" }, digit, digit] }
        if offset >= 17 { shape += [{ $0 == ":" }, digit, digit] }
        guard text.count >= shape.count, zip(shape, text).allSatisfy({ $0($1) }) else { return .null }
        var digits = ""
        digits.unicodeScalars.append(contentsOf: text[offset..<(offset + length)])
        return Int64(digits).map(Value.int) ?? .null
    }
}

// MARK: - Generators

/// SplitMix64: small, seedable, the same on every platform.
struct SeededRandom {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func below(_ count: Int) -> Int { Int(next() % UInt64(count)) }
    mutating func pick<T>(_ choices: [T]) -> T { choices[below(choices.count)] }
}

/// Records whose fields `s n b d x` take values of every JSON kind, the expected one most often.
struct RecordGenerator {
    var random: SeededRandom
    init(seed: UInt64) { random = SeededRandom(seed: seed) }

    static let texts: [JSONValue] = [
        "", "a", "abc", "Abc", "abd", "a'b", "ÄÖü", "é", "e\u{301}", " pad ", "10", "b", "%_", "2026-01-31T09:30:05.000Z",
        "2025-12-31 23:59", "2026-06-15t00:00:00Z",
    ]
    static let numbers: [JSONValue] = [-3, 0, 1, 2, 3, 7, 10, 2.5, -0.5, 2.0, 0.25, -2.5, 1000]
    static let others: [JSONValue] = [true, false, .null, ["a"], ["k": 1], [], 1, "1", "true"]

    mutating func value(favouring kind: [JSONValue]) -> JSONValue? {
        switch random.below(10) {
        case 0: return nil
        case 1, 2: return random.pick(Self.others + Self.texts + Self.numbers)
        default: return random.pick(kind)
        }
    }

    static func records(seed: UInt64, count: Int) -> [Record] {
        var generator = RecordGenerator(seed: seed)
        return (0..<count).map { index in generator.record(index) }
    }

    mutating func record(_ index: Int) -> Record {
        var fields: [String: JSONValue] = [:]
        fields["s"] = value(favouring: Self.texts)
        fields["t"] = value(favouring: Self.texts)
        fields["n"] = value(favouring: Self.numbers)
        fields["m"] = value(favouring: Self.numbers)
        fields["b"] = value(favouring: [true, false])
        fields["d"] = value(favouring: Array(Self.texts.suffix(3)))
        fields["x"] = value(favouring: Self.others)
        return Record(id: "r\(index < 10 ? "0" : "")\(index)", fields: fields)
    }
}

/// Random well-typed `$filter` text over the fields of `RecordGenerator`. Reals are multiples of
/// 1/4 and divisors powers of two, so that every result is exact in binary and in decimal alike.
struct FilterTextGenerator {
    var random: SeededRandom
    init(seed: UInt64) { random = SeededRandom(seed: seed) }

    static func filter(seed: UInt64) -> String {
        var generator = FilterTextGenerator(seed: seed)
        return generator.condition(depth: 3)
    }

    mutating func condition(depth: Int) -> String {
        let choice = depth > 0 ? random.below(12) : 3 + random.below(9)
        switch choice {
        case 0: return "not (\(condition(depth: depth - 1)))"
        case 1: return "(\(condition(depth: depth - 1))) and (\(condition(depth: depth - 1)))"
        case 2: return "(\(condition(depth: depth - 1))) or (\(condition(depth: depth - 1)))"
        case 3, 4:
            return
                "\(number(depth: depth)) \(comparison()) \(random.pick(["-3", "0", "1", "2", "2.5", "3", "-0.5", "1000", "null", number(depth: 0)]))"
        case 5, 6: return "\(text(depth: depth)) \(comparison()) \(random.pick([textLiteral(), textLiteral(), "null", text(depth: 0)]))"
        case 7:
            return random.pick(["startswith", "endswith", "substringof"])
                + "(\(text(depth: depth - 1)), \(random.pick([textLiteral(), text(depth: 0)])))"
        case 8: return random.pick(["b", "not b", "b eq true", "b ne false", "x eq true", "b eq x", "deleted eq false", "b eq null"])
        case 9: return "\(field()) \(comparison()) \(random.pick([field(), "null"]))"
        case 10:
            return random.pick([
                "d gt datetime'2026-01-01T00:00:00Z'", "d le datetimeoffset'2026-01-31T09:30:05.000Z'",
                "updatedAt ge datetime'2026-01-01T00:00:00Z'", "createdAt lt d", "id gt 'r2'", "id eq s", "version ne null",
            ])
        default:
            return
                "\(random.pick(["year", "month", "day", "hour", "minute", "second"]))(\(random.pick(["d", "s", "updatedAt"]))) \(comparison()) \(random.pick(["0", "1", "9", "15", "2026", "31", "null"]))"
        }
    }

    mutating func comparison() -> String { random.pick(["eq", "ne", "gt", "ge", "lt", "le"]) }
    mutating func field() -> String { random.pick(["s", "t", "n", "m", "b", "d", "x", "absent"]) }

    mutating func number(depth: Int) -> String {
        guard depth > 0, random.below(3) > 0 else {
            return random.pick(["n", "m", "x", "s", "length(s)", "indexof(s, 'b')", "-n", "1", "2.0", "0.5"])
        }
        let inner = number(depth: depth - 1)
        switch random.below(7) {
        case 0: return "(\(inner) \(random.pick(["add", "sub", "mul"])) \(random.pick(["-2", "0", "3", "0.5", "2.0", "m"])))"
        case 1: return "(\(inner) \(random.pick(["div", "mod"])) \(random.pick(["2", "-2", "4", "0", "2.0", "0.5"])))"
        case 2: return "\(random.pick(["round", "floor", "ceiling"]))(\(inner))"
        case 3: return "length(\(text(depth: depth - 1)))"
        case 4: return "indexof(\(text(depth: depth - 1)), \(textLiteral()))"
        case 5: return "-(\(inner))"
        default: return "(\(inner) \(random.pick(["add", "mul", "div", "mod"])) \(number(depth: depth - 1)))"
        }
    }

    mutating func text(depth: Int) -> String {
        guard depth > 0, random.below(3) > 0 else { return random.pick(["s", "s", "t", "d", "x", "id", "'abc'"]) }
        let inner = text(depth: depth - 1)
        switch random.below(7) {
        case 0: return "tolower(\(inner))"
        case 1: return "toupper(\(inner))"
        case 2: return "trim(\(inner))"
        case 3: return "concat(\(inner), \(random.pick([textLiteral(), text(depth: depth - 1)])))"
        case 4: return "substring(\(inner), \(random.pick(["0", "1", "3", "-1", "1.5", "n"])))"
        case 5: return "substring(\(inner), \(random.pick(["0", "1", "n"])), \(random.pick(["0", "2", "-1", "2.5", "m"])))"
        default: return "replace(\(inner), \(textLiteral()), \(textLiteral()))"
        }
    }

    mutating func textLiteral() -> String {
        random.pick(["''", "'a'", "'b'", "'abc'", "'A'", "'a''b'", "'ä'", "'é'", "'10'", "'%'", "'_'", "' '", "'pad'", "'2026'"])
    }
}
