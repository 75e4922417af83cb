import Foundation
import Testing
import TSyncModel

/// `tsync serve` against clients that misbehave on the wire (issue 9, server side).
@Suite(.serialized) struct HostileClientTests {
    private func port(_ server: SyncServer) throws -> Int {
        try #require(URLComponents(string: server.url)?.port)
    }

    /// A client that writes a whole body over the limit before reading (Connection: close, no
    /// Expect: 100-continue, as Python's urllib does) gets its 413 at once instead of blocking on a
    /// full socket until its own timeout (issue 9.2).
    @Test(arguments: ["/tables/todo", "/tables/$batch"])
    func aBodyOverTheLimitIsAnswered413WhileTheClientSendsItWhole(path: String) async throws {
        let server = try await SyncServer()
        let socket = try RawSocket(port: try port(server), timeout: 10)
        let body = [UInt8](repeating: UInt8(ascii: "x"), count: 20 << 20)
        socket.write(
            "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\n"
                + "Content-Length: \(body.count)\r\n\r\n")
        #expect(socket.write(body), "the server kept reading the body")
        let answer = socket.readToEnd()
        #expect(answer.hasPrefix("HTTP/1.1 413"), "\(answer.prefix(200))")
        #expect(answer.lowercased().contains("connection: close"))
        #expect(answer.contains(#""error""#))
        // The server is fine afterwards.
        #expect(try await HTTP.send("GET", server.url + "/health").status == 200)
    }
}

/// Connections that would hold the server (issue 9.4): idle ones, ones that send a byte a second,
/// and more than the server takes. The server keeps answering everyone else, then closes them.
@Suite(.serialized) struct ConnectionLimitTests {
    @Test func idleAndSlowClientsDoNotStarveOthers() async throws {
        let server = try await SyncServer(options: [
            "--header-timeout", "2", "--idle-timeout", "3", "--max-connections", "600",
        ])
        let port = try #require(URLComponents(string: server.url)?.port)
        var idle: [RawSocket] = []
        for _ in 0..<500 { idle.append(try RawSocket(port: port, timeout: 10)) }
        var slow: [RawSocket] = []
        for _ in 0..<50 {
            let socket = try RawSocket(port: port, timeout: 10)
            socket.write("G")
            slow.append(socket)
        }
        // While they hold 550 connections, a byte a second each, the server answers others.
        for step in 0..<3 {
            for socket in slow { socket.write("ET /hea"[step..<(step + 1)]) }
            let reply = try await HTTP.send("GET", server.url + "/health")
            #expect(reply.status == 200, "answered while 550 connections are held")
            try await Task.sleep(for: .seconds(1))
        }
        // The header timeout (2 s from the first byte) has closed the slow ones; the idle timeout
        // (3 s) the idle ones.
        try await Task.sleep(for: .seconds(2))
        #expect(slow.filter { $0.isClosedByPeer() }.count == slow.count, "slow heads are cut off")
        #expect(idle.prefix(50).filter { $0.isClosedByPeer() }.count == 50, "idle connections are closed")
    }

    @Test func oneConnectionTooManyIsAnswered503() async throws {
        let server = try await SyncServer(options: ["--max-connections", "20"])
        let port = try #require(URLComponents(string: server.url)?.port)
        let held = try (0..<20).map { _ in try RawSocket(port: port, timeout: 10) }
        try await Task.sleep(for: .milliseconds(300))
        let extra = try RawSocket(port: port, timeout: 10)
        extra.write("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        let answer = extra.readToEnd()
        #expect(answer.hasPrefix("HTTP/1.1 503"), "\(answer.prefix(120))")
        #expect(answer.contains("too many open connections"))
        withExtendedLifetime(held) {}
        // Once they go, there is room again.
        for socket in held { socket.close() }
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await HTTP.send("GET", server.url + "/health").status == 200)
    }
}

extension String {
    fileprivate subscript(_ range: Range<Int>) -> String {
        String(self[index(startIndex, offsetBy: range.lowerBound)..<index(startIndex, offsetBy: range.upperBound)])
    }
}

/// SIGTERM to `tsync serve` (issue 9, graceful stop): a request in flight is finished and
/// answered, new connections are refused, and the server exits 0.
@Suite(.serialized) struct GracefulStopTests {
    @Test func aRequestInFlightIsFinishedThenTheServerExits0() async throws {
        let directory = try TemporaryDirectory()
        let server = try ServerProcess(
            arguments: ["serve", "--no-auth", "--port", "0", "--db", "sqlite:" + directory.path + "/server.db"], log: directory.path)
        let base = try await server.waitForAddress()
        let port = try #require(URLComponents(string: base)?.port)

        // Half a request: head and part of the body; the rest comes after SIGTERM.
        let body = #"{"id": "late", "text": "sent across a shutdown"}"#
        let socket = try RawSocket(port: port, timeout: 10)
        socket.write(
            "POST /tables/todo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n")
        socket.write(String(body.prefix(10)))
        try await Task.sleep(for: .milliseconds(300))
        let stopping = Task { try await server.terminate(signal: SIGTERM, timeout: .seconds(20)) }
        try await Task.sleep(for: .milliseconds(500))
        // New connections are no longer taken.
        let newcomer = try? await HTTP.send("GET", base + "/health")
        #expect(newcomer == nil || newcomer?.status != 200, "a new request is refused while stopping")
        socket.write(String(body.dropFirst(10)))
        let answer = socket.readToEnd()
        #expect(answer.hasPrefix("HTTP/1.1 201"), "the request in flight was finished: \(answer.prefix(200))")
        #expect(try await stopping.value == 0)
        let log = server.log
        #expect(log.contains("POST /tables/todo 201"), "\(log)")
    }
}
