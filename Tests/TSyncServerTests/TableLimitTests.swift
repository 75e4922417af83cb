import GRDB
import Synchronization
import Testing
import TSyncModel

@testable import TSyncServer

/// One account made 6,000 tables in two minutes. An account may create
/// `--max-tables` tables (docs/DESIGN.md §10.1); past them its writes that would create one are
/// refused with 403 naming the limit, and nothing else changes, for it or for other accounts.
@Suite struct TableLimitTests {
    static let alice = ("alice", "correct horse battery staple")
    static let bob = ("bob", "another long passphrase")

    @Test func anAccountOverItsTableLimitIsRefusedAndOthersAreNot() async throws {
        var configuration = ServerConfiguration()
        configuration.maximumTablesPerAccount = 3
        try await withTestServer(configuration, accounts: [Self.alice, Self.bob]) { http in
            let alice = try await http.login(Self.alice.0, Self.alice.1)
            let bob = try await http.login(Self.bob.0, Self.bob.1)
            for table in ["t1", "t2", "t3"] {
                #expect(try await http.post("/tables/\(table)", ["id": "a"], token: alice).status == 201, "\(http.backend)")
            }
            let refused = try await http.post("/tables/t4", ["id": "a"], token: alice)
            #expect(refused.status == 403, "\(http.backend): \(refused.status) \(refused.text)")
            #expect(refused.error?.contains("has created 3 tables") == true, "\(http.backend): \(refused.text)")
            #expect(refused.error?.contains("--max-tables") == true)
            // In a batch, the refused write alone; the others go on.
            let batch = try await http.post(
                "/tables/$batch",
                [
                    "operations": [
                        ["method": "POST", "table": "t5", "item": ["id": "b"]],
                        ["method": "POST", "table": "t1", "item": ["id": "b"]],
                    ]
                ], token: alice)
            guard case .array(let results)? = batch.object["results"] else {
                Issue.record("\(http.backend): \(batch.text)")
                return
            }
            #expect(results.map { $0.objectValue?["status"] } == [403, 201], "\(http.backend): \(batch.text)")
            // Her tables stay writable; another account creates tables and writes to hers.
            #expect(try await http.patch("/tables/t2/a", ["n": 1], token: alice).status == 200)
            #expect(try await http.post("/tables/t4", ["id": "a"], token: bob).status == 201, "\(http.backend)")
            #expect(try await http.post("/tables/t1", ["id": "c"], token: bob).status == 201)
            // Once another account made t4, alice writes there: the limit is on creating tables.
            #expect(try await http.post("/tables/t4", ["id": "d"], token: alice).status == 201, "\(http.backend)")
            #expect(try await http.get("/tables/t5", token: alice).array.isEmpty)
        }
    }
}

/// A restart took 16 s after one account made 6,000 tables. Start-up looks at the
/// schema once, not once per table (docs/DESIGN.md §10.1).
@Suite struct StartUpTests {
    /// The statements `declareIndexes` runs are as many over 3,000 tables as over 30: a look at
    /// the schema per table (which grew with the square of the tables: 16 s at 6,000) would
    /// add thousands. Counted, not timed, so that a loaded machine cannot fail it.
    @Test func declaringIndexesDoesNotGrowWithTheTables() async throws {
        let few = try await Self.declareIndexes(tables: 30)
        let many = try await Self.declareIndexes(tables: 3000)
        #expect(few > 0, "the trace saw the statements")
        #expect(many == few, "statements over 3,000 tables: \(many), over 30: \(few)")
    }

    /// Declares one index over `tables` record tables, one of which has an index no longer
    /// declared, checks what it says, and gives the number of SQL statements it ran.
    static func declareIndexes(tables: Int) async throws -> Int {
        let database = try TemporaryDatabase()
        defer { database.cleanUp() }
        let storage = try database.open()
        let statements = Mutex(0)
        try await storage.pool.write { db in
            for index in 0..<tables { try SQLiteSchema.createRecordTable(db, sqlName: "t_tab\(index)") }
            try SQLiteSchema.createIndex(db, sqlName: "t_tab7", try IndexedField(parsing: "tab7.n"))
            // The writer is one connection: the trace stays on it for `declareIndexes`' write.
            db.trace(options: .statement) { _ in statements.withLock { $0 += 1 } }
        }
        statements.withLock { $0 = 0 }
        let lines = try await storage.declareIndexes([try IndexedField(parsing: "tab9.m")])
        #expect(lines.first == "index tab9.m: created")
        #expect(lines.contains { $0.hasPrefix("index t_tab7_ix_n") && $0.contains("on t_tab7 is no longer declared") }, "\(lines)")
        #expect(lines.count == 2, "\(lines)")
        return statements.withLock { $0 }
    }
}
