/* A long-running server's view: many calls in one process (gets by name
 * while the branch moves, failing calls, the Hub down and back, offline
 * toggled, info and listings, lock-file loads, a kernel with a dependency,
 * gets from several threads) must leave what an operator watches bounded:
 * descriptors, threads, heap in use, mapped regions, files in the cache,
 * the memo. Growth is allowed only per distinct kernel loaded (a module
 * stays mapped, with its descriptor: loader.c), so every commit the rounds
 * load is loaded in the warm-up rounds; the measured rounds after them
 * must grow nothing. */
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "kernels.h"
#include "hub.h"
#include "memo.h"
#include "test_world.h"
#include "testutil.h"
#include "../tests/data/variants/fixture.h"

#if TEST_SANITIZED
/* The sanitizer's own count: its allocator is not glibc's (mallinfo2). */
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

#define VARIANT "torch211-cxx11-cpu-x86_64-linux"
#define THREADS 3

/* commit[0], commit[1]: acme/soak's two trees (main moves between them);
 * commit[2]: acme/other's. */
static test_world W;
static char *dead;
static const kernels_system SYS = TEST_SYS_CPU;

typedef struct {
	long fds, threads, maps, cache_files, leftovers;
	size_t heap, memo_handles, memo_names;
} probe;

static long count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	long n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static long count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	long n = 0;
	int c;

	assert_non_null(f);
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static size_t heap_in_use(void)
{
#if TEST_SANITIZED
	return __sanitizer_get_current_allocated_bytes();
#else
	return mallinfo2().uordblks;
#endif
}

/* Files under the cache, and those of them a finished call should not
 * leave: partial downloads and temporary names. The .locks/ files stay,
 * one per blob, as huggingface_hub leaves them: counted as files. */
static int is_leftover(const char *name)
{
	return strstr(name, ".incomplete") || strstr(name, ".tmp") || strstr(name, ".partial");
}

static void walk(const char *dir, long *files, long *leftovers)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096];

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		(*files)++;
		if (is_leftover(e->d_name)) {
			(*leftovers)++;
			print_message("left in the cache: %s\n", path);
		}
		if (e->d_type == DT_DIR)
			walk(path, files, leftovers);
	}
	closedir(d);
}

static probe measure(void)
{
	probe p = { 0 };

	p.fds = count_entries("/proc/self/fd");
	p.threads = count_entries("/proc/self/task");
	p.maps = count_lines("/proc/self/maps");
	p.heap = heap_in_use();
	walk(W.cache, &p.cache_files, &p.leftovers);
	kernels__memo_counts(&p.memo_handles, &p.memo_names);
	return p;
}

static void show(const char *when, probe p)
{
	print_message("%s: fds %ld threads %ld maps %ld heap %zu cache files %ld leftovers %ld memo %zu+%zu\n", when,
		      p.fds, p.threads, p.maps, p.heap, p.cache_files, p.leftovers, p.memo_handles, p.memo_names);
}

/* ---- the world ---- */

static void publish_tree(int answer, const char *repo, const char *refs, int slot)
{
	char *root;

	assert_true(asprintf(&root, "%s/src-%d", W.tmp, answer) > 0);
	assert_int_equal(fx_answer_variant(root, VARIANT, "soak", answer, "cpu", NULL, 1), 0);
	assert_int_equal(test_world_publish(&W, slot, "--repo %s --dir '%s' %s", repo, root, refs), 0);
	free(root);
}

/* acme/top, answering 3001, depends on acme/base v1 (kernel-depends). */
static void publish_dependent(const char *name, int answer, const char *deps)
{
	char *root, *dir, *so;

	assert_true(asprintf(&root, "%s/src-%s", W.tmp, name) > 0);
	assert_true(asprintf(&dir, "%s/build/" VARIANT, root) > 0);
	assert_true(asprintf(&so, "%s/_%s_%d.abi3.so", dir, name, answer) > 0);
	assert_int_equal(test_system("mkdir -p '%s'", dir), 0);
	assert_int_equal(fx_build_so(so, answer, NULL, NULL, NULL), 0);
	assert_int_equal(fx_metadata(dir, "--name %s --id _%s_%d --backend cpu --version 1%s%s%s", name, name, answer,
				     deps ? " --set 'kernel-depends=" : "", deps ? deps : "", deps ? "'" : ""),
			 0);
	assert_int_equal(test_hub_publish(W.hub, "--repo acme/%s --dir '%s' --branch main --branch v1 --trusted", name,
					  root),
			 0);
	free(so);
	free(dir);
	free(root);
}

static int setup(void **state)
{
	assert_int_equal(test_world_start(&W, "soak"), 0);
	publish_tree(1001, "acme/soak", "--branch main --tag v1.0.0 --trusted", 0);
	publish_tree(1002, "acme/soak", "--branch main --tag v1.1.0", 1);
	publish_tree(2001, "acme/other", "--branch main --tag v1.0.0 --trusted", 2);
	publish_dependent("base", 3000, NULL);
	publish_dependent("top", 3001, "[{\"repo-id\": \"acme/base\", \"version\": 1}]");
	dead = test_dead_endpoint();
	assert_non_null(dead);
	test_world_fresh_cache(&W);
	*state = &W;
	return 0;
}

static int teardown(void **state)
{
	free(dead);
	return test_world_teardown(state);
}

/* The Hub-down rounds warn each time: not the test's output. */
static void quiet(kernels_log_level level, const char *msg, void *payload)
{
	(void)level;
	(void)msg;
	(void)payload;
}

static void options(kernels_options *o)
{
	test_world_options(&W, o, &SYS);
	o->token = "";
	o->log_cb = quiet;
}

/* main to commit[slot]: the Hub's branch moving, as a republish does. */
static void move_main(int slot)
{
	assert_int_equal(test_hub_publish(W.hub, "--repo acme/soak --target %s --branch main", W.commit[slot]), 0);
}

static int get_answer(const char *repo, const char *revision, const kernels_options *o)
{
	kernels_kernel *k = NULL;
	int answer;

	if (kernels_get(&k, repo, revision, o) < 0)
		fail_msg("kernels_get(%s, %s): %s", repo, revision, kernels_error_last());
	answer = test_kernel_answer(k);
	kernels_kernel_close(k);
	return answer;
}

static void expect_failure(const char *repo, const char *revision, const kernels_options *o)
{
	kernels_kernel *k = NULL;

	assert_true(kernels_get(&k, repo, revision, o) < 0);
	assert_null(k);
	assert_true(strlen(kernels_error_last()) > 0);
}

/* ---- one round: each kind of call once ---- */

static void by_name(int round)
{
	kernels_options o;

	options(&o);
	assert_int_equal(get_answer("acme/soak", "main", &o), round % 2 ? 1002 : 1001);
	assert_int_equal(get_answer("acme/soak", "v1.0.0", &o), 1001);
	assert_int_equal(get_answer("acme/soak", ">=1.1", &o), 1002);
	assert_int_equal(get_answer("acme/soak", W.commit[0], &o), 1001);
	o.offline = 1;
	assert_int_equal(get_answer("acme/soak", "v1.0.0", &o), 1001);
	expect_failure("acme/never-published", "main", &o);
}

static void failures(void)
{
	kernels_options o;

	options(&o);
	expect_failure("acme/unknown", "main", &o);
	expect_failure("acme/soak", "no-such-branch", &o);
	/* The Hub down: the cache answers a name it holds, with a warning. */
	o.endpoint = dead;
	o.endpoints = dead;
	assert_int_equal(get_answer("acme/soak", "v1.0.0", &o), 1001);
	expect_failure("acme/unknown", "main", &o);
}

/* A get while the Hub fails: the cached answer (the Hub unreachable) or
 * an error (a 5xx), never another commit. */
static void maybe_cached(const kernels_options *o)
{
	kernels_kernel *k = NULL;

	if (kernels_get(&k, "acme/soak", "v1.0.0", o) < 0) {
		assert_null(k);
		return;
	}
	assert_int_equal(test_kernel_answer(k), 1001);
	kernels_kernel_close(k);
}

/* The Hub down for a while (every request answered 503, or reset), then
 * back; a mirror that cannot be reached tried first. */
static void hub_down(int round)
{
	kernels_options o;
	char *both;

	options(&o);
	o.max_retries = 0;
	assert_int_equal(test_hub_fault(W.hub, round % 2 ? "{\"mode\": \"503\", \"count\": -1}"
						       : "{\"mode\": \"reset\", \"count\": -1}"), 0);
	maybe_cached(&o);
	expect_failure("acme/unknown", "main", &o);
	test_hub_faults_clear(W.hub);
	kernels__hub_down_forget_all(); /* a 503 leaves the Hub remembered as not serving */
	assert_int_equal(get_answer("acme/soak", "v1.1.0", &o), 1002);
	assert_true(asprintf(&both, "%s,%s", dead, test_hub_endpoint(W.hub)) > 0);
	o.endpoints = both;
	assert_int_equal(get_answer("acme/soak", "v1.0.0", &o), 1001);
	free(both);
}

static void *thread_fails(void *arg)
{
	kernels_options o;

	(void)arg;
	options(&o);
	expect_failure("acme/unknown-too", "main", &o);
	o.offline = 1;
	expect_failure("acme/unknown-too", "main", &o);
	return NULL;
}

static void listings(void)
{
	kernels_options o;
	kernels_info *info = NULL;
	char **names = NULL;
	size_t n = 0;

	options(&o);
	assert_int_equal(kernels_info_get(&info, "acme/soak", "v1.0.0", &o), 0);
	assert_string_equal(kernels_info_commit(info), W.commit[0]);
	kernels_info_free(info);
	assert_int_equal(kernels_variants_list(&names, &n, "acme/soak", W.commit[1], &o), 0);
	assert_int_equal(n, 1);
	kernels_free(names);
	assert_int_equal(kernels_versions_list(&names, &n, "acme/soak", &o), 0);
	assert_int_equal(n, 2);
	kernels_free(names);
	o.offline = 1;
	assert_int_equal(kernels_versions_list(&names, &n, "acme/soak", &o), 0);
	kernels_free(names);
}

static void locked(const char *lock_path)
{
	kernels_options o;
	kernels_kernel *k = NULL;
	kernels_lock *lock = NULL;
	char *text = NULL;

	options(&o);
	assert_int_equal(kernels_lock_new(&lock, KERNELS_LOCK_FORMAT_DEPENDENCY), 0);
	assert_int_equal(kernels_lock_add_revision(lock, "acme/soak", "v1.0.0", W.commit[0]), 0);
	assert_int_equal(kernels_lock_to_string(&text, lock), 0);
	assert_int_equal(kernels_lock_save(lock, lock_path), 0);
	kernels_lock_free(lock);
	kernels_free(text);
	assert_int_equal(kernels_lock_load(&lock, lock_path), 0);
	kernels_lock_free(lock);
	if (kernels_get_locked(&k, "acme/soak", lock_path, &o) < 0)
		fail_msg("kernels_get_locked: %s", kernels_error_last());
	kernels_kernel_close(k);
	assert_int_equal(kernels_load_locked(&k, "acme/soak", lock_path, &o), 0);
	kernels_kernel_close(k);
}

static void *thread_gets(void *arg)
{
	kernels_options o;
	const char *repo = arg;

	options(&o);
	for (int i = 0; i < 2; i++)
		if (get_answer(repo, "v1.0.0", &o) <= 0)
			return arg;
	return NULL;
}

static void threaded(void)
{
	static const char *repos[THREADS] = { "acme/soak", "acme/other", "acme/soak" };
	pthread_t t[THREADS + 1];
	void *r;

	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, thread_gets, (void *)repos[i]), 0);
	assert_int_equal(pthread_create(&t[THREADS], NULL, thread_fails, NULL), 0);
	for (int i = 0; i < THREADS + 1; i++) {
		assert_int_equal(pthread_join(t[i], &r), 0);
		assert_null(r);
	}
}

/* Names never seen before on every call: nothing may be kept for them. */
static void new_names(int round)
{
	kernels_options o;
	char name[64];

	options(&o);
	snprintf(name, sizeof(name), "acme/unknown-%d", round);
	expect_failure(name, "main", &o);
	snprintf(name, sizeof(name), "no-such-branch-%d", round);
	expect_failure("acme/soak", name, &o);
	o.offline = 1;
	snprintf(name, sizeof(name), "acme/offline-unknown-%d", round);
	expect_failure(name, "main", &o);
}

/* The other entry points, and a name held for revision_ttl_s. */
static void others(void)
{
	kernels_options o;
	kernels_variant_trace *t = NULL;

	options(&o);
	assert_int_equal(kernels_get_variants(&t, "acme/soak", "v1.0.0", &o), 0);
	kernels_variant_trace_free(t);
	assert_int_equal(kernels_has_kernel("acme/soak", "v1.1.0", &o), 1);
	assert_int_equal(get_answer("acme/top", "1", &o), 3001);
	o.revision_ttl_s = 60;
	assert_int_equal(get_answer("acme/soak", "v1.0.0", &o), 1001);
}

static void rounds(int from, int n, const char *lock_path)
{
	for (int i = from; i < from + n; i++) {
		move_main(i % 2);
		by_name(i);
		failures();
		new_names(i);
		listings();
		hub_down(i);
		locked(lock_path);
		others();
		threaded();
	}
}

/* Rounds measured: each makes about 30 calls, so a leak of one smallest
 * heap chunk (32 bytes) per call shows as 10 KB, past HEAP_SLACK.
 * $KERNELS_SOAK_ROUNDS runs more, for a longer look by hand. */
#define ROUNDS 10
#define WARM_ROUNDS 4
#define HEAP_SLACK 1024

static int env_rounds(void)
{
	const char *s = getenv("KERNELS_SOAK_ROUNDS");

	return s && atoi(s) > 0 ? atoi(s) : ROUNDS;
}

/* What may grow only when something new is loaded or cached, compared
 * between two measures with nothing new in between. The sanitizer's
 * allocator maps more as its quarantine of freed blocks fills: its
 * mapped regions are not ours to count. */
static void expect_flat(probe before, probe after)
{
	assert_int_equal(after.fds, before.fds);
	assert_int_equal(after.threads, before.threads);
	if (!TEST_SANITIZED)
		assert_int_equal(after.maps, before.maps);
	assert_int_equal(after.cache_files, before.cache_files);
	assert_int_equal(after.leftovers, 0);
	assert_int_equal(after.memo_handles, before.memo_handles);
	assert_int_equal(after.memo_names, before.memo_names);
	if (after.heap > before.heap + HEAP_SLACK)
		fail_msg("heap in use grew by %zu bytes over the rounds", after.heap - before.heap);
}

static void test_rounds_leave_nothing_per_call(void **state)
{
	int n = env_rounds();
	char *lock_path;
	probe a, b;
	(void)state;

	assert_true(asprintf(&lock_path, "%s/kernels.lock", W.tmp) > 0);
	rounds(0, WARM_ROUNDS, lock_path); /* every commit loaded, every cache made */
	a = measure();
	show("after warm-up", a);
	rounds(WARM_ROUNDS, n, lock_path);
	b = measure();
	show("after the rounds", b);
	free(lock_path);
	expect_flat(a, b);
}

/* glibc keeps freed blocks in a per-thread cache and counts them as in
 * use: off, so that mallinfo2 counts what the process holds. Set before
 * the first allocation, hence the program runs itself once more. */
static void tcache_off(char **argv)
{
	const char *had = getenv("GLIBC_TUNABLES");
	char *want;

	if (TEST_SANITIZED || (had && strstr(had, "glibc.malloc.tcache_count=0")))
		return;
	if (asprintf(&want, "%s%sglibc.malloc.tcache_count=0", had ? had : "", had ? ":" : "") < 0)
		return;
	setenv("GLIBC_TUNABLES", want, 1);
	execv("/proc/self/exe", argv);
	fprintf(stderr, "test_soak: cannot run itself again (%s)\n", strerror(errno));
	exit(1);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rounds_leave_nothing_per_call),
	};

	(void)argc;
	tcache_off(argv);
	return cmocka_run_group_tests(tests, setup, teardown);
}
