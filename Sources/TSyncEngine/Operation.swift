import TSyncModel

/// What a queued operation does to its item on the server.
public enum OperationKind: String, Sendable, CaseIterable {
    case insert, update, delete

    /// The one-letter code of `status --porcelain`: `A`dded, `M`odified, `D`eleted.
    public var statusLetter: Character {
        switch self {
        case .insert: "A"
        case .update: "M"
        case .delete: "D"
        }
    }
}

/// Whether an operation is waiting, or being sent by a push right now. A change to an item whose
/// operation is in flight is queued after it instead of collapsing into it (docs/DESIGN.md §1).
package enum OperationState: String, Sendable {
    case pending
    case inflight
}

/// One entry of the operation queue, without the item body (`LocalStore.record` reads it; a
/// claim for push returns it in an `OutgoingOperation`).
package struct PendingOperation: Sendable, Equatable {
    /// Queue position: operations are pushed in increasing `seq`.
    package var seq: Int64
    /// The table of the item.
    package var table: String
    /// The item's id.
    package var itemID: String
    /// Insert, update or delete.
    package var kind: OperationKind
    /// Whether the operation waits or is in flight (sent, answer not yet applied).
    package var state: OperationState
    /// When the operation was queued.
    package var queuedAt: Timestamp
    /// The error recorded for this operation by the last push, if any.
    package var error: ErrorSummary?

    /// The recorded error of a failed operation, as `status` shows it.
    package struct ErrorSummary: Sendable, Equatable {
        /// The error's number, as `resolve ID` takes it.
        package var id: Int64
        /// The HTTP status of the answer; nil when there was none.
        package var httpStatus: Int?
        /// What the server (or tsync) said.
        package var message: String
    }

    /// An operation as read from the queue.
    package init(
        seq: Int64, table: String, itemID: String, kind: OperationKind, state: OperationState,
        queuedAt: Timestamp, error: ErrorSummary? = nil
    ) {
        self.seq = seq
        self.table = table
        self.itemID = itemID
        self.kind = kind
        self.state = state
        self.queuedAt = queuedAt
        self.error = error
    }
}
