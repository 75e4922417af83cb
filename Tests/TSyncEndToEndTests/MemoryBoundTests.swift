import Foundation
import Testing

/// Issue 35: memory one request can make the server take (docs/DESIGN.md §10.1).
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
}
