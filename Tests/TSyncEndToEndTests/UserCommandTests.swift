import Foundation
import Testing
import TSyncModel

/// The `user` commands as an operator meets them. They read the server's `--config`
/// file (its `db`) as `serve` does and say which database they wrote to, so a token is not minted
/// into a database nobody serves unnoticed; a token the server does not know is not called
/// "expired"; a lockout is said in minutes and the operator can lift it; `user remove` and
/// `purge` follow one rule off a terminal; `whoami` and `user list` have `--json`.
@Suite(.serialized) struct UserCommandTests {
    @Test func theUserCommandsReadServesConfigFileAndSayWhichDatabase() async throws {
        let directory = try TemporaryDirectory()
        let served = (directory.path as NSString).appendingPathComponent("served.db")
        let config = try directory.write("serve.toml", "db = \"sqlite:\(served)\"\nport = 0\n")
        let work = try directory.subdirectory("elsewhere")

        let add = try await TSyncProcess.run(
            ["user", "add", "alice", "--password-stdin", "--config", config], in: work, stdin: "alice's long password\n")
        #expect(add.status == 0, "\(add)")
        #expect(add.stderr.contains("created the server database \(served)"), "\(add.stderr)")
        #expect(add.stderr.contains("created account alice in sqlite:\(served)"), "\(add.stderr)")
        #expect(!FileManager.default.fileExists(atPath: (work as NSString).appendingPathComponent("tsync-server.db")), "no database here")

        let mint = try await TSyncProcess.run(["user", "token", "alice", "--ttl", "90m", "--config", config], in: work)
        #expect(mint.status == 0, "\(mint)")
        #expect(mint.stderr.contains("token for alice in sqlite:\(served)"), "\(mint.stderr)")
        #expect(!mint.stderr.contains("created"), "the database was there: \(mint.stderr)")
        let token = mint.stdout.trimmingCharacters(in: .whitespacesAndNewlines)

        // A refused password creates no database.
        let here = (work as NSString).appendingPathComponent("tsync-server.db")
        let short = try await TSyncProcess.run(["user", "add", "bob", "--password-stdin"], in: work, stdin: "short\n")
        #expect(short.status == 65 && short.stderr.contains("too short"), "\(short)")
        #expect(!FileManager.default.fileExists(atPath: here) && !short.stderr.contains("created"), "\(short)")

        // The database a default run would write to: another one, said as such.
        let stray = try await TSyncProcess.run(["user", "add", "bob", "--password-stdin"], in: work, stdin: "bob's long password\n")
        #expect(stray.status == 0, "\(stray)")
        #expect(stray.stderr.contains("created the server database \(here)") && stray.stderr.contains("in sqlite:\(here)"), "\(stray)")
        let strayToken = try await TSyncProcess.run(["user", "token", "bob"], in: work).stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)

        // --db wins over the file's db.
        let list = try await TSyncProcess.run(["user", "list", "--config", config, "--db", "sqlite:" + here], in: work)
        #expect(list.stdout == "bob\n", "\(list)")
        let json = try await TSyncProcess.run(["user", "list", "--config", config, "--json"], in: work)
        #expect(json.status == 0, "\(json)")
        let accounts = try JSONOutput.array(json.stdout)
        #expect(accounts.count == 1 && accounts.first?.objectValue?["name"] == "alice", "\(json.stdout)")
        #expect(accounts.first?.objectValue?["createdAt"]?.stringValue?.hasSuffix("Z") == true, "\(json.stdout)")

        // The server serves the file's database: alice's token works there, bob's does not.
        let server = try ServerProcess(arguments: ["serve", "--config", config], log: directory.path)
        defer { server.stop() }
        let url = try await server.waitForAddress()
        let store = try await TSyncSandbox(remote: url)
        let whoami = try await store.run(["whoami", "--json"], environment: ["TSYNC_TOKEN": token])
        #expect(whoami.status == 0, "\(whoami)")
        let identity = try JSONOutput.object(whoami.stdout)
        #expect(identity["user"] == "alice" && identity["remote"] == .string(url), "\(whoami.stdout)")
        #expect(identity["roles"] == [] && identity["groups"] == [], "fields are only added to: \(whoami.stdout)")
        let unknown = try await store.run(["whoami"], environment: ["TSYNC_TOKEN": strayToken])
        #expect(unknown.status == 4, "\(unknown)")
        #expect(
            unknown.stderr.contains("not known to this server (expired, revoked, or minted for another database)"), "\(unknown.stderr)")
        #expect(!unknown.stderr.contains("expired or revoked"), "\(unknown.stderr)")
    }

    @Test func aLockoutIsSaidInMinutesAndTheOperatorUnlocksIt() async throws {
        let server = try await ServeFixture(authenticated: true)
        let database = "sqlite:" + server.databasePath
        let store = try await TSyncSandbox(remote: server.url)
        for _ in 0..<5 {
            let wrong = try await store.run(["login", "--user", "alice", "--password-stdin"], stdin: "not the password\n")
            #expect(wrong.status == 4, "\(wrong)")
        }
        let locked = try await store.run(["login", "--user", "alice", "--password-stdin"], stdin: ServeFixture.password + "\n")
        #expect(locked.status == 4, "\(locked)")
        #expect(locked.stderr.contains("try again in 15 minutes"), "\(locked.stderr)")
        #expect(locked.stderr.contains("tsync user unlock"), "\(locked.stderr)")
        #expect(!locked.stderr.contains(" s)"), "no raw seconds: \(locked.stderr)")

        let nobody = try await TSyncProcess.run(["user", "unlock", "carol", "--db", database], in: server.directory.path)
        #expect(nobody.status == 65 && nobody.stderr.contains("no account named"), "\(nobody)")
        let unlock = try await TSyncProcess.run(["user", "unlock", "alice", "--db", database], in: server.directory.path)
        #expect(unlock.status == 0, "\(unlock)")
        #expect(unlock.stderr.contains("unlocked account alice in sqlite:\(server.databasePath)"), "\(unlock.stderr)")
        let login = try await store.run(["login", "--user", "alice", "--password-stdin"], stdin: ServeFixture.password + "\n")
        #expect(login.status == 0, "unlocked: \(login)")
    }

    /// One rule for `user remove` and `purge` off a terminal: without --yes, refuse (64).
    @Test func userRemoveOffATerminalNeedsYesAsPurgeDoes() async throws {
        let directory = try TemporaryDirectory()
        let db = "sqlite:" + (directory.path as NSString).appendingPathComponent("server.db")
        let add = try await TSyncProcess.run(
            ["user", "add", "alice", "--password-stdin", "--db", db], in: directory.path, stdin: "alice password\n")
        #expect(add.status == 0, "\(add)")
        let refused = try await TSyncProcess.run(["user", "remove", "alice", "--db", db], in: directory.path)
        #expect(refused.status == 64, "\(refused)")
        #expect(refused.stderr.contains("add --yes"), "\(refused.stderr)")
        #expect(try await TSyncProcess.run(["user", "list", "--db", db], in: directory.path).stdout == "alice\n", "nothing removed")
        let removed = try await TSyncProcess.run(["user", "remove", "alice", "--yes", "--db", db], in: directory.path)
        #expect(removed.status == 0 && removed.stderr.contains("removed account alice from sqlite:"), "\(removed)")
        #expect(try await TSyncProcess.run(["user", "list", "--db", db], in: directory.path).stdout.isEmpty)
    }
}
