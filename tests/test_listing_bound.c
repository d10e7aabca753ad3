/* Big listings (issue 14): a Hub (the local one, tests/hub huge_tree mode)
 * answering a variant's listing with a million distinct files, LFS ones
 * (the largest entries), is refused by the documented cap (a build/
 * listing may have 200,000 entries) within 300 MB of memory, before one
 * file is asked for; a variant at its cap (100,000 files) is planned (one
 * job per distinct blob, found in O(n log n)) within the same bound. Each
 * call runs in a child process, so its peak memory (ru_maxrss) is its own.
 * Its time is printed, never compared: a busy machine would fail any bound;
 * a child that runs past HANG_GUARD_S (the old pairwise planning took
 * minutes; a good one takes about 2 s) is killed and fails the test. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "kernels.h"
#include "test_world.h"
#include "testutil.h"

#define VARIANT "torch-universal"

/* Issue 14's bound; an instrumented build keeps shadow memory and
 * redzones for every allocation. */
#define RSS_MB_MAX (TEST_SANITIZED ? 900.0 : 300.0)
#define HANG_GUARD_S 300

/* commit[0]: org/big's main */
static test_world W;

static int setup(void **state)
{
	assert_int_equal(test_world_start(&W, "listing-bound"), 0);
	assert_int_equal(test_world_publish(&W, 0, "--repo org/big --text 'build/" VARIANT "/x.py=x = 1' "
					    "--branch main --trusted"), 0);
	*state = &W;
	return 0;
}

typedef struct {
	int rc;
	double wall_s, cpu_s, rss_mb;
	char msg[512];
} outcome;

static double tv_s(struct timeval tv)
{
	return tv.tv_sec + tv.tv_usec / 1e6;
}

/* kernels_download of the variant in a child; its figures. */
static outcome download_in_child(const char *cache)
{
	outcome o = { 0 };
	struct rusage ru;
	int fds[2], status;
	ssize_t got;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		kernels_options opts;
		kernels_snapshot *s = NULL;
		const char *vs[] = { VARIANT };
		struct timespec t0, t1;
		outcome c = { 0 };

		close(fds[0]);
		alarm(HANG_GUARD_S);
		kernels_options_init(&opts, KERNELS_OPTIONS_VERSION);
		opts.endpoint = test_hub_endpoint(W.hub);
		opts.cache_dir = cache;
		opts.offline = 0;
		opts.max_retries = 0;
		opts.deadline_ms = 120000;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		c.rc = kernels_download(&s, "org/big", W.commit[0], vs, 1, &opts);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		c.wall_s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
		snprintf(c.msg, sizeof(c.msg), "%s", kernels_error_last());
		kernels_snapshot_free(s);
		getrusage(RUSAGE_SELF, &ru);
		c.cpu_s = tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
		if (write(fds[1], &c, sizeof(c)) != (ssize_t)sizeof(c))
			_exit(2);
		_exit(0);
	}
	close(fds[1]);
	got = read(fds[0], &o, sizeof(o));
	close(fds[0]);
	assert_int_equal(wait4(pid, &status, 0, &ru), pid);
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
		fail_msg("the download ran past the hang guard of %d s", HANG_GUARD_S);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(got, (ssize_t)sizeof(o));
	o.rss_mb = ru.ru_maxrss / 1024.0;
	return o;
}

static void huge(long entries, int lfs)
{
	char cfg[256];

	snprintf(cfg, sizeof(cfg), "{\"huge_tree\": {\"repo\": \"org/big\", \"variant\": \"" VARIANT "\", "
		 "\"entries\": %ld, \"page_size\": 10000, \"lfs\": %s}}", entries, lfs ? "true" : "false");
	assert_int_equal(test_hub_config(W.hub, cfg), 0);
	test_hub_log_clear(W.hub);
}

static void report(const char *what, const outcome *o)
{
	print_message("%s: rc %d in %.2f s wall, %.2f s CPU, peak %.0f MB (%s)\n", what, o->rc, o->wall_s, o->cpu_s,
		      o->rss_mb, o->msg);
}

/* A million LFS files: the listing is refused by the cap on a build/
 * listing (200,000 entries) as soon as a page passes it (the 21st of
 * 10,000); not one file is requested, nothing is written. */
static void test_million_entries_refused_by_the_cap(void **state)
{
	outcome o;
	(void)state;

	huge(1000000, 1);
	o = download_in_child(W.cache);
	report("1,000,000 entries", &o);
	assert_int_equal(o.rc, KERNELS_EPARSE);
	assert_non_null(strstr(o.msg, "more than 200000 entries"));
	assert_int_equal(test_hub_log_count(W.hub, "GET", "/tree/"), 21);
	assert_int_equal(test_hub_log_count(W.hub, NULL, "/resolve/"), 0);
	assert_true(o.rss_mb <= RSS_MB_MAX);
	/* Refused: the cache holds nothing. */
	assert_int_equal(test_system("test -z \"$(find '%s' -type f -print -quit)\"", W.cache), 0);
}

/* At the cap: 100,000 distinct blobs are planned (O(n log n); the old
 * pairwise search took minutes), then the first transfers fail (the
 * fixture has none of these files) and the call ends. */
static void test_cap_is_planned(void **state)
{
	outcome o;
	(void)state;

	huge(100000, 0);
	o = download_in_child(W.cache);
	report("100,000 entries", &o);
	assert_int_equal(o.rc, KERNELS_ENOTFOUND);
	assert_int_equal(test_hub_log_count(W.hub, "GET", "/tree/"), 10);
	assert_true(test_hub_log_count(W.hub, "GET", "/resolve/") >= 1);
	assert_true(o.rss_mb <= RSS_MB_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_million_entries_refused_by_the_cap, test_world_fresh),
		cmocka_unit_test_setup(test_cap_is_planned, test_world_fresh),
	};
	return cmocka_run_group_tests(tests, setup, test_world_teardown);
}
