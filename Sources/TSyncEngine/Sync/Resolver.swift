import TSyncModel

/// Which errors `tsync resolve` settles.
public enum ErrorSelection: Sendable, Equatable {
    case ids([Int64])
    case all
    case table(String)
}

/// Narrows a selection to some failure classes and operation kinds (`--class`, `--kind`); an
/// empty set lets every class or kind through.
public struct ErrorFilter: Sendable, Equatable {
    public var classes: Set<FailureClass>
    public var kinds: Set<OperationKind>

    public init(classes: Set<FailureClass> = [], kinds: Set<OperationKind> = []) {
        self.classes = classes
        self.kinds = kinds
    }

    public func admits(_ details: ConflictDetails) -> Bool {
        (classes.isEmpty || classes.contains(details.failureClass)) && (kinds.isEmpty || kinds.contains(details.error.kind))
    }
}

/// One `tsync resolve`: which errors, and how.
public struct ResolveRequest: Sendable, Equatable {
    public var selection: ErrorSelection
    public var filter: ErrorFilter
    public var resolution: Resolution
    /// For `merge`: the side that wins a field both sides changed.
    public var prefer: MergePreference?
    /// Work out what settling would do, and change nothing.
    public var dryRun: Bool

    public init(
        _ selection: ErrorSelection, filter: ErrorFilter = ErrorFilter(), with resolution: Resolution, prefer: MergePreference? = nil,
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
    public struct Entry: Sendable, Equatable {
        public var details: ConflictDetails
        public var outcome: ResolutionOutcome
        /// The item once settled (or as it would be, for a dry run).
        public var after: ItemAfterResolution
    }

    public var entries: [Entry] = []
    public var refused: [Entry] { entries.filter { if case .refused = $0.outcome { true } else { false } } }
    public var settledCount: Int { entries.count - refused.count }
}

/// Settles errors with one `Resolution` (DESIGN §3). Each error is settled in its own transaction,
/// independently: a refused merge of one leaves the others settled.
///
/// The server's copy ("theirs") is the one recorded with the error (409/412 answers carry it); when
/// the error has none (404, 400, 5xx), it is read from the server once, which needs `remote`.
/// A recorded copy may be stale by now: a push of an `--ours` resolution then reports a fresh
/// conflict rather than overwriting a change it never saw.
public struct Resolver: Sendable {
    public var store: LocalStore
    public var remote: (any SyncRemote)?

    public init(store: LocalStore, remote: (any SyncRemote)?) {
        self.store = store
        self.remote = remote
    }

    /// The errors a selection names. Unknown ids are an `.invalidInput` error (exit 65) and nothing
    /// is settled.
    public func errors(_ selection: ErrorSelection) throws(TSyncError) -> [ConflictDetails] {
        switch selection {
        case .all:
            return try store.conflictDetails()
        case .table(let table):
            return try store.conflictDetails(table: table)
        case .ids(let ids):
            let found = try store.conflictDetails(ids: ids)
            let missing = ids.filter { id in !found.contains { $0.error.id == id } }
            if !missing.isEmpty {
                throw .invalidInput(
                    "no error \(missing.map(String.init).joined(separator: ", ")) in the error table: run `tsync conflicts` to list them")
            }
            return found
        }
    }

    public func resolve(_ selection: ErrorSelection, with resolution: Resolution) async throws(TSyncError) -> ResolveReport {
        try await resolve(ResolveRequest(selection, with: resolution))
    }

    public func resolve(_ request: ResolveRequest) async throws(TSyncError) -> ResolveReport {
        var report = ResolveReport()
        for details in try errors(request.selection) where request.filter.admits(details) {
            let theirs = request.resolution.needsTheirs ? try await serverCopy(for: details) : nil
            let (outcome, after) = try store.settle(
                errorID: details.error.id, with: request.resolution, theirs: theirs, prefer: request.prefer, dryRun: request.dryRun)
            report.entries.append(.init(details: details, outcome: outcome, after: after))
        }
        return report
    }

    func serverCopy(for details: ConflictDetails) async throws(TSyncError) -> ServerCopy? {
        let error = details.error
        if let theirs = details.theirs { return .record(theirs) }
        if error.httpStatus == 404 || error.httpStatus == 410 {
            // The item may be soft-deleted there: a copy only a query with deleted items shows.
            // `--ours` must know, since the server refuses to insert that id again (409).
            guard let remote else { return ServerCopy.none }
            return try await deletedCopy(of: error, from: remote).map(ServerCopy.record) ?? ServerCopy.none
        }
        guard let remote else { return nil }
        switch try await remote.read(table: error.table, id: error.itemID) {
        case .accepted(_, let record?): return .record(record)
        case .accepted(_, nil): throw .failure("the server answered the read of \(error.table)/\(error.itemID) without the item")
        case .rejected(404, _, _), .rejected(410, _, _): return ServerCopy.none
        case .rejected(let status, let message, _):
            throw .failure("reading \(error.table)/\(error.itemID) from the server failed with HTTP \(status): \(message)")
        }
    }

    /// The server's soft-deleted copy of the item, if it keeps one.
    private func deletedCopy(of error: OperationError, from remote: any SyncRemote) async throws(TSyncError) -> Record? {
        let quoted = "'" + error.itemID.replacingOccurrences(of: "'", with: "''") + "'"
        let page = try await remote.readPage(
            PageRequest(table: error.table, filter: "id eq \(quoted)", top: 1, includeDeleted: true))
        return page.records.first { $0.id.utf8.elementsEqual(error.itemID.utf8) && $0.system.deleted }
    }
}
