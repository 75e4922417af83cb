import GRDB
import GRDBSQLite

/// Values bound straight to a prepared statement, in order (the client's `DirectBindings`, for the
/// server's statements run once per stored version). GRDB's own arguments make a `DatabaseValue`
/// of each value through generic code that is not specialized across modules: making and binding
/// the arguments of a batch's history rows was a twentieth of what the server spent on a push.
struct SQLiteBindings {
    private let statement: Statement
    private var index: CInt = 0

    /// Starts binding `statement` from its first parameter. It is reset and its old values
    /// cleared; GRDB is told it has its arguments, so that `execute()` runs it as bound here.
    init(_ statement: Statement) {
        statement.setUncheckedArguments(StatementArguments())
        self.statement = statement
    }

    /// Binds the next parameter to `text`, or to NULL. SQLite copies the bytes.
    mutating func bind(_ text: String?) throws {
        index += 1
        guard var text else { return try check(sqlite3_bind_null(statement.sqliteStatement, index)) }
        try text.withUTF8 { bytes in
            // An empty buffer may have no address, and a NULL address binds NULL, not "".
            guard let address = bytes.baseAddress else {
                return try check(sqlite3_bind_text(statement.sqliteStatement, index, "", 0, sqliteTransient))
            }
            try check(sqlite3_bind_text(statement.sqliteStatement, index, address, CInt(bytes.count), sqliteTransient))
        }
    }

    /// Binds the next parameter to 1 or 0, as GRDB stores a `Bool`.
    mutating func bind(_ flag: Bool) throws {
        index += 1
        try check(sqlite3_bind_int64(statement.sqliteStatement, index, flag ? 1 : 0))
    }

    private func check(_ code: CInt) throws {
        guard code == SQLITE_OK else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: "cannot bind parameter \(index)", sql: statement.sql)
        }
    }
}

/// SQLite's `SQLITE_TRANSIENT`: copy the bytes now (a C macro Swift does not import).
private let sqliteTransient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
