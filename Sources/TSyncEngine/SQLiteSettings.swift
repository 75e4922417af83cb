import CSQLiteSettings
import CSQLiteWriteback

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

    /// Each time SQLite has written this much more of a database or WAL file, the kernel is told
    /// to start writing the file out (Linux's `sync_file_range`, which does not wait), as
    /// PostgreSQL's `wal_writer_flush_after` and `checkpoint_flush_after` do. Otherwise the pages
    /// wait in the page cache for SQLite's next `fsync`, which then writes them all while the
    /// command waits: a clone of 100,000 records wrote a 38 MB WAL and nothing reached the disk
    /// until the store's close checkpointed it (its `fsync` of the WAL, the copy of 25 MB into the
    /// database, that file's `fsync`: 80-100 ms of the clone's 0.35 s). Written out as they come,
    /// the WAL is on the disk by then, and the database's pages go while the copy goes on. The
    /// same `fsync`s are made, so a committed write is as durable as before and no later than
    /// before. Temporary files (SQLite unlinks them as it opens them) are left alone.
    package static let writebackBytes = 1 << 20

    /// Applies the settings; false when SQLite had already opened a connection in this process
    /// (its defaults stay).
    @discardableResult
    package static func apply() -> Bool {
        // First: the write-outs' look-up of SQLite's VFS initialises SQLite, which ends its
        // configuration. SQLite is told not to count the memory it allocates: counting, each
        // allocation and free took a process-wide lock, 3% of the CPU of `tsync serve` storing a
        // push of 100,000 new records (docs/PERFORMANCE.md, "Push at the server's write limit").
        // Nothing reads the counts, and no heap limit (which needs them) is set.
        let configured =
            tsync_sqlite3_statement_journal_spill(Int32(statementJournalInMemory)) == SQLITE_OK
            && tsync_sqlite3_memory_statistics(0) == SQLITE_OK
        installWriteback()
        return configured
    }

    /// The write-outs (`writebackBytes`), which take effect at any time, open connections
    /// included: on Linux, once a process (later calls change nothing); elsewhere SQLite writes
    /// as it did.
    package static func installWriteback() {
        _ = tsync_sqlite3_writeback(Int64(writebackBytes))
    }

    /// The write-outs started since the process began.
    package static var writebackRequests: Int { Int(tsync_sqlite3_writeback_requests()) }
}
