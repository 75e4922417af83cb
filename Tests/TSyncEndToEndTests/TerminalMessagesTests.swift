import Foundation
import Testing

/// What the small commands say, on a pipe and on a real pseudo-terminal.
@Suite(.serialized) struct TerminalMessagesTests {
    @Test func pullQuietPrintsNothingButErrors() async throws {
        let server = try await ServeFixture()
        let store = try await TSyncSandbox(remote: server.url)
        let quiet = try await store.run(["pull", "nosuch", "-q"])
        #expect(quiet.status == 0 && quiet.stdout.isEmpty && quiet.stderr.isEmpty, "\(quiet)")
        let loud = try await store.run(["pull", "nosuch"])
        #expect(loud.stderr.contains("warning: the server sent no records of nosuch"), "\(loud)")
    }

    @Test func emptyListsSaySoOnATerminalOnly() async throws {
        let store = try await TSyncSandbox()
        let directory = try TemporaryDirectory()
        let db = "sqlite:" + (directory.path as NSString).appendingPathComponent("server.db")
        _ = try await TSyncProcess.run(["user", "add", "bob", "--password-stdin", "--db", db], in: directory.path, stdin: "bob password\n")
        _ = try await TSyncProcess.run(["user", "remove", "bob", "--yes", "--db", db], in: directory.path)
        for (command, message) in [
            (["conflicts"], "no errors"), (["queries"], "no saved queries"), (["tables"], "no tables yet"),
            (["user", "list", "--db", db], "no accounts"),
        ] {
            let piped = try await store.run(command)
            #expect(piped.status == 0 && piped.stdout.isEmpty && piped.stderr.isEmpty, "\(command): \(piped)")
            guard let terminal = try await TSyncProcess.runOnTerminal(command, in: store.path) else { return }
            #expect(terminal.status == 0 && terminal.stdout.contains(message), "\(command): \(terminal)")
        }
    }

    @Test func userRemoveAsksOnATerminalAndTakesYesAndDryRun() async throws {
        let directory = try TemporaryDirectory()
        let db = "sqlite:" + (directory.path as NSString).appendingPathComponent("server.db")
        for name in ["alice", "bob"] {
            let add = try await TSyncProcess.run(
                ["user", "add", name, "--password-stdin", "--db", db], in: directory.path, stdin: "\(name) password\n")
            #expect(add.status == 0, "\(add)")
        }
        let list = { try await TSyncProcess.run(["user", "list", "--db", db], in: directory.path).stdout }
        let dry = try await TSyncProcess.run(["user", "remove", "alice", "--dry-run", "--db", db], in: directory.path)
        #expect(dry.status == 0 && dry.stderr.contains("would remove account alice"), "\(dry)")
        #expect(try await list() == "alice\nbob\n")
        let unknown = try await TSyncProcess.run(["user", "remove", "carol", "--dry-run", "--db", db], in: directory.path)
        #expect(unknown.status == 65 && unknown.stderr.contains("no account named \"carol\""), "\(unknown)")
        #expect(try await TSyncProcess.run(["user", "remove", "alice", "--yes", "--dry-run", "--db", db], in: directory.path).status == 64)
        if let no = try await TSyncProcess.runOnTerminal(["user", "remove", "alice", "--db", db], in: directory.path, stdin: "n\n") {
            #expect(no.status == 0 && no.stdout.contains("Remove account alice from sqlite:"), "\(no)")
            #expect(no.stdout.contains("and revoke its tokens? [y/N]"), "\(no)")
            let kept = try await list()
            #expect(no.stdout.contains("nothing removed") && kept == "alice\nbob\n")
            let yes = try #require(
                try await TSyncProcess.runOnTerminal(["user", "remove", "alice", "--db", db], in: directory.path, stdin: "y\n"))
            #expect(yes.status == 0 && yes.stdout.contains("removed account alice"), "\(yes)")
            #expect(try await list() == "bob\n")
        }
        let scripted = try await TSyncProcess.run(["user", "remove", "bob", "--yes", "--db", db], in: directory.path)
        let none = try await list()
        #expect(scripted.status == 0 && none.isEmpty, "\(scripted)")
    }
}
