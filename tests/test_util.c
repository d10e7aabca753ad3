/* The floor under every stage (lib/util/): growable arrays, whole-file
 * reads with a cap, atomic writes, hex and commit predicates, clocks. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "kernels.h"
#include "error.h"
#include "fsync_log.h"
#include "testutil.h"
#include "util.h"

#define C1 "0123456789abcdef0123456789abcdef01234567"

static void test_array_grows_and_keeps_items(void **state)
{
	int *v = NULL;
	size_t n = 0, cap = 0, i;
	(void)state;

	for (i = 0; i < 1000; i++) {
		assert_int_equal(KERNELS__ARRAY_GROW(v, cap, n), 0);
		assert_true(cap > n);
		v[n++] = (int)i;
	}
	for (i = 0; i < n; i++)
		assert_int_equal(v[i], (int)i);
	assert_int_equal(kernels__array_reserve(&v, &cap, 10, sizeof(*v)), 0); /* room already: unchanged */
	assert_true(cap >= 1000);
	free(v);
}

static void test_array_refuses_an_overflowing_size(void **state)
{
	char *v = NULL;
	size_t cap = 0;
	(void)state;

	kernels_error_clear();
	assert_int_equal(kernels__array_reserve(&v, &cap, SIZE_MAX / 2 + 2, 4), KERNELS_ENOMEM);
	assert_int_equal(kernels_error_last_code(), KERNELS_ENOMEM);
	assert_null(v);
	assert_int_equal(cap, 0);
	kernels_error_clear();
}

static void test_read_file_whole_capped_and_refused(void **state)
{
	char *dir = test_mkdtemp("util"), *path, *link, *text = NULL;
	struct stat st;
	size_t len = 0;
	(void)state;

	assert_true(asprintf(&path, "%s/f.txt", dir) > 0);
	assert_true(asprintf(&link, "%s/l.txt", dir) > 0);
	assert_int_equal(test_write_file(path, "0123456789", 10), 0);

	assert_int_equal(kernels__read_file(path, 10, 0, &text, &len, &st), 0);
	assert_string_equal(text, "0123456789");
	assert_int_equal(len, 10);
	assert_int_equal(st.st_size, 10);
	free(text);

	/* Over the cap: refused before it is read, its stat still given. */
	assert_int_equal(kernels__read_file(path, 9, 0, &text, &len, &st), -1);
	assert_int_equal(errno, EFBIG);
	assert_null(text);
	assert_int_equal(st.st_size, 10);
	/* ... or its first bytes, when the caller asks for a prefix. */
	assert_int_equal(kernels__read_file(path, 4, KERNELS__READ_PREFIX, &text, &len, NULL), 0);
	assert_string_equal(text, "0123");
	assert_int_equal(len, 4);
	free(text);

	assert_int_equal(kernels__read_file(dir, 100, 0, &text, &len, NULL), -1);
	assert_int_equal(errno, EISDIR);
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(kernels__read_file(link, 100, KERNELS__READ_NOFOLLOW, &text, &len, NULL), -1);
	assert_int_equal(errno, ELOOP);
	assert_int_equal(kernels__read_file(link, 100, 0, &text, &len, NULL), 0);
	free(text);
	unlink(path);
	assert_int_equal(kernels__read_file(path, 100, 0, &text, &len, NULL), -1);
	assert_int_equal(errno, ENOENT);
	assert_null(text);

	/* A file whose stat says 0 bytes (procfs) is read to its end. */
	assert_int_equal(kernels__read_file("/proc/self/status", 1 << 20, 0, &text, &len, NULL), 0);
	assert_true(len > 0);
	assert_non_null(strstr(text, "Name:"));
	free(text);

	test_rmtree(dir);
	free(link);
	free(path);
	free(dir);
}

static void test_write_atomic_replaces_whole(void **state)
{
	char *dir = test_mkdtemp("util"), *path, *text;
	struct stat st;
	size_t len;
	(void)state;

	assert_true(asprintf(&path, "%s/a/b/record.json", dir) > 0);
	/* No folder yet: refused unless asked to make it. */
	assert_int_equal(kernels__write_atomic(path, "x", 1, -1, 0), KERNELS_EIO);
	assert_non_null(strstr(kernels_error_last(), "temporary file next to"));
	kernels_error_clear();
	assert_int_equal(kernels__write_atomic(path, "first", 5, -1, KERNELS__WRITE_MKDIR), 0);
	assert_int_equal(kernels__write_atomic(path, "second", 6, 0600, KERNELS__WRITE_DURABLE), 0);
	text = test_read_file(path, &len);
	assert_string_equal(text, "second");
	free(text);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	/* Nothing left beside it. */
	assert_int_equal(test_system("test \"$(ls -A '%s/a/b')\" = record.json", dir), 0);

	test_rmtree(dir);
	free(path);
	free(dir);
}

static void note_failure(void *payload, const char *what, const char *message)
{
	char *seen = payload;

	snprintf(seen, 512, "%s: %s", what, message);
}

/* Writes finished on helper threads: each flushed under its temporary name
 * (before its rename), all done once joined, a failure handed to the
 * joining thread with its message, and nothing left of the list. */
static void test_write_later_joins_flushed_writes(void **state)
{
	char *dir = test_mkdtemp("util"), *path, *text, seen[512] = "";
	kernels__write_later *list = NULL;
	size_t len;
	int fd;
	(void)state;

	fsync_log_clear();
	assert_true((fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) >= 0);
	assert_int_equal(kernels__write_atomic_later(&list, fd, "one.json", "one", "1", 1, -1,
						     KERNELS__WRITE_FLUSHED, "record one"), 0);
	assert_true((fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) >= 0);
	assert_int_equal(kernels__write_atomic_later(&list, fd, "two.json", "two", "22", 2, -1,
						     KERNELS__WRITE_FLUSHED, "record two"), 0);
	assert_true((fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) >= 0);
	assert_int_equal(kernels__write_atomic_later(&list, fd, "no/such.json", "no/such.json", "3", 1, -1,
						     KERNELS__WRITE_FLUSHED, "record three"), 0);
	assert_non_null(list);
	kernels__write_later_join(&list, note_failure, seen);
	assert_null(list);
	assert_int_equal(kernels_error_last_code(), 0); /* the helper's error is its own */
	assert_non_null(strstr(seen, "record three: "));
	assert_non_null(strstr(seen, "no/such.json"));
	assert_true(asprintf(&path, "%s/two.json", dir) > 0);
	text = test_read_file(path, &len);
	assert_string_equal(text, "22");
	free(text);
	free(path);
	assert_int_equal(fsync_log_count(dir, "/one.json.tmp-"), 1);
	assert_int_equal(fsync_log_count(dir, "/two.json.tmp-"), 1);
	assert_int_equal(fsync_log_count(dir, NULL), 2);
	assert_int_equal(test_system("test \"$(ls -A '%s' | tr '\\n' ' ')\" = 'one.json two.json '", dir), 0);
	test_rmtree(dir);
	free(dir);
}

typedef struct {
	int rc, ran, released;
} task_probe;

static int probe_run(void *arg)
{
	task_probe *t = arg;

	t->ran++;
	return t->rc < 0 ? kernels__error(t->rc, "probe task failed as asked") : 0;
}

static void probe_release(void *arg)
{
	((task_probe *)arg)->released++;
}

/* A task run later is run once and released once, on its helper, before
 * the join returns; a failure reaches the joining thread under its `what`
 * with the helper's message; without a list nothing is begun and the
 * task stays the caller's. */
static void test_run_later_joins_its_tasks(void **state)
{
	task_probe ok = { 0, 0, 0 }, bad = { KERNELS_EIO, 0, 0 }, none = { 0, 0, 0 };
	kernels__write_later *list = NULL;
	char seen[512] = "";
	(void)state;

	assert_int_equal(kernels__run_later(&list, probe_run, &ok, probe_release, "task ok"), 0);
	assert_int_equal(kernels__run_later(&list, probe_run, &bad, probe_release, "task bad"), 0);
	kernels__write_later_join(&list, note_failure, seen);
	assert_null(list);
	assert_int_equal(kernels_error_last_code(), 0);
	assert_string_equal(seen, "task bad: probe task failed as asked");
	assert_int_equal(ok.ran, 1);
	assert_int_equal(ok.released, 1);
	assert_int_equal(bad.ran, 1);
	assert_int_equal(bad.released, 1);
	assert_int_equal(kernels__run_later(NULL, probe_run, &none, probe_release, "task none"), -1);
	assert_int_equal(none.ran, 0);
	assert_int_equal(none.released, 0);
}

/* A flush begun on its own thread goes to the file it was given, once,
 * and hands back what fsync met: 0, or EBADF for a descriptor that names
 * nothing. */
static void test_fsync_begun_then_collected(void **state)
{
	char *dir = test_mkdtemp("util"), *path;
	kernels__fsync_pending *p;
	int fd;
	(void)state;

	assert_true(asprintf(&path, "%s/blob.incomplete", dir) > 0);
	assert_true((fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0);
	assert_int_equal(write(fd, "bytes", 5), 5);
	fsync_log_clear();
	assert_non_null(p = kernels__fsync_begin(fd));
	assert_int_equal(kernels__fsync_wait(p), 0);
	assert_int_equal(fsync_log_count(path, NULL), 1);
	assert_int_equal(fsync_log_count(dir, NULL), 1);
	close(fd);
	assert_non_null(p = kernels__fsync_begin(fd)); /* closed: nothing to flush */
	assert_int_equal(kernels__fsync_wait(p), EBADF);
	test_rmtree(dir);
	free(path);
	free(dir);
}

static void test_hex_case_as_git_reads_it(void **state)
{
	(void)state;
	assert_true(kernels__is_hex("00ff", 4, KERNELS__HEX_LOWER));
	assert_true(kernels__is_hex("00FF", 4, KERNELS__HEX_ANY_CASE));
	assert_false(kernels__is_hex("00FF", 4, KERNELS__HEX_LOWER));
	assert_false(kernels__is_hex("00ff", 3, KERNELS__HEX_ANY_CASE));
	assert_false(kernels__is_hex("00fg", 4, KERNELS__HEX_ANY_CASE));
	assert_true(kernels__is_hex("abc", 0, KERNELS__HEX_ANY_CASE));
	assert_false(kernels__is_hex("", 0, KERNELS__HEX_ANY_CASE));
	assert_false(kernels__is_hex(NULL, 4, KERNELS__HEX_ANY_CASE));

	assert_true(kernels__is_commit(C1, KERNELS__HEX_LOWER));
	assert_true(kernels__is_commit("0123456789ABCDEF0123456789ABCDEF01234567", KERNELS__HEX_ANY_CASE));
	assert_false(kernels__is_commit("0123456789ABCDEF0123456789ABCDEF01234567", KERNELS__HEX_LOWER));
	assert_false(kernels__is_commit("0123456789abcdef0123456789abcdef0123456", KERNELS__HEX_ANY_CASE));
	assert_false(kernels__is_commit(C1 "0", KERNELS__HEX_ANY_CASE));
	assert_false(kernels__is_commit(NULL, KERNELS__HEX_ANY_CASE));
}

static void test_hex_encodes_and_lowers(void **state)
{
	char out[41];
	(void)state;

	kernels__hex((const unsigned char *)"\x00\xab\xff", 3, out);
	assert_string_equal(out, "00abff");
	kernels__hex_lower("0123456789ABCDEF0123456789ABCDEF01234567", 40, out);
	assert_string_equal(out, C1);
}

/* The clock moves forward and a sleep takes time: both clocks read later
 * after one. By how much is the machine's to decide, never a test's. */
static void test_clock_is_monotonic_and_sleeps(void **state)
{
	long long t0 = kernels__now_ms();
	double p0 = kernels__now_ms_precise();
	(void)state;

	kernels__sleep_ms(20);
	assert_true(kernels__now_ms() > t0);
	assert_true(kernels__now_ms_precise() > p0);
}

/* A source shorter than the size asked for (a file another process
 * truncated) is a failure with a reason: errno says what went wrong, not
 * what an earlier call left there. */
static void test_copy_of_a_short_file_says_why(void **state)
{
	char *dir = test_mkdtemp("util-copy"), src[PATH_MAX], dst[PATH_MAX];
	int from, to;
	(void)state;

	snprintf(src, sizeof(src), "%s/src", dir);
	snprintf(dst, sizeof(dst), "%s/dst", dir);
	assert_int_equal(test_write_file(src, "12345", 5), 0);
	assert_true((from = open(src, O_RDONLY)) >= 0);
	assert_true((to = open(dst, O_WRONLY | O_CREAT, 0644)) >= 0);
	assert_int_equal(kernels__copy_fd(from, to, 5), 0);
	assert_int_equal(lseek(from, 0, SEEK_SET), 0);
	errno = 0;
	assert_int_equal(kernels__copy_fd(from, to, 9), -1);
	assert_int_not_equal(errno, 0);
	close(from);
	close(to);
	test_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_array_grows_and_keeps_items),
		cmocka_unit_test(test_array_refuses_an_overflowing_size),
		cmocka_unit_test(test_read_file_whole_capped_and_refused),
		cmocka_unit_test(test_write_atomic_replaces_whole),
		cmocka_unit_test(test_write_later_joins_flushed_writes),
		cmocka_unit_test(test_run_later_joins_its_tasks),
		cmocka_unit_test(test_fsync_begun_then_collected),
		cmocka_unit_test(test_hex_case_as_git_reads_it),
		cmocka_unit_test(test_hex_encodes_and_lowers),
		cmocka_unit_test(test_clock_is_monotonic_and_sleeps),
		cmocka_unit_test(test_copy_of_a_short_file_says_why),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
