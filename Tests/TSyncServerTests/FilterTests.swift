import Testing
import TSyncModel
import TSyncQuery
@testable import TSyncServer

/// Every `$filter` operator and function of docs/DESIGN.md §4 through the server, against known rows.
/// The translation itself belongs to TSyncQuery; these tests pin what a client gets back.
@Suite struct FilterTests {
    static let rows: [JSONValue] = [
        ["id": "a", "text": "Buy milk", "n": 1, "price": 2.5, "done": false, "due": "2026-03-15T10:20:30.000Z"],
        ["id": "b", "text": "it's done", "n": 2, "price": 10.0, "done": true, "due": "2025-12-01T00:00:00.000Z", "tag": "x"],
        ["id": "c", "text": "  Padded  ", "n": 3, "price": -1.25, "done": false, "tag": "y"],
        ["id": "d", "text": "MILK shake", "n": 4, "price": 7.49, "done": true, "due": "2026-01-31T23:59:59.999Z"],
    ]

    static let cases: [(filter: String, ids: [String])] = [
        ("n eq 2", ["b"]),
        ("n ne 2", ["a", "c", "d"]),
        ("n gt 2", ["c", "d"]),
        ("n ge 2", ["b", "c", "d"]),
        ("n lt 2", ["a"]),
        ("n le 2", ["a", "b"]),
        ("done eq true and n gt 2", ["d"]),
        ("n eq 1 or n eq 3", ["a", "c"]),
        ("not (n eq 1)", ["b", "c", "d"]),
        ("(n eq 1 or n eq 2) and done eq false", ["a"]),
        ("n add 1 eq 3", ["b"]),
        ("n sub 1 eq 0", ["a"]),
        ("n mul 2 eq 8", ["d"]),
        ("n div 2 eq 2", ["d"]),
        ("n mod 2 eq 1", ["a", "c"]),
        ("-n eq -3", ["c"]),
        ("tag eq null", ["a", "d"]),
        ("tag ne null", ["b", "c"]),
        ("done eq false", ["a", "c"]),
        ("price gt 5.0", ["b", "d"]),
        ("price lt 0", ["c"]),
        ("text eq 'it''s done'", ["b"]),
        ("substringof('milk', text)", ["a"]),
        ("substringof('milk', tolower(text))", ["a", "d"]),
        ("startswith(text, 'Buy')", ["a"]),
        ("endswith(text, 'shake')", ["d"]),
        ("length(text) eq 8", ["a"]),
        ("toupper(text) eq 'BUY MILK'", ["a"]),
        ("trim(text) eq 'Padded'", ["c"]),
        ("indexof(text, 'milk') eq 4", ["a"]),
        ("concat(text, '!') eq 'Buy milk!'", ["a"]),
        ("substring(text, 4) eq 'milk'", ["a"]),
        ("substring(text, 0, 4) eq 'MILK'", ["d"]),
        ("replace(text, ' ', '_') eq 'Buy_milk'", ["a"]),
        ("year(due) eq 2026", ["a", "d"]),
        ("month(due) eq 12", ["b"]),
        ("day(due) eq 31", ["d"]),
        ("hour(due) eq 10", ["a"]),
        ("minute(due) eq 20", ["a"]),
        ("second(due) eq 59", ["d"]),
        ("round(price) eq 3", ["a"]),
        ("floor(price) eq -2", ["c"]),
        ("ceiling(price) eq 8", ["d"]),
        ("due gt datetime'2026-01-01T00:00:00Z'", ["a", "d"]),
        ("due lt datetimeoffset'2026-01-01T00:00:00+00:00'", ["b"]),
        ("updatedAt gt datetime'2000-01-01T00:00:00Z'", ["a", "b", "c", "d"]),
        ("updatedAt lt datetime'2000-01-01T00:00:00Z'", []),
        ("id eq 'b'", ["b"]),
        ("id gt 'b'", ["c", "d"]),
        ("deleted eq false", ["a", "b", "c", "d"]),
    ]

    @Test func everyOperatorAndFunction() async throws {
        try await withTestServer { http in
            for row in Self.rows { try await http.insert("items", row) }
            for (filter, expected) in Self.cases {
                let reply = try await http.get("/tables/items?$orderby=id&$filter=" + QueryString.encode(filter))
                #expect(reply.status == 200, "\(filter): \(reply.text)")
                #expect(reply.ids == expected, "\(filter)")
            }
        }
    }

    @Test func deletedCanBeFilteredWhenIncluded() async throws {
        try await withTestServer { http in
            for row in Self.rows { try await http.insert("items", row) }
            #expect(try await http.delete("/tables/items/c").status == 200)
            let reply = try await http.get("/tables/items?__includeDeleted=true&$filter=" + QueryString.encode("deleted eq true"))
            #expect(reply.ids == ["c"])
            #expect(try await http.get("/tables/items?$filter=" + QueryString.encode("deleted eq true")).ids == [])
        }
    }

    /// The incremental pull of docs/DESIGN.md §2.1: (updatedAt, id) checkpoints fetch every record once.
    @Test func checkpointFilterWalksEveryRecordOnce() async throws {
        try await withTestServer(clock: { Timestamp(millisecondsSinceEpoch: 1_800_000_000_000) }) { http in
            for index in 0..<12 { try await http.insert("items", ["id": .string("k\(index % 4)-\(index)")]) }
            var checkpoint: (String, String)?
            var seen: [String] = []
            for _ in 0..<10 {
                var uri = "/tables/items?$orderby=updatedAt,id&$top=5"
                if let (stamp, id) = checkpoint {
                    let filter = "updatedAt gt datetime'\(stamp)' or (updatedAt eq datetime'\(stamp)' and id gt '\(id)')"
                    uri += "&$filter=" + QueryString.encode(filter)
                }
                let page = try await http.get(uri)
                #expect(page.status == 200, "\(page.text)")
                guard let last = page.array.last?.objectValue else { break }
                seen += page.ids
                checkpoint = (last["updatedAt"]?.stringValue ?? "", last["id"]?.stringValue ?? "")
            }
            #expect(seen.count == 12)
            #expect(Set(seen).count == 12)
        }
    }

    @Test func invalidFiltersAre400WithThePosition() async throws {
        try await withTestServer { http in
            try await http.insert("items", ["id": "a"])
            let reply = try await http.get("/tables/items?$filter=" + QueryString.encode("n eq eq 1"))
            #expect(reply.status == 400)
            #expect(reply.error?.contains("position") == true, "\(reply.text)")
            for bad in ["n eq", "(n eq 1", "foo(n) eq 1", "n eq 'open", "n @ 1", "n eq 1 1"] {
                let answer = try await http.get("/tables/items?$filter=" + QueryString.encode(bad))
                #expect(answer.status == 400, "\(bad): \(answer.text)")
                #expect(answer.error != nil)
            }
        }
    }

    /// A filter kept parsed is the filter parsed anew, and one that fails fails alike, each time,
    /// also once more filters than are kept have been read.
    @Test func keptFiltersAreParsedAsInGeneral() {
        let filters = ParsedFilters()
        let texts =
            [
                "n eq 1",
                "updatedAt ge datetimeoffset'2026-01-01T00:00:00.000Z' and (updatedAt gt datetimeoffset'2026-01-01T00:00:00.000Z' "
                    + "or (updatedAt eq datetimeoffset'2026-01-01T00:00:00.000Z' and id gt 'a'))",
                "startswith(text, 'Buy') or n lt -2", "n eq eq 1", "(n eq 1", "n eq 'open", "text eq 'caf\u{E9}'",
                Array(repeating: "n eq 1", count: 100).joined(separator: " or "),
            ] + (0..<(ParsedFilters.capacity + 10)).map { "n eq \($0)" }
        Self.expectKeptAsGeneral(texts, general: ODataParser.parseFilter, kept: filters.filter)
    }

    /// An `$orderby` kept parsed is the one parsed anew, and one that fails fails alike, each
    /// time, also once more than are kept have been read.
    @Test func keptOrdersAreParsedAsInGeneral() {
        let filters = ParsedFilters()
        let texts =
            [
                "updatedAt,id", "n desc, id", " text asc ", "n desc desc", "n,", "(n)", "caf\u{E9} desc",
                String(repeating: "n,", count: 300) + "n",
            ]
            + (0..<(ParsedFilters.capacity + 10)).map { "f\($0) desc" }
        Self.expectKeptAsGeneral(texts, general: ODataParser.parseOrderBy, kept: filters.orderBy)
    }

    /// Each text read twice through `kept` gives what `general` gives, or fails with its message.
    static func expectKeptAsGeneral<Parsed: Equatable>(
        _ texts: [String], general: (String) throws(TSyncError) -> Parsed, kept: (String) throws(TSyncError) -> Parsed
    ) {
        for _ in 0..<2 {
            for text in texts {
                let expected = Result { () throws(TSyncError) in try general(text) }
                let got = Result { () throws(TSyncError) in try kept(text) }
                switch (expected, got) {
                case (.success(let expected), .success(let got)): #expect(got == expected, "\(text)")
                case (.failure(let expected), .failure(let got)): #expect(got.message == expected.message, "\(text)")
                default: Issue.record("\(text): \(expected) but kept \(got)")
                }
            }
        }
    }

    @Test func injectionAttemptsStayData() async throws {
        try await withTestServer { http in
            for row in Self.rows { try await http.insert("items", row) }
            let literals = [
                "text eq 'x'' or 1 eq 1 or ''a'' eq ''a'",
                "text eq 'a''); DROP TABLE t_items; --'",
                "text eq '\" OR \"\"=\"'",
                "substringof(''' OR 1=1 --', text)",
            ]
            for filter in literals {
                let reply = try await http.get("/tables/items?$filter=" + QueryString.encode(filter))
                #expect(reply.status == 200, "\(filter): \(reply.text)")
                #expect(reply.ids == [], "\(filter)")
            }
            let refused = [
                "$filter=" + QueryString.encode("n eq 1; DROP TABLE t_items"),
                "$filter=" + QueryString.encode("json_extract(body, '$.n') eq 1"),
                "$filter=" + QueryString.encode("a\"b eq 1"),
                "$orderby=" + QueryString.encode("n; DROP TABLE t_items"),
                "$orderby=" + QueryString.encode("(SELECT 1)"),
                "$select=" + QueryString.encode("id) FROM sqlite_master --"),
            ]
            for query in refused {
                let reply = try await http.get("/tables/items?" + query)
                #expect(reply.status == 400, "\(query): \(reply.text)")
            }
            #expect(try await http.get("/tables/items?$orderby=id").ids == ["a", "b", "c", "d"])
        }
    }
}
