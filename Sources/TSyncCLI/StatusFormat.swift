import TSyncEngine

/// The text forms of `tsync status`.
enum StatusFormat {
    /// Items listed per table in the long form; the rest are counted (porcelain lists them all).
    static let itemsShownPerTable = 10

    /// `CODE<TAB>TABLE<TAB>ID`: the line of one operation, in queue order.
    static func porcelain(_ operation: QueuedItem, to out: inout StreamedOutput) {
        // U (unsettled error) followed by the kind of the operation that failed: UA, UM, UD.
        if operation.failed { out.append(byte: UInt8(ascii: "U")) }
        out.append(byte: operation.kind.statusLetter.asciiValue ?? UInt8(ascii: "?"))
        out.append(byte: UInt8(ascii: "\t"))
        out.append(operation.table)
        out.append(byte: UInt8(ascii: "\t"))
        out.append(operation.itemID)
        out.append(byte: UInt8(ascii: "\n"))
    }

    static func short(_ report: StatusReport, style: Style) -> String {
        var text = ""
        for table in report.tables {
            var line = "\(style.bold(table.table)): \(table.inserts) added, \(table.updates) modified, \(table.deletes) deleted"
            line += ", " + (table.errors > 0 ? style.red("\(table.errors) failed") : "0 failed")
            text += line + "\n"
        }
        return text
    }

    static func long(_ report: StatusReport, style: Style) -> String {
        var lines: [String] = []
        lines.append("Store: \(report.storeDirectory)")
        lines.append("Remote: " + (report.remote ?? "none (set one with `tsync remote URL`)"))
        if report.isClean {
            lines.append("")
            lines.append("Nothing to push: no pending operations.")
        } else {
            let errors = report.errorCount
            var summary =
                "\(count(report.pendingCount, "pending operation")) in \(count(report.tables.count, "table"))"
            if errors > 0 { summary += ", " + style.red(count(errors, "error")) }
            lines.append("")
            lines.append(summary + ":")
            var byTable: [String: [PendingOperation]] = [:]
            for operation in report.samples { byTable[operation.table, default: []].append(operation) }
            for table in report.tables {
                lines.append("")
                var heading = "  \(style.bold(table.table)): \(table.pending) pending ("
                heading +=
                    [(table.inserts, "insert"), (table.updates, "update"), (table.deletes, "delete")]
                    .filter { $0.0 > 0 }.map { count($0.0, $0.1) }.joined(separator: ", ") + ")"
                if table.errors > 0 { heading += ", " + style.red(count(table.errors, "error")) }
                lines.append(heading)
                for operation in (byTable[table.table] ?? []).prefix(itemsShownPerTable) {
                    lines.append("    " + item(operation, style: style))
                }
                if table.pending > itemsShownPerTable {
                    lines.append(
                        "    … and \(table.pending - itemsShownPerTable) more (`tsync status --porcelain` lists them all)")
                }
            }
            lines.append("")
            lines.append(style.dim("(use `tsync diff` to see the changes, `tsync push` to send them)"))
            if errors > 0 {
                lines.append(
                    style.dim("(\(count(errors, "operation")) failed: run `tsync conflicts`, then `tsync resolve`)"))
            }
        }
        if !report.savedQueries.isEmpty {
            lines.append("")
            lines.append("\(count(report.savedQueries.count, "saved query", plural: "saved queries")) (`tsync queries` lists them)")
            // A pull stopped by Ctrl-C (or SIGTERM) between pages: what came is kept, the rest is not here yet.
            for query in report.savedQueries {
                guard let stoppedAt = query.stoppedAt else { continue }
                let pull = ["tsync", "pull", query.table, "--query-id", query.queryID].map(LogCommand.shellQuoted).joined(separator: " ")
                lines.append(
                    style.yellow("  the pull of \(query.table) (query \(query.queryID)) stopped part way at \(stoppedAt.iso8601)")
                        + style.dim("; `\(pull)` goes on from where it stopped"))
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func item(_ operation: PendingOperation, style: Style) -> String {
        let inFlight = operation.state == .inflight ? style.dim(" (sent, not yet confirmed)") : ""
        if let error = operation.error {
            let status = error.httpStatus.map { "\($0): " } ?? ""
            return style.red("failed:    ") + operation.itemID + inFlight
                + style.dim("  (\(operation.kind.rawValue), \(status)\(error.message))")
        }
        switch operation.kind {
        case .insert: return style.green("added:     ") + operation.itemID + inFlight
        case .update: return style.yellow("modified:  ") + operation.itemID + inFlight
        case .delete: return style.red("deleted:   ") + operation.itemID + inFlight
        }
    }

    static func count(_ number: Int, _ noun: String, plural: String? = nil) -> String {
        "\(number) " + (number == 1 ? noun : (plural ?? noun + "s"))
    }
}
