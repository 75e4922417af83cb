import TSyncEngine
import TSyncModel

/// The human lines of push, pull and sync (summaries on stderr, dry-run lists on stdout).
enum SyncFormat {
    /// "pushed 120, 3 failed (2 conflicts), 1 held back by earlier unsettled errors — run `tsync
    /// conflicts`". The numbers are those of `push --json`.
    static func pushSummary(_ summary: PushSummary, dryRun: Bool) -> String {
        if dryRun {
            var line = summary.wouldPush == 0 ? "nothing to push" : "would push \(StatusFormat.count(summary.wouldPush, "operation"))"
            if summary.heldBack > 0 { line += ", \(summary.heldBack) held back by unsettled errors — run `tsync conflicts`" }
            return line
        }
        if summary.pushed == 0 && summary.failed == 0 && summary.heldBack == 0 && summary.settled.isEmpty { return "nothing to push" }
        var parts = ["pushed \(summary.pushed)"]
        if summary.alreadyApplied > 0 { parts.append("\(summary.alreadyApplied) already on the server") }
        if !summary.settled.isEmpty {
            let byPolicy = summary.settled.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.value) \($0.key.rawValue)" }
            let total = summary.settled.values.reduce(0, +)
            parts.append("settled \(StatusFormat.count(total, "conflict")) (\(byPolicy.joined(separator: ", ")))")
            if summary.rounds > 1 { parts.append("\(StatusFormat.count(summary.rounds - 1, "push", plural: "pushes")) again") }
        }
        if summary.failed > 0 {
            parts.append(
                "\(summary.failed) failed" + (summary.conflicts > 0 ? " (\(StatusFormat.count(summary.conflicts, "conflict")))" : ""))
        }
        if summary.heldBack > 0 {
            parts.append("\(summary.heldBack) held back by unsettled errors")
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
        if let resync = summary.horizonResync { line = horizonLine(summary.table, resync) + "\n" + line }
        return line
    }

    /// The line a pull says when the server had removed deleted records past its checkpoint
    /// (docs/DESIGN.md §15).
    static func horizonLine(_ table: String, _ resync: HorizonResync) -> String {
        var line =
            "the server removed deleted records of \(table) up to \(resync.horizon.iso8601), after this query's checkpoint: read the query whole and dropped \(StatusFormat.count(resync.dropped, "local record")) the server no longer has"
        if resync.kept > 0 { line += ", kept \(resync.kept) with pending changes" }
        return line
    }

    /// `push --check`: "OUTCOME<TAB>KIND<TAB>TABLE<TAB>ID", then the fields each side changed.
    static func checkLine(_ prediction: PushPrediction) -> String {
        let operation = prediction.operation
        var line = "\(outcomeName(prediction.outcome))\t\(operation.kind.rawValue)\t\(operation.table)\t\(operation.itemID)"
        if prediction.outcome != .succeeds {
            let sides = checkDetails(prediction)
            if !sides.isEmpty { line += "\t" + sides.joined(separator: "; ") }
        }
        return line + "\n"
    }

    /// What a check says of an operation that would not simply go through: the server's
    /// version, the fields each side changed, the policy that would settle it.
    static func checkDetails(_ prediction: PushPrediction) -> [String] {
        var sides: [String] = []
        if let version = prediction.server?.system.version { sides.append("server version \(version)") }
        if !prediction.changedByUs.isEmpty { sides.append("ours changed " + prediction.changedByUs.joined(separator: ", ")) }
        if prediction.server?.system.deleted == true {
            sides.append("deleted on the server")
        } else if !prediction.changedByThem.isEmpty {
            sides.append("theirs changed " + prediction.changedByThem.joined(separator: ", "))
        }
        if let policy = prediction.settledBy { sides.append("settled by " + policy.rawValue) }
        return sides
    }

    static func outcomeName(_ outcome: PushPrediction.Outcome) -> String {
        switch outcome {
        case .succeeds: "ok"
        case .heldBack: "held-back"
        case .fails(let failure): failure.rawValue
        }
    }

    /// "of 5 queued operations, 3 would go through, 1 would be settled (merge), 1 would not (1
    /// held back by an unsettled error)"; no pointer to `tsync conflicts`, which a check does not fill.
    static func checkSummary(_ predictions: [PushPrediction]) -> String {
        if predictions.isEmpty { return "nothing to push" }
        let ok = predictions.filter { $0.outcome == .succeeds }.count
        var line = "of \(StatusFormat.count(predictions.count, "queued operation")), \(ok) would go through"
        var settled: [String: Int] = [:]
        for prediction in predictions where prediction.wouldBeSettled {
            if let policy = prediction.settledBy { settled[policy.rawValue, default: 0] += 1 }
        }
        if !settled.isEmpty {
            let byPolicy = settled.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
            line += ", \(settled.values.reduce(0, +)) would be settled (\(byPolicy))"
        }
        let failing = predictions.filter(\.wouldFail)
        if !failing.isEmpty {
            line += ", \(failing.count) would not"
            let waiting = failing.filter { $0.outcome == .heldBack }.count
            if waiting > 0 { line += " (\(waiting) held back by unsettled errors)" }
            // No "run `tsync conflicts`": a check writes nothing to the error table.
        }
        return line
    }

    /// `resolve --dry-run`: "#ID<TAB>TABLE/ID<TAB>WHAT".
    static func resolutionLine(_ entry: ResolveReport.Entry) -> String {
        let error = entry.error
        let what: String
        switch (entry.outcome, entry.after.pending, entry.after.record) {
        case (.refused(let reason), _, _): what = "refused: " + reason
        case (.settled, let kind?, _): what = "push " + kind.rawValue
        case (.settled, nil, _?): what = "keep local record"
        case (.settled, nil, nil): what = "remove local record"
        }
        return "#\(error.id)\t\(error.table)/\(error.itemID)\t\(what)\n"
    }

    /// `push --dry-run`: "KIND<TAB>TABLE<TAB>ID", like `status --porcelain` but only what is sent.
    static func dryRunLine(_ operation: OutgoingOperation) -> String {
        "\(operation.operation.kind.statusLetter)\t\(operation.operation.table)\t\(operation.operation.itemID)\n"
    }
}
