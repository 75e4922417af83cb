import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif
import Testing
import TSyncModel

/// The real `tsync` binary against servers that misbehave on purpose: pages, answers and statuses no sync server sends.
@Suite(.serialized) struct FaultyServerTests {
    static func record(_ id: String, at ms: Int64) -> String {
        let time = Timestamp(millisecondsSinceEpoch: 1_700_000_000_000 + ms).iso8601
        return
            #"{"id": "\#(id)", "text": "\#(id)", "createdAt": "\#(time)", "updatedAt": "\#(time)", "version": "v\#(ms)", "deleted": false}"#
    }

    /// A server that ignores `$orderby` (it sorts by id): an incremental pull must not move its
    /// checkpoint past records it has not received (docs/DESIGN.md §2.1).
    @Test func anIncrementalPullRefusesPagesOutOfOrder() async throws {
        let page = "[" + [Self.record("a", at: 30), Self.record("b", at: 10), Self.record("c", at: 20)].joined(separator: ",") + "]"
        let server = try ScriptedServer { _, _ in .json(200, page) }
        let store = try await TSyncSandbox(remote: server.url)
        let pull = try await store.run(["pull", "todo", "--query-id", "all"])
        #expect(pull.status == 1, "\(pull)")
        #expect(pull.stderr.contains("(updatedAt, id) order"), "\(pull.stderr)")
        #expect(try await store.run(["query", "todo"]).status == 65, "nothing of the page was written: the table is unknown")
        let queries = try JSONOutput.array(try await store.ok(["queries", "--json"]))
        #expect(queries.allSatisfy { $0.objectValue?["checkpoint"] == .null }, "no checkpoint was saved: \(queries)")
    }

    /// Pulls without a query id that would never end (docs/DESIGN.md §8).
    @Test func aPullThatWouldLoopStopsWithAnError() async throws {
        let twoRecords = "[" + Self.record("a", at: 1) + "," + Self.record("b", at: 2) + "]"
        // Its next link is itself.
        let selfLinked = try ScriptedServer { _, target in
            .json(200, twoRecords, headers: [("Link", "<\(target)>; rel=next")])
        }
        let linkStore = try await TSyncSandbox(remote: selfLinked.url)
        let linked = try await linkStore.run(["pull", "todo"])
        #expect(linked.status == 1 && linked.stderr.contains("round in a circle"), "\(linked)")

        // It ignores $skip: every page is the first one.
        let ignoresSkip = try ScriptedServer { _, _ in .json(200, twoRecords) }
        let skipStore = try await TSyncSandbox(remote: ignoresSkip.url)
        let skipped = try await skipStore.run(["pull", "todo", "--page-size", "2"])
        #expect(skipped.status == 1 && skipped.stderr.contains("records it had sent before"), "\(skipped)")
        #expect(ignoresSkip.requests.count <= 4, "it stopped at once: \(ignoresSkip.requests)")
        #expect(try await skipStore.ok(["query", "todo"]).split(separator: "\n").count == 2, "what came is kept")
    }

    /// A server that ignores `$skip` and shuffles its order: no two pages are the
    /// same, but after the first one none brings a record not seen before. The pull stops there
    /// (exit 1, saying so) and keeps what came; it used to read the same ten records for ever (the
    /// script ends the loop after 200 pages so that the old behaviour fails instead of hanging).
    @Test func aPullStopsWhenAPageBringsNothingNew() async throws {
        let records = (0..<10).map { Self.record("r\($0)", at: Int64($0)) }
        let pages = ScriptedCounter()
        let server = try ScriptedServer { _, _ in
            guard pages.next() <= 200 else { return .json(200, "[]") }
            return .json(200, "[" + records.shuffled().joined(separator: ",") + "]")
        }
        let store = try await TSyncSandbox(remote: server.url)
        let pull = try await store.run(["pull", "todo", "--page-size", "10"])
        #expect(pull.status == 1, "\(pull)")
        #expect(pull.stderr.contains("records it had sent before") && pull.stderr.contains("which may not be all"), "\(pull.stderr)")
        #expect(server.requests.count <= 4, "it stopped at once: \(server.requests.count) requests")
        #expect(try await store.ok(["query", "todo"]).split(separator: "\n").count == 10, "what came is kept")
    }

    /// A short page without `Link` is not the end, end to end: a server that caps
    /// `$top` at 5 and leaves out `Link`, in front of 12 records; incremental and by offset.
    @Test(arguments: [["--query-id", "all"], []])
    func aShortPageIsNotTheEnd(flags: [String]) async throws {
        let records = (0..<12).map { Self.record("r\(10 + $0)", at: Int64($0)) }
        let server = try ScriptedServer { _, target in
            let query = URLComponents(string: target)?.queryItems ?? []
            let skip = query.first { $0.name == "$skip" }?.value.flatMap(Int.init) ?? 0
            var rest = records
            if let filter = query.first(where: { $0.name == "$filter" })?.value,
                let id = filter.firstMatch(of: /id gt '([^']*)'/)?.1
            {
                rest = records.filter { $0.contains("\"updatedAt\"") && ($0.split(separator: "\"")[3] > id) }
            }
            return .json(200, "[" + rest.dropFirst(skip).prefix(5).joined(separator: ",") + "]")
        }
        let store = try await TSyncSandbox(remote: server.url)
        let pull = try await store.run(["pull", "todo", "--page-size", "10"] + flags)
        #expect(pull.status == 0, "\(pull)")
        #expect(try await store.ok(["query", "todo"]).split(separator: "\n").count == 12, "\(server.requests)")
    }

    /// `resolve` reads the server's copies; a table the server does not have answers 404. The
    /// message names the reading, not a pull the user never asked for.
    @Test func resolveAgainstATableThatAnswers404DoesNotSayPulling() async throws {
        let server = try ScriptedServer { method, _ in
            if method == "GET" { return .json(404, #"{"error": "table not found"}"#) }
            return .json(400, #"{"error": "refused"}"#)
        }
        let store = try await TSyncSandbox(remote: server.url)
        try await store.ok(["insert", "todo", #"{"id": "a"}"#])
        #expect(try await store.run(["push"]).status == 2, "the refusal is recorded")
        let resolve = try await store.run(["resolve", "--all", "--theirs"])
        #expect(resolve.status == 1, "\(resolve)")
        #expect(!resolve.stderr.contains("pulling"), "\(resolve.stderr)")
        #expect(resolve.stderr.contains("reading table todo") && resolve.stderr.contains("HTTP 404: table not found"), "\(resolve.stderr)")
    }

    /// A connection the server resets: said in words, without the networking library's
    /// description of its system call.
    @Test func aConnectionResetIsSaidInWords() async throws {
        let resetting = try AcceptLoop()
        defer { resetting.stop() }
        resetting.start { client in
            var buffer = [UInt8](repeating: 0, count: 4096)
            _ = read(client, &buffer, buffer.count)
            // Closed with a zero linger when this returns: a reset, not a FIN.
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(client, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        }
        let store = try await TSyncSandbox(remote: "http://127.0.0.1:\(resetting.port)")
        let pull = try await store.run(["pull", "todo"])
        #expect(pull.status == 3, "\(pull)")
        #expect(pull.stderr.contains("cannot reach the server"), "\(pull.stderr)")
        #expect(pull.stderr.contains("the connection was reset") || pull.stderr.contains("the connection was closed"), "\(pull.stderr)")
        for internals in ["errno", "descriptor", "IOError", "NIO", "read("] {
            #expect(!pull.stderr.contains(internals), "\(pull.stderr)")
        }
    }

    /// Headers at once, then a byte every second: the request's deadline covers the body (docs/DESIGN.md §8).
    @Test func aBodyThatDripsMeetsTheDeadline() async throws {
        let server = try ScriptedServer { _, _ in
            ScriptedServer.Answer(status: 200, body: Array("[\(Self.record("a", at: 1))]".utf8), dripEvery: 1)
        }
        let store = try await TSyncSandbox(remote: server.url)
        let (pull, took) = try await TSyncProcess.runTimed(["pull", "todo"], in: store.path, environment: ["TSYNC_TIMEOUT": "2"])
        #expect(pull.status == 3, "\(pull)")
        #expect(pull.stderr.contains("no answer in time"), "\(pull.stderr)")
        #expect(took < .seconds(60), "bounded by the deadline, not by the body")
        let bad = try await TSyncProcess.run(["pull", "todo"], in: store.path, environment: ["TSYNC_TIMEOUT": "soon"])
        #expect(bad.status == 64 && bad.stderr.contains("TSYNC_TIMEOUT"), "\(bad)")
    }

    /// 502, 503 and 504 mean "not now": exit 3, nothing in the error table (docs/DESIGN.md §7).
    @Test(arguments: [502, 503, 504])
    func aGatewayErrorIsLikeAnUnreachableServer(status: Int) async throws {
        let server = try ScriptedServer { method, target in
            if method == "GET", target.hasPrefix("/tables/$batch") { return .json(404, #"{"error": "no"}"#) }
            return .json(status, #"{"error": "busy"}"#, headers: [("Retry-After", "7")])
        }
        let store = try await TSyncSandbox(remote: server.url)
        try await store.ok(["insert", "todo", #"{"id": "a"}"#])
        let push = try await store.run(["push"])
        #expect(push.status == 3, "\(push)")
        #expect(push.stderr.contains("HTTP \(status)") && push.stderr.contains("retry after 7"), "\(push.stderr)")
        #expect(try await store.ok(["conflicts", "--json"]) == "[]\n")
        #expect(try await store.ok(["status", "--porcelain"]) == "A\ttodo\ta\n")
        #expect(try await store.run(["pull", "other"]).status == 3)
    }

    /// A record without an id is the server's fault, not the user's: exit 1, not 65 (docs/DESIGN.md §3).
    @Test func aServerRecordWithoutAnIdIsTheServersFault() async throws {
        let server = try ScriptedServer { _, _ in .json(200, #"[{"text": "no id here"}]"#) }
        let store = try await TSyncSandbox(remote: server.url)
        let pull = try await store.run(["pull", "todo"])
        #expect(pull.status == 1, "\(pull)")
        #expect(pull.stderr.contains("not valid"), "\(pull.stderr)")
    }

    /// A page larger than tsync reads into memory (256 MiB): retrying cannot help, so it is exit 1
    /// with what to do, not exit 3 "cannot reach the server" (docs/DESIGN.md §3).
    @Test func aPageTooLargeSaysToAskForSmallerPages() async throws {
        let huge = [UInt8](repeating: UInt8(ascii: " "), count: (256 << 20) + 4096)
        let server = try ScriptedServer { _, _ in ScriptedServer.Answer(status: 200, body: huge) }
        let store = try await TSyncSandbox(remote: server.url)
        let pull = try await store.run(["pull", "todo"])
        #expect(pull.status == 1, "\(pull)")
        #expect(pull.stderr.contains("larger than 256 MiB") && pull.stderr.contains("--page-size"), "\(pull.stderr)")
    }

    /// https to a port that speaks http: a message that says so, not the TLS library's (docs/DESIGN.md §3).
    @Test func httpsToAnHTTPPortSaysSo() async throws {
        let server = try await ServeFixture()
        let https = server.url.replacingOccurrences(of: "http://", with: "https://")
        let store = try await TSyncSandbox(remote: https)
        try await store.ok(["insert", "todo", #"{"id": "a"}"#])
        let push = try await store.run(["push"])
        #expect(push.status == 3, "\(push)")
        #expect(push.stderr.contains("TLS handshake failed"), "\(push.stderr)")
        #expect(!push.stderr.contains("BoringSSL") && !push.stderr.contains("NIOSSL"))
    }
}

/// A counter a script closure can share across the server's threads.
final class ScriptedCounter: Sendable {
    private let count = Mutex(0)
    func next() -> Int {
        count.withLock {
            $0 += 1
            return $0
        }
    }
}
