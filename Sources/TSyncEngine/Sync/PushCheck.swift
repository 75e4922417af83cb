import TSyncModel

/// What `push --check` predicts for one queued operation.
public struct PushPrediction: Sendable, Equatable {
    public enum Outcome: Sendable, Equatable {
        /// The server would take it (or already holds what it asks for).
        case succeeds
        /// The server would refuse it, for this reason.
        case fails(FailureClass)
        /// An earlier operation of the same item would fail: this one would wait behind it.
        case heldBack
    }

    public var operation: PendingOperation
    public var outcome: Outcome
    /// The server's copy now (nil when it has none); a deleted copy has `deleted` set.
    public var server: TSyncModel.Record?
    /// User fields our change touched, against the base (the last server copy this store saw).
    public var changedByUs: [String]
    /// User fields the server's copy changed since that base.
    public var changedByThem: [String]
}

/// Predicts, without writing anything anywhere, what a push would do with each pending operation
/// (DESIGN §9.2): the server's current copy of every item is read with GET requests (a filter on
/// a list of ids, deleted items included), and each operation is judged by the rules the server
/// applies to a write, and by the ones `PushVerdict` applies to its answer.
struct PushCheck: Sendable {
    var store: LocalStore
    var remote: any SyncRemote
    /// Ids per GET: small enough for any server's page size and URL limit.
    var idsPerRequest = 25

    func predict(tables: [String]?) async throws(TSyncError) -> [PushPrediction] {
        let operations = try store.pushableOperations(tables: tables)
        var server: [ItemKey: TSyncModel.Record] = [:]
        var byTable: [String: [String]] = [:]
        var seen = Set<ItemKey>()
        for outgoing in operations where seen.insert(outgoing.key).inserted {
            byTable[outgoing.operation.table, default: []].append(outgoing.operation.itemID)
        }
        for (table, ids) in byTable.sorted(by: { $0.key < $1.key }) {
            var start = 0
            while start < ids.count {
                let chunk = ids[start..<min(ids.count, start + idsPerRequest)]
                start += chunk.count
                let filter = chunk.map { "id eq '" + $0.replacingOccurrences(of: "'", with: "''") + "'" }.joined(separator: " or ")
                let page = try await remote.readPage(PageRequest(table: table, filter: filter, top: chunk.count, includeDeleted: true))
                for record in page.records { server[ItemKey(table: table, id: record.id)] = record }
            }
        }
        var failedItems = Set<ItemKey>()
        var judged = Set<ItemKey>()
        var predictions: [PushPrediction] = []
        for outgoing in operations {
            let key = outgoing.key
            let copy = server[key]
            let base = try store.base(table: outgoing.operation.table, id: outgoing.operation.itemID)
            let ours = outgoing.operation.kind == .delete ? nil : outgoing.item
            var outcome = PushPrediction.Outcome.succeeds
            if failedItems.contains(key) {
                outcome = .heldBack
            } else if judged.insert(key).inserted, let failure = Self.failure(of: outgoing, server: copy) {
                outcome = .fails(failure)
                failedItems.insert(key)
            }
            predictions.append(
                PushPrediction(
                    operation: outgoing.operation, outcome: outcome, server: copy,
                    changedByUs: ThreeWayMerge.differingFields(base?.fields, ours),
                    changedByThem: copy.map { ThreeWayMerge.differingFields(base?.fields, $0.system.deleted ? nil : $0.fields) } ?? []))
        }
        return predictions
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
    var key: ItemKey { ItemKey(table: operation.table, id: operation.itemID) }
}
