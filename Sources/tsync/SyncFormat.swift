import TSyncEngine
import TSyncModel

/// The human lines of push, pull and sync (summaries on stderr, dry-run lists on stdout).
enum SyncFormat {
    /// "pushed 120, 2 conflicts — run `tsync conflicts`".
    static func pushSummary(_ summary: PushSummary, dryRun: Bool) -> String {
        if dryRun {
            var line = summary.wouldPush == 0 ? "nothing to push" : "would push \(StatusFormat.count(summary.wouldPush, "operation"))"
            if summary.heldBack > 0 { line += ", \(summary.heldBack) held back by unresolved errors — run `tsync conflicts`" }
            return line
        }
        if summary.pushed == 0 && summary.failed == 0 && summary.heldBack == 0 { return "nothing to push" }
        var parts = ["pushed \(summary.pushed)"]
        if summary.alreadyApplied > 0 { parts.append("\(summary.alreadyApplied) already on the server") }
        if summary.conflicts > 0 { parts.append(StatusFormat.count(summary.conflicts, "conflict")) }
        if summary.failed > summary.conflicts { parts.append("\(summary.failed - summary.conflicts) failed") }
        if summary.heldBack > 0 && summary.failed == 0 {
            parts.append("\(summary.heldBack) held back by unresolved errors")
        }
        var line = parts.joined(separator: ", ")
        if summary.failed > 0 || summary.heldBack > 0 { line += " — run `tsync conflicts`" }
        return line
    }

    /// "pulled todoitem: 1000 received, 998 written, 2 deleted, 0 skipped (1 page)".
    static func pullSummary(_ summary: PullSummary) -> String {
        let counts = summary.counts
        var line = "pulled \(summary.table)"
        if let queryID = summary.queryID { line += " (\(queryID))" }
        line += ": \(counts.received) received, \(counts.upserted) written, \(counts.deleted) deleted"
        if counts.skipped > 0 { line += ", \(counts.skipped) kept (pending local changes)" }
        line += " in \(StatusFormat.count(counts.pages, "page"))"
        if summary.push.pushed > 0 { line = "pushed \(summary.push.pushed) first; " + line }
        return line
    }

    /// `push --dry-run`: "KIND<TAB>TABLE<TAB>ID", like `status --porcelain` but only what is sent.
    static func dryRunLine(_ operation: OutgoingOperation) -> String {
        "\(operation.operation.kind.statusLetter)\t\(operation.operation.table)\t\(operation.operation.itemID)\n"
    }
}
