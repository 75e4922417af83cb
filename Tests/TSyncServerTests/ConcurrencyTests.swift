import Testing
import TSyncModel
@testable import TSyncServer

/// docs/DESIGN.md §2.2: concurrent writers, one winner per version, and `updatedAt` that never goes back (nor, on SQLite,
/// ties across transactions, though requests committed together share one: PostgreSQL's parallel writers may share a
/// millisecond, §10, PostgresParallelWritesTests).
@Suite struct ConcurrencyTests {
    @Test func twentyConcurrentPatchesWithOneIfMatchHaveOneWinner() async throws {
        try await withTestServer { http in
            let item = try await http.insert("todo", ["id": "race", "n": 0])
            let ifMatch = "\"\(item["version"]?.stringValue ?? "")\""
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for writer in 1...20 {
                    group.addTask {
                        try await http.patch("/tables/todo/race", ["n": .int(Int64(writer))], headers: ["If-Match": ifMatch]).status
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 200 }.count == 1)
            #expect(statuses.filter { $0 == 412 }.count == 19)
            let final = try await http.get("/tables/todo/race")
            #expect(final.object["n"] != 0)
        }
    }

    @Test func concurrentInsertsGetStrictlyIncreasingUpdatedAt() async throws {
        try await withTestServer { http in
            // 8 writers at a time, as many as the test client's connection pool holds: 80 requests
            // started at once would wait in its queue, and on a loaded machine time out there.
            let stamps = try await withThrowingTaskGroup(of: String.self) { group in
                var stamps: [String] = []
                for index in 0..<80 {
                    if index >= 8, let stamp = try await group.next() { stamps.append(stamp) }
                    group.addTask {
                        try await http.insert("burst", ["id": .string("i\(index)")])["updatedAt"]?.stringValue ?? ""
                    }
                }
                return try await group.reduce(into: stamps) { $0.append($1) }
            }
            #expect(stamps.allSatisfy { Timestamp(iso8601: $0)?.iso8601 == $0 })
            // Reading back by updatedAt gives every record once.
            let page = try await http.get("/tables/burst?$orderby=updatedAt&$top=100")
            let read = page.array.compactMap { $0.objectValue?["updatedAt"]?.stringValue }
            #expect(read == stamps.sorted())
            // Requests that commit together (SQLite's group commit, §10) share their time, as the
            // writes of one batch do; (updatedAt, id) still tells every record apart.
            let pairs = page.array.compactMap { item in
                item.objectValue.map { "\($0["updatedAt"]?.stringValue ?? "") \($0["id"]?.stringValue ?? "")" }
            }
            #expect(Set(pairs).count == 80)
        }
    }

    @Test func updatedAtAdvancesWhenTheClockStallsOrStepsBack() async throws {
        let database = try TemporaryDatabase()
        defer { database.cleanUp() }
        let clock = TestClock()
        let storage = try database.open(clock: clock.now)
        var last: Timestamp?
        for step in 0..<10 {
            if step == 5 { clock.advance(by: .milliseconds(-100_000_000_000)) }  // back to 1_700_000_000_000
            guard
                case .inserted(let record) = try await storage.insert(
                    table: "t", record: Record(id: "r\(step)", fields: [:]), scope: .shared)
            else { Issue.record("insert \(step) failed"); return }
            let stamp = try #require(record.system.updatedAt)
            if let last { #expect(stamp.millisecondsSinceEpoch == last.millisecondsSinceEpoch + 1) }
            last = stamp
        }
        // Other tables keep their own clocks.
        guard case .inserted(let other) = try await storage.insert(table: "u", record: Record(id: "x", fields: [:]), scope: .shared)
        else { Issue.record("insert failed"); return }
        #expect(other.system.updatedAt == Timestamp(millisecondsSinceEpoch: 1_700_000_000_000))
        // A second connection to the same file (another instance) continues the same clock.
        let second = try database.open(clock: { Timestamp(millisecondsSinceEpoch: 1_600_000_000_000) })
        guard
            case .modified(let modified) = try await second.modify(
                table: "t", id: "r0", change: .update(["a": 1]), expectedVersion: .any, scope: .shared)
        else { Issue.record("update failed"); return }
        #expect(modified.system.updatedAt == Timestamp(millisecondsSinceEpoch: (last?.millisecondsSinceEpoch ?? 0) + 1))
    }

    @Test func nextUpdatedAtRule() {
        let now = Timestamp(millisecondsSinceEpoch: 1000)
        #expect(WriteRules.nextUpdatedAt(now: now, lastAssigned: nil) == now)
        #expect(WriteRules.nextUpdatedAt(now: now, lastAssigned: Timestamp(millisecondsSinceEpoch: 999)) == now)
        #expect(WriteRules.nextUpdatedAt(now: now, lastAssigned: now) == Timestamp(millisecondsSinceEpoch: 1001))
        #expect(
            WriteRules.nextUpdatedAt(now: now, lastAssigned: Timestamp(millisecondsSinceEpoch: 5000))
                == Timestamp(millisecondsSinceEpoch: 5001))
    }
}
