/* Helpers shared by the C tests: scratch folders, files, commands. */
#ifndef KERNELS_TESTUTIL_H
#define KERNELS_TESTUTIL_H

#include <stddef.h>

/* A fresh folder under $TMPDIR (or /tmp); free with test_rmtree + free. */
char *test_mkdtemp(const char *tag);
/* rm -rf; tolerant of a missing path. */
void test_rmtree(const char *path);
/* Writes `len` bytes to `path`, creating parent folders. 0 on success. */
int test_write_file(const char *path, const void *data, size_t len);
/* Reads a whole file (NUL-terminated, malloc'ed); NULL when unreadable. */
char *test_read_file(const char *path, size_t *len);
/* Runs a shell command; returns its exit status (or -1). */
int test_system(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* 1 if `path` exists (lstat). */
int test_exists(const char *path);

#endif
