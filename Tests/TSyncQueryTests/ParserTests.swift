import TSyncModel
import Testing

@testable import TSyncQuery

private func parse(_ text: String) throws -> FilterExpression { try ODataParser.parseFilter(text) }
private func field(_ name: String) -> FilterExpression { .field(name) }
private func string(_ text: String) -> FilterExpression { .literal(.string(text)) }
private func int(_ value: Int64) -> FilterExpression { .literal(.int(value)) }
private func double(_ value: Double) -> FilterExpression { .literal(.double(value)) }
private func bin(_ op: BinaryOperator, _ l: FilterExpression, _ r: FilterExpression) -> FilterExpression {
    .binary(op, l, r)
}

/// The message of the error `parseFilter` throws, or nil when it parses.
private func filterError(_ text: String) -> String? {
    do {
        _ = try ODataParser.parseFilter(text)
        return nil
    } catch {
        #expect(error.kind == .invalidInput)
        return error.message
    }
}

@Suite struct LiteralParsingTests {
    @Test func strings() throws {
        #expect(try parse("a eq 'it''s'") == bin(.eq, field("a"), string("it's")))
        #expect(try parse("a eq ''") == bin(.eq, field("a"), string("")))
        #expect(try parse("a eq ''''") == bin(.eq, field("a"), string("'")))
        #expect(try parse("a eq 'Ünïcode ✓ eq and'") == bin(.eq, field("a"), string("Ünïcode ✓ eq and")))
        #expect(try parse("a eq '  spaced\t'") == bin(.eq, field("a"), string("  spaced\t")))
    }

    @Test func integers() throws {
        #expect(try parse("a eq 0") == bin(.eq, field("a"), int(0)))
        #expect(try parse("a eq 42") == bin(.eq, field("a"), int(42)))
        #expect(try parse("a eq 42L") == bin(.eq, field("a"), int(42)))
        #expect(try parse("a eq -42") == bin(.eq, field("a"), int(-42)))
        #expect(try parse("a eq 9223372036854775807") == bin(.eq, field("a"), int(.max)))
        #expect(try parse("a eq -9223372036854775808") == bin(.eq, field("a"), int(.min)))
        #expect(
            filterError("a eq 9223372036854775808")?.hasPrefix(
                "invalid $filter at position 6: the integer 9223372036854775808 does not fit in 64 bits") == true)
        #expect(
            filterError("a eq -9223372036854775809")?.hasPrefix("invalid $filter at position 7: the integer -9223372036854775809") == true)
    }

    @Test func reals() throws {
        #expect(try parse("a eq 1.5") == bin(.eq, field("a"), double(1.5)))
        #expect(try parse("a eq 1e3") == bin(.eq, field("a"), double(1000)))
        #expect(try parse("a eq 2.5E-3") == bin(.eq, field("a"), double(0.0025)))
        #expect(try parse("a eq 1e+2") == bin(.eq, field("a"), double(100)))
        #expect(try parse("a eq -0.5") == bin(.eq, field("a"), double(-0.5)))
        #expect(try parse("a eq 1.0") == bin(.eq, field("a"), double(1)))
        // OData type suffixes: d (double), f (single), m (decimal) are reals; L is an integer.
        #expect(try parse("a eq 1.5d") == bin(.eq, field("a"), double(1.5)))
        #expect(try parse("a eq 2f") == bin(.eq, field("a"), double(2)))
        #expect(try parse("a eq 3.25M") == bin(.eq, field("a"), double(3.25)))
        #expect(filterError("a eq 1.5L") == "invalid $filter at position 9: the suffix L marks an integer, not a real number")
        #expect(filterError("a eq 1e999") == "invalid $filter at position 6: the number 1e999 is out of range")
    }

    @Test func keywords() throws {
        #expect(try parse("a eq true") == bin(.eq, field("a"), .literal(.bool(true))))
        #expect(try parse("a eq false") == bin(.eq, field("a"), .literal(.bool(false))))
        #expect(try parse("a eq null") == bin(.eq, field("a"), .literal(.null)))
        #expect(try parse("true") == .literal(.bool(true)))
        // Keywords are lowercase, as OData writes them: `True` is a field name.
        #expect(try parse("a eq True") == bin(.eq, field("a"), field("True")))
    }

    @Test func dates() throws {
        let instant = try #require(Timestamp(iso8601: "2026-01-31T09:30:00.000Z"))
        let expected = bin(.gt, field("updatedAt"), .literal(.dateTime(instant)))
        #expect(try parse("updatedAt gt datetime'2026-01-31T09:30:00Z'") == expected)
        #expect(try parse("updatedAt gt datetime'2026-01-31T09:30:00'") == expected)
        #expect(try parse("updatedAt gt datetimeoffset'2026-01-31T09:30:00.000Z'") == expected)
        #expect(try parse("updatedAt gt datetimeoffset'2026-01-31T10:30:00+01:00'") == expected)
        #expect(try parse("updatedAt gt datetimeoffset'2026-01-31T09:30:00.0000000+00:00'") == expected)
        #expect(
            filterError("updatedAt gt datetime'2026-02-30T00:00:00Z'")
                == "invalid $filter at position 14: invalid datetime literal \"2026-02-30T00:00:00Z\" (expected ISO 8601, e.g. 2026-01-31T09:30:00.000Z)"
        )
        #expect(
            filterError("updatedAt gt datetimeoffset'yesterday'")?.hasPrefix(
                "invalid $filter at position 14: invalid datetimeoffset literal") == true)
        #expect(
            filterError("id eq guid'12345678-aaaa-bbbb-cccc-ddddeeeeffff'")?.hasPrefix(
                "invalid $filter at position 7: unsupported literal guid'…'") == true)
    }

    @Test func members() throws {
        #expect(try parse("_private_1 eq 1") == bin(.eq, field("_private_1"), int(1)))
        #expect(try parse("done") == field("done"))
        #expect(
            filterError("a/b eq 1")
                == "invalid $filter at position 2: unexpected character '/' (arithmetic is written add, sub, mul, div, mod)")
    }
}

@Suite struct OperatorParsingTests {
    @Test(arguments: [
        BinaryOperator.eq, .ne, .gt, .ge, .lt, .le, .and, .or, .add, .sub, .mul, .div, .mod,
    ])
    func everyBinaryOperator(_ op: BinaryOperator) throws {
        let expected = op.isArithmetic ? bin(.eq, bin(op, field("a"), field("b")), field("c")) : bin(op, field("a"), field("b"))
        let suffix = op.isArithmetic ? " eq c" : ""
        #expect(try parse("a \(op.rawValue) b" + suffix) == expected)
        #expect(try parse("(a)\(op.rawValue)(b)" + suffix) == expected)
    }

    @Test func unaryOperators() throws {
        #expect(try parse("not done") == .not(field("done")))
        #expect(try parse("not not done") == .not(.not(field("done"))))
        #expect(try parse("-a eq 1") == bin(.eq, .negate(field("a")), int(1)))
        #expect(try parse("- a eq 1") == bin(.eq, .negate(field("a")), int(1)))
        #expect(try parse("-(5) eq a") == bin(.eq, .negate(int(5)), field("a")))
        #expect(try parse("--a eq 1") == bin(.eq, .negate(.negate(field("a"))), int(1)))
        #expect(try parse("a sub -1 eq 0") == bin(.eq, bin(.sub, field("a"), int(-1)), int(0)))
    }

    @Test func precedence() throws {
        let cases: [(String, FilterExpression)] = [
            ("a or b and c", bin(.or, field("a"), bin(.and, field("b"), field("c")))),
            ("a and b or c", bin(.or, bin(.and, field("a"), field("b")), field("c"))),
            ("a eq 1 and b eq 2", bin(.and, bin(.eq, field("a"), int(1)), bin(.eq, field("b"), int(2)))),
            ("a add 1 eq 2", bin(.eq, bin(.add, field("a"), int(1)), int(2))),
            ("a add b mul c eq d", bin(.eq, bin(.add, field("a"), bin(.mul, field("b"), field("c"))), field("d"))),
            ("a mul b add c eq d", bin(.eq, bin(.add, bin(.mul, field("a"), field("b")), field("c")), field("d"))),
            ("(a add b) mul c eq d", bin(.eq, bin(.mul, bin(.add, field("a"), field("b")), field("c")), field("d"))),
            ("a sub b sub c eq d", bin(.eq, bin(.sub, bin(.sub, field("a"), field("b")), field("c")), field("d"))),
            ("a div b mod c eq d", bin(.eq, bin(.mod, bin(.div, field("a"), field("b")), field("c")), field("d"))),
            // Relational operators bind tighter than equality (OData v3).
            ("a eq b gt c", bin(.eq, field("a"), bin(.gt, field("b"), field("c")))),
            ("a gt b eq c", bin(.eq, bin(.gt, field("a"), field("b")), field("c"))),
            // Unary operators bind tighter than any binary operator.
            ("not a and b", bin(.and, .not(field("a")), field("b"))),
            ("not a eq b", bin(.eq, .not(field("a")), field("b"))),
            ("not (a eq b)", .not(bin(.eq, field("a"), field("b")))),
            ("-a mul b eq c", bin(.eq, bin(.mul, .negate(field("a")), field("b")), field("c"))),
            ("a or b or c", bin(.or, bin(.or, field("a"), field("b")), field("c"))),
            ("a and (b or c)", bin(.and, field("a"), bin(.or, field("b"), field("c")))),
            ("((a))", field("a")),
        ]
        for (text, expected) in cases {
            #expect(try parse(text) == expected, "\(text)")
        }
    }

    @Test func longChainsStayShallow() throws {
        let terms = (0..<1000).map { "id eq '\($0)'" }
        let expression = try parse(terms.joined(separator: " or "))
        func depth(_ e: FilterExpression) -> Int {
            if case .binary(_, let l, let r) = e { return 1 + max(depth(l), depth(r)) }
            return 1
        }
        #expect(depth(expression) <= 12)
        func leaves(_ e: FilterExpression) -> [String] {
            switch e {
            case .binary(.or, let l, let r): return leaves(l) + leaves(r)
            case .binary(.eq, _, .literal(.string(let s))): return [s]
            default: return []
            }
        }
        #expect(leaves(expression) == (0..<1000).map { "\($0)" })
    }

    @Test func nestingIsLimited() throws {
        let ok = String(repeating: "(", count: 100) + "a eq 1" + String(repeating: ")", count: 100)
        #expect(try parse(ok) == bin(.eq, field("a"), int(1)))
        let deep = String(repeating: "(", count: 101) + "a eq 1" + String(repeating: ")", count: 101)
        #expect(filterError(deep) == "invalid $filter at position 101: the filter is nested more than 100 levels deep")
        let nots = String(repeating: "not ", count: 5000) + "done"
        #expect(filterError(nots)?.contains("nested more than 100 levels deep") == true)
        let sums = "a" + String(repeating: " add 1", count: 150) + " eq 0"
        #expect(filterError(sums)?.contains("nested more than 100 levels deep") == true)
        let calls = String(repeating: "tolower(", count: 200) + "a" + String(repeating: ")", count: 200) + " eq 'x'"
        #expect(filterError(calls)?.contains("nested more than 100 levels deep") == true)
    }
}

@Suite struct FunctionParsingTests {
    @Test func everyFunction() throws {
        let cases: [(String, FilterFunction, [FilterExpression])] = [
            ("substringof('x', a)", .substringof, [string("x"), field("a")]),
            ("startswith(a, 'x')", .startswith, [field("a"), string("x")]),
            ("endswith(a, 'x')", .endswith, [field("a"), string("x")]),
            ("length(a) eq 1", .length, [field("a")]),
            ("tolower(a) eq 'x'", .tolower, [field("a")]),
            ("toupper(a) eq 'x'", .toupper, [field("a")]),
            ("trim(a) eq 'x'", .trim, [field("a")]),
            ("indexof(a, 'x') eq 1", .indexof, [field("a"), string("x")]),
            ("concat(a, 'x') eq 'x'", .concat, [field("a"), string("x")]),
            ("substring(a, 1) eq 'x'", .substring, [field("a"), int(1)]),
            ("substring(a, 1, 2) eq 'x'", .substring, [field("a"), int(1), int(2)]),
            ("replace(a, 'x', 'y') eq 'x'", .replace, [field("a"), string("x"), string("y")]),
            ("year(a) eq 1", .year, [field("a")]),
            ("month(a) eq 1", .month, [field("a")]),
            ("day(a) eq 1", .day, [field("a")]),
            ("hour(a) eq 1", .hour, [field("a")]),
            ("minute(a) eq 1", .minute, [field("a")]),
            ("second(a) eq 1", .second, [field("a")]),
            ("round(a) eq 1", .round, [field("a")]),
            ("floor(a) eq 1", .floor, [field("a")]),
            ("ceiling(a) eq 1", .ceiling, [field("a")]),
        ]
        #expect(Set(cases.map(\.1.rawValue)) == Set(FilterFunction.allCases.map(\.rawValue)))
        for (text, function, arguments) in cases {
            let parsed = try parse(text)
            let call: FilterExpression = .function(function, arguments)
            if case .binary(.eq, let left, _) = parsed {
                #expect(left == call, "\(text)")
            } else {
                #expect(parsed == call, "\(text)")
            }
        }
        #expect(
            try parse("startswith(tolower(concat(a, b)), 'x')")
                == .function(.startswith, [.function(.tolower, [.function(.concat, [field("a"), field("b")])]), string("x")]))
    }

    @Test func arityIsChecked() {
        let cases: [(String, String)] = [
            ("substringof('x') ", "substringof() takes 2 arguments, not 1"),
            ("startswith(a)", "startswith() takes 2 arguments, not 1"),
            ("endswith(a, 'b', 'c')", "endswith() takes 2 arguments, not 3"),
            ("length() eq 1", "length() takes 1 argument, not 0"),
            ("tolower(a, b) eq 'x'", "tolower() takes 1 argument, not 2"),
            ("toupper() eq 'x'", "toupper() takes 1 argument, not 0"),
            ("trim(a, b) eq 'x'", "trim() takes 1 argument, not 2"),
            ("indexof(a) eq 1", "indexof() takes 2 arguments, not 1"),
            ("concat(a) eq 'x'", "concat() takes 2 arguments, not 1"),
            ("substring(a) eq 'x'", "substring() takes 2 or 3 arguments, not 1"),
            ("substring(a, 1, 2, 3) eq 'x'", "substring() takes 2 or 3 arguments, not 4"),
            ("replace(a, 'x') eq 'x'", "replace() takes 3 arguments, not 2"),
            ("year() eq 1", "year() takes 1 argument, not 0"),
            ("month(a, b) eq 1", "month() takes 1 argument, not 2"),
            ("day() eq 1", "day() takes 1 argument, not 0"),
            ("hour(a, b) eq 1", "hour() takes 1 argument, not 2"),
            ("minute() eq 1", "minute() takes 1 argument, not 0"),
            ("second(a, b) eq 1", "second() takes 1 argument, not 2"),
            ("round() eq 1", "round() takes 1 argument, not 0"),
            ("floor(a, b) eq 1", "floor() takes 1 argument, not 2"),
            ("ceiling() eq 1", "ceiling() takes 1 argument, not 0"),
        ]
        #expect(Set(cases.map { String($0.0.prefix { $0 != "(" }) }) == Set(FilterFunction.allCases.map(\.rawValue)))
        for (text, message) in cases {
            #expect(filterError(text) == "invalid $filter at position 1: \(message)", "\(text)")
        }
    }

    @Test func argumentTypesAreChecked() {
        #expect(filterError("length(5) eq 1") == "invalid $filter at position 1: length() needs a string as argument 1, not a number")
        #expect(
            filterError("a eq 1 and round('x') eq 1")
                == "invalid $filter at position 12: round() needs a number as argument 1, not a string")
        #expect(
            filterError("substring(a, 'x') eq 'y'")
                == "invalid $filter at position 1: substring() needs a number as argument 2, not a string")
        #expect(filterError("year(true) eq 1") == "invalid $filter at position 1: year() needs a date as argument 1, not a boolean")
        // Dates are ISO text: they may stand for strings, and strings for dates.
        #expect(filterError("startswith(updatedAt, '2026-01')") == nil)
        #expect(filterError("year('2026-01-01') eq 2026") == nil)
    }

    @Test func unknownFunctions() {
        #expect(filterError("foo(a) eq 1") == "invalid $filter at position 1: unknown function 'foo'")
        #expect(
            filterError("x eq 1 or StartsWith(a, 'b')")
                == "invalid $filter at position 11: unknown function 'StartsWith' (function names are lowercase: startswith)")
        #expect(filterError("NOT(a)") == "invalid $filter at position 1: unknown function 'NOT' (operators are lowercase: not)")
    }
}

@Suite struct FilterTypeCheckTests {
    @Test func comparisonsNeedCompatibleTypes() {
        #expect(filterError("'a' eq 1") == "invalid $filter at position 5: 'eq' cannot compare a string with a number")
        #expect(filterError("id eq 5") == "invalid $filter at position 4: 'eq' cannot compare a string with a number")
        #expect(
            filterError("deleted gt false") == "invalid $filter at position 9: booleans can only be compared with 'eq' or 'ne', not 'gt'")
        #expect(filterError("not a eq 'x'") == "invalid $filter at position 7: 'eq' cannot compare a boolean with a string")
        #expect(filterError("updatedAt gt '2026'") == nil)
        #expect(filterError("a eq b") == nil)
        #expect(filterError("null eq null") == nil)
    }

    @Test func logicAndArithmeticNeedTheirTypes() {
        #expect(filterError("a eq 1 and 5") == "invalid $filter at position 8: 'and' needs boolean operands, not a number")
        #expect(filterError("'x' or a") == "invalid $filter at position 5: 'or' needs boolean operands, not a string")
        #expect(filterError("not 'x'") == "invalid $filter at position 1: 'not' needs a boolean operand, not a string")
        #expect(filterError("-'x' eq 1") == "invalid $filter at position 1: unary '-' needs a number, not a string")
        #expect(filterError("a add 'x' eq 1") == "invalid $filter at position 3: 'add' needs numbers, not a string")
        #expect(filterError("updatedAt add 1 eq 1") == "invalid $filter at position 11: 'add' needs numbers, not a date")
        #expect(filterError("5") == "invalid $filter at position 1: the filter must be a condition (true or false), not a number")
        #expect(filterError("tolower(a)") == "invalid $filter at position 1: the filter must be a condition (true or false), not a string")
    }
}

@Suite struct MalformedFilterTests {
    @Test func errorsNameThePosition() {
        let cases: [(String, String)] = [
            ("", "at position 1: the filter is empty"),
            ("   ", "at position 1: the filter is empty"),
            ("a eq", "at position 5: unexpected end of the filter, expected a value"),
            ("a eq 'abc", "at position 6: unterminated string (close it with ', and write a quote inside it as '')"),
            ("a eq 'it's'", "at position 10: unexpected character 's' right after the string \"it\" (write a quote inside a string as '')"),
            ("a eq 1 b", "at position 8: unexpected 'b', expected an operator such as and, or, eq"),
            (
                "a eq 1 AND b eq 2",
                "at position 8: unexpected 'AND', expected an operator such as and, or, eq (operators are lowercase: and)"
            ),
            ("a EQ 1", "at position 3: unexpected 'EQ', expected an operator such as and, or, eq (operators are lowercase: eq)"),
            ("(a eq 1", "at position 8: unexpected end of the filter, expected ')' to close the '(' at position 1"),
            ("a eq 1)", "at position 7: unexpected ')', expected an operator such as and, or, eq"),
            ("a = 1", "at position 3: unexpected character '=' (comparisons are written eq, ne, gt, ge, lt, le)"),
            ("a eq \"x\"", "at position 6: unexpected character '\"' (strings are quoted with ')"),
            ("a eq 1 && b", "at position 8: unexpected character '&' (use and, or, not)"),
            ("eq 1", "at position 1: expected a value before the operator 'eq'"),
            ("a eq eq", "at position 6: expected a value before the operator 'eq'"),
            ("startswith(a, 'x'", "at position 18: unexpected end of the filter, expected ')' to close the '(' at position 11"),
            ("startswith(a,, 'x')", "at position 14: expected a value, found ','"),
            ("a eq ()", "at position 7: expected a value, found ')'"),
            ("a eq 1.", "at position 8: expected a digit after '.'"),
            ("a eq 1e", "at position 8: expected a digit in the exponent"),
            ("a eq 12abc", "at position 8: unexpected character 'a' after a number"),
            ("a eq .5", "at position 6: unexpected character '.'"),
            ("a eq 1 or", "at position 10: unexpected end of the filter, expected a value"),
            ("a eq 'x' not b", "at position 10: unexpected 'not', expected an operator such as and, or, eq"),
            ("ä eq 1", "at position 1: unexpected character 'ä'"),
        ]
        for (text, message) in cases {
            #expect(filterError(text) == "invalid $filter \(message)", "\(text)")
        }
    }

    @Test func injectionStaysOneString() throws {
        #expect(try parse("text eq 'x'') or 1=1 --'") == bin(.eq, field("text"), string("x') or 1=1 --")))
        #expect(try parse("text eq '; DROP TABLE t; --'") == bin(.eq, field("text"), string("; DROP TABLE t; --")))
        #expect(filterError("text eq 'x' or 1=1 --'") != nil)
    }
}

@Suite struct OrderByAndSelectTests {
    @Test func orderBy() throws {
        #expect(
            try ODataParser.parseOrderBy("a desc, b asc, c") == [
                SortKey(field: "a", descending: true), SortKey(field: "b", descending: false), SortKey(field: "c", descending: false),
            ])
        #expect(try ODataParser.parseOrderBy("updatedAt") == [SortKey(field: "updatedAt", descending: false)])
        #expect(
            try ODataParser.parseOrderBy("  updatedAt   desc ,id ") == [
                SortKey(field: "updatedAt", descending: true), SortKey(field: "id", descending: false),
            ])
    }

    @Test func orderByErrors() {
        func message(_ text: String) -> String? {
            do {
                _ = try ODataParser.parseOrderBy(text)
                return nil
            } catch {
                #expect(error.kind == .invalidInput)
                return error.message
            }
        }
        #expect(message("") == "invalid $orderby at position 1: it is empty; give at least one field name")
        #expect(message("a,,b") == "invalid $orderby at position 3: empty item (remove the extra ',')")
        #expect(message("a, b,") == "invalid $orderby at position 6: empty item (remove the extra ',')")
        #expect(message("a descending") == "invalid $orderby at position 3: expected asc or desc after a, found 'descending'")
        #expect(message("a DESC") == "invalid $orderby at position 3: expected asc or desc after a, found 'DESC'")
        #expect(message("a desc b") == "invalid $orderby at position 8: expected ',' or the end after a desc")
        #expect(message("a, length(b)")?.hasPrefix("invalid $orderby at position 4: invalid field name \"length(b)\"") == true)
        #expect(message("a, b desc, a") == "invalid $orderby at position 12: a appears more than once")
    }

    @Test func select() throws {
        #expect(try ODataParser.parseSelect("a,b,c") == ["a", "b", "c"])
        #expect(try ODataParser.parseSelect(" text , updatedAt,text") == ["text", "updatedAt"])
        #expect(throws: TSyncError.invalidInput("invalid $select at position 3: empty item (remove the extra ',')")) {
            try ODataParser.parseSelect("a,,b")
        }
        #expect(throws: TSyncError.invalidInput("invalid $select at position 3: expected ',' or the end after a")) {
            try ODataParser.parseSelect("a b")
        }
        #expect(
            throws: TSyncError.invalidInput("invalid $select at position 1: '*' is not supported; leave out $select to get every field")
        ) {
            try ODataParser.parseSelect("*")
        }
        #expect(throws: TSyncError.self) { try ODataParser.parseSelect("a,b-c") }
        #expect(throws: TSyncError.self) { try ODataParser.parseSelect("") }
    }
}

@Suite struct ODataTextTests {
    @Test func roundTrips() throws {
        let filters = [
            "a eq 'it''s' and (b gt 5 or c lt -2.5)",
            "updatedAt gt datetime'2026-01-31T09:30:00.123Z' or (updatedAt eq datetime'2026-01-31T09:30:00.123Z' and id gt 'k')",
            "not (a eq null) and not done",
            "(a add b) mul c sub -(d) eq -(5) mod 2",
            "a sub (b sub c) eq 0",
            "a eq b gt c",
            "(a eq b) eq (c gt d)",
            "a or b or c or d or e",
            "(a or b) and (c or d)",
            "substring(tolower(text), 1, 2) eq 'x' and year(createdAt) ge 2026",
            "-9223372036854775808 lt n and price ge 1e300 and x eq 0.1",
            "--a eq -(-1)",
        ]
        for text in filters {
            let expression = try parse(text)
            #expect(try parse(expression.odataText) == expression, "\(text) → \(expression.odataText)")
        }
        #expect(try parse("a eq 'it''s'").odataText == "a eq 'it''s'")
        #expect(try parse("a or b and c").odataText == "a or b and c")
        #expect(try parse("(a or b) and c").odataText == "(a or b) and c")
        #expect(try parse("a sub (b sub c) eq 0").odataText == "a sub (b sub c) eq 0")
        #expect(
            try parse("updatedAt gt datetime'2026-01-31T09:30:00Z'").odataText
                == "updatedAt gt datetimeoffset'2026-01-31T09:30:00.000Z'")
    }

    /// A text with no quote is written without `replacing`, as the general path writes it: texts
    /// without a quote, with quotes anywhere, a quote with a combining mark (one character that
    /// is not a quote) and text above ASCII.
    @Test func aTextWithoutQuotesIsWrittenAsTheGeneralPathWritesIt() {
        let texts = [
            "", "a", "item-0000001", "'", "''", "it's", "'a'", "a'", "'a", "\u{E9}t\u{E9}", "'\u{301}", "a'\u{301}b'",
            "\u{1F600}'\u{1F600}", "no quote \u{201C}here\u{201D}", String(repeating: "x", count: 300) + "'",
        ]
        for text in texts {
            let general = "'" + text.replacing("'", with: "''") + "'"
            #expect(FilterLiteral.string(text).odataText == general, "\(text.debugDescription)")
        }
    }

    @Test func handBuiltTreesRoundTrip() throws {
        let leftDeep = bin(.or, bin(.or, bin(.or, field("a"), field("b")), field("c")), field("d"))
        #expect(try parse(leftDeep.odataText) == leftDeep)
        let negated: FilterExpression = bin(.eq, .negate(int(5)), .negate(double(-1.5)))
        #expect(try parse(negated.odataText) == negated)
    }
}
