import ArgumentParser
import TSyncEngine
import TSyncModel

struct PurgeCommand: ParsableCommand, JournaledCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge",
        abstract: "Drop local records of a table (the server is not touched).",
        discussion: """
            Removes the table's records, or those matching --filter. Refused while the table has \
            pending operations, unless --force, which drops them (and their errors) too. A table \
            purged whole forgets its saved queries. A purge with --filter keeps them (their \
            checkpoints stay true of every record kept): the next pull fetches only what changed \
            on the server since, so a purged record comes back when it changes there; \
            --forget-queries drops them too, and the next pull fetches the whole table again. A \
            table left with nothing (no record, no operation) leaves `tsync tables` too.

            On a terminal, purge says what it would drop and asks before dropping it; --yes skips \
            the question. When stdin is not a terminal it never asks: without --yes it refuses \
            (exit 64) and changes nothing. --dry-run prints each record it would drop as TABLE/ID \
            on stdout (as `delete --filter --dry-run` does), says on stderr what it would drop, \
            and changes nothing.

            EXAMPLES
              tsync purge todo --filter "complete eq true" --dry-run
              tsync purge todo --filter "complete eq true" --yes
              tsync purge scratch --force --yes      # pending changes go too
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: "The table.", completion: StoreCompletion.tables)
    var table: String

    @Option(help: ArgumentHelp("Only records this OData expression is true for.", valueName: "ODATA"))
    var filter: String?

    @Flag(help: "Also drop the table's pending operations.")
    var force = false

    @Flag(help: "With --filter: also forget the table's saved queries, so the next pull fetches everything again.")
    var forgetQueries = false

    @Flag(name: .shortAndLong, help: "Do not ask for confirmation (needed when stdin is not a terminal).")
    var yes = false

    @Flag(help: "Say what would be dropped; change nothing.")
    var dryRun = false

    var isJournaled: Bool { !dryRun }

    func run() throws {
        let session = try storeOptions.session()
        let store = session.store
        let preview = try store.purge(table: table, filter: filter, force: force, forgetQueries: forgetQueries, dryRun: true)
        if dryRun {
            Console.write(MatchedRecords.lines(table: table, ids: preview.ids))
            Console.note("would " + describe(preview) + "; nothing changed (--dry-run)")
            return
        }
        if !yes, preview.records + preview.operations > 0 {
            guard Console.stdinIsTerminal else {
                throw TSyncError.usage(
                    "refusing to \(describe(preview)) without confirmation: add --yes (tsync asks only on a terminal)")
            }
            let question = describe(preview)
            guard Console.confirm(question.prefix(1).uppercased() + question.dropFirst() + "?") else {
                Console.note("nothing purged")
                return
            }
        }
        let result = try store.purge(table: table, filter: filter, force: force, forgetQueries: forgetQueries)
        session.record(changed: table, ids: result.ids)
        Console.note(describe(result, done: true))
        if filter != nil, !forgetQueries, try !store.savedQueries().filter({ $0.table == table }).isEmpty {
            Console.note(
                "kept the saved queries of \(table): purged records come back when they change on the server (--forget-queries: pull them all again)"
            )
        }
    }

    /// "purge 3 records from todo, drop 1 pending operation, forget 1 saved query" (or, `done`,
    /// "purged …, dropped …, forgot …").
    private func describe(_ result: PurgeResult, done: Bool = false) -> String {
        var message = "\(done ? "purged" : "purge") \(StatusFormat.count(result.records, "record")) from \(table)"
        if result.operations > 0 {
            message += ", \(done ? "dropped" : "drop") \(StatusFormat.count(result.operations, "pending operation"))"
        }
        if result.queries > 0 {
            message += ", \(done ? "forgot" : "forget") \(StatusFormat.count(result.queries, "saved query", plural: "saved queries"))"
        }
        return message
    }
}
