import ArgumentParser
import Foundation
import TSyncEngine
import TSyncModel

/// The `tsync` command: parses, runs one subcommand, and turns any error into a message on
/// stderr and the exit code of `ExitStatus`.
struct TSync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tsync",
        abstract: "Offline-first record sync from the shell.",
        discussion: """
            A local store (.tsync/ in a directory, found like git finds .git: --store/-C DIR, else \
            $TSYNC_DIR, else the nearest .tsync/ upwards) holds a working copy of remote tables and a \
            queue of local changes. insert, update and delete change the working copy and queue \
            operations; push and pull talk to the server.

            Data goes to stdout, messages to stderr. Read commands take --json (stable field names, \
            listed in each command's help). Colour is used only on a terminal, never with NO_COLOR. \
            tsync asks questions only on a terminal: `login` and `user add|passwd` ask for a \
            password (without echo) unless --password-stdin, and `purge` asks before it drops \
            records unless --yes. When stdin is not a terminal nothing is asked: the password is \
            read from stdin, and purge without --yes refuses.

            Errors are one line on stderr, "tsync: error: ...", usage errors followed by the usage.

            Proxies come from the environment as curl reads them: https_proxy for https:// remotes, \
            http_proxy (or HTTP_PROXY) for http:// ones, all_proxy for either, and no_proxy (host \
            names, .domain suffixes, addresses, ADDRESS/BITS, or *); loopback goes through the \
            proxy unless no_proxy lists it.

            EXAMPLES
              tsync init phone --remote http://127.0.0.1:8080
              tsync -C phone push --on-conflict merge
              tsync help push

            \(ExitStatus.table)
            """,
        subcommands: [
            InitCommand.self,
            RemoteCommand.self,
            InsertCommand.self,
            UpdateCommand.self,
            UpsertCommand.self,
            DeleteCommand.self,
            GetCommand.self,
            QueryCommand.self,
            TablesCommand.self,
            SchemaCommand.self,
            StatusCommand.self,
            DiffCommand.self,
            HistoryCommand.self,
            ShowCommand.self,
            RevertCommand.self,
            RestoreCommand.self,
            PurgeCommand.self,
            LoginCommand.self,
            LogoutCommand.self,
            WhoamiCommand.self,
            PushCommand.self,
            PullCommand.self,
            SyncCommand.self,
            WatchCommand.self,
            QueriesCommand.self,
            ConflictsCommand.self,
            ResolveCommand.self,
            ConfigCommand.self,
            LogCommand.self,
            ServeCommand.self,
            UserCommand.self,
            VersionCommand.self,
        ]
    )

    /// The version `tsync --version` and `tsync version` print.
    static let currentVersion = "0.1.0"

    @OptionGroup var storeOptions: StoreOptions

    // Not `CommandConfiguration.version`: the argument parser would then list --version in the
    // help of every subcommand; it belongs to the root alone.
    @Flag(name: .long, help: "Show the version.") var version = false

    func run() throws {
        guard version else {
            // `tsync` alone, as `git` alone: a short usage on stderr and exit 1; the whole help
            // is `tsync --help`.
            Console.note(Self.shortUsage)
            throw ExitCode(ExitStatus.failure)
        }
        Console.write(Self.currentVersion + "\n")
    }

    /// What `tsync` without a command prints: the commands most used, and where the rest are.
    static let shortUsage = """
        usage: tsync [-C DIR] COMMAND [ARGUMENTS]

        Common commands:
          start    init, remote, login
          change   insert, update, upsert, delete
          read     get, query, tables, status, diff, log
          sync     push, pull, sync, watch, conflicts, resolve

        See `tsync --help` for every command, `tsync help COMMAND` for one.
        """

    static func main() async {
        // --version anywhere before `--` prints the version, as the argument parser does for a
        // configured version: `tsync push --version` must not push.
        let words = CommandLine.arguments.dropFirst().prefix(while: { $0 != "--" })
        if words.contains("--version"), !ShowCommand.takesVersionOption(words) {
            Console.write(currentVersion + "\n")
            return
        }
        let arguments = LogCommand.expandingCountShorthand(Array(CommandLine.arguments.dropFirst()))
        if let answer = HelpCompletion.answer(arguments, root: Self.self, shell: ProcessInfo.processInfo.environment["SAP_SHELL"]) {
            print(answer)
            return
        }
        if arguments.count == 2, arguments[0] == "--generate-completion-script",
            let script = HelpCompletion.script(for: arguments[1], root: Self.self)
        {
            print(script)
            return
        }
        if let problem = CommandSuggestion.problem(arguments, root: Self.self) {
            Console.error(problem)
            exit(withError: ExitCode(ExitStatus.usage))
        }
        // This run of the command: the command begins its session in it, and it ends it here.
        var run = CommandRun(command: nil)
        do {
            var command = try parseAsRoot(ShowCommand.recordVersionArguments(arguments))
            let journaled = (command as? JournaledCommand)?.isJournaled == true
            run = CommandRun(command: journaled ? type(of: command).configuration.commandName ?? "" : nil)
            if var storeCommand = command as? any StoreCommand & ParsableCommand {
                storeCommand.storeOptions.run = run
                command = storeCommand
            }
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            run.finish(exitCode: ExitStatus.success)
        } catch let error as TSyncError {
            let code = ExitStatus.code(for: error.kind)
            run.finish(exitCode: code)
            Console.error(error.commandLineMessage)
            exit(withError: ExitCode(code))
        } catch {
            let code = exitCode(for: error)
            run.finish(exitCode: code.rawValue)
            // --help and --version print as usual, on stdout.
            if code.isSuccess { exit(withError: error) }
            // Parse and validation errors in tsync's one style: "tsync: error: …", then the usage.
            let text = fullMessage(for: error)
            if !text.isEmpty {
                var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
                let first = lines.removeFirst()
                Console.error(UsageErrorText.restyle(first))
                if !lines.isEmpty { Console.note(lines.joined(separator: "\n")) }
            }
            exit(withError: ExitCode(code.rawValue))
        }
    }
}

/// What the `tsync` executable runs, and all it runs: the commands are this library's, so their
/// parts can be tested in-process.
package enum CommandLineTool {
    package static func main() async {
        SQLiteSettings.apply()
        await TSync.main()
    }
}
