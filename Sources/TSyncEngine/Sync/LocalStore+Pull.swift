import GRDB
import TSyncModel

/// What `applyServerPage` did.
package struct PageResult: Sendable, Equatable {
    /// Records inserted or replaced.
    package var upserted = 0
    /// Local records removed because the server marked them deleted.
    package var removed = 0
    /// Records left alone because the item has a pending local operation.
    package var skipped = 0
    /// With `detailed`: what each record changed in the working copy, in page order, leaving out
    /// records that changed nothing (the copy the store already had: the echo of its own push).
    package var changes: [PulledChange] = []
    /// With `detailed`: the newest entry of the delivered operations when the page was written
    /// (`DeliveredOperations`), so `tsync watch` reports the pushes written before the page
    /// before the page's changes, and those after it after them.
    package var pushedBefore: Int64 = 0
}

/// One record of a page that changed the working copy (`tsync watch` prints each).
package struct PulledChange: Sendable, Equatable {
    package enum Kind: String, Sendable { case upserted, removed }
    package var id: String
    package var kind: Kind
    /// The server's version of the record.
    package var version: String?
}

/// What a pull did to the local table, summed over its pages.
public struct PullCounts: Sendable, Equatable {
    /// Records the server sent.
    public var received = 0
    /// Records written (inserted or replaced).
    public var upserted = 0
    /// Local records removed because the server marked them deleted.
    public var deleted = 0
    /// Records left alone because the item has a pending local operation.
    public var skipped = 0
    /// Pages read that brought records (or the one empty page of a pull that found nothing): the
    /// empty page that ends a pull (docs/DESIGN.md §8) is not counted.
    public var pages = 0

    /// Nothing counted yet.
    public init() {}

    mutating func add(page result: PageResult, received: Int) {
        self.received += received
        upserted += result.upserted
        deleted += result.removed
        skipped += result.skipped
        if received > 0 || pages == 0 { pages += 1 }
    }
}

extension LocalStore {
    /// Applies one page of a pull in one transaction (docs/DESIGN.md §2.5): records are upserted, records
    /// marked deleted are removed, and items with a pending local operation are left alone (their
    /// base too: the next push must still be checked against the version the user changed). When
    /// `checkpoint` is given it is saved in the same transaction, so the checkpoint never runs ahead
    /// of the records.
    @discardableResult
    package func applyServerPage(
        table: String, records: [TSyncModel.Record], saving query: SavedQuery? = nil, detailed: Bool = false
    ) throws(TSyncError) -> PageResult {
        try applyServerPage(table: table, stored: records.map(StoredRecord.init), saving: query, detailed: detailed)
    }

    /// The same, for records already in the store's form (a pull's pages: `readStoredPage`).
    @discardableResult
    package func applyServerPage(
        table: String, stored records: [StoredRecord], saving query: SavedQuery? = nil, detailed: Bool = false
    ) throws(TSyncError) -> PageResult {
        try Identifiers.validateTableName(table)
        return try write { db in try Self.applyServerPage(db, table: table, stored: records, saving: query, detailed: detailed) }
    }

    /// Several pages of a pull in one transaction, in order, each as `applyServerPage` writes it
    /// alone and with its own checkpoint: the store after it is the store after the pages one
    /// transaction each (docs/DESIGN.md §8). One commit, not one a page: each commit rewrote the
    /// B-trees' last pages, page 1 and the query's row into the WAL.
    ///
    /// The transaction runs on the store's writer thread, not on the caller's: a pull's write
    /// takes milliseconds, and meanwhile Swift's two pool threads (on two cores) decode the pages
    /// on their way and send the requests for the next ones, which waited for a free thread.
    package func applyServerPages(table: String, _ pages: [(records: [StoredRecord], query: SavedQuery?)]) async throws(TSyncError)
        -> [PageResult]
    {
        try Identifiers.validateTableName(table)
        do {
            return try await pool.write { db in
                try pages.map { page in
                    try Self.applyServerPage(db, table: table, stored: page.records, saving: page.query, detailed: false)
                }
            }
        } catch {
            throw StoreFailure.map(error, location: location)
        }
    }

    private static func applyServerPage(
        _ db: Database, table: String, stored records: [StoredRecord], saving query: SavedQuery?, detailed: Bool
    ) throws -> PageResult {
        try StoreRows.registerTable(db, table)
        var result = PageResult()
        // The items with queued operations, found by one statement for the whole page (none
        // to look for in a table with an empty queue, as in a clone).
        var busy = Set<Int>()
        if try StoreRows.hasOperations(db, table: table) {
            let ids = JSONSerializer.string(.array(records.map { .string($0.id) }))
            busy = Set(
                try Int.fetchAll(
                    db,
                    sql: """
                        SELECT CAST(j.key AS INTEGER) FROM json_each(?) j
                        WHERE EXISTS (SELECT 1 FROM operations o WHERE o.tbl = ? AND o.item_id = j.value)
                        """,
                    arguments: [ids, table]))
        }
        let clearsSkipped = try StoreRows.hasSkippedCopies(db, table: table)
        // `detailed`: the upserts leave alone, and do not report, a record the store holds at
        // the version sent already (the echo of a push), or at a newer one (a push's answer
        // taken after the watch read the page); they tell which ids they wrote, and
        // the changes are put in page order once the page is written. (A statement of its own
        // that looked the held versions up cost 1.2-1.9 ms a page of 1,000.)
        var written: Set<String>? = detailed ? [] : nil
        var candidates: [(index: Int, kind: PulledChange.Kind)] = []
        // Upserts are written several rows per statement, in page order: a delete writes
        // those before it first (the page may name its id twice).
        var upserts: [Int] = []
        upserts.reserveCapacity(StoreRows.upsertChunkSize)
        // By position, not `enumerated()`: a copy of each record was a cost of its own.
        for index in records.indices {
            if busy.contains(index) {
                // Not applied, and the checkpoint moves past it: kept for `resolve`.
                try StoreRows.saveSkippedCopy(db, table: table, record: try records[index].record())
                result.skipped += 1
                continue
            }
            if clearsSkipped { try StoreRows.dropSkippedCopy(db, table: table, id: records[index].id) }
            if records[index].deleted {
                try StoreRows.upsertRecords(db, table: table, records, &upserts, written: &written)
                try StoreRows.deleteRecord(db, table: table, id: records[index].id)
                let removed = db.changesCount
                result.removed += removed
                if detailed, removed > 0 { candidates.append((index, .removed)) }
            } else {
                upserts.append(index)
                result.upserted += 1
                if detailed { candidates.append((index, .upserted)) }
                if upserts.count == StoreRows.upsertChunkSize {
                    try StoreRows.upsertRecords(db, table: table, records, &upserts, written: &written)
                }
            }
        }
        try StoreRows.upsertRecords(db, table: table, records, &upserts, written: &written)
        if let written {
            result.changes = candidates.compactMap { index, kind in
                let record = records[index]
                guard kind == .removed || written.contains(record.id) else { return nil }
                return PulledChange(id: record.id, kind: kind, version: record.version)
            }
        }
        if let query { try StoreRows.saveQuery(db, query) }
        if detailed { result.pushedBefore = try DeliveredOperations.last(db) }
        return result
    }
}
