import Hummingbird
import HummingbirdTesting
import Logging
import Testing
import TSyncModel

@testable import TSyncServer

/// Several `tsync serve` instances on one PostgreSQL database (docs/DESIGN.md §4): two in-process servers,
/// each with its own connection pool, on two ports.
// Needs a PostgreSQL server: TSYNC_TEST_POSTGRES_URL (scripts/test.sh starts one).
@Suite(.enabled(if: PostgresTestDatabase.isConfigured, "TSYNC_TEST_POSTGRES_URL is not set: no PostgreSQL to test against"))
struct PostgresInstancesTests {
    /// docs/DESIGN.md §2.2: writers on both instances, a reader pulling incrementally with the
    /// (updatedAt, id) checkpoint while they write. If a write could commit with an updatedAt
    /// below a checkpoint the reader already holds, the reader would never see it and its copy
    /// would differ from the server's at the end.
    @Test func incrementalReaderMissesNothingUnderWritersOnTwoInstances() async throws {
        try await withTwoInstances { first, second in
            let instances = [first, second]
            for index in 0..<20 { try await first.insert("notes", ["id": .string("seed-\(index)"), "n": 0]) }

            let writing = SharedFlag()
            let writers = Task {
                defer { writing.clear() }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for writer in 0..<6 {
                        let http = instances[writer % 2]
                        group.addTask {
                            for step in 0..<40 {
                                if step % 3 == 0 {
                                    try await http.insert("notes", ["id": .string("w\(writer)-\(step)"), "n": .int(Int64(step))])
                                } else {
                                    let target = "seed-\(Int.random(in: 0..<20))"
                                    let reply = try await http.patch(
                                        "/tables/notes/\(target)", ["n": .int(Int64(step)), "by": .int(Int64(writer))])
                                    #expect(reply.status == 200, "\(reply.text)")
                                }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }

            var reader = IncrementalReader(table: "notes")
            var pulls = 0
            while writing.isSet {
                try await reader.pull(from: instances[pulls % 2])
                pulls += 1
            }
            try await writers.value
            try await reader.pull(from: second)  // what committed after the last pull

            let server = try await second.get("/tables/notes?$top=1000&__includeDeleted=true&$orderby=id")
            let serverCopy = Dictionary(
                uniqueKeysWithValues: server.array.compactMap { item in
                    item.objectValue.flatMap { object in object["id"]?.stringValue.map { ($0, object) } }
                })
            #expect(serverCopy.count == 20 + 6 * 14)
            #expect(reader.copy.count == serverCopy.count)
            for (id, record) in serverCopy {
                #expect(reader.copy[id] == record, "the reader's copy of \(id) differs from the server's")
            }
            #expect(pulls > 1, "the reader pulled while the writers wrote")
        }
    }

    /// No lost update across instances: one If-Match, many PATCHes through both, one winner.
    @Test func concurrentPatchesWithOneIfMatchThroughTwoInstancesHaveOneWinner() async throws {
        try await withTwoInstances { first, second in
            let item = try await first.insert("todo", ["id": "race", "n": 0])
            let ifMatch = "\"\(item["version"]?.stringValue ?? "")\""
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for writer in 1...16 {
                    let http = writer % 2 == 0 ? first : second
                    group.addTask {
                        try await http.patch("/tables/todo/race", ["n": .int(Int64(writer))], headers: ["If-Match": ifMatch]).status
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 200 }.count == 1)
            #expect(statuses.filter { $0 == 412 }.count == 15)
        }
    }

    /// Inserts of one id through both instances: one 201, the rest 409 with that record.
    @Test func concurrentInsertsOfOneIDThroughTwoInstancesCreateItOnce() async throws {
        try await withTwoInstances { first, second in
            let replies = try await withThrowingTaskGroup(of: Reply.self) { group in
                for writer in 1...10 {
                    let http = writer % 2 == 0 ? first : second
                    group.addTask { try await http.post("/tables/todo", ["id": "same", "by": .int(Int64(writer))]) }
                }
                return try await group.reduce(into: [Reply]()) { $0.append($1) }
            }
            let created = replies.filter { $0.status == 201 }
            #expect(created.count == 1)
            #expect(replies.filter { $0.status == 409 }.count == 9)
            let winner = try #require(created.first?.object)
            for conflict in replies where conflict.status == 409 { #expect(conflict.object == winner) }
        }
    }

    /// Accounts and tokens are in the database: log in on one instance, use the token on the
    /// other, log out on the other, and the first no longer accepts it.
    @Test func aTokenFromOneInstanceWorksOnTheOther() async throws {
        try await withTwoInstances(ServerConfiguration(), accounts: [("alice", "correct horse")]) { first, second in
            let token = try await first.login("alice", "correct horse")
            #expect(try await second.post("/tables/todo", ["id": "a"], token: token).status == 201)
            #expect(try await first.get("/tables/todo/a", token: token).status == 200)
            #expect(try await second.post("/.auth/logout", token: token).status == 200)
            #expect(try await first.get("/tables/todo/a", token: token).status == 401)
        }
    }

    /// Failed logins count in the database: guesses spread over two instances meet one limit.
    @Test func failedLoginsOnEitherInstanceShareOneLimit() async throws {
        var configuration = ServerConfiguration()
        configuration.authentication.maximumFailures = 4
        configuration.authentication.failureWindow = .seconds(60)
        try await withTwoInstances(configuration, accounts: [("alice", "correct horse")]) { first, second in
            for attempt in 0..<4 {
                let http = attempt % 2 == 0 ? first : second
                #expect(try await http.post("/.auth/login/custom", ["username": "alice", "password": "wrong guess"]).status == 401)
            }
            for http in [first, second] {
                let reply = try await http.post("/.auth/login/custom", ["username": "alice", "password": "correct horse"])
                #expect(reply.status == 429, "\(reply.text)")
            }
        }
    }

    /// Writers sending batches (`POST /tables/$batch`, inserts and updates on two tables)
    /// to both instances at once, a reader pulling incrementally while they write: a pull never
    /// passes a batch still to commit (docs/DESIGN.md §10), so the reader ends equal to the server.
    @Test func incrementalReaderMissesNothingUnderBatchesOnTwoInstances() async throws {
        try await withTwoInstances { first, second in
            let instances = [first, second]
            for index in 0..<20 { try await first.insert("notes", ["id": .string("seed-\(index)"), "n": 0]) }
            let writing = SharedFlag()
            let writers = Task {
                defer { writing.clear() }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for writer in 0..<4 {
                        let http = instances[writer % 2]
                        group.addTask {
                            for step in 0..<15 {
                                var operations: [JSONValue] = []
                                for item in 0..<8 {
                                    operations.append([
                                        "method": "POST", "table": item % 2 == 0 ? "notes" : "other",
                                        "item": ["id": .string("w\(writer)-\(step)-\(item)"), "n": .int(Int64(item))],
                                    ])
                                }
                                operations.append([
                                    "method": "PATCH", "table": "notes", "id": .string("seed-\(Int.random(in: 0..<20))"),
                                    "item": ["n": .int(Int64(step)), "by": .int(Int64(writer))],
                                ])
                                let reply = try await http.post("/tables/$batch", ["operations": .array(operations)])
                                guard case .array(let results)? = reply.object["results"] else {
                                    Issue.record("batch failed: \(reply.text)")
                                    return
                                }
                                #expect(results.allSatisfy { [201, 200].contains($0.objectValue?["status"]) }, "\(reply.text)")
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            var notes = IncrementalReader(table: "notes")
            var pulls = 0
            while writing.isSet {
                try await notes.pull(from: instances[pulls % 2])
                pulls += 1
            }
            try await writers.value
            try await notes.pull(from: second)
            let server = try await second.get("/tables/notes?$top=1000&__includeDeleted=true&$orderby=id")
            #expect(server.array.count == 20 + 4 * 15 * 4)
            #expect(notes.copy.count == server.array.count)
            for item in server.array {
                guard let object = item.objectValue, let id = object["id"]?.stringValue else { continue }
                #expect(notes.copy[id] == object, "the reader's copy of \(id) is the server's")
            }
        }
    }

    /// One instance whose wall clock runs behind still gives later writes later updatedAt values:
    /// each write is stamped after the newest it sees.
    @Test func updatedAtKeepsGrowingAcrossInstancesWithSkewedClocks() async throws {
        let ahead = Timestamp(millisecondsSinceEpoch: 1_800_000_000_000)
        let behind = Timestamp(millisecondsSinceEpoch: 1_700_000_000_000)
        try await PostgresTestDatabase.withFreshDatabase { url in
            try await PostgresStorage.withStorage(url: url, clock: { ahead }, logger: quietLogger) { fast in
                try await PostgresStorage.withStorage(url: url, clock: { behind }, logger: quietLogger) { slow in
                    var stamps: [Timestamp] = []
                    for step in 0..<10 {
                        let storage: any ServerStorage = step % 2 == 0 ? fast : slow
                        guard
                            case .inserted(let record) = try await storage.insert(
                                table: "T", record: Record(id: "r\(step)", fields: [:]), scope: .shared)
                        else { Issue.record("insert \(step) failed"); return }
                        stamps.append(try #require(record.system.updatedAt))
                    }
                    #expect(stamps == (0..<10).map { Timestamp(millisecondsSinceEpoch: ahead.millisecondsSinceEpoch + Int64($0)) })
                    // Table names are case-insensitive, and other tables keep their own clocks.
                    guard
                        case .inserted(let other) = try await slow.insert(table: "u", record: Record(id: "x", fields: [:]), scope: .shared)
                    else { Issue.record("insert failed"); return }
                    #expect(other.system.updatedAt == behind)
                    #expect(try await slow.record(table: "t", id: "r3", scope: .shared)?.id == "r3")
                }
            }
        }
    }

    // MARK: - Helpers

    /// Two servers on one fresh PostgreSQL database, each with its own pool, as two processes would be.
    func withTwoInstances(
        _ configuration: ServerConfiguration = ServerConfiguration(requiresAuthentication: false),
        accounts: [(String, String)] = [],
        _ body: @Sendable (TestHTTP, TestHTTP) async throws -> Void
    ) async throws {
        let logger = Logger(label: "tsync.test", factory: { _ in SwiftLogNoOpLogHandler() })
        try await PostgresTestDatabase.withFreshDatabase { url in
            try await PostgresStorage.withStorage(url: url, maximumConnections: 8, logger: quietLogger) { firstStorage in
                try await PostgresStorage.withStorage(url: url, maximumConnections: 8, logger: quietLogger) { secondStorage in
                    let manager = AccountManager(storage: firstStorage, hasher: cheapHasher)
                    for (name, password) in accounts { try await manager.add(name: name, password: password) }
                    let first = try SyncServer(configuration: configuration, storage: firstStorage, hasher: cheapHasher, logger: logger)
                    let second = try SyncServer(configuration: configuration, storage: secondStorage, hasher: cheapHasher, logger: logger)
                    try await first.makeApplication().test(.ahc(.http)) { firstClient in
                        try await second.makeApplication().test(.ahc(.http)) { secondClient in
                            try await body(
                                TestHTTP(client: firstClient, storage: firstStorage, backend: .postgres),
                                TestHTTP(client: secondClient, storage: secondStorage, backend: .postgres))
                        }
                    }
                }
            }
        }
    }
}

/// A client's incremental pull (docs/DESIGN.md §2.1): pages ordered by (updatedAt, id) after a checkpoint.
struct IncrementalReader {
    let table: String
    var checkpoint: (updatedAt: String, id: String)?
    var copy: [String: [String: JSONValue]] = [:]

    init(table: String) {
        self.table = table
    }

    /// Pulls until a page comes back short.
    mutating func pull(from http: TestHTTP) async throws {
        let pageSize = 25
        while true {
            var uri = "/tables/\(table)?$orderby=updatedAt,id&$top=\(pageSize)&__includeDeleted=true"
            if let (stamp, id) = checkpoint {
                let quotedID = id.replacing("'", with: "''")
                let filter =
                    "(updatedAt gt datetimeoffset'\(stamp)') or (updatedAt eq datetimeoffset'\(stamp)' and id gt '\(quotedID)')"
                uri += "&$filter=" + QueryString.encode(filter)
            }
            let page = try await http.get(uri)
            guard page.status == 200 else { throw TSyncError.failure("pull failed: \(page.status) \(page.text)") }
            for item in page.array {
                guard let object = item.objectValue, let id = object["id"]?.stringValue,
                    let stamp = object["updatedAt"]?.stringValue
                else { throw TSyncError.failure("a pulled item lacks id or updatedAt: \(page.text)") }
                copy[id] = object
                checkpoint = (stamp, id)
            }
            if page.array.count < pageSize { return }
        }
    }
}
