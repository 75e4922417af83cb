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
public enum OperationState: String, Sendable {
    case pending
    case inflight
}

/// One entry of the operation queue, without the item body (`LocalStore.record` reads it; a
/// claim for push returns it in an `OutgoingOperation`).
public struct PendingOperation: Sendable, Equatable {
    /// Queue position: operations are pushed in increasing `seq`.
    public var seq: Int64
    public var table: String
    public var itemID: String
    public var kind: OperationKind
    public var state: OperationState
    public var queuedAt: Timestamp
    /// The error recorded for this operation by the last push, if any.
    public var error: ErrorSummary?

    public struct ErrorSummary: Sendable, Equatable {
        public var id: Int64
        public var httpStatus: Int?
        public var message: String
    }

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
