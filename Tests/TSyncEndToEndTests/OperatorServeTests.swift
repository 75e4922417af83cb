import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Testing
import TSyncModel

/// `tsync serve` for the person who runs it: JSON logs with request ids, start-up and
/// shutdown lines, failed logins as warnings, `/metrics`, `/ready` and `--config`. Each test runs
/// the real binary and reads its stderr and answers.
@Suite(.serialized) struct OperatorServeTests {
    /// Every line of a JSON log, parsed; a line that is not a JSON object is a recorded issue.
    /// A server without accounts on a new SQLite database, its log in `format`; the directory
    /// holds the database and the log, and must outlive the server.
    static func serverLogging(_ format: String) throws -> (TemporaryDirectory, ServerProcess) {
        let directory = try TemporaryDirectory()
        let server = try ServerProcess(
            arguments: ["serve", "--db", "sqlite:" + directory.path + "/s.db", "--port", "0", "--no-auth", "--log-format", format],
            log: directory.path)
        return (directory, server)
    }

    static func jsonLines(_ log: String) -> [[String: JSONValue]] {
        log.split(separator: "\n").compactMap { line in
            guard let object = (try? JSONParser.parse(String(line)))?.objectValue else {
                Issue.record("not a JSON object: \(line)")
                return nil
            }
            return object
        }
    }

    @Test func jsonLogHasRequestFieldsIdsAndNoSecrets() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/server.db"
        let password = "alice secret password"
        let add = try await TSyncProcess.run(
            ["user", "add", "alice", "--password-stdin", "--db", "sqlite:" + path], in: directory.path, stdin: password + "\n")
        #expect(add.status == 0, "\(add.stderr)")
        let server = try ServerProcess(
            arguments: ["serve", "--db", "sqlite:" + path, "--port", "0", "--log-format", "json"], log: directory.path)
        defer { server.stop() }
        let base = try await server.waitForAddress()

        let refused = try await HTTP.send(
            "POST", base + "/.auth/login/custom", body: #"{"username":"alice","password":"wrong guess 1"}"#)
        #expect(refused.status == 401)
        let login = try await HTTP.send(
            "POST", base + "/.auth/login/custom", body: #"{"username":"alice","password":"\#(password)"}"#)
        #expect(login.status == 200)
        let token = try #require(try JSONParser.parse(login.body).objectValue?["authenticationToken"]?.stringValue)
        // Tokens in a header, and in query strings (as a careless client or proxy might put them).
        let insert = try await HTTP.send(
            "POST", base + "/tables/todo?access_token=\(token)", headers: ["X-ZUMO-AUTH": token, "X-Request-Id": "from-client-1"],
            body: #"{"id":"a","text":"hi"}"#)
        #expect(insert.status == 201)
        // Not from a trusted proxy: the client's X-Request-Id is not taken.
        let insertID = try #require(insert.headers["X-Request-Id"])
        #expect(insertID != "from-client-1" && insertID.count == 16, "\(insertID)")
        let read = try await HTTP.send(
            "GET", base + "/tables/todo?$top=5&token=\(token)&Password=\(password.replacingOccurrences(of: " ", with: "%20"))&sig=xyz",
            headers: ["Authorization": "Bearer " + token])
        #expect(read.status == 200)
        #expect(try await server.terminate(signal: SIGTERM) == 0)

        let log = server.log
        #expect(!log.contains(token), "a token reached the log")
        #expect(!log.contains("secret"), "the password reached the log")
        #expect(!log.contains("xyz"), "a signature reached the log")
        let lines = Self.jsonLines(log)
        for line in lines {
            #expect(line["time"]?.stringValue != nil && line["level"]?.stringValue != nil && line["message"]?.stringValue != nil, "\(line)")
        }
        let messages = lines.compactMap { $0["message"]?.stringValue }
        let version = try await TSyncProcess.run(["--version"], in: directory.path).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(messages.contains("tsync \(version) serving sqlite:\(path)"), "\(messages)")
        #expect(messages.contains("auth: accounts required (tokens live 86400 s)"), "\(messages)")
        #expect(messages.contains { $0.hasPrefix("limits: max-top 5000, max-batch 1000, max-connections 1024") }, "\(messages)")
        #expect(messages.contains("stopping on SIGTERM: waiting for 0 requests in flight"), "\(messages)")
        #expect(messages.last == "stopped", "\(messages)")

        let failed = try #require(lines.first { $0["level"]?.stringValue == "warning" }, "\(log)")
        #expect(failed["message"]?.stringValue == #"failed login for "alice" from 127.0.0.1"#)
        #expect(failed["user"] == .string("alice") && failed["client"] == .string("127.0.0.1"))

        let post = try #require(
            lines.first { $0["method"] == .string("POST") && $0["path"]?.stringValue?.hasPrefix("/tables/todo") == true })
        #expect(post["path"] == .string("/tables/todo?access_token=REDACTED"))
        #expect(post["status"] == .int(201))
        #expect(post["user"] == .string("alice"))
        #expect(post["client"] == .string("127.0.0.1"))
        #expect(post["requestId"] == .string(insertID))
        // The route template, as /metrics labels it: a log groups by route without parsing paths.
        #expect(post["route"] == .string("/tables/{table}"), "\(post)")
        #expect(post["bytes"] == .int(Int64(insert.body.utf8.count)))
        if case .double(let milliseconds)? = post["durationMs"] {
            #expect(milliseconds >= 0)
        } else {
            Issue.record("durationMs: \(String(describing: post["durationMs"]))")
        }
        let get = try #require(lines.first { $0["method"] == .string("GET") && $0["path"]?.stringValue?.hasPrefix("/tables/todo") == true })
        #expect(get["path"] == .string("/tables/todo?$top=5&token=REDACTED&Password=REDACTED&sig=REDACTED"))
        let anonymous = try #require(lines.first { $0["path"] == .string("/.auth/login/custom") && $0["status"] == .int(401) })
        #expect(anonymous["user"] == .null)
        #expect(anonymous["route"] == .string("/.auth/login/custom"), "\(anonymous)")
    }

    /// A trusted proxy's X-Request-Id is kept when it is plain and short; a long or odd one is
    /// replaced. Failed logins name the account, bounded and with control characters escaped;
    /// throttling is a warning too.
    @Test func trustedRequestIDsAndLoginWarningsInText() async throws {
        let directory = try TemporaryDirectory()
        let server = try ServerProcess(
            arguments: ["serve", "--db", "sqlite:" + directory.path + "/s.db", "--port", "0", "--trusted-proxy", "127.0.0.1"],
            log: directory.path)
        defer { server.stop() }
        let base = try await server.waitForAddress()
        let kept = try await HTTP.send("GET", base + "/health", headers: ["X-Request-Id": "proxy-req.42"])
        #expect(kept.headers["X-Request-Id"] == "proxy-req.42")
        let longID = String(repeating: "a", count: 200)
        #expect(try await HTTP.send("GET", base + "/health", headers: ["X-Request-Id": longID]).headers["X-Request-Id"] != longID)
        let odd = try await HTTP.send("GET", base + "/health", headers: ["X-Request-Id": "a b<c>"])
        #expect(odd.headers["X-Request-Id"]?.count == 16)

        let forged = "mallory\n2026-01-01T00:00:00.000Z info forged"
        // Longer than any account name: 400 before any check, and no warning (nothing was tried).
        let long = try #require(
            String(
                data: try JSONSerialization.data(withJSONObject: ["username": String(repeating: "x", count: 300), "password": "nope nope"]),
                encoding: .utf8))
        #expect(try await HTTP.send("POST", base + "/.auth/login/custom", body: long).status == 400)
        let body = try #require(
            String(data: try JSONSerialization.data(withJSONObject: ["username": forged, "password": "nope nope"]), encoding: .utf8))
        for _ in 0..<7 { _ = try await HTTP.send("POST", base + "/.auth/login/custom", body: body) }
        #expect(try await server.terminate(signal: SIGTERM) == 0)
        let lines = server.log.split(separator: "\n").map(String.init)
        #expect(!lines.contains { $0.hasPrefix("2026-01-01") }, "a client forged a log line")
        let warnings = lines.filter { $0.contains(" warning ") }
        let failure = try #require(warnings.first { $0.contains("failed login for") }, "\(server.log)")
        #expect(failure.contains(#"failed login for "mallory\u000a2026-01-01"#), "\(failure)")
        #expect(failure.hasSuffix(#"info forged" from 127.0.0.1"#), "\(failure)")
        #expect(!server.log.contains(String(repeating: "x", count: 100)), "\(server.log)")
        #expect(warnings.contains { $0.contains("login throttled for \"mallory") && $0.contains("from 127.0.0.1") }, "\(server.log)")
        #expect(lines.contains { $0.contains("GET /health 200") && $0.contains("id=proxy-req.42") }, "\(server.log)")
    }

    /// Request lines are written in batches, yet reach the log while the server runs (a short
    /// timer writes them), every one of them, and before the server's own lines that follow them.
    @Test(arguments: ["text", "json"]) func requestLinesReachTheLogWhileServingAndBeforeTheStop(format: String) async throws {
        let (directory, server) = try Self.serverLogging(format)
        defer { withExtendedLifetime(directory) { server.stop() } }
        let base = try await server.waitForAddress()
        _ = try await HTTP.send("GET", base + "/health?first=1")
        #expect(try await server.waitForLog("/health?first=1"), "\(server.log)")
        let requests = 300
        for number in 0..<requests { _ = try await HTTP.send("GET", base + "/health?n=\(number)") }
        #expect(try await server.terminate(signal: SIGTERM) == 0)

        let lines = server.log.split(separator: "\n")
        if format == "json" { #expect(Self.jsonLines(server.log).count == lines.count) }
        let numbers = lines.compactMap { line in
            line.firstRange(of: "/health?n=").map { Int(line[$0.upperBound...].prefix { $0.isNumber }) ?? -1 }
        }
        #expect(numbers == Array(0..<requests), "every request line, in order")
        let stopping = try #require(lines.firstIndex { $0.contains("stopping on SIGTERM") }, "\(server.log)")
        let last = try #require(lines.lastIndex { $0.contains("/health?n=") })
        #expect(last < stopping, "\(server.log)")
    }

    /// A token sent where a path or query value stands (a table name, an id, a `$filter` value,
    /// partly percent-encoded) never reaches the log, in either format.
    @Test(arguments: ["text", "json"]) func aTokenInThePathIsRedacted(format: String) async throws {
        let (directory, server) = try Self.serverLogging(format)
        defer { withExtendedLifetime(directory) { server.stop() } }
        let base = try await server.waitForAddress()
        // Shaped as the server's tokens: 43 characters of base64url.
        let token = "Ab3-_" + String(repeating: "xY7", count: 12) + "Qz"
        #expect(token.count == 43)
        let encoded = "%41" + token.dropFirst()
        for path in [
            "/tables/\(token)", "/tables/todo/\(token)", "/tables/todo?$filter=text%20eq%20'\(token)'", "/tables/todo/\(encoded)",
            "/tables/todo?$filter=id%20eq%20'\(encoded)'",
        ] {
            _ = try await HTTP.send("GET", base + path)
        }
        // A long id that is no token stays readable.
        let digest = String(repeating: "0123456789abcdef", count: 4)
        _ = try await HTTP.send("GET", base + "/tables/todo/" + digest)
        #expect(try await server.terminate(signal: SIGTERM) == 0)

        let log = server.log
        #expect(!log.contains(token) && !log.contains(String(token.dropFirst())), "a token reached the log:\n\(log)")
        #expect(log.components(separatedBy: "REDACTED").count - 1 >= 5, "\(log)")
        #expect(log.contains("/tables/todo/\(digest)"), "\(log)")
        if format == "json" { #expect(Self.jsonLines(log).count > 5) }
    }

    /// With --log-format json (on the command line or in the config file), a fatal start-up error
    /// is a line of the JSON log too, and the exit status stays the error's.
    @Test func fatalStartUpErrorIsAJSONLine() async throws {
        let directory = try TemporaryDirectory()
        let missing = try await TSyncProcess.run(
            [
                "serve", "--db", "sqlite:s.db", "--no-auth", "--port", "0", "--log-format", "json", "--tls-cert", "none.pem",
                "--tls-key", "none.key",
            ], in: directory.path)
        #expect(missing.status == 66, "\(missing)")
        let line = try #require(Self.jsonLines(missing.stderr).last, "\(missing)")
        #expect(line["level"] == .string("error") && line["time"]?.stringValue != nil, "\(line)")
        #expect(line["message"]?.stringValue?.contains("none.pem does not exist") == true, "\(line)")
        #expect(!missing.stderr.contains("tsync: error:"), "\(missing)")

        let config = directory.path + "/serve.toml"
        try "log-format = \"json\"\nmax-top = 0\n".write(toFile: config, atomically: true, encoding: .utf8)
        let refused = try await TSyncProcess.run(["serve", "--config", config, "--db", "sqlite:s.db"], in: directory.path)
        #expect(refused.status == 78, "\(refused)")
        let refusal = try #require(Self.jsonLines(refused.stderr).last, "\(refused)")
        #expect(refusal["message"]?.stringValue?.hasSuffix("line 2: max-top: --max-top must be at least 1 (got 0)") == true, "\(refusal)")
        // The command line's format wins over the file's, for the error too.
        let text = try await TSyncProcess.run(["serve", "--config", config, "--log-format", "text"], in: directory.path)
        #expect(text.status == 78 && text.stderr.hasPrefix("tsync: error:"), "\(text)")
    }

    /// Durations in one form everywhere: serve's flags and config file and `user token --ttl` all
    /// take `90s`, `15m`, `12h`, `30d`, and a bare number of seconds as before.
    @Test func durationsInOneFormOnFlagsAndConfigFile() async throws {
        let directory = try TemporaryDirectory()
        let database = "sqlite:" + directory.path + "/s.db"
        let server = try ServerProcess(
            arguments: ["serve", "--db", database, "--port", "0", "--token-ttl", "2d", "--header-timeout", "15s", "--idle-timeout", "2m"],
            log: directory.path)
        defer { server.stop() }
        #expect(try await HTTP.send("GET", try await server.waitForAddress() + "/health").status == 200)
        #expect(try await server.terminate(signal: SIGTERM) == 0)
        #expect(server.log.contains("tokens live 172800 s"), "\(server.log)")
        // Accounts required and none in the database: said at start-up, with how to add one.
        #expect(
            server.log.contains(
                " warning no accounts yet, so no one can log in: add one with `tsync user add NAME --db \(database)`"),
            "\(server.log)")

        let add = try await TSyncProcess.run(
            ["user", "add", "ci", "--password-stdin", "--db", database], in: directory.path, stdin: "a long enough password\n")
        #expect(add.status == 0, "\(add)")
        let config = directory.path + "/serve.toml"
        try "db = \"\(database)\"\nport = 0\ntoken-ttl = \"90m\"\nquery-timeout = 30\n".write(
            toFile: config, atomically: true, encoding: .utf8)
        let fromFile = try ServerProcess(arguments: ["serve", "--config", config], log: directory.path)
        defer { fromFile.stop() }
        #expect(try await HTTP.send("GET", try await fromFile.waitForAddress() + "/health").status == 200)
        #expect(try await fromFile.terminate(signal: SIGTERM) == 0)
        #expect(fromFile.log.contains("tokens live 5400 s"), "\(fromFile.log)")
        #expect(!fromFile.log.contains("no accounts yet"), "an account was added: \(fromFile.log)")

        let bad = try await TSyncProcess.run(["serve", "--db", database, "--token-ttl", "1.5h"], in: directory.path)
        #expect(bad.status == 64 && bad.stderr.contains("give a number and a unit, e.g. 90s, 15m, 12h or 30d"), "\(bad)")
        try "token-ttl = \"soon\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        let badFile = try await TSyncProcess.run(["serve", "--config", config, "--db", database], in: directory.path)
        #expect(badFile.status == 78 && badFile.stderr.contains("line 1: token-ttl:"), "\(badFile)")

        for (ttl, status) in [("86400", Int32(0)), ("36h", 0), ("30s", 64), ("367d", 64)] {
            let mint = try await TSyncProcess.run(["user", "token", "ci", "--ttl", ttl, "--db", database], in: directory.path)
            #expect(mint.status == status, "--ttl \(ttl): \(mint)")
        }
    }

    @Test func startupSaysItCreatedTheDatabase() async throws {
        let directory = try TemporaryDirectory()
        // --per-user with --no-auth is refused before anything is created.
        let refused = try await TSyncProcess.run(
            ["serve", "--no-auth", "--port", "0", "--per-user", "x", "--db", "sqlite:new.db"], in: directory.path)
        #expect(refused.status == 64)
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/new.db"))

        let created = try ServerProcess(
            arguments: [
                "serve", "--port", "0", "--per-user", "notes", "--index", "todo.n", "--db", "sqlite:" + directory.path + "/new.db",
            ],
            log: directory.path)
        defer { created.stop() }
        _ = try await created.waitForAddress()
        #expect(try await created.terminate(signal: SIGINT) == 0)
        let log = created.log
        #expect(log.contains("info created database at \(directory.path)/new.db\n"), "\(log)")
        #expect(log.contains("info per-user tables: notes\n") && log.contains("info indexes: todo.n\n"), "\(log)")
        #expect(log.contains("info stopping on SIGINT: waiting for 0 requests in flight\n"), "\(log)")
        #expect(log.hasSuffix(" info stopped\n"), "\(log)")

        let again = try ServerProcess(
            arguments: ["serve", "--port", "0", "--db", "sqlite:" + directory.path + "/new.db"], log: directory.path)
        defer { again.stop() }
        _ = try await again.waitForAddress()
        #expect(!again.log.contains("created database"), "\(again.log)")
    }

    /// SIGTERM while a request is under way: the log says it waits for it, and it is answered.
    @Test func shutdownWaitsForRequestsInFlight() async throws {
        let directory = try TemporaryDirectory()
        let server = try ServerProcess(
            arguments: ["serve", "--no-auth", "--port", "0", "--db", "sqlite:" + directory.path + "/s.db"], log: directory.path)
        defer { server.stop() }
        let base = try await server.waitForAddress()
        // A body that arrives slowly keeps its request in flight.
        let port = try #require(base.split(separator: ":").last.flatMap { Int($0) })
        let socket = try RawSocket(port: port)
        defer { socket.close() }
        let body = #"{"id":"slow"}"#
        // The request is under way once the server answers its `Expect: 100-continue`.
        await #expect(
            socket.write(
                "POST /tables/todo HTTP/1.1\r\nHost: x\r\nZUMO-API-VERSION: 2.0.0\r\nContent-Type: application/json\r\n"
                    + "Expect: 100-continue\r\nContent-Length: \(body.utf8.count)\r\n\r\n"))
        #expect(await socket.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 100"))
        await #expect(socket.write(String(body.prefix(6))))
        // `100 Continue` comes from the connection guard, when the head arrives, before the
        // request reaches the middleware that counts it; nothing outside shows that moment, so
        // a short settle (on a loaded machine the count once read 0 right after the 100).
        try await Task.sleep(for: .milliseconds(500))
        server.send(signal: SIGTERM)
        #expect(try await server.waitForLog("stopping on SIGTERM"), "\(server.log)")
        await #expect(socket.write(String(body.dropFirst(6))))
        let answer = await socket.readToEnd()
        #expect(answer.hasPrefix("HTTP/1.1 201"), "\(answer)")
        #expect(try await server.terminate(signal: SIGTERM) == 0)
        #expect(server.log.contains("stopping on SIGTERM: waiting for 1 request in flight"), "\(server.log)")
    }

    @Test func metricsCountWithTemplatesAndStayBounded() async throws {
        let directory = try TemporaryDirectory()
        let plain = try ServerProcess(
            arguments: ["serve", "--no-auth", "--port", "0", "--db", "sqlite:" + directory.path + "/p.db"], log: directory.path)
        defer { plain.stop() }
        #expect(try await HTTP.send("GET", try await plain.waitForAddress() + "/metrics").status == 404, "off without --metrics")

        let server = try ServerProcess(
            arguments: ["serve", "--no-auth", "--metrics", "--port", "0", "--db", "sqlite:" + directory.path + "/s.db"], log: directory.path
        )
        defer { server.stop() }
        let base = try await server.waitForAddress()
        for n in 0..<3 {
            #expect(try await HTTP.send("POST", base + "/tables/todo", body: #"{"id":"r\#(n)"}"#).status == 201)
        }
        #expect(try await HTTP.send("GET", base + "/tables/todo").status == 200)
        #expect(try await HTTP.send("GET", base + "/tables/todo/r1").status == 200)
        let batch =
            #"{"operations":[{"method":"POST","table":"todo","item":{"id":"b1"}},{"method":"POST","table":"todo","item":{"id":"b2"}}]}"#
        let batched = try await HTTP.send("POST", base + "/tables/$batch", body: batch)
        #expect(batched.status == 200, "\(batched.body)")
        let first = try await HTTP.send("GET", base + "/metrics")
        #expect(first.status == 200)
        #expect(first.headers["Content-Type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        let text = first.body
        #expect(text.contains(#"tsync_http_requests_total{method="POST",route="/tables/{table}",status="201"} 3"#), "\(text)")
        #expect(text.contains(#"tsync_http_requests_total{method="GET",route="/tables/{table}/{id}",status="200"} 1"#), "\(text)")
        #expect(text.contains("tsync_records_written_total 5\n"), "\(text)")
        #expect(text.contains("tsync_records_read_total 4\n"), "3 in the page, 1 alone: \(text)")
        #expect(text.contains("tsync_write_batch_size_count 4\n") && text.contains(#"tsync_write_batch_size_bucket{le="1"} 3"#), "\(text)")
        #expect(text.contains("tsync_open_connections "), "\(text)")
        #expect(text.contains(#"tsync_http_request_duration_seconds_bucket{method="POST",route="/tables/{table}",le="+Inf"} 3"#), "\(text)")

        // A hostile client asks for many distinct paths, tables and methods: the series stay the same.
        for n in 0..<300 {
            _ = try await HTTP.send(n % 3 == 0 ? "PROPFIND" : "GET", base + "/random\(n)/path?x=\(n)")
            _ = try await HTTP.send("GET", base + "/tables/t\(n)/id\(n)")
        }
        let warm = try await HTTP.send("GET", base + "/metrics").body
        for n in 300..<600 {
            _ = try await HTTP.send(n % 3 == 0 ? "PROPFIND" : "GET", base + "/random\(n)/path?x=\(n)")
            _ = try await HTTP.send("GET", base + "/tables/t\(n)/id\(n)")
        }
        let after = try await HTTP.send("GET", base + "/metrics").body
        let series = { (text: String) in text.split(separator: "\n").filter { !$0.hasPrefix("#") }.count }
        #expect(series(after) == series(warm), "the series grew with the paths asked for")
        #expect(!after.contains("random") && !after.contains("t599"), "\(after)")
        #expect(after.contains(#"route="unmatched""#) && after.contains(#"method="other""#), "\(after)")
    }

    /// `/ready` follows the database: 503 while it is gone (a SQLite file moved away under the
    /// running server, a PostgreSQL database that stops taking connections and drops the
    /// server's), while `/health` (liveness) still answers; 200 once it is back.
    @Test(arguments: ServerBackend.available) func readyFollowsTheDatabase(backend: ServerBackend) async throws {
        let directory = try TemporaryDirectory()
        try await backend.withServer(in: directory) { server, base, db in
            let ready = try await HTTP.send("GET", base + "/ready")
            #expect(ready.status == 200 && ready.body == #"{"status":"ready"}"#, "\(ready.body)")
            let (takeAway, giveBack) = try Self.outage(of: db, backend)
            try await takeAway()
            // A look is reused for a second (`ReadinessCheck`): asked again until it is new.
            let gone = try await eventually {
                try await HTTP.send("GET", base + "/ready")
            } until: {
                $0.status != 200
            }
            #expect(gone.status == 503, "\(gone.body)")
            #expect(gone.body == #"{"error":"the database does not answer","status":"unavailable"}"#, "\(gone.body)")
            #expect(!gone.body.contains(directory.path), "a path stays in the log")
            #expect(try await HTTP.send("GET", base + "/health").status == 200)
            #expect(server.log.contains("warning not ready: the database does not answer"), "\(server.log)")
            try await giveBack()
            let back = try await eventually { try await HTTP.send("GET", base + "/ready").status == 200 }
            #expect(back, "ready again once the database is back: \(server.log)")
            #expect(try await server.terminate(signal: SIGTERM) == 0)
        }
    }

    /// How the database behind `db` goes away under a running server, and comes back.
    private static func outage(
        of db: String, _ backend: ServerBackend
    ) throws -> (takeAway: () async throws -> Void, giveBack: () async throws -> Void) {
        switch backend {
        case .sqlite:
            // Writes would go to a file no later start opens: not ready.
            let path = String(db.dropFirst("sqlite:".count))
            return (
                { try FileManager.default.moveItem(atPath: path, toPath: path + ".moved") },
                { try FileManager.default.moveItem(atPath: path + ".moved", toPath: path) }
            )
        case .postgres:
            let admin = try #require(PostgresFixture.adminURL)
            let name = String(db[db.index(after: try #require(db.lastIndex(of: "/")))...])
            return (
                {
                    try await PostgresFixture.psql(
                        admin,
                        "ALTER DATABASE \(name) ALLOW_CONNECTIONS false; "
                            + "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)'")
                },
                { try await PostgresFixture.psql(admin, "ALTER DATABASE \(name) ALLOW_CONNECTIONS true") }
            )
        }
    }

    @Test func configFileSetsFlagsAndTheCommandLineWins() async throws {
        let directory = try TemporaryDirectory()
        let config = directory.path + "/serve.toml"
        try """
        # tsync serve settings
        db = "sqlite:\(directory.path)/c.db"   # the database
        port = 0
        no-auth = true
        max-top = 5
        index = [
          "todo.n",  # trailing commas are fine
        ]
        log-format = 'json'
        metrics = true

        """.write(toFile: config, atomically: true, encoding: .utf8)
        let server = try ServerProcess(arguments: ["serve", "--config", config, "--max-top", "7"], log: directory.path)
        defer { server.stop() }
        let base = try await server.waitForAddress()
        #expect(try await HTTP.send("GET", base + "/tables/todo?$top=7").status == 200, "the command line's --max-top wins")
        #expect(try await HTTP.send("GET", base + "/tables/todo?$top=8").status == 400)
        #expect(try await HTTP.send("GET", base + "/metrics").status == 200)
        #expect(try await server.terminate(signal: SIGTERM) == 0)
        let messages = Self.jsonLines(server.log).compactMap { $0["message"]?.stringValue }
        #expect(messages.contains("indexes: todo.n") && messages.contains { $0.hasPrefix("auth: none") }, "\(messages)")
        #expect(messages.contains { $0.hasPrefix("limits: max-top 7,") }, "\(messages)")
    }

    /// The process's side of a bad config file: exit 78, the message on stderr naming the file
    /// and line, nothing created. Every mistake the reader and serve's checks refuse is tested
    /// in-process (`ServeConfigFileTests`).
    @Test func badConfigFilesExit78NamingLineAndKey() async throws {
        let directory = try TemporaryDirectory()
        let cases: [(text: String, status: Int32, words: String)] = [
            (
                "port = 0\ncolour = \"blue\"\n", 78,
                #"line 2: unknown key "colour"; the keys are serve's long flag names: access, body-timeout,"#
            ),
            ("max-top = 0\n", 78, "line 1: max-top: --max-top must be at least 1 (got 0)"),
        ]
        for (index, item) in cases.enumerated() {
            let config = directory.path + "/bad\(index).toml"
            try item.text.write(toFile: config, atomically: true, encoding: .utf8)
            let result = try await TSyncProcess.run(
                ["serve", "--config", config, "--db", "sqlite:" + directory.path + "/x.db"], in: directory.path)
            #expect(result.status == item.status, "\(item.text): \(result.stderr)")
            #expect(result.stderr.contains("\(config) \(item.words)"), "\(item.text): \(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/x.db"), "nothing was created")
        let missing = try await TSyncProcess.run(["serve", "--config", directory.path + "/none.toml"], in: directory.path)
        #expect(missing.status == 66, "\(missing.stderr)")
        #expect(missing.stderr.contains("cannot read the config file"), "\(missing.stderr)")
        // A bad flag on the command line stays a usage error (64), as without --config.
        try "port = 0\n".write(toFile: directory.path + "/ok.toml", atomically: true, encoding: .utf8)
        let usage = try await TSyncProcess.run(["serve", "--config", directory.path + "/ok.toml", "--max-top", "0"], in: directory.path)
        #expect(usage.status == 64, "\(usage.stderr)")
    }
}
