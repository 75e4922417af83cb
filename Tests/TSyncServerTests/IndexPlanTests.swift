import Testing
import TSyncModel
import TSyncQuery

@testable import TSyncServer

/// Indexed fields (`tsync serve --index`) are used: the database's plan for an indexed query
/// searches the index instead of scanning the table, and a query on a field without an index
/// still scans (so the check can fail). What the queries select is checked by
/// `FilterOracleTests.indexedFieldsSelectAndOrderAsWithout`.
@Suite struct IndexPlanTests {
    static let records: [Record] = (0..<300).map { index in
        Record(id: "r\(index)", fields: ["n": .int(Int64(index % 37)), "s": .string("text \(index % 11)"), "x": .int(Int64(index))])
    }

    @Test func sqliteSearchesTheIndexOfAnIndexedField() async throws {
        try await TestBackend.sqlite.withFreshStorage { storage in
            let sqlite = try #require(storage as? SQLiteStorage)
            let fields = [try IndexedField(table: "todo", field: "n"), try IndexedField(table: "todo", field: "s")]
            var mine = try IndexedField(table: "mine", field: "n")
            mine.perUser = true
            _ = try await sqlite.declareIndexes(fields + [mine])
            for record in Self.records {
                _ = try await sqlite.insert(table: "todo", record: record, scope: .shared)
                _ = try await sqlite.insert(table: "mine", record: record, scope: .owner(record.id.hasSuffix("7") ? "ann" : "bob"))
                _ = try await sqlite.insert(table: "ours", record: record, scope: .owner(record.id.hasSuffix("7") ? "ann" : "bob"))
            }
            func plan(_ table: String, _ filter: String?, order: [SortKey] = [], scope: OwnerScope = .shared) async throws -> String {
                let query = RecordQuery(
                    filter: try filter.map { text throws(TSyncError) in try ODataParser.parseFilter(text) }, orderBy: order, top: 10)
                return try await sqlite.queryPlan(table: table, query, scope: scope).joined(separator: " | ")
            }
            for filter in [
                "n gt 5", "n eq 3", "n le 2", "5 lt n", "s eq 'text 3'", "s gt 'text 5'", "startswith(s, 'text 1')", "n ge 30 and x lt 100",
            ] {
                let steps = try await plan("todo", filter)
                #expect(steps.contains("USING INDEX t_todo_ix_"), "\(filter): \(steps)")
                #expect(!steps.contains("SCAN t_todo"), "\(filter): \(steps)")
            }
            let ordered = try await plan("todo", "x ge 0", order: [SortKey(field: "n")])
            #expect(ordered.contains("t_todo_ix_n_") && !ordered.contains("TEMP B-TREE"), "$orderby reads the index in order: \(ordered)")
            // Descending, the id tie-break (ascending) is sorted within each value only.
            let descending = try await plan("todo", nil, order: [SortKey(field: "n", descending: true)])
            #expect(descending.contains("t_todo_ix_n_") && !descending.contains("TEMP B-TREE FOR ORDER BY"), "\(descending)")
            let perUser = try await plan("mine", "n gt 5", scope: .owner("ann"))
            #expect(perUser.contains("USING INDEX t_mine_ix_n_") && perUser.contains("owner=?"), "the owner leads the index: \(perUser)")

            // A per-user read of a table without indexed fields walks the owner's records only.
            let ownRecords = try await plan("ours", "x gt 5", scope: .owner("ann"))
            #expect(ownRecords.contains("USING INDEX t_ours_by_owner (owner=?)") && !ownRecords.contains("SCAN t_ours"), "\(ownRecords)")

            let unindexed = try await plan("todo", "x gt 5")
            #expect(unindexed.contains("SCAN t_todo"), "without an index the table is scanned: \(unindexed)")
            let negated = try await plan("todo", "not (n gt 5)")
            #expect(negated.contains("SCAN t_todo"), "under not, no range is added (it would change NULL into false): \(negated)")
        }
    }

    @Test(.enabled(if: TestBackend.available.contains(.postgres))) func postgresSearchesTheIndexesOfAnIndexedField() async throws {
        try await TestBackend.postgres.withFreshStorage { storage in
            let postgres = try #require(storage as? PostgresStorage)
            _ = try await postgres.declareIndexes([
                try IndexedField(table: "todo", field: "s"), try IndexedField(table: "todo", field: "n"),
            ])
            // Distinct values, so that each filter is selective: with only a few values, walking
            // the primary key in `id` order is the planner's right choice for a page of 10.
            for index in 0..<600 {
                let record = Record(
                    id: "r\(index)", fields: ["s": .string("text " + String(1000 + index).dropFirst()), "n": .int(Int64(index))])
                _ = try await postgres.insert(table: "todo", record: record, scope: .shared)
            }
            try await postgres.analyze()
            for filter in [
                "s eq 'text 003'", "s gt 'text 590'", "s le 'text 004'", "startswith(s, 'text 01')", "n eq 7", "n gt 590", "3 ge n",
            ] {
                let query = RecordQuery(filter: try ODataParser.parseFilter(filter), top: 10)
                let steps = try await postgres.queryPlan(table: "todo", query, scope: .shared).joined(separator: " | ")
                #expect(steps.contains("Index Cond") && steps.contains("tsync_ix_"), "\(filter): \(steps)")
            }
            for descending in [false, true] {
                let query = RecordQuery(orderBy: [SortKey(field: "s", descending: descending)], top: 10)
                let steps = try await postgres.queryPlan(table: "todo", query, scope: .shared).joined(separator: " | ")
                #expect(steps.contains("_o on tsync_records"), "$orderby reads the sort index: \(steps)")
                #expect(
                    !steps.contains("  Sort  ") && !steps.contains("->  Sort"), "only an incremental sort of the id tie-break: \(steps)")
            }
        }
    }
}
