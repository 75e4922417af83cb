import TSyncModel
import TSyncQuery

/// A user field of a table that the server keeps an index on (`tsync serve --index TABLE.FIELD`),
/// so that filters comparing it with a literal, `startswith` on it and `$orderby` on it read the
/// index's range instead of the whole table (docs/DESIGN.md §6.4). The index holds the field's value as the
/// renderer reads it (`SQLSchema.indexExpression`); it is created when the server starts and when
/// the table first appears, and never dropped.
public struct IndexedField: Sendable, Hashable, CustomStringConvertible {
    /// Lower case: table names are case-insensitive.
    public let table: String
    /// Exactly as given: field names are case-sensitive.
    public let field: String
    /// The table is per-user: the index leads with the owner, so one user's page costs the same
    /// however many records the others have.
    public var perUser = false
    /// The field is a `group:FIELD` read rule's (docs/DESIGN.md §11.1): the index is on the field,
    /// then `updatedAt` and `id`, so that a group's pull walks its own records in page order
    /// however many the other groups have.
    public var grouped = false

    public init(table: String, field: String) throws(TSyncError) {
        try Identifiers.validateTableName(table)
        guard Identifiers.isSimpleName(field), !SystemProperties.names.contains(field) else {
            throw .usage(
                "cannot index the field \(Identifiers.quoted(field)): give a user field (letters, digits and '_'); system properties have their own indexes"
            )
        }
        self.table = table.lowercased()
        self.field = field
    }

    /// `TABLE.FIELD`.
    public init(parsing text: String) throws(TSyncError) {
        guard let dot = text.firstIndex(of: "."), dot != text.startIndex, dot != text.index(before: text.endIndex) else {
            throw .usage("invalid index \(Identifiers.quoted(text)): write TABLE.FIELD, e.g. todo.dueDate")
        }
        try self.init(table: String(text[..<dot]), field: String(text[text.index(after: dot)...]))
    }

    public var description: String { "\(table).\(field)" + (grouped ? " (group rule)" : "") }

    /// A renderer for a table whose indexed fields are `fields`: `renderer` itself when there are
    /// none, so unindexed tables share one.
    static func renderer(_ renderer: SQLRenderer, indexing fields: [IndexedField]) -> SQLRenderer {
        guard !fields.isEmpty else { return renderer }
        var schema = renderer.schema
        schema.indexedFields = Set(fields.map(\.field))
        return SQLRenderer(schema: schema)
    }

    /// The index's name: `prefix`, the field, and a hash of its exact spelling, since SQL names
    /// ignore case and field names do not (`Price` and `price` are two fields).
    func indexName(_ prefix: String) -> String {
        "\(prefix)_ix_\(field.lowercased())_\(Self.hash(field))" + (grouped ? "_g" : "")
    }

    /// PostgreSQL's name, unique in the one `tsync_records` table and within its 63 bytes (with
    /// the `_n` of the number index).
    var postgresIndexName: String {
        "tsync_ix_\(Self.hash("\(table).\(field)"))_\(String("\(table)_\(field.lowercased())".prefix(43)))"
    }

    /// FNV-1a of the bytes, as 8 hex digits.
    private static func hash(_ text: String) -> String {
        var hash: UInt32 = 2_166_136_261
        for byte in text.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 16_777_619
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }
}
