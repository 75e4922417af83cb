import Foundation
import Testing
import TSyncModel
import TSyncQuery

@testable import TSyncServer

/// Concurrent single writes to one table commit together (docs/DESIGN.md §10), so that
/// `updatedAt` stays at the clock however many come: one step of a millisecond per transaction
/// put it 59 s ahead at 3,900 writes a second.
@Suite struct GroupCommitTests {
    /// A clock that stands still: every transaction then steps its table's time by a millisecond,
    /// and only grouping keeps the burst's times near it.
    @Test func aBurstOfSingleWritesKeepsUpdatedAtAtTheClock() async throws {
        let database = try TemporaryDatabase()
        defer { database.cleanUp() }
        let now = Timestamp(millisecondsSinceEpoch: 1_800_000_000_000)
        let storage = try database.open(clock: { now })
        let count = 3000
        let huge = String(repeating: "x", count: SQLiteStorage.maximumValueBytes + 1)
        let results = await withTaskGroup(of: (Int, Result<[WriteOutcome], any Error>).self) { group in
            for index in 0..<count {
                group.addTask {
                    // Every hundredth write stores more than SQLite takes, and throws: the others
                    // of its group commit all the same.
                    let fields: [String: JSONValue] = index % 100 == 50 ? ["s": .string(huge)] : ["n": .int(Int64(index))]
                    let write = RecordWrite(table: "burst", action: .insert(Record(id: "r\(index)", fields: fields)), scope: .shared)
                    do {
                        return (index, .success(try await storage.write([write], atomic: false)))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            return await group.reduce(into: [Int: Result<[WriteOutcome], any Error>]()) { $0[$1.0] = $1.1 }
        }
        var stamps: [String: Timestamp] = [:]
        for (index, result) in results {
            switch result {
            case .success(let outcomes):
                #expect(index % 100 != 50, "r\(index) stored what SQLite refuses")
                guard case .inserted(let record)? = outcomes.first, let stamp = record.system.updatedAt else {
                    Issue.record("r\(index): \(outcomes)")
                    continue
                }
                stamps[record.id] = stamp
            case .failure:
                #expect(index % 100 == 50, "r\(index) failed with its group")
            }
        }
        #expect(stamps.count == count - count / 100)
        let newest = try #require(stamps.values.max())
        #expect(
            newest.millisecondsSinceEpoch - now.millisecondsSinceEpoch < 1000,
            "updatedAt ran \(newest.millisecondsSinceEpoch - now.millisecondsSinceEpoch) ms ahead")
        // What was answered is what is stored, and reading by (updatedAt, id) gives every record once.
        let page = try await storage.query(
            table: "burst", RecordQuery(orderBy: [SortKey(field: "updatedAt"), SortKey(field: "id")], top: count), scope: .shared)
        let read = try page.records()
        #expect(read.count == stamps.count)
        #expect(read.allSatisfy { stamps[$0.id] == $0.system.updatedAt })
        #expect(Set(read.map(\.id)).count == read.count)
        // The table's clock is its newest time: the next write comes after every one of them.
        guard case .inserted(let next) = try await storage.insert(table: "burst", record: Record(id: "next", fields: [:]), scope: .shared)
        else { Issue.record("the next insert failed"); return }
        #expect(try #require(next.system.updatedAt) > newest)
    }

    /// The same burst on each backend, with a clock that stands still: every transaction that
    /// writes the table steps its time by a millisecond past the clock, so how far the newest time
    /// is ahead counts the burst's transactions. Without groups (PostgreSQL's writers each one
    /// transaction, four at a time) 3,000 writes stepped it 2,242 ms in one run; grouped, a few.
    /// Every record keeps a (updatedAt, id) of its own, and reads back as answered.
    @Test(arguments: TestBackend.available) func aBurstStepsTheTableTimeOncePerGroup(backend: TestBackend) async throws {
        let now = Timestamp(millisecondsSinceEpoch: 1_800_000_000_000)
        try await backend.withFreshStorage(clock: { now }) { storage in
            let count = 3000
            let stamps = try await withThrowingTaskGroup(of: (String, Timestamp?).self) { group in
                for index in 0..<count {
                    group.addTask {
                        let write = RecordWrite(
                            table: "burst", action: .insert(Record(id: "r\(index)", fields: ["n": .int(Int64(index))])), scope: .shared)
                        let outcome = try await storage.write([write], atomic: false)
                        guard case .inserted(let record)? = outcome.first else { return ("r\(index)", nil) }
                        return (record.id, record.system.updatedAt)
                    }
                }
                return try await group.reduce(into: [String: Timestamp]()) { $0[$1.0] = $1.1 }
            }
            #expect(stamps.count == count, "every write answered inserted")
            let newest = try #require(stamps.values.max())
            let ahead = newest.millisecondsSinceEpoch - now.millisecondsSinceEpoch
            #expect(ahead < 100, "updatedAt ran \(ahead) ms ahead of a clock that stood still: a step per write, not per group")
            let page = try await storage.query(
                table: "burst", RecordQuery(orderBy: [SortKey(field: "updatedAt"), SortKey(field: "id")], top: count), scope: .shared)
            let read = try page.records()
            #expect(read.count == count)
            #expect(read.allSatisfy { stamps[$0.id] == $0.system.updatedAt }, "what was answered is what is stored")
            #expect(Set(read.map { "\($0.system.updatedAt?.iso8601 ?? "") \($0.id)" }).count == count, "(updatedAt, id) unique")
            if let postgres = storage as? PostgresStorage {
                #expect(postgres.groups.count == 0, "a table's group goes with its last write")
            }
        }
    }

    /// Requests grouped together keep their own answers: an atomic batch with a failed write
    /// rolls back alone, and a conflict answers 409 to its own request only.
    @Test(arguments: TestBackend.available) func groupedRequestsKeepTheirOwnAnswers(backend: TestBackend) async throws {
        try await backend.withFreshStorage { storage in try await Self.groupedRequestsKeepTheirOwnAnswers(storage) }
    }

    private static func groupedRequestsKeepTheirOwnAnswers(_ storage: any ServerStorage) async throws {
        _ = try await storage.insert(table: "t", record: Record(id: "taken", fields: [:]), scope: .shared)
        let answers = try await withThrowingTaskGroup(of: (Int, [WriteOutcome]).self) { group in
            for index in 0..<200 {
                group.addTask {
                    let fresh = RecordWrite(table: "t", action: .insert(Record(id: "a\(index)", fields: [:])), scope: .shared)
                    let taken = RecordWrite(table: "t", action: .insert(Record(id: "taken", fields: [:])), scope: .shared)
                    switch index % 4 {
                    case 0: return (index, try await storage.write([fresh], atomic: false))
                    case 1: return (index, try await storage.write([fresh, taken], atomic: true))
                    case 2: return (index, try await storage.write([fresh, taken], atomic: false))
                    default: return (index, try await storage.write([taken], atomic: false))
                    }
                }
            }
            return try await group.reduce(into: [Int: [WriteOutcome]]()) { $0[$1.0] = $1.1 }
        }
        for (index, outcomes) in answers {
            switch index % 4 {
            case 0: #expect(outcomes.first?.succeeded == true)
            case 1: #expect(outcomes.allSatisfy { !$0.succeeded }, "atomic a\(index) rolled back")
            case 2: #expect(outcomes.map(\.succeeded) == [true, false])
            default:
                // A single write of a taken id, in a group with others that succeed: its own 409.
                guard case .exists(let existing)? = outcomes.first, outcomes.count == 1 else {
                    Issue.record("taken \(index): \(outcomes)")
                    continue
                }
                #expect(existing?.id == "taken")
            }
            let stored = try await storage.record(table: "t", id: "a\(index)", scope: .shared)
            #expect((stored != nil) == (index % 4 == 0 || index % 4 == 2), "a\(index)")
        }
    }
}
