import CSQLiteSettings

/// SQLite's process-wide settings for the store. SQLite takes them only before the first
/// connection of the process opens, so the program applies them when it starts (the `tsync`
/// command does, before it parses its arguments); a program embedding the engine that opened
/// SQLite before keeps SQLite's defaults, which change speed, not results.
package enum SQLiteSettings {
    /// A statement's journal (the pages the statement changes that its transaction had changed
    /// before it, kept to undo the statement alone when it fails) stays in memory up to this
    /// size, then goes to a temporary file. SQLite's default, 64 KiB, is four of a store's 16 KiB
    /// pages (`LocalStore.pageSize`): every page of a pull (a transaction of 16 statements of 64
    /// rows, each rewriting pages the one before it wrote) created, wrote and deleted a temporary
    /// file, 15,000 of the 21,700 writes a clone of 100,000 records made. 1 MiB holds 64 pages;
    /// a statement that changes more of what its transaction wrote (an update of a whole large
    /// table) still spills, so memory stays bounded.
    package static let statementJournalInMemory = 1 << 20

    /// Applies the settings; false when SQLite had already opened a connection in this process
    /// (its defaults stay).
    @discardableResult
    package static func apply() -> Bool {
        tsync_sqlite3_statement_journal_spill(Int32(statementJournalInMemory)) == SQLITE_OK
    }
}
