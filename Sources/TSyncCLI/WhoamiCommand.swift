import ArgumentParser
import TSyncEngine
import TSyncModel

/// `tsync whoami`: whom the current credentials reach, and where.
struct WhoamiCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "whoami",
        abstract: "Print the account the current credentials reach on the remote.",
        discussion: """
            Asks the remote (GET /.auth/me, a tsync extension) which account the saved token \
            (or TSYNC_TOKEN, when set) belongs to, and prints "NAME at REMOTE" on stdout ("anonymous at REMOTE" \
            on a server without accounts). --json prints {"user", "remote"} instead ("user" null \
            on a server without accounts); fields are only ever added to. Exit 4 when the server \
            refuses the credentials (or there are none), 3 when it cannot be reached.

            EXAMPLES
              tsync whoami
              TSYNC_TOKEN="$(cat ci-bot.token)" tsync whoami
              tsync whoami --json | jq -r .user
            """)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var verbosity: VerboseOption

    @Flag(help: "Print {\"user\", \"remote\"} as JSON.")
    var json = false

    func run() async throws {
        let session = try RemoteAccess.session(try storeOptions.session(), verbose: verbosity.verbose)
        let endpoint = try session.endpoint()
        let name = try await session.whoami()
        if json {
            Console.write(JSONReports.line(["user": name.map { .string($0) } ?? .null, "remote": .string(endpoint.description)]))
        } else {
            Console.write("\(name ?? "anonymous") at \(endpoint)\n")
        }
    }
}
