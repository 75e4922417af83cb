import Foundation
import TSyncModel
import TSyncQuery

/// How far an incremental pull got: the last record seen, by (updatedAt, id) (docs/DESIGN.md §2.1). The
/// next pull asks for `updatedAt gt T or (updatedAt eq T and id gt I)` ordered by `updatedAt, id`.
package struct Checkpoint: Sendable, Equatable {
    /// The `updatedAt` of the last record pulled.
    package var updatedAt: Timestamp
    /// Its id: records with the same `updatedAt` are ordered by id.
    package var id: String
}

/// The checkpoint of an incremental pull as a position in the server's `updatedAt, id` order.
///
/// The SDKs kept only `updatedAt` and asked for `updatedAt ge T`, which re-downloads the last
/// records every time and loops forever on more than a page of equal timestamps (docs/DESIGN.md §2.1). The
/// pair is a total order (ties broken by id, as the server orders), so "after the checkpoint" names
/// each record exactly once.
extension Checkpoint: Comparable {
    /// Ids compare by their UTF-8 bytes, as the server orders them (SQLite's BINARY, PostgreSQL's
    /// "C" collation); Swift's own `String <` neither follows byte order nor tells "é" from
    /// "e" + U+0301.
    package static func < (lhs: Checkpoint, rhs: Checkpoint) -> Bool {
        if lhs.updatedAt != rhs.updatedAt { return lhs.updatedAt < rhs.updatedAt }
        return bytesPrecede(lhs.id, rhs.id)
    }

    /// `a.utf8.lexicographicallyPrecedes(b.utf8)`, by `memcmp` where both strings hold their
    /// UTF-8 contiguously (every string a page decodes): the generic walk over two `UTF8View`s was
    /// most of the time a pull spent checking a page's order.
    static func bytesPrecede(_ a: String, _ b: String) -> Bool {
        let compared = a.utf8.withContiguousStorageIfAvailable { a in
            b.utf8.withContiguousStorageIfAvailable { b -> Bool in
                let common = min(a.count, b.count)
                if common > 0, let aBase = a.baseAddress, let bBase = b.baseAddress {
                    let order = memcmp(aBase, bBase, common)
                    if order != 0 { return order < 0 }
                }
                return a.count < b.count
            }
        }
        return (compared ?? nil) ?? a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    /// Equal when both the time and the id are.
    package static func == (lhs: Checkpoint, rhs: Checkpoint) -> Bool {
        lhs.updatedAt == rhs.updatedAt && lhs.id.utf8.elementsEqual(rhs.id.utf8)
    }

    /// Where an incremental pull stands after `records`, a page asked for after `position`, once
    /// the page is checked: every record has `updatedAt`, none is older than the checkpoint, and
    /// timestamps never go back within the page. A server that ignores `$orderby` or the filter
    /// would otherwise move the checkpoint past records it has not sent yet, which later pulls
    /// would then never fetch (docs/DESIGN.md §2.1).
    ///
    /// Ties at one timestamp are tolerated out of id order, and so are records again at the
    /// checkpoint's own timestamp: a server that keeps finer timestamps than it sends (microseconds
    /// stored, milliseconds sent) orders a run of equal sent timestamps by the hidden digits and
    /// answers "after (T, id)" with the whole run at T again. Such a page moves the
    /// checkpoint to its last record when it reaches past the checkpoint's timestamp; a page that
    /// stays inside the run keeps the checkpoint and walks the run by offset (`skip`), so a run
    /// longer than a page neither loops nor skips a record (docs/DESIGN.md §2.1, §8). A replayed
    /// answer looks the same, so `Puller` starts such a walk only when the server answers the same
    /// read twice alike.
    package static func position(after records: [Record], from position: PullPosition) throws(TSyncError) -> PullPosition {
        try self.position(after: records.count, { (id: records[$0].id, updatedAt: records[$0].system.updatedAt) }, from: position)
    }

    /// The same for a page in the store's form. Each record's two properties are read where they
    /// lie: a copy of each whole record (three strings retained and released) cost as much as
    /// the check itself.
    package static func position(afterStored records: [StoredRecord], from position: PullPosition) throws(TSyncError) -> PullPosition {
        try self.position(after: records.count, { (id: records[$0].id, updatedAt: records[$0].updatedAt) }, from: position)
    }

    private static func position(
        after count: Int, _ recordAt: (Int) -> (id: String, updatedAt: Timestamp?), from position: PullPosition
    ) throws(TSyncError) -> PullPosition {
        var last = position.checkpoint
        var strict = position.skip == 0
        for index in 0..<count {
            let record = recordAt(index)
            guard let updatedAt = record.updatedAt else {
                throw .failure("the server sent \(Identifiers.quoted(record.id)) without updatedAt, so no position can be kept")
            }
            let current = Checkpoint(updatedAt: updatedAt, id: record.id)
            if let last {
                if current.updatedAt < last.updatedAt {
                    throw .failure(
                        "the server does not return the records after the checkpoint in (updatedAt, id) order (\(Identifiers.quoted(record.id)) came after \(Identifiers.quoted(last.id))), so an incremental pull could skip records"
                    )
                }
                if !(last < current) { strict = false }
            }
            last = current
        }
        guard let last, count > 0 else { return position }
        if strict { return PullPosition(checkpoint: last) }
        if let checkpoint = position.checkpoint, last.updatedAt == checkpoint.updatedAt {
            return PullPosition(checkpoint: checkpoint, skip: position.skip + count)
        }
        return PullPosition(checkpoint: last)
    }

    /// The latest `updatedAt` a saved checkpoint may take: the later of this machine's clock and
    /// the server's (the answer's `Date`), plus `skew`. A record stamped later (year 9999, or a
    /// server clock a day ahead that its `Date` does not show) would otherwise move the checkpoint
    /// past every record written until then, and each later pull would receive nothing. Such a record is written, the checkpoint stays before it, and the pull says so
    /// (docs/DESIGN.md §2.1).
    package static func bound(now: Timestamp, serverDate: Timestamp?) -> Timestamp {
        let clock = max(now.millisecondsSinceEpoch, serverDate?.millisecondsSinceEpoch ?? now.millisecondsSinceEpoch)
        return Timestamp(millisecondsSinceEpoch: clock + skew)
    }

    /// Milliseconds past the clocks a record may be stamped and still move a checkpoint: a
    /// `Date` is truncated to the second, and two servers' clocks (PostgreSQL instances) differ by
    /// a little.
    package static let skew: Int64 = 60_000

    /// `updatedAt ge T and ((updatedAt gt T) or (updatedAt eq T and id gt 'I'))`
    /// (`FilterExpression.pullAfter`, which says why the leading `ge`).
    package var filterAfter: String { after.odataText }

    /// `filterAfter` as an expression, written out by TSyncQuery (the one writer of `$filter` text,
    /// its literals quoted one way).
    var after: FilterExpression { .pullAfter(updatedAt: updatedAt, id: id) }

    /// The `$filter` of one page of an incremental pull: the user's filter AND-ed with "after the
    /// checkpoint" (either may be absent).
    package static func filter(user: String?, after checkpoint: Checkpoint?) -> String? {
        let user = user.flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0 }
        switch (user, checkpoint) {
        case (nil, nil): return nil
        case (let user?, nil): return user
        case (nil, let checkpoint?): return checkpoint.filterAfter
        case (let user?, let checkpoint?): return "(\(user)) and (\(checkpoint.filterAfter))"
        }
    }

    /// The order that makes the checkpoint a position: `updatedAt, id`.
    package static let orderBy = "updatedAt,id"
}

/// How far an incremental pull got: its checkpoint, and inside a run of records that all carry
/// the checkpoint's timestamp but come out of id order (a server that truncates its timestamps),
/// how many records of "after the checkpoint" were already read. Only the checkpoint is saved: a
/// pull stopped inside such a run reads the run again, which rewrites the same records.
package struct PullPosition: Sendable, Equatable {
    /// The checkpoint the pull resumes from; nil from the start.
    package var checkpoint: Checkpoint?
    /// Records after the checkpoint already read, passed over with `$skip` by the next page.
    package var skip: Int

    /// A position at `checkpoint`, `skip` records past it.
    package init(checkpoint: Checkpoint?, skip: Int = 0) {
        self.checkpoint = checkpoint
        self.skip = skip
    }
}
