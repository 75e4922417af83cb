import Foundation
import Testing
import TSyncModel

/// A pull with no progress line to draw (stderr is not a terminal: a script, a CI job, 200 stores
/// cloning at once) asks for no total: on a large table the count costs the server more than the
/// page, and the clone does not need it.
@Suite struct CloneCountTests {
    @Test func aPullWithoutAProgressLineAsksForNoCount() async throws {
        let server = try await ServeFixture()
        let writer = try await TSyncSandbox(remote: server.url)
        let items = (0..<30).map { #"{"id": "r\#($0)", "n": \#($0)}"# }.joined(separator: "\n")
        try await writer.ok(["insert", "rows"], stdin: items)
        try await writer.ok(["push"])
        let reader = try await TSyncSandbox(remote: server.url)
        let pull = try JSONOutput.object(try await reader.ok(["pull", "rows", "--page-size", "7", "--json"]))
        #expect(JSONOutput.int(pull["received"]) == 30)
        let log = try #require(server.server?.log)
        let pages = log.split(separator: "\n").filter { $0.contains("GET /tables/rows") }
        #expect(pages.count >= 5, "\(log)")
        #expect(!pages.contains { $0.contains("inlinecount") }, "\(pages)")
    }

    /// `sync` reports each pull's summary to its own observer, which once made every pull it ran
    /// ask for the total as if a progress line would show it.
    @Test func aSyncWithoutAProgressLineAsksForNoCount() async throws {
        let server = try await ServeFixture()
        let writer = try await TSyncSandbox(remote: server.url)
        let items = (0..<30).map { #"{"id": "r\#($0)", "n": \#($0)}"# }.joined(separator: "\n")
        try await writer.ok(["insert", "rows"], stdin: items)
        try await writer.ok(["push"])
        let reader = try await TSyncSandbox(remote: server.url)
        try await reader.ok(["pull", "rows", "--query-id", "all", "--page-size", "7"])
        let more = (30..<45).map { #"{"id": "r\#($0)", "n": \#($0)}"# }.joined(separator: "\n")
        try await writer.ok(["insert", "rows"], stdin: more)
        try await writer.ok(["push"])
        let sync = try JSONOutput.object(try await reader.ok(["sync", "--json"]))
        guard case .array(let pulls)? = sync["pulls"] else { Issue.record("no pulls: \(sync)"); return }
        #expect(pulls.compactMap { JSONOutput.int($0.objectValue?["received"]) }.reduce(0, +) == 15, "\(sync)")
        let log = try #require(server.server?.log)
        let pages = log.split(separator: "\n").filter { $0.contains("GET /tables/rows") }
        #expect(pages.count >= 8, "\(log)")
        #expect(!pages.contains { $0.contains("inlinecount") }, "\(pages)")
    }
}
