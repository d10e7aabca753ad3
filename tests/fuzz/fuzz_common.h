/* What every libFuzzer target of tests/fuzz shares: the invariant check
 * (a broken one aborts with "invariant broken", which the ctest entry
 * looks for) and small helpers. Header-only: each target is one .c file. */
#ifndef KERNELS_FUZZ_COMMON_H
#define KERNELS_FUZZ_COMMON_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/common.h"

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "invariant broken at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* A failure carries its code and a message. */
static inline void fuzz_check_failure(int rc)
{
	CHECK(rc < 0);
	CHECK(kernels_error_last_code() == rc);
	CHECK(kernels_error_last()[0] != '\0');
}

/* The input as a NUL-terminated string (it may hold NULs of its own). */
static inline char *fuzz_strndup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

static inline int fuzz_is_lower_hex(const char *s, size_t n)
{
	size_t i;
	if (strlen(s) != n)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* A scratch folder of this process (created once, emptied by
 * fuzz_scratch_clear, removed at exit): in /dev/shm where there is one
 * (ten times the file operations per second of a disk), else under
 * $TMPDIR. Entries running side by side never share one. */
static char fuzz_scratch_path[4096];

static inline void fuzz_scratch_remove(void);

static inline const char *fuzz_scratch(void)
{
	if (!fuzz_scratch_path[0]) {
		const char *tmp = getenv("TMPDIR");
		if (access("/dev/shm", W_OK | X_OK) == 0)
			tmp = "/dev/shm";
		snprintf(fuzz_scratch_path, sizeof(fuzz_scratch_path), "%s/kernels-fuzz-XXXXXX",
			 tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(fuzz_scratch_path))
			abort();
		atexit(fuzz_scratch_remove);
	}
	return fuzz_scratch_path;
}

static inline int fuzz_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	if (ftw->level > 0)
		remove(path);
	return 0;
}

/* Empties the scratch folder (keeps the folder itself). */
static inline void fuzz_scratch_clear(void)
{
	if (fuzz_scratch_path[0])
		nftw(fuzz_scratch_path, fuzz_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static inline void fuzz_scratch_remove(void)
{
	fuzz_scratch_clear();
	if (fuzz_scratch_path[0])
		rmdir(fuzz_scratch_path);
}

/* Writes `len` bytes to `path`, creating it; never through a link. 0 or -1. */
static inline int fuzz_write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	ssize_t n;
	if (fd < 0)
		return -1;
	n = len ? write(fd, data, len) : 0;
	close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

#endif
