import ArgumentParser
import TSyncServer

/// `--add` and `--remove` of `tsync user role` and `tsync user group`, and the change they ask for.
struct AccountLabelChange: ParsableArguments {
    @Option(help: ArgumentHelp("Give the account this one (repeatable).", valueName: "name"))
    var add: [String] = []

    @Option(help: ArgumentHelp("Take this one from the account (repeatable).", valueName: "name"))
    var remove: [String] = []

    func validate() throws {
        if add.isEmpty, remove.isEmpty { throw ValidationError("give --add NAME or --remove NAME (each repeatable)") }
        if let both = Set(add).intersection(remove).sorted().first {
            throw ValidationError("\(both) is given to both --add and --remove: choose one")
        }
    }

    /// Applies the change to `account`'s labels of `kind` and says on stderr what it has now.
    func apply(_ kind: AccountLabel, account: String, database: AccountDatabase) async throws {
        let (add, remove) = (self.add, self.remove)
        let (now, written) = try await database.withAccounts { accounts in
            try await accounts.changeLabels(name: account, kind: kind, add: add, remove: remove)
        }
        let list = now.isEmpty ? "none" : now.joined(separator: ", ")
        Console.note("\(kind.rawValue)s of \(account) in \(written): \(list) (servers apply them from their next request)")
    }
}
