import Foundation
import Synchronization
import TSyncEngine
import TSyncModel

/// A command that changes the store or talks to its server, and so leaves an entry in
/// `tsync log`. A command that only reads (or a dry run) says so with `isJournaled`.
protocol JournaledCommand {
    var isJournaled: Bool { get }
}

extension JournaledCommand {
    var isJournaled: Bool { true }
}

/// The command line's side of the running command's `CommandSession` (docs/DESIGN.md §5, §9.3):
/// `TSync.main` says which command runs, `StoreOptions.session()` begins the session when the
/// command opens its store, and `TSync.main` finishes it with the exit code. The session itself
/// (the log entry, the stop request, the verdicts) is the engine's; this only carries it from the
/// command that opens the store to `TSync.main`, which maps how the command ended to an exit code.
enum CommandLog {
    private struct State {
        var command: String?
        var session: CommandSession?
    }

    private static let state = Mutex(State())

    /// The parsed command is journaled: the store it opens gets an entry.
    static func expect(command: String) {
        state.withLock { $0.command = command }
    }

    /// The session of a command that has opened `store` (`StoreOptions.session`); the first one
    /// a process begins is the one `finish` ends.
    static func begin(_ store: LocalStore) -> CommandSession {
        let command: String? = state.withLock { state in
            guard state.session == nil else { return nil }
            return state.command
        }
        let session = CommandSession(
            store: store, log: command.map { CommandSession.LogEntry(command: $0, arguments: redacted(CommandLine.arguments)) })
        if let problem = session.logProblem { Console.warning("no log entry for this command: \(problem.message)") }
        state.withLock { state in
            if state.session == nil { state.session = session }
        }
        return session
    }

    /// Ends the entry with the command's exit code. A usage error did nothing, and leaves nothing.
    static func finish(exitCode: Int32) {
        // The session is let go of here, so that the store closes (and SQLite folds its WAL back
        // into the database file) before the process exits, as it would without a log.
        let session = state.withLock { state in
            defer { state.session = nil }
            return state.session
        }
        guard let session else { return }
        do throws(TSyncError) {
            if let warning = try session.finish(exitCode: Int(exitCode), dropped: exitCode == ExitStatus.usage) {
                Console.warning("\(warning.commandLineMessage); until then the log keeps its newest \(Journal.defaultMaxEntries) entries")
            }
        } catch {
            Console.warning("the log entry of this command was not completed: \(error.message)")
        }
    }

    /// The command line as the log keeps it: no secret, nothing huge. Nothing tsync takes as an
    /// argument is a secret today (passwords come on stdin, tokens from the environment); a URL's
    /// user:password part and the value of any option named like a password or token are
    /// replaced all the same, and a long argument (a JSON record) is cut.
    static func redacted(_ arguments: [String]) -> [String] {
        var result: [String] = []
        var hideNext = false
        for argument in arguments.dropFirst() {
            if hideNext {
                result.append("***")
                hideNext = false
                continue
            }
            let lowered = argument.lowercased()
            if argument.hasPrefix("--"), lowered.contains("password") || lowered.contains("token") || lowered.contains("secret") {
                if let equals = argument.firstIndex(of: "=") {
                    result.append(String(argument[..<equals]) + "=***")
                } else {
                    result.append(argument)
                    hideNext = !lowered.hasSuffix("-stdin")
                }
                continue
            }
            var shown = Journal.withoutCredentials(argument)
            if shown.utf8.count > 200 { shown = String(shown.prefix(80)) + "…(\(shown.utf8.count) bytes)" }
            result.append(shown)
        }
        return result
    }
}
