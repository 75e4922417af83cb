import GRDB
import TSyncModel
import TSyncQuery
import Testing

@testable import TSyncServer

/// On SQLite too, a full page of the pull walk makes the server read the walk's next page at once
/// (`PullReadAhead` in `SQLiteStorage.quickQuery`): the walk's next request takes it, as long as
/// nothing committed since the read began (`PRAGMA data_version`), so it gets the page a read
/// would give now.
@Suite struct SQLiteReadAheadTests {
    static let client = "address 127.0.0.1"

    @Test func theWalksNextRequestTakesThePageReadAheadWhichIsTheGeneralPage() async throws {
        let database = try TemporaryDatabase()
        defer { database.cleanUp() }
        let storage = try database.open()
        for index in 0..<5 {
            _ = try await storage.insert(table: "t", record: Record(id: "r\(index)", fields: ["n": .int(Int64(index))]), scope: .shared)
        }

        let first = RecordQuery(orderBy: PullWalk.order, top: 2, includeDeleted: true)
        let page = try #require(try await storage.quickQuery(table: "t", first, scope: .shared, client: Self.client))
        #expect(storage.readAhead.pagesTaken.load(ordering: .relaxed) == 0)
        let next = try Self.query(after: page, like: first)
        let taken = try #require(try await storage.quickQuery(table: "t", next, scope: .shared, client: Self.client))
        #expect(storage.readAhead.pagesTaken.load(ordering: .relaxed) == 1, "the walk's next request took the page read ahead")
        let general = try await storage.query(table: "t", next, scope: .shared)
        #expect(try TableRoutes.body(taken, next).bytes == TableRoutes.body(general, next).bytes)
        #expect(taken.deletedHorizon == general.deletedHorizon)

        // Another walk (another page size) from the same place reads for itself.
        var other = next
        other.top = 3
        _ = try await storage.quickQuery(table: "t", other, scope: .shared, client: Self.client)
        #expect(storage.readAhead.pagesTaken.load(ordering: .relaxed) == 1)
        // The walk's last page, read ahead of the full page before it, is short: nothing is read
        // ahead of it, and the page after reads for itself.
        let short = try #require(
            try await storage.quickQuery(table: "t", try Self.query(after: taken, like: next), scope: .shared, client: Self.client))
        #expect(short.count == 1)
        #expect(storage.readAhead.pagesTaken.load(ordering: .relaxed) == 2)
        let past = try await storage.quickQuery(table: "t", try Self.query(after: short, like: next), scope: .shared, client: Self.client)
        #expect(past?.count == 0)
        #expect(storage.readAhead.pagesTaken.load(ordering: .relaxed) == 2)
    }

    /// A commit after a page was read ahead, by the server or by any other process on the file,
    /// makes its request read again: it gets the commit's records, not the page as it was.
    @Test func aCommitSinceTheReadAheadMakesTheRequestReadAgain() async throws {
        let database = try TemporaryDatabase()
        defer { database.cleanUp() }
        let storage = try database.open()
        for index in 0..<4 { _ = try await storage.insert(table: "t", record: Record(id: "r\(index)", fields: [:]), scope: .shared) }
        let first = RecordQuery(orderBy: PullWalk.order, top: 2, includeDeleted: true)
        var page = try #require(try await storage.quickQuery(table: "t", first, scope: .shared, client: Self.client))
        var next = try Self.query(after: page, like: first)
        // The page read ahead holds r2 and r3; r2 changes, so it comes later in the walk.
        try await Task.sleep(for: .milliseconds(20))
        _ = try await storage.modify(table: "t", id: "r2", change: .update(["n": 1]), expectedVersion: .any, scope: .shared)
        page = try #require(try await storage.quickQuery(table: "t", next, scope: .shared, client: Self.client))
        #expect(storage.readAhead.pagesTaken.load(ordering: .relaxed) == 0)
        #expect(try page.records().map(\.id) == ["r3", "r2"], "the page as it is now")

        // Another process's commit (the sqlite3 shell, say) counts too.
        _ = try await storage.insert(table: "t", record: Record(id: "r4", fields: [:]), scope: .shared)
        page = try #require(try await storage.quickQuery(table: "t", first, scope: .shared, client: Self.client))
        next = try Self.query(after: page, like: first)
        try await Task.sleep(for: .milliseconds(20))
        let other = try DatabaseQueue(path: database.path)
        try await other.write { db in try db.execute(sql: #"DELETE FROM "\#(SQLiteSchema.recordTableName("t"))" WHERE id = 'r3'"#) }
        try other.close()
        page = try #require(try await storage.quickQuery(table: "t", next, scope: .shared, client: Self.client))
        #expect(storage.readAhead.pagesTaken.load(ordering: .relaxed) == 0)
        #expect(try page.records().map(\.id) == ["r2", "r4"])
    }

    /// Walks of small pages with inserts, updates, deletions and restorations between their
    /// requests (so that pages read ahead before a write are taken after it): a copy that applies
    /// each page as a client does ends equal to the table, every record at its last version.
    @Test func writesBetweenAReadAheadAndItsRequestLoseNothing() async throws {
        let database = try TemporaryDatabase()
        defer { database.cleanUp() }
        let storage = try database.open()
        var generator = ShareQueueTests.Seeded(state: 40)
        var ids: [String] = []
        func insert() async throws {
            let id = "r\(ids.count)-\(UInt32.random(in: 0...999, using: &generator))"
            ids.append(id)
            _ = try await storage.insert(table: "t", record: Record(id: id, fields: ["n": 0]), scope: .shared)
        }
        for _ in 0..<40 { try await insert() }
        var copy: [String: String] = [:]  // id → version
        // Reads the walk's pages from `query` until a short one, as a pull does, with writes
        // after each full page when `writing`; the query of the page after the last record.
        func pull(from start: RecordQuery, writing: Bool, walkNumber: Int) async throws -> RecordQuery {
            var query = start
            while true {
                let page = try #require(try await storage.quickQuery(table: "t", query, scope: .shared, client: Self.client))
                for record in try page.records() { copy[record.id] = record.system.version }
                if page.count > 0 { query = try Self.query(after: page, like: query) }
                guard page.count == query.top else { return query }
                guard writing else { continue }
                // Let the read ahead begin before the writes, most of the time.
                if Bool.random(using: &generator) { try await Task.sleep(for: .milliseconds(2)) }
                for _ in 0..<Int.random(in: 0...3, using: &generator) {
                    let id = ids[Int.random(in: 0..<ids.count, using: &generator)]
                    switch Int.random(in: 0..<4, using: &generator) {
                    case 0: try await insert()
                    case 1: _ = try await storage.modify(table: "t", id: id, change: .softDelete, expectedVersion: .any, scope: .shared)
                    case 2: _ = try await storage.modify(table: "t", id: id, change: .undelete, expectedVersion: .any, scope: .shared)
                    default:
                        _ = try await storage.modify(
                            table: "t", id: id, change: .update(["n": .int(Int64(walkNumber))]), expectedVersion: .any, scope: .shared)
                    }
                }
            }
        }
        for walkNumber in 0..<6 {
            let start = RecordQuery(orderBy: PullWalk.order, top: 3 + walkNumber % 3, includeDeleted: true)
            _ = try await pull(from: start, writing: true, walkNumber: walkNumber)
            let table = try await storage.query(table: "t", RecordQuery(includeDeleted: true), scope: .shared).records()
            let versions = Dictionary(uniqueKeysWithValues: table.map { ($0.id, $0.system.version) })
            #expect(copy == versions, "walk \(walkNumber): the copy is the table")
        }
        #expect(storage.readAhead.pagesTaken.load(ordering: .relaxed) > 5, "pages read ahead were taken")
    }

    /// The query of the walk's page after `page`, as tsync's client asks it.
    static func query(after page: RecordPage, like query: RecordQuery) throws -> RecordQuery {
        let end = try #require(page.end)
        var next = query
        next.filter = .pullAfter(updatedAt: try #require(Timestamp(iso8601: end.updatedAt)), id: end.id)
        return next
    }
}
