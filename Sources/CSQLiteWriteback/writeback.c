#if defined(__linux__)
#define _GNU_SOURCE
#include <fcntl.h>
#endif
#include <sqlite3.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "CSQLiteWriteback.h"

// SQLite's unix VFS makes its system calls through a table that `xSetSystemCall` may change (a
// public part of `sqlite3_vfs`): its writes come here first, with the descriptor written. What a
// descriptor has had written since its last write-out is counted, and past `threshold` the kernel
// is told to start writing the file out (`sync_file_range`, which returns without waiting). Files
// SQLite has unlinked (its temporary files, which it deletes as it opens them) are left alone:
// their bytes would otherwise reach the disk for nothing.

#if defined(__linux__)

// Descriptors above this are counted nowhere (a store uses a handful).
enum { tracked = 4096 };

typedef ssize_t (*write_at)(int, const void *, size_t, off_t);
typedef int (*close_call)(int);

static long long threshold;
static write_at original_pwrite, original_pwrite64;
static close_call original_close;
// Per descriptor: bytes written since the last write-out, and whether it is a file to write out
// (0: not known yet, 1: yes, 2: no).
static _Atomic long long pending[tracked];
static _Atomic unsigned char kinds[tracked];
static _Atomic long long requests;

static void written(int fd, ssize_t count) {
    if (count <= 0 || fd < 0 || fd >= tracked) return;
    unsigned char kind = atomic_load_explicit(&kinds[fd], memory_order_relaxed);
    if (kind == 0) {
        struct stat status;
        kind = fstat(fd, &status) == 0 && S_ISREG(status.st_mode) && status.st_nlink > 0 ? 1 : 2;
        atomic_store_explicit(&kinds[fd], kind, memory_order_relaxed);
    }
    if (kind != 1) return;
    long long total = atomic_fetch_add_explicit(&pending[fd], count, memory_order_relaxed) + count;
    if (total < threshold) return;
    atomic_store_explicit(&pending[fd], 0, memory_order_relaxed);
    // All the file's dirty pages, wherever they are; what is under write-out already is skipped.
    sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
    atomic_fetch_add_explicit(&requests, 1, memory_order_relaxed);
}

static ssize_t hooked_pwrite(int fd, const void *buffer, size_t count, off_t offset) {
    ssize_t result = original_pwrite(fd, buffer, count, offset);
    written(fd, result);
    return result;
}

static ssize_t hooked_pwrite64(int fd, const void *buffer, size_t count, off_t offset) {
    ssize_t result = original_pwrite64(fd, buffer, count, offset);
    written(fd, result);
    return result;
}

static int hooked_close(int fd) {
    // A later descriptor of the same number is another file: looked at again.
    if (fd >= 0 && fd < tracked) {
        atomic_store_explicit(&kinds[fd], 0, memory_order_relaxed);
        atomic_store_explicit(&pending[fd], 0, memory_order_relaxed);
    }
    return original_close(fd);
}

int tsync_sqlite3_writeback(long long bytes) {
    sqlite3_vfs *vfs = sqlite3_vfs_find(0);
    if (!vfs || vfs->iVersion < 3 || !vfs->xGetSystemCall || !vfs->xSetSystemCall) return SQLITE_NOTFOUND;
    static atomic_flag installed = ATOMIC_FLAG_INIT;
    if (atomic_flag_test_and_set(&installed)) return SQLITE_OK;  // once a process
    close_call close_now = (close_call)vfs->xGetSystemCall(vfs, "close");
    write_at pwrite_now = (write_at)vfs->xGetSystemCall(vfs, "pwrite");
    write_at pwrite64_now = (write_at)vfs->xGetSystemCall(vfs, "pwrite64");
    if (!close_now || (!pwrite_now && !pwrite64_now)) return SQLITE_NOTFOUND;
    threshold = bytes;
    original_close = close_now;
    original_pwrite = pwrite_now;
    original_pwrite64 = pwrite64_now;
    int result = vfs->xSetSystemCall(vfs, "close", (sqlite3_syscall_ptr)hooked_close);
    if (result == SQLITE_OK && pwrite_now) result = vfs->xSetSystemCall(vfs, "pwrite", (sqlite3_syscall_ptr)hooked_pwrite);
    if (result == SQLITE_OK && pwrite64_now)
        result = vfs->xSetSystemCall(vfs, "pwrite64", (sqlite3_syscall_ptr)hooked_pwrite64);
    return result;
}

long long tsync_sqlite3_writeback_requests(void) { return atomic_load_explicit(&requests, memory_order_relaxed); }

#else

int tsync_sqlite3_writeback(long long bytes) {
    (void)bytes;
    return SQLITE_NOTFOUND;
}

long long tsync_sqlite3_writeback_requests(void) { return 0; }

#endif
