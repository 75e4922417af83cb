import ArgumentParser
import TSyncEngine
import TSyncModel

struct RemoteCommand: ParsableCommand, JournaledCommand {
    static let configuration = CommandConfiguration(
        commandName: "remote",
        abstract: "Show or set the server URL.",
        discussion: """
            Without URL, prints the remote; exits 1 when none is set. With URL (http:// or https://), \
            saves it in .tsync/config.json. A login (`tsync login`) belongs to the remote it was \
            made on, and its token is sent to no other: when the new remote is another, a warning \
            says so and how to log in to it.

            --json prints {"remote": URL or null} and exits 0.

            EXAMPLES
              tsync remote http://127.0.0.1:8080
              tsync remote --json | jq -r .remote
            """)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: JSONOption

    @Argument(help: "The new server URL.")
    var url: String?

    var isJournaled: Bool { url != nil }

    func validate() throws {
        if url != nil, output.json { throw ValidationError("--json only applies when showing the remote") }
    }

    func run() throws {
        let store = try storeOptions.open()
        var configuration = try store.configuration()
        if let url {
            try StoreConfiguration.validateRemote(url)
            configuration.remote = url
            try store.saveConfiguration(configuration)
            Console.note("remote set to \(url)")
            try Self.warnOfLoginElsewhere(store, remote: url)
            return
        }
        if output.json {
            Console.write(JSONReports.line(["remote": configuration.remote.map(JSONValue.string) ?? .null]))
            return
        }
        guard let remote = configuration.remote else {
            throw TSyncError.failure("no remote is set; set one with `tsync remote URL`")
        }
        Console.write(remote + "\n")
    }

    /// The saved token is only ever sent to the remote it came from (`Credentials`): when the
    /// store's remote becomes another (`remote URL`, `config remote.url`, `init --remote`), say
    /// that the login no longer applies, rather than let the next push fail with "not logged in".
    static func warnOfLoginElsewhere(_ store: LocalStore, remote: String) throws {
        guard let login = try Credentials.load(storeDirectory: store.location.directory),
            try RemoteEndpoint(remote).base != login.remote
        else { return }
        Console.warning(
            "the saved login (\(login.user)) belongs to \(login.remote) and is not sent to \(remote): run `tsync login --user \(login.user)` to log in to it (`tsync remote \(login.remote)` to go back)"
        )
    }
}
