import Foundation
import Testing
import TSyncModel

/// One SQLite file, one `tsync serve`: a second server on the file is refused (each would wake
/// only its own watchers), while `tsync user …` keeps working beside the server; and processes
/// that create the same new file at once are all safe.
@Suite struct SQLiteServeLockTests {
    @Test func aSecondServerOnTheFileIsRefusedAndUserCommandsStillWork() async throws {
        let directory = try TemporaryDirectory()
        let db = "sqlite:" + (directory.path as NSString).appendingPathComponent("server.db")
        let add = try await TSyncProcess.run(
            ["user", "add", "alice", "--password-stdin", "--db", db], in: directory.path, stdin: "alice password one\n")
        #expect(add.status == 0, "\(add)")
        let first = try ServerProcess(arguments: ["serve", "--db", db, "--port", "0"], log: directory.path)
        defer { first.stop() }
        let address = try await first.waitForAddress()

        let (second, took) = try await TSyncProcess.runTimed(["serve", "--db", db, "--port", "0"], in: directory.path)
        #expect(second.status == 1, "\(second)")
        #expect(second.stderr.contains("another tsync serve is serving"), "\(second.stderr)")
        #expect(second.stderr.contains("PostgreSQL"), "says what to use for several instances: \(second.stderr)")
        #expect(took < .seconds(30), "refused at start-up, not after a wait")

        // Short admin writes beside the server, which sees them at once.
        let other = try await TSyncProcess.run(
            ["user", "add", "bob", "--password-stdin", "--db", db], in: directory.path, stdin: "bob password two\n")
        #expect(other.status == 0, "\(other)")
        let list = try await TSyncProcess.run(["user", "list", "--db", db], in: directory.path)
        #expect(list.stdout == "alice\nbob\n", "\(list)")
        let login = try await HTTP.send("POST", address + "/.auth/login/custom", body: #"{"username":"bob","password":"bob password two"}"#)
        #expect(login.status == 200, "\(login.body)")

        // Once the first server has stopped, the file is free again.
        #expect(try await first.terminate(signal: SIGTERM) == 0)
        let third = try ServerProcess(arguments: ["serve", "--db", db, "--port", "0"], log: directory.path)
        defer { third.stop() }
        _ = try await third.waitForAddress()
        #expect(try await third.terminate(signal: SIGTERM) == 0)
    }

    /// Two `tsync user add` and two servers creating one new file at once, ten times over:
    /// every `user add` succeeds, one server serves, the other is refused by the lock, and no one
    /// meets the other's half-made schema.
    @Test func creatingOneNewFileAtOnceIsSafe() async throws {
        let directory = try TemporaryDirectory()
        for round in 0..<10 {
            let db = "sqlite:" + (directory.path as NSString).appendingPathComponent("new-\(round).db")
            async let first = TSyncProcess.run(
                ["user", "add", "a\(round)", "--password-stdin", "--db", db], in: directory.path, stdin: "a long enough password\n")
            async let second = TSyncProcess.run(
                ["user", "add", "b\(round)", "--password-stdin", "--db", db], in: directory.path, stdin: "a long enough password\n")
            for result in try await [first, second] {
                #expect(result.status == 0, "round \(round): \(result)")
                #expect(!result.stderr.contains("already exists"), "\(result.stderr)")
            }
            let list = try await TSyncProcess.run(["user", "list", "--db", db], in: directory.path)
            #expect(list.stdout == "a\(round)\nb\(round)\n", "\(list)")

            let servedDB = "sqlite:" + (directory.path as NSString).appendingPathComponent("served-\(round).db")
            let servers = try (0..<2).map { _ in
                try ServerProcess(arguments: ["serve", "--db", servedDB, "--port", "0", "--no-auth"], log: directory.path)
            }
            defer { for server in servers { server.stop() } }
            var serving = 0
            for server in servers {
                if (try? await server.waitForAddress()) != nil {
                    serving += 1
                } else {
                    #expect(server.log.contains("another tsync serve is serving"), "round \(round): \(server.log)")
                }
                #expect(!server.log.contains("already exists"), "round \(round): \(server.log)")
            }
            #expect(serving == 1, "round \(round)")
        }
    }
}
