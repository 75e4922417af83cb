import ArgumentParser
import Foundation
import TSyncEngine
import TSyncModel

struct WatchCommand: AsyncParsableCommand, JournaledCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Keep the store current both ways: pull changes as they are committed, push what is queued.",
        discussion: """
            Starts with a `tsync sync` (push with the conflict policies, then a pull of every saved \
            query id, or of those of the --table tables). Then it waits on the server for the next \
            change of each watched query and writes it as `pull` would (the checkpoint moves only \
            with what is written, so nothing is lost or applied twice across reconnects), and it \
            pushes the operations other tsync commands queue in this store (one shell runs \
            `watch`, another `insert`) within a fraction of a second. The store is never held \
            between steps: those commands do not wait.

            It prints one line per change on stdout ("pulled TABLE/ID", "deleted TABLE/ID", \
            "pushed insert TABLE/ID", "conflict update TABLE/ID: why", "settled TABLE/ID by \
            theirs") and what happens to the connection on stderr. --json prints one JSON object \
            per line instead, all on stdout: {"event", "table", "id", "at"} and, where they apply, \
            "queryId" (pulled, deleted), "version" (pulled, deleted, pushed), "operation" (pushed, \
            conflict: insert, update, delete), "policy" (settled: ours, theirs, merge), "message" \
            (conflict, reconnecting), "retryIn" (reconnecting: seconds), "interval" (polling: \
            seconds). Events: pulled, deleted, pushed, conflict, settled, connected, reconnecting, \
            polling. Fields are only ever added to.

            --exec CMD runs `sh -c CMD` after each batch of changes (a page pulled, a push), with \
            that batch's events as JSON lines on its stdin; a command that fails is reported and \
            watching goes on.

            A server without the live route (a plain Mobile Apps v2 server) is asked every \
            --interval seconds instead, which is said once. A server that cannot be reached is \
            asked again after a jittered, growing delay (up to 10 s), and the reconnection is \
            reported. --timeout ends the watch after that many seconds (exit 0); SIGINT finishes \
            the step under way and exits 130, SIGTERM 143.

            EXAMPLES
              tsync pull todo --query-id all && tsync watch
              tsync watch --table todo --json --exec 'jq -r .id >> changed.txt'
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Option(
        name: .customLong("table"), help: ArgumentHelp("Watch only this table's saved queries (repeatable).", valueName: "TABLE"),
        completion: StoreCompletion.tables)
    var tables: [String] = []

    @Flag(name: .long, help: "Print one JSON object per event (fields listed above).")
    var json = false

    @Option(
        name: .customLong("exec"),
        help: ArgumentHelp("Run `sh -c CMD` after each batch of changes, with its events on stdin.", valueName: "CMD"))
    var exec: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("End after this many seconds (exit 0).", valueName: "SECONDS"))
    var timeout: Double?

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp("Seconds between reads of a server without the live route.", valueName: "SECONDS"))
    var interval: Double = 5

    @OptionGroup var conflicts: ConflictOptions

    @Flag(name: .shortAndLong, help: "Show each HTTP request and its answer on stderr (never a token).")
    var verbose = false

    func validate() throws {
        if let timeout, !(timeout > 0) { throw ValidationError("--timeout must be more than 0 seconds (got \(timeout))") }
        guard interval >= 0.1 else { throw ValidationError("--interval must be at least 0.1 seconds (got \(interval))") }
        for table in tables {
            do { try Identifiers.validateTableName(table) } catch { throw ValidationError("--table \(table): \(error.message)") }
        }
    }

    func run() async throws {
        let command = try storeOptions.session()
        let policies = try conflicts.policies(command.store)
        let output = WatchOutput(json: json, exec: exec)
        Interrupts.forward(to: command.stopRequest)
        let session = try RemoteAccess.session(command, verbose: verbose)
        let options = LiveOptions(
            tables: tables, interval: .milliseconds(Int(interval * 1000)), timeout: timeout.map { .milliseconds(Int($0 * 1000)) },
            policies: policies)
        let outcome = try await command.run { () async throws(TSyncError) -> LiveEnd in
            try await session.watch(options) { events in await output.show(events) }
        } verdict: { end in
            (interrupted: end == .stopped, failed: 0)
        }
        if case .interrupted(let signal, let error) = outcome.verdict {
            Console.error("interrupted: \(error?.commandLineMessage ?? "stopped watching; what was done is kept")")
            throw ExitCode(128 + signal)
        }
    }
}
