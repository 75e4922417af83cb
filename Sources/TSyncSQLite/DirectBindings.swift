import GRDB
import GRDBSQLite
import TSyncModel

/// Values bound straight to a prepared statement, in order: for the statements that write a
/// page of records, dozens of rows at a time (the store's), or run once per stored version (the
/// server's). GRDB's own arguments make a `DatabaseValue` of each value through generic code not
/// specialized across modules: that was most of the time a pull spent writing a page, and a
/// twentieth of what the server spent on a push.
package struct DirectBindings {
    private let statement: Statement
    private var index: CInt = 0

    /// Starts binding `statement` from its first parameter. It is reset and its old values
    /// cleared; GRDB is told it has its arguments, so that `execute()` runs it as bound here.
    package init(_ statement: Statement) {
        statement.setUncheckedArguments(StatementArguments())
        self.statement = statement
    }

    /// Binds the next parameter to `text`, or to NULL. SQLite copies the bytes.
    package mutating func bind(_ text: String?) throws {
        guard var text else { return try bindNull() }
        try text.withUTF8 { try bind(bytes: $0) }
    }

    /// Binds the next parameter to 1 or 0, as GRDB stores a `Bool`.
    package mutating func bind(_ flag: Bool) throws { try bind(Int64(flag ? 1 : 0)) }

    /// Binds the next parameter to an integer.
    package mutating func bind(_ integer: Int64) throws {
        index += 1
        try check(sqlite3_bind_int64(statement.sqliteStatement, index, integer))
    }

    /// Binds the next parameter to the timestamp's `iso8601` text, or to NULL, with no `String`
    /// made of it.
    package mutating func bind(_ timestamp: Timestamp?) throws {
        guard let timestamp else { return try bindNull() }
        try timestamp.withISO8601 { try bind(bytes: $0) }
    }

    /// Binds the next parameter to the UTF-8 text `bytes` where they lie, without a copy: the
    /// caller keeps them until the statement has run, and clears its bindings
    /// (`sqlite3_clear_bindings`) before the bytes go. A bulk insert's six texts a record were
    /// each copied to an allocation of SQLite's.
    package mutating func bind(unowned bytes: UnsafeBufferPointer<UInt8>) throws {
        guard let address = bytes.baseAddress else { return try bind(bytes: bytes) }
        index += 1
        try check(sqlite3_bind_text(statement.sqliteStatement, index, address, CInt(bytes.count), nil))
    }

    private mutating func bindNull() throws {
        index += 1
        try check(sqlite3_bind_null(statement.sqliteStatement, index))
    }

    /// Binds the next parameter to the UTF-8 text `bytes`; SQLite copies them.
    private mutating func bind(bytes: UnsafeBufferPointer<UInt8>) throws {
        index += 1
        // An empty buffer may have no address, and a NULL address binds NULL, not "".
        guard let address = bytes.baseAddress else {
            return try check(sqlite3_bind_text(statement.sqliteStatement, index, "", 0, sqliteTransient))
        }
        try check(sqlite3_bind_text(statement.sqliteStatement, index, address, CInt(bytes.count), sqliteTransient))
    }

    private func check(_ code: CInt) throws {
        guard code == SQLITE_OK else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: "cannot bind parameter \(index)", sql: statement.sql)
        }
    }
}

/// SQLite's `SQLITE_TRANSIENT`: copy the bytes now (a C macro Swift does not import).
private let sqliteTransient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
