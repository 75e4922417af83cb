import TSyncEngine
import TSyncModel

/// The `--json` shapes of the read commands. Field names here are a public, stable interface:
/// scripts depend on them, and each command's help lists them. Add fields; never rename or remove.
enum JSONReports {
    /// One line of JSON: compact, keys sorted (`id` first), ending in a newline.
    static func line(_ value: JSONValue) -> String {
        JSONSerializer.string(value) + "\n"
    }

    /// `get`, `query`: the record's wire object — its user fields, `id`, `createdAt`,
    /// `updatedAt`, `version` (these three absent until the server has seen the record) and
    /// `deleted` (always false locally).
    static func record(_ record: Record) -> JSONValue { .object(record.wireObject) }

    /// `history`: `{"version", "updatedAt", "user" (null without accounts), "operation"
    /// (insert|update|delete|undelete), "item"}`, "item" the whole record after the write.
    static func recordVersion(_ version: RecordVersion) -> JSONValue {
        [
            "version": .string(version.version), "updatedAt": .string(version.updatedAt.iso8601),
            "user": version.user.map(JSONValue.string) ?? .null, "operation": .string(version.operation.rawValue),
            "item": .object(version.item.wireObject),
        ]
    }

    /// `revert`, `restore`: `{"table", "id", "kind" (update|delete|undelete|insert), "discarded"}`.
    static func revertChange(_ change: RevertChange) -> JSONValue {
        [
            "table": .string(change.table), "id": .string(change.id), "kind": .string(change.kind.rawValue),
            "discarded": .bool(change.discarded),
        ]
    }

    /// `tables`: `[{"table", "records", "pending", "errors"}]`.
    static func tables(_ tables: [TableSummary]) -> JSONValue {
        .array(
            tables.map { summary in
                [
                    "table": .string(summary.table), "records": .int(Int64(summary.records)),
                    "pending": .int(Int64(summary.pending)), "errors": .int(Int64(summary.errors)),
                ]
            })
    }

    /// `status`: `{"clean", "errors", "operations": [...], "pending", "queries": [...], "remote",
    /// "store", "tables": [...]}` (the serializer's key order), written in two parts around the
    /// operations, which may be a million and are written as they are read: the head from what is
    /// known before them, the tail from the counts once they are all read.
    static func statusHead(_ head: StatusReport.Head) -> [UInt8] {
        Array(#"{"clean":\#(head.isClean),"errors":\#(head.errorCount),"operations":["#.utf8)
    }

    /// The members after "operations" (they all sort after it), the object's end and the newline.
    static func statusTail(_ report: StatusReport) -> [UInt8] {
        let rest: JSONValue = [
            "store": .string(report.storeDirectory),
            "remote": report.remote.map(JSONValue.string) ?? .null,
            "pending": .int(Int64(report.pendingCount)),
            "tables": .array(
                report.tables.map { table in
                    [
                        "table": .string(table.table), "pending": .int(Int64(table.pending)),
                        "inserts": .int(Int64(table.inserts)), "updates": .int(Int64(table.updates)),
                        "deletes": .int(Int64(table.deletes)), "errors": .int(Int64(table.errors)),
                    ]
                }),
            "queries": .array(report.savedQueries.map(savedQuery)),
        ]
        // The object's members without its "{": they follow the operations' array.
        return Array("],".utf8) + JSONSerializer.bytes(rest).dropFirst() + [UInt8(ascii: "\n")]
    }

    /// One queued operation: `{"seq", "table", "id", "kind" (insert|update|delete),
    /// "state" (pending|inflight), "queuedAt", "error": null | {"id", "status", "message"}}`.
    static func operation(_ operation: PendingOperation) -> JSONValue {
        [
            "seq": .int(operation.seq),
            "table": .string(operation.table),
            "id": .string(operation.itemID),
            "kind": .string(operation.kind.rawValue),
            "state": .string(operation.state.rawValue),
            "queuedAt": .string(operation.queuedAt.iso8601),
            "error": operation.error.map { error in
                [
                    "id": .int(error.id), "status": error.httpStatus.map { .int(Int64($0)) } ?? .null,
                    "message": .string(error.message),
                ]
            } ?? .null,
        ]
    }

    /// One saved query: `{"table", "queryId", "filter", "checkpoint": null | {"updatedAt", "id"},
    /// "lastPullAt", "stoppedAt"}` (`stoppedAt`: when a pull of it stopped part way, else null).
    static func savedQuery(_ query: SavedQuery) -> JSONValue {
        [
            "table": .string(query.table),
            "queryId": .string(query.queryID),
            "filter": query.filter.map(JSONValue.string) ?? .null,
            "checkpoint": query.checkpoint.map { checkpoint in
                ["updatedAt": .string(checkpoint.updatedAt.iso8601), "id": .string(checkpoint.id)]
            } ?? .null,
            "lastPullAt": query.lastPullAt.map { .string($0.iso8601) } ?? .null,
            "stoppedAt": query.stoppedAt.map { .string($0.iso8601) } ?? .null,
        ]
    }

    /// `diff`: `[{"table", "id", "kind", "seq", "base": object|null, "ours": object|null,
    /// "changes": [{"field", "change" (added|removed|modified), "before"?, "after"?}]}]` —
    /// `before` is absent for an added field, `after` for a removed one. One element.
    static func diff(_ entry: DiffEntry) -> JSONValue {
        [
            "table": .string(entry.table),
            "id": .string(entry.id),
            "kind": .string(entry.kind.rawValue),
            "seq": .int(entry.seq),
            "base": entry.base.map(JSONValue.object) ?? .null,
            "ours": entry.ours.map(JSONValue.object) ?? .null,
            "changes": .array(
                entry.changes.map { change in
                    var object: [String: JSONValue] = [
                        "field": .string(change.field), "change": .string(change.change.rawValue),
                    ]
                    if let before = change.before { object["before"] = before }
                    if let after = change.after { object["after"] = after }
                    return .object(object)
                }),
        ]
    }
}
