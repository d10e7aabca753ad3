/* Which files the process fsync()ed, for tests of durable writes. A test
 * program that includes this header is linked with fsync wrapped (ld
 * --wrap, tests/CMakeLists.txt): every call, the library's included, is
 * recorded by the path its descriptor names (/proc/self/fd) before it
 * goes through. */
#ifndef KERNELS_FSYNC_LOG_H
#define KERNELS_FSYNC_LOG_H

/* Forgets the calls recorded so far. */
void fsync_log_clear(void);

/* The calls since the last clear on a path that starts with `prefix` and
 * contains `part` (NULL: anything). */
int fsync_log_count(const char *prefix, const char *part);

#endif
