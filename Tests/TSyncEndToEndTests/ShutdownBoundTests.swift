import Foundation
import Testing
import TSyncModel

/// SIGTERM with a slow upload in flight stops within the documented bound (20 s, under
/// the README unit's `TimeoutStopSec=30`), and an answer whose transaction committed is written
/// whole first (docs/DESIGN.md §10.1).
@Suite(.serialized) struct ShutdownBoundTests {
    @Test func aSlowUploadDoesNotHoldTheStopAndACommittedBatchIsAnsweredWhole() async throws {
        let directory = try TemporaryDirectory()
        let server = try ServerProcess(
            arguments: ["serve", "--no-auth", "--port", "0", "--body-timeout", "60", "--db", "sqlite:" + directory.path + "/server.db"],
            log: directory.path)
        let base = try await server.waitForAddress()
        let port = try #require(URLComponents(string: base)?.port)

        // An upload that trickles a byte a second: without a bound it holds the stop until its
        // body timeout (60 s).
        // (Each request is under way once the server answers its `Expect: 100-continue`.)
        let upload = try RawSocket(port: port, timeout: 30)
        await upload.write(
            "POST /tables/todo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
                + "Content-Length: 1000\r\n\r\n")
        #expect(await upload.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 100"))
        await upload.write("{")
        let trickle = Task {
            for _ in 0..<40 {
                guard await upload.write(" ") else { return }
                try? await Task.sleep(for: .seconds(1))  // a byte a second: the slow upload under test
            }
        }
        // A batch of 1,000 inserts, all but its last bytes sent before the signal.
        let operations = (0..<1000).map {
            #"{"method": "POST", "table": "todo", "item": {"id": "r\#($0)", "text": "\#(String(repeating: "x", count: 200))"}}"#
        }
        let body = #"{"operations": [\#(operations.joined(separator: ","))]}"#
        let batch = try RawSocket(port: port, timeout: 30)
        await batch.write(
            "POST /tables/$batch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n")
        #expect(await batch.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 100"))
        await batch.write(String(body.dropLast(10)))

        let start = ContinuousClock.now
        let stopping = Task { try await server.terminate(signal: SIGTERM, timeout: .seconds(40)) }
        #expect(try await server.waitForLog("stopping on SIGTERM"), "\(server.log)")
        await batch.write(String(body.suffix(10)))
        // The batch's client is slow to read its answer: time passing is the case under test.
        try await Task.sleep(for: .seconds(1))
        let answer = await batch.readToEnd()
        #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer.prefix(200))")
        let json = try #require(answer.range(of: "\r\n\r\n").map { String(answer[$0.upperBound...]) })
        guard case .array(let results)? = try JSONParser.parse(json).objectValue?["results"] else {
            Issue.record("no results: \(answer.suffix(200))")
            return
        }
        #expect(results.count == 1000, "the committed batch's answer is whole: \(answer.count) bytes")

        #expect(try await stopping.value == 0)
        let took = ContinuousClock.now - start
        #expect(took < .seconds(20), "stopped in \(took)")
        let uploadAnswer = await upload.readToEnd()
        #expect(uploadAnswer.isEmpty || uploadAnswer.hasPrefix("HTTP/1.1 503"), "\(uploadAnswer.prefix(200))")
        trickle.cancel()
    }
}
