import ArgumentParser
import TSyncEngine
import TSyncModel

/// The `--json` shapes of push, pull, sync, conflicts and resolve. Like `JSONReports`, the field
/// names are a stable interface: add fields, never rename or remove them.
enum SyncReports {
    /// `push`: {"dryRun", "pushed", "alreadyApplied", "failed", "conflicts", "heldBack",
    /// "interrupted", "requests", "operations": [{"seq", "table", "id", "kind"}] (what --dry-run would
    /// send)}.
    static func push(_ summary: PushSummary, dryRun operations: [OutgoingOperation]?) -> JSONValue {
        [
            "dryRun": .bool(operations != nil),
            "pushed": count(summary.pushed),
            "alreadyApplied": count(summary.alreadyApplied),
            "failed": count(summary.failed),
            "conflicts": count(summary.conflicts),
            "heldBack": count(summary.heldBack),
            "interrupted": .bool(summary.interrupted),
            "requests": count(summary.requests),
            "conflictsMet": count(summary.conflictsMet),
            "settled": .object(Dictionary(uniqueKeysWithValues: summary.settled.map { ($0.key.rawValue, count($0.value)) })),
            "rounds": count(summary.rounds),
            "operations": .array(
                (operations ?? []).map { outgoing in
                    [
                        "seq": .int(outgoing.operation.seq), "table": .string(outgoing.operation.table),
                        "id": .string(outgoing.operation.itemID), "kind": .string(outgoing.operation.kind.rawValue),
                    ]
                }),
        ]
    }

    /// `push --check`: {"wouldSucceed", "wouldFail", "heldBack", "operations": [{"seq", "table",
    /// "id", "kind", "outcome", "serverVersion", "serverDeleted", "changedByUs", "changedByThem"}]}.
    static func check(_ predictions: [PushPrediction]) -> JSONValue {
        [
            "wouldSucceed": count(predictions.filter { $0.outcome == .succeeds }.count),
            "wouldFail": count(predictions.filter(\.wouldFail).count),
            "wouldBeSettled": count(predictions.filter(\.wouldBeSettled).count),
            "heldBack": count(predictions.filter { $0.outcome == .heldBack }.count),
            "operations": .array(
                predictions.map { prediction in
                    let operation = prediction.operation
                    return [
                        "seq": .int(operation.seq), "table": .string(operation.table), "id": .string(operation.itemID),
                        "kind": .string(operation.kind.rawValue), "outcome": .string(SyncFormat.outcomeName(prediction.outcome)),
                        "settledBy": prediction.settledBy.map { .string($0.rawValue) } ?? .null,
                        "serverVersion": prediction.server?.system.version.map(JSONValue.string) ?? .null,
                        "serverDeleted": .bool(prediction.server?.system.deleted ?? false),
                        "changedByUs": names(prediction.changedByUs), "changedByThem": names(prediction.changedByThem),
                    ]
                }),
        ]
    }

    /// `pull`: {"table", "queryId", "received", "upserted", "deleted", "skipped", "pages", "pushed",
    /// "checkpoint": null | {"updatedAt", "id"}, "interrupted"}.
    static func pull(_ summary: PullSummary) -> JSONValue {
        [
            "table": .string(summary.table),
            "queryId": summary.queryID.map(JSONValue.string) ?? .null,
            "received": count(summary.counts.received),
            "upserted": count(summary.counts.upserted),
            "deleted": count(summary.counts.deleted),
            "skipped": count(summary.counts.skipped),
            "pages": count(summary.counts.pages),
            "pushed": count(summary.push.pushed),
            "checkpoint": checkpoint(summary.checkpoint),
            "interrupted": .bool(summary.interrupted),
        ]
    }

    static func checkpoint(_ checkpoint: Checkpoint?) -> JSONValue {
        checkpoint.map { ["updatedAt": .string($0.updatedAt.iso8601), "id": .string($0.id)] } ?? .null
    }

    /// `conflicts`: one error: {"id", "seq", "table", "itemId", "kind", "status", "class", "message",
    /// "createdAt", "base", "ours", "theirs", "sent" (wire objects or null), "changedByUs",
    /// "changedByThem", "differing" (user field names)}.
    static func conflict(_ details: ConflictDetails) -> JSONValue {
        let error = details.error
        return [
            "id": .int(error.id),
            "seq": .int(error.operationSeq),
            "table": .string(error.table),
            "itemId": .string(error.itemID),
            "kind": .string(error.kind.rawValue),
            "status": error.httpStatus.map { .int(Int64($0)) } ?? .null,
            "class": .string(details.failureClass.rawValue),
            "message": .string(error.message),
            "createdAt": .string(error.createdAt.iso8601),
            "base": record(details.base),
            "ours": record(details.ours),
            "theirs": record(details.theirs),
            "sent": error.sentItem.map(JSONValue.object) ?? .null,
            "changedByUs": names(details.fieldsChangedByUs),
            "changedByThem": names(details.fieldsChangedByThem),
            "differing": names(details.differingFields),
        ]
    }

    /// `resolve --json`: [{"id", "table", "itemId", "class", "kind", "settled", "pending",
    /// "pendingKind", "record", "reason", "dryRun"}].
    static func resolve(_ report: ResolveReport, dryRun: Bool) -> JSONValue {
        .array(
            report.entries.map { entry in
                var settled = false
                var reason: JSONValue = .null
                switch entry.outcome {
                case .settled: settled = true
                case .refused(let why): reason = .string(why)
                }
                let pending = entry.after.pending != nil
                return [
                    "id": .int(entry.error.id), "table": .string(entry.error.table),
                    "itemId": .string(entry.error.itemID), "class": .string(entry.error.failureClass.rawValue),
                    "kind": .string(entry.error.kind.rawValue), "settled": .bool(settled), "pending": .bool(pending),
                    "pendingKind": entry.after.pending.map { .string($0.rawValue) } ?? .null, "record": record(entry.after.record),
                    "reason": reason, "dryRun": .bool(dryRun),
                ]
            })
    }

    private static func record(_ record: Record?) -> JSONValue {
        record.map { .object($0.wireObject) } ?? .null
    }

    private static func names(_ names: [String]) -> JSONValue { .array(names.map(JSONValue.string)) }

    private static func count(_ value: Int) -> JSONValue { .int(Int64(value)) }
}

extension ReportOptions {
    /// How a pull or sync ends that went on past `failures` (docs/DESIGN.md §8): each is said, as
    /// one error line, and the command exits with the worst of them and of the verdict
    /// (`ExitStatus.worst`); a stopped command ends as `conclude` says, whatever failed before.
    func conclude(
        _ verdict: CommandSession.Verdict, failures: [TSyncError], failed: String, interrupted: () throws -> String
    ) throws {
        if case .interrupted = verdict { try conclude(verdict, interrupted: interrupted) }
        guard !failures.isEmpty else { return try conclude(verdict, failed: failed, interrupted: interrupted) }
        var all = failures
        if case .operationsFailed = verdict { all.append(TSyncError(.operationsFailed, failed)) }
        guard let worst = ExitStatus.worst(all) else { return }
        if quiet { throw ExitCode(ExitStatus.code(for: worst.kind)) }
        for failure in all where failure != worst { Console.error(failure.commandLineMessage) }
        throw worst
    }
}
