import Foundation
import Synchronization
import Testing
import TSyncModel

/// `X-TSync-Page-End: <updatedAt> <id>` (docs/DESIGN.md §8): `tsync serve` names where a page in
/// pull order ends with its headers, and a pull asks for the next page on it before the body has
/// arrived. The header is a claim: a proxy that strips it leaves the pull as it was, and one that
/// changes it costs the pull a request, never a record.
@Suite(.serialized) struct PageEndTests {
    static let total = 95
    static let pageSize = 10

    /// The records of `body` (a page, bare or with its count).
    static func records(_ body: [UInt8]) throws -> [[String: JSONValue]] {
        var value = try JSONParser.parse(bytes: body)
        if case .object(let object) = value, let results = object["results"] { value = results }
        guard case .array(let items) = value else { throw TSyncTestError("not a page: \(String(decoding: body, as: UTF8.self))") }
        return items.compactMap(\.objectValue)
    }

    /// `updatedAt id` of a record, as the header writes it.
    static func position(_ record: [String: JSONValue]?) -> String? {
        guard let record, let updatedAt = record["updatedAt"]?.stringValue, let id = record["id"]?.stringValue else { return nil }
        return updatedAt + " " + id
    }

    /// A table `todo` of `total` records (a few of them deleted, so tombstones are among the pages),
    /// written through `url`.
    static func fill(_ url: String) async throws {
        let writer = try await TSyncSandbox(remote: url)
        for part in 0..<3 {
            let items = (0..<total).filter { $0 % 3 == part }.map { #"{"id": "r\#(String(format: "%03d", $0))", "n": \#($0)}"# }
            try await writer.ok(["insert", "todo", "-q"], stdin: items.joined(separator: "\n"))
            try await writer.ok(["push", "-q"])
        }
        try await writer.ok(["delete", "todo", "r007", "r050"])
        try await writer.ok(["push", "-q"])
    }

    static func pageEnd(_ reply: HTTP.Reply) -> String? {
        reply.headers["X-TSync-Page-End"] ?? reply.headers["x-tsync-page-end"]
    }

    /// What a clone keeps: its records and its saved query (all but the time of the pull).
    static func dump(_ store: TSyncSandbox) async throws -> String {
        let database = (store.path as NSString).appendingPathComponent(".tsync/store.sqlite")
        let (status, output, errors) = try await ChildProcess.output(
            "/usr/bin/sqlite3",
            [
                database,
                "SELECT tbl, id, body, created_at, updated_at, version FROM records ORDER BY tbl, id;"
                    + " SELECT tbl, query_id, filter, checkpoint_updated_at, checkpoint_id, stopped_at FROM queries ORDER BY tbl, query_id;",
            ])
        #expect(status == 0, "sqlite3: \(errors)")
        return output
    }

    /// The headers a proxy saw, with the last record of each page.
    final class Seen: Sendable {
        let pages = Mutex<[(header: String, last: String?)]>([])
    }

    /// Every page in pull order names its last record, on each of the server's ways of reading
    /// a page (a pull's quick page, and the general one a count or another filter takes); a page
    /// in another order, with `$select`, or with no record names none.
    @Test(arguments: ServerBackend.available) func theHeaderNamesThePagesLastRecord(_ backend: ServerBackend) async throws {
        let directory = try TemporaryDirectory()
        try await backend.withServer(in: directory) { _, url, _ in
            try await Self.fill(url)
            // The pull's own pages, seen through a proxy that passes them on unchanged.
            let proxy = try LossyProxy(upstream: url)
            let seen = Seen()
            proxy.rewriteHeader("X-TSync-Page-End") { value, body in
                let last = Self.position(try? Self.records(body).last)
                seen.pages.withLock { $0.append((value, last)) }
                return value
            }
            let reader = try await TSyncSandbox(remote: proxy.url)
            let pull = try JSONOutput.object(
                try await reader.ok(["pull", "todo", "--query-id", "all", "--page-size", "\(Self.pageSize)", "--json"]))
            #expect(JSONOutput.int(pull["received"]) == Self.total)
            let pages = seen.pages.withLock { $0 }
            #expect(
                pages.count == (Self.total + Self.pageSize - 1) / Self.pageSize, "a header on each page with records, none on the empty one"
            )
            for page in pages { #expect(page.header == page.last) }

            let pullOrder = "$orderby=updatedAt,id&$top=7&__includeDeleted=true"
            for query in [
                pullOrder, pullOrder + "&$inlinecount=allpages", pullOrder + "&$skip=20", "$orderby=updatedAt,id&$top=7",
                "$orderby=updatedAt,id&$top=7&$filter=n%20lt%2040",
                "$orderby=updatedAt%20asc,id%20asc&$top=7",
            ] {
                let reply = try await HTTP.send("GET", url + "/tables/todo?" + query)
                #expect(reply.status == 200, "\(query): \(reply)")
                let last = Self.position(try Self.records(Array(reply.body.utf8)).last)
                #expect(last != nil && Self.pageEnd(reply) == last, "\(query): \(reply.headers)")
            }
            for query in [
                "$orderby=id&$top=7", "$orderby=updatedAt%20desc,id&$top=7", "$orderby=updatedAt&$top=7", "$top=7",
                "$orderby=updatedAt,id&$top=7&$select=id,updatedAt", "$orderby=updatedAt,id&$filter=n%20gt%201000",
            ] {
                let reply = try await HTTP.send("GET", url + "/tables/todo?" + query)
                #expect(reply.status == 200, "\(query): \(reply)")
                #expect(Self.pageEnd(reply) == nil, "\(query): \(reply.headers)")
            }
        }
    }

    /// A clone with the header (straight from the server) and one without (through a proxy that
    /// strips it, as one that drops unknown headers does) keep the same records and checkpoint,
    /// in as many pages.
    @Test(arguments: ServerBackend.available) func aCloneWithTheHeaderIsTheCloneWithout(_ backend: ServerBackend) async throws {
        let directory = try TemporaryDirectory()
        try await backend.withServer(in: directory) { _, url, _ in
            try await Self.fill(url)
            let proxy = try LossyProxy(upstream: url)
            proxy.rewriteHeader("X-TSync-Page-End") { _, _ in nil }
            var dumps: [String] = []
            for remote in [url, proxy.url] {
                let reader = try await TSyncSandbox(remote: remote)
                let pull = try JSONOutput.object(
                    try await reader.ok(["pull", "todo", "--query-id", "all", "--page-size", "\(Self.pageSize)", "--json"]))
                #expect(JSONOutput.int(pull["received"]) == Self.total)
                #expect(JSONOutput.int(pull["pages"]) == (Self.total + Self.pageSize - 1) / Self.pageSize)
                dumps.append(try await Self.dump(reader))
            }
            #expect(proxy.rewritten >= Self.total / Self.pageSize, "the proxy stripped the header")
            #expect(dumps[0].split(separator: "\n").count == Self.total - 2 + 1, "the live records and the saved query")
            #expect(dumps[0] == dumps[1])
        }
    }

    /// What a wrong `X-TSync-Page-End` claims, made from the true one and the page.
    enum Lie: String, CaseIterable, CustomStringConvertible, Sendable {
        /// Not a position at all.
        case garbage
        /// Past everything: a page asked there is empty.
        case pastTheEnd
        /// Before everything: a page asked there repeats the table's start.
        case beforeTheStart
        /// The page's first record: the page asked there repeats most of this one.
        case thePagesFirstRecord
        /// One record short of the end: the page asked there starts with this page's last record.
        case oneRecordShort
        /// Just past the end, by id: the page asked there would leave out a record stamped at
        /// the same time with an id in between.
        case oneRecordPast

        var description: String { rawValue }

        func claim(_ value: String, _ body: [UInt8]) -> String {
            let records = (try? PageEndTests.records(body)) ?? []
            switch self {
            case .garbage: return "not a position"
            case .pastTheEnd: return "9999-12-31T23:59:59.999Z zzz"
            case .beforeTheStart: return "2000-01-01T00:00:00.000Z a"
            case .thePagesFirstRecord: return PageEndTests.position(records.first) ?? value
            case .oneRecordShort: return PageEndTests.position(records.dropLast().last) ?? value
            case .oneRecordPast: return value + "0"
            }
        }
    }

    /// A proxy (or server) whose header lies about every page: the pull drops each page it asked
    /// on the claim (the page just read does not end there) and asks the right one, so it brings
    /// every record once, in as many pages, with the checkpoint at the end; the lie costs at most a
    /// request a page.
    @Test(arguments: ServerBackend.available, Lie.allCases) func aWrongHeaderCostsARequestNeverARecord(
        _ backend: ServerBackend, _ lie: Lie
    ) async throws {
        let directory = try TemporaryDirectory()
        try await backend.withServer(in: directory) { _, url, _ in
            try await Self.fill(url)
            let proxy = try LossyProxy(upstream: url)
            proxy.rewriteHeader("X-TSync-Page-End") { value, body in lie.claim(value, body) }
            let reader = try await TSyncSandbox(remote: proxy.url)
            let pull = try await reader.run(["pull", "todo", "--query-id", "all", "--page-size", "\(Self.pageSize)", "--json"])
            #expect(pull.status == 0, "\(pull)")
            let result = try JSONOutput.object(pull.stdout)
            let pages = (Self.total + Self.pageSize - 1) / Self.pageSize
            #expect(JSONOutput.int(result["received"]) == Self.total)
            #expect(JSONOutput.int(result["pages"]) == pages)
            #expect(proxy.rewritten >= pages)
            #expect(proxy.forwarded <= 2 * (pages + 1) + 2, "at most a request more a page: \(proxy.forwarded)")

            let ids = try JSONOutput.array(try await reader.ok(["query", "todo", "--json"])).compactMap {
                $0.objectValue?["id"]?.stringValue
            }
            #expect(ids.sorted() == (0..<Self.total).filter { $0 != 7 && $0 != 50 }.map { String(format: "r%03d", $0) })
            let direct = try await TSyncSandbox(remote: url)
            try await direct.ok(["pull", "todo", "--query-id", "all", "--page-size", "\(Self.pageSize)"])
            #expect(try await Self.dump(reader) == (try await Self.dump(direct)), "the same store as a clone told the truth")
            let again = try JSONOutput.object(try await reader.ok(["pull", "todo", "--query-id", "all", "--json"]))
            #expect(JSONOutput.int(again["received"]) == 0, "the checkpoint is past the last record")
        }
    }
}
