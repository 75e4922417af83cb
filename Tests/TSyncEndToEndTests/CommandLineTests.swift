import Foundation
import Testing
import TSyncModel

/// The command line as a new user meets it (issue 13): a mistyped command is refused with the
/// closest names, as git does; `tsync version` and `--version`; a port in use says so.
@Suite struct CommandLineTests {
    @Test(arguments: [
        (["psuh"], "did you mean 'push'?"),
        (["stauts"], "did you mean 'status'?"),
        (["conflict"], "did you mean 'conflicts'?"),
        (["-C", "/tmp", "pul"], "did you mean 'pull' or 'push'?"),
        (["help", "nosuch"], "'nosuch' is not a tsync command"),
        (["xyzzy"], "'xyzzy' is not a tsync command (`tsync --help` lists them)"),
    ])
    func aMistypedCommandIsRefusedWithTheClosestNames(arguments: [String], message: String) throws {
        let directory = try TemporaryDirectory()
        let result = try TSyncProcess.run(arguments, in: directory.path)
        #expect(result.status == 64, "\(result)")
        #expect(result.stderr.hasPrefix("tsync: error: ") && result.stderr.contains(message), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func helpOfAKnownCommandAndTheVersion() throws {
        let directory = try TemporaryDirectory()
        let help = try TSyncProcess.run(["help", "push"], in: directory.path)
        #expect(help.status == 0 && help.stdout.contains("USAGE: tsync push"), "\(help)")
        let version = try TSyncProcess.run(["version"], in: directory.path)
        let flag = try TSyncProcess.run(["--version"], in: directory.path)
        #expect(version.status == 0 && flag.status == 0)
        #expect(version.stdout == flag.stdout && version.stdout.split(separator: ".").count == 3, "\(version.stdout)")
    }

    @Test func aPortInUseIsNamedWithTheFlagThatFixesIt() async throws {
        let directory = try TemporaryDirectory()
        let first = try ServerProcess(
            arguments: ["serve", "--no-auth", "--port", "0", "--db", "sqlite:" + directory.path + "/a.db"], log: directory.path)
        defer { first.stop() }
        let address = try await first.waitForAddress()
        let port = try #require(address.split(separator: ":").last.map(String.init))
        let second = try TSyncProcess.run(
            ["serve", "--no-auth", "--port", port, "--db", "sqlite:" + directory.path + "/b.db"], in: directory.path)
        #expect(second.status == 1, "\(second)")
        #expect(
            second.stderr.contains("cannot listen on 127.0.0.1:\(port): the port is in use") && second.stderr.contains("--port"),
            "\(second.stderr)")
        #expect(try await first.terminate(signal: SIGTERM) == 0)
    }
}
