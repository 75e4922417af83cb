import TSyncModel

/// What `tsync status` shows apart from the queue itself, read in one snapshot: counts per table,
/// the first few operations of each table, the saved queries and the remote. The queue can hold a
/// million operations, so the report never holds them: they are read one at a time, through
/// `PendingOperations`, by the forms that list them all.
package struct StatusReport: Sendable {
    /// The `.tsync` directory.
    package var storeDirectory: String
    /// The configured remote URL; nil when none.
    package var remote: String?
    /// Tables with pending operations, by name.
    package var tables: [TableStatus]
    /// The first operations of each table, in queue (push) order: as many per table as
    /// `LocalStore.status(samplesPerTable:)` was asked for, enough for a summary to name a few.
    package var samples: [PendingOperation]
    /// The saved pull queries and their checkpoints.
    package var savedQueries: [SavedQuery]

    /// Operations waiting to be pushed.
    package var pendingCount: Int { tables.reduce(0) { $0 + $1.pending } }
    /// Operations with a recorded error.
    package var errorCount: Int { tables.reduce(0) { $0 + $1.errors } }
    /// Nothing waits to be pushed.
    package var isClean: Bool { tables.isEmpty }

    /// What a report knows before the queue is read (`LocalStore.status(_:)`): what `status
    /// --json` writes before the operations.
    package struct Head: Sendable {
        /// Nothing waits to be pushed.
        package var isClean: Bool
        /// Operations with a recorded error.
        package var errorCount: Int
    }

    /// A report as `LocalStore.status` reads it.
    package init(
        storeDirectory: String, remote: String?, tables: [TableStatus], samples: [PendingOperation] = [],
        savedQueries: [SavedQuery]
    ) {
        self.storeDirectory = storeDirectory
        self.remote = remote
        self.tables = tables
        self.samples = samples
        self.savedQueries = savedQueries
    }
}

/// Pending work of one table.
package struct TableStatus: Sendable, Equatable {
    /// The table's name.
    package var table: String
    /// Queued inserts.
    package var inserts = 0
    /// Queued updates.
    package var updates = 0
    /// Queued deletes.
    package var deletes = 0
    /// Operations of this table with a recorded error.
    package var errors = 0

    /// All queued operations of the table.
    package var pending: Int { inserts + updates + deletes }

    /// No operations yet for `table`.
    package init(table: String) { self.table = table }

    mutating func count(_ kind: OperationKind) {
        switch kind {
        case .insert: inserts += 1
        case .update: updates += 1
        case .delete: deletes += 1
        }
    }
}
