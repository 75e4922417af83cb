import GRDB
import TSyncModel

/// The tables' schemas as the server announced them (docs/DESIGN.md §16), kept by a pull
/// (`Puller.refreshSchema`), and the check every local change of such a table passes before it
/// is queued: the same paths and reasons the server would answer, and nothing queued.
extension LocalStore {
    /// The tag of the schema kept for `table`, nil when none is.
    func schemaTag(of table: String) throws(TSyncError) -> String? {
        try read { db in try String.fetchOne(db, sql: "SELECT tag FROM schemas WHERE tbl = ?", arguments: [table]) }
    }

    /// Keeps `schema` as `table`'s, or forgets the table's with nil.
    func saveSchema(_ schema: RecordSchema?, of table: String) throws(TSyncError) {
        try write { db in
            if let schema {
                try db.execute(
                    sql:
                        "INSERT INTO schemas (tbl, tag, document) VALUES (?, ?, ?) ON CONFLICT (tbl) DO UPDATE SET tag = excluded.tag, document = excluded.document",
                    arguments: [table, schema.tag, JSONSerializer.string(schema.document)])
            } else {
                try db.execute(sql: "DELETE FROM schemas WHERE tbl = ?", arguments: [table])
            }
        }
    }

    /// The schema the server announced for `table` (`tsync schema TABLE`), nil when it announced none.
    package func schema(of table: String) throws(TSyncError) -> RecordSchema? {
        let text = try read { db in try String.fetchOne(db, sql: "SELECT document FROM schemas WHERE tbl = ?", arguments: [table]) }
        guard let text else { return nil }
        do {
            return try RecordSchema(try JSONParser.parse(text))
        } catch {
            throw .failure("the schema kept for table \(table) cannot be read (\(error.message)): pull the table again")
        }
    }
}

extension RecordSchema {
    /// Throws `.invalidInput` (exit 65) naming every way `fields` of `table`/`id` fails.
    func check(_ fields: [String: JSONValue], table: String, id: String) throws(TSyncError) {
        let violations = violations(of: fields)
        guard !violations.isEmpty else { return }
        throw .invalidInput(
            "\(table)/\(id) \(RecordSchema.refusalWords) \(table): \(SchemaViolation.summary(violations, limit: .max)); nothing was queued"
        )
    }
}
