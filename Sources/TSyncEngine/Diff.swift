import TSyncModel

/// What one item's pending change does, field by field, against its base (the last server copy).
public struct DiffEntry: Sendable, Equatable {
    /// The item's table.
    public var table: String
    /// The item's id.
    public var id: String
    /// The kind of the item's newest operation.
    public var kind: OperationKind
    /// Queue position of that operation.
    public var seq: Int64
    /// The last server copy (wire object), or nil for an item the server has not seen.
    public var base: [String: JSONValue]?
    /// The local record now (wire object), or nil when it was deleted.
    public var ours: [String: JSONValue]?
    /// User fields that differ, by field name. System properties are not compared: the server sets them.
    public var changes: [FieldChange]
}

/// One field that differs between the two copies of an item a `DiffEntry` compares.
public struct FieldChange: Sendable, Equatable {
    /// Whether the field was added, removed or changed.
    public enum Change: String, Sendable {
        case added, removed, modified
    }

    /// The field's name.
    public var field: String
    /// What happened to the field.
    public var change: Change
    /// The base value (absent for `added`).
    public var before: JSONValue?
    /// The local value (absent for `removed`).
    public var after: JSONValue?

    /// The changes that turn `before`'s user fields into `after`'s, by field name.
    public static func between(_ before: [String: JSONValue], _ after: [String: JSONValue]) -> [FieldChange] {
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
