import ArgumentParser
import TSyncEngine
import TSyncModel

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show pending operations, errors, saved queries and the remote.",
        discussion: """
            Forms:
              (default)    grouped by table, counts first, with the next command to run
              --short      one line per table with pending work: "TABLE: N added, N modified, \
            N deleted, N failed"; nothing when clean
              --porcelain  one line per queued operation, in push order: CODE<TAB>TABLE<TAB>ID, \
            where CODE is A (insert), M (update), D (delete), or UA, UM, UD (an insert, update or \
            delete whose last push failed: see `tsync conflicts`). Fields are separated by one TAB \
            (ids cannot contain control characters); nothing when clean. This format will not \
            change.
              --json       {"store", "remote", "clean", "pending", "errors", "tables": [{"table", \
            "pending", "inserts", "updates", "deletes", "errors"}], "operations": [{"seq", "table", \
            "id", "kind", "state", "queuedAt", "error": null or {"id", "status", "message"}}], \
            "queries": [{"table", "queryId", "filter", "checkpoint": null or {"updatedAt", "id"}, \
            "lastPullAt", "stoppedAt": null or when a pull of it stopped part way}]}
              --ndjson     one JSON object per queued operation, in push order, as in "operations"

            --exit-code exits 1 when anything is pending (in any form), 0 when the store is clean.

            EXAMPLES
              tsync status
              tsync status --porcelain | grep "^U"        # operations whose push failed
              tsync status --exit-code >/dev/null || tsync push
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Flag(name: .shortAndLong, help: "One line per table with pending work.")
    var short = false

    @Flag(help: "One line per pending operation, stable for scripts.")
    var porcelain = false

    @OptionGroup var output: JSONLinesOptions

    @Flag(help: "Exit 1 when anything is pending.")
    var exitCode = false

    func validate() throws {
        if [short, porcelain, output.json, output.ndjson].filter({ $0 }).count > 1 {
            throw ValidationError("choose one of --short, --porcelain, --json and --ndjson")
        }
    }

    func run() throws {
        let store = try storeOptions.open()
        let isClean: Bool
        if output.json {
            // The operations are written as they are read, between the object's head and its
            // tail, whose counts are those of the operations written.
            isClean = try store.status { (head, operations) throws(TSyncError) -> Bool in
                var out = StreamedOutput()
                out.append(JSONReports.statusHead(head))
                var first = true
                while out.flushed(), let operation = try operations.next() {
                    if !first { out.append(byte: UInt8(ascii: ",")) }
                    out.append(json: JSONReports.operation(operation))
                    first = false
                }
                out.append(JSONReports.statusTail(operations.report))
                out.flush()
                return head.isClean
            }
        } else if porcelain {
            var out = StreamedOutput()
            var empty = true
            try store.queuedItems { item in
                StatusFormat.porcelain(item, to: &out)
                empty = false
                return out.flushed()
            }
            out.flush()
            isClean = empty
        } else if output.ndjson {
            isClean = try store.pendingOperations { (operations) throws(TSyncError) -> Bool in
                var out = StreamedOutput()
                var isClean = true
                while out.flushed(), let operation = try operations.next() {
                    out.append(json: JSONReports.operation(operation))
                    out.append(byte: UInt8(ascii: "\n"))
                    isClean = false
                }
                out.flush()
                return isClean
            }
        } else {
            let report = try store.status(samplesPerTable: short ? 0 : StatusFormat.itemsShownPerTable)
            let style = Style(enabled: Console.colorOnStdout)
            Console.write(short ? StatusFormat.short(report, style: style) : StatusFormat.long(report, style: style))
            isClean = report.isClean
        }
        if exitCode, !isClean { throw ExitCode(ExitStatus.failure) }
    }
}
