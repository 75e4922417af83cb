import TSyncModel

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
    /// Pages read.
    public var pages = 0

    public init() {}

    mutating func add(page result: PageResult, received: Int) {
        self.received += received
        upserted += result.upserted
        deleted += result.removed
        skipped += result.skipped
        pages += 1
    }
}

extension LocalStore {
    /// The environment variable that makes pull write one transaction per record, the way the
    /// original SDKs did (DESIGN §2.5). Benchmark baseline only (`scripts/bench-sync.sh`); never
    /// set it otherwise.
    public static let benchRowTransactionsVariable = "TSYNC_BENCH_ROW_TRANSACTIONS"

    /// `applyServerPage` with one transaction per record, then one for the checkpoint: the
    /// benchmark baseline, never used otherwise.
    func applyServerPageRowByRow(table: String, records: [Record], saving query: SavedQuery?) throws(TSyncError) -> PageResult {
        var total = PageResult()
        for record in records {
            let result = try applyServerPage(table: table, records: [record])
            total.upserted += result.upserted
            total.removed += result.removed
            total.skipped += result.skipped
        }
        if let query { try saveQuery(query) }
        return total
    }
}
