import GRDB
import GRDBSQLite
import TSyncModel
import TSyncSQLite

/// Rows of values for a statement that takes many rows at once (`VALUES (?, ?), (?, ?), …`), run
/// a chunk of rows per statement, their texts laid end to end and bound where they lie. A push
/// ran a statement per operation to claim it, per record to save the server's properties, and
/// per delivered operation a JSON row read four times by `json_extract`: GRDB's and SQLite's work
/// per statement (arguments, reset, halt) was paid a hundred thousand times.
struct ChunkedRows {
    private enum Value {
        case null
        case integer(Int64)
        /// Bytes of `texts`.
        case text(Range<Int>)
    }

    /// Rows per statement: a statement of 64 rows is cached once per use, as `upsertRecords`'s is.
    static let chunkSize = 64

    /// Values per row.
    let columns: Int
    private var texts: [UInt8] = []
    private var values: [Value] = []
    private var days = Timestamp.DayMemo()

    /// Room for `rows` rows of `columns` values, about `bytesPerRow` bytes of text each.
    init(columns: Int, rows: Int, bytesPerRow: Int) {
        self.columns = columns
        texts.reserveCapacity(rows * bytesPerRow)
        values.reserveCapacity(rows * columns)
    }

    /// Rows appended so far.
    var count: Int { values.count / columns }
    var isEmpty: Bool { values.isEmpty }

    /// The next value: a text, or NULL.
    mutating func append(_ text: String?) {
        guard let text else { return values.append(.null) }
        let start = texts.count
        texts.append(contentsOf: text.utf8)
        values.append(.text(start..<texts.count))
    }

    /// The next value: a timestamp's `iso8601` text, or NULL.
    mutating func append(_ timestamp: Timestamp?) {
        guard let timestamp else { return values.append(.null) }
        let start = texts.count
        timestamp.appendISO8601(to: &texts, memo: &days)
        values.append(.text(start..<texts.count))
    }

    /// The next value: an integer.
    mutating func append(_ integer: Int64) { values.append(.integer(integer)) }

    /// `(?, …, ?), …` for `rows` rows of `columns` parameters.
    static func placeholders(rows: Int, columns: Int) -> String {
        let row = "(" + Array(repeating: "?", count: columns).joined(separator: ", ") + ")"
        return Array(repeating: row, count: rows).joined(separator: ", ")
    }

    /// Runs the statement `sql(n)` makes for `n` rows once per chunk of rows, in order, and hands
    /// `ran` the rows of each chunk (their positions) once it has run, for its changes to be
    /// checked. `sql(chunkSize)` should be a constant: it is the statement cached.
    func execute(_ db: Database, sql: (Int) -> String, ran: (Range<Int>) throws -> Void = { _ in }) throws {
        try forEachChunk(db, sql: sql) { statement, rows in
            try statement.execute()
            try ran(rows)
        }
    }

    /// Binds the statement `sql(n)` makes for `n` rows to each chunk of rows in turn, and hands it
    /// to `run` with the chunk's rows (their positions), to be run there.
    func forEachChunk(_ db: Database, sql: (Int) -> String, run: (Statement, Range<Int>) throws -> Void) throws {
        let count = self.count
        var start = 0
        try texts.withUnsafeBufferPointer { texts in
            while start < count {
                let rows = min(Self.chunkSize, count - start)
                let statement = try db.cachedStatement(sql: sql(rows))
                do {
                    // No statement keeps an address into `texts` once it ends, whatever throws.
                    defer { sqlite3_clear_bindings(statement.sqliteStatement) }
                    var bindings = DirectBindings(statement)
                    for value in values[(start * columns)..<((start + rows) * columns)] {
                        switch value {
                        case .null: try bindings.bind(nil as String?)
                        case .integer(let integer): try bindings.bind(integer)
                        case .text(let range): try bindings.bind(unowned: UnsafeBufferPointer(rebasing: texts[range]))
                        }
                    }
                    try run(statement, start..<(start + rows))
                }
                start += rows
            }
        }
    }
}
