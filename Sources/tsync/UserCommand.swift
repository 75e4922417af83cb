import ArgumentParser
import Foundation
import Logging
import TSyncModel
import TSyncServer

/// `tsync user add|remove|list|passwd`: accounts of the server database.
struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user",
        abstract: "Manage the accounts of a server database.",
        discussion: """
            Passwords are read from stdin with --password-stdin or when stdin is not a terminal \
            (the first line); on a terminal without it, they are asked for twice, without echo. \
            Never from a flag.

            EXAMPLES
              printf '%s\\n' "$PASSWORD" | tsync user add alice --password-stdin --db sqlite:server.db
              tsync user list --db sqlite:server.db
              tsync user passwd alice --db postgres://tsync@127.0.0.1/tsync
            """,
        subcommands: [Add.self, Remove.self, List.self, Passwd.self, UserTokenCommand.self]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an account.",
            discussion: """
                EXAMPLES
                  printf '%s\\n' "$PASSWORD" | tsync user add alice --password-stdin --db sqlite:server.db
                """)

        @Argument(help: "Account name (letters, digits, '.', '_', '-', '@').")
        var name: String

        @OptionGroup var newPassword: NewPassword

        @OptionGroup var database: DatabaseOption

        func run() async throws {
            try AccountRules.validateName(name)
            let password = try newPassword.read()
            try await database.withAccounts(creating: true) { accounts in try await accounts.add(name: name, password: password) }
            FileHandle.standardError.write(Data("created account \(name)\n".utf8))
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove an account and revoke its tokens (its records stay).",
            discussion: """
                On a terminal it asks first, as purge does (--yes: do not ask). --dry-run checks \
                that the account exists, says what would be removed, and changes nothing. Without \
                a terminal it removes without asking, as before (scripts keep working).

                EXAMPLES
                  tsync user remove alice --db sqlite:server.db
                  tsync user remove alice --db sqlite:server.db --dry-run
                """)

        @Argument(help: "Account name.")
        var name: String

        @Flag(name: .shortAndLong, help: "Do not ask.")
        var yes = false

        @Flag(help: "Say what would be removed; change nothing.")
        var dryRun = false

        @OptionGroup var database: DatabaseOption

        func validate() throws {
            if yes, dryRun { throw ValidationError("choose one of --yes and --dry-run") }
        }

        func run() async throws {
            if dryRun || (!yes && Console.stdinIsTerminal) {
                let names = try await database.withAccounts { accounts in try await accounts.list() }.map(\.name)
                guard names.contains(name) else {
                    throw AccountManager.noSuchAccount(name)
                }
                if dryRun {
                    Console.note("would remove account \(name) and revoke its tokens")
                    return
                }
                guard Console.confirm("Remove account \(name) and revoke its tokens?") else {
                    Console.note("nothing removed")
                    return
                }
            }
            try await database.withAccounts { accounts in try await accounts.remove(name: name) }
            FileHandle.standardError.write(Data("removed account \(name)\n".utf8))
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the accounts, one name per line.",
            discussion: """
                EXAMPLES
                  tsync user list --db sqlite:server.db
                """)

        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let accounts = try await database.withAccounts { accounts in try await accounts.list() }
            if accounts.isEmpty, Console.stdoutIsTerminal { Console.note("no accounts: `tsync user add NAME` adds one") }
            for account in accounts { print(account.name) }
        }
    }

    struct Passwd: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change an account's password and revoke its tokens.",
            discussion: """
                EXAMPLES
                  tsync user passwd alice --db sqlite:server.db     # asks twice on a terminal
                """)

        @Argument(help: "Account name.")
        var name: String

        @OptionGroup var newPassword: NewPassword

        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let password = try newPassword.read()
            try await database.withAccounts { accounts in try await accounts.changePassword(name: name, password: password) }
            FileHandle.standardError.write(Data("changed the password of \(name)\n".utf8))
        }
    }
}

/// `--password-stdin` of `user add` and `user passwd`, and the new password it says where to read
/// from: stdin's first line, or asked twice without echo on a terminal.
struct NewPassword: ParsableArguments {
    @Flag(help: "Read the password from stdin (one line).")
    var passwordStdin = false

    func read() throws(TSyncError) -> String {
        try PasswordInput.read(fromStdin: passwordStdin, confirm: true)
    }
}
