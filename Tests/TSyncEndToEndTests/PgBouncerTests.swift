import Foundation
import Testing
import TSyncModel

/// `tsync serve` behind a real PgBouncer, as managed PostgreSQL offerings put it in front, in
/// both pool modes: writes, paged reads, the query timeout, a held live read woken by a write
/// through another instance, `/ready`, and a start-up that fails at once with the pooler's reason.
// Needs a PostgreSQL server (TSYNC_TEST_POSTGRES_URL) and pgbouncer (scripts/install-deps.sh
// installs it).
@Suite(
    .serialized, .enabled(if: PostgresFixture.adminURL != nil, "TSYNC_TEST_POSTGRES_URL is not set: no PostgreSQL to test against"),
    .enabled(if: PgBouncer.executable != nil, "pgbouncer is not installed (apt-get install pgbouncer): no pooler to test behind"))
struct PgBouncerTests {
    @Test(arguments: ["transaction", "session"]) func serveBehindPgBouncer(poolMode: String) async throws {
        let directory = try TemporaryDirectory()
        try await PostgresFixture.withFreshDatabase { direct in
            let bouncer = try await PgBouncer(poolMode: poolMode, in: directory)
            defer { bouncer.stop() }
            let pooled = try bouncer.url(for: direct)

            // Through a transaction pooler LISTEN hears nothing: serve says so and what to do.
            var listen: [String] = []
            if poolMode == "transaction" {
                let (refused, took) = try await TSyncProcess.runTimed(
                    ["serve", "--db", pooled, "--no-auth", "--port", "0"], in: directory.path)
                #expect(refused.status == 1, "\(refused)")
                #expect(refused.stderr.contains("--listen-db"), "\(refused.stderr)")
                #expect(took < .seconds(40), "not silent for a minute")
                listen = ["--listen-db", direct]
            }

            let options = ["--db", pooled, "--no-auth", "--port", "0", "--query-timeout", "1", "--metrics"] + listen
            let first = try ServerProcess(arguments: ["serve"] + options, log: directory.path)
            defer { first.stop() }
            let second = try ServerProcess(arguments: ["serve"] + options, log: directory.path)
            defer { second.stop() }
            let a = try await first.waitForAddress()
            let b = try await second.waitForAddress()
            // Both become ready: a loaded machine's first session through PgBouncer can take
            // longer than /ready's 2 s, and a load balancer asks again.
            for base in [a, b] {
                #expect(try await eventually { try await HTTP.send("GET", base + "/ready").status == 200 }, "\(base) ready")
            }

            // Writes through one instance, read page by page through the other (tsync's walk,
            // `tsync_pull_page`, many times over one pooled connection).
            let writer = try await TSyncSandbox(remote: a)
            let items = (0..<60).map { #"{"id": "r\#(String(format: "%02d", $0))", "n": \#($0)}"# }.joined(separator: "\n")
            try await writer.ok(["insert", "rows"], stdin: items)
            try await writer.ok(["push"])
            for _ in 0..<3 {
                let reader = try await TSyncSandbox(remote: b)
                let pull = try JSONOutput.object(try await reader.ok(["pull", "rows", "--query-id", "q", "--page-size", "7", "--json"]))
                #expect(JSONOutput.int(pull["received"]) == 60)
                #expect(JSONOutput.int(pull["pages"]) == 9)
            }
            let counted = try await HTTP.send("GET", b + "/tables/rows?$top=5&$skip=10&$inlinecount=allpages&$orderby=n")
            #expect(counted.status == 200, "\(counted.body)")
            #expect(counted.body.contains(#""count":60"#), "\(counted.body.prefix(200))")

            // A held live read on one instance is woken by a write through the other.
            let held = Task {
                try await HTTP.send("GET", b + "/tables/rows?$filter=id%20eq%20'late'", headers: ["Prefer": "wait=20"])
            }
            #expect(try await eventually { try await HTTP.metric("tsync_live_waiting", at: b) == 1 }, "the read is held")
            let wrote = ContinuousClock.now
            #expect(try await HTTP.send("POST", a + "/tables/rows", body: #"{"id":"late","n":99}"#).status == 201)
            let woken = try await held.value
            #expect(woken.status == 200)
            #expect(woken.body.contains(#""late""#), "\(woken.body)")
            #expect(ContinuousClock.now - wrote < .seconds(15), "woken by the write, not by the end of the 20 s wait")

            // A query past --query-timeout is stopped at it: statement_timeout holds per transaction.
            let text = String(repeating: "x", count: 4000)
            let batch = (0..<300).map { #"{"id":"s\#($0)","s":"\#(text)"}"# }
            for chunk in stride(from: 0, to: batch.count, by: 50) {
                let body = "[" + batch[chunk..<min(chunk + 50, batch.count)].joined(separator: ",") + "]"
                let insert = try await writer.run(["insert", "slow"], stdin: body)
                #expect(insert.status == 0, "\(insert)")
            }
            try await writer.ok(["push"])
            let forty = String(repeating: "x", count: 40)
            let slow = "length(replace(replace(s,'x','\(forty)'),'x','\(forty)'))%20eq%201"
            let asked = ContinuousClock.now
            let stopped = try await HTTP.send("GET", a + "/tables/slow?$filter=" + slow)
            #expect(stopped.status == 503, "\(stopped.status) \(stopped.body.prefix(200))")
            #expect(stopped.body.contains("(1 s)"), "\(stopped.body)")
            #expect(ContinuousClock.now - asked < .seconds(5), "stopped at the limit")
            // The statement was stopped in the database too, by its transaction's statement_timeout.
            #expect(try await HTTP.send("GET", a + "/ready").status == 200)

            #expect(try await first.terminate(signal: SIGTERM) == 0)
            #expect(try await second.terminate(signal: SIGTERM) == 0)
            #expect(!first.log.contains("already exists"), "\(first.log)")
            #expect(!first.log.contains("does not exist"), "\(first.log)")
        }
    }

    /// A login PgBouncer refuses (a user its auth_file lacks) fails serve at once, with
    /// PgBouncer's own reason.
    @Test func aRefusedLoginFailsAtOnceWithThePoolersReason() async throws {
        let directory = try TemporaryDirectory()
        let bouncer = try await PgBouncer(poolMode: "transaction", in: directory)
        defer { bouncer.stop() }
        let admin = try #require(PostgresFixture.adminURL)
        var url = try #require(URLComponents(string: try bouncer.url(for: admin)))
        url.user = "nobody_known"
        let (serve, took) = try await TSyncProcess.runTimed(["serve", "--db", try #require(url.string), "--port", "0"], in: directory.path)
        #expect(serve.status == 1, "\(serve)")
        #expect(serve.stderr.contains("authentication failed"), "PgBouncer's reason: \(serve.stderr)")
        #expect(serve.stderr.split(separator: "\n").count == 1, "one line: \(serve.stderr)")
        // The pool would retry until the test gives up (120 s); a loaded machine starts serve
        // and PgBouncer's refusal in seconds.
        #expect(took < .seconds(30))
    }
}

/// A pgbouncer process of a test's own: its ini and users in the test's directory, a free port,
/// every database forwarded to the test PostgreSQL.
final class PgBouncer: Sendable {
    static let executable: String? = ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer", "/usr/local/bin/pgbouncer"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    let port: Int
    private let process: ChildProcess
    let logPath: String

    init(poolMode: String, in directory: TemporaryDirectory) async throws {
        let executable = try #require(Self.executable)
        let admin = try #require(PostgresFixture.adminURL.flatMap(URLComponents.init(string:)))
        let host = admin.host ?? "127.0.0.1"
        let backendPort = admin.port ?? 5432
        let user = admin.user ?? "postgres"
        port = try LoopbackListener.freePort()
        let folder = try directory.subdirectory("pgbouncer-\(poolMode)")
        // pgbouncer refuses to run as root; `-u` makes it another user, who must read these.
        chmod(directory.path, 0o755)
        chmod(folder, 0o755)
        let users = try directory.write("pgbouncer-\(poolMode)/users.txt", "\"\(user)\" \"\"\n")
        logPath = (folder as NSString).appendingPathComponent("pgbouncer.log")
        let ini = try directory.write(
            "pgbouncer-\(poolMode)/pgbouncer.ini",
            """
            [databases]
            * = host=\(host) port=\(backendPort)
            [pgbouncer]
            listen_addr = 127.0.0.1
            listen_port = \(port)
            unix_socket_dir =
            auth_type = trust
            auth_file = \(users)
            pool_mode = \(poolMode)
            max_client_conn = 500
            default_pool_size = 10
            """)
        for path in [users, ini] { chmod(path, 0o644) }
        process = try ChildProcess(executable, (getuid() == 0 ? ["-u", "nobody"] : []) + [ini], stdout: logPath, stderr: logPath)
        // Ready once it accepts connections.
        let (port, process) = (self.port, self.process)
        let ready = try await eventually(timeout: .seconds(10)) {
            guard let socket = try? RawSocket(port: port, timeout: 1) else { return !process.isRunning }
            socket.close()
            return true
        }
        if ready, process.isRunning { return }
        let log = String(decoding: FileManager.default.contents(atPath: logPath) ?? Data(), as: UTF8.self)
        throw TSyncError.failure("pgbouncer did not start; its log:\n\(log)")
    }

    /// `databaseURL` (a database of the test PostgreSQL) through this pooler.
    func url(for databaseURL: String) throws -> String {
        var components = try #require(URLComponents(string: databaseURL))
        components.host = "127.0.0.1"
        components.port = port
        return try #require(components.string)
    }

    func stop() { process.signal(SIGTERM) }

    deinit { stop() }
}
