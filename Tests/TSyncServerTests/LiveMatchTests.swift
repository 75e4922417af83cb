import Foundation
import NIOCore
import Testing
import TSyncModel
import TSyncQuery

@testable import TSyncServer

/// The live route decides from the committed records which held reads a commit may answer
/// (docs/DESIGN.md §8.1): a write runs no query for the reads it cannot answer, however many.
@Suite struct LiveMatchTests {
    static func held(_ n: Int) -> String {
        let filter = "updatedAt gt datetimeoffset'2000-01-01T00:00:00.000Z' and (n eq \(n) or n eq 1000)"
        return "/tables/todo?$filter=" + (filter.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
    }

    /// Waits (bounded) until `count` reads are parked on `todo` (past their first query).
    static func waitUntilParked(_ feed: ChangeFeed, _ count: Int) async throws {
        try await eventually(timeout: .seconds(10)) { feed.parked("todo") == count }
        #expect(feed.parked("todo") == count)
    }

    @Test func aWriteRunsNoQueryForTheHeldReadsItCannotAnswer() async throws {
        try await withTestServer { http in
            let feed = try #require(http.storage.changes)
            // Under the test client's connections per host (LiveFanOutTests holds 200 on a real server).
            let count = 6
            let reads = (0..<count).map { n in Task { try await http.get(Self.held(n), headers: ["Prefer": "wait=20"]) } }
            try await Self.waitUntilParked(feed, count)
            let before = feed.queries

            // One read of the 6 can take this record: one query, not 6.
            #expect(try await http.post("/tables/todo", ["id": "three", "n": 3]).status == 201)
            #expect(try await reads[3].value.ids == ["three"])
            try await Self.waitUntilParked(feed, count - 1)
            let after = feed.queries
            #expect(after - before <= 2, "queries after a write one held read of \(count) can take: \(after - before)")

            // Every other read was held all along, and takes the next record it matches.
            #expect(try await http.post("/tables/todo", ["id": "all", "n": 1000]).status == 201)
            for (n, read) in reads.enumerated() where n != 3 {
                #expect(try await read.value.ids == ["all"], "read \(n)")
            }
        }
    }

    /// A record the database selects is never one `mayHold` rules out: the generated filters of
    /// `FilterOracleTests` over its records, on each backend. And it rules out most of the rest,
    /// or it would save no query.
    @Test(arguments: TestBackend.available) func theMatchNeverRulesOutWhatTheDatabaseSelects(backend: TestBackend) async throws {
        let records = RecordGenerator.records(seed: 0x11FE, count: 40)
        let filters = (0..<UInt64(300)).map { FilterTextGenerator.filter(seed: 0x11FE_0000 &+ $0) }
        let (stored, selected) = try await FilterOracleTests.run(filters, records: records, on: backend)
        var missed: [String] = []
        var ruledOut = 0
        var unselected = 0
        for (index, text) in filters.enumerated() {
            let filter = try ODataParser.parseFilter(text)
            for record in stored {
                let holds = filter.mayHold(for: record)
                if selected[index].contains(record.id) {
                    if !holds { missed.append("\(text) on \(record.id): \(JSONSerializer.string(.object(record.fields)))") }
                } else {
                    unselected += 1
                    if !holds { ruledOut += 1 }
                }
            }
        }
        #expect(
            missed.isEmpty,
            "\(missed.count) records selected by \(backend) but ruled out, e.g.:\n\(missed.prefix(5).joined(separator: "\n"))")
        #expect(ruledOut > unselected / 10, "ruled out \(ruledOut) of \(unselected) records not selected")
    }

    @Test func aReadIsNotWantedByAnotherUsersOrADeletedRecordItDoesNotTake() {
        let record = Record(id: "a", fields: ["n": .int(1)], system: SystemProperties(deleted: true))
        let interest = LiveInterest(scope: .owner("bob"), includeDeleted: false, filter: nil)
        #expect(!interest.mayWant(LiveChange(table: "t", record: record, owner: "bob")))
        var live = record
        live.system.deleted = false
        #expect(interest.mayWant(LiveChange(table: "t", record: live, owner: "bob")))
        #expect(!interest.mayWant(LiveChange(table: "t", record: live, owner: "alice")))
        #expect(interest.mayWant(LiveChange(table: "t", record: live, owner: nil)), "an owner not known may be bob")
    }

    /// On PostgreSQL a page stops below a write in flight (docs/DESIGN.md §10): a waiter that
    /// parked after the write started wakes when it ends, whatever it wrote; one that parked
    /// before it started wakes only for what it may take.
    @Test func aWaiterParkedWhileAWriteWasInFlightWakesWhenItEnds() async throws {
        let feed = ChangeFeed()
        let interest = LiveInterest(scope: .shared, includeDeleted: false, filter: try ODataParser.parseFilter("n eq 1"))
        let question = LiveQuestion(scope: .shared, parameters: [])
        #expect(feed.admit(limit: 10, table: "t"))
        defer { feed.release(table: "t") }
        let earlier = feed.ticket()
        let woken = Task {
            await feed.wait(
                table: "t", question, interest, after: feed.generation("t"), until: .now + .seconds(20), channel: nil)
        }
        try await eventually(timeout: .seconds(2), every: .milliseconds(5)) { feed.parked("t") > 0 }
        let later = feed.ticket()
        // Started after the waiter parked, wrote nothing it takes: no wake.
        feed.committed(["t"], changes: [LiveChange(table: "t", record: Record(id: "x", fields: ["n": .int(2)]), owner: nil)], since: later)
        #expect(feed.parked("t") == 1)
        // Started before: its floor may have held the waiter's page back.
        feed.committed(["t"], changes: [], since: earlier)
        _ = await woken.value
        #expect(feed.parked("t") == 0)
    }

    /// One commit to two tables is matched table by table: the same question on both is woken
    /// on the table whose record it may take, not on the other; there, only a waiter that parked
    /// after the write started wakes (its page may have stopped below the write), though it asks
    /// what the early ones ask, whose answer (no) is worked out once: more early waiters than one
    /// make it likely that the late one is matched after that answer is known.
    @Test func aCommitToTwoTablesWakesEachTablesWaitersByItsOwnRecords() async throws {
        let feed = ChangeFeed()
        let interest = LiveInterest(scope: .shared, includeDeleted: false, filter: try ODataParser.parseFilter("n eq 1"))
        let question = LiveQuestion(scope: .shared, parameters: ["$filter", "n eq 1"])
        for table in ["a", "b"] { #expect(feed.admit(limit: 10, table: table)) }
        defer { for table in ["a", "b"] { feed.release(table: table) } }
        func park(_ table: String, _ count: Int) async throws -> [Task<Void, Never>] {
            let before = feed.parked(table)
            let generation = feed.generation(table)
            let tasks = (0..<count).map { _ in
                Task { _ = await feed.wait(table: table, question, interest, after: generation, until: .now + .seconds(20), channel: nil) }
            }
            try await eventually(timeout: .seconds(5), every: .milliseconds(5)) { feed.parked(table) == before + count }
            return tasks
        }
        let onA = try await park("a", 3)
        let onB = try await park("b", 15)
        let started = feed.ticket()
        let late = try await park("b", 1)
        feed.committed(
            ["a", "b"],
            changes: [
                LiveChange(table: "a", record: Record(id: "x", fields: ["n": .int(1)]), owner: nil),
                LiveChange(table: "b", record: Record(id: "y", fields: ["n": .int(2)]), owner: nil),
            ], since: started)
        for task in onA + late { await task.value }
        #expect(feed.parked("a") == 0)
        #expect(feed.parked("b") == 15, "b's record is not one its early waiters take")
        feed.committed(["b"])
        for task in onB { await task.value }
        #expect(feed.parked("b") == 0)
    }

    /// The answers kept are bounded in all: past the bound, other tables' answers make room.
    @Test func theAnswersKeptAreBoundedInAll() async throws {
        let feed = ChangeFeed(maximumKeptBytesInAll: 100_000)
        let page = PageBody(bytes: ByteBuffer(repeating: UInt8(ascii: " "), count: 10_000), count: 0)
        for table in 0..<40 {
            #expect(feed.admit(limit: 100, table: "t\(table)"))
            for question in 0..<20 {
                _ = try await feed.answer(
                    table: "t\(table)", LiveQuestion(scope: .shared, parameters: ["\(question)"]), generation: feed.generation("t\(table)")
                ) { page }
            }
        }
        #expect(feed.footprint.keptBytes <= 100_000, "kept \(feed.footprint.keptBytes) bytes")
        #expect(feed.footprint.keptBytes >= 50_000, "kept \(feed.footprint.keptBytes) bytes: the newest answers are kept")
        for table in 0..<40 { feed.release(table: "t\(table)") }
        #expect(feed.footprint.tables == 0)
        #expect(feed.footprint.keptBytes == 0)
    }

    /// Held reads of names that no table has leave nothing in the feed once they end.
    @Test func heldReadsOfTablesThatDoNotExistLeaveNothingBehind() async throws {
        let feed = ChangeFeed()
        let live = LiveWait(feed: feed, limit: 10_000)
        let interest = LiveInterest(scope: .shared, includeDeleted: false, filter: nil)
        let empty = PageBody(bytes: ByteBuffer(string: "[]"), count: 0)
        try await withThrowingTaskGroup(of: Int.self) { group in
            for n in 0..<2000 {
                group.addTask {
                    let (page, granted) = try await live.page(
                        table: "none\(n)", LiveQuestion(scope: .shared, parameters: []), interest, seconds: 1, channel: nil
                    ) { empty }
                    return page.count + granted
                }
            }
            let granted = try await group.reduce(0, +)
            #expect(granted == 2000, "every read held 1 s and answered empty")
        }
        #expect(feed.footprint.tables == 0, "tables in the feed after the reads ended: \(feed.footprint.tables)")
        #expect(feed.footprint.keptBytes == 0)
        #expect(feed.waiting == 0)
    }
}
