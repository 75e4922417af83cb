import Foundation
import Synchronization
import Testing
import TSyncModel

#if canImport(Glibc)
    import Glibc
#endif

/// `tsync watch` pulls while its own push is on its way: a store that never falls behind the
/// server, and events that end at the store's state (docs/DESIGN.md §8.1). Each race is made
/// deterministic by a proxy that holds chosen answers until the test lets them go, so the
/// watch's pull runs in between; every wait is on a condition.
@Suite struct LiveOrderTests {
    typealias Watcher = LiveSyncTests.Watcher

    /// One record `r` (fields a and b, both 0) on a server, and two stores that pulled it with a
    /// query id: `w` through `proxy`, `o` directly.
    struct Setup {
        let server: ServeFixture
        let proxy: HoldingProxy
        let w: TSyncSandbox
        let o: TSyncSandbox

        init() async throws {
            server = try await ServeFixture()
            proxy = try HoldingProxy(upstream: server.url)
            w = try await TSyncSandbox(remote: proxy.url)
            o = try await TSyncSandbox(remote: server.url)
            try await o.ok(["insert", "todo", #"{"id": "r", "a": 0, "b": 0}"#])
            try await o.ok(["push"])
            for store in [w, o] { try await store.ok(["pull", "todo", "--query-id", "all"]) }
        }

        /// The server's version of `todo/r`.
        func serverVersion() async throws -> String? {
            try await server.record("todo", "r")?["version"]?.stringValue
        }

        /// Another writer's change of `todo/r`, on top of the server's copy.
        func otherWrites(_ fields: String) async throws {
            try await o.ok(["pull", "todo", "--query-id", "all"])
            try await o.ok(["update", "todo", "r", fields])
            try await o.ok(["push"])
        }

        /// Waits until `w` keeps the server copy of `r` of `version` that a pull skipped (its
        /// change being queued): read from the store's file, since nothing else shows it.
        func waitForSkippedCopy(_ version: String?) async throws {
            let database = (w.path as NSString).appendingPathComponent(".tsync/store.sqlite")
            let sql = "SELECT json_extract(item, '$.version') FROM skipped WHERE tbl = 'todo' AND id = 'r'"
            var seen = ""
            let deadline = Date().addingTimeInterval(120)
            while Date() < deadline {
                let result = try await TSyncProcess.run(
                    ["-cmd", ".timeout 5000", database, sql], in: w.path, executable: "/usr/bin/sqlite3")
                seen = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                if seen == version { return }
                try await Task.sleep(for: .milliseconds(20))
            }
            Issue.record("the watch's pull did not skip r at \(version ?? "nil"): it keeps \(seen)")
        }

        /// `w`'s copy of `r`.
        func local() async throws -> [String: JSONValue] {
            try JSONOutput.object(try await w.ok(["get", "todo", "r"]))
        }
    }

    /// A held answer is waited for as long as a loaded machine may need to run the steps
    /// between (the default HTTP timeout would give it up and retry, another path).
    static let patient = ["TSYNC_TIMEOUT": "300"]

    /// The events' last word on `id`: the version of the last event that names one (pushed,
    /// pulled, settled), as a consumer following the events would hold it.
    static func lastVersion(_ watcher: Watcher, _ id: String) -> String? {
        watcher.events.last { $0["id"]?.stringValue == id && ["pushed", "pulled", "settled"].contains($0["event"]?.stringValue) }?[
            "version"]?.stringValue
    }

    /// The watch's push of r reaches the server; before its answer comes back, another writer
    /// changes r and the watch's pull brings that newer copy (skipped: the change is on its
    /// way). The answer then must not take the store back to the older version: no later pull
    /// would bring the newer one again, its checkpoint being past it.
    @Test func aPushAnswerNeverTakesTheStoreBehindACopyAPullBroughtMeanwhile() async throws {
        let setup = try await Setup()
        defer { setup.proxy.close() }
        let watcher = try Watcher(setup.w, environment: Self.patient)
        await watcher.waitFor("connected")

        setup.proxy.hold { $0.hasPrefix("POST /tables/$batch") }
        try await setup.w.ok(["update", "todo", "r", #"{"a": 1}"#])
        try await setup.proxy.waitUntilHeld(1)
        let pushedVersion = try await setup.serverVersion()
        try await setup.otherWrites(#"{"b": 1}"#)
        let newest = try await setup.serverVersion()
        #expect(newest != pushedVersion)
        try await setup.waitForSkippedCopy(newest)

        setup.proxy.release()
        let pushed = await watcher.waitFor("pushed", id: "r")
        let local = try await setup.local()
        #expect(local["version"]?.stringValue == newest, "the store took the older answer: \(local)")
        #expect(local["a"] == 1 && local["b"] == 1, "\(local)")
        #expect(pushed?["version"]?.stringValue == newest)
        #expect(Self.lastVersion(watcher, "r") == newest, "\(watcher.process.stdoutSoFar)")
        #expect(await watcher.stop().status == 130)
        await #expect(try setup.w.ok(["status", "--porcelain"]).isEmpty)
    }

    /// A push that runs on after one of its rounds is done (a second round held): a page that
    /// brings a newer copy of the first round's record comes after that round's `pushed` event,
    /// so the last event names the version the store holds.
    @Test func aPushIsSaidBeforeANewerCopyOfItsRecordThatAPageBrings() async throws {
        let setup = try await Setup()
        defer { setup.proxy.close() }
        try await setup.o.ok(["insert", "todo", #"{"id": "s", "a": 0}"#])
        try await setup.o.ok(["push"])
        try await setup.w.ok(["pull", "todo", "--query-id", "all"])
        let watcher = try Watcher(setup.w, environment: Self.patient)
        await watcher.waitFor("connected")

        // Round one (r) is held until s is queued; round two (s) is held while r changes again.
        setup.proxy.hold(count: 2) { $0.hasPrefix("POST /tables/$batch") }
        try await setup.w.ok(["update", "todo", "r", #"{"a": 1}"#])
        try await setup.proxy.waitUntilHeld(1)
        try await setup.w.ok(["update", "todo", "s", #"{"a": 1}"#])
        setup.proxy.release()
        try await setup.proxy.waitUntilHeld(2)
        try await setup.otherWrites(#"{"b": 1}"#)
        let newest = try await setup.serverVersion()
        let pulled = await watcher.waitFor("pulled", id: "r")
        #expect(pulled?["version"]?.stringValue == newest)

        setup.proxy.release()
        await watcher.waitFor("pushed", id: "s")
        let events = watcher.events.filter { $0["id"] == "r" }.compactMap { $0["event"]?.stringValue }
        #expect(events == ["pushed", "pulled"], "\(watcher.process.stdoutSoFar)")
        #expect(Self.lastVersion(watcher, "r") == newest, "\(watcher.process.stdoutSoFar)")
        #expect(try await setup.local()["version"]?.stringValue == newest)
        #expect(await watcher.stop().status == 130)
    }

    /// The watch's read brings another writer's change of r and is held; meanwhile the watch
    /// pushes its own change of r (a conflict, merged, pushed again). The page, applied after
    /// the push's answer, must not take the store back to the older copy it holds.
    @Test func aPageReadBeforeAPushAnswerDoesNotUndoIt() async throws {
        let setup = try await Setup()
        defer { setup.proxy.close() }
        let watcher = try Watcher(setup.w, ["--on-conflict", "merge"], environment: Self.patient)
        await watcher.waitFor("connected")

        setup.proxy.hold(answerContains: #""id":"r""#) { $0.hasPrefix("GET /tables/todo?") && $0.contains("orderby") }
        try await setup.otherWrites(#"{"b": 1}"#)
        try await setup.proxy.waitUntilHeld(1)
        try await setup.w.ok(["update", "todo", "r", #"{"a": 1}"#])
        await watcher.waitFor("settled", id: "r")
        let pushed = await watcher.waitFor("pushed", id: "r")
        let newest = try await setup.serverVersion()
        #expect(pushed?["version"]?.stringValue == newest)

        // The held page goes; a later change of another record shows it was written.
        setup.proxy.release()
        try await setup.o.ok(["insert", "todo", #"{"id": "z"}"#])
        try await setup.o.ok(["push"])
        await watcher.waitFor("pulled", id: "z")
        let local = try await setup.local()
        // (A later read brings the newest copy again on tsync serve, whose updatedAt order is
        // commit order: the store is back in the end either way, but went back meanwhile, and a
        // change made then is made on the older copy.)
        let older = watcher.events("pulled").filter { $0["id"] == "r" && $0["version"]?.stringValue != newest }
        #expect(older.isEmpty, "the page took the store back: \(watcher.process.stdoutSoFar)")
        #expect(local["version"]?.stringValue == newest, "\(local)")
        #expect(local["a"] == 1 && local["b"] == 1, "\(local)")
        #expect(Self.lastVersion(watcher, "r") == newest, "\(watcher.process.stdoutSoFar)")
        #expect(await watcher.stop().status == 130)
    }

    /// A conflict settled by the merge policy on the copy its 412 carried, while the watch's pull
    /// brings a newer one (skipped: the change is queued) before that answer arrives: settling
    /// takes the newer copy, and the `settled` event names the version the store holds.
    @Test func settlingTakesTheNewerCopyAPullBroughtMeanwhile() async throws {
        let setup = try await Setup()
        defer { setup.proxy.close() }
        let watcher = try Watcher(setup.w, ["--on-conflict", "merge"], environment: Self.patient)
        await watcher.waitFor("connected")

        // The watch's read is held with the other writer's first change, so w's change is
        // made on the older copy and meets a conflict; the push's answer, the 412 and the copy
        // it carries, is held too, while the other writer changes r again.
        setup.proxy.hold(answerContains: #""id":"r""#) { $0.hasPrefix("GET /tables/todo?") && $0.contains("orderby") }
        try await setup.otherWrites(#"{"a": 1, "c": 1}"#)
        try await setup.proxy.waitUntilHeld(1)
        setup.proxy.hold(answerContains: #""status":412"#) { $0.hasPrefix("POST /tables/$batch") }
        try await setup.w.ok(["update", "todo", "r", #"{"a": 1}"#])
        try await setup.proxy.waitUntilHeld(2)
        try await setup.otherWrites(#"{"b": 1}"#)
        let newest = try await setup.serverVersion()
        setup.proxy.release()
        try await setup.waitForSkippedCopy(newest)

        setup.proxy.release()
        let settled = await watcher.waitFor("settled", id: "r")
        #expect(settled?["policy"] == "merge")
        let local = try await setup.local()
        #expect(local["version"]?.stringValue == newest, "settled on the older copy: \(local)")
        #expect(local["a"] == 1 && local["b"] == 1 && local["c"] == 1, "\(local)")
        #expect(settled?["version"]?.stringValue == newest, "\(watcher.process.stdoutSoFar)")
        #expect(Self.lastVersion(watcher, "r") == newest, "\(watcher.process.stdoutSoFar)")
        #expect(await watcher.stop().status == 130)
        await #expect(try setup.w.ok(["status", "--porcelain"]).isEmpty)
    }
}

/// A loopback HTTP proxy in front of a real `tsync serve` that holds chosen answers: a request
/// is forwarded and the server applies it, and when its answer comes back while a rule matches
/// the request line, the answer waits until `release()`. (The rule is looked at when the answer
/// arrives, so a long-poll already waiting at the server is caught too.)
final class HoldingProxy: Sendable {
    private struct State {
        var rules: [(matches: @Sendable (String) -> Bool, answerContains: String?, remaining: Int)] = []
        var held = 0
        var released = 0
        /// The last requests relayed, for a failure's message.
        var relayed: [String] = []
    }
    private let state = Mutex(State())
    private let upstreamPort: UInt16
    private let connections: AcceptLoop
    let url: String

    /// Listens on 127.0.0.1 (a free port) and forwards to `upstream` (`http://127.0.0.1:PORT`).
    init(upstream: String) throws {
        guard let port = URLComponents(string: upstream)?.port else { throw TSyncTestError("HoldingProxy: no port in \(upstream)") }
        upstreamPort = UInt16(port)
        connections = try AcceptLoop()
        url = "http://127.0.0.1:\(connections.port)"
        connections.start { [weak self] client in self?.serve(client) }
    }

    /// Holds the next `count` answers to requests whose request line (`METHOD PATH …`) `matches`
    /// (and that contain `answerContains`, when given).
    func hold(count: Int = 1, answerContains: String? = nil, where matches: @escaping @Sendable (String) -> Bool) {
        state.withLock { $0.rules.append((matches, answerContains, count)) }
    }

    /// Lets the oldest held answer go.
    func release() { state.withLock { $0.released += 1 } }

    /// Waits (at most 120 s) until `count` answers have been held in all: the server has
    /// answered those requests.
    func waitUntilHeld(_ count: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            if state.withLock({ $0.held }) >= count { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        let (held, relayed) = state.withLock { ($0.held, $0.relayed) }
        Issue.record(
            "\(count) answer(s) were to be held; \(held) were. Relayed last: \(relayed.joined(separator: "\n"))",
            sourceLocation: sourceLocation)
    }

    /// Lets every answer go, stops listening and ends every connection.
    func close() {
        state.withLock { $0.released = .max / 2 }
        connections.stop()
    }

    deinit { close() }

    private func serve(_ client: Int32) {
        var buffer: [UInt8] = []
        while let request = LossyProxy.readMessage(client, &buffer, isResponse: false) {
            let line = String(decoding: request.prefix(while: { $0 != 13 }).prefix(2000), as: UTF8.self)
            guard let answer = forward(request) else { return }
            let text = String(decoding: answer, as: UTF8.self)
            let ticket: Int? = state.withLock { s in
                s.relayed = s.relayed.suffix(19) + [line + " -> " + text.suffix(300).replacingOccurrences(of: "\r\n", with: " | ")]
                guard
                    let index = s.rules.firstIndex(where: { rule in
                        rule.remaining > 0 && rule.matches(line) && rule.answerContains.map { text.contains($0) } != false
                    })
                else { return nil }
                s.rules[index].remaining -= 1
                s.held += 1
                return s.held
            }
            if let ticket {
                while state.withLock({ $0.released < ticket }) { Thread.sleep(forTimeInterval: 0.01) }
            }
            guard LossyProxy.writeAll(client, answer) else { return }
        }
    }

    private func forward(_ request: [UInt8]) -> [UInt8]? {
        let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(upstream) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = upstreamPort.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0, LossyProxy.writeAll(upstream, request) else { return nil }
        var buffer: [UInt8] = []
        return LossyProxy.readMessage(upstream, &buffer, isResponse: true)
    }
}
