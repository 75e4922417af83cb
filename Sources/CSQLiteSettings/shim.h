#include <sqlite3.h>

/// sqlite3_config is variadic, which Swift cannot call. Like every sqlite3_config, it takes effect
/// only before SQLite's first connection opens in the process (SQLITE_MISUSE after).
static inline int tsync_sqlite3_statement_journal_spill(int bytes) {
    return sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL, bytes);
}

/// SQLITE_CONFIG_MEMSTATUS: whether SQLite counts the memory it allocates (see SQLiteSettings).
static inline int tsync_sqlite3_memory_statistics(int on) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, on);
}
