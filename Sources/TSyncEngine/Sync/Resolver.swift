import TSyncModel

/// Which errors `tsync resolve` settles.
public enum ErrorSelection: Sendable, Equatable {
    /// The errors of these numbers (`resolve ID…`).
    case ids([Int64])
    /// Every error (`--all`).
    case all
    /// The errors of one table (`--table`).
    case table(String)
}

/// Narrows a selection to some failure classes and operation kinds (`--class`, `--kind`); an
/// empty set lets every class or kind through.
public struct ErrorFilter: Sendable, Equatable {
    /// The failure classes admitted; empty: all.
    public var classes: Set<FailureClass>
    /// The operation kinds admitted; empty: all.
    public var kinds: Set<OperationKind>

    /// A filter of `classes` and `kinds` (`--class`, `--kind`).
    public init(classes: Set<FailureClass> = [], kinds: Set<OperationKind> = []) {
        self.classes = classes
        self.kinds = kinds
    }

    /// Whether the filter admits the error.
    package func admits(_ error: OperationError) -> Bool {
        (classes.isEmpty || classes.contains(error.failureClass)) && (kinds.isEmpty || kinds.contains(error.kind))
    }
}

/// One `tsync resolve`: which errors, and how.
public struct ResolveRequest: Sendable, Equatable {
    /// Which errors: by id, by table, or all.
    public var selection: ErrorSelection
    /// Narrows the selection by class and kind.
    public var filter: ErrorFilter
    /// How to settle them.
    public var resolution: Resolution
    /// For `merge`: the side that wins a field both sides changed.
    public var prefer: ThreeWayMerge.Side?
    /// Work out what settling would do, and change nothing.
    public var dryRun: Bool

    /// A request to settle the errors `selection` and `filter` pick, as `resolution` says.
    public init(
        _ selection: ErrorSelection, filter: ErrorFilter = ErrorFilter(), with resolution: Resolution, prefer: ThreeWayMerge.Side? = nil,
        dryRun: Bool = false
    ) {
        self.selection = selection
        self.filter = filter
        self.resolution = resolution
        self.prefer = prefer
        self.dryRun = dryRun
    }
}

/// What `tsync resolve` did, error by error.
public struct ResolveReport: Sendable, Equatable {
    /// One error and what settling it did.
    public struct Entry: Sendable, Equatable {
        /// The error, as it was before, without the items it kept (`sentItem` and `serverItem`
        /// are nil: `LocalStore.conflictDetails` has them, with base, ours and theirs).
        public var error: OperationError
        /// Settled, or refused (a merge).
        public var outcome: ResolutionOutcome
        /// The item once settled (or as it would be, for a dry run).
        public var after: ItemAfterResolution
    }

    /// The errors met, in the order they were settled.
    public var entries: [Entry] = []
    /// The errors a merge refused: they stay in the error table.
    public var refused: [Entry] { entries.filter { if case .refused = $0.outcome { true } else { false } } }
    /// How many errors were settled.
    public var settledCount: Int { entries.count - refused.count }
}

/// Settles errors with one `Resolution` (docs/DESIGN.md §9). Each error is settled independently, in a
/// savepoint of its own (`LocalStore.settle(_:dryRun:)`): a refused merge of one leaves the others settled.
///
/// The server's copy ("theirs") is read from the server when settling (`serverCopies`): the copy
/// recorded with the error may be stale by now (another writer since), and settling on it would
/// make `--theirs` keep an old copy and `--ours` meet a second conflict. Without a remote, or when
/// it cannot be reached, the recorded copy serves.
package struct Resolver: Sendable {
    /// The store whose errors are settled.
    package var store: LocalStore
    /// The server to read current copies from; nil: the copies recorded with the errors serve.
    package var remote: (any SyncRemote)?

    /// A resolver of `store`'s errors against `remote`.
    package init(store: LocalStore, remote: (any SyncRemote)?) {
        self.store = store
        self.remote = remote
    }

    /// The errors a selection names, without their items (`LocalStore.errorsToSettle`). Unknown
    /// ids are an `.invalidInput` error (exit 65) and nothing is settled.
    package func errors(_ selection: ErrorSelection) throws(TSyncError) -> [OperationError] {
        switch selection {
        case .all:
            return try store.errorsToSettle()
        case .table(let table):
            return try store.errorsToSettle(table: table)
        case .ids(let ids):
            let found = try store.errorsToSettle(ids: ids)
            let known = Set(found.map(\.id))
            let missing = ids.filter { !known.contains($0) }
            if !missing.isEmpty {
                throw TSyncError(
                    .invalidInput, "no error \(missing.map(String.init).joined(separator: ", ")) in the error table", remedy: .listErrors)
            }
            return found
        }
    }

    /// Settles the errors `selection` picks with `resolution`, no filter, no preference.
    package func resolve(_ selection: ErrorSelection, with resolution: Resolution) async throws(TSyncError) -> ResolveReport {
        try await resolve(ResolveRequest(selection, with: resolution))
    }

    /// Settles the errors `request` picks, each independently, and reports each.
    package func resolve(_ request: ResolveRequest) async throws(TSyncError) -> ResolveReport {
        var report = ResolveReport()
        let selected = try errors(request.selection).filter { request.filter.admits($0) }
        let copies = request.resolution.needsTheirs ? try await serverCopies(for: selected) : [:]
        let settled = try store.settle(
            selected.map { Settlement(errorID: $0.id, with: request.resolution, theirs: copies[$0.item], prefer: request.prefer) },
            dryRun: request.dryRun)
        for (error, (outcome, after)) in zip(selected, settled) {
            report.entries.append(.init(error: error, outcome: outcome, after: after))
        }
        return report
    }

    /// The server's copy of each error's item, as settling takes it: read now from the server
    /// (`ServerCopies`; deleted copies included, so `--ours` knows a soft-deleted copy that
    /// refuses the id's insert), since a copy recorded with an error may be stale by now. Without
    /// a remote, or when it cannot be reached, the recorded copy (and for a 404, none), read
    /// from the store then.
    func serverCopies(for errors: [OperationError]) async throws(TSyncError) -> [ItemKey: ServerCopy] {
        guard !errors.isEmpty else { return [:] }
        var copies: [ItemKey: ServerCopy] = [:]
        if let remote {
            let keys = errors.map(\.item)
            do {
                let found = try await ServerCopies.read(keys, from: remote)
                for key in keys { copies[key] = found[key].map(ServerCopy.record) ?? ServerCopy.none }
                return copies
            } catch {
                if let status = error.refusedStatus, status == 403 || status == 404 { throw Self.unreadable(error, errors: errors) }
                guard error.kind == .unreachable else { throw error }
            }
        }
        for details in try store.conflictDetails(ids: errors.map(\.id)) {
            if let theirs = details.theirs {
                copies[details.item] = .record(theirs)
            } else if details.error.httpStatus == 404 || details.error.httpStatus == 410 {
                copies[details.item] = ServerCopy.none
            }
        }
        return copies
    }

    /// A table the server no longer shows this account (a rule, a role or group it lost, a token
    /// narrowed to other tables): its copy cannot be known, so nothing is settled and every error
    /// stays, and the words say why rather than only the status.
    static func unreadable(_ error: TSyncError, errors: [OperationError]) -> TSyncError {
        let kept = errors.count == 1 ? "the error stays" : "the \(errors.count) errors stay"
        return TSyncError(
            .failure,
            "\(error.fact ?? error.message): the account, or this token, may no longer read the table, so the server's copy cannot be known; nothing was settled, \(kept) in the error table (--discard or --cancel settles without the server's copy)"
        )
    }
}

extension ConflictDetails {
    var item: ItemKey { ItemKey(table: error.table, id: error.itemID) }
}
