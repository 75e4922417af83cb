import ArgumentParser
import TSyncEngine
import TSyncModel

struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Show the server's versions of a record, newest first.",
        discussion: """
            Asks the server (a tsync server that keeps history: `tsync serve --keep-history`): one \
            line per version, "VERSION  TIME  ACCOUNT  OPERATION", the operation being insert, \
            update, delete or undelete and the account "-" when the server has none. -p/--patch \
            shows under each version the fields it changed against the version before, as \
            `tsync diff` shows them. A server without history: exit 1, saying so. A record the \
            server does not have (or does not show this account): exit 65. An answer about another \
            record: exit 3.

            --json prints [{"version", "updatedAt", "user", "operation", "item"}], "item" being the \
            whole record after the write (a delete's marked deleted, with the body it deleted), \
            "user" null when the server has no accounts.

            On a terminal, a long history goes through the pager, as `tsync diff --help` says \
            (--no-pager: never).

            EXAMPLES
              tsync history todo milk
              tsync history todo milk -p --limit 5
              tsync history todo milk --json | jq -r '.[] | .user'
            """)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: JSONOption
    @OptionGroup var pager: PagerOption
    @OptionGroup var verbose: VerboseOption

    @OptionGroup var record: RecordArguments

    @Flag(name: [.customShort("p"), .customLong("patch")], help: "Show each version's field changes against the one before.")
    var patch = false

    @Option(help: ArgumentHelp("Show the newest N versions.", valueName: "N"))
    var limit: Int?

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be 1 or more (got \(limit))") }
    }

    func run() async throws {
        let command = try storeOptions.session()
        let session = try RemoteAccess.session(command, verbose: verbose.verbose)
        // One more than shown: the oldest shown is compared with the one before it.
        let versions = try await session.history(table: record.table, id: record.id, limit: limit.map { patch ? $0 + 1 : $0 })
        let shown = versions.prefix(limit ?? versions.count)
        if output.json {
            Console.write(JSONReports.line(.array(shown.map(JSONReports.recordVersion))))
            return
        }
        let style = Style(enabled: Console.colorOnStdout)
        var text = ""
        for (index, version) in shown.enumerated() {
            text += style.bold(Self.line(version)) + "\n"
            guard patch else { continue }
            let before = index + 1 < versions.count ? versions[index + 1].item.fields : [:]
            text += FieldChangeText.lines(FieldChange.between(before, version.item.fields), style: style)
        }
        pager.write(text, store: command.store)
    }

    static func line(_ version: RecordVersion) -> String {
        "\(version.version)  \(version.updatedAt.iso8601)  \(version.user ?? "-")  \(version.operation.rawValue)"
    }
}

/// `TABLE ID`: the record `history`, `show` and `revert` are about.
struct RecordArguments: ParsableArguments {
    @Argument(help: "The table.", completion: StoreCompletion.tables)
    var table: String

    @Argument(help: "The record id.")
    var id: String

    func validate() throws {
        try Identifiers.validateTableName(table)
        try Identifiers.validateRecordID(id)
    }
}
