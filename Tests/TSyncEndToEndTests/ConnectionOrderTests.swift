import Foundation
import Testing
import TSyncModel

/// Requests on one connection as a client sends them: pipelined, held, closed after their answer
/// (docs/DESIGN.md §8.1, §10). `HTTPExchange` sees each request's parts as they are decoded, before
/// the requests ahead of it are answered.
@Suite(.serialized) struct ConnectionOrderTests {
    /// The answers a connection got, split at each status line.
    private func answers(_ text: String) -> [String] {
        text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { "HTTP/1.1 " + $0 }
    }

    /// Requests pipelined behind a held read wait for its answer: the write behind it does not
    /// wake it (it would answer with the record), and the answers come in order, the last
    /// request's `Connection: close` after them all.
    @Test func requestsPipelinedBehindAHeldReadAreAnsweredInOrder() async throws {
        let server = try await ServeFixture(options: ["--idle-timeout", "30", "--header-timeout", "30"])
        let socket = try RawSocket(port: try server.port, timeout: 15)
        let body = #"{"id":"behind","title":"pipelined"}"#
        let start = ContinuousClock.now
        await socket.write(
            "GET /tables/todo HTTP/1.1\r\nHost: x\r\nPrefer: wait=2\r\n\r\n"
                + "POST /tables/todo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
                + "GET /tables/todo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let all = answers(await socket.readToEnd())
        try #require(all.count == 3, "\(all)")
        #expect(all[0].hasPrefix("HTTP/1.1 200"), "\(all[0])")
        #expect(all[0].contains("Preference-Applied: wait=2"), "\(all[0])")
        #expect(all[0].hasSuffix("\r\n\r\n[]"), "the held read was answered by the write behind it: \(all[0])")
        #expect(ContinuousClock.now - start >= .milliseconds(1500), "the held read did not wait")
        #expect(all[1].hasPrefix("HTTP/1.1 201"), "\(all[1])")
        #expect(all[2].hasPrefix("HTTP/1.1 200") && all[2].contains(#""id":"behind""#), "\(all[2])")
        // Each request logged once, in order, the held read with its status like any other.
        // (The log's request lines are written in batches.)
        let log = try await eventually(timeout: .seconds(10)) {
            server.server?.log ?? ""
        } until: {
            $0.split(separator: "\n").filter { $0.contains(" /tables/todo") }.count >= 3
        }
        let lines = log.split(separator: "\n").filter { $0.contains(" /tables/todo") }
        #expect(lines.count == 3, "\(log)")
        #expect(lines.first?.contains("GET /tables/todo 200") == true, "\(log)")
        #expect(lines.dropFirst().first?.contains("POST /tables/todo 201") == true, "\(log)")
    }

    /// A held read is a request under way, not an idle connection: a wait longer than the idle
    /// timeout is answered in full; the connection is closed once it then stays idle.
    @Test func aHeldReadOutlastsTheIdleTimeoutAndAnIdleConnectionIsThenClosed() async throws {
        let server = try await ServeFixture(options: ["--idle-timeout", "1", "--header-timeout", "30"])
        let socket = try RawSocket(port: try server.port, timeout: 15)
        let start = ContinuousClock.now
        await socket.write("GET /tables/todo HTTP/1.1\r\nHost: x\r\nPrefer: wait=3\r\n\r\n")
        let answer = await socket.read(until: "\r\n\r\n[]")
        let waited = ContinuousClock.now - start
        #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
        #expect(answer.contains("Preference-Applied: wait=3"), "\(answer)")
        #expect(waited >= .milliseconds(2500), "answered after \(waited), before its wait was over")
        // Then idle: closed at the idle timeout (1 s), well before the socket's own 15 s.
        let idle = ContinuousClock.now
        #expect(await socket.isClosedByPeer(), "the idle connection was not closed")
        #expect(ContinuousClock.now - idle < .seconds(10))
    }

    /// A server told to stop answers a held read with what there is, then closes its connection;
    /// the request is not cut off unanswered.
    @Test func aStoppingServerAnswersAHeldReadBeforeClosing() async throws {
        let server = try await ServeFixture(options: ["--idle-timeout", "30", "--header-timeout", "30", "--metrics"])
        let socket = try RawSocket(port: try server.port, timeout: 15)
        await socket.write("GET /tables/todo HTTP/1.1\r\nHost: x\r\nPrefer: wait=20\r\n\r\n")
        let held = try await eventually(timeout: .seconds(10)) {
            try await HTTP.metric("tsync_live_waiting", at: server.url) == 1
        }
        #expect(held, "the read was not held")
        let start = ContinuousClock.now
        server.server?.stop()
        let answer = await socket.readToEnd()
        #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
        #expect(answer.hasSuffix("\r\n\r\n[]"), "\(answer)")
        #expect(ContinuousClock.now - start < .seconds(10), "the stop waited out the wait")
        #expect(socket.stateNow == "closed by the peer")
    }

    /// HTTP/1.0 without keep-alive: the held read's answer says the connection closes, and it does.
    @Test func anHTTP10HeldReadIsClosedAfterItsAnswer() async throws {
        let server = try await ServeFixture(options: ["--idle-timeout", "30", "--header-timeout", "30"])
        let socket = try RawSocket(port: try server.port, timeout: 15)
        await socket.write("GET /tables/todo HTTP/1.0\r\nPrefer: wait=1\r\n\r\n")
        let answer = await socket.readToEnd()
        #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
        #expect(answer.lowercased().contains("connection: close"), "\(answer)")
        #expect(socket.stateNow == "closed by the peer", "closed after the answer, not at a timeout")
    }

    /// Two requests sent at once, the second asking to close: both are answered, and only the
    /// second's answer says the connection closes (a connection's close was the last request's
    /// wish, and cut the first answer's connection with the second unanswered).
    @Test func aPipelinedRequestsCloseIsNotTheOneBeforeIt() async throws {
        let server = try await ServeFixture(options: ["--idle-timeout", "30", "--header-timeout", "30"])
        let socket = try RawSocket(port: try server.port, timeout: 15)
        await socket.write("GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let all = answers(await socket.readToEnd())
        try #require(all.count == 2, "\(all)")
        #expect(all.allSatisfy { $0.hasPrefix("HTTP/1.1 200") && $0.contains(#""status":"ok""#) }, "\(all)")
        #expect(!all[0].lowercased().contains("connection: close"), "\(all[0])")
        #expect(all[1].lowercased().contains("connection: close"), "\(all[1])")
        #expect(socket.stateNow == "closed by the peer")
    }
}
