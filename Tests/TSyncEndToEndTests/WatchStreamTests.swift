import Foundation
import Synchronization
import Testing
import TSyncModel

/// `tsync watch` reads a held read's streamed answer (docs/DESIGN.md §8.1, `PageLines`): each
/// line a page, checked and written as a pull's page; a line it cannot take, or an answer cut
/// in a line, writes nothing of that line and is said as a pull's would be.
@Suite(.serialized) struct WatchStreamTests {
    /// The watch's held reads of a table, as the server logged them (one line when each ends).
    private static func heldReads(_ server: ServeFixture) -> Int {
        (server.server?.log ?? "").split(separator: "\n").filter { $0.contains("GET /tables/todo?") }.count
    }

    /// A watch of `todo` in one of two stores, while the other inserts `ids` one at a time (each
    /// awaited as an event): every change comes on the one answer already open, each once, and
    /// the stores end alike.
    private static func followOverOneAnswer(_ ids: [String]) async throws {
        let server = try await ServeFixture()
        let (a, b) = try await LiveSyncTests.twoStores(server)
        let watcher = try LiveSyncTests.Watcher(b)
        await watcher.waitFor("connected")
        // Its held read is under way: a stream is logged when it ends, a held read each time it is answered.
        try await Task.sleep(for: .milliseconds(300))
        let before = Self.heldReads(server)
        let started = ContinuousClock.now
        for id in ids {
            try await a.ok(["insert", "todo", #"{"id": "\#(id)"}"#])
            try await a.ok(["push"])
            await watcher.waitFor("pulled", id: id)
        }
        // Held reads answered one by one would be one a change; a stream ends every 25 s (a
        // loaded machine may stretch the changes past that).
        let streams = 1 + Int((ContinuousClock.now - started) / .seconds(25))
        #expect(Self.heldReads(server) - before <= streams, "the changes came on one answer:\n\(server.server?.log ?? "")")
        let result = await watcher.stop()
        #expect(result.status == 130, "\(result)")
        #expect(watcher.events("pulled").compactMap { $0["id"]?.stringValue } == ids, "\(result.stdout)")
        try await a.ok(["pull", "todo", "--query-id", "all"])
        await #expect(try a.ok(["query", "todo", "--json"]) == (try b.ok(["query", "todo", "--json"])), "both stores hold the same")
    }

    @Test func aWatchFollowsATableOverOneStreamedAnswer() async throws {
        try await Self.followOverOneAnswer(["s1", "s2", "s3"])
    }

    /// A stream's place is its last record's text, not the `X-TSync-Page-End` header's (which
    /// carries visible ASCII only): ids of other characters go on the same answer too.
    @Test func idsAHeaderCannotCarryComeOnTheSameAnswer() async throws {
        try await Self.followOverOneAnswer(["été", "plain", "ünï", "a b"])
    }

    /// Two records of a page, as a server writes them.
    private static func record(_ id: String, second: Int, millisecond: Int = 0) -> String {
        let time = String(format: "2026-01-01T00:00:%02d.%03dZ", second, millisecond)
        return #"{"id":"\#(id)","createdAt":"\#(time)","deleted":false,"updatedAt":"\#(time)","version":"v\#(id)","n":1}"#
    }

    /// A server that answers the watch's held read with `chunks` (each a line), a stream, and
    /// every other read with an empty page.
    private static func streamingServer(_ chunks: [String], cut: Bool) throws -> ScriptedServer {
        let reads = Mutex(0)
        return try ScriptedServer { method, target in
            if method == "GET", target.hasPrefix("/tables/$batch") { return .json(404, #"{"error": "no"}"#) }
            guard method == "GET", target.hasPrefix("/tables/todo") else { return .json(404, #"{"error": "no"}"#) }
            let read = reads.withLock { reads in
                reads += 1
                return reads
            }
            // The first read is the test's pull, the second the watch's sync, the third its first held read.
            guard read == 3 else { return .json(200, "[]", headers: [("Preference-Applied", "wait=20")]) }
            var answer = ScriptedServer.Answer.json(200, "", headers: [("Preference-Applied", "wait=20, stream")])
            answer.headers = [("Content-Type", "application/x-ndjson"), ("Preference-Applied", "wait=20, stream")]
            answer.chunks = chunks.map { Array($0.utf8) }
            answer.pause = 0.1
            answer.cut = cut
            return answer
        }
    }

    @Test func aLineThatGoesBackIsNotWritten() async throws {
        let line = "[\(Self.record("r1", second: 1)),\(Self.record("r2", second: 2))]\n"
        let back = "[\(Self.record("bad", second: 1, millisecond: 500))]\n"
        let server = try Self.streamingServer([line, back], cut: false)
        let store = try await TSyncSandbox(remote: server.url)
        try await store.ok(["pull", "todo", "--query-id", "all"])
        let watch = try await store.run(["watch", "--json", "--timeout", "5", "--interval", "1"])
        #expect(watch.status == 0, "\(watch)")
        // Refused as any page out of order is, and asked again (the watch's way with a read it cannot take).
        #expect(watch.stdout.contains(#""event":"reconnecting""#) && watch.stdout.contains(#"(\"bad\" came after \"r2\")"#), "\(watch)")
        await #expect(try store.run(["get", "todo", "bad"]).status != 0, "nothing of the line that goes back is written")
        await #expect(try store.ok(["get", "todo", "r2"]).contains(#""n": 1"#))
        #expect(watch.stdout.contains(#""id":"r2""#), "the line before it was written and told: \(watch.stdout)")
    }

    @Test func blankLinesAreNoPages() async throws {
        let line = "[\(Self.record("r1", second: 1))]\n"
        let server = try Self.streamingServer(["\n", line, "\r\n"], cut: false)
        let store = try await TSyncSandbox(remote: server.url)
        try await store.ok(["pull", "todo", "--query-id", "all"])
        let watch = try await store.run(["watch", "--json", "--timeout", "3", "--interval", "1"])
        #expect(watch.status == 0, "\(watch)")
        #expect(watch.stdout.contains(#""id":"r1""#) && !watch.stdout.contains("reconnecting"), "\(watch)")
        await #expect(try store.ok(["get", "todo", "r1"]).contains(#""n": 1"#))
    }

    @Test func anAnswerCutInALineWritesTheLinesBeforeItAndReconnects() async throws {
        let line = "[\(Self.record("r1", second: 1))]\n"
        let cut = "[\(Self.record("r2", second: 2))"
        let server = try Self.streamingServer([line, cut], cut: true)
        let store = try await TSyncSandbox(remote: server.url)
        try await store.ok(["pull", "todo", "--query-id", "all"])
        let watcher = try LiveSyncTests.Watcher(store, ["--interval", "1"])
        await watcher.waitFor("pulled", id: "r1")
        await watcher.waitFor("reconnecting")
        let result = await watcher.stop()
        #expect(result.status == 130, "\(result)")
        await #expect(try store.run(["get", "todo", "r2"]).status != 0, "the line cut was not written")
        await #expect(try store.ok(["status", "--porcelain"]).isEmpty)
        #expect(watcher.events("pulled").compactMap { $0["id"]?.stringValue } == ["r1"], "\(result.stdout)")
    }
}
