import Foundation
import TSyncModel

/// The checkpoint of an incremental pull as a position in the server's `updatedAt, id` order.
///
/// The SDKs kept only `updatedAt` and asked for `updatedAt ge T`, which re-downloads the last
/// records every time and loops forever on more than a page of equal timestamps (DESIGN §2.1). The
/// pair is a total order (ties broken by id, as the server orders), so "after the checkpoint" names
/// each record exactly once.
extension Checkpoint: Comparable {
    public static func < (lhs: Checkpoint, rhs: Checkpoint) -> Bool {
        (lhs.updatedAt, lhs.id) < (rhs.updatedAt, rhs.id)
    }

    /// `updatedAt ge T and ((updatedAt gt T) or (updatedAt eq T and id gt 'I'))`.
    ///
    /// The leading `updatedAt ge T` changes nothing logically; it is there for the server's query
    /// planner. With the bare disjunction SQLite walks the `(updated_at, id)` index from its start on
    /// every page (each page of a 100,000-record pull rescanned everything before it); with a range
    /// on the index's first column it seeks straight to the checkpoint, on any SQL backend.
    public var filterAfter: String {
        let time = "datetimeoffset'\(updatedAt.iso8601)'"
        return "updatedAt ge \(time) and ((updatedAt gt \(time)) or (updatedAt eq \(time) and id gt \(Self.odataString(id))))"
    }

    /// The `$filter` of one page of an incremental pull: the user's filter AND-ed with "after the
    /// checkpoint" (either may be absent).
    public static func filter(user: String?, after checkpoint: Checkpoint?) -> String? {
        let user = user.flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0 }
        switch (user, checkpoint) {
        case (nil, nil): return nil
        case (let user?, nil): return user
        case (nil, let checkpoint?): return checkpoint.filterAfter
        case (let user?, let checkpoint?): return "(\(user)) and (\(checkpoint.filterAfter))"
        }
    }

    /// The order that makes the checkpoint a position: `updatedAt, id`.
    public static let orderBy = "updatedAt,id"

    /// The greatest (updatedAt, id) of some records; nil when one lacks `updatedAt` (then no
    /// position can be kept).
    public static func last(of records: [Record]) -> Checkpoint? {
        var last: Checkpoint?
        for record in records {
            guard let updatedAt = record.system.updatedAt else { return nil }
            let position = Checkpoint(updatedAt: updatedAt, id: record.id)
            if last.map({ position > $0 }) ?? true { last = position }
        }
        return last
    }

    /// An OData string literal: single quotes, an embedded quote doubled.
    static func odataString(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }
}
