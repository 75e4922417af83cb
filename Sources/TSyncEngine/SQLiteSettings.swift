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
    /// file, 15,000 of the 21,700 writes a clone of 100,000 records made. A statement that changes
    /// more of what its transaction wrote (an update of a whole large table, a server's history
    /// rows for a group of large records) still spills, so memory stays bounded.
    ///
    /// Below 128 KiB, because SQLite keeps the journal in memory in pieces of this size and, when
    /// it spills, writes each piece in one call, which its unix VFS cuts to 17 bits of length (it
    /// expects page-sized writes): a piece of 128 KiB or more is written short, the rest as 0 bytes,
    /// and the statement fails "database or disk is full" with the disk free (1 MiB failed every
    /// push of a few thousand 1.5 KB records to `tsync serve` on SQLite 3.40).
    package static let statementJournalInMemory = 127 << 10

    /// Applies the settings; false when SQLite had already opened a connection in this process
    /// (its defaults stay).
    @discardableResult
    package static func apply() -> Bool {
        tsync_sqlite3_statement_journal_spill(Int32(statementJournalInMemory)) == SQLITE_OK
    }
}
