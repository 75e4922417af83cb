import ArgumentParser
import Foundation
import TSyncServer

/// `tsync user token NAME`: a token minted on the server side, for a machine (a CI job's secret).
struct UserTokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Mint a token for an account, for a CI secret store (printed once).",
        discussion: """
            Writes a new token for the account to the server database and prints it once on \
            stdout; it is stored only as its hash, like a login's, and never shown again. A job \
            then uses it as TSYNC_TOKEN, with no password. `tsync user passwd` and `tsync user \
            remove` revoke it (and every other token of the account); so does `tsync logout` run \
            with it.

            EXAMPLES
              tsync user token ci-bot --ttl 30d --config /etc/tsync/serve.toml > ci-bot.token
              TSYNC_TOKEN="$(cat ci-bot.token)" tsync push
            """)

    @Argument(help: "Account name.")
    var name: String

    @Option(
        help: ArgumentHelp(
            "How long the token lives: minutes, hours or days, e.g. 90m, 12h, 30d (at most 366d).", valueName: "duration"))
    var ttl = "30d"

    @OptionGroup var database: AccountDatabase

    /// `ttl` as a duration; nil when it is not NUMBER followed by m, h or d, or out of range.
    static func lifetime(_ text: String) -> Duration? {
        guard let unit = text.last, let number = Int(text.dropLast()), number >= 1 else { return nil }
        let minutes: Int
        switch unit {
        case "m": minutes = number
        case "h": minutes = number * 60
        case "d": minutes = number * 24 * 60
        default: return nil
        }
        guard minutes <= 366 * 24 * 60 else { return nil }
        return .seconds(minutes * 60)
    }

    func validate() throws {
        guard Self.lifetime(ttl) != nil else {
            throw ValidationError("--ttl \(ttl) is not a duration: give minutes, hours or days, e.g. 90m, 12h or 30d (at most 366d)")
        }
    }

    func run() async throws {
        let lifetime = Self.lifetime(ttl) ?? .seconds(30 * 24 * 3600)
        let name = self.name
        let (token, written) = try await database.withAccounts { accounts in
            try await accounts.mintToken(name: name, lifetime: lifetime)
        }
        Console.write(token + "\n")
        Console.note(
            "token for \(name) in \(written), valid for \(ttl); it is not shown again (a server serving another database does not know it)")
    }
}
