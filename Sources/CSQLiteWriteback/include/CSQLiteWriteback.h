#ifndef CSQLITE_WRITEBACK_H
#define CSQLITE_WRITEBACK_H

/// Makes the kernel start writing a file SQLite writes to the disk each time `bytes` more of it
/// have been written, instead of keeping them in the page cache until SQLite's next `fsync`.
/// SQLite_OK (0), or SQLite's error code when its default VFS cannot take the hooks (it then
/// writes as before). Once a process: later calls change nothing. See
/// `SQLiteSettings.writebackBytes`.
int tsync_sqlite3_writeback(long long bytes);

/// The write-outs started since the process began (for tests).
long long tsync_sqlite3_writeback_requests(void);

#endif
