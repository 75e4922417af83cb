import Testing
import TSyncModel
import TSyncQuery

@testable import TSyncServer

/// A third opinion on filters (issue 9): the generated filters of `BackendAgreementTests` run on
/// SQLite, on PostgreSQL (when configured), and through `FilterOracle`, a direct evaluation of the
/// parsed expression over the records' JSON written for this test from the documented semantics
/// (docs/FILTERS.md), sharing no code with either SQL renderer. A disagreement is a bug in one of
/// the three; the failure names the filter and the seed.
@Suite struct FilterOracleTests {
    static let seeds: [UInt64] = [0x7453_796E_6321, 0x0DDB_A11, 0xC0FF_EE00]

    @Test(arguments: seeds)
    func sqlAndTheOracleSelectTheSameRecords(seed: UInt64) async throws {
        var generator = FilterGenerator(seed: seed)
        let filters = BackendAgreementTests.pinned + (0..<300).map { _ in generator.condition(depth: 3) }
        let records = BackendAgreementTests.records
        let expected = try filters.map { filter in
            let expression = try ODataParser.parseFilter(filter)
            return records.filter { FilterOracle.holds(expression, for: $0) }.map(\.id).sorted()
        }
        var backends: [TestBackend] = [.sqlite]
        if PostgresTestDatabase.isConfigured { backends.append(.postgres) }
        for backend in backends {
            let results = try await BackendAgreementTests.run(filters, on: backend).map { $0.sorted() }
            var disagreements: [String] = []
            for (index, filter) in filters.enumerated() where results[index] != expected[index] {
                disagreements.append("\(filter)\n  \(backend): \(results[index])\n  oracle: \(expected[index])")
            }
            #expect(
                disagreements.isEmpty,
                "seed \(seed): \(disagreements.count) filters disagree on \(backend), e.g.:\n\(disagreements.prefix(6).joined(separator: "\n"))")
        }
        #expect(expected.filter { !$0.isEmpty && $0.count < records.count }.count > filters.count / 4, "the filters discriminate")
    }
}

/// Evaluates a filter over one record as docs/FILTERS.md says, with SQL's three-valued logic:
/// `nil` is NULL (unknown), and a record is selected only when the filter is true.
enum FilterOracle {
    /// A value as an expression yields it.
    enum Value: Equatable {
        case int(Int64)
        case real(Double)
        case text(String)
        case bool(Bool)

        var number: Double? {
            switch self {
            case .int(let n): Double(n)
            case .real(let n): n
            case .bool(let flag): flag ? 1 : 0
            case .text: nil
            }
        }
    }

    /// How a node is read, as the renderer decides from the static types.
    enum Kind { case text, number, boolean, json }

    static func holds(_ expression: FilterExpression, for record: Record) -> Bool {
        evaluate(expression, as: .boolean, record) == .bool(true)
    }

    static func evaluate(_ expression: FilterExpression, as kind: Kind, _ record: Record) -> Value? {
        switch expression {
        case .literal(let literal):
            switch literal {
            case .null: return nil
            case .bool(let flag): return .bool(flag)
            case .int(let n): return .int(n)
            case .double(let n): return .real(n)
            case .string(let text): return .text(text)
            case .dateTime(let time): return .text(time.iso8601)
            }
        case .field(let name):
            return field(name, as: kind, record)
        case .not(let operand):
            guard case .bool(let flag)? = evaluate(operand, as: .boolean, record) else { return nil }
            return .bool(!flag)
        case .negate(let operand):
            switch evaluate(operand, as: .number, record) {
            case .int(let n)?: return .int(-n)
            case .real(let n)?: return .real(-n)
            default: return nil
            }
        case .binary(let op, let left, let right):
            return binary(op, left, right, record)
        case .function(let function, let arguments):
            return call(function, arguments, record)
        }
    }

    /// A user field read as `kind`: a JSON value of another kind counts as NULL; read as JSON,
    /// true and false are 1 and 0 (SQLite's json_extract).
    static func field(_ name: String, as kind: Kind, _ record: Record) -> Value? {
        switch name {
        case "id": return .text(record.id)
        case "version": return record.system.version.map(Value.text)
        case "createdAt": return record.system.createdAt.map { .text($0.iso8601) }
        case "updatedAt": return record.system.updatedAt.map { .text($0.iso8601) }
        case "deleted": return .bool(record.system.deleted)
        default: break
        }
        guard let value = record.fields[name] else { return nil }
        switch (value, kind) {
        case (.string(let text), .text), (.string(let text), .json): return .text(text)
        case (.int(let n), .number), (.int(let n), .json): return .int(n)
        case (.double(let n), .number), (.double(let n), .json): return .real(n)
        case (.bool(let flag), .boolean): return .bool(flag)
        case (.bool(let flag), .json): return .int(flag ? 1 : 0)
        default: return nil
        }
    }

    static func staticType(_ expression: FilterExpression) -> Kind {
        switch expression {
        case .literal(.string), .literal(.dateTime): return .text
        case .literal(.int), .literal(.double): return .number
        case .literal(.bool): return .boolean
        case .literal(.null): return .json
        case .field(let name):
            switch name {
            case "id", "version", "createdAt", "updatedAt": return .text
            case "deleted": return .boolean
            default: return .json
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
            case .tolower, .toupper, .trim, .concat, .substring, .replace: return .text
            default: return .number
            }
        }
    }

    static func binary(_ op: BinaryOperator, _ left: FilterExpression, _ right: FilterExpression, _ record: Record) -> Value? {
        switch op {
        case .and:
            let l = evaluate(left, as: .boolean, record)
            let r = evaluate(right, as: .boolean, record)
            if l == .bool(false) || r == .bool(false) { return .bool(false) }
            if l == .bool(true) && r == .bool(true) { return .bool(true) }
            return nil
        case .or:
            let l = evaluate(left, as: .boolean, record)
            let r = evaluate(right, as: .boolean, record)
            if l == .bool(true) || r == .bool(true) { return .bool(true) }
            if l == .bool(false) && r == .bool(false) { return .bool(false) }
            return nil
        case .add, .sub, .mul, .div, .mod:
            return arithmetic(op, evaluate(left, as: .number, record), evaluate(right, as: .number, record))
        case .eq, .ne, .gt, .ge, .lt, .le:
            // `eq null` / `ne null` test for NULL; otherwise both sides are read as the fixed type
            // of either side (a field takes the other side's type).
            if case .literal(.null) = right, op == .eq || op == .ne {
                let value = evaluate(left, as: staticType(left), record)
                return .bool((value == nil) == (op == .eq))
            }
            if case .literal(.null) = left, op == .eq || op == .ne {
                let value = evaluate(right, as: staticType(right), record)
                return .bool((value == nil) == (op == .eq))
            }
            let l = staticType(left)
            let r = staticType(right)
            let kind = l == .json ? r : l
            let a = evaluate(left, as: kind, record)
            let b = evaluate(right, as: kind, record)
            if op == .eq || op == .ne {
                // Null-safe: NULL eq NULL holds, NULL ne 'x' holds.
                let same: Bool
                switch (a, b) {
                case (nil, nil): same = true
                case (nil, _), (_, nil): same = false
                case (let a?, let b?): same = compare(a, b) == 0
                }
                return .bool(same == (op == .eq))
            }
            guard let a, let b, let order = compare(a, b) else { return nil }
            switch op {
            case .gt: return .bool(order > 0)
            case .ge: return .bool(order >= 0)
            case .lt: return .bool(order < 0)
            default: return .bool(order <= 0)
            }
        }
    }

    /// -1, 0, 1; text in byte order; numbers by value (booleans are 0 and 1); numbers before text.
    static func compare(_ a: Value, _ b: Value) -> Int? {
        switch (a, b) {
        case (.text(let x), .text(let y)):
            if x.utf8.elementsEqual(y.utf8) { return 0 }
            return x.utf8.lexicographicallyPrecedes(y.utf8) ? -1 : 1
        case (.text, _): return 1
        case (_, .text): return -1
        default:
            guard let x = a.number, let y = b.number else { return nil }
            return x == y ? 0 : (x < y ? -1 : 1)
        }
    }

    static func arithmetic(_ op: BinaryOperator, _ a: Value?, _ b: Value?) -> Value? {
        guard let a, let b else { return nil }
        if case .int(let x) = a, case .int(let y) = b {
            switch op {
            case .add: return .int(x &+ y)
            case .sub: return .int(x &- y)
            case .mul: return .int(x &* y)
            case .div: return y == 0 ? nil : .int(x / y)  // integer division, toward zero
            default: return y == 0 ? nil : .int(x - y * (x / y))
            }
        }
        guard let x = a.number, let y = b.number else { return nil }
        switch op {
        case .add: return .real(x + y)
        case .sub: return .real(x - y)
        case .mul: return .real(x * y)
        case .div: return y == 0 ? nil : .real(x / y)
        default: return y == 0 ? nil : .real(x - y * (x / y).rounded(.towardZero))
        }
    }

    static func call(_ function: FilterFunction, _ arguments: [FilterExpression], _ record: Record) -> Value? {
        func text(_ index: Int) -> String? {
            if case .text(let value)? = evaluate(arguments[index], as: .text, record) { return value }
            return nil
        }
        func number(_ index: Int) -> Double? { evaluate(arguments[index], as: .number, record)?.number }
        switch function {
        case .substringof:
            guard let needle = text(0), let haystack = text(1) else { return nil }
            return .bool(needle.isEmpty || haystack.contains(needle))
        case .startswith:
            guard let value = text(0), let prefix = text(1) else { return nil }
            return .bool(Array(value.unicodeScalars).starts(with: prefix.unicodeScalars))
        case .endswith:
            guard let value = text(0), let suffix = text(1) else { return nil }
            return .bool(Array(value.unicodeScalars).reversed().starts(with: suffix.unicodeScalars.reversed()))
        case .length:
            return text(0).map { .int(Int64($0.unicodeScalars.count)) }
        case .tolower, .toupper:
            guard let value = text(0) else { return nil }
            let mapped = value.unicodeScalars.map { scalar -> Unicode.Scalar in
                let upper = function == .toupper
                if upper, ("a"..."z").contains(scalar) { return Unicode.Scalar(scalar.value - 32) ?? scalar }
                if !upper, ("A"..."Z").contains(scalar) { return Unicode.Scalar(scalar.value + 32) ?? scalar }
                return scalar
            }
            return .text(String(String.UnicodeScalarView(mapped)))
        case .trim:
            guard let value = text(0) else { return nil }
            let scalars = Array(value.unicodeScalars)
            let start = scalars.firstIndex { $0 != " " } ?? scalars.count
            let end = (scalars.lastIndex { $0 != " " } ?? -1) + 1
            return .text(start < end ? String(String.UnicodeScalarView(scalars[start..<end])) : "")
        case .indexof:
            guard let value = text(0), let needle = text(1) else { return nil }
            let scalars = Array(value.unicodeScalars)
            let pattern = Array(needle.unicodeScalars)
            if pattern.isEmpty { return .int(0) }
            for start in 0..<max(0, scalars.count - pattern.count + 1) where Array(scalars[start..<(start + pattern.count)]) == pattern {
                return .int(Int64(start))
            }
            return .int(-1)
        case .concat:
            guard let a = text(0), let b = text(1) else { return nil }
            return .text(a + b)
        case .substring:
            guard let value = text(0), let start = number(1) else { return nil }
            let scalars = Array(value.unicodeScalars)
            let from = min(scalars.count, Int(max(0, start.rounded(.towardZero))))
            var to = scalars.count
            if arguments.count > 2 {
                guard let length = number(2), length >= 0 else { return nil }
                to = min(scalars.count, from + Int(length.rounded(.towardZero)))
            }
            return .text(String(String.UnicodeScalarView(scalars[from..<max(from, to)])))
        case .replace:
            guard let value = text(0), let find = text(1), let with = text(2) else { return nil }
            return .text(find.isEmpty ? value : value.replacingOccurrences(of: find, with: with))
        case .year, .month, .day, .hour, .minute, .second:
            guard let value = text(0) else { return nil }
            return datePart(function, of: value).map { .int(Int64($0)) }
        case .round, .floor, .ceiling:
            // An integer stays the integer; a real gives a real.
            switch evaluate(arguments[0], as: .number, record) {
            case .int(let n)?: return .int(n)
            case .real(let n)?:
                let rule: FloatingPointRoundingRule =
                    function == .round ? .toNearestOrAwayFromZero : function == .floor ? .down : .up
                return .real(n.rounded(rule))
            default: return nil
            }
        }
    }

    /// The part of an ISO 8601 text (`2026-01-31T09:30:05.000Z`), or nil when the text does not
    /// have that shape up to the part.
    static func datePart(_ function: FilterFunction, of text: String) -> Int? {
        let bytes = Array(text.utf8)
        func digits(_ range: Range<Int>) -> Int? {
            guard bytes.count >= range.upperBound else { return nil }
            var value = 0
            for byte in bytes[range] {
                guard (48...57).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        func dateShape() -> Bool {
            digits(0..<4) != nil && bytes.count >= 10 && bytes[4] == 45 && digits(5..<7) != nil && bytes[7] == 45
                && digits(8..<10) != nil
        }
        func timeShape(seconds: Bool) -> Bool {
            guard dateShape(), bytes.count >= (seconds ? 19 : 16), [84, 116, 32].contains(bytes[10]),
                digits(11..<13) != nil, bytes[13] == 58, digits(14..<16) != nil
            else { return false }
            return !seconds || (bytes[16] == 58 && digits(17..<19) != nil)
        }
        switch function {
        case .year: return dateShape() ? digits(0..<4) : nil
        case .month: return dateShape() ? digits(5..<7) : nil
        case .day: return dateShape() ? digits(8..<10) : nil
        case .hour: return timeShape(seconds: false) ? digits(11..<13) : nil
        case .minute: return timeShape(seconds: false) ? digits(14..<16) : nil
        default: return timeShape(seconds: true) ? digits(17..<19) : nil
        }
    }
}
