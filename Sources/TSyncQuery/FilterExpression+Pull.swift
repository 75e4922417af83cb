import TSyncModel

extension FilterExpression {
    /// "After (T, I)" in pull order (`updatedAt`, then `id`): `updatedAt ge T and ((updatedAt gt
    /// T) or (updatedAt eq T and id gt 'I'))`, the filter of an incremental pull's page after a
    /// checkpoint, as tsync's client sends it and tsync's server recognises it.
    ///
    /// The leading `updatedAt ge T` changes nothing logically; it is there for the server's query
    /// planner. With the bare disjunction SQLite walks the `(updated_at, id)` index from its start on
    /// every page (each page of a 100,000-record pull rescanned everything before it); with a range
    /// on the index's first column it seeks straight to the checkpoint, on any SQL backend.
    public static func pullAfter(updatedAt: Timestamp, id: String) -> FilterExpression {
        let field = FilterExpression.field("updatedAt")
        let time = FilterExpression.literal(.dateTime(updatedAt))
        let sameTimeLaterID = FilterExpression.binary(.and, .binary(.eq, field, time), .binary(.gt, .field("id"), .literal(.string(id))))
        return .binary(.and, .binary(.ge, field, time), .binary(.or, .binary(.gt, field, time), sameTimeLaterID))
    }

    /// The checkpoint of a `pullAfter` filter, the same time in its three places; nil for any
    /// other filter.
    public var pullPosition: (updatedAt: Timestamp, id: String)? {
        guard case .binary(.and, .binary(.ge, .field("updatedAt"), .literal(.dateTime(let from))), let after) = self,
            case .binary(.or, .binary(.gt, .field("updatedAt"), .literal(.dateTime(let later))), let same) = after,
            case .binary(.and, .binary(.eq, .field("updatedAt"), .literal(.dateTime(let equal))), let idAfter) = same,
            case .binary(.gt, .field("id"), .literal(.string(let id))) = idAfter,
            from == later, later == equal
        else { return nil }
        return (from, id)
    }
}
