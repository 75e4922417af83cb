import Foundation
import Testing
import TSyncModel

/// How many records a pull asks for in a page (docs/DESIGN.md §4, `X-TSync-Max-Top`): `tsync
/// serve` says the largest `$top` it takes with every page, and with the 400 that refuses more. A
/// pull without `--page-size` asks for 1,000 until it knows, then for as many as the server
/// takes, up to 5,000; with `--page-size N`, never more than N. A server that says nothing (a
/// plain v2 server, or a proxy that drops the header) is asked for 1,000 throughout.
@Suite(.serialized) struct PageSizeTests {
    /// The `$top` of each page read of `table` in a server's log, in order.
    static func tops(_ log: String, table: String) -> [(top: Int, status: Int)] {
        log.split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ")
            guard let get = words.firstIndex(of: "GET"), get + 2 < words.count, words[get + 1].hasPrefix("/tables/\(table)?"),
                let status = Int(words[get + 2])
            else { return nil }
            let query = words[get + 1].replacingOccurrences(of: "%24", with: "$")
            guard let range = query.range(of: "$top=") else { return nil }
            return (Int(query[range.upperBound...].prefix { $0.isNumber }) ?? -1, status)
        }
    }

    /// An operator lowered `--max-top` under the 1,000 a pull asks for by default: the first read
    /// is refused, asked again for as many as the server takes, and the pull goes on at that
    /// size, with and without a query id. (Before, every pull failed with the 400.)
    @Test(arguments: ServerBackend.available) func aPullFollowsAServerThatTakesFewer(_ backend: ServerBackend) async throws {
        let directory = try TemporaryDirectory()
        try await backend.withServer(options: ["--max-top", "40"], in: directory) { server, url, _ in
            try await PageEndTests.fill(url)
            let refused = try await HTTP.send("GET", url + "/tables/todo?$top=41")
            #expect(refused.status == 400 && Self.maximumTop(refused) == "40", "\(refused)")
            let page = try await HTTP.send("GET", url + "/tables/todo?$top=3")
            #expect(page.status == 200 && Self.maximumTop(page) == "40", "\(page)")

            let reader = try await TSyncSandbox(remote: url)
            let pull = try JSONOutput.object(try await reader.ok(["pull", "todo", "--query-id", "all", "--json"]))
            #expect(JSONOutput.int(pull["received"]) == PageEndTests.total)
            #expect(JSONOutput.int(pull["pages"]) == 3, "95 records, 40 a page")
            let plain = try await TSyncSandbox(remote: url)
            let whole = try JSONOutput.object(try await plain.ok(["pull", "todo", "--json"]))
            #expect(JSONOutput.int(whole["received"]) == PageEndTests.total, "without a query id")
            let chosen = try await TSyncSandbox(remote: url)
            try await chosen.ok(["pull", "todo", "--query-id", "all", "--page-size", "40"])
            #expect(try await PageEndTests.dump(reader) == (try await PageEndTests.dump(chosen)), "the clone of a pull that asked for 40")

            // The log is written in batches: what the requests above left in it is looked for
            // once a read has come after them, and their own sizes (41, 3) are left out.
            try await eventually { Self.tops(server.log, table: "todo").last?.top == 40 }
            let tops = Self.tops(server.log, table: "todo").filter { $0.top != 41 && $0.top != 3 }
            #expect(tops.first.map { $0.top == 1000 && $0.status == 400 } == true, "\(tops)")
            #expect(tops.filter { $0.status == 400 }.allSatisfy { $0.top == 1000 }, "\(tops)")
            #expect(tops.filter { $0.status == 200 }.allSatisfy { $0.top == 40 }, "\(tops)")
            #expect(tops.filter { $0.status == 400 }.count <= 3, "one refusal a walk, at most: \(tops)")
            let again = try JSONOutput.object(try await reader.ok(["pull", "todo", "--query-id", "all", "--json"]))
            #expect(JSONOutput.int(again["received"]) == 0, "the checkpoint is past the last record")
        }
    }

    /// 12,000 records: a clone asks its first pages for 1,000 and the rest for the 5,000 the
    /// server takes by default, and brings every record; with `--page-size 700` every read asks
    /// for 700.
    @Test func aCloneAsksForAsManyAsTheServerTakes() async throws {
        let server = try await ServeFixture()
        let count = 12_000
        try await Self.fill(server, count: count)
        let process = try #require(server.server)
        let page = try await HTTP.send("GET", server.url + "/tables/big?$top=1")
        #expect(Self.maximumTop(page) == "5000", "\(page.headers)")

        let clone = try await TSyncSandbox(remote: server.url)
        let pull = try JSONOutput.object(try await clone.ok(["pull", "big", "--query-id", "all", "--json"]))
        #expect(JSONOutput.int(pull["received"]) == count)
        let tops = Self.tops(process.log, table: "big").filter { $0.top != 1 }
        #expect(tops.allSatisfy { $0.status == 200 }, "\(tops)")
        #expect(tops.first?.top == 1000, "nothing is known before the first answer: \(tops)")
        #expect(tops.contains { $0.top == 5000 }, "\(tops)")
        #expect(tops.allSatisfy { $0.top == 1000 || $0.top == 5000 }, "\(tops)")
        #expect(JSONOutput.int(pull["pages"]).map { $0 < count / 1000 } == true, "fewer pages than at 1,000: \(pull)")
        #expect(try await Self.sql(clone, "SELECT count(*) FROM records WHERE tbl = 'big'") == "\(count)\n")

        let chosen = try await TSyncSandbox(remote: server.url)
        let small = try JSONOutput.object(try await chosen.ok(["pull", "big", "--query-id", "all", "--page-size", "700", "--json"]))
        #expect(JSONOutput.int(small["received"]) == count)
        #expect(JSONOutput.int(small["pages"]) == (count + 699) / 700, "\(small)")
        // The log is written in batches, in order: the clone's reads, then these.
        let pages = (count + 699) / 700
        let all = try await eventually({ Self.tops(process.log, table: "big") }, until: { $0.filter { $0.top == 700 }.count >= pages })
        let asked = all.drop { $0.top != 700 }
        #expect(asked.count >= pages && asked.allSatisfy { $0.top == 700 }, "\(asked)")
    }

    /// Through a proxy that drops `X-TSync-Max-Top` (as one that passes only the headers it
    /// knows does), a clone asks for 1,000 throughout, and keeps the same records as one that
    /// asked for more.
    @Test func aServerThatSaysNothingIsAskedForAThousand() async throws {
        let server = try await ServeFixture()
        let count = 6_500
        try await Self.fill(server, count: count)
        let process = try #require(server.server)
        let proxy = try LossyProxy(upstream: server.url)
        proxy.rewriteHeader("X-TSync-Max-Top") { _, _ in nil }
        let plain = try await TSyncSandbox(remote: proxy.url)
        let pull = try JSONOutput.object(try await plain.ok(["pull", "big", "--query-id", "all", "--json"]))
        #expect(JSONOutput.int(pull["received"]) == count)
        #expect(proxy.rewritten >= count / 1000, "the proxy dropped the header")
        let tops = Self.tops(process.log, table: "big")
        #expect(!tops.isEmpty && tops.allSatisfy { $0.top == 1000 && $0.status == 200 }, "\(tops)")
        let direct = try await TSyncSandbox(remote: server.url)
        try await direct.ok(["pull", "big", "--query-id", "all"])
        let records = "SELECT id, body, updated_at FROM records ORDER BY id"
        #expect(try await Self.sql(plain, records) == (try await Self.sql(direct, records)))
    }

    /// A table `big` of `count` records, each a second after the one before (so that pages end
    /// between timestamps), written straight into the server's database.
    static func fill(_ server: ServeFixture, count: Int) async throws {
        #expect(try await HTTP.send("POST", server.url + "/tables/big", body: #"{"id": "seed"}"#).status == 201)
        try await server.sql(
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(count - 1))
            INSERT INTO t_big (id, created_at, updated_at, version, deleted, owner, body)
            SELECT printf('r%05d', i), '2026-01-01T00:00:00.000Z',
                strftime('%Y-%m-%dT%H:%M:%S.000Z', 1767225600 + i, 'unixepoch'), 'v', 0, NULL, json_object('n', i) FROM n;
            """)
    }

    static func maximumTop(_ reply: HTTP.Reply) -> String? {
        reply.headers.first { $0.key.lowercased() == "x-tsync-max-top" }?.value
    }

    static func sql(_ store: TSyncSandbox, _ query: String) async throws -> String {
        let database = (store.path as NSString).appendingPathComponent(".tsync/store.sqlite")
        let (status, output, errors) = try await ChildProcess.output("/usr/bin/sqlite3", [database, query])
        #expect(status == 0, "sqlite3: \(errors)")
        return output
    }
}
