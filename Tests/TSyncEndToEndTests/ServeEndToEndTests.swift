import Foundation
import Testing
import TSyncModel

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Runs the built `tsync` binary: accounts with `tsync user`, `tsync serve --port 0`, a login over
/// HTTP, and a clean exit on SIGTERM. Self-contained (no shared support code) on purpose.
@Suite(.serialized) struct ServeEndToEndTests {
    @Test func userAddServeLoginAndCleanShutdown() async throws {
        let directory = try ServeFixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let db = "sqlite:" + directory.appendingPathComponent("server.db").path

        let add = try ServeFixture.run(["user", "add", "alice", "--password-stdin", "--db", db], stdin: "alice password\n")
        #expect(add.status == 0, "\(add.stderr)")
        let list = try ServeFixture.run(["user", "list", "--db", db])
        #expect(list.stdout == "alice\n")
        let duplicate = try ServeFixture.run(["user", "add", "alice", "--password-stdin", "--db", db], stdin: "other password\n")
        #expect(duplicate.status == 65, "\(duplicate.stderr)")
        #expect(duplicate.stderr.contains("already exists"))

        let server = try ServeFixture.Server(arguments: ["serve", "--db", db, "--port", "0"])
        defer { server.stop() }
        let base = try await server.waitForAddress()
        #expect(base.hasPrefix("http://127.0.0.1:"))

        #expect(try await ServeFixture.http("GET", base + "/health").status == 200)
        #expect(try await ServeFixture.http("GET", base + "/tables/todo").status == 401)
        let refused = try await ServeFixture.http("POST", base + "/.auth/login/custom", body: #"{"username":"alice","password":"nope nope"}"#)
        #expect(refused.status == 401)
        let login = try await ServeFixture.http("POST", base + "/.auth/login/custom", body: #"{"username":"alice","password":"alice password"}"#)
        #expect(login.status == 200)
        let token = try #require(try JSONParser.parse(login.body).objectValue?["authenticationToken"]?.stringValue)
        let insert = try await ServeFixture.http("POST", base + "/tables/todo", body: #"{"id":"e2e","text":"hello"}"#, token: token)
        #expect(insert.status == 201)
        let read = try await ServeFixture.http("GET", base + "/tables/todo", token: token)
        #expect(read.status == 200)
        #expect(try JSONParser.parse(read.body) == .array([try JSONParser.parse(insert.body)]))

        let status = try await server.terminate(signal: SIGTERM)
        #expect(status == 0)
        let log = server.stderr
        #expect(log.contains("GET /tables/todo 200"))
        #expect(!log.contains(token), "the token never reaches the log")
    }

    @Test func sigintAlsoShutsDownCleanly() async throws {
        let directory = try ServeFixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let db = "sqlite:" + directory.appendingPathComponent("server.db").path
        let server = try ServeFixture.Server(arguments: ["serve", "--db", db, "--port", "0", "--no-auth"])
        defer { server.stop() }
        let base = try await server.waitForAddress()
        #expect(try await ServeFixture.http("GET", base + "/tables/todo").status == 200)
        #expect(try await server.terminate(signal: SIGINT) == 0)
    }

    @Test func refusalsExitWithTheDocumentedCodes() throws {
        let noAuth = try ServeFixture.run(["serve", "--no-auth", "--host", "0.0.0.0", "--port", "0", "--db", "sqlite:/nonexistent/x.db"])
        #expect(noAuth.status == 64)
        #expect(noAuth.stderr.contains("--insecure"))
        let postgres = try ServeFixture.run(["serve", "--db", "postgres://localhost/tsync", "--port", "0"])
        #expect(postgres.status == 64)
        #expect(postgres.stderr.contains("not supported yet"))
        let directory = try ServeFixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let db = "sqlite:" + directory.appendingPathComponent("server.db").path
        let noDatabase = try ServeFixture.run(["user", "list", "--db", db])
        #expect(noDatabase.status == 65)
        #expect(noDatabase.stderr.contains("no server database"))
        #expect(!FileManager.default.fileExists(atPath: String(db.dropFirst("sqlite:".count))))
        #expect(try ServeFixture.run(["user", "add", "carol", "--db", db], stdin: "carol password").status == 0)
        let missing = try ServeFixture.run(["user", "remove", "nobody", "--db", db])
        #expect(missing.status == 65)
        let short = try ServeFixture.run(["user", "add", "bob", "--db", db], stdin: "short\n")
        #expect(short.status == 65, "stdin is not a terminal, so the password is read from it")
        #expect(short.stderr.contains("too short"))
    }
}

/// Process and HTTP helpers for the tests above.
enum ServeFixture {
    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// The `tsync` binary: `TSYNC_BIN`, else next to the test bundle.
    static func binary() throws -> URL {
        if let path = ProcessInfo.processInfo.environment["TSYNC_BIN"] { return URL(fileURLWithPath: path) }
        var candidates: [URL] = Bundle.allBundles.map(\.bundleURL).filter { $0.pathExtension == "xctest" }
            .map { $0.deletingLastPathComponent() }
        candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent())
        for directory in candidates {
            var url = directory
            while url.path != "/" {
                let binary = url.appendingPathComponent("tsync")
                if FileManager.default.isExecutableFile(atPath: binary.path) { return binary }
                if url.pathExtension != "xctest" && url.lastPathComponent != "Contents" && url.lastPathComponent != "MacOS" { break }
                url = url.deletingLastPathComponent()
            }
        }
        throw TSyncError.failure("cannot find the tsync binary next to the tests; build it or set TSYNC_BIN")
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tsync-e2e-serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Runs `tsync` to completion (at most 60 s) with `stdin` piped in.
    static func run(_ arguments: [String], stdin: String = "") throws -> Output {
        let process = Process()
        process.executableURL = try binary()
        process.arguments = arguments
        let input = Pipe()
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        input.fileHandleForWriting.write(Data(stdin.utf8))
        try input.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(60)
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        while process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return Output(status: process.terminationStatus, stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self))
    }

    /// A running `tsync serve` whose stderr is collected as it comes.
    final class Server: @unchecked Sendable {
        private let process = Process()
        private let lock = NSLock()
        private var collected = Data()

        init(arguments: [String]) throws {
            process.executableURL = try ServeFixture.binary()
            process.arguments = arguments
            let errors = Pipe()
            process.standardError = errors
            process.standardOutput = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            errors.fileHandleForReading.readabilityHandler = { [weak self] handle in
                let data = handle.availableData
                guard let self, !data.isEmpty else { return }
                self.lock.withLock { self.collected.append(data) }
            }
            try process.run()
        }

        var stderr: String { lock.withLock { String(decoding: collected, as: UTF8.self) } }

        /// `http://HOST:PORT` from the "listening on" log line, within 30 s.
        func waitForAddress() async throws -> String {
            for _ in 0..<600 {
                let log = stderr
                if let range = log.range(of: "listening on http://") {
                    let rest = log[range.lowerBound...].dropFirst("listening on ".count)
                    if rest.contains(where: \.isNewline) { return String(rest.prefix { !$0.isWhitespace }) }
                }
                guard process.isRunning else { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            throw TSyncError.failure("tsync serve did not report its address; its log:\n\(stderr)")
        }

        /// Sends `signal` and waits (at most 15 s) for the exit status.
        func terminate(signal: Int32) async throws -> Int32 {
            kill(process.processIdentifier, signal)
            for _ in 0..<300 where process.isRunning { try await Task.sleep(for: .milliseconds(50)) }
            guard !process.isRunning else { throw TSyncError.failure("tsync serve did not stop after signal \(signal)") }
            #expect(process.terminationReason == .exit)
            return process.terminationStatus
        }

        func stop() {
            if process.isRunning {
                process.terminate()
                process.waitUntilExit()
            }
        }
    }

    struct HTTPReply {
        var status: Int
        var body: String
    }

    static func http(_ method: String, _ url: String, body: String? = nil, token: String? = nil) async throws -> HTTPReply {
        var request = URLRequest(url: try #require(URL(string: url)), timeoutInterval: 15)
        request.httpMethod = method
        request.setValue("2.0.0", forHTTPHeaderField: "ZUMO-API-VERSION")
        if let token { request.setValue(token, forHTTPHeaderField: "X-ZUMO-AUTH") }
        if let body {
            request.httpBody = Data(body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        return try await withCheckedThrowingContinuation { continuation in
            URLSession.shared.dataTask(with: request) { data, response, error in
                if let error {
                    continuation.resume(throwing: error)
                } else {
                    let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                    continuation.resume(returning: HTTPReply(status: status, body: String(decoding: data ?? Data(), as: UTF8.self)))
                }
            }.resume()
        }
    }
}
