import Foundation
import Testing
import TSyncModel

/// Held reads answered as streams (`Prefer: wait=N, stream`, docs/DESIGN.md §8.1) by the real
/// `tsync serve`, over raw sockets: a client library would hide what is asserted here, the chunks
/// as they arrive, the end of the answer, and the connection after it.
@Suite(.serialized) struct LiveStreamTests {
    /// An incremental pull's list read of `table` (`updatedAt, id` order, deletions included).
    private static func pull(_ table: String, top: Int = 50, filter: String? = nil) -> String {
        "/tables/\(table)?$orderby=updatedAt,id&$top=\(top)&__includeDeleted=true"
            + (filter.map { "&$filter=" + ($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0) } ?? "")
    }

    /// A GET of `path` as a client sends it on a connection it keeps (unless `close`).
    private static func get(_ path: String, prefer: String, version: String = "HTTP/1.1", close: Bool = false) -> String {
        "GET \(path) \(version)\r\nHost: 127.0.0.1\r\nZUMO-API-VERSION: 2.0.0\r\nPrefer: \(prefer)\r\n"
            + (close ? "Connection: close\r\n" : "") + "\r\n"
    }

    /// tsync's checkpoint filter: the records after `record` in pull order.
    private static func after(_ record: StreamedRecord) -> String {
        let time = "datetimeoffset'\(record.updatedAt)'"
        return "updatedAt ge \(time) and (updatedAt gt \(time) or (updatedAt eq \(time) and id gt '\(record.id)'))"
    }

    /// Inserts `item` (JSON with an `id`) into `table`; the record as the server stored it.
    @discardableResult
    private static func insert(
        _ url: String, _ table: String, _ item: String, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> StreamedRecord {
        let reply = try await HTTP.send("POST", url + "/tables/\(table)", body: item)
        #expect(reply.status == 201, "POST /tables/\(table) \(item): \(reply.status) \(reply.body)", sourceLocation: sourceLocation)
        return StreamedRecord(try JSONParser.parse(reply.body))
    }

    /// Whether `head` (an answer's lines, `LiveFanOutTests.comparable`) is a stream's, with `wait`.
    private static func isStream(_ head: [String], wait: Int) -> Bool {
        head.first?.hasPrefix("HTTP/1.1 200") == true && field("Transfer-Encoding", head) == "chunked"
            && field("Content-Type", head) == "application/x-ndjson; charset=utf-8"
            && field("Preference-Applied", head) == "wait=\(wait), stream" && field("Content-Length", head) == nil
            && field("X-TSync-Page-End", head) == nil
    }

    /// A stream of `t` (on `url`) begins with the records `existing`, then takes each of `inserted`
    /// as a line of its own when it commits (each one awaited before the next is written), never
    /// a record of another table; its 8 s over, it ends with the last chunk, and the connection
    /// answers the next request.
    private static func streamDelivers(_ url: String, existing: [String], inserted: [String]) async throws {
        for id in existing { try await insert(url, "t", #"{"id": "\#(id)"}"#) }
        let port = try #require(URLComponents(string: url)?.port)
        let socket = try await RawSocket.opened(port: port, timeout: 10)
        let start = ContinuousClock.now
        #expect(await socket.write(get(pull("t"), prefer: "wait=8, stream")))
        let head = await socket.head()
        #expect(isStream(head, wait: 8), "\(head)")

        var body = StreamBody()
        await body.read(socket) { $0.lines.count == 1 }
        #expect(body.lines.first?.map(\.id) == existing, "the first line: \(body)")
        try await insert(url, "elsewhere", #"{"id": "other"}"#)
        for id in inserted {
            try await insert(url, "t", #"{"id": "\#(id)"}"#)
            await body.read(socket) { $0.ids.contains(id) }
            #expect(body.ids.contains(id), "\(id) did not arrive: \(body)")
        }
        #expect(body.lines.dropFirst().map { $0.map(\.id) } == inserted.map { [$0] }, "a line a commit: \(body)")
        await body.read(socket)
        let ended = ContinuousClock.now - start
        #expect(body.ended && body.trouble == nil, "\(body)")
        #expect(body.ids == existing + inserted && body.inPullOrder, "each record once, in order, nothing else: \(body)")
        // Long enough for the inserts on a loaded machine (a test run's other suites run beside it).
        #expect(ended > .milliseconds(7500) && ended < .seconds(20), "the 8 s stream ended after \(ended)")

        // The answer is over, the connection is not: the next request on it is answered.
        #expect(await socket.write("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"))
        let health = await socket.readToEnd()
        #expect(health.hasPrefix("HTTP/1.1 200") && health.hasSuffix(#"{"status":"ok"}"#), "\(health)")
    }

    /// The stream as a watcher of a table on SQLite sees it: the records there, then each commit's.
    @Test func aStreamDeliversEachCommitsRecordsAndEndsAtItsWait() async throws {
        let server = try await ServeFixture()
        try await Self.streamDelivers(server.url, existing: ["a", "b"], inserted: ["c", "d", "e"])
    }

    /// The same on PostgreSQL, whose commits reach the streams with no list of their records.
    @Test(.enabled(if: PostgresFixture.adminURL != nil, "TSYNC_TEST_POSTGRES_URL is not set: no PostgreSQL to test against"))
    func aStreamDeliversOnPostgreSQL() async throws {
        let directory = try TemporaryDirectory()
        try await ServerBackend.postgres.withServer(in: directory) { _, url, _ in
            try await Self.streamDelivers(url, existing: ["a"], inserted: ["b", "c"])
        }
    }

    /// A stream that starts at tsync's checkpoint (alone, or AND-ed after a filter of the user's)
    /// sends nothing from before it, no first line, and then only the new records its filter takes;
    /// two streams of one table with different filters are kept apart. The client's next read, on
    /// the same connection from the last record it got, is a stream again.
    @Test func aStreamStartsAtItsCheckpointAndKeepsToItsFilter() async throws {
        let server = try await ServeFixture()
        let port = try server.port
        try await Self.insert(server.url, "t", #"{"id": "a", "n": 9}"#)
        let last = try await Self.insert(server.url, "t", #"{"id": "b", "n": 9}"#)
        let all = try await RawSocket.opened(port: port, timeout: 10)
        let some = try await RawSocket.opened(port: port, timeout: 10)
        #expect(await all.write(Self.get(Self.pull("t", filter: Self.after(last)), prefer: "wait=8, stream")))
        #expect(await some.write(Self.get(Self.pull("t", filter: "(n gt 5) and (\(Self.after(last)))"), prefer: "wait=8, stream")))
        // Nothing new: the heads come alone (a first line would hold b, which is not after b).
        for socket in [all, some] {
            let head = await socket.head()
            #expect(Self.isStream(head, wait: 8), "\(head)")
        }
        for (id, n) in [("c", 1), ("d", 7), ("e", 2), ("f", 10)] {
            try await Self.insert(server.url, "t", #"{"id": "\#(id)", "n": \#(n)}"#)
        }
        var allBody = StreamBody()
        var someBody = StreamBody()
        await allBody.read(all) { $0.ids.contains("f") }
        await someBody.read(some) { $0.ids.contains("f") }
        #expect(allBody.ids == ["c", "d", "e", "f"] && allBody.inPullOrder, "\(allBody)")
        #expect(someBody.ids == ["d", "f"] && someBody.inPullOrder, "\(someBody)")
        await allBody.read(all)
        await someBody.read(some)
        #expect(allBody.ended && allBody.ids.count == 4, "\(allBody)")
        #expect(someBody.ended && someBody.ids.count == 2, "\(someBody)")

        let next = try #require(someBody.records.last)
        #expect(await some.write(Self.get(Self.pull("t", filter: "(n gt 5) and (\(Self.after(next)))"), prefer: "wait=1, stream")))
        let head = await some.head()
        #expect(Self.isStream(head, wait: 1), "the next read on the connection: \(head)")
        var nextBody = StreamBody()
        await nextBody.read(some)
        #expect(nextBody.ended && nextBody.lines.isEmpty, "\(nextBody)")
    }

    /// Reads that may not be streams are held reads as before: their answer has a length, and
    /// `Preference-Applied` says only `wait`. Each would be a stream but for one thing: no
    /// `stream` asked for; another order, a `$skip`, a `$select`, a count; HTTP/1.0;
    /// a first page that is full (answered at once, with its link to the next); a first page
    /// larger than a line may be (64 KB: it goes its request's way, in slices).
    @Test func readsThatCannotBeStreamsAreHeldReads() async throws {
        let server = try await ServeFixture()
        for id in ["a", "b", "c"] { try await Self.insert(server.url, "t", #"{"id": "\#(id)", "n": 1}"#) }
        let text = String(repeating: "x", count: 40_000)
        for id in ["l1", "l2"] { try await Self.insert(server.url, "large", #"{"id": "\#(id)", "text": "\#(text)"}"#) }
        let empty = "$filter=n%20gt%20100"
        let requests = [
            "no stream": Self.get(Self.pull("t", filter: "n gt 100"), prefer: "wait=1", close: true),
            "by id": Self.get("/tables/t?$orderby=id&$top=50&\(empty)", prefer: "wait=1, stream", close: true),
            "skip": Self.get(Self.pull("t", filter: "n gt 100") + "&$skip=1", prefer: "wait=1, stream", close: true),
            "select": Self.get(Self.pull("t", filter: "n gt 100") + "&$select=id,updatedAt", prefer: "wait=1, stream", close: true),
            "count": Self.get(Self.pull("t", filter: "n gt 100") + "&$inlinecount=allpages", prefer: "wait=1, stream", close: true),
            "HTTP/1.0": Self.get(Self.pull("t", filter: "n gt 100"), prefer: "wait=1, stream", version: "HTTP/1.0"),
            "full": Self.get(Self.pull("t", top: 2), prefer: "wait=1, stream", close: true),
            "large": Self.get(Self.pull("large"), prefer: "wait=1, stream", close: true),
        ]
        let port = try server.port
        let answers = try await withThrowingTaskGroup(of: (String, String).self) { group in
            for (name, request) in requests {
                group.addTask {
                    let socket = try await RawSocket.opened(port: port, timeout: 10)
                    await socket.write(request)
                    return (name, await socket.readToEnd())
                }
            }
            return try await group.reduce(into: [String: String]()) { $0[$1.0] = $1.1 }
        }
        for (name, answer) in answers.sorted(by: { $0.key < $1.key }) {
            let (head, bytes) = LiveFanOutTests.comparable(answer)
            let body = String(decoding: bytes, as: UTF8.self)
            #expect(head.first?.hasPrefix("HTTP/1.1 200") == true, "\(name): \(answer)")
            #expect(field("Preference-Applied", head) == "wait=1", "\(name): \(answer)")
            #expect(field("Transfer-Encoding", head) == nil && field("Content-Length", head) == String(bytes.count), "\(name): \(answer)")
            switch name {
            case "full":
                #expect(body.hasPrefix(#"[{"id":"a""#) && body.contains(#"{"id":"b""#) && !body.contains(#""id":"c""#), "\(answer)")
                #expect(field("Link", head)?.hasSuffix("rel=next") == true, "\(answer)")
            case "count": #expect(body.hasPrefix(#"{"count":0,"results":[]"#), "\(answer)")
            case "large": #expect(bytes.count > 80_000 && body.contains(#"{"id":"l2""#), "\(name): \(bytes.count) bytes")
            default: #expect(body == "[]", "\(name): \(answer)")
            }
        }
        #expect(answers.count == requests.count)
    }

    /// SIGTERM ends a stream at once, not at the end of its 20 s: its last chunk arrives, and the
    /// server exits 0.
    @Test func aStoppingServerEndsAStream() async throws {
        let server = try await ServeFixture()
        let process = try #require(server.server)
        try await Self.insert(server.url, "t", #"{"id": "a"}"#)
        let socket = try await RawSocket.opened(port: try server.port, timeout: 10)
        #expect(await socket.write(Self.get(Self.pull("t"), prefer: "wait=20, stream")))
        let head = await socket.head()
        #expect(Self.isStream(head, wait: 20), "\(head)")
        var body = StreamBody()
        await body.read(socket) { $0.lines.count == 1 }
        #expect(body.ids == ["a"], "\(body)")

        let start = ContinuousClock.now
        let stopping = Task { try await process.terminate(signal: SIGTERM, timeout: .seconds(20)) }
        await body.read(socket)
        let ended = ContinuousClock.now - start
        #expect(body.ended && body.trouble == nil, "\(body)")
        #expect(ended < .seconds(5), "the stream ended \(ended) after SIGTERM")
        #expect(try await stopping.value == 0)
        #expect(await socket.isClosedByPeer(), "the connection outlived the server")
    }

    /// A client that closes its stream's connection is gone: the server stops holding its read
    /// (`tsync_live_waiting` back to 0) within its sweep, not at the end of the 20 s, and goes on
    /// writing the streams of others.
    @Test func aStreamWhoseClientLeftEnds() async throws {
        let server = try await ServeFixture(options: ["--metrics"])
        let port = try server.port
        let leaving = try await RawSocket.opened(port: port, timeout: 10)
        #expect(await leaving.write(Self.get(Self.pull("t"), prefer: "wait=20, stream")))
        let head = await leaving.head()
        #expect(Self.isStream(head, wait: 20), "\(head)")
        let held = try await eventually(timeout: .seconds(10)) { try await server.metric("tsync_live_waiting") == 1 }
        #expect(held, "the stream is not counted as a held read")

        leaving.close()
        let start = ContinuousClock.now
        let gone = try await eventually(timeout: .seconds(10)) { try await server.metric("tsync_live_waiting") == 0 }
        // Well before the 20 s (a loaded machine stretches the 250 ms sweep).
        #expect(gone && ContinuousClock.now - start < .seconds(10), "still held \(ContinuousClock.now - start) after the client left")

        let staying = try await RawSocket.opened(port: port, timeout: 10)
        #expect(await staying.write(Self.get(Self.pull("t"), prefer: "wait=5, stream")))
        #expect(Self.isStream(await staying.head(), wait: 5))
        try await Self.insert(server.url, "t", #"{"id": "a"}"#)
        var body = StreamBody()
        await body.read(staying) { !$0.lines.isEmpty }
        #expect(body.ids == ["a"], "\(body)")
    }

    /// One commit of more records than a page: the stream writes them page by page, each line
    /// no longer than `$top`, at once (not at the next commit).
    @Test func aCommitOfMoreThanAPageArrivesAsFullLines() async throws {
        let server = try await ServeFixture()
        try await Self.insert(server.url, "t", #"{"id": "r0"}"#)
        let socket = try await RawSocket.opened(port: try server.port, timeout: 10)
        #expect(await socket.write(Self.get(Self.pull("t", top: 2), prefer: "wait=5, stream")))
        #expect(Self.isStream(await socket.head(), wait: 5))
        var body = StreamBody()
        await body.read(socket) { $0.lines.count == 1 }
        let operations = (1...5).map { #"{"method": "POST", "table": "t", "item": {"id": "r\#($0)"}}"# }
        let batch = try await HTTP.send(
            "POST", server.url + "/tables/$batch", body: #"{"operations": [\#(operations.joined(separator: ","))]}"#)
        #expect(batch.status == 200, "\(batch.body)")
        await body.read(socket) { $0.ids.contains("r5") }
        #expect(body.ids == (0...5).map { "r\($0)" } && body.inPullOrder, "\(body)")
        #expect(body.lines.map(\.count) == [1, 2, 2, 1], "\(body)")
    }

    /// An update and a deletion are changes a pull takes: each arrives as a line, the updated
    /// record as it is now, the deleted one marked deleted.
    @Test func updatesAndDeletionsArrive() async throws {
        let server = try await ServeFixture()
        try await Self.insert(server.url, "t", #"{"id": "a", "n": 1}"#)
        try await Self.insert(server.url, "t", #"{"id": "b", "n": 1}"#)
        let socket = try await RawSocket.opened(port: try server.port, timeout: 10)
        #expect(await socket.write(Self.get(Self.pull("t"), prefer: "wait=5, stream")))
        #expect(Self.isStream(await socket.head(), wait: 5))
        var body = StreamBody()
        await body.read(socket) { $0.lines.count == 1 }
        #expect(try await HTTP.send("PATCH", server.url + "/tables/t/a", body: #"{"n": 5}"#).status == 200)
        await body.read(socket) { $0.lines.count == 2 }
        #expect(try await HTTP.send("DELETE", server.url + "/tables/t/b").status == 200)
        await body.read(socket) { $0.lines.count == 3 }
        #expect(body.lines.map { $0.map(\.id) } == [["a", "b"], ["a"], ["b"]], "\(body)")
        #expect(body.lines.dropFirst().first?.first?.object["n"] == 5, "\(body)")
        #expect(body.lines.last?.first?.object["deleted"] == .bool(true), "\(body)")
        #expect(body.inPullOrder, "\(body)")
    }

    /// A page read ahead (`PullReadAhead`: another client's full page had the page after it read
    /// at once) is the page as it was before a commit: the stream that commit wakes must not take
    /// it for the page after the commit, or the record it brought waits for the next commit, or
    /// for the stream's end.
    @Test(arguments: ServerBackend.available)
    func aPageReadAheadDoesNotHideACommitFromAStream(_ backend: ServerBackend) async throws {
        let directory = try TemporaryDirectory()
        try await backend.withServer(in: directory) { _, url, _ in
            try await Self.insert(url, "t", #"{"id": "x1"}"#)
            let last = try await Self.insert(url, "t", #"{"id": "x2"}"#)
            let socket = try await RawSocket.opened(port: try #require(URLComponents(string: url)?.port), timeout: 10)
            #expect(await socket.write(Self.get(Self.pull("t", top: 2, filter: Self.after(last)), prefer: "wait=5, stream")))
            #expect(Self.isStream(await socket.head(), wait: 5))
            // The stream's first pass (the page after x2, at once) is over before the read below:
            // nothing outside the server shows it, so a pause.
            try await Task.sleep(for: .milliseconds(200))
            let full = try await HTTP.send("GET", url + Self.pull("t", top: 2))
            #expect(full.status == 200 && full.body.contains(#""id":"x2""#), "\(full.body)")
            // Its read ahead of the page after x2 (empty) is done.
            try await Task.sleep(for: .milliseconds(200))
            try await Self.insert(url, "t", #"{"id": "x3"}"#)
            var body = StreamBody()
            await body.read(socket) { $0.ids.contains("x3") }
            #expect(body.ids == ["x3"] && !body.ended, "x3 did not come before the stream's end: \(body)")
        }
    }

    /// Writers committing at once: every record reaches the stream, once, in pull order (a page
    /// that went past a write still in flight would miss it for good). Once the writers are done,
    /// what is missing has had 5 s to come.
    @Test(arguments: ServerBackend.available)
    func concurrentWritersMissNothing(_ backend: ServerBackend) async throws {
        let directory = try TemporaryDirectory()
        try await backend.withServer(in: directory) { _, url, _ in
            let socket = try await RawSocket.opened(port: try #require(URLComponents(string: url)?.port), timeout: 5)
            #expect(await socket.write(Self.get(Self.pull("t", top: 5), prefer: "wait=20, stream")))
            #expect(Self.isStream(await socket.head(), wait: 20))
            let ids = (0..<4).flatMap { writer in (0..<6).map { "w\(writer)-\($0)" } }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<4 {
                    group.addTask {
                        for id in ids where id.hasPrefix("w\(writer)-") { try await Self.insert(url, "t", #"{"id": "\#(id)"}"#) }
                    }
                }
                try await group.waitForAll()
            }
            var body = StreamBody()
            await body.read(socket) { $0.ids.count >= ids.count }
            #expect(Set(body.ids) == Set(ids) && body.ids.count == ids.count, "\(body)")
            #expect(body.inPullOrder && body.lines.allSatisfy { $0.count <= 5 }, "\(body)")
        }
    }
}

/// A record of a streamed line: where it stands in pull order, and all of it.
private struct StreamedRecord: CustomStringConvertible {
    var id: String
    var updatedAt: String
    var object: [String: JSONValue]

    init(_ value: JSONValue) {
        object = value.objectValue ?? [:]
        id = object["id"]?.stringValue ?? ""
        updatedAt = object["updatedAt"]?.stringValue ?? ""
    }

    var description: String { "\(id)@\(updatedAt)" }
}

/// A stream's body as read so far: its lines, whether its last chunk came, and what came instead
/// of a line when something did.
private struct StreamBody: CustomStringConvertible {
    var lines: [[StreamedRecord]] = []
    var ended = false
    var trouble: String?

    var records: [StreamedRecord] { lines.flatMap { $0 } }
    var ids: [String] { records.map(\.id) }

    /// Whether the records are in pull order (`updatedAt`, then `id`), none twice.
    var inPullOrder: Bool {
        let keys = records.map { (Timestamp(iso8601: $0.updatedAt)?.millisecondsSinceEpoch ?? -1, $0.id) }
        return zip(keys, keys.dropFirst()).allSatisfy { $0 < $1 }
    }

    var description: String {
        "lines \(lines)" + (ended ? ", ended" : "") + (trouble.map { ", then \($0)" } ?? "")
    }

    /// Reads chunks from `socket` until `enough` holds, the body ends, or a chunk is not a line of
    /// JSON array (or none came within the socket's timeout).
    mutating func read(_ socket: RawSocket, until enough: (StreamBody) -> Bool = { _ in false }) async {
        while !enough(self), !ended, trouble == nil {
            switch await socket.chunk() {
            case .end: ended = true
            case .broken(let text): trouble = "not a chunk: \(text.debugDescription)"
            case .line(let text):
                guard case .array(let items)? = try? JSONParser.parse(text), !items.isEmpty else {
                    trouble = "not a page: \(text.debugDescription)"
                    break
                }
                lines.append(items.map(StreamedRecord.init))
            }
        }
    }
}

/// What a chunked body gives next.
private enum Chunk {
    /// A chunk of one line, without its `\n`.
    case line(String)
    /// The last chunk.
    case end
    /// Bytes that are not a line's chunk, or the end of the connection, or nothing in time.
    case broken(String)
}

extension RawSocket {
    /// The next answer's head, split into lines (`LiveFanOutTests.comparable`).
    fileprivate func head() async -> [String] {
        LiveFanOutTests.comparable(await read(until: "\r\n\r\n")).head
    }

    /// The next chunk of a chunked body, read to its end and no further: the lines of a stream as
    /// the server writes them, one at a time.
    fileprivate func chunk() async -> Chunk {
        let sizeLine = Array(await read(until: "\r\n").utf8)
        guard sizeLine.count > 2, let size = Int(String(decoding: sizeLine.dropLast(2), as: UTF8.self), radix: 16) else {
            return .broken(String(decoding: sizeLine, as: UTF8.self))
        }
        if size == 0 {
            let end = await read(until: "\r\n")
            return end == "\r\n" ? .end : .broken("0\r\n" + end)
        }
        let data = Array(await read(until: "\n\r\n").utf8)
        guard data.count == size + 2, data.suffix(3).elementsEqual("\n\r\n".utf8) else {
            return .broken(String(decoding: sizeLine + data, as: UTF8.self))
        }
        return .line(String(decoding: data.dropLast(3), as: UTF8.self))
    }
}

/// The value of field `name` in `head` (an answer's lines), nil when it has none.
private func field(_ name: String, _ head: [String]) -> String? {
    let prefix = name.lowercased() + ":"
    return head.dropFirst().first { $0.lowercased().hasPrefix(prefix) }.map {
        String($0.dropFirst(prefix.count)).trimmingCharacters(in: .whitespaces)
    }
}
