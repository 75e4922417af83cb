import ArgumentParser
import Foundation
import TSyncEngine
import TSyncModel

struct LoginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Get a token from the server and save it in the store.",
        discussion: """
            The password is the first line of stdin with --password-stdin or when stdin is not a \
            terminal; otherwise it is asked for on the terminal without echo. It is never taken as \
            a flag value. The token is saved in .tsync/credentials (mode 0600, only for the remote \
            it came from) and never printed. The TSYNC_TOKEN environment variable, when set, is \
            used instead of the saved token.
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Option(help: ArgumentHelp("The account name.", valueName: "NAME"))
    var user: String

    @Flag(help: "Read the password from the first line of stdin.")
    var passwordStdin = false

    func validate() throws {
        guard !user.isEmpty else { throw ValidationError("--user must not be empty") }
    }

    func run() async throws {
        let store = try storeOptions.open()
        let endpoint = try RemoteAccess.endpoint(store)
        let password = try PasswordInput.read(fromStdin: passwordStdin, prompt: "password for \(user): ", confirm: false)
        let user = self.user
        let (token, userID) = try await RemoteClient.withRemoteClient(endpoint: endpoint, token: nil) { remote throws(TSyncError) in
            try await remote.login(username: user, password: password)
        }
        try Credentials(remote: endpoint.base, user: user, token: token).save(storeDirectory: store.location.directory)
        Console.note("logged in to \(endpoint) as \(userID)")
    }
}

struct LogoutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logout",
        abstract: "Revoke the saved token on the server and remove it from the store.",
        discussion: """
            The token is removed from .tsync/credentials even when the server cannot be reached \
            (it then stays valid on the server until it expires; a warning says so).
            """)

    @OptionGroup var storeOptions: StoreOptions

    func run() async throws {
        let store = try storeOptions.open()
        let directory = store.location.directory
        guard let saved = try Credentials.load(storeDirectory: directory) else {
            Console.note("not logged in")
            return
        }
        var warning: String?
        do throws(TSyncError) {
            let endpoint = try RemoteEndpoint(saved.remote)
            try await RemoteClient.withRemoteClient(endpoint: endpoint, token: saved.token) { remote throws(TSyncError) in
                try await remote.logout()
            }
        } catch where error.kind != .unauthorized {
            warning = "could not revoke the token on \(saved.remote) (\(error.message)); it stays valid there until it expires"
        } catch {
            // Unauthorized: the token was already expired or revoked.
        }
        try Credentials.remove(storeDirectory: directory)
        if let warning { Console.note("warning: \(warning)") }
        Console.note("logged out of \(saved.remote)")
    }
}
