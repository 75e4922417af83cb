import TSyncModel

/// Everything `tsync status` shows, read in one snapshot.
public struct StatusReport: Sendable {
    /// The `.tsync` directory.
    public var storeDirectory: String
    /// The configured remote URL; nil when none.
    public var remote: String?
    /// Every queued operation, in queue (push) order.
    public var operations: [PendingOperation]
    /// Tables with pending operations, by name.
    public var tables: [TableStatus]
    /// The saved pull queries and their checkpoints.
    public var savedQueries: [SavedQuery]

    /// Operations waiting to be pushed.
    public var pendingCount: Int { operations.count }
    /// Operations with a recorded error.
    public var errorCount: Int { operations.reduce(0) { $0 + ($1.error == nil ? 0 : 1) } }
    /// Nothing waits to be pushed.
    public var isClean: Bool { operations.isEmpty }

    /// A report of `storeDirectory` as `LocalStore.status()` reads it.
    public init(storeDirectory: String, remote: String?, operations: [PendingOperation], savedQueries: [SavedQuery]) {
        self.storeDirectory = storeDirectory
        self.remote = remote
        self.operations = operations
        self.savedQueries = savedQueries
        var byTable: [String: TableStatus] = [:]
        for operation in operations {
            byTable[operation.table, default: TableStatus(table: operation.table)].count(operation)
        }
        tables = byTable.values.sorted { $0.table < $1.table }
    }
}

/// Pending work of one table.
public struct TableStatus: Sendable, Equatable {
    /// The table's name.
    public var table: String
    /// Queued inserts.
    public var inserts = 0
    /// Queued updates.
    public var updates = 0
    /// Queued deletes.
    public var deletes = 0
    /// Operations of this table with a recorded error.
    public var errors = 0

    /// All queued operations of the table.
    public var pending: Int { inserts + updates + deletes }

    /// No operations yet for `table`.
    public init(table: String) { self.table = table }

    mutating func count(_ operation: PendingOperation) {
        switch operation.kind {
        case .insert: inserts += 1
        case .update: updates += 1
        case .delete: deletes += 1
        }
        if operation.error != nil { errors += 1 }
    }
}
