/* Helpers shared by the C tests: scratch folders, files, commands. */
#ifndef KERNELS_TESTUTIL_H
#define KERNELS_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/common.h"
#include "kernels/system.h"

/* 1 in an AddressSanitizer build: bounds on time and memory allow for
 * its shadow memory and redzones. */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_SANITIZED 1
#endif
#endif
#ifndef TEST_SANITIZED
#define TEST_SANITIZED 0
#endif

/* The system most tests load for: torch 2.11 (C++11 ABI), no tvm-ffi, CPU
 * only, x86_64 Linux. An initializer, so a static one can use it too:
 *	static kernels_system sys = TEST_SYS_CPU;
 *	kernels_system s = TEST_SYS_CPU; */
#define TEST_SYS_CPU { .torch_version = 211, .torch_cxx11_abi = 1, .tvm_ffi_version = -1, .backend = "cpu", \
		       .cpu = "x86_64", .os = "linux", .no_gpu = 1 }

/* A fresh folder under $TMPDIR (or /tmp); free with test_rmtree + free. */
char *test_mkdtemp(const char *tag);
/* rm -rf; tolerant of a missing path. */
void test_rmtree(const char *path);
/* rm -rf *path, free it and set it to NULL; NULL is fine. */
void test_rmtree_free(char **path);
/* *path, removed and freed, becomes a fresh folder (test_mkdtemp). */
void test_fresh_dir(char **path, const char *tag);

/* A test program's scratch folder, kept for the whole group: cmocka group
 * fixtures. test_tmp_setup makes test_tmp (test_mkdtemp, tagged with the
 * program's name less "test_": "loader" for test_loader); 0, or -1 when
 * it cannot. test_tmp_teardown removes it (test_rmtree_free). */
extern char *test_tmp;
int test_tmp_setup(void **state);
int test_tmp_teardown(void **state);
/* Writes `len` bytes to `path`, creating parent folders. 0 on success. */
int test_write_file(const char *path, const void *data, size_t len);
/* Writes `text` to {root}/{rel}, creating parent folders. 0 on success. */
int test_put(const char *root, const char *rel, const char *text);
/* Reads a whole file (NUL-terminated, malloc'ed); NULL when unreadable. */
char *test_read_file(const char *path, size_t *len);
/* Runs a shell command; returns its exit status (or -1). */
int test_system(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* 1 if `path` exists (lstat). */
int test_exists(const char *path);
/* Randomised inputs that can be replayed: a test seeds its state with
 * test_rng_seed() (another each run), prints the seed, and draws from
 * test_rng (splitmix64), which advances *state. */
uint64_t test_rng_seed(void);
uint64_t test_rng(uint64_t *state);

/* An app's folder for the project calls (lock, download, locked loads).
 * Every path is malloc'ed and owned by the struct (test_app_free). */
typedef struct test_app {
	char *dir;      /* {parent}/{name} */
	char *manifest; /* {dir}/pyproject.toml */
	char *lock;     /* {dir}/kernels.lock, which test_app_make does not write */
} test_app;
/* Makes the folder and writes `manifest` (text) as its pyproject.toml.
 * 0, or -1 (and *app zeroed) when a path or the file could not be made. */
int test_app_make(test_app *app, const char *parent, const char *name, const char *manifest);
/* Frees the paths (the files stay: they live under the caller's scratch
 * folder) and zeroes *app. */
void test_app_free(test_app *app);

/* Calls check(line, payload) for each entry of an expected-results list
 * (tests/data/.../expected.txt): every line that is neither blank nor a
 * '#' comment, without its newline; `line` is the caller's to change
 * until check returns. The number of entries, or -1 with a message on
 * stderr when the file cannot be read. */
int test_each_entry(const char *path, void (*check)(char *line, void *payload), void *payload);

/* A kernels_log_cb that keeps the warnings and errors (thread-safe) in
 * test_logged, one a line, for tests to search; test_logged_clear empties
 * it. The payload is unused. */
extern char test_logged[16384];
void test_log_warnings(kernels_log_level level, const char *message, void *payload);
/* The same sink for every level (debug and info too): what a call decided
 * to do, such as the wait it announced before a retry. */
void test_log_all(kernels_log_level level, const char *message, void *payload);
void test_logged_clear(void);

/* Lays the blobs of `repo` (a folder name, "kernels--org--name") in
 * `cache` out as huggingface_hub 2.4 does for Xet files: each moved into
 * the cache's shared store, {cache}/blobs/{2 hex}/{64 hex} (made-up
 * hashes), and blobs/{etag} a relative link to it. 0 on success. */
int test_share_blobs(const char *cache, const char *repo);

#endif
