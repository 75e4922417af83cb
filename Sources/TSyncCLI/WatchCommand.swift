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
            seconds), "horizon", "dropped", "kept" (resynced). Events: pulled, deleted, pushed, \
            conflict, settled, connected, reconnecting, polling, resynced (the server removed \
            deleted records past the query's checkpoint: the query was read whole, and a deleted \
            event follows for each local record dropped). Fields are only ever added to.

            --exec CMD runs `sh -c CMD` after each batch of changes (a page pulled, a push), with \
            that batch's events as JSON lines on its stdin; a command that fails is reported and \
            watching goes on.

            A server without the live route (a plain Mobile Apps v2 server) is asked every \
            --interval seconds instead, which is said once. A server that cannot be reached is \
            asked again after a jittered, growing delay (up to 10 s), and so is one whose answer \
            cannot be taken (a 5xx, a page out of order) or a store whose push lock another \
            command holds: "reconnecting" is said when that starts and each time the delay \
            grows, "connected" when the server answers again (and before the first change it \
            sends). --timeout ends the watch after that many seconds (exit 0); SIGINT (Ctrl-C) \
            finishes the step under way and exits 130 without a word, SIGTERM 143. When the \
            reader of stdout goes (`tsync watch | head -1`), the watch ends too, silently, with \
            141 as a command killed by SIGPIPE.

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
        let stopRequest = command.stopRequest
        let output = WatchOutput(json: json, exec: exec) { stopRequest.stop(signal: SIGPIPE) }
        Interrupts.forward(to: stopRequest)
        ReaderWatch.start { stopRequest.stop(signal: SIGPIPE) }
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
            // Ctrl-C is how a watch is ended, and a reader that went wants nothing more: no
            // word for either (an error met on the way out is still said).
            if let error {
                Console.error("interrupted: \(error.commandLineMessage)")
            } else if signal != SIGINT, signal != SIGPIPE {
                Console.note("stopped watching (interrupted by signal \(signal)); what was done is kept")
            }
            throw ExitCode(128 + signal)
        }
    }
}

/// Watches stdout for its reader going away while the watch has nothing to write: a pipe whose
/// reading end is closed (`| head -1` after its line) reports an error to `poll` at once, so the
/// watch ends then, not at its next change. Only for a pipe or a socket: a terminal or a file
/// has no reader to lose.
enum ReaderWatch {
    static func start(_ gone: @escaping @Sendable () -> Void) {
        var status = stat()
        guard fstat(STDOUT_FILENO, &status) == 0 else { return }
        let type = status.st_mode & S_IFMT
        guard type == S_IFIFO || type == S_IFSOCK else { return }
        Thread {
            var descriptor = pollfd(fd: STDOUT_FILENO, events: 0, revents: 0)
            while true {
                let ready = poll(&descriptor, 1, -1)
                if ready < 0, errno == EINTR { continue }
                guard ready > 0 else { return }
                if descriptor.revents & Int16(POLLERR | POLLHUP) != 0 {
                    gone()
                    return
                }
            }
        }.start()
    }
}
