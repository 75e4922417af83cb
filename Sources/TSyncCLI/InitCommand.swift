import ArgumentParser
import Foundation
import TSyncEngine

struct InitCommand: ParsableCommand, JournaledCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create a tsync store in DIR/.tsync/.",
        discussion: """
            Creates DIR (default: the current directory) if needed, and in it .tsync/ with the \
            database (store.sqlite) and the configuration (config.json). Running it again on an \
            existing store is safe: it upgrades the database if needed and sets --remote if given.

            EXAMPLES
              tsync init phone --remote https://sync.example.com
              tsync init                      # a store in the current directory
            """)

    /// `tsync -C DIR init` initializes in DIR, as `git -C DIR init` does; hidden from this
    /// command's help because `init DIR` says it better.
    @OptionGroup(visibility: .hidden) var storeOptions: StoreOptions

    @Argument(help: "The directory to hold the store.")
    var directory: String = "."

    @Option(help: ArgumentHelp("The server to push to and pull from.", valueName: "URL"))
    var remote: String?

    @OptionGroup var quiet: QuietOption

    func run() throws {
        let base = StoreLocation.absolute(
            storeOptions.store ?? ".", from: FileManager.default.currentDirectoryPath)
        let location = StoreLocation.forInitializing(directory, workingDirectory: base)
        let (store, existed) = try LocalStore.initialize(location, remote: remote)
        _ = storeOptions.run.begin(store)  // the log's first entry: the store's creation
        guard !quiet.quiet else { return }
        Console.note("\(existed ? "Reinitialized existing" : "Initialized empty") tsync store in \(location.directory)/")
        if existed, let remote { try RemoteCommand.warnOfLoginElsewhere(store, remote: remote) }
    }
}
