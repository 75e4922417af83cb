import Foundation
import Testing
import TSyncModel

@testable import TSyncServer

/// "One client takes the database": one account's slow reads take only its share of
/// the database (docs/DESIGN.md §10.1), and a read that stops stops in the database too.
@Suite(.serialized) struct DatabaseShareTests {
    static let alice = ("alice", "correct horse battery staple")
    static let bob = ("bob", "another long passphrase")

    /// 300 records of 4 KB, as alice: the filter below takes seconds over them on both backends.
    static func slowRecords(_ http: TestHTTP, token: String) async throws {
        let text = String(repeating: "x", count: 4000)
        var operations: [JSONValue] = []
        for index in 0..<300 {
            operations.append(["method": "POST", "table": "t", "item": ["id": .string("r\(index)"), "s": .string(text)]])
        }
        #expect(try await http.post("/tables/$batch", ["operations": .array(operations)], token: token).status == 200)
    }

    static let slowFilter: String = {
        let forty = String(repeating: "x", count: 40)
        return "length(replace(replace(s,'x','\(forty)'),'x','\(forty)')) eq 1"
    }()

    /// Alice runs slow filters in parallel, more than the database has readers (SQLite) or the
    /// pool connections (PostgreSQL); meanwhile Bob's `$top=1` and login answer at once, not when
    /// her reads end. Before the shares, Bob waited for her reads' deadline.
    @Test func oneAccountsSlowReadsDoNotHoldAnotherAccount() async throws {
        var configuration = ServerConfiguration()
        configuration.queryTimeoutSeconds = 6
        configuration.readsPerClient = 1
        try await withTestServer(configuration, accounts: [Self.alice, Self.bob], queryTimeoutSeconds: 6) { http in
            let alice = try await http.login(Self.alice.0, Self.alice.1)
            let bob = try await http.login(Self.bob.0, Self.bob.1)
            try await Self.slowRecords(http, token: alice)
            let started = ContinuousClock.now
            // Six: the test's HTTP client opens at most eight connections to one host.
            let slow = (0..<6).map { _ in
                Task { try await http.get("/tables/t?$filter=" + Self.slowFilter, token: alice).status }
            }
            // Her reads are under way: one runs in her share, the others wait for it.
            let shares = try #require(ServerTimingTests.shares(http.storage), "\(type(of: http.storage))")
            #expect(try await eventually { shares.running("account alice") == 1 && shares.waiting == 5 }, "her reads are under way")
            let before = ContinuousClock.now
            let page = try await http.get("/tables/t?$top=1", token: bob)
            let read = ContinuousClock.now - before
            #expect(page.status == 200)
            #expect(page.array.count == 1)
            let loginStart = ContinuousClock.now
            _ = try await http.login(Self.bob.0, Self.bob.1)
            let login = ContinuousClock.now - loginStart
            // Answered while her reads still hold her share: held behind her, his would have
            // waited for them to end (at their 6 s deadline). Seen in the shares, not timed, so
            // that a loaded machine's slow answers cannot fail it.
            let herReads = shares.running("account alice")
            var statuses: [Int] = []
            for task in slow { statuses.append(try await task.value) }
            let slowest = ContinuousClock.now - started
            #expect(statuses.allSatisfy { $0 == 200 || $0 == 503 }, "\(statuses)")
            #expect(slowest > .seconds(4), "alice's reads were slow: \(slowest)")
            #expect(herReads == 1, "bob's page (\(read)) and login (\(login)) answered while alice's reads ran (\(slowest))")
        }
    }

    @Test func sharesGoToTheClientRunningFewest() async throws {
        let shares = ReadShares(connections: 4, perClient: 2)
        #expect(shares.slots == 2)
        let gate = AsyncStream<Void>.makeStream()
        let held = Task {
            try await ReadShares.$client.withValue("a") {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<4 { group.addTask { try await shares.run { for await _ in gate.stream {} } } }
                    try await group.waitForAll()
                }
            }
        }
        #expect(try await eventually { shares.running("a") == 2 })
        // Both slots are a's (and two more of its reads wait): b waits too, then runs.
        let other = Task { try await ReadShares.$client.withValue("b") { try await shares.run { shares.running("b") } } }
        // That b does not run is shown only by time passing without it.
        try await Task.sleep(for: .milliseconds(50))
        #expect(shares.running("b") == 0)
        // Work of no client passes at once.
        #expect(try await shares.run { 1 } == 1)
        gate.continuation.finish()
        #expect(try await other.value == 1)
        try await held.value
        #expect(shares.running("a") == 0)
    }
}

/// On PostgreSQL a read that stops (its client left, or its deadline passed) stops in
/// the database too, instead of running on for nobody (docs/DESIGN.md §10).
@Suite(.serialized, .enabled(if: PostgresTestDatabase.isConfigured)) struct PostgresCancelTests {
    /// Statements of the slow filter running in the test's database, but the one asking.
    static func running(_ http: TestHTTP) async throws -> Int {
        let sql = """
            SELECT CAST(count(*) AS TEXT) FROM pg_stat_activity WHERE datname = current_database() \
            AND state = 'active' AND query LIKE '%replace(%' AND pid <> pg_backend_pid()
            """
        return Int(try await http.storedStrings(sql).first ?? "0") ?? 0
    }

    /// 1,500 records of 4 KB: the filter takes many seconds over them.
    static func slowRecords(_ http: TestHTTP) async throws {
        let text = String(repeating: "x", count: 4000)
        for batch in 0..<5 {
            var operations: [JSONValue] = []
            for index in 0..<300 {
                operations.append(["method": "POST", "table": "t", "item": ["id": .string("r\(batch)-\(index)"), "s": .string(text)]])
            }
            #expect(try await http.post("/tables/$batch", ["operations": .array(operations)]).status == 200)
        }
    }

    static func waitUntilNoneRuns(_ http: TestHTTP, within limit: Duration) async throws -> Int {
        var count = 0
        try await eventually(timeout: limit, every: .milliseconds(100)) {
            count = try await running(http)
            return count == 0
        }
        return count
    }

    @Test func aReadWhoseClientLeftStopsInTheDatabase() async throws {
        var configuration = ServerConfiguration(requiresAuthentication: false)
        configuration.queryTimeoutSeconds = 120
        // No statement_timeout: only the cancel can stop the statement.
        try await withTestServer(configuration, backends: [.postgres]) { http in
            try await Self.slowRecords(http)
            let read = Task { try await http.get("/tables/t?$filter=" + DatabaseShareTests.slowFilter) }
            var seen = 0
            try await eventually(timeout: .seconds(10), every: .milliseconds(100)) {
                seen = try await Self.running(http)
                return seen > 0
            }
            #expect(seen == 1, "the read runs in the database")
            read.cancel()
            _ = try? await read.value
            // The filter alone runs 20 s in psql on an idle machine: 8 s leaves a loaded machine
            // time to cancel, and a statement left to run still outlasts it.
            #expect(try await Self.waitUntilNoneRuns(http, within: .seconds(8)) == 0, "the statement ran on after its client left")
        }
    }

    @Test func aReadPastItsDeadlineStopsInTheDatabase() async throws {
        var configuration = ServerConfiguration(requiresAuthentication: false)
        configuration.queryTimeoutSeconds = 1
        try await withTestServer(configuration, backends: [.postgres]) { http in
            try await Self.slowRecords(http)
            let start = ContinuousClock.now
            let reply = try await http.get("/tables/t?$filter=" + DatabaseShareTests.slowFilter)
            let elapsed = ContinuousClock.now - start
            #expect(reply.status == 503, "\(reply.status) \(reply.text.prefix(200))")
            // Both well below the 20 s the statement would run to its end.
            #expect(elapsed < .seconds(10), "answered at the deadline, not when the statement ended: \(elapsed)")
            #expect(try await Self.waitUntilNoneRuns(http, within: .seconds(8)) == 0, "the statement ran on past its deadline")
        }
    }
}
