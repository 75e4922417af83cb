import TSyncModel

/// Field-level three-way merge of base / ours / theirs (docs/DESIGN.md §2.6, `resolve --merge`).
///
/// The SDKs only offered "client wins" or "server wins" for a whole record, so two people editing
/// different fields of one item had to throw one edit away. With the base (the last server copy the
/// client saw) a field changed on one side only can be taken from that side; only a field both
/// sides changed to different values is a real conflict, and then nothing is merged.
///
/// Only user fields take part: system properties belong to the server and are never merged.
/// A side that is `nil` has no record (deleted locally, or absent / deleted on the server).
public enum ThreeWayMerge {
    /// One field both sides changed differently. `nil` values mean "absent on that side".
    package struct FieldConflict: Sendable, Equatable {
        /// The field both sides changed.
        package var field: String
        /// Its value in the base; nil when absent.
        package var base: JSONValue?
        /// Its value here.
        package var ours: JSONValue?
        /// Its value on the server.
        package var theirs: JSONValue?
    }

    /// The merged fields, or the fields that conflict.
    package enum Outcome: Sendable, Equatable {
        /// The merged user fields (possibly equal to one side).
        case merged([String: JSONValue])
        /// Both sides deleted the record: nothing is left to keep.
        case deleted
        /// One side deleted the record and the other changed it: no field-level answer exists.
        case deleteConflict(deletedBy: Side)
        /// Fields both sides changed differently; nothing was merged.
        case conflicting([FieldConflict])
    }

    /// A side of a conflict: who deleted an item the other changed, and (`--prefer`, the
    /// `prefer` settings) which side wins a field both changed, or a change against a delete.
    public enum Side: String, Sendable, CaseIterable { case ours, theirs }

    /// `prefer` settles what would otherwise be a conflict: a field both sides changed takes that
    /// side's value, and when one side deleted the record the other changed, that side's choice
    /// stands (its deletion, or its record).
    package static func merge(
        base: [String: JSONValue]?, ours: [String: JSONValue]?, theirs: [String: JSONValue]?, prefer: Side? = nil
    ) -> Outcome {
        switch (ours, theirs) {
        case (nil, nil):
            return .deleted
        case (nil, let theirs?):
            // We deleted it: fine if the server did not change it since our base.
            if let base, sameFields(base, theirs) { return .deleted }
            switch prefer {
            case .ours?: return .deleted
            case .theirs?: return .merged(theirs.filter { !SystemProperties.names.contains($0.key) })
            case nil: return .deleteConflict(deletedBy: .ours)
            }
        case (let ours?, nil):
            // The server deleted it: its deletion wins when we did not change the record, and
            // is a conflict when we did.
            if let base, sameFields(base, ours) { return .deleted }
            switch prefer {
            case .ours?: return .merged(ours.filter { !SystemProperties.names.contains($0.key) })
            case .theirs?: return .deleted
            case nil: return .deleteConflict(deletedBy: .theirs)
            }
        case (let ours?, let theirs?):
            return mergeFields(base: base ?? [:], ours: ours, theirs: theirs, prefer: prefer)
        }
    }

    private static func mergeFields(
        base: [String: JSONValue], ours: [String: JSONValue], theirs: [String: JSONValue], prefer: Side?
    ) -> Outcome {
        var merged: [String: JSONValue] = [:]
        var conflicts: [FieldConflict] = []
        let names = Set(base.keys).union(ours.keys).union(theirs.keys).subtracting(SystemProperties.names)
        for name in names.sorted() {
            let b = base[name]
            let o = ours[name]
            let t = theirs[name]
            let value: JSONValue?
            if same(o, t) {
                value = o
            } else if same(o, b) {
                value = t
            } else if same(t, b) {
                value = o
            } else if let prefer {
                value = prefer == .ours ? o : t
            } else {
                conflicts.append(FieldConflict(field: name, base: b, ours: o, theirs: t))
                continue
            }
            if let value { merged[name] = value }
        }
        return conflicts.isEmpty ? .merged(merged) : .conflicting(conflicts)
    }

    /// User-field names whose values differ between two records (either side may be missing):
    /// what `conflicts` shows as "the fields that differ".
    package static func differingFields(_ a: [String: JSONValue]?, _ b: [String: JSONValue]?) -> [String] {
        let a = a ?? [:]
        let b = b ?? [:]
        return Set(a.keys).union(b.keys).subtracting(SystemProperties.names).filter { !same(a[$0], b[$0]) }.sorted()
    }

    /// Equal user fields, ignoring system properties (`1` equals `1.0`).
    package static func sameFields(_ a: [String: JSONValue], _ b: [String: JSONValue]) -> Bool {
        differingFields(a, b).isEmpty
    }

    /// A missing field and an explicit `null` are the same to a merge: both read back as null
    /// through OData, and servers differ in whether they echo nulls.
    static func same(_ a: JSONValue?, _ b: JSONValue?) -> Bool {
        (a ?? .null).jsonEquals(b ?? .null)
    }
}
