import TSyncModel
import TSyncQuery

/// A point in a record's or a table's past: one of its versions, or a time.
public enum HistoryPoint: Sendable, Equatable {
    /// The record as the write that made this version left it.
    case version(String)
    /// The record (or the table) as it was at this time: each record's latest version at or before it.
    case time(Timestamp)
}

/// The record history workflows (docs/DESIGN.md §15): the server's versions of a record, a record
/// or a table as it was, and the local changes that bring them back. All of them read the history
/// route, discovered first (`HistoryCapabilities`): a server without it keeps no history, and
/// saying so is the whole answer.
extension SyncSession {
    /// Versions of a record asked for per request.
    static let versionsPerPage = 100

    /// The server's versions of `table`/`id`, newest first; at most `limit` when given.
    public func history(table: String, id: String, limit: Int? = nil) async throws(TSyncError) -> [RecordVersion] {
        try Identifiers.validateTableName(table)
        try Identifiers.validateRecordID(id)
        return try await withRemote { remote throws(TSyncError) in
            try await Self.requireHistory(remote)
            return try await Self.versions(remote, table: table, id: id) { versions in limit.map { versions.count >= $0 } ?? false }
                .prefix(limit ?? Int.max).map { $0 }
        }
    }

    /// The record as it was at `point`: nil when it did not exist yet then. A record deleted then
    /// is answered marked deleted.
    public func record(table: String, id: String, at point: HistoryPoint) async throws(TSyncError) -> Record? {
        try Identifiers.validateTableName(table)
        try Identifiers.validateRecordID(id)
        return try await withRemote { remote throws(TSyncError) in
            try await Self.requireHistory(remote)
            return try await Self.record(remote, table: table, id: id, at: point)
        }
    }

    /// Queues the local change that brings `table`/`id` back to how it was at `point`
    /// (`LocalStore.revert`): refused while the record has pending changes, unless `force`, which
    /// drops them first.
    public func revert(table: String, id: String, to point: HistoryPoint, force: Bool) async throws(TSyncError) -> [RevertChange] {
        try Identifiers.validateTableName(table)
        try Identifiers.validateRecordID(id)
        return try await withRemote { remote throws(TSyncError) in
            try await Self.requireHistory(remote)
            let then = try await Self.record(remote, table: table, id: id, at: point)
            if case .version(let version) = point, then == nil {
                throw TSyncError.invalidInput("\(table)/\(id) has no version \(Identifiers.quoted(version)) in the server's history")
            }
            let now = try await ServerCopies.read([ItemKey(table: table, id: id)], from: remote)[ItemKey(table: table, id: id)]
            let target = RevertTarget(id: id, server: now.map(ServerCopy.record) ?? .none, target: then.flatMap(Self.liveFields))
            return try store.revert(table: table, targets: [target], queued: [id], force: force, dryRun: false)
        }
    }

    /// Queues the local changes that bring `table` (the records `filter` matches, then or now)
    /// back to how it was at `time`, in one transaction: updates of records changed since,
    /// deletes of records created since, undeletes (or inserts, when the server no longer keeps
    /// the deleted copy) of records deleted since. Refused while records of it have pending
    /// changes, unless `force`, which drops them first. With `dryRun` nothing is queued.
    public func restore(table: String, at time: Timestamp, filter: String? = nil, force: Bool, dryRun: Bool) async throws(TSyncError)
        -> [RevertChange]
    {
        try Identifiers.validateTableName(table)
        if let filter { _ = try ODataParser.parseFilter(filter) }
        return try await withRemote { remote throws(TSyncError) in
            try await Self.requireHistory(remote)
            var then = try await Self.readAll(remote, table: table, filter: filter, at: time)
            var now = try await Self.readAll(remote, table: table, filter: filter, at: nil)
            // A record the filter matches only then or only now: its other state is read by id.
            let onlyThen = then.keys.filter { now[$0] == nil }.sorted()
            let copies = try await ServerCopies.read(onlyThen.map { ItemKey(table: table, id: $0) }, from: remote)
            for id in onlyThen { now[id] = copies[ItemKey(table: table, id: id)] }
            if filter != nil {
                let onlyNow = now.keys.filter { then[$0] == nil }.sorted()
                for chunk in stride(from: 0, to: onlyNow.count, by: ServerCopies.idsPerRequest) {
                    let ids = onlyNow[chunk..<min(onlyNow.count, chunk + ServerCopies.idsPerRequest)]
                    let found = try await Self.readAll(remote, table: table, filter: ServerCopies.filter(ids: ids), at: time)
                    then.merge(found) { old, _ in old }
                }
            }
            let ids = Set(then.keys).union(now.keys).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            let targets = ids.map { id in
                RevertTarget(
                    id: id, server: now[id].map(ServerCopy.record) ?? .none, target: then[id].flatMap(Self.liveFields))
            }
            // Without a filter, every queued item of the table is in the way (a local insert the
            // server never saw included); with one, those of the records restored.
            let queued = filter == nil ? try store.queuedIDs(table: table) : ids
            return try store.revert(table: table, targets: targets, queued: queued, force: force, dryRun: dryRun)
        }
    }

    // MARK: - Reading the history route

    /// Fails, saying so, when the server keeps no history.
    static func requireHistory(_ remote: RemoteClient) async throws(TSyncError) {
        guard try await remote.historyCapabilities() != nil else {
            throw TSyncError.failure("the server at \(remote.endpoint) keeps no history of records")
        }
    }

    /// A record's versions, newest first, page after page until the history ends or `enough`.
    private static func versions(
        _ remote: RemoteClient, table: String, id: String, enough: ([RecordVersion]) -> Bool
    ) async throws(TSyncError) -> [RecordVersion] {
        var versions: [RecordVersion] = []
        var next: String?
        var links = Set<String>()
        repeat {
            let page = try await remote.recordVersions(table: table, id: id, top: versionsPerPage, skip: versions.count, nextLink: next)
            versions += page.versions
            next = page.nextLink
            if let link = next, !links.insert(link).inserted {
                throw TSyncError.failure("reading the history of \(table)/\(id): the server's next-page links go round in a circle")
            }
            if page.versions.isEmpty || (next == nil && page.versions.count < versionsPerPage) { break }
        } while !enough(versions)
        return versions
    }

    /// The record at `point`, nil when it did not exist then (or has no such version).
    private static func record(_ remote: RemoteClient, table: String, id: String, at point: HistoryPoint) async throws(TSyncError)
        -> Record?
    {
        switch point {
        case .version(let wanted):
            let versions = try await versions(remote, table: table, id: id) { $0.contains { $0.version == wanted } }
            return versions.first { $0.version == wanted }?.item
        case .time(let time):
            return try await readAll(remote, table: table, filter: ServerCopies.filter(ids: [id]), at: time)[id]
        }
    }

    /// Every record of `table` that `filter` matches, deleted ones included, by id: now, or as it
    /// was at `time` (`WholeTable`).
    static func readAll(_ remote: RemoteClient, table: String, filter: String?, at time: Timestamp?) async throws(TSyncError)
        -> [String: Record]
    {
        guard let time else {
            return try await WholeTable.read(table: table, filter: filter, endpoint: remote.endpoint) { request throws(TSyncError) in
                try await remote.readPage(request)
            }
        }
        return try await WholeTable.read(table: table, filter: filter, endpoint: remote.endpoint) {
            request throws(TSyncError) in try await remote.readPage(request, at: time)
        }
    }

    /// The user fields of a record that exists (nil for a deleted one).
    static func liveFields(_ record: Record) -> [String: JSONValue]? {
        record.system.deleted ? nil : record.fields
    }
}
