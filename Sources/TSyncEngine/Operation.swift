import TSyncModel

/// What a queued operation does to its item on the server.
public enum OperationKind: String, Sendable, CaseIterable {
    case insert, update, delete

    /// The one-letter code of `status --porcelain`: `A`dded, `M`odified, `D`eleted.
    package var statusLetter: Character {
        switch self {
        case .insert: "A"
        case .update: "M"
        case .delete: "D"
        }
    }
}

/// Whether an operation is waiting, or being sent by a push right now. A change to an item whose
/// operation is in flight is queued after it instead of collapsing into it (docs/DESIGN.md §1).
public enum OperationState: String, Sendable {
    case pending
    case inflight
}

/// One entry of the operation queue, without the item body (`LocalStore.record` reads it; a
/// claim for push returns it in an `OutgoingOperation`).
public struct PendingOperation: Sendable, Equatable {
    /// Queue position: operations are pushed in increasing `seq`.
    public var seq: Int64
    /// The table of the item.
    public var table: String
    /// The item's id.
    public var itemID: String
    /// Insert, update or delete.
    public var kind: OperationKind
    /// Whether the operation waits or is in flight (sent, answer not yet applied).
    public var state: OperationState
    /// When the operation was queued.
    public var queuedAt: Timestamp
    /// The error recorded for this operation by the last push, if any.
    public var error: ErrorSummary?

    /// The recorded error of a failed operation, as `status` shows it.
    public struct ErrorSummary: Sendable, Equatable {
        /// The error's number, as `resolve ID` takes it.
        public var id: Int64
        /// The HTTP status of the answer; nil when there was none.
        public var httpStatus: Int?
        /// What the server (or tsync) said.
        public var message: String
    }

    /// An operation as read from the queue.
    public init(
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
