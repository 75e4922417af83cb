import ArgumentParser
import Foundation
import TSyncEngine
import TSyncModel

struct LoginCommand: AsyncParsableCommand, JournaledCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Get a token from the server and save it in the store.",
        discussion: """
            The password is the first line of stdin with --password-stdin or when stdin is not a \
            terminal; otherwise it is asked for on the terminal without echo. It is never taken as \
            a flag value. The token is saved in .tsync/credentials (mode 0600, only for the remote \
            it came from) and never printed. The TSYNC_TOKEN environment variable, when set, is \
            used instead of the saved token.

            The server is checked before the password is asked for: a remote that cannot be \
            reached, whose certificate is not trusted, or that is not a sync server is exit 3 with \
            no prompt.

            Over plain http:// to a host other than this machine it warns first that the password \
            travels in clear text: anyone on the way can read it (serve with --tls-cert, or \
            behind a reverse proxy that speaks https).

            EXAMPLES
              tsync login --user alice                 # asks for the password on the terminal
              printf '%s\\n' "$PASSWORD" | tsync login --user alice --password-stdin
            """)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var verbosity: VerboseOption

    @Option(help: ArgumentHelp("The account name.", valueName: "NAME"))
    var user: String

    @Flag(help: "Read the password from the first line of stdin.")
    var passwordStdin = false

    func validate() throws {
        guard !user.isEmpty else { throw ValidationError("--user must not be empty") }
    }

    func run() async throws {
        let session = try RemoteAccess.session(try storeOptions.session(), verbose: verbosity.verbose)
        let endpoint = try session.endpoint()
        if endpoint.sendsInClear {
            Console.warning(
                "\(endpoint) is plain http:// to another machine: the password and the token travel in clear text, readable by anyone on the way; use an https:// remote"
            )
        }
        // The server is checked first: no password is asked for a remote that cannot take it.
        let userID = try await session.login(user: user) { () throws(TSyncError) in
            try PasswordInput.read(fromStdin: passwordStdin, prompt: "password for \(user): ", confirm: false)
        }
        Console.note("logged in to \(endpoint) as \(userID)")
    }
}

struct LogoutCommand: AsyncParsableCommand, JournaledCommand {
    static let configuration = CommandConfiguration(
        commandName: "logout",
        abstract: "Revoke the saved token on the server and remove it from the store.",
        discussion: """
            The token is removed from .tsync/credentials even when the server cannot be reached \
            (it then stays valid on the server until it expires; a warning says so).

            EXAMPLES
              tsync logout
            """)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var verbosity: VerboseOption

    func run() async throws {
        guard let result = try await RemoteAccess.session(try storeOptions.session(), verbose: verbosity.verbose).logout() else {
            Console.note("not logged in")
            return
        }
        if let reason = result.notRevoked {
            Console.warning("could not revoke the token on \(result.remote) (\(reason)); it stays valid there until it expires")
        }
        Console.note("logged out of \(result.remote)")
    }
}
