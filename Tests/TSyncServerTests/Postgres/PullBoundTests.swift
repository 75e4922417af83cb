import Testing
import TSyncModel
import TSyncQuery

@testable import TSyncServer

/// A pull's checkpoint filter gives PostgreSQL a lower bound on `updated_at` that its index can
/// start from (`PullBound`); a filter that does not imply one gives none.
struct PullBoundTests {
    @Test func readsTheLeastUpdatedAtAFilterLetsThrough() throws {
        let checkpoint = "2026-11-26T08:20:27.289Z"
        let expected = try #require(Timestamp(iso8601: checkpoint))
        func bound(_ filter: String) throws -> Timestamp? { PullBound.lowest(try ODataParser.parseFilter(filter)) }
        #expect(
            try bound(
                "updatedAt gt datetimeoffset'\(checkpoint)' or (updatedAt eq datetimeoffset'\(checkpoint)' and id gt 'item-')")
                == expected)
        #expect(try bound("(updatedAt ge datetime'\(checkpoint)') and n eq 1") == expected)
        #expect(try bound("updatedAt gt datetime'2000-01-01T00:00:00Z' and updatedAt gt datetime'\(checkpoint)'") == expected)
        #expect(
            try bound("updatedAt gt datetime'\(checkpoint)' or updatedAt eq datetime'2000-01-01T00:00:00Z'")?.iso8601
                == "2000-01-01T00:00:00.000Z")
        // Nothing implied: one side of an `or` unbounded, a bound from above, a negation, another field.
        #expect(try bound("updatedAt gt datetime'\(checkpoint)' or n eq 1") == nil)
        #expect(try bound("updatedAt lt datetime'\(checkpoint)'") == nil)
        #expect(try bound("not (updatedAt gt datetime'\(checkpoint)')") == nil)
        #expect(try bound("createdAt gt datetime'\(checkpoint)'") == nil)
    }

    /// On PostgreSQL a checkpoint page starts its index walk at the checkpoint.
    @Test(.enabled(if: PostgresTestDatabase.isConfigured, "TSYNC_TEST_POSTGRES_URL is not set: no PostgreSQL to test against"))
    func aCheckpointPageStartsItsIndexWalkAtTheCheckpoint() async throws {
        try await TestBackend.postgres.withFreshStorage { storage in
            let postgres = try #require(storage as? PostgresStorage)
            for index in 0..<300 {
                _ = try await postgres.insert(table: "items", record: Record(id: "r\(index)", fields: [:]), scope: .shared)
            }
            try await postgres.analyze()
            let middle = try #require(try await postgres.record(table: "items", id: "r150", scope: .shared)?.system.updatedAt).iso8601
            let filter = "updatedAt gt datetimeoffset'\(middle)' or (updatedAt eq datetimeoffset'\(middle)' and id gt 'r150')"
            let query = RecordQuery(
                filter: try ODataParser.parseFilter(filter), orderBy: [SortKey(field: "updatedAt"), SortKey(field: "id")], top: 10)
            let steps = try await postgres.queryPlan(table: "items", query, scope: .shared).joined(separator: " | ")
            #expect(steps.contains("Index Cond") && steps.contains("updated_at >= '\(middle)'"), "\(steps)")
            let page = try await postgres.query(table: "items", query, scope: .shared).records()
            #expect(page.map(\.id) == (151..<161).map { "r\($0)" })
        }
    }
}
