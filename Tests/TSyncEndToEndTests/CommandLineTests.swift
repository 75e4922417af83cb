import Foundation
import Testing
import TSyncModel

/// The command line as a new user meets it: a mistyped command is refused with the
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
    func aMistypedCommandIsRefusedWithTheClosestNames(arguments: [String], message: String) async throws {
        let directory = try TemporaryDirectory()
        let result = try await TSyncProcess.run(arguments, in: directory.path)
        #expect(result.status == 64, "\(result)")
        #expect(result.stderr.hasPrefix("tsync: error: ") && result.stderr.contains(message), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func helpOfAKnownCommandAndTheVersion() async throws {
        let directory = try TemporaryDirectory()
        let help = try await TSyncProcess.run(["help", "push"], in: directory.path)
        #expect(help.status == 0 && help.stdout.contains("USAGE: tsync push"), "\(help)")
        let version = try await TSyncProcess.run(["version"], in: directory.path)
        let flag = try await TSyncProcess.run(["--version"], in: directory.path)
        #expect(version.status == 0 && flag.status == 0)
        #expect(version.stdout == flag.stdout && version.stdout.split(separator: ".").count == 3, "\(version.stdout)")
        // --version is the root's alone: listed in its help, not in a subcommand's.
        #expect(try await TSyncProcess.run(["--help"], in: directory.path).stdout.contains("--version"))
        #expect(!help.stdout.contains("--version"), "\(help.stdout)")
        let pushVersion = try await TSyncProcess.run(["push", "--version"], in: directory.path)
        #expect(pushVersion.status == 0 && pushVersion.stdout == version.stdout, "prints the version, never pushes: \(pushVersion)")
        let bare = try await TSyncProcess.run([], in: directory.path)
        #expect(bare.status == 1 && bare.stderr.contains("tsync --help"), "tsync alone: a short usage, as git: \(bare)")
    }

    /// `scripts/install.sh` into a temporary prefix (with the built binary): the binary runs, the
    /// pages are there (and render without warnings where `man` is installed), bash loads the
    /// completion, and `--uninstall` removes every file.
    @Test func installIntoAPrefixAndUninstall() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let prefix = try TemporaryDirectory()
        let script = root.appendingPathComponent("scripts/install.sh").path
        // A relative --prefix and --binary are the caller's, not the checkout's.
        let caller = (prefix.path as NSString).deletingLastPathComponent
        let binaryCopy = try prefix.subdirectory("given") + "/tsync"
        try FileManager.default.copyItem(atPath: TSyncBinary.path, toPath: binaryCopy)
        let install = try await TSyncProcess.run(
            [
                script, "--prefix", (prefix.path as NSString).lastPathComponent, "--binary",
                (prefix.path as NSString).lastPathComponent + "/given/tsync",
            ], in: caller, executable: "/bin/bash")
        #expect(install.status == 0, "\(install)")
        try FileManager.default.removeItem(atPath: prefix.path + "/given")
        let help = try await TSyncProcess.run([script, "--help"], in: caller, executable: "/bin/bash")
        #expect(help.status == 0 && help.stdout.contains("--prefix DIR") && !help.stdout.contains("set -euo"), "\(help)")
        let installed = try await TSyncProcess.run(["--version"], in: prefix.path, executable: prefix.path + "/bin/tsync")
        #expect(installed.status == 0 && installed.stdout.hasPrefix("0."), "\(installed)")
        let pages = try FileManager.default.contentsOfDirectory(atPath: prefix.path + "/share/man/man1")
        #expect(pages.contains("tsync.1") && pages.contains("tsync.push.1"), "\(pages)")
        #expect(pages.contains("tsync-push.1") && pages.contains("tsync-conflicts-show.1"), "git-style names: \(pages)")
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/man") {
            // `man tsync-push` finds the page, as `man git-push` does.
            let byName = try await TSyncProcess.run(
                ["-M", prefix.path + "/share/man", "tsync-push"], in: prefix.path, environment: ["MANPAGER": "cat", "PAGER": "cat"],
                executable: "/usr/bin/man")
            #expect(byName.status == 0 && byName.stdout.contains("push"), "\(byName)")
            // Every page, with groff's warnings on: not one (no "Empty input line", no bad macro).
            for page in pages {
                let man = try await TSyncProcess.run(
                    ["--warnings", "-l", prefix.path + "/share/man/man1/" + page], in: prefix.path, executable: "/usr/bin/man")
                #expect(man.status == 0 && man.stdout.contains("tsync") && man.stderr.isEmpty, "\(page): \(man)")
                // Nothing is split at a hyphen, at any width: a JSON field, a class such as
                // version-conflict or a flag such as --password-stdin can be copied whole.
                for width in ["60", "80", "100"] {
                    let narrow = try await TSyncProcess.run(
                        ["-l", prefix.path + "/share/man/man1/" + page], in: prefix.path,
                        environment: ["MANWIDTH": width, "LC_ALL": "C.UTF-8"], executable: "/usr/bin/man")
                    let split = narrow.stdout.split(separator: "\n").filter { $0.hasSuffix("-") || $0.hasSuffix("\u{2010}") }
                    #expect(split.isEmpty, "\(page) at \(width) columns: \(split)")
                }
            }
        }
        let completion = try await TSyncProcess.run(
            ["-c", "source \(prefix.path)/share/bash-completion/completions/tsync; complete -p tsync"], in: prefix.path,
            executable: "/bin/bash")
        #expect(completion.stdout.contains("complete") && completion.stdout.contains("tsync"), "\(completion)")

        let uninstall = try await TSyncProcess.run(
            [script, "--prefix", prefix.path, "--uninstall"], in: root.path, executable: "/bin/bash")
        #expect(uninstall.status == 0)
        #expect(!FileManager.default.fileExists(atPath: prefix.path + "/bin/tsync"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: prefix.path + "/share/man/man1").isEmpty)
    }

    /// The server's log says what tsync does, in its own words: no framework or logger names.
    @Test func theServerLogNamesNoFramework() async throws {
        let directory = try TemporaryDirectory()
        let server = try ServerProcess(
            arguments: ["serve", "--no-auth", "--port", "0", "--db", "sqlite:" + directory.path + "/a.db"], log: directory.path)
        defer { server.stop() }
        let base = try await server.waitForAddress()
        #expect(try await HTTP.send("GET", base + "/tables/todo").status == 200)
        #expect(try await server.terminate(signal: SIGTERM) == 0)
        let lines = server.log.split(separator: "\n")
        #expect(lines.contains { $0.hasSuffix("info listening on \(base)") }, "\(server.log)")
        #expect(lines.contains { $0.contains(" GET /tables/todo 200 ") }, "\(server.log)")
        for word in ["Hummingbird", "hb.", "[TSyncServer]", "tsync.serve", "ServiceLifecycle"] {
            #expect(!server.log.contains(word), "\(word) in \(server.log)")
        }
    }

    /// `-` names stdin, and `-q` prints no ids (50,000 lines nobody reads).
    @Test func insertReadsDashAsStdinAndQuietPrintsNothing() async throws {
        let store = try await TSyncSandbox(remote: nil)
        let records = (0..<3).map { #"{"id": "r\#($0)"}"# }.joined(separator: "\n")
        #expect(try await store.ok(["insert", "todo", "-"], stdin: records) == "r0\nr1\nr2\n")
        #expect(try await store.ok(["insert", "todo", "-q"], stdin: #"{"id": "r3"}"#) == "")
        #expect(try await store.ok(["query", "todo"]).split(separator: "\n").count == 4)
    }

    @Test func aPortInUseIsNamedWithTheFlagThatFixesIt() async throws {
        let directory = try TemporaryDirectory()
        let first = try ServerProcess(
            arguments: ["serve", "--no-auth", "--port", "0", "--db", "sqlite:" + directory.path + "/a.db"], log: directory.path)
        defer { first.stop() }
        let address = try await first.waitForAddress()
        let port = try #require(address.split(separator: ":").last.map(String.init))
        let second = try await TSyncProcess.run(
            ["serve", "--no-auth", "--port", port, "--db", "sqlite:" + directory.path + "/b.db"], in: directory.path)
        #expect(second.status == 1, "\(second)")
        #expect(
            second.stderr.contains("cannot listen on 127.0.0.1:\(port): the port is in use") && second.stderr.contains("--port"),
            "\(second.stderr)")
        #expect(try await first.terminate(signal: SIGTERM) == 0)
    }
}
