import Testing
import TSyncModel
import TSyncQuery

@testable import TSyncServer

/// A group's pull page is one call of `tsync_pull_group_page` on PostgreSQL when it owes the
/// account nothing but its group's records (docs/DESIGN.md §11.1): it must send what the general
/// path sends, and leave to it every page that owes more (records that left the view, a change
/// of the account's groups) or was asked under labels that no longer hold.
// Needs a PostgreSQL server: TSYNC_TEST_POSTGRES_URL (scripts/test.sh starts one).
@Suite(.enabled(if: PostgresTestDatabase.isConfigured, "TSYNC_TEST_POSTGRES_URL is not set: no PostgreSQL to test against"))
struct PostgresGroupPullPageTests {
    @Test func groupPagesInOneCallAreTheGeneralPathsPages() async throws {
        try await PostgresTestDatabase.withFreshDatabase { url in
            try await PostgresDatabase.withDatabase(url: url, maximumConnections: 4, logger: quietLogger) { database in
                // Pages read ahead wait for as long as the test runs, however loaded the machine.
                let inOneCall = PostgresStorage(
                    database: database, clock: Timestamp.now, readAhead: PullReadAhead(lifetime: .seconds(3600)))
                let general = PostgresStorage(database: database, clock: Timestamp.now, readsPagesInOneCall: false)
                var field = try IndexedField(table: "items", field: "team")
                field.grouped = true
                _ = try await inOneCall.declareIndexes([field])
                try await inOneCall.createAccount(name: "ann", passwordHash: "unused", createdAt: Timestamp.now())
                #expect(try await inOneCall.changeLabels(name: "ann", kind: .group, add: ["g0"], remove: []))
                // Three groups in turn, four more of g0, a record of no group, a team that is a number and
                // one that is its text, and deletions.
                var writes = (0..<18).map { index in
                    RecordWrite(
                        table: "items",
                        action: .insert(Record(id: "r\(index)", fields: ["team": .string("g\(index % 3)"), "n": .int(Int64(index))])),
                        scope: .shared)
                }
                writes += (0..<4).map {
                    RecordWrite(table: "items", action: .insert(Record(id: "s\($0)", fields: ["team": "g0"])), scope: .shared)
                }
                writes.append(RecordWrite(table: "items", action: .insert(Record(id: "none", fields: ["n": .int(1)])), scope: .shared))
                writes.append(RecordWrite(table: "items", action: .insert(Record(id: "num", fields: ["team": .int(0)])), scope: .shared))
                writes.append(RecordWrite(table: "items", action: .insert(Record(id: "zero", fields: ["team": "0"])), scope: .shared))
                #expect(try await inOneCall.write(writes, atomic: false).allSatisfy { $0.succeeded })
                for id in ["r3", "r4"] {
                    try await Self.modify(inOneCall, id, .softDelete)
                }
                var ann = ViewChanges(account: "ann", rule: .group(field: "team"), groups: ["g0"], roles: [])

                // A cold walk: every page is the call's, and the general path's.
                let cold = try await Self.walk(inOneCall, general, ann, after: nil, expectCalls: true)
                // One batch, one time: in id order, then the deletion.
                #expect(cold.map(\.id) == ["r0", "r12", "r15", "r6", "r9", "s0", "s1", "s2", "s3", "r3"])
                let checkpoint = try #require(cold.last)

                // Records that leave g0 after the checkpoint: the pages from it owe their exits.
                for id in ["r6", "r9"] {
                    try await Self.modify(inOneCall, id, .update(["team": .string("g1")]))
                }
                try await Self.modify(inOneCall, "r12", .update(["n": .int(99)]))
                let exits = try await Self.walk(inOneCall, general, ann, after: checkpoint, expectCalls: false)
                #expect(exits.map(\.id) == ["r6", "r9", "r12"])
                #expect(exits.map(\.system.deleted) == [true, true, false])
                // Unwrapped here: as an argument of type `Record?`, `#require` would check nothing.
                let lastExit = try #require(exits.last)

                // From after the exits, nothing is owed again: the call answers.
                let quiet = try await Self.walk(inOneCall, general, ann, after: lastExit, expectCalls: true)
                #expect(quiet.isEmpty)
                // A cold walk now: its full pages that end before the first exit are the call's,
                // the general path answers from there.
                var answered = 0
                let again = try await Self.walk(inOneCall, general, ann, after: nil, expectCalls: nil, answered: &answered)
                #expect(again.map(\.id) == ["r0", "r15", "s0", "s1", "s2", "s3", "r3", "r6", "r9", "r12"])
                #expect(answered == 4, "three full pages before the first exit, and the empty one after the last")

                // Ann joins g1: the pages from before the join owe its records.
                #expect(try await inOneCall.changeLabels(name: "ann", kind: .group, add: ["g1"], remove: []))
                let stale = try await Self.walk(inOneCall, general, ann, after: lastExit, expectCalls: false)
                #expect(stale.isEmpty, "asked under labels that no longer hold: \(stale.map(\.id))")
                ann.groups = ["g0", "g1"]
                let joined = try await Self.walk(inOneCall, general, ann, after: lastExit, expectCalls: false)
                #expect(Set(joined.map(\.id)) == ["r1", "r4", "r6", "r7", "r9", "r10", "r13", "r16"])
                // A cold walk of both groups (an equality no more, the same pages); after the
                // first page the exits from g0 and the join make the call leave pages to the
                // general path (which sends the walk's g1 records again at the join).
                let both = try await Self.walk(inOneCall, general, ann, after: nil, expectCalls: nil)
                #expect(Set(both.map(\.id)).count == 16)
                // A group whose name a number's text reads as: the number is not in it.
                #expect(try await inOneCall.changeLabels(name: "ann", kind: .group, add: ["0"], remove: []))
                ann.groups = ["g0", "g1", "0"]
                let numbered = try await Self.walk(inOneCall, general, ann, after: nil, expectCalls: nil)
                #expect(numbered.contains { $0.id == "zero" } && !numbered.contains { $0.id == "num" })
            }
        }
    }

    // MARK: - Helpers

    private static func walk(
        _ inOneCall: PostgresStorage, _ general: PostgresStorage, _ changes: ViewChanges, after start: Record?, expectCalls: Bool?
    ) async throws -> [Record] {
        var answered = 0
        return try await walk(inOneCall, general, changes, after: start, expectCalls: expectCalls, answered: &answered)
    }

    private static func modify(_ storage: PostgresStorage, _ id: String, _ change: RecordChange) async throws {
        var write = RecordWrite(table: "items", action: .modify(id: id, change: change, expected: .any), scope: .shared)
        // As the route writes under `group:team`: an update that takes a record out of its
        // group records its exit.
        write.access.readGroup = GroupFilter(field: "team", groups: ["g0", "g1", "g2"])
        #expect(try await storage.write([write], atomic: false).allSatisfy { $0.succeeded })
    }

    /// A walk of `changes`'s view in pages of 2 from `start` (nil: the start), each page read by
    /// both storages and compared; with `expectCalls` true each page must be the call's (it
    /// answers), with false none may be. The records the walk met, in order.
    private static func walk(
        _ inOneCall: PostgresStorage, _ general: PostgresStorage, _ changes: ViewChanges, after start: Record?, expectCalls: Bool?,
        answered: inout Int
    ) async throws -> [Record] {
        let view = ReadView(scope: .shared, group: GroupFilter(field: "team", groups: changes.groups))
        var position = start.map { ($0.system.updatedAt?.iso8601 ?? "", $0.id) }
        var met: [Record] = []
        for _ in 0..<50 {
            var query = RecordQuery(orderBy: PullWalk.order, top: 2, includeDeleted: true)
            if let (updatedAt, id) = position {
                query.filter = try ODataParser.parseFilter(StorageReader.filterText(after: updatedAt, id, .tsyncs))
            }
            query = view.narrowing(query)
            let walk = try #require(PullPage.walk(table: "items", query, scope: .shared, changes: changes))
            let called = try await PullPage.read(inOneCall.database, walk)
            #expect(
                expectCalls.map { (called != nil) == $0 } ?? true,
                "the call answers \(position.map { "after \($0.1)" } ?? "from the start")")
            let page = try #require(try await inOneCall.query(table: "items", query, scope: .shared, changes: changes))
            let generalPage = try #require(try await general.query(table: "items", query, scope: .shared, changes: changes))
            let records = try page.records()
            #expect(records == (try generalPage.records()), "after \(position.map(\.1) ?? "the start")")
            if let called {
                answered += 1
                #expect(try RecordPage(written: called.written, totalCount: nil).records() == records)
            }
            met += records
            guard records.count == 2, let last = records.last else { break }
            position = (last.system.updatedAt?.iso8601 ?? "", last.id)
        }
        return met
    }
}
