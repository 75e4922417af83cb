import ArgumentParser
import TSyncEngine
import TSyncModel

struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Push, then pull every saved query id.",
        discussion: """
            Runs `tsync push`, then `tsync pull TABLE --query-id ID` for every saved query \
            (`tsync queries`), each with its saved filter and checkpoint. Operations that fail in \
            the push are recorded and the pulls still run (items with pending changes are never \
            overwritten); the exit code is then 2. An unreachable server (3) or a refused login (4) \
            stops at once.

            --json prints {"push": <push result>, "pulls": [<pull result>, ...]} with the fields \
            of `push --json` and `pull --json`.
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Flag(help: "Print the result as JSON.")
    var json = false

    @Flag(name: .shortAndLong, help: "No progress and no summary lines on stderr.")
    var quiet = false

    func run() async throws {
        let store = try storeOptions.open()
        let progress = ProgressLine(quiet: quiet)
        let quiet = self.quiet
        let (push, pulls) = try await RemoteAccess.with(store) { remote throws(TSyncError) in
            defer { progress.finish() }
            let push = try await Pusher(store: store, remote: remote).push(tables: nil, progress: progress.reporter("pushing"))
            progress.finish()
            if !quiet { Console.note(SyncFormat.pushSummary(push, dryRun: false)) }
            var pulls: [PullSummary] = []
            for query in try store.savedQueries() {
                let summary = try await Puller(store: store, remote: remote).pull(
                    PullRequest(table: query.table, queryID: query.queryID),
                    progress: progress.reporter("pulling \(query.table):"))
                progress.finish()
                if !quiet { Console.note(SyncFormat.pullSummary(summary)) }
                pulls.append(summary)
            }
            return (push, pulls)
        }
        if json {
            Console.write(JSONReports.line(["push": SyncReports.push(push, dryRun: nil), "pulls": .array(pulls.map(SyncReports.pull))]))
        }
        let errors = try store.operationErrors().count
        if errors > 0 {
            throw TSyncError(.operationsFailed, "\(StatusFormat.count(errors, "operation")) failed — run `tsync conflicts`")
        }
    }
}
