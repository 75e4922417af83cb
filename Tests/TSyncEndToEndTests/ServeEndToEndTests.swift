import Foundation
import Testing
import TSyncModel

/// Runs the built `tsync` binary: accounts with `tsync user`, `tsync serve --port 0`, a login over
/// HTTP, and a clean exit on SIGTERM and SIGINT.
@Suite(.serialized) struct ServeEndToEndTests {
    @Test func userAddServeLoginAndCleanShutdown() async throws {
        let directory = try TemporaryDirectory()
        let db = "sqlite:" + (directory.path as NSString).appendingPathComponent("server.db")

        let add = try await TSyncProcess.run(
            ["user", "add", "alice", "--password-stdin", "--db", db], in: directory.path, stdin: "alice password\n")
        #expect(add.status == 0, "\(add.stderr)")
        let list = try await TSyncProcess.run(["user", "list", "--db", db], in: directory.path)
        #expect(list.stdout == "alice\n")
        let duplicate = try await TSyncProcess.run(
            ["user", "add", "alice", "--password-stdin", "--db", db], in: directory.path, stdin: "other password\n")
        #expect(duplicate.status == 65, "\(duplicate.stderr)")
        #expect(duplicate.stderr.contains("already exists"))

        let server = try ServerProcess(arguments: ["serve", "--db", db, "--port", "0"], log: directory.path)
        defer { server.stop() }
        let base = try await server.waitForAddress()
        #expect(base.hasPrefix("http://127.0.0.1:"))

        #expect(try await HTTP.send("GET", base + "/health").status == 200)
        #expect(try await HTTP.send("GET", base + "/tables/todo").status == 401)
        let refused = try await HTTP.send("POST", base + "/.auth/login/custom", body: #"{"username":"alice","password":"nope nope"}"#)
        #expect(refused.status == 401)
        let login = try await HTTP.send("POST", base + "/.auth/login/custom", body: #"{"username":"alice","password":"alice password"}"#)
        #expect(login.status == 200)
        let token = try #require(try JSONParser.parse(login.body).objectValue?["authenticationToken"]?.stringValue)
        let insert = try await HTTP.send("POST", base + "/tables/todo", body: #"{"id":"e2e","text":"hello"}"#, token: token)
        #expect(insert.status == 201)
        let read = try await HTTP.send("GET", base + "/tables/todo", token: token)
        #expect(read.status == 200)
        #expect(try JSONParser.parse(read.body) == .array([try JSONParser.parse(insert.body)]))

        let status = try await server.terminate(signal: SIGTERM)
        #expect(status == 0)
        let log = server.log
        #expect(log.contains("GET /tables/todo 200"))
        #expect(!log.contains(token), "the token never reaches the log")
    }

    /// SQLite's automatic checkpoint is off and the server checkpoints beside its writers
    /// (docs/DESIGN.md §10): 80 MB written in 80 batches leave the WAL under twice its 16 MiB
    /// bound at every step (with no checkpoint it holds all 80 MB), every record reads back, and
    /// SIGTERM still stops the server at once with 0.
    @Test func manyWritesKeepTheWALBounded() async throws {
        let directory = try TemporaryDirectory()
        let path = (directory.path as NSString).appendingPathComponent("server.db")
        let server = try ServerProcess(arguments: ["serve", "--db", "sqlite:" + path, "--port", "0", "--no-auth"], log: directory.path)
        defer { server.stop() }
        let base = try await server.waitForAddress()
        func walBytes() -> Int {
            ((try? FileManager.default.attributesOfItem(atPath: path + "-wal"))?[.size] as? Int) ?? 0
        }
        let text = String(repeating: "0123456789abcdef", count: 1250)  // 20 kB
        let batches = 80
        let perBatch = 50
        var largestWAL = 0
        for batch in 0..<batches {
            let operations = (0..<perBatch).map { n in
                #"{"method":"POST","table":"big","item":{"id":"b\#(batch)-\#(n)","text":"\#(text)"}}"#
            }
            let reply = try await HTTP.send(
                "POST", base + "/tables/$batch", body: #"{"atomic":true,"operations":[\#(operations.joined(separator: ","))]}"#)
            let created = reply.body.components(separatedBy: #""status":201"#).count - 1
            #expect(reply.status == 200 && created == perBatch, "\(reply.body.prefix(300))")
            largestWAL = max(largestWAL, walBytes())
        }
        #expect(largestWAL > 0, "the server writes through a WAL")
        #expect(largestWAL < 32 << 20, "largest WAL: \(largestWAL) bytes")

        var ids: Set<String> = []
        for skip in stride(from: 0, to: batches * perBatch, by: 1000) {
            let page = try await HTTP.send("GET", base + "/tables/big?$select=id,text&$orderby=id&$top=1000&$skip=\(skip)")
            guard case .array(let items) = try JSONParser.parse(page.body) else {
                Issue.record("not an array: \(page.body.prefix(300))")
                return
            }
            #expect(items.allSatisfy { $0.objectValue?["text"]?.stringValue == text })
            ids.formUnion(items.compactMap { $0.objectValue?["id"]?.stringValue })
        }
        let missing = Set((0..<batches).flatMap { batch in (0..<perBatch).map { "b\(batch)-\($0)" } }).subtracting(ids)
        #expect(ids.count == batches * perBatch && missing.isEmpty, "\(missing.count) missing, e.g. \(missing.sorted().prefix(3))")
        #expect(try await server.terminate(signal: SIGTERM) == 0)
    }

    @Test func sigintAlsoShutsDownCleanly() async throws {
        let directory = try TemporaryDirectory()
        let db = "sqlite:" + (directory.path as NSString).appendingPathComponent("server.db")
        let server = try ServerProcess(arguments: ["serve", "--db", db, "--port", "0", "--no-auth"], log: directory.path)
        defer { server.stop() }
        let base = try await server.waitForAddress()
        #expect(try await HTTP.send("GET", base + "/tables/todo").status == 200)
        #expect(try await server.terminate(signal: SIGINT) == 0)
    }

    /// `--index`: each declared index is logged at start-up (made with its table, created, or
    /// in place on a restart), one no longer declared is left in place, and filtered pages on it
    /// answer as without it.
    @Test func indexedFieldsAreLoggedAndKept() async throws {
        let directory = try TemporaryDirectory()
        let db = "sqlite:" + (directory.path as NSString).appendingPathComponent("server.db")
        let first = try ServerProcess(
            arguments: ["serve", "--db", db, "--port", "0", "--no-auth", "--index", "todo.n"], log: directory.path)
        defer { first.stop() }
        var base = try await first.waitForAddress()
        #expect(first.log.contains("index todo.n: the table has no records yet"), "\(first.log)")
        for n in 0..<20 {
            #expect(try await HTTP.send("POST", base + "/tables/todo", body: #"{"id":"r\#(n)","n":\#(n)}"#).status == 201)
        }
        let page = try await HTTP.send("GET", base + "/tables/todo?$filter=n%20ge%2015&$orderby=n%20desc")
        guard case .array(let items) = try JSONParser.parse(page.body) else {
            Issue.record("not an array: \(page.body)")
            return
        }
        #expect(items.compactMap { $0.objectValue?["id"]?.stringValue } == ["r19", "r18", "r17", "r16", "r15"])
        #expect(try await first.terminate(signal: SIGTERM) == 0)

        let second = try ServerProcess(
            arguments: ["serve", "--db", db, "--port", "0", "--no-auth", "--index", "todo.n", "--index", "todo.text"], log: directory.path)
        defer { second.stop() }
        base = try await second.waitForAddress()
        #expect(second.log.contains("index todo.n: in place") && second.log.contains("index todo.text: created"), "\(second.log)")
        #expect(try await second.terminate(signal: SIGTERM) == 0)

        let third = try ServerProcess(arguments: ["serve", "--db", db, "--port", "0", "--no-auth"], log: directory.path)
        defer { third.stop() }
        base = try await third.waitForAddress()
        #expect(third.log.contains("is no longer declared: left in place"), "\(third.log)")
        #expect(try await third.terminate(signal: SIGTERM) == 0)

        let invalid = try await TSyncProcess.run(["serve", "--db", db, "--port", "0", "--index", "todo"], in: directory.path)
        #expect(invalid.status == 64 && invalid.stderr.contains("--index todo") && invalid.stderr.contains("TABLE.FIELD"), "\(invalid)")
    }

    @Test func refusalsExitWithTheDocumentedCodes() async throws {
        let directory = try TemporaryDirectory()
        let noAuth = try await TSyncProcess.run(
            ["serve", "--no-auth", "--host", "0.0.0.0", "--port", "0", "--db", "sqlite:/nonexistent/x.db"], in: directory.path)
        #expect(noAuth.status == 64)
        #expect(noAuth.stderr.contains("--insecure"))
        let postgres = try await TSyncProcess.run(["serve", "--db", "postgres://localhost/tsync", "--port", "0"], in: directory.path)
        #expect(postgres.status == 64)
        #expect(postgres.stderr.contains("no user name"))
        let db = "sqlite:" + (directory.path as NSString).appendingPathComponent("server.db")
        let noDatabase = try await TSyncProcess.run(["user", "list", "--db", db], in: directory.path)
        #expect(noDatabase.status == 65)
        #expect(noDatabase.stderr.contains("no server database"))
        #expect(!FileManager.default.fileExists(atPath: String(db.dropFirst("sqlite:".count))))
        #expect(try await TSyncProcess.run(["user", "add", "carol", "--db", db], in: directory.path, stdin: "carol password").status == 0)
        let missing = try await TSyncProcess.run(["user", "remove", "nobody", "--db", db], in: directory.path)
        #expect(missing.status == 65)
        let short = try await TSyncProcess.run(["user", "add", "bob", "--db", db], in: directory.path, stdin: "short\n")
        #expect(short.status == 65, "stdin is not a terminal, so the password is read from it")
        #expect(short.stderr.contains("too short"))
    }
}
