import Foundation
import Testing
import TSyncModel

/// `GET /ready` as a load balancer sees it: answered within its timeout while every connection of
/// the pool is taken by slow reads, and 503 with the reason when the database answers but every
/// write would fail.
@Suite(.serialized) struct ReadinessTests {
    @Test(.enabled(if: PostgresFixture.adminURL != nil, "TSYNC_TEST_POSTGRES_URL is not set: no PostgreSQL to test against"))
    func readyAnswersUnderLoadAndSaysWhenTheDatabaseIsReadOnly() async throws {
        let directory = try TemporaryDirectory()
        try await PostgresFixture.withFreshDatabase { db in
            let server = try ServerProcess(
                arguments: ["serve", "--db", db, "--port", "0", "--no-auth", "--db-share", "64", "--query-timeout", "10"],
                log: directory.path)
            defer { server.stop() }
            let url = try await server.waitForAddress()
            #expect(try await HTTP.send("POST", url + "/tables/todo", body: #"{"id":"a"}"#).status == 201)

            // A session holds the records' table locked (until it is ended below, at most 30 s):
            // 40 reads wait on it, holding the pool's read slots (and waiting for them), as under
            // a burst of slow reads.
            let admin = try #require(PostgresFixture.adminURL)
            let holder = try ChildProcess(
                "/usr/bin/env",
                ["psql", "-q", db, "-c", "BEGIN; LOCK TABLE tsync_records IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(30); COMMIT;"])
            let locked = try await eventually {
                try await Self.count(
                    admin,
                    "pg_locks l JOIN pg_database d ON d.oid = l.database WHERE d.datname = '\(Self.name(db))' "
                        + "AND l.mode = 'AccessExclusiveLock' AND l.granted AND l.relation IS NOT NULL") > 0
            }
            #expect(locked, "the table is locked")
            // Raw connections: URLSession would queue the requests behind its few per host.
            let port = try #require(URLComponents(string: url)?.port)
            let request = "HTTP/1.1\r\nHost: x\r\nZUMO-API-VERSION: 2.0.0\r\nConnection: close\r\n\r\n"
            var load: [RawSocket] = []
            for _ in 0..<40 {
                let socket = try RawSocket(port: port, timeout: 20)
                _ = await socket.write("GET /tables/todo " + request)
                load.append(socket)
            }
            // Every read slot of the pool (20 connections less a fifth: `ReadShares.slots`) waits
            // on the lock.
            let waiting = try await eventually {
                try await Self.count(
                    admin,
                    "pg_stat_activity WHERE datname = '\(Self.name(db))' AND wait_event_type = 'Lock' AND query NOT LIKE '%pg_sleep%'")
            } until: {
                $0 >= 16
            }
            #expect(waiting >= 16, "reads waiting on the lock: \(waiting)")
            let asked = ContinuousClock.now
            let probe = try RawSocket(port: port, timeout: 20)
            _ = await probe.write("GET /ready " + request)
            let ready = await probe.readToEnd()
            let took = ContinuousClock.now - asked
            #expect(ready.hasPrefix("HTTP/1.1 200"), "\(ready)")
            #expect(took < .seconds(1), "answered beside the busy pool, in \(took)")
            for socket in load { socket.close() }
            try await PostgresFixture.psql(
                admin,
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(Self.name(db))' AND query LIKE '%pg_sleep(30)%' AND pid <> pg_backend_pid()"
            )
            _ = await holder.wait(timeout: 10)

            // The database turned read-only: every write fails, and /ready says so.
            try await PostgresFixture.psql(
                try #require(PostgresFixture.adminURL), "ALTER DATABASE \(Self.name(db)) SET default_transaction_read_only = on")
            let notReady = try await eventually(timeout: .seconds(10), every: .milliseconds(200)) {
                try await HTTP.send("GET", url + "/ready")
            } until: {
                $0.status != 200
            }
            #expect(notReady.status == 503)
            #expect(notReady.body.contains("writes would fail: the database is read-only"), "\(notReady.body)")
            #expect(server.log.contains("default_transaction_read_only is on"), "\(server.log)")

            try await PostgresFixture.psql(
                try #require(PostgresFixture.adminURL), "ALTER DATABASE \(Self.name(db)) RESET default_transaction_read_only")
            let again = try await eventually(timeout: .seconds(10), every: .milliseconds(200)) {
                try await HTTP.send("GET", url + "/ready")
            } until: {
                $0.status == 200
            }
            #expect(again.status == 200, "ready again once writes would work: \(again.body)")
        }
    }

    /// A SQLite database whose disk fills up: /ready says so until space is freed. Needs a small
    /// file system of its own (tmpfs, mounted as root).
    @Test(.enabled(if: TinyDisk.canMount, "cannot mount a tmpfs here (needs root): no disk to fill"))
    func readySaysWhenTheSQLiteDiskIsFull() async throws {
        let directory = try TemporaryDirectory()
        let disk = try TinyDisk(at: try directory.subdirectory("disk"), megabytes: 4)
        defer { disk.unmount() }
        let db = "sqlite:" + (disk.path as NSString).appendingPathComponent("server.db")
        let server = try ServerProcess(arguments: ["serve", "--db", db, "--port", "0", "--no-auth"], log: directory.path)
        let url = try await server.waitForAddress()
        #expect(try await HTTP.send("GET", url + "/ready").status == 200)

        let filler = (disk.path as NSString).appendingPathComponent("filler")
        FileManager.default.createFile(atPath: filler, contents: nil)
        let handle = try #require(FileHandle(forWritingAtPath: filler))
        let block = Data(count: 64 << 10)
        while (try? handle.write(contentsOf: block)) != nil {}
        try? handle.close()

        let full = try await eventually(timeout: .seconds(10), every: .milliseconds(200)) {
            try await HTTP.send("GET", url + "/ready")
        } until: {
            $0.status != 200
        }
        #expect(full.status == 503)
        #expect(full.body.contains("writes would fail: the database's disk is full"), "\(full.body)")

        try FileManager.default.removeItem(atPath: filler)
        let freed = try await eventually(timeout: .seconds(10), every: .milliseconds(200)) {
            try await HTTP.send("GET", url + "/ready")
        } until: {
            $0.status == 200
        }
        #expect(freed.status == 200, "\(freed.body)")
        #expect(try await server.terminate(signal: SIGTERM) == 0)
    }

    static func name(_ databaseURL: String) -> String { String(databaseURL.split(separator: "/").last ?? "") }

    /// `SELECT count(*) FROM from`, asked as the administrator.
    static func count(_ admin: String, _ from: String) async throws -> Int {
        let result = try await ChildProcess.output(
            "/usr/bin/env", ["psql", "-tAq", "-v", "ON_ERROR_STOP=1", admin, "-c", "SELECT count(*) FROM " + from])
        guard result.status == 0, let count = Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw TSyncError.failure("psql: \(result.stderr)")
        }
        return count
    }
}

/// A tmpfs of a few megabytes, mounted for one test.
struct TinyDisk {
    let path: String

    static let canMount: Bool = {
        guard getuid() == 0, let directory = try? TemporaryDirectory() else { return false }
        guard (try? TinyDisk(at: directory.path, megabytes: 1)).map({ $0.unmount() }) != nil else { return false }
        return true
    }()

    init(at path: String, megabytes: Int) throws {
        self.path = path
        let mounted = "size=\(megabytes)m".withCString { options in mount("tmpfs", path, "tmpfs", 0, options) }
        guard mounted == 0 else {
            throw TSyncError.failure("cannot mount a tmpfs at \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Lazily (`MNT_DETACH`, 2): a file still open there does not keep it mounted.
    func unmount() { umount2(path, 2) }
}
