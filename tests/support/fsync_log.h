/* Which files the process fsync()ed, for tests of durable writes. A test
 * program that includes this header is linked with fsync wrapped (ld
 * --wrap, tests/CMakeLists.txt): every call, the library's included, is
 * recorded by the path its descriptor names (/proc/self/fd) before it
 * goes through. A test may also make a flush fail, as a full NFS share,
 * a spent quota or delayed allocation report it: only at fsync, after
 * every write() succeeded (no tmpfs can). */
#ifndef KERNELS_FSYNC_LOG_H
#define KERNELS_FSYNC_LOG_H

/* Forgets the calls recorded so far. */
void fsync_log_clear(void);

/* The calls since the last clear on a path that starts with `prefix` and
 * contains `part` (NULL: anything). */
int fsync_log_count(const char *prefix, const char *part);

/* The next `times` calls on a path that contains `part` fail with `err`
 * once the real fsync is done; with `lose`, the file's first bytes are
 * zeroed first, as pages whose writeback failed may read back. times 0:
 * none fails any more. */
void fsync_log_fail(const char *part, int err, int lose, int times);

#endif
