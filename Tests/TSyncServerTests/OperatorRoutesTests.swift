import HTTPTypes
import Testing
import TSyncModel

@testable import TSyncServer

/// `/ready`, `/metrics` and `X-Request-Id` on both backends, and the pieces of the request log
/// that decide what reaches it (docs/DESIGN.md §4).
struct OperatorRoutesTests {
    @Test func readyAnswersAndMetricsAreOptIn() async throws {
        try await withTestServer { http in
            let ready = try await http.get("/ready")
            #expect(ready.status == 200 && ready.object["status"] == .string("ready"), "\(ready.text)")
            #expect(try await http.get("/metrics").status == 404, "no /metrics without --metrics")
            #expect(ready.headers[HTTPField.Name("X-Request-Id")!]?.count == 16)
        }
    }

    @Test func metricsCountRecordsAndUseRouteTemplates() async throws {
        var configuration = ServerConfiguration(requiresAuthentication: false)
        configuration.exposesMetrics = true
        try await withTestServer(configuration) { http in
            #expect(try await http.post("/tables/todo", ["id": "a"]).status == 201)
            #expect(try await http.post("/tables/todo", ["id": "a"]).status == 409)
            #expect(try await http.get("/tables/todo").status == 200)
            for n in 0..<50 { _ = try await http.get("/nowhere/\(n)") }
            let text = try await http.get("/metrics").text
            #expect(text.contains(#"tsync_http_requests_total{method="POST",route="/tables/{table}",status="201"} 1"#), "\(text)")
            #expect(text.contains(#"tsync_http_requests_total{method="POST",route="/tables/{table}",status="409"} 1"#), "\(text)")
            #expect(text.contains(#"tsync_http_requests_total{method="GET",route="unmatched",status="404"} 50"#), "\(text)")
            #expect(text.contains("tsync_records_written_total 1\n") && text.contains("tsync_records_read_total 1\n"), "\(text)")
            #expect(!text.contains("nowhere"))
        }
    }

    @Test func secretQueryValuesAreRedacted() {
        #expect(
            QueryRedaction.redacted("$top=5&access_token=abc&X-ZUMO-AUTH=t&password=p&apiKey=k&%74oken=x&$filter=a%20eq%201")
                == "$top=5&access_token=REDACTED&X-ZUMO-AUTH=REDACTED&password=REDACTED&apiKey=REDACTED&%74oken=REDACTED&$filter=a%20eq%201"
        )
        #expect(QueryRedaction.redacted("flag&token") == "flag&token", "a name without a value has nothing to hide")
        #expect(QueryRedaction.redacted("$top=5&$filter=a%20eq%201") == "$top=5&$filter=a%20eq%201")
        #expect(QueryRedaction.redacted("\u{212A}ey=k&a=b") == "\u{212A}ey=REDACTED&a=b", "a Kelvin sign lower-cases to k")
        let long = QueryRedaction.target(path: "/tables/t", query: String(repeating: "a", count: 5000), limit: 2048)
        #expect(long.count == 2049 && long.hasSuffix("…"))
    }

    /// A plain ASCII name is judged from its bytes: as the general way judges it.
    @Test func plainNamesAreJudgedAsInGeneral() {
        let names = [
            "", "$top", "$filter", "__includeDeleted", "token", "TOKEN", "access_Token", "apiKey", "APIKEY", "sig", "si", "Signature",
            "x-zumo-auth", "passwd", "PASSWORD", "sessionid", "credentials", "zipcode", "monkey", "k", "key", "%74oken", "%2524top",
            "\u{212A}ey", "caf\u{E9}", "t%C3%B6ken", "%ZZ", "%", "a%20b", "%74OKEN", "%4b%45%59", "%00key", "to%6Ben", "%2", "%24filter",
        ]
        for name in names {
            #expect(QueryRedaction.isSecret(Substring(name)) == QueryRedaction.isSecretDecoded(Substring(name)), "\(name)")
        }
        #expect(QueryRedaction.isSecret("X-ZUMO-AUTH") && !QueryRedaction.isSecret("$orderby"))
    }

    /// A text with no row of `tokenLength` token or `%XX` bytes is returned unread: as the
    /// general way returns it, and a text with one is read the general way.
    @Test func textsWithoutATokenRowAreRedactedAsInGeneral() {
        let token = "Ab3" + String(repeating: "x", count: QueryRedaction.tokenLength - 3)
        let texts = [
            "", "/tables/todo", "/tables/todo?$filter=updatedAt%20ge%20datetimeoffset'2026-01-01T00:00:00.000Z'&$top=1000",
            "/tables/" + token, "/tables/" + String(token.dropLast()), "/tables/t?$filter=id%20eq%20'" + token + "'",
            "/x/" + String(repeating: "a", count: 60), "/x/" + String(repeating: "%41b", count: 20), "/x/%4" + token + "%",
            "caf\u{E9}/" + token,
            String(repeating: "%", count: 50), String(repeating: "-_", count: 30) + "Aa",
        ]
        for text in texts {
            #expect(QueryRedaction.redactingTokens(text) == QueryRedaction.redactingTokensInGeneral(text), "\(text)")
        }
        #expect(QueryRedaction.redactingTokens("/tables/" + token) == "/tables/REDACTED")
    }

    /// The log's last target, kept with its redaction, is what redacting each target anew gives,
    /// whether the next target repeats the last or not.
    @Test func keptTargetsAreRedactedAsInGeneral() {
        let token = "Ab3" + String(repeating: "x", count: QueryRedaction.tokenLength - 3)
        let targets: [(String, String?)] = [
            ("/tables/todo", "$filter=a%20eq%201&$top=5"), ("/tables/todo", "$filter=a%20eq%201&$top=5"), ("/tables/todo", nil),
            ("/tables/todo", ""), ("/tables/todo", "token=abc"), ("/tables/todo", "token=abc"), ("/tables/todo", "$top=5"),
            ("/tables/" + token, "$top=5"), ("/tables/" + token, "$top=5"), ("/tables/todo", "$top=5"),
            ("/tables/todo", String(repeating: "a", count: 3000)), ("/tables/todo", "Password=x"),
        ]
        let kept = RedactedTargets(limit: RequestLogMiddleware.maximumTargetLength)
        for (path, query) in targets + targets.reversed() {
            let general = QueryRedaction.target(path: path, query: query, limit: RequestLogMiddleware.maximumTargetLength)
            #expect(kept.target(path: path, query: query) == general, "\(path) \(query ?? "nil")")
        }
    }

    /// Printable ASCII is left as it is without reading its scalars: as the general way leaves it.
    @Test func plainLogTextIsEscapedAsInGeneral() {
        let texts = ["", "/tables/todo?$top=5", "a\u{1b}[31mb\nc", "tab\there", "del\u{7F}", "caf\u{E9}", "a\u{85}b", "x\u{2028}y", "~ !"]
        for text in texts { #expect(LogText.escaped(text) == LogText.escapedInGeneral(text), "\(text)") }
    }

    /// An ASCII query is split and decoded in one pass over its bytes: into the items, or the
    /// refusal, of the general way. Fixed queries, hostile ones, then random ones made of the
    /// bytes that matter (`&`, `=`, `%`, `+`, hex digits, escapes of bytes that are not UTF-8).
    @Test func plainQueriesAreReadAsInGeneral() {
        let follow =
            "$filter=updatedAt%20ge%20datetimeoffset'2026-01-01T00:00:00.000Z'&$orderby=updatedAt,id&$top=1000&__includeDeleted=true"
        var queries = [
            "", "&", "&&a", "a", "a=", "=b", "a=b=c", "$top=5&$filter=a%20eq%201", "a=1&&b=2&", "a==&=&b", "%", "a=%",
            "a=%4", "a=%4g", "%%41", "a+b=c+d", "%2B=%2b", "a=%C3%A9", "a=%C3", "a=%FF%FE", "%00=%0D%0A", "caf\u{E9}=1",
            "a=\r\n&b", "x=%E2%80%A8", "%24filter=id%20eq%20'a%26b'",
            follow,
        ]
        var random = SeededRandom(seed: 40)
        let pieces = ["&", "=", "%", "+", "a", "Z", "4", "1", "f", "G", "%C3", "%A9", "%FF", "%2", "$", " ", "\u{E9}", "\r\n"]
        for _ in 0..<2000 { queries.append((0..<random.below(12)).map { _ in random.pick(pieces) }.joined()) }
        func read(_ result: () throws(APIError) -> QueryString) -> String {
            do throws(APIError) { return try result().items.map { "\($0.name)|\($0.value)" }.joined(separator: "\n") } catch {
                return "refused: \(error.message)"
            }
        }
        for query in queries {
            #expect(
                read { () throws(APIError) in try QueryString(query) } == read { () throws(APIError) in try QueryString(inGeneral: query) },
                "\(query)")
        }
        #expect(QueryString.itemsOfPlainQuery(follow)?.count == 4, "the follow query takes the fast path")
    }

    /// A field there once is read as it is, and one not there is appended: as HTTP types join
    /// and set them, and every other case too.
    @Test func headerValuesAreReadAsInGeneral() {
        let prefer = HTTPField.Name("Prefer")!
        let fieldLists: [[HTTPField]] = [
            [], [HTTPField(name: prefer, value: "wait=25")], [HTTPField(name: prefer, value: "")],
            [HTTPField(name: .zumoAPIVersion, value: "2.0.0"), HTTPField(name: HTTPField.Name("prefer")!, value: "wait=5")],
            [HTTPField(name: prefer, value: "wait=5"), HTTPField(name: .requestID, value: "a"), HTTPField(name: prefer, value: "x")],
            [HTTPField(name: .cookie, value: "a=1"), HTTPField(name: .cookie, value: "b=2")], [HTTPField(name: .cookie, value: "a=1")],
        ]
        for list in fieldLists {
            let fields = HTTPFields(list)
            for name in [prefer, .cookie, .zumoAPIVersion, .requestID, .echo] {
                #expect(fields.value(of: name) == fields[name], "\(name) in \(fields)")
                var set = fields
                set.set("v, w", for: name)
                var general = fields
                general[name] = "v, w"
                #expect(set == general, "\(name) set in \(fields)")
            }
        }
    }

    @Test func requestIDsFromTrustedPeersOnlyAndPlain() {
        #expect(RequestID.choose(presented: "abc-123", trusted: true) == "abc-123")
        #expect(RequestID.choose(presented: "abc-123", trusted: false) != "abc-123")
        #expect(RequestID.choose(presented: "a\nb", trusted: true) != "a\nb")
        #expect(RequestID.choose(presented: String(repeating: "a", count: 129), trusted: true).count == 16)
        // Made ones are 16 lower-case hex digits, and none repeats.
        let made = (0..<10_000).map { _ in RequestID.make() }
        #expect(made.allSatisfy { $0.utf8.count == 16 && $0.allSatisfy { "0123456789abcdef".contains($0) } }, "\(made.prefix(3))")
        #expect(Set(made).count == made.count)
        #expect(LogText.escaped("a\u{1b}[31mb\nc") == "a\\u001b[31mb\\u000ac")
        #expect(LogText.bounded(String(repeating: "n", count: 100)).count == LogText.maximumNameLength + 1)
    }

    @Test func metricLabelsAreEscapedAndMethodsBounded() {
        let metrics = ServerMetrics()
        metrics.recordRequest(method: "PROPFIND", route: #"/a"b\c"#, status: 200, seconds: 0.003, bytes: 10)
        let text = metrics.exposition()
        #expect(text.contains(#"tsync_http_requests_total{method="other",route="/a\"b\\c",status="200"} 1"#), "\(text)")
        #expect(text.contains(#"route="/a\"b\\c",le="0.005"} 1"#) && text.contains(#"route="/a\"b\\c",le="0.0025"} 0"#), "\(text)")
    }
}
