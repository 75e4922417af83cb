import ArgumentParser
import Foundation
import TSyncModel
import TSyncServer

/// `tsync user add|remove|list|passwd|unlock|token|role|group`: accounts of the server database.
struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user",
        abstract: "Manage the accounts of a server database.",
        discussion: """
            Passwords are read from stdin with --password-stdin or when stdin is not a terminal \
            (the first line); on a terminal without it, they are asked for twice, without echo. \
            Never from a flag.

            The database is --db, else the db of the server's config file (--config FILE, read \
            as `tsync serve --config` reads it), else tsync-server.db in the current directory. \
            What a command changes is said on stderr with the database it was written to; only \
            `user add` creates a SQLite database that is not there, and says so.

            EXAMPLES
              printf '%s\\n' "$PASSWORD" | tsync user add alice --password-stdin --db sqlite:server.db
              tsync user list --config /etc/tsync/serve.toml
              tsync user passwd alice --db postgres://tsync@127.0.0.1/tsync
            """,
        subcommands: [
            Add.self, Remove.self, List.self, Passwd.self, Unlock.self, UserTokenCommand.self, UserRoleCommand.self,
            UserGroupCommand.self,
        ]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Create an account.",
            discussion: """
                EXAMPLES
                  printf '%s\\n' "$PASSWORD" | tsync user add alice --password-stdin --db sqlite:server.db
                  tsync user add bob --role admin --group team-a --group team-b --db sqlite:server.db
                """)

        @Argument(help: "Account name (letters, digits, '.', '_', '-', '@').")
        var name: String

        @Option(help: ArgumentHelp("A role of the account, for role:ROLE table rules (repeatable).", valueName: "role"))
        var role: [String] = []

        @Option(help: ArgumentHelp("A group of the account, for group:FIELD table rules (repeatable).", valueName: "group"))
        var group: [String] = []

        @OptionGroup var newPassword: NewPassword

        @OptionGroup var database: AccountDatabase

        func run() async throws {
            try AccountRules.validateName(name)
            for role in role { try AccessRules.validateLabel(role, kind: "role") }
            for group in group { try AccessRules.validateLabel(group, kind: "group") }
            let (roles, groups) = (role, group)
            let password = try newPassword.read()
            // Refused before the database is opened: a refusal creates no database.
            try AccountRules.validatePassword(password)
            let written = try await database.withAccounts(creating: true) { accounts in
                try await accounts.add(name: name, password: password, roles: roles, groups: groups)
            }
            Console.note("created account \(name) in \(written.database)")
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove",
            abstract: "Remove an account and revoke its tokens (its records stay).",
            discussion: """
                On a terminal it asks first, as purge does (--yes: do not ask); when stdin is not \
                a terminal it never asks, and without --yes it refuses (exit 64), as purge does. \
                --dry-run checks that the account exists, says what would be removed, and changes \
                nothing.

                EXAMPLES
                  tsync user remove alice --db sqlite:server.db
                  tsync user remove alice --db sqlite:server.db --dry-run
                  tsync user remove ci-bot --config /etc/tsync/serve.toml --yes     # in a script
                """)

        @Argument(help: "Account name.")
        var name: String

        @Flag(name: .shortAndLong, help: "Do not ask for confirmation (needed when stdin is not a terminal).")
        var yes = false

        @Flag(help: "Say what would be removed; change nothing.")
        var dryRun = false

        @OptionGroup var database: AccountDatabase

        func validate() throws {
            if yes, dryRun { throw ValidationError("choose one of --yes and --dry-run") }
        }

        func run() async throws {
            if dryRun || !yes {
                let (accounts, written) = try await database.withAccounts { accounts in try await accounts.list() }
                guard accounts.contains(where: { $0.name == name }) else {
                    throw AccountManager.noSuchAccount(name)
                }
                if dryRun {
                    Console.note("would remove account \(name) from \(written) and revoke its tokens")
                    return
                }
                guard Console.stdinIsTerminal else {
                    throw TSyncError.usage(
                        "refusing to remove account \(name) without confirmation: add --yes (tsync asks only on a terminal)")
                }
                guard Console.confirm("Remove account \(name) from \(written) and revoke its tokens?") else {
                    Console.note("nothing removed")
                    return
                }
            }
            let written = try await database.withAccounts { accounts in try await accounts.remove(name: name) }
            Console.note("removed account \(name) from \(written.database)")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List the accounts, one name per line.",
            discussion: """
                An account with roles or groups has them after its name and a tab, as role:ROLE \
                and group:GROUP words. --json prints [{"name", "createdAt", "roles", "groups"}] \
                instead (createdAt in ISO 8601, UTC); fields are only ever added to.

                EXAMPLES
                  tsync user list --db sqlite:server.db
                  tsync user list --config /etc/tsync/serve.toml --json | jq -r '.[].name'
                """)

        @OptionGroup var database: AccountDatabase

        @Flag(help: "Print a JSON array of {\"name\", \"createdAt\", \"roles\", \"groups\"}.")
        var json = false

        func run() async throws {
            let accounts = try await database.withAccounts { accounts in try await accounts.list() }.result
            if json {
                let objects = accounts.map { account -> JSONValue in
                    [
                        "name": .string(account.name), "createdAt": .string(account.createdAt.iso8601),
                        "roles": .array(account.roles.map(JSONValue.string)), "groups": .array(account.groups.map(JSONValue.string)),
                    ]
                }
                Console.write(JSONReports.line(.array(objects)))
                return
            }
            if accounts.isEmpty, Console.stdoutIsTerminal { Console.note("no accounts: `tsync user add NAME` adds one") }
            Console.write(
                accounts.map { account in
                    let labels = account.roles.map { "role:" + $0 } + account.groups.map { "group:" + $0 }
                    return account.name + (labels.isEmpty ? "" : "\t" + labels.joined(separator: " ")) + "\n"
                }.joined())
        }
    }

    struct Passwd: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "passwd",
            abstract: "Change an account's password and revoke its tokens.",
            discussion: """
                EXAMPLES
                  tsync user passwd alice --db sqlite:server.db     # asks twice on a terminal
                """)

        @Argument(help: "Account name.")
        var name: String

        @OptionGroup var newPassword: NewPassword

        @OptionGroup var database: AccountDatabase

        func run() async throws {
            let password = try newPassword.read()
            let written = try await database.withAccounts { accounts in
                try await accounts.changePassword(name: name, password: password)
            }
            Console.note("changed the password of \(name) in \(written.database); its tokens are revoked")
        }
    }

    struct Unlock: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "unlock",
            abstract: "Let an account log in again at once after too many failed logins.",
            discussion: """
                Clears the counts of failed logins that lock the account out for the rest of \
                their window (15 minutes) after too many failures: the account's, those of the \
                clients it logged in from, and those of client addresses. Its password and tokens \
                stay as they are: if the failures were not its owner's, change the password \
                (`tsync user passwd`) as well.

                EXAMPLES
                  tsync user unlock alice --config /etc/tsync/serve.toml
                """)

        @Argument(help: "Account name.")
        var name: String

        @OptionGroup var database: AccountDatabase

        func run() async throws {
            let name = self.name
            let written = try await database.withAccounts { accounts in try await accounts.unlock(name: name) }
            Console.note("unlocked account \(name) in \(written.database): it can log in again now")
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
