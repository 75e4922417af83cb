import ArgumentParser
import TSyncServer

/// `tsync user role NAME --add R --remove R`: the roles that `role:R` table rules admit.
struct UserRoleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "role",
        abstract: "Give an account roles, or take them away.",
        discussion: """
            A table rule role:ROLE (`tsync serve --access`) admits the accounts that have the role. \
            Running servers apply the change from their next request, without a restart.

            EXAMPLES
              tsync user role alice --add admin --db sqlite:server.db
              tsync user role alice --remove admin --config /etc/tsync/serve.toml
            """)

    @Argument(help: "Account name.")
    var name: String

    @OptionGroup var change: AccountLabelChange

    @OptionGroup var database: AccountDatabase

    func run() async throws {
        try await change.apply(.role, account: name, database: database)
    }
}
