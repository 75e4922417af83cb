import Foundation
import Testing
import TSyncModel

/// The built `tsync` binary on PostgreSQL: `tsync user … --db postgres://…`, and two `tsync serve`
/// processes started together on one database (they race to create the schema), sharing
/// accounts and tokens as instances behind a load balancer do.
// Needs a PostgreSQL server: TSYNC_TEST_POSTGRES_URL (scripts/test.sh starts one), and `psql` to
// create a database for the test.
@Suite(.serialized, .enabled(if: PostgresFixture.adminURL != nil, "TSYNC_TEST_POSTGRES_URL is not set: no PostgreSQL to test against"))
struct PostgresServeEndToEndTests {
    @Test func usersAndTwoServersShareOneDatabase() async throws {
        let directory = try TemporaryDirectory()
        try await PostgresFixture.withFreshDatabase { db in
            let add = try await TSyncProcess.run(
                ["user", "add", "alice", "--password-stdin", "--db", db], in: directory.path, stdin: "alice password\n")
            #expect(add.status == 0, "\(add.stderr)")
            let list = try await TSyncProcess.run(["user", "list", "--db", db], in: directory.path)
            #expect(list.status == 0, "\(list.stderr)")
            #expect(list.stdout == "alice\n", "stdout holds the names only, no log lines")

            let first = try ServerProcess(arguments: ["serve", "--db", db, "--port", "0"], log: directory.path)
            defer { first.stop() }
            let second = try ServerProcess(arguments: ["serve", "--db", db, "--port", "0"], log: directory.path)
            defer { second.stop() }
            let a = try await first.waitForAddress()
            let b = try await second.waitForAddress()

            let login = try await HTTP.send("POST", a + "/.auth/login/custom", body: #"{"username":"alice","password":"alice password"}"#)
            #expect(login.status == 200, "\(login.body)")
            let token = try #require(try JSONParser.parse(login.body).objectValue?["authenticationToken"]?.stringValue)
            let insert = try await HTTP.send("POST", b + "/tables/todo", body: #"{"id":"e2e","text":"hello"}"#, token: token)
            #expect(insert.status == 201, "\(insert.body)")
            let read = try await HTTP.send("GET", a + "/tables/todo/e2e", token: token)
            #expect(read.status == 200)
            #expect(try JSONParser.parse(read.body) == JSONParser.parse(insert.body))

            // A new password revokes the account's tokens on every instance.
            let passwd = try await TSyncProcess.run(
                ["user", "passwd", "alice", "--password-stdin", "--db", db], in: directory.path, stdin: "new password\n")
            #expect(passwd.status == 0, "\(passwd.stderr)")
            #expect(try await HTTP.send("GET", a + "/tables/todo", token: token).status == 401)
            #expect(try await HTTP.send("GET", b + "/tables/todo", token: token).status == 401)

            // Locked out by failed logins on one instance, unlocked by the operator for both.
            for _ in 0..<5 {
                let wrong = try await HTTP.send("POST", a + "/.auth/login/custom", body: #"{"username":"alice","password":"wrong one"}"#)
                #expect(wrong.status == 401)
            }
            let right = #"{"username":"alice","password":"new password"}"#
            #expect(try await HTTP.send("POST", b + "/.auth/login/custom", body: right).status == 429)
            let unlock = try await TSyncProcess.run(["user", "unlock", "alice", "--db", db], in: directory.path)
            #expect(unlock.status == 0 && unlock.stderr.contains("unlocked account alice"), "\(unlock)")
            #expect(try await HTTP.send("POST", b + "/.auth/login/custom", body: right).status == 200)

            #expect(try await first.terminate(signal: SIGTERM) == 0)
            #expect(try await second.terminate(signal: SIGTERM) == 0)
        }
    }

    /// `serve` on a fresh database (`--no-auth`) that holds one record of `todo`, its log in
    /// `directory`.
    private static func withServerOfOneRecord(
        _ body: (_ db: String, _ server: ServerProcess, _ url: String, _ directory: String) async throws -> Void
    ) async throws {
        let directory = try TemporaryDirectory()
        try await PostgresFixture.withFreshDatabase { db in
            let server = try ServerProcess(arguments: ["serve", "--db", db, "--port", "0", "--no-auth"], log: directory.path)
            defer { server.stop() }
            let url = try await server.waitForAddress()
            #expect(try await HTTP.send("POST", url + "/tables/todo", body: #"{"id":"a","text":"fine"}"#).status == 201)
            try await body(db, server, url, directory.path)
        }
    }

    /// A database that takes no writes (a hot standby answers the same SQLSTATE 25006): `serve`'s
    /// log and `tsync user` say what it is and what to do, with PostgreSQL's own words, and the
    /// log never shows the values the write carried.
    @Test func aReadOnlyDatabaseIsSaidInWordsAnOperatorCanActOn() async throws {
        try await Self.withServerOfOneRecord { db, server, url, directory in
            let admin = try #require(PostgresFixture.adminURL)
            let name = ReadinessTests.name(db)
            try await PostgresFixture.psql(admin, "ALTER DATABASE \(name) SET default_transaction_read_only = on")
            // The pool's sessions began before; new ones begin read-only.
            try await PostgresFixture.psql(
                admin, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)' AND pid <> pg_backend_pid()")
            let refused = try await eventually(timeout: .seconds(15), every: .milliseconds(200)) {
                let write = try await HTTP.send("POST", url + "/tables/todo", body: #"{"id":"b","text":"s3cr3t-value"}"#)
                return write.status == 500 && server.log.contains("SQLSTATE 25006")
            }
            #expect(refused, "\(server.log)")
            #expect(server.log.contains("in a read-only transaction"), "PostgreSQL's words: \(server.log)")
            #expect(server.log.contains("point --db at the primary"), "\(server.log)")
            #expect(!server.log.contains("Generic description"), "\(server.log)")
            #expect(!server.log.contains("s3cr3t-value"), "the write's values stay out of the log")

            let add = try await TSyncProcess.run(
                ["user", "add", "carol", "--password-stdin", "--db", db], in: directory, stdin: "carol password\n")
            #expect(add.status == 1, "\(add)")
            #expect(add.stderr.contains("read-only replica"), "\(add.stderr)")
            #expect(add.stderr.contains("point --db at the primary"), "\(add.stderr)")
            #expect(!add.stderr.contains("Generic description"), "\(add.stderr)")
            // A server started on it refuses at once, in the same words.
            let another = try await TSyncProcess.run(["serve", "--db", db, "--port", "0", "--no-auth"], in: directory)
            #expect(another.status == 1, "\(another)")
            #expect(another.stderr.contains("point --db at the primary"), "\(another.stderr)")
            try await PostgresFixture.psql(admin, "ALTER DATABASE \(name) RESET default_transaction_read_only")
        }
    }

    /// A session PostgreSQL ends under a request (`pg_terminate_backend`, as a restart or an
    /// operator's cleanup does) is a 503, "not now", which a client sends again: the server runs,
    /// and the log says what happened, not that PostgreSQL cannot be reached.
    @Test func aSessionPostgreSQLEndsUnderARequestIsNotNow() async throws {
        try await Self.withServerOfOneRecord { db, server, url, _ in
            // A session holds the records' table (at most 30 s): the read waits on its lock, in
            // a session of the server's own that is then ended.
            let admin = try #require(PostgresFixture.adminURL)
            let name = ReadinessTests.name(db)
            let holder = try ChildProcess(
                "/usr/bin/env",
                ["psql", "-q", db, "-c", "BEGIN; LOCK TABLE tsync_records IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(30); COMMIT;"])
            let locked = try await eventually {
                try await ReadinessTests.count(
                    admin,
                    "pg_locks l JOIN pg_database d ON d.oid = l.database WHERE d.datname = '\(name)' "
                        + "AND l.mode = 'AccessExclusiveLock' AND l.granted AND l.relation IS NOT NULL") > 0
            }
            #expect(locked, "the table is locked")
            let waiter = "pg_stat_activity WHERE datname = '\(name)' AND wait_event_type = 'Lock' AND query NOT LIKE '%pg_sleep%'"
            let read = Task { try await HTTP.send("GET", url + "/tables/todo") }
            let waiting = try await eventually { try await ReadinessTests.count(admin, waiter) > 0 }
            #expect(waiting, "the read waits on the lock")
            try await PostgresFixture.psql(admin, "SELECT pg_terminate_backend(pid) FROM " + waiter)
            let answer = try await read.value
            #expect(answer.status == 503, "\(answer.status) \(answer.body)")
            #expect(answer.body.contains("ended its connection") && answer.body.contains("try again"), "\(answer.body)")
            #expect(!answer.body.contains("postgres://"), "the database's address stays in the log: \(answer.body)")
            #expect(server.log.contains("ended the connection before the work was done"), "\(server.log)")
            #expect(server.log.contains("SQLSTATE 57P01"), "PostgreSQL's words: \(server.log)")
            #expect(!server.log.contains("cannot reach"), "\(server.log)")

            try await PostgresFixture.psql(
                admin,
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)' AND query LIKE '%pg_sleep(30)%' AND pid <> pg_backend_pid()"
            )
            _ = await holder.wait(timeout: 10)
            #expect(try await HTTP.send("GET", url + "/tables/todo").status == 200, "the next request is served")
        }
    }

    @Test func anUnreachableDatabaseIsAClearFailure() async throws {
        let directory = try TemporaryDirectory()
        let refusing = try LoopbackListener.refusing()
        defer { refusing.close() }
        let address = "127.0.0.1:\(refusing.port)"
        let refused = try await TSyncProcess.run(["user", "list", "--db", "postgres://tsync@\(address)/tsync"], in: directory.path)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("cannot reach PostgreSQL at postgres://tsync@\(address)/tsync"), "\(refused.stderr)")
        let serve = try await TSyncProcess.run(
            ["serve", "--db", "postgres://tsync:secret@\(address)/tsync", "--port", "0"], in: directory.path)
        #expect(serve.status == 1)
        #expect(!serve.stderr.contains("secret"), "the password never reaches the terminal")
    }
}

enum PostgresFixture {
    static let adminURL = ProcessInfo.processInfo.environment["TSYNC_TEST_POSTGRES_URL"]

    /// Creates a database with a random name, runs `body` with its URL, and drops it.
    static func withFreshDatabase(_ body: (String) async throws -> Void) async throws {
        let admin = try #require(adminURL)
        let name = "tsync_e2e_" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        guard let slash = admin.lastIndex(of: "/") else { throw TSyncError.failure("TSYNC_TEST_POSTGRES_URL has no database") }
        try await psql(admin, "CREATE DATABASE \(name)")
        do {
            try await body(String(admin[..<slash]) + "/" + name)
        } catch {
            try? await psql(admin, "DROP DATABASE \(name) WITH (FORCE)")
            throw error
        }
        try? await psql(admin, "DROP DATABASE \(name) WITH (FORCE)")
    }

    static func psql(_ url: String, _ sql: String) async throws {
        let (status, errors) = try await ChildProcess.run("/usr/bin/env", ["psql", "-q", "-v", "ON_ERROR_STOP=1", url, "-c", sql])
        guard status == 0 else { throw TSyncError.failure("psql failed on: \(sql): \(errors)") }
    }
}
