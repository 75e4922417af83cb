import Foundation
import Testing

/// Memory one request can make the server take (docs/DESIGN.md §10.1).
@Suite(.serialized) struct MemoryBoundTests {
    /// A batch of small values is refused by their count before it is parsed (parsed, 16 MiB of
    /// tiny objects took 82 MB); each item is within the item limit, and the batch within the
    /// byte and operation limits.
    @Test func aBatchOfTooManyValuesIs413BeforeItIsParsed() async throws {
        let server = try await ServeFixture()
        let zeros = Array(repeating: "0", count: 40_000).joined(separator: ",")
        let operation = #"{"method": "POST", "table": "todo", "item": {"id": "ID", "a": [\#(zeros)]}}"#
        let operations = (0..<16).map { operation.replacingOccurrences(of: "ID", with: "r\($0)") }
        let reply = try await HTTP.send(
            "POST", server.url + "/tables/$batch", body: #"{"operations": [\#(operations.joined(separator: ","))]}"#)
        #expect(reply.status == 413, "\(reply.status) \(reply.body.prefix(200))")
        #expect(reply.body.contains("JSON values") && reply.body.contains("split it"), "\(reply.body.prefix(200))")
        // As many values as one item can hold still go.
        let within = try await HTTP.send("POST", server.url + "/tables/$batch", body: #"{"operations": [\#(operations[0])]}"#)
        #expect(within.status == 200, "\(within.status) \(within.body.prefix(200))")
    }

    /// Connections that ask for a 16 MB page and never read it: each kept its page in the server
    /// (300 took it to 4.7 GB). Now the address's unread answers are bounded, and the rest 429.
    @Test func clientsThatAskForBigPagesAndNeverReadThemAreNotBufferedWhole() async throws {
        let server = try await ServeFixture(options: ["--idle-timeout", "60"])
        try await server.fill("big", count: 400, size: 40_000)  // a page of all of them is 16 MB
        let process = try #require(server.server)
        let port = try #require(URLComponents(string: server.url)?.port)
        // One page read whole first, so the memory a page costs once is in the baseline.
        let whole = try await HTTP.send("GET", server.url + "/tables/big?$top=1000")
        #expect(whole.status == 200 && whole.body.count > 16_000_000, "\(whole.status) \(whole.body.count)")
        let before = try #require(process.residentBytes)

        var sockets: [RawSocket] = []
        for _ in 0..<40 {
            let socket = try RawSocket(port: port, timeout: 10, from: "127.0.0.2", receiveBuffer: 16 << 10)
            await socket.write("GET /tables/big?$top=1000 HTTP/1.1\r\nHost: x\r\nZUMO-API-VERSION: 2.0.0\r\n\r\n")
            // Taken in turn: the next asks once this one's answer has begun (its head, 200 or
            // 429; a few hundred bytes of what the client otherwise never reads).
            let head = await socket.read(until: "\r\n\r\n")
            #expect(head.hasPrefix("HTTP/1.1 200") || head.hasPrefix("HTTP/1.1 429"), "\(head.prefix(200))")
            sockets.append(socket)
        }
        // The growth is measured once the server has had time to take what it would: no event
        // marks that it took all it will.
        try await Task.sleep(for: .seconds(2))
        let after = try #require(process.residentBytes)
        // Kept whole, 40 pages are 640 MB; bounded, the address keeps 32 MiB and one page.
        #expect(after - before < 320 << 20, "the server grew by \((after - before) >> 20) MB")
        #expect(process.log.contains("GET /tables/big?$top=1000 429"), "the pages past the share are refused")
        // Another client is served meanwhile.
        #expect(try await HTTP.send("GET", server.url + "/tables/big?$top=1").status == 200)
        withExtendedLifetime(sockets) {}
    }
}
