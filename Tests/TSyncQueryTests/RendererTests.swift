import TSyncModel
import Testing

@testable import TSyncQuery

private let sqlite = SQLRenderer(
    schema: SQLSchema(dialect: .sqlite, bodyColumn: "body", systemColumns: SQLSchema.snakeCaseSystemColumns))
private let postgres = SQLRenderer(
    schema: SQLSchema(dialect: .postgres, bodyColumn: "body", systemColumns: SQLSchema.snakeCaseSystemColumns))

private func render(_ renderer: SQLRenderer, _ filter: String, from first: Int = 1) throws -> SQLFragment {
    try renderer.whereClause(try ODataParser.parseFilter(filter), firstArgumentIndex: first)
}

/// The `$n` numbers of a PostgreSQL rendering, in order of appearance.
private func placeholders(_ sql: String) -> [Int] {
    var numbers: [Int] = []
    var characters = sql[...]
    while let dollar = characters.firstIndex(of: "$") {
        let digits = characters[characters.index(after: dollar)...].prefix { $0.isNumber }
        if let number = Int(digits) { numbers.append(number) }
        characters = characters[characters.index(after: dollar)...]
    }
    return numbers
}

private func isBalanced(_ sql: String) -> Bool {
    var depth = 0
    var inString = false
    for character in sql {
        if character == "'" { inString.toggle() }
        if inString { continue }
        if character == "(" { depth += 1 }
        if character == ")" { depth -= 1 }
        if depth < 0 { return false }
    }
    return depth == 0 && !inString
}

@Suite struct SQLiteRenderingTests {
    @Test func fieldsAreJSONExtractWithBoundPaths() throws {
        let fragment = try render(sqlite, "text eq 'x'")
        #expect(fragment.sql == #"((CASE json_type("body", ?) WHEN 'text' THEN json_extract("body", ?) END) IS ?)"#)
        #expect(fragment.arguments == [.text(#"$."text""#), .text(#"$."text""#), .text("x")])
        let untyped = try render(sqlite, "done eq null")
        #expect(untyped.sql == #"(json_extract("body", ?) IS NULL)"#)
        #expect(untyped.arguments == [.text(#"$."done""#)])
        #expect(try render(sqlite, "done ne null").sql == #"(json_extract("body", ?) IS NOT NULL)"#)
        // Two fields compare kind by kind (docs/FILTERS.md): numbers, then strings, then booleans.
        let pair = try render(sqlite, "lo lt hi")
        #expect(
            pair.sql.hasPrefix(#"COALESCE(((CASE WHEN json_type("body", ?) IN ('integer', 'real') THEN json_extract("body", ?) END) < "#))
        #expect(pair.sql.contains(#"((CASE json_type("body", ?) WHEN 'text' THEN json_extract("body", ?) END) < "#))
        #expect(Set(pair.arguments) == [.text(#"$."lo""#), .text(#"$."hi""#)])
    }

    @Test func literalsOfEveryKind() throws {
        let numbers = try render(sqlite, "n gt 5 and price lt 2.5")
        #expect(numbers.sql.contains("IN ('integer', 'real')"))
        #expect(
            numbers.arguments == [.text(#"$."n""#), .text(#"$."n""#), .int(5), .text(#"$."price""#), .text(#"$."price""#), .double(2.5)])
        let flags = try render(sqlite, "done eq true and deleted eq false")
        #expect(flags.sql == #"(((CASE json_type("body", ?) WHEN 'true' THEN 1 WHEN 'false' THEN 0 END) IS ?) AND ("deleted" IS ?))"#)
        #expect(flags.arguments == [.text(#"$."done""#), .int(1), .int(0)])
        let dates = try render(sqlite, "createdAt ge datetimeoffset'2026-01-31T10:30:00+01:00'")
        #expect(dates.sql == #"("created_at" >= ?)"#)
        #expect(dates.arguments == [.text("2026-01-31T09:30:00.000Z")])
    }

    @Test func checkpointFilter() throws {
        let fragment = try render(
            sqlite, "updatedAt gt datetime'2026-01-01T00:00:00.123Z' or (updatedAt eq datetime'2026-01-01T00:00:00.123Z' and id gt 'k')")
        #expect(fragment.sql == #"(("updated_at" > ?) OR (("updated_at" IS ?) AND ("id" > ?)))"#)
        #expect(fragment.arguments == [.text("2026-01-01T00:00:00.123Z"), .text("2026-01-01T00:00:00.123Z"), .text("k")])
    }

    @Test func orderBy() throws {
        #expect(try sqlite.orderBy([]) == SQLFragment(sql: #""id" ASC"#, arguments: []))
        #expect(try sqlite.orderBy([SortKey(field: "updatedAt")]) == SQLFragment(sql: #""updated_at" ASC, "id" ASC"#))
        #expect(
            try sqlite.orderBy([SortKey(field: "text", descending: true), SortKey(field: "id", descending: true)])
                == SQLFragment(sql: #"json_extract("body", ?) DESC, "id" DESC"#, arguments: [.text(#"$."text""#)]))
        #expect(
            try sqlite.orderBy([SortKey(field: "id"), SortKey(field: "n")])
                == SQLFragment(sql: #""id" ASC, json_extract("body", ?) ASC"#, arguments: [.text(#"$."n""#)]))
        #expect(throws: TSyncError.self) { try sqlite.orderBy([SortKey(field: "a b")]) }
    }
}

@Suite struct PostgresRenderingTests {
    @Test func typedFieldReadsAndCasts() throws {
        let text = try render(postgres, "text eq 'x'", from: 3)
        #expect(
            text.sql == #"((CASE WHEN jsonb_typeof("body"->$3::text) = 'string' THEN "body"->>$3::text END) IS NOT DISTINCT FROM $4::text)"#
        )
        #expect(text.arguments == [.text("text"), .text("x")])
        let number = try render(postgres, "n gt 5")
        #expect(
            number.sql == #"((CASE WHEN jsonb_typeof("body"->$1::text) = 'number' THEN ("body"->>$1::text)::numeric END) > $2::numeric)"#)
        #expect(number.arguments == [.text("n"), .int(5)])
        let flag = try render(postgres, "done ne false")
        #expect(
            flag.sql
                == #"((CASE WHEN jsonb_typeof("body"->$1::text) = 'boolean' THEN ("body"->>$1::text)::boolean END) IS DISTINCT FROM $2::boolean)"#
        )
        #expect(flag.arguments == [.text("done"), .bool(false)])
        let real = try render(postgres, "price le -2.5")
        #expect(real.arguments == [.text("price"), .double(-2.5)])
        #expect(real.sql.hasSuffix(" <= ($2::numeric + 0.0))"), "a real literal keeps a fractional digit")
    }

    @Test func nullAndJSONComparisons() throws {
        #expect(try render(postgres, "done eq null").sql == #"(NULLIF("body"->$1::text, 'null'::jsonb) IS NULL)"#)
        #expect(try render(postgres, "null ne done").sql == #"(NULLIF("body"->$1::text, 'null'::jsonb) IS NOT NULL)"#)
        #expect(try render(postgres, "version eq null").sql == #"("version" IS NULL)"#)
        let pair = try render(postgres, "lo le hi", from: 7)
        #expect(pair.sql.hasPrefix("COALESCE("))
        #expect(pair.sql.contains(#"THEN "body"->>$9::text END) COLLATE "C" <= "#), "strings compare by bytes")
        #expect(pair.arguments == [.text("lo"), .text("hi"), .text("lo"), .text("hi"), .text("lo"), .text("hi")])
        let equal = try render(postgres, "lo eq hi")
        #expect(equal.sql.hasPrefix(#"((NULLIF("body"->$"#) && equal.sql.hasSuffix(", FALSE))"))
        #expect(try render(postgres, "concat(text, null) eq 'x'").sql.contains("|| NULL::text)"))
    }

    @Test func systemColumnsAndCheckpoint() throws {
        let fragment = try render(
            postgres, "updatedAt gt datetime'2026-01-01T00:00:00.123Z' or (updatedAt eq datetime'2026-01-01T00:00:00.123Z' and id gt 'k')",
            from: 2)
        #expect(
            fragment.sql
                == #"(("updated_at" COLLATE "C" > $2::text) OR (("updated_at" IS NOT DISTINCT FROM $3::text) AND ("id" COLLATE "C" > $4::text)))"#
        )
        #expect(fragment.arguments == [.text("2026-01-01T00:00:00.123Z"), .text("2026-01-01T00:00:00.123Z"), .text("k")])
        #expect(
            try render(postgres, "deleted eq true")
                == SQLFragment(sql: #"("deleted" IS NOT DISTINCT FROM $1::boolean)"#, arguments: [.bool(true)]))
        #expect(try render(postgres, "not deleted") == SQLFragment(sql: #"(NOT "deleted")"#))
    }

    @Test func divisionNeverRaises() throws {
        let integral = try render(postgres, "n div m eq 1")
        #expect(integral.sql.contains("scale("))
        #expect(integral.sql.contains("trunc("))
        #expect(integral.sql.contains("NULLIF($2::numeric, 0)") == false)
        #expect(integral.sql.contains("NULLIF("))
        let real = try render(postgres, "n div 2.0 eq 1")
        #expect(real.sql.contains("/ NULLIF(($2::numeric + 0.0), 0))"))
        #expect(!real.sql.contains("scale("))
        #expect(try render(postgres, "n mod 2 eq 1").sql.contains("% NULLIF($2::numeric, 0))"))
    }

    @Test func orderBy() throws {
        #expect(try postgres.orderBy([]) == SQLFragment(sql: #""id" COLLATE "C" ASC"#))
        #expect(
            try postgres.orderBy([SortKey(field: "updatedAt"), SortKey(field: "deleted", descending: true)])
                == SQLFragment(sql: #""updated_at" COLLATE "C" ASC, "deleted" DESC, "id" COLLATE "C" ASC"#))
        #expect(
            try postgres.orderBy([SortKey(field: "text", descending: true), SortKey(field: "n")], firstArgumentIndex: 4)
                == SQLFragment(
                    // User fields: jsonb's order between kinds, then strings by bytes (not the database's collation).
                    sql:
                        #"(CASE WHEN jsonb_typeof(NULLIF("body"->$4::text, 'null'::jsonb)) = 'string' THEN '""'::jsonb ELSE NULLIF("body"->$4::text, 'null'::jsonb) END) DESC NULLS LAST, (CASE WHEN jsonb_typeof(NULLIF("body"->$4::text, 'null'::jsonb)) = 'string' THEN NULLIF("body"->$4::text, 'null'::jsonb) #>> '{}' END) COLLATE "C" DESC NULLS LAST, (CASE WHEN jsonb_typeof(NULLIF("body"->$5::text, 'null'::jsonb)) = 'string' THEN '""'::jsonb ELSE NULLIF("body"->$5::text, 'null'::jsonb) END) ASC NULLS FIRST, (CASE WHEN jsonb_typeof(NULLIF("body"->$5::text, 'null'::jsonb)) = 'string' THEN NULLIF("body"->$5::text, 'null'::jsonb) #>> '{}' END) COLLATE "C" ASC NULLS FIRST, "id" COLLATE "C" ASC"#,
                    arguments: [.text("text"), .text("n")]))
    }
}

@Suite struct RenderingInvariantTests {
    static let filters: [String] = [
        "substringof('x', text)", "startswith(text, 'x')", "endswith(text, 'x')", "length(text) eq 1",
        "tolower(text) eq 'x'", "toupper(text) eq 'x'", "trim(text) eq 'x'", "indexof(text, 'x') eq 1",
        "concat(text, 'x') eq 'x'", "substring(text, 1) eq 'x'", "substring(text, 1, 2) eq 'x'",
        "replace(text, 'x', 'y') eq 'x'", "year(when) eq 1", "month(when) eq 1", "day(when) eq 1", "hour(when) eq 1",
        "minute(when) eq 1", "second(when) eq 1", "round(n) eq 1", "floor(n) eq 1", "ceiling(n) eq 1",
        "n add 1 sub 2 mul 3 div 4 mod 5 eq -n", "not (a eq b) or c", "floor(floor(n add 1)) eq length(substring(text, n div 2, n mod 3))",
        "endswith(concat(text, 'a'), tolower(text))", "year(updatedAt) eq 2026 and startswith(createdAt, '2026')",
    ]

    @Test(arguments: filters) func placeholdersMatchArguments(_ filter: String) throws {
        let lite = try render(sqlite, filter)
        #expect(lite.sql.filter { $0 == "?" }.count == lite.arguments.count)
        #expect(!lite.sql.contains("$"))
        #expect(isBalanced(lite.sql))
        #expect(!lite.sql.contains("--"))

        let pg = try render(postgres, filter, from: 5)
        let numbers = placeholders(pg.sql)
        #expect(!pg.sql.contains("?"))
        #expect(isBalanced(pg.sql))
        #expect(!pg.sql.contains("--"))
        // Numbered from 5 in order of first use, each used number bound, each placeholder cast.
        var firstUses: [Int] = []
        for number in numbers where !firstUses.contains(number) { firstUses.append(number) }
        #expect(firstUses == Array(5..<(5 + pg.arguments.count)))
        #expect(pg.sql.components(separatedBy: "::").count > numbers.count)
        for number in Set(numbers) {
            #expect(pg.sql.contains("$\(number)::"))
        }
    }

    @Test func injectionNeverReachesTheSQLText() throws {
        let hostile = "x') or 1=1 --"
        // SQLite binds the prefix of startswith twice; PostgreSQL reuses its placeholder.
        for (renderer, uses) in [(sqlite, 3), (postgres, 2)] {
            let fragment = try render(renderer, "text eq 'x'') or 1=1 --' or startswith(text, 'x'') or 1=1 --')")
            #expect(!fragment.sql.contains("1=1"))
            #expect(fragment.arguments.filter { $0 == .text(hostile) }.count == uses)
        }
    }

    @Test func nestedFunctionsGrowLinearly() throws {
        var filter = "n"
        for _ in 0..<30 { filter = "floor(ceiling(\(filter)) mod 7)" }
        let fragment = try render(postgres, filter + " eq 1")
        #expect(fragment.sql.count < 40_000)
        #expect(fragment.arguments.count < 200)
        // SQLite could not even parse that much nesting: refused as bad input (SQLiteParserDepthTests).
        #expect(throws: TSyncError.self) { try render(sqlite, filter + " eq 1") }
        filter = "floor(ceiling(n) mod 7)"
        #expect(try render(sqlite, filter + " eq 1").arguments.count < 20)
    }

    @Test func schemaNamesAreQuotedAsGiven() throws {
        let renderer = SQLRenderer(
            schema: SQLSchema(dialect: .sqlite, bodyColumn: #"my "body""#, systemColumns: ["id": "ID", "updatedAt": "ts"]))
        let fragment = try render(renderer, "updatedAt gt '2026' and deleted")
        // `deleted` has no column here: it is read from the JSON body, as a boolean.
        #expect(fragment.sql == #"(("ts" > ?) AND (CASE json_type("my ""body""", ?) WHEN 'true' THEN 1 WHEN 'false' THEN 0 END))"#)
        #expect(fragment.arguments == [.text("2026"), .text(#"$."deleted""#)])
        #expect(try renderer.orderBy([SortKey(field: "updatedAt")]).sql == #""ts" ASC, "ID" ASC"#)
    }
}

@Suite struct RendererErrorTests {
    @Test func handBuiltTreesAreChecked() {
        #expect(
            throws: TSyncError.invalidInput(
                #"invalid field name "a; drop table t": use letters, digits and '_', starting with a letter or '_'"#)
        ) {
            try sqlite.whereClause(.binary(.eq, .field("a; drop table t"), .literal(.int(1))))
        }
        #expect(throws: TSyncError.invalidInput("invalid $filter: length() needs a string as argument 1, not a number")) {
            try postgres.whereClause(.binary(.eq, .function(.length, [.literal(.int(5))]), .literal(.int(1))))
        }
        #expect(throws: TSyncError.invalidInput("invalid $filter: substring() takes 2 or 3 arguments, not 1")) {
            try sqlite.whereClause(.binary(.eq, .function(.substring, [.field("a")]), .literal(.string("x"))))
        }
        #expect(throws: TSyncError.invalidInput("invalid $filter: the filter must be a condition (true or false), not a number")) {
            try sqlite.whereClause(.literal(.int(1)))
        }
        #expect(throws: TSyncError.invalidInput("invalid $filter: 'eq' cannot compare a string with a number")) {
            try sqlite.whereClause(.binary(.eq, .field("id"), .literal(.int(1))))
        }
        var deep: FilterExpression = .field("done")
        for _ in 0..<150 { deep = .not(deep) }
        #expect(throws: TSyncError.invalidInput("invalid $filter: it is nested more than 100 levels deep")) {
            try sqlite.whereClause(deep)
        }
    }

    @Test func parsedFiltersAlwaysRender() throws {
        // Whatever the parser accepts, the renderer must translate, on both backends.
        for filter in RenderingInvariantTests.filters + [
            "null eq null", "true", "a", "not a", "-(1) eq a", "updatedAt eq createdAt", "id eq version", "a eq b and b ne c",
        ] {
            let expression = try ODataParser.parseFilter(filter)
            _ = try sqlite.whereClause(expression)
            _ = try postgres.whereClause(expression)
        }
    }
}
