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
            let probe = try RawSocket(port: port, timeout: 20)
            _ = await probe.write("GET /ready " + request)
            let ready = await probe.readToEnd()
            #expect(ready.hasPrefix("HTTP/1.1 200"), "\(ready)")
            // Answered beside the busy pool: while the reads still wait on the lock, which a look
            // in the pool would have waited for too. Not a time, which a loaded machine stretches.
            let stillWaiting = try await Self.count(
                admin, "pg_stat_activity WHERE datname = '\(Self.name(db))' AND wait_event_type = 'Lock' AND query NOT LIKE '%pg_sleep%'")
            #expect(stillWaiting >= 16, "answered while the pool's reads wait on the lock: \(stillWaiting) wait")
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
        #expect(FileManager.default.createFile(atPath: filler, contents: nil), "cannot create \(filler)")
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

    /// New PostgreSQL sessions that take seconds to begin (a loaded database forks a process for
    /// each; here a proxy in front of it holds every new connection 4 s): `/ready` keeps answering
    /// 200 at once through the session it keeps open, while that session is renewed in the
    /// background. A look that opened a session each time answered after the connection did,
    /// past any balancer's check (on a machine at load 60: 5–7 s, and every instance was taken out).
    @Test(.enabled(if: PostgresFixture.adminURL != nil, "TSYNC_TEST_POSTGRES_URL is not set: no PostgreSQL to test against"))
    func readyAnswersAtOnceWhileNewSessionsAreSlowToBegin() async throws {
        let directory = try TemporaryDirectory()
        try await PostgresFixture.withFreshDatabase { db in
            let proxy = try await SlowSessionProxy(upstream: db, directory: directory)
            defer { proxy.process.signal(SIGKILL) }
            let server = try ServerProcess(
                arguments: ["serve", "--db", proxy.databaseURL, "--port", "0", "--no-auth"], log: directory.path)
            defer { server.stop() }
            let url = try await server.waitForAddress()
            #expect(try await HTTP.send("GET", url + "/ready").status == 200)

            proxy.slow(true)
            var slowest = Duration.zero
            let until = ContinuousClock.now + .seconds(9)
            while ContinuousClock.now < until {
                let asked = ContinuousClock.now
                let ready = try await HTTP.send("GET", url + "/ready")
                let took = ContinuousClock.now - asked
                slowest = max(slowest, took)
                #expect(ready.status == 200, "\(ready.body)")
                try await Task.sleep(for: .milliseconds(250))
            }
            // The session was renewed meanwhile, and each renewal waited at the proxy.
            #expect(proxy.held >= 1, "new sessions held by the proxy: \(proxy.held)")
            // A look that waited for a new session would take the proxy's hold at least; at once is
            // anything less (a bound set by the proxy, not by how loaded the machine is).
            #expect(slowest < SlowSessionProxy.hold, "the slowest /ready took \(slowest)")
            proxy.slow(false)
        }
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

/// A TCP proxy in front of PostgreSQL (python3, asyncio) that, while `slow` is on, holds each new
/// connection 4 s before it connects it: a database slow to begin sessions, the connections
/// already open untouched.
final class SlowSessionProxy {
    /// How long a new connection is held while `slow` is on.
    static let hold = Duration.seconds(4)
    let process: ChildProcess
    let databaseURL: String
    private let flag: String
    private let heldFile: String

    init(upstream: String, directory: TemporaryDirectory) async throws {
        guard let parts = upstream.firstMatch(of: /^(postgres(?:ql)?:\/\/[^@\/]*@?)([^:\/]+):(\d+)(\/.*)$/) else {
            throw TSyncError.failure("cannot read the database URL \(upstream)")
        }
        flag = (directory.path as NSString).appendingPathComponent("slow")
        heldFile = (directory.path as NSString).appendingPathComponent("held")
        let announcement = (directory.path as NSString).appendingPathComponent("proxy-port")
        let script = """
            import asyncio, os, sys
            host, port, flag, held_file = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
            held = 0
            async def pipe(r, w):
                try:
                    while True:
                        b = await r.read(65536)
                        if not b: break
                        w.write(b)
                        await w.drain()
                except Exception:
                    pass
                finally:
                    w.close()
            async def handle(cr, cw):
                global held
                if os.path.exists(flag):
                    held += 1
                    with open(held_file, "w") as f: f.write(str(held))
                    await asyncio.sleep(\(Self.hold.components.seconds))
                try:
                    ur, uw = await asyncio.open_connection(host, port)
                except Exception:
                    cw.close()
                    return
                await asyncio.gather(pipe(cr, uw), pipe(ur, cw))
            async def main():
                server = await asyncio.start_server(handle, "127.0.0.1", 0)
                print(server.sockets[0].getsockname()[1], flush=True)
                async with server:
                    await server.serve_forever()
            asyncio.run(main())
            """
        let process = try ChildProcess(
            "/usr/bin/python3", ["-u", "-c", script, String(parts.2), String(parts.3), flag, heldFile],
            stdout: announcement, stderr: (directory.path as NSString).appendingPathComponent("proxy.log"))
        self.process = process
        let port = try await eventually {
            Int(
                String(decoding: FileManager.default.contents(atPath: announcement) ?? Data(), as: UTF8.self)
                    .trimmingCharacters(in: .whitespacesAndNewlines))
        } until: {
            $0 != nil || !process.isRunning
        }
        guard let port else { throw TSyncError.failure("the proxy did not say its port") }
        databaseURL = "\(parts.1)127.0.0.1:\(port)\(parts.4)"
    }

    func slow(_ on: Bool) {
        if on {
            #expect(FileManager.default.createFile(atPath: flag, contents: Data()), "cannot create \(flag)")
        } else {
            try? FileManager.default.removeItem(atPath: flag)
        }
    }

    /// New connections held so far.
    var held: Int {
        Int(String(decoding: FileManager.default.contents(atPath: heldFile) ?? Data(), as: UTF8.self)) ?? 0
    }
}
