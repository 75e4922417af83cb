import ArgumentParser
import TSyncEngine

struct TablesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tables",
        abstract: "List local tables with record, pending and error counts.",
        discussion: """
            A table is listed while it has records, queued operations or a saved query (`tsync pull --query-id`); one whose records all went, or that a pull found empty, is not.

            --json prints [{"table", "records", "pending", "errors"}]: local records, queued \
            operations, and operations with a recorded error.

            EXAMPLES
              tsync tables
              tsync tables --json | jq -r '.[] | select(.errors > 0) | .table'
            """)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: JSONOption

    func run() throws {
        Listing.print(
            try storeOptions.open().tables(), json: output.json, as: JSONReports.tables,
            whenEmpty: "no tables yet: `tsync insert TABLE` or `tsync pull TABLE` creates one"
        ) { tables in
            let rows =
                [["TABLE", "RECORDS", "PENDING", "ERRORS"]]
                + tables.map { [$0.table, String($0.records), String($0.pending), String($0.errors)] }
            return TextTable.render(rows, rightAligned: [1, 2, 3])
        }
    }
}

/// Columns padded to their widest cell.
enum TextTable {
    static func render(_ rows: [[String]], rightAligned: Set<Int> = []) -> String {
        var widths: [Int] = []
        for row in rows {
            for (column, cell) in row.enumerated() {
                if column >= widths.count { widths.append(0) }
                widths[column] = max(widths[column], cell.count)
            }
        }
        var text = ""
        for row in rows {
            var cells: [String] = []
            for (column, cell) in row.enumerated() {
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                let isLast = column == row.count - 1
                cells.append(rightAligned.contains(column) ? padding + cell : (isLast ? cell : cell + padding))
            }
            text += cells.joined(separator: "  ") + "\n"
        }
        return text
    }
}
