import GRDB
import TSyncModel
import TSyncQuery

/// What an incremental pull did when the server had removed deleted records past the query's
/// checkpoint (docs/DESIGN.md §15): the deletes it would never have seen are found by reading
/// which records the server has now.
package struct HorizonResync: Sendable, Equatable {
    /// The server removed the soft-deleted records up to this `updatedAt`.
    package var horizon: Timestamp
    /// The ids of the local records dropped: the server no longer has them, and nothing of theirs
    /// was queued.
    package var droppedIDs: [String]
    /// Local records the server no longer has that were kept for their pending changes.
    package var kept: Int

    package var dropped: Int { droppedIDs.count }
}

extension Puller {
    /// When a page of an incremental pull says that the server removed deleted records later than
    /// the query's checkpoint (`X-TSync-Deleted-Horizon`), those deletes will never come as
    /// records: the query is read whole (without checkpoint), and the local records it matches
    /// that the server no longer has are dropped, except those with pending changes, which are
    /// kept as every pending change is. Once per pull, before the page is written, so a pull
    /// stopped after it and run again does it again (it finds nothing more). A plain v2 server
    /// sends no horizon: nothing happens.
    func resyncPastHorizon(
        _ page: StoredPage, table: String, filter: String?, checkpoint: Checkpoint?, summary: inout PullSummary
    ) async throws(TSyncError) {
        guard Self.startsResync(page, checkpoint: checkpoint, summary: summary), let horizon = page.deletedHorizon else { return }
        let remote = self.remote
        let present = try await WholeTable.read(table: table, filter: filter, endpoint: remote.endpoint) { request throws(TSyncError) in
            try await remote.readPage(request)
        }
        let (dropped, kept) = try store.dropRecordsMissing(table: table, filter: filter, present: Set(present.keys))
        let resync = HorizonResync(horizon: horizon, droppedIDs: dropped, kept: kept)
        summary.horizonResync = resync
        await resyncObserver?(table, resync)
    }

    /// Whether `page` starts the resync (`resyncPastHorizon`). Pages read before it and not yet
    /// written are written first: written after the resync's whole read, a record the server
    /// deleted and removed meanwhile would come back and stay.
    static func startsResync(_ page: StoredPage, checkpoint: Checkpoint?, summary: PullSummary) -> Bool {
        guard summary.horizonResync == nil, let horizon = page.deletedHorizon, let checkpoint else { return false }
        return horizon > checkpoint.updatedAt
    }
}

/// A whole read of a table (or of what a filter matches), deleted records included, by id.
enum WholeTable {
    /// Pages go in id order, each asking for the ids after the last one the page before brought
    /// (`id gt 'LAST'`, plain v2 `$filter`), never by `Link` or `$skip`: a link is checked only
    /// where a pull without a query id follows it (`RemoteEndpoint.nextPage`), and one to another
    /// table would bring that table's records here; a page from an id searches the index, where
    /// `$skip` would make each page walk every record before it (the table at a time T pays that
    /// per version, docs/DESIGN.md §6.5). A page that brings no record not seen before (a server
    /// that ignores the filter) stops it with an error, as a pull's would (docs/DESIGN.md §8).
    static func read(
        table: String, filter: String?, endpoint: RemoteEndpoint, _ readPage: (PageRequest) async throws(TSyncError) -> Page
    ) async throws(TSyncError) -> [String: TSyncModel.Record] {
        var records: [String: TSyncModel.Record] = [:]
        var last: String?
        while true {
            let page = try await readPage(
                PageRequest(table: table, filter: Self.filter(filter, after: last), orderBy: "id", top: PullRequest.defaultPageSize))
            guard let end = page.records.last else { break }
            var new = 0
            for record in page.records where records.updateValue(record, forKey: record.id) == nil { new += 1 }
            guard new > 0 else {
                throw TSyncError.failure(
                    "reading table \(table) from \(endpoint): the server sent a page of records it had sent before (it ignores $filter on id, or its pages overlap); stopped, nothing was changed"
                )
            }
            last = end.id
        }
        return records
    }

    /// `filter`, narrowed to the ids after `last` in the server's id order.
    private static func filter(_ filter: String?, after last: String?) -> String? {
        guard let last else { return filter }
        let after = FilterExpression.binary(.gt, .field("id"), .literal(.string(last))).odataText
        return filter.map { "(\($0)) and \(after)" } ?? after
    }
}

extension LocalStore {
    /// Drops, in one transaction, the local records of `table` that `filter` matches and whose id
    /// is not in `present`, unless they have queued operations. Returns the ids that went and how
    /// many were kept for their pending changes.
    package func dropRecordsMissing(table: String, filter: String?, present: Set<String>) throws(TSyncError) -> (
        dropped: [String], kept: Int
    ) {
        var query = RecordQuery()
        query.filter = try filter.map { text throws(TSyncError) in try ODataParser.parseFilter(text) }
        let (sql, arguments) = try query.localSQL(table: table)
        return try write { db in
            guard try StoreRows.tableExists(db, table) else { return ([], 0) }
            let ids = try String.fetchAll(db, sql: "SELECT id FROM (\(sql))", arguments: arguments)
            var dropped: [String] = []
            var kept = 0
            for id in ids where !present.contains(id) {
                if try StoreRows.hasOperations(db, table: table, id: id) {
                    kept += 1
                } else {
                    try StoreRows.deleteRecord(db, table: table, id: id)
                    dropped.append(id)
                }
            }
            return (dropped, kept)
        }
    }
}
