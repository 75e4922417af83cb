import ArgumentParser
import TSyncEngine
import TSyncModel

struct ConfigCommand: ParsableCommand, JournaledCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Get and set the store's settings.",
        discussion: """
            Like `git config`: `tsync config KEY` prints a value (exit 1 when it is not set), \
            `tsync config KEY VALUE` sets it, `--unset KEY` removes it, `--list` prints every \
            setting as KEY=VALUE. The settings live in .tsync/config.json. Section and key names \
            are case-insensitive as git's are (a table NAME is not); `--unset` of a key that is not \
            set exits 5, as git does.

            Keys:
              remote.url              the server (what `tsync remote URL` sets)
              push.onConflict         fail, ours, theirs or merge: how push and sync settle \
            conflicts (`tsync push --help`); default fail
              push.prefer             ours or theirs: the side that wins a field both sides \
            changed, under merge
              table.NAME.onConflict   the same for one table, over push.onConflict
              table.NAME.prefer       the same for one table, over push.prefer
              log.maxEntries          how many entries `tsync log` keeps (default 1000; the \
            oldest go first)
              http.caFile             a PEM file of CA certificates trusted for an https remote \
            besides the system's (and SSL_CERT_FILE/SSL_CERT_DIR); stored as an absolute path
              core.pager              the pager for diff, conflicts and log on a terminal (a \
            shell command; empty: none); $TSYNC_PAGER overrides it, it overrides $PAGER

            A flag on the command line (--on-conflict, --prefer) overrides both. An unknown key \
            or an invalid value is refused with exit 64 and the valid ones.

            --json prints the settings as one object {"KEY": "VALUE", ...} (with --list or \
            without arguments), or {"key", "value"} for one key (value null when unset).

            EXAMPLES
              tsync config push.onConflict merge
              tsync config table.audit.onConflict fail
              tsync config --unset push.prefer
              tsync config http.caFile ./ca.pem
              tsync config --list
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: "The key (section.name, or table.NAME.name).", completion: StoreCompletion.configKeys)
    var key: String?

    /// The value to set. Taken as it is even when it starts with a dash (`log.maxEntries -5` is
    /// a value, refused as one), as git takes it; so the words not parsed as options land here.
    @Argument(parsing: .allUnrecognized, help: "The value to set.")
    var values: [String] = []

    var value: String? { values.first }

    @Flag(help: "Remove the key.")
    var unset = false

    @Flag(help: "List every setting.")
    var list = false

    @OptionGroup var output: JSONOption

    var isJournaled: Bool { value != nil || unset }

    func validate() throws {
        if key == nil, let word = values.first { throw ValidationError("unknown option '\(word)'") }
        if key?.hasPrefix("-") == true { throw ValidationError("unknown option '\(key ?? "")'") }
        if values.count > 1 { throw ValidationError("one value, please: quote a value with spaces (got \(values.count) words)") }
        if list, key != nil { throw ValidationError("--list takes no key") }
        if unset, key == nil { throw ValidationError("--unset needs the KEY to remove") }
        if unset, value != nil { throw ValidationError("--unset takes a KEY, not a value") }
        if output.json, value != nil || unset { throw ValidationError("--json only applies when reading settings") }
    }

    func run() throws {
        let parsedKey = try key.map(ConfigKey.init)
        let store = try storeOptions.open()
        var configuration = try store.configuration()
        guard let key = parsedKey else {
            let entries = configuration.entries
            if output.json {
                Console.write(JSONReports.line(.object(Dictionary(uniqueKeysWithValues: entries.map { ("\($0.key)", .string($0.value)) }))))
            } else {
                Console.write(entries.map { "\($0.key)=\($0.value)\n" }.joined())
            }
            return
        }
        if unset {
            guard configuration.unset(key) else {
                // Like git config --unset: exit 5 for a key that is not set.
                Console.error("\(key) is not set")
                throw ExitCode(ExitStatus.unsetKeyMissing)
            }
            try store.saveConfiguration(configuration)
            return
        }
        if let value {
            let remote = configuration.remote
            try configuration.set(key, to: value)
            try store.saveConfiguration(configuration)
            if let new = configuration.remote, new != remote { try RemoteCommand.warnOfLoginElsewhere(store, remote: new) }
            return
        }
        let current = configuration.value(key)
        if output.json {
            Console.write(JSONReports.line(["key": .string("\(key)"), "value": current.map(JSONValue.string) ?? .null]))
            return
        }
        // Like git: an unset key prints nothing and exits 1.
        guard let current else { throw ExitCode(ExitStatus.failure) }
        Console.write(current + "\n")
    }
}
