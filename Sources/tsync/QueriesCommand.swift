import ArgumentParser
import TSyncEngine

struct QueriesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queries",
        abstract: "List saved pull query ids with their checkpoints.",
        discussion: """
            One line per saved query: TABLE, query id, filter, checkpoint (updatedAt and id of the \
            last record pulled) and the time of the last pull. `tsync pull TABLE --query-id ID \
            --reset` forgets a checkpoint; `tsync purge TABLE` drops the table's queries.

            --json prints [{"table", "queryId", "filter", "checkpoint": null or {"updatedAt", "id"}, \
            "lastPullAt"}].

            EXAMPLES
              tsync queries
              tsync queries --json | jq -r '.[].queryId'
            """)

    @OptionGroup var storeOptions: StoreOptions

    @OptionGroup var output: JSONOption

    func run() throws {
        let queries = try storeOptions.open().savedQueries()
        if output.json {
            Console.write(JSONReports.line(.array(queries.map(JSONReports.savedQuery))))
            return
        }
        var text = ""
        for query in queries {
            let checkpoint = query.checkpoint.map { "\($0.updatedAt.iso8601) \($0.id)" } ?? "(none)"
            text += "\(query.table)\t\(query.queryID)\tfilter: \(query.filter ?? "(none)")\tcheckpoint: \(checkpoint)"
            text += "\tlast pull: \(query.lastPullAt?.iso8601 ?? "never")\n"
        }
        if queries.isEmpty, Console.stdoutIsTerminal { Console.note("no saved queries: `tsync pull TABLE` saves one") }
        Console.write(text)
    }
}
