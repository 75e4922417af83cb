import GRDB

@testable import TSyncEngine

extension LocalStore {
    /// The rows of records, the queue and the bases, then those of `also` ("SELECT … ORDER BY …",
    /// labelled by its table), as text: two stores that end alike print alike.
    func rowsForComparison(also: [(label: String, sql: String)]) throws -> [String] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT tbl, id, body, created_at, updated_at, version FROM records ORDER BY tbl, id")
                .map { "records \($0)" }
                + Row.fetchAll(db, sql: "SELECT seq, tbl, item_id, kind, state, item FROM operations ORDER BY seq").map {
                    "operations \($0)"
                }
                + Row.fetchAll(db, sql: "SELECT tbl, id, item FROM bases ORDER BY tbl, id").map { "bases \($0)" }
                + also.flatMap { table in try Row.fetchAll(db, sql: table.sql).map { "\(table.label) \($0)" } }
        }
    }
}
