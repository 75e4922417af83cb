import TSyncModel

/// What `push --check` predicts for one queued operation.
package struct PushPrediction: Sendable, Equatable {
    /// What the server would answer the operation.
    package enum Outcome: Sendable, Equatable {
        /// The server would take it (or already holds what it asks for).
        case succeeds
        /// The server would refuse it, for this reason.
        case fails(FailureClass)
        /// An earlier operation of the same item would fail, or has an unsettled error (its own
        /// included): this one would wait behind it.
        case heldBack
    }

    /// The queued operation judged.
    package var operation: PendingOperation
    /// What the push would do with it.
    package var outcome: Outcome
    /// The conflict policy that would settle the failure (or the failure this operation waits
    /// behind) within the same push, as `push --on-conflict` or the store's settings say; nil
    /// when none would, and for an operation that succeeds.
    package var settledBy: ConflictPolicy?
    /// The server's copy now (nil when it has none); a deleted copy has `deleted` set.
    package var server: TSyncModel.Record?
    /// User fields our change touched, against the base (the last server copy this store saw).
    package var changedByUs: [String]
    /// User fields the server's copy changed since that base.
    package var changedByThem: [String]

    /// Whether this is the failing operation of its item (a failure predicted now, or an error
    /// already in the table) and `settledBy` settles it: what `push --json` counts in `settled`.
    package var wouldBeSettled: Bool {
        guard settledBy != nil else { return false }
        if case .fails = outcome { return true }
        return operation.error != nil
    }

    /// Whether the push would leave this operation failed or waiting.
    package var wouldFail: Bool { outcome != .succeeds && settledBy == nil }
}

/// Predicts, without writing anything anywhere, what a push would do with each queued operation
/// (docs/DESIGN.md §9.2): the server's current copy of every item is read with GET requests (a filter on
/// a list of ids, deleted items included), and each operation is judged by the rules the server
/// applies to a write, by the ones `PushVerdict` applies to its answer, and by the conflict
/// policies the push would apply.
struct PushCheck: Sendable {
    var store: LocalStore
    var remote: any SyncRemote
    var policies = ConflictPolicies()

    func predict(tables: [String]?) async throws(TSyncError) -> [PushPrediction] {
        let operations = try store.pushableOperations(tables: tables)
        let pushable = Set(operations.map(\.operation.seq))
        let waiting = try store.pendingOperations().filter { operation in
            !pushable.contains(operation.seq) && (tables?.contains(operation.table) ?? true)
        }
        var blocking: [ItemKey: ConflictDetails] = [:]
        for details in try store.conflictDetails() {
            let key = ItemKey(table: details.error.table, id: details.error.itemID)
            if blocking[key] == nil { blocking[key] = details }
        }
        let server = try await ServerCopies.read(operations.map(\.key) + waiting.map(\.key), from: remote)

        var judged: [ItemKey: ConflictPolicy?] = [:]  // an item's first failure, and what settles it
        var predictions: [PushPrediction] = []
        for outgoing in operations {
            let key = outgoing.key
            let copy = server[key]
            let base = try store.base(table: outgoing.operation.table, id: outgoing.operation.itemID)
            let ours = outgoing.operation.kind == .delete ? nil : outgoing.item
            var outcome = PushPrediction.Outcome.succeeds
            var settledBy: ConflictPolicy?
            if let first = judged[key] {
                outcome = .heldBack
                settledBy = first
            } else if let failure = Self.failure(of: outgoing, server: copy) {
                outcome = .fails(failure)
                settledBy = settlement(of: failure, table: outgoing.operation.table, base: base?.fields, ours: ours, theirs: copy)
                judged[key] = settledBy
            }
            predictions.append(
                PushPrediction(
                    operation: outgoing.operation, outcome: outcome, settledBy: settledBy, server: copy,
                    changedByUs: ThreeWayMerge.differingFields(base?.fields, ours),
                    changedByThem: Self.changedByThem(base: base, server: copy)))
        }
        for operation in waiting {
            let key = operation.key
            let copy = server[key]
            let details = blocking[key]
            var settledBy: ConflictPolicy?
            if let details {
                let ours = details.error.kind == .delete ? nil : details.ours?.fields
                settledBy = settlement(
                    of: details.failureClass, table: operation.table, base: details.base?.fields, ours: ours, theirs: copy)
            }
            predictions.append(
                PushPrediction(
                    operation: operation, outcome: .heldBack, settledBy: settledBy, server: copy,
                    changedByUs: details.map(\.fieldsChangedByUs) ?? [],
                    changedByThem: Self.changedByThem(base: details?.base, server: copy)))
        }
        return predictions.sorted { $0.operation.seq < $1.operation.seq }
    }

    /// The policy that would settle a failure of this class, or nil: never a rejected item or a
    /// server error, and a merge only where it would not be refused (`Resolution.merge`).
    private func settlement(
        of failure: FailureClass, table: String, base: [String: JSONValue]?, ours: [String: JSONValue]?, theirs: TSyncModel.Record?
    ) -> ConflictPolicy? {
        guard ConflictPolicy.settledClasses.contains(failure) else { return nil }
        let policy = policies.policy(for: table)
        switch policy {
        case .fail:
            return nil
        case .ours, .theirs:
            return policy
        case .merge:
            let theirsFields = theirs.flatMap { $0.system.deleted ? nil : $0.fields }
            switch ThreeWayMerge.merge(base: base, ours: ours, theirs: theirsFields, prefer: policies.preference(for: table)) {
            case .merged, .deleted: return policy
            case .deleteConflict, .conflicting: return nil
            }
        }
    }

    private static func changedByThem(base: TSyncModel.Record?, server: TSyncModel.Record?) -> [String] {
        guard let server else { return [] }
        return ThreeWayMerge.differingFields(base?.fields, server.system.deleted ? nil : server.fields)
    }

    /// How the server would refuse the first operation of an item, given its copy now; nil when
    /// the push would go through (an answer `PushVerdict` takes as "already applied" included).
    static func failure(of outgoing: OutgoingOperation, server: TSyncModel.Record?) -> FailureClass? {
        let kind = outgoing.operation.kind
        let sent = kind == .delete ? nil : outgoing.item
        func sameAsSent(_ record: TSyncModel.Record) -> Bool {
            guard let sent, !record.system.deleted else { return false }
            return ThreeWayMerge.sameFields(sent, record.fields)
        }
        switch kind {
        case .insert:
            guard let server else { return nil }
            return sameAsSent(server) ? nil : .alreadyExists
        case .update:
            guard let server else { return .missing }
            if server.system.deleted {
                return outgoing.restoresDeleted && outgoing.version == server.system.version ? nil : .missing
            }
            if outgoing.version == nil || outgoing.version == server.system.version || sameAsSent(server) { return nil }
            return .versionConflict
        case .delete:
            guard let server, !server.system.deleted else { return nil }
            return outgoing.version == nil || outgoing.version == server.system.version ? nil : .versionConflict
        }
    }
}

extension OutgoingOperation {
    var key: ItemKey { operation.key }
}

extension PendingOperation {
    var key: ItemKey { ItemKey(table: table, id: itemID) }
}
