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
