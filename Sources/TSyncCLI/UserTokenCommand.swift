import ArgumentParser
import Foundation
import TSyncModel
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

            --read-only makes a token that may only read, and --table T (repeatable) one that \
            may only reach those tables: anything else it asks is 403, and the client loses \
            nothing (a refused push stays in its error table). `tsync whoami --json` shows a \
            token's scope.

            EXAMPLES
              tsync user token ci-bot --ttl 30d --config /etc/tsync/serve.toml > ci-bot.token
              tsync user token dashboard --read-only --table prices --ttl 7d --db sqlite:server.db
              TSYNC_TOKEN="$(cat ci-bot.token)" tsync push
            """)

    @Argument(help: "Account name.")
    var name: String

    @Option(
        help: ArgumentHelp(
            "How long the token lives: a number and s, m, h or d, e.g. 90m, 12h, 30d (at most 366d).", valueName: "duration"),
        transform: WrittenDuration.argument)
    var ttl = WrittenDuration(seconds: 30 * 24 * 3600)

    @Flag(help: "The token may only read.")
    var readOnly = false

    @Option(help: ArgumentHelp("The token may only reach this table (repeatable).", valueName: "table"))
    var table: [String] = []

    @OptionGroup var database: AccountDatabase

    func validate() throws {
        guard (60...366 * 24 * 3600).contains(ttl.seconds) else {
            throw ValidationError("--ttl must be from 1m to 366d (got \(ttl))")
        }
        for table in table {
            do {
                try Identifiers.validateTableName(table)
            } catch {
                throw ValidationError("--table \(table): \(error.message)")
            }
        }
    }

    func run() async throws {
        let lifetime = ttl.duration
        let name = self.name
        let scope = TokenScope(readOnly: readOnly, tables: table.isEmpty ? nil : Set(table))
        let (token, written) = try await database.withAccounts { accounts in
            try await accounts.mintToken(name: name, lifetime: lifetime, scope: scope)
        }
        Console.write(token + "\n")
        Console.note(
            "token for \(name) in \(written), valid for \(ttl); it is not shown again (a server serving another database does not know it)")
    }
}
