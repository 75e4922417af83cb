import ArgumentParser
import TSyncEngine
import TSyncModel

struct RestoreCommand: AsyncParsableCommand, JournaledCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Queue the changes that bring a table back to how it was at a time.",
        discussion: """
            Reads the table as it was at TIME (\(PointInTime.forms)) and as it is now from the \
            server's history, and queues, in one transaction, what `tsync revert` would for each \
            record: updates of the records changed since, deletes of those created since, undeletes \
            of those deleted since. --filter ODATA restores only the records it matches, then or \
            now. The changes are ordinary pending operations: read them with `tsync diff`, send \
            them with `tsync push`. This is how a bad push or a bad CI run is undone: restore to \
            the moment before it, look, push.

            --before-push N: TIME is the moment before the push of `tsync log` entry N, that is just \
            before the earliest updatedAt the server gave the versions that command wrote to TABLE \
            (`tsync log` lists them under "wrote").

            Records with pending changes are refused (exit 1, listed, nothing changed) unless \
            --force, which drops their pending changes first (without --filter: every pending \
            change of the table). --dry-run queues nothing and prints what it would. A server \
            without history: exit 1, saying so; a TIME older than the server keeps: exit 1 with its \
            reason.

            Prints "KIND<TAB>TABLE/ID" per record (update, delete, undelete or insert). --json \
            prints {"at", "dryRun", "changes": [{"table", "id", "kind", "discarded"}]}.

            EXAMPLES
              tsync restore todo --at 10m --dry-run
              tsync restore todo --before-push 42 && tsync diff && tsync push
              tsync restore todo --at 2026-11-28T13:05:00Z --filter "done eq true"
            """)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: JSONOption
    @OptionGroup var verbose: VerboseOption

    @Argument(help: "The table.", completion: StoreCompletion.tables)
    var table: String

    @Option(help: ArgumentHelp("Back to how the table was at TIME: \(PointInTime.forms).", valueName: "TIME"))
    var at: PointInTime?

    @Option(help: ArgumentHelp("Back to the moment before the push of this `tsync log` entry.", valueName: "N"))
    var beforePush: Int64?

    @Option(help: ArgumentHelp("Only the records this OData filter matches (then or now).", valueName: "ODATA"))
    var filter: String?

    @Flag(help: "Print what would be queued; queue nothing.")
    var dryRun = false

    @Flag(help: "Drop pending changes in the way first instead of refusing.")
    var force = false

    var isJournaled: Bool { !dryRun }

    func validate() throws {
        try Identifiers.validateTableName(table)
        guard (at == nil) != (beforePush == nil) else { throw ValidationError("give one of --at TIME and --before-push N") }
    }

    func run() async throws {
        let command = try storeOptions.session()
        let time = try at?.timestamp ?? momentBeforePush(command.store)
        let session = try RemoteAccess.session(command, verbose: verbose.verbose)
        let changes = try await session.restore(table: table, at: time, filter: filter, force: force, dryRun: dryRun)
        if !dryRun { command.record(changed: table, ids: changes.map(\.id)) }
        if output.json {
            Console.write(
                JSONReports.line([
                    "at": .string(time.iso8601), "dryRun": .bool(dryRun), "changes": .array(changes.map(JSONReports.revertChange)),
                ]))
        } else {
            Console.write(Self.lines(changes))
        }
        Console.note(Self.summary(changes, dryRun: dryRun))
    }

    /// Just before the earliest version the push of log entry `beforePush` wrote to the table.
    private func momentBeforePush(_ store: LocalStore) throws(TSyncError) -> Timestamp {
        let number = beforePush ?? 0
        guard let entry = try store.journalEntry(number) else {
            throw TSyncError(.invalidInput, "the log has no entry \(number)")
        }
        guard let earliest = entry.written.earliest[table] else {
            throw TSyncError(.invalidInput, "log entry \(number) (\(entry.command)) wrote nothing to \(table)")
        }
        return Timestamp(millisecondsSinceEpoch: earliest.millisecondsSinceEpoch - 1)
    }

    /// The changes, one line each: "KIND<TAB>TABLE/ID".
    static func lines(_ changes: [RevertChange]) -> String {
        changes.map { "\($0.kind.rawValue)\t\($0.table)/\($0.id)\n" }.joined()
    }

    /// What was queued (or would be), in one line for stderr.
    static func summary(_ changes: [RevertChange], dryRun: Bool) -> String {
        guard !changes.isEmpty else { return "nothing to queue: already as it was" }
        var counts: [RevertChange.Kind: Int] = [:]
        for change in changes { counts[change.kind, default: 0] += 1 }
        var what = [RevertChange.Kind.update, .delete, .undelete, .insert].compactMap { kind in
            counts[kind].map { StatusFormat.count($0, kind.rawValue) }
        }.joined(separator: ", ")
        let discarded = changes.filter(\.discarded).count
        if discarded > 0 {
            what += "; \(dryRun ? "would drop" : "dropped") the pending changes of \(StatusFormat.count(discarded, "record"))"
        }
        return dryRun
            ? "dry run: would queue \(what); nothing changed" : "queued \(what) (`tsync diff` shows them, `tsync push` sends them)"
    }
}
