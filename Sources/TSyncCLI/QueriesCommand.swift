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
            "lastPullAt", "stoppedAt": null or when a pull of it stopped part way}].

            EXAMPLES
              tsync queries
              tsync queries --json | jq -r '.[].queryId'
            """)

    @OptionGroup var storeOptions: StoreOptions

    @OptionGroup var output: JSONOption

    func run() throws {
        Listing.print(
            try storeOptions.open().savedQueries(), json: output.json, as: { .array($0.map(JSONReports.savedQuery)) },
            whenEmpty: "no saved queries: `tsync pull TABLE` saves one"
        ) { queries in
            var text = ""
            for query in queries {
                let checkpoint = query.checkpoint.map { "\($0.updatedAt.iso8601) \($0.id)" } ?? "(none)"
                text += "\(query.table)\t\(query.queryID)\tfilter: \(query.filter ?? "(none)")\tcheckpoint: \(checkpoint)"
                text += "\tlast pull: \(query.lastPullAt?.iso8601 ?? "never")\n"
            }
            return text
        }
    }
}
