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
            valueName: "DIR"))
    var store: String?

    func location() throws(TSyncError) -> StoreLocation {
        try StoreLocation.find(
            explicit: store, environment: ProcessInfo.processInfo.environment,
            workingDirectory: FileManager.default.currentDirectoryPath)
    }

    /// Opens the store; a journaled command's `tsync log` entry begins here.
    func open() throws(TSyncError) -> LocalStore {
        let store = try LocalStore.open(location())
        CommandJournal.shared.opened(store)
        return store
    }
}

/// `--json`, on every read command.
struct JSONOption: ParsableArguments {
    @Flag(name: .long, help: "Print machine-readable JSON (field names are stable; see DISCUSSION).")
    var json = false
}

/// `--json` and `-q`, on the commands that report what they did (push, pull, sync, resolve).
struct ReportOptions: ParsableArguments {
    @Flag(name: .long, help: "Print the result as JSON (field names are stable; see DISCUSSION).")
    var json = false

    @Flag(name: .shortAndLong, help: "No progress and no summary on stderr.")
    var quiet = false
}
