import ArgumentParser

/// `tsync version`: the same as `tsync --version`.
struct VersionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "version",
        abstract: "Print the version of tsync.",
        discussion: """
            The same as `tsync --version`.

            EXAMPLES
              tsync version
            """)

    func run() {
        Console.write(TSync.currentVersion + "\n")
    }
}
