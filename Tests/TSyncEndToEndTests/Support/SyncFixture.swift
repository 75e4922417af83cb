import Foundation
import Synchronization
import Testing
import TSyncModel

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A `tsync serve` on loopback for the sync tests, over a SQLite file in a temporary directory,
/// plus plain HTTP checks that do not go through tsync. Builds on `ServerProcess`, `HTTP` and
/// `TSyncProcess`.
final class ServeFixture: Sendable {
    let directory: TemporaryDirectory
    let databasePath: String
    let authenticated: Bool
    /// More `tsync serve` options, e.g. `--max-batch 0` for a server without the batch route.
    let options: [String]
    private struct Running {
        var server: ServerProcess?
        var url = ""
    }
    private let running = Mutex(Running())
    /// The server process; nil after `kill` until `start`.
    var server: ServerProcess? { running.withLock { $0.server } }
    /// `http://127.0.0.1:PORT` of the server (of the last one started).
    var url: String { running.withLock { $0.url } }
    /// The port of `url`, for a test that speaks to the server over a socket of its own.
    var port: Int {
        get throws { try #require(URLComponents(string: url)?.port) }
    }

    /// Starts a server; `authenticated` servers get the account alice / `ServeFixture.password`.
    init(authenticated: Bool = false, options: [String] = []) async throws {
        directory = try TemporaryDirectory()
        databasePath = (directory.path as NSString).appendingPathComponent("server.db")
        self.authenticated = authenticated
        self.options = options
        if authenticated {
            let add = try await TSyncProcess.run(
                ["user", "add", "alice", "--password-stdin", "--db", "sqlite:" + databasePath], in: directory.path,
                stdin: Self.password + "\n")
            #expect(add.status == 0, "tsync user add: \(add.stderr)")
        }
        try await start()
    }

    static let password = "correct horse battery staple"

    /// Starts (or restarts, after `kill`) the server on the same database; the port may change.
    func start() async throws {
        var arguments = ["serve", "--db", "sqlite:" + databasePath, "--port", "0"] + options
        if !authenticated { arguments.append("--no-auth") }
        let server = try ServerProcess(arguments: arguments, log: directory.path)
        running.withLock { $0 = Running(server: server) }
        let url = try await server.waitForAddress()
        running.withLock { $0.url = url }
    }

    /// SIGKILL: the server dies mid-request, as in a crash. Returns once it is gone.
    func kill() async {
        await server?.kill(signal: SIGKILL)
        running.withLock { $0.server = nil }
    }

    deinit { server?.stop() }

    /// A token for plain HTTP checks against an authenticated server.
    func token() async throws -> String? {
        guard authenticated else { return nil }
        let login = try await HTTP.send(
            "POST", url + "/.auth/login/custom", body: #"{"username":"alice","password":"\#(Self.password)"}"#)
        #expect(login.status == 200)
        return try JSONParser.parse(login.body).objectValue?["authenticationToken"]?.stringValue
    }

    /// A series of the server's `/metrics` (which needs `--metrics`), nil when it has none.
    func metric(_ name: String) async throws -> Int? {
        try await HTTP.metric(name, at: url)
    }

    /// Every live record of a table on the server, read with plain HTTP, page by page.
    func records(_ table: String) async throws -> [String: [String: JSONValue]] {
        let token = try await token()
        var records: [String: [String: JSONValue]] = [:]
        var skip = 0
        while true {
            let reply = try await HTTP.send(
                "GET", url + "/tables/\(table)?$orderby=id&$top=1000&$skip=\(skip)", token: token)
            #expect(reply.status == 200, "GET /tables/\(table): \(reply.status) \(reply.body)")
            guard reply.status == 200, case .array(let items) = try JSONParser.parse(reply.body) else { return records }
            for item in items {
                if let object = item.objectValue, let id = object["id"]?.stringValue { records[id] = object }
            }
            if items.count < 1000 { return records }
            skip += items.count
        }
    }

    /// One record, or nil when the server has none.
    func record(_ table: String, _ id: String) async throws -> [String: JSONValue]? {
        let reply = try await HTTP.send("GET", url + "/tables/\(table)/\(id)", token: try await token())
        guard reply.status == 200 else { return nil }
        return try JSONParser.parse(reply.body).objectValue
    }

    /// Runs SQL on the server's database with the sqlite3 shell (the server keeps running: WAL).
    func sql(_ statements: String) async throws {
        let (status, errors) = try await ChildProcess.run(
            "/usr/bin/sqlite3", ["-bail", "-cmd", ".timeout 5000", databasePath, statements])
        #expect(status == 0, "sqlite3: \(errors)")
    }

    /// `count` shared records `r1`… of `table` (plus `seed`, inserted through the server so the
    /// table exists), each with one field `s` of `size` x's, written straight into the database.
    func fill(_ table: String, count: Int, size: Int) async throws {
        #expect(try await HTTP.send("POST", url + "/tables/\(table)", body: #"{"id": "seed"}"#).status == 201)
        try await sql(
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(count))
            INSERT INTO t_\(table) (id, created_at, updated_at, version, deleted, owner, body)
            SELECT 'r' || i, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', 'v', 0, NULL,
                json_object('s', replace(printf('%\(size)s', ''), ' ', 'x')) FROM n;
            """)
    }
}

/// A `tsync serve` process whose log goes to a file (no pipe to fill up).
final class ServerProcess: Sendable {
    private let process: ChildProcess
    private let logPath: String

    init(arguments: [String], log directory: String) throws {
        logPath = (directory as NSString).appendingPathComponent("serve-\(UUID().uuidString).log")
        process = try ChildProcess(TSyncBinary.path, arguments, stdout: logPath, stderr: logPath)
    }

    var log: String { String(decoding: FileManager.default.contents(atPath: logPath) ?? Data(), as: UTF8.self) }

    /// The server's resident memory in bytes (`VmRSS` of /proc/PID/status), nil when unreadable.
    var residentBytes: Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(process.pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return nil }
        return kilobytes << 10
    }

    /// Whether the log comes to contain `text` within `timeout` (false at once when the process
    /// has ended without writing it): a wait for what the server says it did, not for a time.
    @discardableResult
    func waitForLog(_ text: String, timeout: Duration = .seconds(30)) async throws -> Bool {
        try await eventually(timeout: timeout) { log.contains(text) || !process.isRunning } && log.contains(text)
    }

    /// `http://HOST:PORT` (or `https://`) from the "listening on" log line, within 30 s.
    func waitForAddress() async throws -> String {
        let address = { () -> String? in
            let log = self.log
            guard let range = log.range(of: "listening on http") else { return nil }
            let rest = log[range.lowerBound...].dropFirst("listening on ".count)
            guard rest.contains(where: \.isNewline) else { return nil }
            return String(rest.prefix { !$0.isWhitespace && $0 != "\"" })
        }
        let found = try await eventually(every: .milliseconds(50), { address() }, until: { $0 != nil || !process.isRunning })
        guard let found = found ?? address() else {
            throw TSyncError.failure("tsync serve did not report its address; its log:\n\(log)")
        }
        return found
    }

    /// Sends `signal` and waits (at most `timeout` seconds) for the exit status. A shutdown is
    /// clean only when the process exits by itself, so an end by signal is recorded as an issue.
    func terminate(signal: Int32, timeout: Duration = .seconds(15)) async throws -> Int32 {
        process.signal(signal)
        guard await process.wait(timeout: Double(timeout.components.seconds)), let status = process.status else {
            throw TSyncError.failure("tsync serve did not stop after signal \(signal)")
        }
        #expect(!process.endedBySignal, "tsync serve ended by a signal: \(status)")
        return status
    }

    /// Sends `signal` without waiting.
    func send(signal: Int32) { process.signal(signal) }

    /// Sends `signal` and waits for the process to end.
    func kill(signal: Int32) async {
        process.signal(signal)
        await process.wait()
    }

    /// SIGTERM, without waiting (for `defer` and `deinit`); `ChildProcess` reaps it.
    func stop() { process.signal(SIGTERM) }

    deinit { stop() }
}

/// Plain HTTP requests to a `tsync serve`, with the headers a client sends.
enum HTTP {
    struct Reply {
        var status: Int
        var body: String
        var headers: [String: String] = [:]
    }

    /// Sends one request (at most 15 s); `token` goes in X-ZUMO-AUTH, `body` as JSON, `headers`
    /// as given.
    static func send(
        _ method: String, _ url: String, headers: [String: String] = [:], body: String? = nil, token: String? = nil
    ) async throws -> Reply {
        var request = URLRequest(url: try #require(URL(string: url)), timeoutInterval: 15)
        request.httpMethod = method
        request.setValue("2.0.0", forHTTPHeaderField: "ZUMO-API-VERSION")
        if let token { request.setValue(token, forHTTPHeaderField: "X-ZUMO-AUTH") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let body {
            request.httpBody = Data(body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        return try await withCheckedThrowingContinuation { continuation in
            URLSession.shared.dataTask(with: request) { data, response, error in
                if let error {
                    continuation.resume(throwing: error)
                } else {
                    let http = response as? HTTPURLResponse
                    var fields: [String: String] = [:]
                    for (name, value) in http?.allHeaderFields ?? [:] {
                        if let name = name as? String, let value = value as? String { fields[name] = value }
                    }
                    continuation.resume(
                        returning: Reply(
                            status: http?.statusCode ?? 0, body: String(decoding: data ?? Data(), as: UTF8.self), headers: fields))
                }
            }.resume()
        }
    }
}

extension HTTP {
    /// The value of series `name` (a whole number) in `/metrics` of the server at `base`; nil when
    /// the server does not show it.
    static func metric(_ name: String, at base: String, token: String? = nil) async throws -> Int? {
        let reply = try await send("GET", base + "/metrics", token: token)
        let line = reply.body.split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { $0.split(separator: " ").last }.flatMap { Int($0) ?? Double($0).map { Int($0) } }
    }
}

/// JSON helpers for tsync's `--json` output.
enum JSONOutput {
    static func object(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: JSONValue] {
        let value = try JSONParser.parse(text)
        return try #require(value.objectValue, "expected a JSON object: \(text)", sourceLocation: sourceLocation)
    }

    static func array(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [JSONValue] {
        guard case .array(let elements) = try JSONParser.parse(text) else {
            Issue.record("expected a JSON array: \(text)", sourceLocation: sourceLocation)
            return []
        }
        return elements
    }

    static func int(_ value: JSONValue?) -> Int? {
        if case .int(let number)? = value { return Int(number) }
        return nil
    }
}
