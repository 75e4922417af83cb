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

        @Flag(help: "Read the password from stdin (one line).")
        var passwordStdin = false

        @OptionGroup var database: DatabaseOption

        func run() async throws {
            try AccountRules.validateName(name)
            let password = try PasswordInput.read(fromStdin: passwordStdin, confirm: true)
            try await database.withAccounts(creating: true) { accounts in try await accounts.add(name: name, password: password) }
            FileHandle.standardError.write(Data("created account \(name)\n".utf8))
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove an account and revoke its tokens (its records stay).",
            discussion: """
                EXAMPLES
                  tsync user remove alice --db sqlite:server.db
                """)

        @Argument(help: "Account name.")
        var name: String

        @OptionGroup var database: DatabaseOption

        func run() async throws {
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
            for account in try await database.withAccounts({ accounts in try await accounts.list() }) { print(account.name) }
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

        @Flag(help: "Read the password from stdin (one line).")
        var passwordStdin = false

        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let password = try PasswordInput.read(fromStdin: passwordStdin, confirm: true)
            try await database.withAccounts { accounts in try await accounts.changePassword(name: name, password: password) }
            FileHandle.standardError.write(Data("changed the password of \(name)\n".utf8))
        }
    }
}
