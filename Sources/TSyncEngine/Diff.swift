import TSyncModel

/// What one item's pending change does, field by field, against its base (the last server copy).
package struct DiffEntry: Sendable, Equatable {
    /// The item's table.
    package var table: String
    /// The item's id.
    package var id: String
    /// The kind of the item's newest operation.
    package var kind: OperationKind
    /// Queue position of that operation.
    package var seq: Int64
    /// The last server copy (wire object), or nil for an item the server has not seen.
    package var base: [String: JSONValue]?
    /// The local record now (wire object), or nil when it was deleted.
    package var ours: [String: JSONValue]?
    /// User fields that differ, by field name. System properties are not compared: the server sets them.
    package var changes: [FieldChange]
}

/// One field that differs between the two copies of an item a `DiffEntry` compares.
package struct FieldChange: Sendable, Equatable {
    /// Whether the field was added, removed or changed.
    package enum Change: String, Sendable {
        case added, removed, modified
    }

    /// The field's name.
    package var field: String
    /// What happened to the field.
    package var change: Change
    /// The base value (absent for `added`).
    package var before: JSONValue?
    /// The local value (absent for `removed`).
    package var after: JSONValue?

    /// The changes that turn `before`'s user fields into `after`'s, by field name.
    package static func between(_ before: [String: JSONValue], _ after: [String: JSONValue]) -> [FieldChange] {
        var changes: [FieldChange] = []
        for field in Set(before.keys).union(after.keys).sorted() where !SystemProperties.names.contains(field) {
            switch (before[field], after[field]) {
            case (nil, let new?): changes.append(FieldChange(field: field, change: .added, before: nil, after: new))
            case (let old?, nil): changes.append(FieldChange(field: field, change: .removed, before: old, after: nil))
            case (let old?, let new?) where !old.jsonEquals(new):
                changes.append(FieldChange(field: field, change: .modified, before: old, after: new))
            default: break
            }
        }
        return changes
    }
}
