import ArgumentParser
import TSyncEngine
import TSyncModel

struct RemoteCommand: ParsableCommand, JournaledCommand {
    static let configuration = CommandConfiguration(
        commandName: "remote",
        abstract: "Show or set the server URL.",
        discussion: """
            Without URL, prints the remote; exits 1 when none is set. With URL (http:// or https://), \
            saves it in .tsync/config.json.

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
}
