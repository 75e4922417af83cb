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

    /// Requests grouped together keep their own answers: an atomic batch with a failed write
    /// rolls back alone, and a conflict answers 409 to its own request only.
    @Test func groupedRequestsKeepTheirOwnAnswers() async throws {
        let database = try TemporaryDatabase()
        defer { database.cleanUp() }
        let storage = try database.open()
        _ = try await storage.insert(table: "t", record: Record(id: "taken", fields: [:]), scope: .shared)
        let answers = try await withThrowingTaskGroup(of: (Int, [WriteOutcome]).self) { group in
            for index in 0..<200 {
                group.addTask {
                    let fresh = RecordWrite(table: "t", action: .insert(Record(id: "a\(index)", fields: [:])), scope: .shared)
                    let taken = RecordWrite(table: "t", action: .insert(Record(id: "taken", fields: [:])), scope: .shared)
                    switch index % 3 {
                    case 0: return (index, try await storage.write([fresh], atomic: false))
                    case 1: return (index, try await storage.write([fresh, taken], atomic: true))
                    default: return (index, try await storage.write([fresh, taken], atomic: false))
                    }
                }
            }
            return try await group.reduce(into: [Int: [WriteOutcome]]()) { $0[$1.0] = $1.1 }
        }
        for (index, outcomes) in answers {
            switch index % 3 {
            case 0: #expect(outcomes.first?.succeeded == true)
            case 1: #expect(outcomes.allSatisfy { !$0.succeeded }, "atomic a\(index) rolled back")
            default: #expect(outcomes.map(\.succeeded) == [true, false])
            }
            let stored = try await storage.record(table: "t", id: "a\(index)", scope: .shared)
            #expect((stored != nil) == (index % 3 != 1), "a\(index)")
        }
    }
}
