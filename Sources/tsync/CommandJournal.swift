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

/// The `tsync log` entry of the running command (docs/DESIGN.md §9.3): begun when the command opens its
/// store, filled from what the command and its sync session report, and finished by `TSync.main`
/// with the exit code. A command killed before it ends leaves its entry unfinished, never half
/// written (each step is one transaction of the store).
final class CommandJournal: Sendable {
    static let shared = CommandJournal()

    private struct State {
        var command: String?
        var store: LocalStore?
        var entry: Int64?
        var counts = JournalCounts()
        var items = ItemSample()
    }

    private let state = Mutex(State())

    /// The parsed command is journaled: the store it opens gets an entry.
    func expect(command: String) {
        state.withLock { $0.command = command }
    }

    /// Called when a command opens its store (`StoreOptions.open`).
    func opened(_ store: LocalStore) {
        let command: String? = state.withLock { state in
            guard state.entry == nil, state.store == nil else { return nil }
            state.store = store
            return state.command
        }
        guard let command else { return }
        let remote = (try? store.configuration().remote).flatMap { $0 }.map(Self.withoutCredentials)
        do throws(TSyncError) {
            let entry = try store.beginJournalEntry(command: command, arguments: Self.redacted(CommandLine.arguments), remote: remote)
            state.withLock { $0.entry = entry }
        } catch {
            Console.warning("no log entry for this command: \(error.message)")
        }
    }

    func record(push summary: PushSummary) {
        state.withLock { state in
            state.counts.add(summary)
            state.items.add(summary.items)
        }
    }

    func record(pull summary: PullSummary) {
        state.withLock { state in
            state.counts.add(summary.push)
            state.items.add(summary.push.items)
            state.counts.pulled += summary.counts.received
            state.items.add(summary.items)
        }
    }

    func record(resolve report: ResolveReport, as resolution: Resolution) {
        state.withLock { state in
            for entry in report.entries {
                state.items.add(table: entry.details.error.table, id: entry.details.error.itemID)
                if case .settled = entry.outcome { state.counts.settled[resolution.rawValue, default: 0] += 1 }
            }
        }
    }

    func record(changed table: String, ids: some Collection<String>) {
        state.withLock { state in
            state.counts.changed += ids.count
            state.items.add(table: table, ids: ids)
        }
    }

    /// Ends the entry with the command's exit code. A usage error did nothing, and leaves nothing.
    func finish(exitCode: Int32) {
        // The journal lets go of the store here, so that it closes (and SQLite folds its WAL back
        // into the database file) before the process exits, as it would without a journal.
        let (store, entry, counts, items) = state.withLock { state in
            defer { state.store = nil }
            return (state.store, state.entry, state.counts, state.items)
        }
        guard let store, let entry else { return }
        do throws(TSyncError) {
            if exitCode == ExitStatus.usage { return try store.dropJournalEntry(entry) }
            try store.finishJournalEntry(entry, exitCode: Int(exitCode), counts: counts, items: items, keep: Self.logLength(store))
        } catch {
            Console.warning("the log entry of this command was not completed: \(error.message)")
        }
    }

    /// How many entries the log keeps: the store's setting, or the default (with a warning) when
    /// the setting cannot be read, so that a bad setting costs no entry.
    private static func logLength(_ store: LocalStore) -> Int {
        do throws(TSyncError) {
            return try store.configuration().logMaxEntries()
        } catch {
            Console.warning("\(error.message); until then the log keeps its newest \(Journal.defaultMaxEntries) entries")
            return Journal.defaultMaxEntries
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
            var shown = withoutCredentials(argument)
            if shown.utf8.count > 200 { shown = String(shown.prefix(80)) + "…(\(shown.utf8.count) bytes)" }
            result.append(shown)
        }
        return result
    }

    /// A URL without its user:password part; any other text as it is.
    static func withoutCredentials(_ text: String) -> String {
        guard let components = URLComponents(string: text), components.scheme != nil,
            components.user != nil || components.password != nil
        else { return text }
        var hidden = components
        hidden.user = nil
        hidden.password = nil
        return hidden.string ?? "***"
    }
}
