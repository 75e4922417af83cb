import ArgumentParser
import TSyncEngine
import TSyncModel

struct ShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Print a record as it was at a time or a version, from the server's history.",
        discussion: """
            --at TIME: the record's latest version at or before TIME, which is \(PointInTime.forms); \
            --version V: the version V (`tsync history` lists them). Printed as `tsync get` prints a \
            record (indented JSON; --json: one line), with "deleted": true when it was deleted then. \
            A record that did not exist yet at TIME, or has no version V: exit 65. A server without \
            history: exit 1, saying so.

            EXAMPLES
              tsync show todo milk --at 10m
              tsync show todo milk --at 2026-11-28T13:05:00Z --json
              tsync show todo milk --version 3
            """)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: JSONOption
    @OptionGroup var verbose: VerboseOption

    @OptionGroup var record: RecordArguments

    @Option(help: ArgumentHelp("The record as it was at TIME: \(PointInTime.forms).", valueName: "TIME"))
    var at: PointInTime?

    // `show --version V` reaches here as --record-version (`recordVersionArguments`): the
    // argument parser gives --version to the root command's flag, wherever it stands.
    @Option(
        name: .customLong("record-version"),
        help: ArgumentHelp("The record as this version left it (also --version V).", valueName: "V"))
    var version: String?

    func validate() throws {
        guard (at == nil) != (version == nil) else { throw ValidationError("give one of --at TIME and --version V") }
    }

    /// The arguments with `show`'s --version V renamed --record-version, the name its option has.
    static func recordVersionArguments(_ arguments: [String]) -> [String] {
        let words = arguments.prefix(while: { $0 != "--" })
        guard takesVersionOption(words) else { return arguments }
        return words.map { word in
            if word == "--version" { return "--record-version" }
            if word.hasPrefix("--version=") { return "--record-version=" + word.dropFirst("--version=".count) }
            return word
        } + arguments.dropFirst(words.count)
    }

    /// Whether the command line runs `show`, whose --version names a record's version rather
    /// than asking for tsync's: the first word that is neither an option nor the value of -C/--store.
    static func takesVersionOption(_ words: some Sequence<String>) -> Bool {
        var afterStore = false
        for word in words {
            if afterStore {
                afterStore = false
            } else if word == "-C" || word == "--store" {
                afterStore = true
            } else if !word.hasPrefix("-") {
                return word == configuration.commandName
            }
        }
        return false
    }

    func run() async throws {
        let session = try RemoteAccess.session(try storeOptions.session(), verbose: verbose.verbose)
        let point = PointInTime.point(at: at, version: version)
        guard let record = try await session.record(table: record.table, id: record.id, at: point) else {
            throw TSyncError.invalidInput("\(record.table)/\(record.id) did not exist at \(PointInTime.describe(point))")
        }
        let value = JSONReports.record(record)
        Console.write(output.json ? JSONReports.line(value) : JSONSerializer.string(value, pretty: true) + "\n")
    }
}
