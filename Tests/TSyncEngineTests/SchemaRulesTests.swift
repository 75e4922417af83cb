import Foundation
import Testing
import TSyncModel

@testable import TSyncEngine

/// What a pull keeps of the schema a page announces (docs/DESIGN.md §16), against a scripted
/// server: the one announced, none when the page announces none, and none when what the schema
/// route sends is not what the page announced (a cache replaying an older answer).
@Suite struct SchemaRulesTests {
    static let current: JSONValue = ["required": ["title"], "properties": ["title": ["type": "string"]]]
    static let older: JSONValue = ["properties": ["title": ["type": "integer"]]]

    private func pull(_ store: LocalStore, announcing tag: String?, sending document: JSONValue?) async throws -> PullSummary {
        let remote = try ScriptedRemote()
        remote.scriptedSchema = document
        remote.scriptedPage = { _ in
            var page = Page(records: [], nextLink: nil, totalCount: nil, waitApplied: nil)
            page.schemaTag = tag
            return page
        }
        return try await Puller(store: store, remote: remote).pull(PullRequest(table: "todo", queryID: "q"))
    }

    @Test func aPullKeepsTheSchemaAnnouncedAndNoOther() async throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        let tag = try RecordSchema(Self.current).tag

        _ = try await pull(store, announcing: tag, sending: Self.current)
        #expect(try store.schema(of: "todo")?.document == Self.current)

        // A replayed older answer to the schema route: kept none, and said.
        try store.saveSchema(nil, of: "todo")
        let replayed = try await pull(store, announcing: tag, sending: Self.older)
        #expect(try store.schema(of: "todo") == nil)
        #expect(replayed.warnings.contains { $0.contains("a cache replaying an older answer") }, "\(replayed.warnings)")

        // Announced again and sent right: kept; then a page that announces none drops it.
        _ = try await pull(store, announcing: tag, sending: Self.current)
        #expect(try store.schema(of: "todo") != nil)
        _ = try await pull(store, announcing: nil, sending: nil)
        #expect(try store.schema(of: "todo") == nil)
    }
}
