import ArgumentParser
import Foundation
import TSyncEngine
import TSyncModel

/// `--store`/`-C`, shared by every command that works on a store.
struct StoreOptions: ParsableArguments {
    @Option(
        name: [.customLong("store"), .customShort("C")],
        help: ArgumentHelp(
            "Use the store in DIR (the directory holding .tsync/). Default: $TSYNC_DIR, else the nearest .tsync/ upwards.",
            valueName: "DIR"), completion: .directory)
    var store: String?

    /// The run of the command these options belong to, handed over by `TSync.main`; a command
    /// run otherwise (never by the binary) gets one that keeps no log entry.
    var run = CommandRun(command: nil)

    private enum CodingKeys: CodingKey {
        case store
    }

    func location() throws(TSyncError) -> StoreLocation {
        try StoreLocation.find(
            explicit: store, environment: ProcessInfo.processInfo.environment,
            workingDirectory: FileManager.default.currentDirectoryPath)
    }

    /// Opens the store and begins the command's session: a journaled command's `tsync log` entry
    /// begins here (`CommandRun`).
    func session() throws(TSyncError) -> CommandSession {
        run.begin(try LocalStore.open(location()))
    }

    /// Opens the store, as `session()` does, for a command that needs only the store.
    func open() throws(TSyncError) -> LocalStore {
        try session().store
    }
}

/// `--json`, on every read command.
struct JSONOption: ParsableArguments {
    @Flag(name: .long, help: "Print machine-readable JSON (stable field names, listed above).")
    var json = false
}

/// `-q`, on the commands that change the store and say so on stderr (init, update, delete); push,
/// pull, sync and resolve have it in `ReportOptions`.
struct QuietOption: ParsableArguments {
    @Flag(name: .shortAndLong, help: "Print nothing on stderr but errors.")
    var quiet = false
}

/// `-v`, on login and logout (push, pull, sync and resolve have it in `ReportOptions`).
struct VerboseOption: ParsableArguments {
    @Flag(name: .shortAndLong, help: "Show each HTTP request and its answer on stderr (never a token).")
    var verbose = false
}

/// `--json` or `--ndjson`, on the read commands whose one JSON document can be megabytes (status,
/// diff, conflicts): `--ndjson` prints one JSON object per line, as it is produced.
struct JSONLinesOptions: ParsableArguments {
    @Flag(name: .long, help: "Print machine-readable JSON (stable field names, listed above).")
    var json = false

    @Flag(name: .long, help: "Print one JSON object per line (NDJSON, the same objects).")
    var ndjson = false

    func validate() throws {
        if json && ndjson { throw ValidationError("choose one of --json and --ndjson") }
    }

    /// The elements of an array, one line each.
    static func lines(_ values: [JSONValue]) -> String {
        var text = ""
        for value in values {
            text += JSONSerializer.string(value)
            text += "\n"
        }
        return text
    }
}

/// `--json` and `-q`, on the commands that report what they did (push, pull, sync, resolve).
struct ReportOptions: ParsableArguments {
    @Flag(name: .long, help: "Print the result as JSON (stable field names, listed above).")
    var json = false

    @Flag(name: .shortAndLong, help: "No progress and no summary on stderr (exit codes still tell).")
    var quiet = false

    @Flag(name: .shortAndLong, help: "Show each HTTP request and its answer on stderr (never a token).")
    var verbose = false

    /// Exit 2 with the summary as the error message, or silently with `-q`.
    func operationsFailed(_ summary: String) -> any Error {
        quiet ? ExitCode(ExitStatus.operationsFailed) : TSyncError(.operationsFailed, summary)
    }

    /// How a push, pull or sync ends, from its session's verdict: the one place that chooses exit
    /// 2 (`failed` is the message) and 128 + the signal (130, 143) for a stopped one, reported as
    /// "interrupted: " and `interrupted()`, or the error that ended it after the stop (a server that
    /// stopped answering meanwhile: the user who pressed Ctrl-C still gets the signal's code).
    func conclude(_ verdict: CommandSession.Verdict, failed: String = "", interrupted: () throws -> String = { "" }) throws {
        switch verdict {
        case .succeeded: return
        case .operationsFailed: throw operationsFailed(failed)
        case .interrupted(let signal, let error):
            Console.error("interrupted: \(try error?.commandLineMessage ?? interrupted())")
            throw ExitCode(128 + signal)
        }
    }
}
