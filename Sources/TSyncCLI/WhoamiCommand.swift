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
            on a server without accounts). --json prints {"user", "remote", "roles", "groups", \
            "token"} instead ("user" null on a server without accounts; "roles" and "groups" \
            the account's, for the server's table rules; "token" {"readOnly", "tables"}, the \
            token's scope, "tables" null for every table; each null when the server does not \
            say); fields are only ever added to. Exit 4 when the server \
            refuses the credentials (or there are none), 3 when it cannot be reached.

            EXAMPLES
              tsync whoami
              TSYNC_TOKEN="$(cat ci-bot.token)" tsync whoami
              tsync whoami --json | jq -r .user
            """)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var verbosity: VerboseOption

    @Flag(help: "Print {\"user\", \"remote\", \"roles\", \"groups\", \"token\"} as JSON.")
    var json = false

    func run() async throws {
        let session = try RemoteAccess.session(try storeOptions.session(), verbose: verbosity.verbose)
        let endpoint = try session.endpoint()
        let identity = try await session.identity()
        let name = identity.user
        if json {
            func strings(_ list: [String]?) -> JSONValue { list.map { .array($0.map(JSONValue.string)) } ?? .null }
            let token: JSONValue =
                identity.describesToken
                ? ["readOnly": identity.readOnly.map(JSONValue.bool) ?? .null, "tables": strings(identity.tables)] : .null
            Console.write(
                JSONReports.line([
                    "user": name.map { .string($0) } ?? .null, "remote": .string(endpoint.description), "roles": strings(identity.roles),
                    "groups": strings(identity.groups), "token": token,
                ]))
        } else {
            Console.write("\(name ?? "anonymous") at \(endpoint)\n")
        }
    }
}
