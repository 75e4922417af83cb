import GRDB
import TSyncModel

/// The way a failed operation is settled, chosen by a person (`tsync resolve`) or a conflict
/// policy (docs/DESIGN.md §9).
public enum Resolution: String, Sendable, CaseIterable {
    /// Client wins: keep the operation, based on the server's current version, to be sent again.
    case ours
    /// Server wins: drop the item's operations; the local item becomes the server's copy (or goes).
    case theirs
    /// Neither: clear the error; the operation stays pending, unchanged.
    case cancel
    /// Drop the local change: the item goes back to its base (removed if it has none), or to the
    /// newer copy a later pull skipped (docs/DESIGN.md §8).
    case discard
    /// Field-level three-way merge of base / ours / theirs; refused when a field conflicts.
    case merge

    /// Whether settling needs the server's current copy of the item.
    var needsTheirs: Bool { self == .ours || self == .theirs || self == .merge }
}

/// The result of settling one error.
public enum ResolutionOutcome: Sendable, Equatable {
    /// Settled; `pending` tells whether an operation for the item is still queued to be pushed.
    case settled(pending: Bool)
    /// `--merge` refused; nothing was changed for this error.
    case refused(reason: String)
}

/// The server's copy of an item as far as settling needs it: known (maybe deleted), or absent.
public enum ServerCopy: Sendable, Equatable {
    case record(TSyncModel.Record)
    case none

    var live: TSyncModel.Record? {
        if case .record(let record) = self, !record.system.deleted { return record }
        return nil
    }
}

/// What settling an error left of its item: the operation still queued for it and the local
/// record (`resolve --dry-run` shows these without keeping them).
public struct ItemAfterResolution: Sendable, Equatable {
    /// The kind of the item's first queued operation, nil when none is left.
    public var pending: OperationKind?
    /// The local record, nil when the item is gone.
    public var record: TSyncModel.Record?
}

/// One error to settle, and how (`LocalStore.settle(_:dryRun:)`).
package struct Settlement: Sendable, Equatable {
    /// The error.
    package var errorID: Int64
    /// How to settle it.
    package var resolution: Resolution
    /// The server's copy (from the error, or read again by the caller); ignored by `cancel` and
    /// `discard`.
    package var theirs: ServerCopy?
    /// The side that wins the fields a merge cannot settle (`--prefer`).
    package var prefer: ThreeWayMerge.Side?

    /// An error to settle with `resolution`.
    package init(errorID: Int64, with resolution: Resolution, theirs: ServerCopy?, prefer: ThreeWayMerge.Side? = nil) {
        self.errorID = errorID
        self.resolution = resolution
        self.theirs = theirs
        self.prefer = prefer
    }
}

extension LocalStore {
    /// Errors settled per transaction by `settle(_:dryRun:)`: a commit (an fsync) per error was
    /// most of what settling 10,000 cost; a page bounds what one transaction holds.
    package static let settlePageSize = 500

    /// Settles one error in one transaction. `theirs` is the server's copy (from the error, or read
    /// again by the caller); it is ignored by `cancel` and `discard`. `prefer` settles the fields a
    /// merge cannot (`--prefer`).
    package func settle(
        errorID: Int64, with resolution: Resolution, theirs: ServerCopy?, prefer: ThreeWayMerge.Side? = nil
    ) throws(TSyncError) -> ResolutionOutcome {
        try settle(errorID: errorID, with: resolution, theirs: theirs, prefer: prefer, dryRun: false).outcome
    }

    /// What is queued for an item now, and its local record.
    public func itemState(table: String, id: String) throws(TSyncError) -> ItemAfterResolution {
        try read { db in try ItemRows(table: table, id: id).after(db) }
    }

    /// `settle(errorID:with:theirs:prefer:)`, and what it left of the item. With `dryRun` the transaction is rolled back: the
    /// answer is exactly what settling would do, and nothing changes.
    package func settle(
        errorID: Int64, with resolution: Resolution, theirs: ServerCopy?, prefer: ThreeWayMerge.Side?, dryRun: Bool
    ) throws(TSyncError) -> (outcome: ResolutionOutcome, after: ItemAfterResolution) {
        let settled = try settle([Settlement(errorID: errorID, with: resolution, theirs: theirs, prefer: prefer)], dryRun: dryRun)
        guard let only = settled.first else { throw TSyncError.failure("settling error \(errorID) left no result") }
        return only
    }

    /// Settles errors in order, each as if alone: each in a savepoint of its own, against the
    /// store as the ones before it left it, so a refused merge leaves the others settled, and an
    /// error that cannot be settled stops the rest with the ones before it kept. They are
    /// committed `pageSize` to a transaction. With `dryRun` each savepoint is rolled back: the
    /// answers are what settling would do, and nothing changes.
    package func settle(_ settlements: [Settlement], dryRun: Bool = false, pageSize: Int = settlePageSize) throws(TSyncError)
        -> [(outcome: ResolutionOutcome, after: ItemAfterResolution)]
    {
        try settlePages(settlements, dryRun: dryRun, pageSize: pageSize, readingBack: true).map {
            (outcome, after) throws(TSyncError) in
            guard let after else { throw TSyncError.failure("settling left no account of the item") }
            return (outcome, after)
        }
    }

    /// `settle(_:dryRun:pageSize:)` without reading each item back: what a push's conflict
    /// policy needs (it pushes what is left, and reports the outcomes only).
    package func settleOutcomes(_ settlements: [Settlement], pageSize: Int = settlePageSize) throws(TSyncError) -> [ResolutionOutcome] {
        try settlePages(settlements, dryRun: false, pageSize: pageSize, readingBack: false).map(\.outcome)
    }

    private func settlePages(_ settlements: [Settlement], dryRun: Bool, pageSize: Int, readingBack: Bool) throws(TSyncError)
        -> [(outcome: ResolutionOutcome, after: ItemAfterResolution?)]
    {
        var results: [(outcome: ResolutionOutcome, after: ItemAfterResolution?)] = []
        results.reserveCapacity(settlements.count)
        var start = 0
        while start < settlements.count {
            let page = settlements[start..<min(settlements.count, start + max(1, pageSize))]
            start = page.endIndex
            // First without a savepoint per error (SQLite copies every page a savepoint writes
            // into its sub-journal, a temporary file: two system calls a page, the most of what
            // `resolve --all --theirs` spent in the kernel). Settling writes nothing before it
            // knows it will settle, so that is the same as long as nothing fails; when something
            // does, the page is rolled back and settled again the careful way, error by error.
            var careful = dryRun
            while true {
                let attempt: (settled: [(outcome: ResolutionOutcome, after: ItemAfterResolution?)], failure: (any Error)?)
                do {
                    attempt = try pool.write { [careful] db in
                        try Self.settlePage(db, page, careful: careful, dryRun: dryRun, readingBack: readingBack)
                    }
                } catch is SettleCarefully {
                    careful = true
                    continue
                } catch {
                    throw StoreFailure.map(error, location: location)
                }
                results += attempt.settled
                // A failure inside the page was kept aside, so the ones before it commit, then thrown.
                if let failure = attempt.failure { throw StoreFailure.map(failure, location: location) }
                break
            }
        }
        return results
    }

    /// One page in the caller's transaction. `careful`: each error in a savepoint of its own, a
    /// failure kept aside (returned) with the ones before it settled; otherwise none, and a
    /// failure (or, which settling never does, a refusal after a write) is `SettleCarefully`:
    /// the caller rolls the page back and settles it again the careful way.
    private static func settlePage(_ db: Database, _ page: ArraySlice<Settlement>, careful: Bool, dryRun: Bool, readingBack: Bool)
        throws -> (settled: [(outcome: ResolutionOutcome, after: ItemAfterResolution?)], failure: (any Error)?)
    {
        var settled: [(outcome: ResolutionOutcome, after: ItemAfterResolution?)] = []
        // The page's errors and their items in one statement. Settling an error changes only its
        // own item's rows, so a row read here is what a read in the error's savepoint would find,
        // unless an error before it in the page had the same item: that one is read again.
        let texts = page.reduce(into: ConflictRow.Texts()) { $0.formUnion(.settling($1.resolution)) }
        var rows: [Int64: ConflictRow] = [:]
        for row in try ConflictRow.fetch(db, ids: page.map(\.errorID), table: nil, texts: texts) { rows[row.id] = row }
        var touched = Set<ItemKey>()
        for settlement in page {
            do {
                var row = rows[settlement.errorID]
                if let known = row, touched.contains(known.item) {
                    row = try ConflictRow.fetch(db, ids: [settlement.errorID], table: nil, texts: texts).first
                }
                guard let row else {
                    throw TSyncError(.invalidInput, "no error \(settlement.errorID) (already settled?)", remedy: .listErrors)
                }
                touched.insert(row.item)
                if careful {
                    settled.append(try Self.settle(db, settlement, row, dryRun: dryRun, readingBack: readingBack))
                } else {
                    let changes = db.totalChangesCount
                    let outcome = try Self.settle(db, details: row, settlement)
                    if case .refused = outcome, db.totalChangesCount != changes { throw SettleCarefully() }
                    settled.append((outcome, readingBack ? try ItemRows(table: row.table, id: row.itemID).after(db) : nil))
                }
            } catch {
                if !careful { throw SettleCarefully() }
                return (settled, error)
            }
        }
        return (settled, nil)
    }

    /// One error in a savepoint of the caller's transaction, rolled back for a dry run or a
    /// refused merge. The savepoint's statements are cached (GRDB's `inSavepoint` compiles them
    /// each time, which a settle per error paid for).
    private static func settle(_ db: Database, _ settlement: Settlement, _ row: ConflictRow, dryRun: Bool, readingBack: Bool) throws
        -> (outcome: ResolutionOutcome, after: ItemAfterResolution?)
    {
        try db.cachedStatement(sql: "SAVEPOINT settle").execute()
        do {
            let outcome = try Self.settle(db, details: row, settlement)
            let after = readingBack ? try ItemRows(table: row.table, id: row.itemID).after(db) : nil
            var undone = dryRun
            if case .refused = outcome { undone = true }
            if undone { try db.cachedStatement(sql: "ROLLBACK TO SAVEPOINT settle").execute() }
            try db.cachedStatement(sql: "RELEASE SAVEPOINT settle").execute()
            return (outcome, after)
        } catch {
            // The error that stopped the settle is the one to tell (a rollback that fails too,
            // as after SQLite ended the transaction itself, only ends it for good).
            try? db.cachedStatement(sql: "ROLLBACK TO SAVEPOINT settle").execute()
            try? db.cachedStatement(sql: "RELEASE SAVEPOINT settle").execute()
            throw error
        }
    }

    /// Settles the error `row` holds as `settlement` says, in the caller's transaction.
    static func settle(_ db: Database, details row: ConflictRow, _ settlement: Settlement) throws -> ResolutionOutcome {
        try Self.settle(
            db, details: try row.details(settling: settlement.resolution),
            skipped: settlement.resolution == .cancel ? nil : try row.skippedCopy(), rows: ItemRows(table: row.table, id: row.itemID),
            with: settlement.resolution, theirs: settlement.theirs, prefer: settlement.prefer)
    }

    private static func settle(
        _ db: Database, details: ConflictDetails, skipped: TSyncModel.Record?, rows: ItemRows, with resolution: Resolution,
        theirs: ServerCopy?, prefer: ThreeWayMerge.Side?
    ) throws -> ResolutionOutcome {
        let errorID = details.error.id
        if resolution == .cancel {
            try db.cachedStatement(sql: "DELETE FROM errors WHERE id = ?").execute(arguments: [errorID])
            return .settled(pending: true)
        }
        // A pull that came after the error skipped a newer copy of the item (its change was
        // queued) and moved its checkpoint past it, so no pull would bring it again. Theirs is
        // the newer of that copy and the one given (read from the server by `Resolver`, which a
        // pull running meanwhile, as `tsync watch`'s does, can pass); `--discard` goes back to it
        // rather than to the older base.
        var base = details.base
        var theirs = theirs
        if let skipped {
            if base.map({ Self.isNewer(skipped, than: $0) }) ?? true { base = skipped }
            if case .record(let copy)? = theirs, Self.isNewer(skipped, than: copy) { theirs = .record(skipped) }
        }
        // A merge is decided before anything is written: a refused one changes nothing (the
        // skipped copy stays too), which lets a page of errors go without a savepoint each.
        var merge: MergeStep?
        if resolution == .merge {
            let step = Self.mergeStep(details, theirs: try Self.require(theirs, for: details), prefer: prefer)
            if case .refused(let reason) = step { return .refused(reason: reason) }
            merge = step
        }
        if skipped != nil { try StoreRows.dropSkippedCopy(db, table: rows.table, id: rows.id) }
        switch resolution {
        case .cancel:
            return .settled(pending: true)
        case .discard:
            try Self.resetItem(db, table: rows.table, id: rows.id, to: base)
            return .settled(pending: false)
        case .theirs:
            try Self.takeTheirs(db, rows: rows, theirs: try Self.require(theirs, for: details))
            return .settled(pending: false)
        case .ours:
            try Self.keepOurs(db, details: details, rows: rows, theirs: try Self.require(theirs, for: details))
            return .settled(pending: try StoreRows.hasOperations(db, table: rows.table, id: rows.id))
        case .merge:
            let theirs = try Self.require(theirs, for: details)
            switch merge {
            case .keepOurs(let body?):
                try keepOurs(db, details: details, rows: rows, theirs: theirs, body: body)
                return .settled(pending: true)
            case .keepOurs(nil):
                try keepOurs(db, details: details, rows: rows, theirs: theirs)
                return .settled(pending: try StoreRows.hasOperations(db, table: rows.table, id: rows.id))
            case .takeTheirs, .refused, nil:
                try takeTheirs(db, rows: rows, theirs: theirs)
                return .settled(pending: false)
            }
        }
    }

    /// Server copies in `updatedAt` order (a copy without one is the older).
    static func isNewer(_ copy: TSyncModel.Record, than other: TSyncModel.Record) -> Bool {
        guard let updatedAt = copy.system.updatedAt else { return false }
        guard let otherUpdatedAt = other.system.updatedAt else { return true }
        return updatedAt > otherUpdatedAt
    }

    private static func require(_ theirs: ServerCopy?, for details: ConflictDetails) throws -> ServerCopy {
        guard let theirs else {
            throw TSyncError(
                .failure,
                "the server's copy of \(details.error.table)/\(details.error.itemID) is not known, and the store has no remote to read it from",
                remedy: .setRemote)
        }
        return theirs
    }

    static func takeTheirs(_ db: Database, rows: ItemRows, theirs: ServerCopy) throws {
        try resetItem(db, table: rows.table, id: rows.id, to: theirs.live)
    }

    /// Client wins: the operation is rebased on the server's current copy, so its `If-Match` is
    /// current and the next push overwrites the server. An insert answered 409 becomes an update of
    /// the existing item; an update of an item the server no longer has becomes an insert that
    /// recreates it; a delete of an item the server no longer has is done already. When the server
    /// keeps a soft-deleted copy (which refuses both a new insert, 409, and an update, 404), an
    /// insert or update becomes an update based on that deleted copy, which push sends as an
    /// undelete followed by the update (`OutgoingOperation.restoresDeleted`).
    ///
    /// With `body`, the local record's fields become it in the same statement (a merge's result).
    static func keepOurs(_ db: Database, details: ConflictDetails, rows: ItemRows, theirs: ServerCopy, body: String? = nil) throws {
        // An error a push settles as its answer is applied was never recorded (its id is 0).
        if details.error.id != 0 {
            try db.cachedStatement(sql: "DELETE FROM errors WHERE id = ?").execute(arguments: [details.error.id])
        }
        let rebaseOn: TSyncModel.Record?
        switch theirs {
        case .record(let record) where !record.system.deleted || details.error.kind != .delete: rebaseOn = record
        default: rebaseOn = nil
        }
        if let record = rebaseOn {
            try StoreRows.saveBase(db, table: rows.table, id: rows.id, item: record.wireObject)
            try db.cachedStatement(
                sql: "UPDATE records SET body = coalesce(?, body), created_at = ?, updated_at = ?, version = ? WHERE tbl = ? AND id = ?"
            ).execute(
                arguments: [
                    body, record.system.createdAt?.iso8601, record.system.updatedAt?.iso8601, record.system.version,
                    rows.table, rows.id,
                ])
            if details.error.kind == .insert || record.system.deleted {
                try rows.setKind(db, seq: details.error.operationSeq, kind: .update)
            }
            return
        }
        try rows.dropBase(db)
        try db.cachedStatement(
            sql:
                "UPDATE records SET body = coalesce(?, body), created_at = NULL, updated_at = NULL, version = NULL WHERE tbl = ? AND id = ?"
        ).execute(arguments: [body, rows.table, rows.id])
        switch details.error.kind {
        case .update: try rows.setKind(db, seq: details.error.operationSeq, kind: .insert)
        case .delete: try db.cachedStatement(sql: "DELETE FROM operations WHERE seq = ?").execute(arguments: [details.error.operationSeq])
        case .insert: break
        }
    }

    /// The base a merge compares with. Where the server holds exactly what the refused operation
    /// sent for a field, that value is ours having arrived (an answer lost on its way back, then
    /// another writer's change to other fields: §2.4), not their change: the field's base is what
    /// was sent, so a later local change of it merges instead of clashing with our own write.
    static func mergeBase(_ details: ConflictDetails, theirs: TSyncModel.Record?) -> [String: JSONValue]? {
        guard var base = details.base?.fields, details.error.kind != .delete, let sent = details.error.sentItem,
            let theirs = theirs?.fields, let sentFields = try? TSyncModel.Record(wire: sent, generateID: { "" }).fields
        else { return details.base?.fields }
        for (field, value) in sentFields where theirs[field] == value { base[field] = value }
        return base
    }

    /// What a merge of an error does, decided before anything is written.
    enum MergeStep: Equatable {
        /// Both sides changed something differently: nothing is settled.
        case refused(String)
        /// The merge is the server's copy (or the item is gone on both sides).
        case takeTheirs
        /// Ours, rebased on the server's copy, with the merged fields as its body (nil: a
        /// delete that goes through, the server not having changed the item).
        case keepOurs(body: String?)
    }

    static func mergeStep(_ details: ConflictDetails, theirs: ServerCopy, prefer: ThreeWayMerge.Side?) -> MergeStep {
        let oursFields = details.error.kind == .delete ? nil : details.ours?.fields
        let theirsRecord = theirs.live
        let base = mergeBase(details, theirs: theirsRecord)
        switch ThreeWayMerge.merge(base: base, ours: oursFields, theirs: theirsRecord?.fields, prefer: prefer) {
        case .merged(let fields):
            // Only a preference for ours merges against a deleted server copy: the item is created again.
            if let theirsRecord, ThreeWayMerge.sameFields(fields, theirsRecord.fields) { return .takeTheirs }
            return .keepOurs(body: StoredJSON.encode(fields))
        case .deleted:
            // We deleted an item the server did not change since: the delete goes through.
            return oursFields == nil && theirsRecord != nil ? .keepOurs(body: nil) : .takeTheirs
        case .deleteConflict(let side):
            return .refused(
                side == .ours
                    ? "deleted here but changed on the server (\(ThreeWayMerge.differingFields(details.base?.fields, theirsRecord?.fields).joined(separator: ", ")))"
                    : "changed here (\(details.fieldsChangedByUs.joined(separator: ", "))) but deleted on the server")
        case .conflicting(let conflicts):
            let described = conflicts.map { conflict in
                "\(conflict.field): ours \(Self.show(conflict.ours)), theirs \(Self.show(conflict.theirs))"
            }
            return .refused("both sides changed " + described.joined(separator: "; "))
        }
    }

    private static func show(_ value: JSONValue?) -> String {
        value.map { JSONSerializer.string($0) } ?? "(absent)"
    }
}

/// The rows of one item across the store's tables.
struct ItemRows {
    var table: String
    var id: String

    func dropBase(_ db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM bases WHERE tbl = ? AND id = ?").execute(arguments: [table, id])
    }

    func after(_ db: Database) throws -> ItemAfterResolution {
        let kind = try String.fetchOne(
            db.cachedStatement(sql: "SELECT kind FROM operations WHERE tbl = ? AND item_id = ? ORDER BY seq LIMIT 1"),
            arguments: [table, id])
        return ItemAfterResolution(
            pending: kind.flatMap(OperationKind.init(rawValue:)), record: try StoreRows.fetchRecord(db, table: table, id: id))
    }

    func setKind(_ db: Database, seq: Int64, kind: OperationKind) throws {
        try db.cachedStatement(sql: "UPDATE operations SET kind = ? WHERE seq = ?").execute(arguments: [kind.rawValue, seq])
    }
}
