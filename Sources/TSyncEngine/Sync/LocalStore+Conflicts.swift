import GRDB
import TSyncModel

/// One entry of the error table with what is needed to understand and settle it
/// (`tsync conflicts`, docs/DESIGN.md §2.6): the error, and base / ours / theirs.
public struct ConflictDetails: Sendable, Equatable {
    /// The recorded error.
    public var error: OperationError
    /// The last server copy the client saw before its change (nil for a new item).
    public var base: TSyncModel.Record?
    /// The local record now (nil when the operation is a delete or the record is gone).
    public var ours: TSyncModel.Record?
    /// The server's copy from the failed answer (409/412), when it sent one, or a newer one a
    /// pull brought since (and skipped, the change being queued).
    public var theirs: TSyncModel.Record?

    /// The error's class (`version-conflict`, `missing`, …), from its operation and status.
    public var failureClass: FailureClass { FailureClass(kind: error.kind, status: error.httpStatus ?? 0, message: error.message) }
    /// User fields that differ between ours and theirs.
    public var differingFields: [String] { ThreeWayMerge.differingFields(ours?.fields, theirs?.fields) }
    /// User fields our change touched, against the base.
    public var fieldsChangedByUs: [String] { ThreeWayMerge.differingFields(base?.fields, ours?.fields) }
    /// User fields the server's side changed, against the base.
    public var fieldsChangedByThem: [String] { ThreeWayMerge.differingFields(base?.fields, theirs?.fields) }
}

extension LocalStore {
    /// The error table with base / ours / theirs, in queue order; `ids` and `table` restrict it.
    public func conflictDetails(ids: [Int64]? = nil, table: String? = nil) throws(TSyncError) -> [ConflictDetails] {
        try read { db in
            if let table { try StoreRows.requireTable(db, table) }
            return try Self.conflictDetails(db, ids: ids, table: table)
        }
    }

    static func conflictDetails(_ db: Database, ids: [Int64]?, table: String?) throws -> [ConflictDetails] {
        var conditions = ["1"]
        var arguments = StatementArguments()
        if let ids {
            if ids.isEmpty { return [] }
            conditions.append("id IN (\(Array(repeating: "?", count: ids.count).joined(separator: ",")))")
            _ = arguments.append(contentsOf: StatementArguments(ids))
        }
        if let table {
            conditions.append("tbl = ?")
            _ = arguments.append(contentsOf: [table])
        }
        return try StoreRows.errors(db, where: conditions.joined(separator: " AND "), arguments).map { error in
            let base = try StoreRows.fetchBase(db, table: error.table, id: error.itemID).map { try TSyncModel.Record(wire: $0) }
            let ours = error.kind == .delete ? nil : try StoreRows.fetchRecord(db, table: error.table, id: error.itemID)
            var theirs = try error.serverItem.map { try TSyncModel.Record(wire: $0) }
            // A pull after the failure may have skipped a newer copy (docs/DESIGN.md §8): theirs is the
            // newest copy the store has seen.
            if let skipped = try StoreRows.skippedCopy(db, table: error.table, id: error.itemID),
                theirs.map({ isNewer(skipped, than: $0) }) ?? (error.httpStatus != 404 && error.httpStatus != 410)
            {
                theirs = skipped
            }
            return ConflictDetails(error: error, base: base, ours: ours, theirs: theirs)
        }
    }
}
