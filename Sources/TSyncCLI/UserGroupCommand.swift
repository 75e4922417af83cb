import ArgumentParser
import TSyncServer

/// `tsync user group NAME --add G --remove G`: the groups that `group:FIELD` table rules admit.
struct UserGroupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "group",
        abstract: "Put an account in groups, or take it out of them.",
        discussion: """
            A table rule group:FIELD (`tsync serve --access`) admits, for a record, the members \
            of the group its FIELD names. Running servers apply the change from their next \
            request, without a restart; records the account may no longer read are not deleted \
            from its stores.

            EXAMPLES
              tsync user group alice --add team-a --db sqlite:server.db
              tsync user group alice --remove team-a --config /etc/tsync/serve.toml
            """)

    @Argument(help: "Account name.")
    var name: String

    @OptionGroup var change: AccountLabelChange

    @OptionGroup var database: AccountDatabase

    func run() async throws {
        try await change.apply(.group, account: name, database: database)
    }
}
