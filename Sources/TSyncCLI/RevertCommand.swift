import ArgumentParser
import TSyncEngine
import TSyncModel

struct RevertCommand: AsyncParsableCommand, JournaledCommand {
    static let configuration = CommandConfiguration(
        commandName: "revert",
        abstract: "Queue the change that brings a record back to a version or a time.",
        discussion: """
            Reads the record's past (--to VERSION, from `tsync history`, or --at TIME, which is \
            \(PointInTime.forms)) and its copy now from the server, and queues the local change \
            that makes it what it was: an update of its fields (a field added since is set to \
            null), a delete when it did not exist yet then, an update that first undeletes it when \
            it was deleted since (an insert when the server no longer keeps the deleted copy). The \
            record takes the server's copy now as its base, so the change is an ordinary pending \
            operation: `tsync status`, `diff`, `push --check` and `push` treat it like any other. \
            A record already as it was queues nothing.

            A record with pending changes is refused (exit 1, nothing changed) unless --force, \
            which drops its pending changes first (and their errors). A server without history: \
            exit 1, saying so; no version V, or no record: exit 65.

            Prints "KIND<TAB>TABLE/ID" for the change queued (update, delete, undelete or insert); \
            --json prints [{"table", "id", "kind", "discarded"}], "discarded" whether pending \
            changes were dropped first.

            EXAMPLES
              tsync revert todo milk --to 3
              tsync revert todo milk --at 10m && tsync diff todo milk && tsync push
            """)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: JSONOption
    @OptionGroup var verbose: VerboseOption

    @OptionGroup var record: RecordArguments

    @Option(name: .customLong("to"), help: ArgumentHelp("Back to this version (`tsync history` lists them).", valueName: "VERSION"))
    var version: String?

    @Option(help: ArgumentHelp("Back to how it was at TIME: \(PointInTime.forms).", valueName: "TIME"))
    var at: PointInTime?

    @Flag(help: "Drop the record's pending changes first instead of refusing.")
    var force = false

    func validate() throws {
        guard (at == nil) != (version == nil) else { throw ValidationError("give one of --to VERSION and --at TIME") }
    }

    func run() async throws {
        let command = try storeOptions.session()
        let session = try RemoteAccess.session(command, verbose: verbose.verbose)
        let changes = try await session.revert(
            table: record.table, id: record.id, to: PointInTime.point(at: at, version: version), force: force)
        command.record(changed: record.table, ids: changes.map(\.id))
        Console.write(output.json ? JSONReports.line(.array(changes.map(JSONReports.revertChange))) : RestoreCommand.lines(changes))
        Console.note(RestoreCommand.summary(changes, dryRun: false))
    }
}
