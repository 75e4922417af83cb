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

/// A command that works on a store (`--store`): `TSync.main` hands it its run.
protocol StoreCommand {
    var storeOptions: StoreOptions { get set }
}

extension ConfigCommand: StoreCommand {}
extension ConflictsCommand.List: StoreCommand {}
extension ConflictsCommand.Show: StoreCommand {}
extension DeleteCommand: StoreCommand {}
extension DiffCommand: StoreCommand {}
extension GetCommand: StoreCommand {}
extension HistoryCommand: StoreCommand {}
extension InitCommand: StoreCommand {}
extension InsertCommand: StoreCommand {}
extension LogCommand: StoreCommand {}
extension LoginCommand: StoreCommand {}
extension LogoutCommand: StoreCommand {}
extension PullCommand: StoreCommand {}
extension PurgeCommand: StoreCommand {}
extension PushCommand: StoreCommand {}
extension QueriesCommand: StoreCommand {}
extension QueryCommand: StoreCommand {}
extension RemoteCommand: StoreCommand {}
extension ResolveCommand: StoreCommand {}
extension RestoreCommand: StoreCommand {}
extension RevertCommand: StoreCommand {}
extension ShowCommand: StoreCommand {}
extension StatusCommand: StoreCommand {}
extension SyncCommand: StoreCommand {}
extension TablesCommand: StoreCommand {}
extension UpdateCommand: StoreCommand {}
extension UpsertCommand: StoreCommand {}
extension WatchCommand: StoreCommand {}
extension WhoamiCommand: StoreCommand {}

/// One run of a command, made by `TSync.main` and handed to the command it parsed (through its
/// `StoreOptions`): it names the command when it is journaled, holds the `CommandSession` the
/// command begins when it opens its store (docs/DESIGN.md §5, §9.3), and finishes that session
/// with the exit code. The session itself (the log entry, the stop request, the verdicts) is the
/// engine's; nothing of it is process-wide.
final class CommandRun: Sendable {
    /// The command's name for its log entry; nil when the command leaves none.
    let command: String?
    private let session = Mutex<CommandSession?>(nil)

    init(command: String?) {
        self.command = command
    }

    /// A session of the command, which has opened `store`: the first one begun has the log entry
    /// and is the one `finish` ends.
    func begin(_ store: LocalStore) -> CommandSession {
        let first = session.withLock { $0 == nil }
        let journal =
            first ? command.map { CommandSession.JournalEntry(command: $0, arguments: Self.redacted(CommandLine.arguments)) } : nil
        let session = CommandSession(store: store, journal: journal)
        if let problem = session.journalProblem { Console.warning("no log entry for this command: \(problem.message)") }
        self.session.withLock { kept in
            if kept == nil { kept = session }
        }
        return session
    }

    /// Ends the entry with the command's exit code. A usage error did nothing, and leaves nothing.
    func finish(exitCode: Int32) {
        // The session is let go of here, so that the store closes (and SQLite folds its WAL back
        // into the database file) before the process exits, as it would without a log.
        let session = session.withLock { kept in
            defer { kept = nil }
            return kept
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
