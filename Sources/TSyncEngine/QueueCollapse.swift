import TSyncModel

/// The collapse rules of docs/DESIGN.md §1: what a new local change does to the item's pending operation.
///
/// | pending → new | result |
/// |---|---|
/// | none → any | the new operation is appended |
/// | in flight → any but a delete | the new operation is appended after it, never merged into it |
/// | insert → update | stays one insert (its body is read at push time, so it sends the new body) |
/// | insert → delete | both vanish: the server never heard of the item |
/// | update → update | stays one update |
/// | update → delete | one delete |
/// | insert → insert, update → insert, delete (pending or in flight) → anything | rejected |
///
/// Pure, so the table can be tested row by row; `LocalStore` applies the outcome.
package enum QueueCollapse {
    /// What queuing one more operation does to an item's queue.
    package enum Outcome: Sendable, Equatable {
        /// Append a new operation of this kind at the end of the queue.
        case append(OperationKind)
        /// Keep the pending operation (and its queue position), now of this kind.
        case keep(OperationKind)
        /// Remove the pending operation: nothing is sent for the item.
        case cancel
    }

    /// - Parameters:
    ///   - newest: the kind of the item's newest operation, or nil when it has none.
    ///   - inFlight: whether that operation is being pushed right now.
    ///   - new: the change being made.
    package static func outcome(
        newest: OperationKind?, inFlight: Bool, new: OperationKind, table: String, id: String
    ) throws(TSyncError) -> Outcome {
        let item = "\(table)/\(id)"
        guard let pending = newest else { return .append(new) }
        // A delete being pushed still ends the item's life on the server: reusing its id must wait.
        if inFlight, pending != .delete { return .append(new) }
        switch (pending, new) {
        case (.insert, .update): return .keep(.insert)
        case (.insert, .delete): return .cancel
        case (.update, .update): return .keep(.update)
        case (.update, .delete): return .keep(.delete)
        case (.insert, .insert):
            throw TSyncError(.invalidInput, "\(item) already exists (its insert is pending)", remedy: .updateInstead)
        case (.update, .insert):
            throw TSyncError(.invalidInput, "\(item) already exists (an update is pending)", remedy: .updateInstead)
        case (.delete, _):
            throw TSyncError(
                .invalidInput, "\(item) has a pending delete, to be pushed before you \(new.rawValue) this id again", remedy: .pushFirst)
        }
    }
}
