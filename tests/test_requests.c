/* What each kind of kernels_get costs in requests, counted in the local
 * Hub's request log (issue 14): a warm call (a fresh process, everything
 * cached) pinned to a tag, branch, vN or specifier sends exactly one
 * request, the refs listing; pinned to a full commit id none; a cold fetch
 * sends only what is learnt once per commit and then kept (the trust
 * verdict, kernel-status.toml's absence from the top folder's listing, the
 * build/ listing) plus one request per file, and nothing under /resolve/
 * before the trust verdict, all over connections the call reuses (counted
 * at the fixture: one per client port). A second kernels_get in the same process returns the
 * same handle: no request for a commit, one for a name, none for a name
 * within kernels_options.revision_ttl_s; never a handle that was closed,
 * and never across settings that decide another answer. */
#include <dirent.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "kernels.h"
#include "memo.h"
#include "origin.h"
#include "test_world.h"
#include "testutil.h"
#include "alloc_fail.h"
#include "../tests/data/variants/fixture.h"

#define REPO "acme/req"
#define LFS_REPO "acme/lfsreq"
#define CPU "torch211-cxx11-cpu-x86_64-linux"
#define CU130 "torch211-cxx11-cu130-x86_64-linux"
#define TVM "tvm-ffi01-cpu-x86_64-linux"
#define FILES_PER_VARIANT 2 /* the module and metadata.json */

/* commit[]: v1.0.0, v1.1.0 */
static test_world W;
static char lfs_commit[41]; /* LFS_REPO's v1.1.0 */

static char *tree(int minor)
{
	char *root;

	assert_true(asprintf(&root, "%s/src-%d", W.tmp, minor) > 0);
	assert_int_equal(fx_answer_variant(root, CPU, "req", 100 + minor, "cpu", NULL, 1), 0);
	assert_int_equal(fx_answer_variant(root, CU130, "req", 200 + minor, "cuda", "8.0,9.0", 1), 0);
	assert_int_equal(fx_answer_variant(root, TVM, "req", 300 + minor, "cpu", NULL, 1), 0);
	return root;
}

static int setup(void **state)
{
	char *a, *b;

	assert_int_equal(test_world_start(&W, "requests"), 0);
	a = tree(0);
	b = tree(1);
	assert_int_equal(test_world_publish(&W, 0, "--repo " REPO " --dir '%s' --branch main --branch v1 --tag v1.0.0 "
					    "--trusted", a), 0);
	assert_int_equal(test_world_publish(&W, 1, "--repo " REPO " --dir '%s' --branch main --branch v1 --tag v1.1.0",
					    b), 0);
	/* Its twin whose modules are LFS files: the Hub redirects them to the CDN. */
	assert_int_equal(test_hub_publish(W.hub, "--repo " LFS_REPO " --dir '%s' --branch v1 --tag v1.0.0 --trusted "
					  "--lfs-threshold 1000", a), 0);
	assert_int_equal(test_hub_publish(W.hub, "--repo " LFS_REPO " --dir '%s' --branch v1 --tag v1.1.0 "
					  "--lfs-threshold 1000", b), 0);
	snprintf(lfs_commit, sizeof(lfs_commit), "%s", test_hub_last_commit(W.hub));
	free(a);
	free(b);
	*state = &W;
	return 0;
}

/* Each case starts from the Hub as it was started, so one that fails
 * halfway (its CDN pointed at a dead port, a fault left staged) fails
 * alone instead of every case after it. */
static int fresh_cache(void **state)
{
	char cfg[400];
	(void)state;
	test_hub_faults_clear(W.hub);
	snprintf(cfg, sizeof(cfg), "{\"cdn\": \"%s\"}", test_hub_cdn(W.hub));
	if (test_hub_config(W.hub, cfg) != 0)
		return -1;
	test_world_fresh_cache(&W);
	kernels__memo_clear();
	return 0;
}

static kernels_system sys_cpu(void)
{
	kernels_system s = TEST_SYS_CPU;
	return s;
}

static kernels_system sys_gpu(void)
{
	kernels_system s = sys_cpu();
	s.backend = "cuda";
	s.backend_version = 1300;
	s.no_gpu = 0;
	s.gpu_count = 1;
	s.gpu_archs[0] = 90;
	return s;
}

static void options(kernels_options *o, const kernels_system *sys)
{
	test_world_options(&W, o, sys);
}

/* Every request the log holds, on stderr: what a failed count was made of. */
static void dump_log(const char *what)
{
	char *log = test_hub_log(W.hub);
	fprintf(stderr, "requests of %s: %s\n", what, log ? log : "(no log)");
	free(log);
}

static int requests(const char *what)
{
	int n = test_hub_log_count(W.hub, NULL, NULL);
	if (n < 0)
		fail_msg("the fixture's log is unreadable");
	if (getenv("TEST_REQUESTS_VERBOSE"))
		dump_log(what);
	return n;
}

static void expect_requests(const char *what, int n)
{
	int got = requests(what);
	if (got != n) {
		dump_log(what);
		fail_msg("%s: %d requests, expected %d", what, got, n);
	}
}

/* A call's requests share its connections (lib/hub_conn.c): no more are
 * opened to the Hub than requests were in flight at once (the trust check
 * beside the two listings: 3; the files come over those), and one to the
 * CDN, whatever the files. Each request on its own connection made 6. */
#define HUB_CONNECTIONS_MAX 3

static void expect_connections(const char *what)
{
	int hub = test_hub_log_connections(W.hub, "hub"), cdn = test_hub_log_connections(W.hub, "cdn");

	if (hub < 1 || hub > HUB_CONNECTIONS_MAX || cdn > 1) {
		dump_log(what);
		fail_msg("%s: %d connections to the Hub (1 to %d expected), %d to the CDN (at most 1)", what, hub,
			 HUB_CONNECTIONS_MAX, cdn);
	}
}

/* kernels_get, the answer checked; the handle is closed unless kept. */
static kernels_kernel *get(const kernels_options *o, const char *revision, int expect, int keep)
{
	kernels_kernel *k = NULL;

	if (kernels_get(&k, REPO, revision, o) < 0)
		fail_msg("kernels_get(%s): %s", revision, kernels_error_last());
	assert_int_equal(test_kernel_answer(k), expect);
	if (!keep) {
		kernels_kernel_close(k);
		k = NULL;
	}
	return k;
}

/* "A fresh process": nothing of the last call is remembered in memory. */
static void new_process(void)
{
	kernels__memo_clear();
	test_hub_log_clear(W.hub);
}

static void test_cold_then_warm_cpu(void **state)
{
	kernels_options o;
	kernels_system s = sys_cpu();
	const char *names[] = { "v1", "v1.1.0", "main", "1", ">=1,<2", "~=1.1" };
	size_t i;
	(void)state;

	options(&o, &s);
	get(&o, "v1", 101, 0);
	/* Cold: the refs, then side by side the publisher's trust, the top
	 * folder's listing (no kernel-status.toml there: remembered in
	 * .no_exist) and the build/ listing (recorded), then one GET per file of
	 * the variant; nothing else. */
	assert_int_equal(test_hub_log_count(W.hub, "GET", "/info/refs"), 1);
	assert_int_equal(test_hub_log_count(W.hub, "GET", "/overview"), 1);
	assert_int_equal(test_hub_log_count(W.hub, NULL, "kernel-status.toml"), 0);
	assert_int_equal(test_hub_log_count(W.hub, "GET", "/tree/"), 2);
	assert_int_equal(test_hub_log_count(W.hub, "GET", "/resolve/"), FILES_PER_VARIANT);
	expect_requests("a cold fetch", 4 + FILES_PER_VARIANT);
	expect_connections("a cold fetch");

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		new_process();
		get(&o, names[i], 101, 0);
		expect_requests(names[i], 1);
		assert_int_equal(test_hub_log_count(W.hub, "GET", "/info/refs"), 1);
		assert_int_equal(test_hub_log_connections(W.hub, NULL), 1);
	}
	new_process();
	get(&o, W.commit[1], 101, 0);
	expect_requests("a warm commit pin", 0);
	new_process();
	get(&o, W.commit[0], 100, 0); /* another commit: its listings are asked once, its files fetched */
	assert_int_equal(test_hub_log_count(W.hub, "GET", "/tree/"), 2);
	new_process();
	get(&o, W.commit[0], 100, 0);
	expect_requests("a warm commit pin of the older commit", 0);
}

/* With a GPU the arch check reads the CUDA candidates' metadata.json: each
 * is one GET the first time (its hash is in the listing: no HEAD), then a
 * cached file. */
static void test_cold_then_warm_gpu(void **state)
{
	kernels_options o;
	kernels_system s = sys_gpu();
	(void)state;

	options(&o, &s);
	get(&o, "v1.1.0", 201, 0);
	assert_int_equal(test_hub_log_count(W.hub, "HEAD", "metadata.json"), 0);
	assert_int_equal(test_hub_log_count(W.hub, "GET", "build/" CU130 "/metadata.json"), 1);
	assert_int_equal(test_hub_log_count(W.hub, "GET", "/resolve/"), FILES_PER_VARIANT);
	expect_requests("a cold fetch with a GPU", 4 + FILES_PER_VARIANT);
	expect_connections("a cold fetch with a GPU");
	new_process();
	get(&o, "v1.1.0", 201, 0);
	expect_requests("warm, with a GPU", 1);
	new_process();
	get(&o, W.commit[1], 201, 0);
	expect_requests("a warm commit pin, with a GPU", 0);
	/* Offline the same, from the cache only. */
	new_process();
	o.offline = 1;
	get(&o, "v1.1.0", 201, 0);
	expect_requests("offline", 0);
}

/* A re-get of a loaded commit takes the in-process memo before anything
 * else: the settings key and a lookup, not the configuration (environment,
 * token file, cache root) nor the cache on disk. Its cost is counted in
 * allocations, which a busy machine cannot change; the time it takes is
 * bench/get's figure. */
#define REGETS 200
#define REGET_ALLOCS_MAX 8     /* the whole path makes hundreds */

/* A second kernels_get of a loaded variant: the same handle. */
static void test_reget_same_handle(void **state)
{
	kernels_options o;
	kernels_system s = sys_cpu();
	kernels_kernel *a, *b;
	kernels_get_stats st = KERNELS_GET_STATS_INIT;
	long allocs, first = -1;
	int i;
	(void)state;

	options(&o, &s);
	a = get(&o, W.commit[1], 101, 1);
	test_hub_log_clear(W.hub);
	for (i = 0; i < REGETS; i++) {
		alloc_fail_nth(0);
		assert_int_equal(kernels_get(&b, REPO, W.commit[1], &o), 0);
		allocs = alloc_fail_count();
		assert_ptr_equal(a, b);
		kernels_kernel_close(b);
		if (first < 0)
			first = allocs;
		if (allocs != first || allocs > REGET_ALLOCS_MAX)
			fail_msg("re-get %d of a commit pin made %ld allocations (the first %ld; at most %d)", i,
				 allocs, first, REGET_ALLOCS_MAX);
	}
	print_message("re-get of a commit pin: %ld allocations\n", first);
	expect_requests("re-gets of a commit pin", 0);
	assert_int_equal(kernels_kernel_refcount(a), 1);

	/* Upper case is the same commit. */
	{
		char upper[41];
		for (i = 0; i <= 40; i++)
			upper[i] = (char)(W.commit[1][i] >= 'a' && W.commit[1][i] <= 'f' ? W.commit[1][i] - 32 : W.commit[1][i]);
		assert_int_equal(kernels_get_ext(&b, &st, REPO, upper, &o), 0);
		assert_ptr_equal(a, b);
		assert_int_equal(st.from_cache, 1);
		assert_string_equal(st.commit, W.commit[1]);
		kernels_kernel_close(b);
	}

	/* A name: one refs request, the same handle. */
	test_hub_log_clear(W.hub);
	assert_int_equal(kernels_get(&b, REPO, "v1", &o), 0);
	assert_ptr_equal(a, b);
	kernels_kernel_close(b);
	expect_requests("a re-get by name", 1);
	assert_int_equal(test_hub_log_count(W.hub, "GET", "/info/refs"), 1);

	/* Within revision_ttl_s, not even that. */
	o.revision_ttl_s = 60;
	test_hub_log_clear(W.hub);
	for (i = 0; i < 3; i++) {
		assert_int_equal(kernels_get(&b, REPO, "v1", &o), 0);
		assert_ptr_equal(a, b);
		kernels_kernel_close(b);
	}
	expect_requests("re-gets by name within revision_ttl_s", 0);
	o.revision_ttl_s = 0;

	/* Another system description is another answer: the tvm-ffi variant. */
	{
		kernels_system tvm = sys_cpu();
		kernels_options o2;
		tvm.torch_version = 0;
		tvm.tvm_ffi_version = 1;
		options(&o2, &tvm);
		b = get(&o2, W.commit[1], 301, 1);
		assert_ptr_not_equal(a, b);
		kernels_kernel_close(b);
	}
	/* Closed: the memo does not hand it out again; the next get loads anew. */
	kernels_kernel_close(a);
	test_hub_log_clear(W.hub);
	a = get(&o, W.commit[1], 101, 1);
	assert_int_equal(kernels_kernel_refcount(a), 1);
	expect_requests("a get after the handle was closed", 0);
	kernels_kernel_close(a);
}

/* Settings that decide another answer are part of the key: the trust
 * check is not skipped because a handle is loaded. */
static void test_reget_keeps_trust(void **state)
{
	kernels_options o;
	kernels_system s = sys_cpu();
	kernels_kernel *a = NULL, *b = NULL;
	char *src = tree(7);
	(void)state;

	assert_int_equal(test_hub_publish(W.hub, "--repo shady/req --dir '%s' --tag v1.0.0 --untrusted", src), 0);
	options(&o, &s);
	o.trust_remote_code = 1;
	assert_int_equal(kernels_get(&a, "shady/req", test_hub_last_commit(W.hub), &o), 0);
	o.trust_remote_code = 0;
	assert_int_equal(kernels_get(&b, "shady/req", test_hub_last_commit(W.hub), &o), KERNELS_EUNTRUSTED);
	assert_null(b);
	o.trust_remote_code = 1;
	assert_int_equal(kernels_get(&b, "shady/req", test_hub_last_commit(W.hub), &o), 0);
	assert_ptr_equal(a, b);
	kernels_kernel_close(b);
	kernels_kernel_close(a);
	free(src);
}

/* A model-type repo (as kernels were published before kernel repos): once
 * the cache knows it as one, a warm call asks for it as one, in one request. */
static void test_model_repo(void **state)
{
	kernels_options o;
	kernels_system s = sys_cpu();
	kernels_kernel *k = NULL;
	char *src = tree(5);
	(void)state;

	assert_int_equal(test_hub_publish(W.hub, "--repo acme/mreq --type model --dir '%s' --branch main --tag v1.0.0 "
					  "--trusted", src), 0);
	options(&o, &s);
	if (kernels_get(&k, "acme/mreq", "v1.0.0", &o) < 0)
		fail_msg("kernels_get: %s", kernels_error_last());
	assert_int_equal(test_kernel_answer(k), 105);
	kernels_kernel_close(k);
	/* Cold, its refs cost two requests: the kernel form's git answer
	 * (RepoNotFound), then the model form's REST listing. */
	if (test_hub_log_count(W.hub, "GET", "/info/refs") + test_hub_log_count(W.hub, "GET", "/acme/mreq/refs") != 2) {
		dump_log("a cold call to a model repo");
		fail_msg("a cold call to a model repo: the refs listing was not two requests");
	}
	assert_int_equal(test_hub_log_count(W.hub, "GET", "/kernels/acme/mreq/info/refs"), 1);
	assert_int_equal(test_hub_log_count(W.hub, "GET", "/api/models/acme/mreq/refs"), 1);
	new_process();
	assert_int_equal(kernels_get(&k, "acme/mreq", "v1.0.0", &o), 0);
	kernels_kernel_close(k);
	expect_requests("a warm call to a model repo", 1);
	assert_int_equal(test_hub_log_count(W.hub, "GET", "/acme/mreq/info/refs"), 1);
	free(src);
}

/* A moved tag is seen by the next call, or, with revision_ttl_s, once the
 * time is up. */
static void test_moved_name(void **state)
{
	kernels_options o;
	kernels_system s = sys_cpu();
	kernels_kernel *a, *b;
	(void)state;

	assert_int_equal(test_hub_publish(W.hub, "--repo " REPO " --target v1.0.0 --tag moving"), 0);
	options(&o, &s);
	/* An hour, not a second: however busy the machine, the second get is
	 * within it. */
	o.revision_ttl_s = 3600;
	a = get(&o, "moving", 100, 1);
	assert_int_equal(test_hub_publish(W.hub, "--repo " REPO " --target v1.1.0 --tag moving"), 0);
	b = get(&o, "moving", 100, 1); /* accepted as it was, within the hour */
	assert_ptr_equal(a, b);
	kernels_kernel_close(b);
	o.revision_ttl_s = 0;
	b = get(&o, "moving", 101, 1); /* asked again: moved */
	assert_ptr_not_equal(a, b);
	kernels_kernel_close(b);
	kernels_kernel_close(a);
}

/* Refusals that cost little: an id ending in ".git" in any case sends
 * nothing; a repo the Hub does not have costs two requests, whatever the
 * revision form: git's RepoNotFound settles the kernel form, the REST
 * listing's the model form (git's cannot: olah answers git that way for a
 * model repo it serves through the REST listing only). */
static void test_cheap_refusals(void **state)
{
	static const char *const revisions[] = { "v1.0.0", "main", "1", ">=1.0,<2" };
	kernels_system sys = sys_cpu();
	kernels_options o;
	kernels_kernel *k = NULL;
	char what[64];
	size_t i;
	(void)state;

	options(&o, &sys);
	assert_int_equal(kernels_get(&k, "acme/Req.GIT", "v1.0.0", &o), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "use \"acme/Req\""));
	expect_requests("a .GIT id", 0);
	for (i = 0; i < sizeof(revisions) / sizeof(revisions[0]); i++) {
		test_hub_log_clear(W.hub);
		assert_int_equal(kernels_get(&k, "acme/nope", revisions[i], &o), KERNELS_ENOTFOUND);
		assert_null(k);
		snprintf(what, sizeof(what), "a missing repo at %s", revisions[i]);
		if (requests(what) > 2) {
			dump_log(what);
			fail_msg("%s: %d requests, at most 2 expected", what, requests(what));
		}
		assert_int_equal(test_hub_log_count(W.hub, "GET", "/kernels/acme/nope/info/refs"), 1);
		assert_int_equal(test_hub_log_count(W.hub, "GET", "/api/models/acme/nope/refs"), 1);
	}
}

static ino_t inode_of(const char *path)
{
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	return st.st_ino;
}

/* An online answer is recorded in refs/ only when the record would change
 * (a read-only shared cache then warns only when it is out of date): the
 * same commit leaves the file alone, another one replaces it. */
static void test_ref_recorded_only_when_it_changes(void **state)
{
	kernels_system sys = sys_cpu();
	kernels_options o;
	kernels_kernel *k = NULL;
	char *ref;
	ino_t first;
	(void)state;

	options(&o, &sys);
	assert_int_equal(kernels_get(&k, REPO, "v1.0.0", &o), 0);
	kernels_kernel_close(k);
	assert_true(asprintf(&ref, "%s/kernels--acme--req/refs/v1.0.0", W.cache) > 0);
	first = inode_of(ref);
	kernels__memo_clear();
	assert_int_equal(kernels_get(&k, REPO, "v1.0.0", &o), 0);
	kernels_kernel_close(k);
	assert_true(inode_of(ref) == first);
	assert_int_equal(test_write_file(ref, W.commit[1], 40), 0); /* out of date */
	first = inode_of(ref);
	kernels__memo_clear();
	assert_int_equal(kernels_get(&k, REPO, "v1.0.0", &o), 0);
	kernels_kernel_close(k);
	assert_true(inode_of(ref) != first);
	free(ref);
}

static int record_warnings;

static void count_record_warnings(kernels_log_level level, const char *message, void *payload)
{
	(void)payload;
	if (level >= KERNELS_LOG_WARNING && strstr(message, "could not record"))
		record_warnings++;
}

/* A record that cannot be written (a read-only shared cache; here
 * refs/v1.0.0 is a folder, which refuses the write even to root) is warned
 * about once per call, and only while the record would change. */
static void test_unwritable_record_warns_once_per_call(void **state)
{
	kernels_system sys = sys_cpu();
	kernels_options o;
	kernels_kernel *k = NULL;
	char *ref, *inside;
	int i;
	(void)state;

	options(&o, &sys);
	o.log_cb = count_record_warnings;
	record_warnings = 0;
	assert_int_equal(kernels_get(&k, REPO, "v1.0.0", &o), 0);
	kernels_kernel_close(k);
	assert_int_equal(record_warnings, 0);
	assert_true(asprintf(&ref, "%s/kernels--acme--req/refs/v1.0.0", W.cache) > 0);
	assert_true(asprintf(&inside, "%s/keep", ref) > 0);
	assert_int_equal(unlink(ref), 0);
	assert_int_equal(mkdir(ref, 0755), 0);
	assert_int_equal(test_write_file(inside, "x", 1), 0);
	for (i = 1; i <= 2; i++) {
		new_process();
		assert_int_equal(kernels_get(&k, REPO, "v1.0.0", &o), 0);
		kernels_kernel_close(k);
		assert_int_equal(record_warnings, i);
	}
	/* The record holds the answer: nothing to write, nothing to say. */
	assert_int_equal(unlink(inside), 0);
	assert_int_equal(rmdir(ref), 0);
	assert_int_equal(test_write_file(ref, W.commit[0], 40), 0);
	new_process();
	assert_int_equal(kernels_get(&k, REPO, "v1.0.0", &o), 0);
	kernels_kernel_close(k);
	assert_int_equal(record_warnings, 2);
	free(inside);
	free(ref);
}

/* ---- the CDN's connection opened early (lib/hub_warm.c) ---------------------- */

static void get_lfs(const kernels_options *o, const char *revision, int expect, int keep)
{
	kernels_kernel *k = NULL;

	(void)keep;
	if (kernels_get(&k, LFS_REPO, revision, o) < 0)
		fail_msg("kernels_get(%s, %s): %s", LFS_REPO, revision, kernels_error_last());
	assert_int_equal(test_kernel_answer(k), expect);
	kernels_kernel_close(k);
}

/* The warm-ups the CDN saw: HEAD requests there. */
static int cdn_heads(void)
{
	return test_hub_log_count_ex(W.hub, "HEAD", NULL, "cdn", 0, -1);
}

/* The hint a cold get left: the one file of {cache}/.locks/.libkernels/cdn/. */
static char *hint_file(void)
{
	char *dir, *path = NULL;
	struct dirent *e;
	DIR *d;

	assert_true(asprintf(&dir, "%s/.locks/.libkernels/cdn", W.cache) > 0);
	assert_non_null(d = opendir(dir));
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		assert_null(path);
		assert_true(asprintf(&path, "%s/%s", dir, e->d_name) > 0);
	}
	closedir(d);
	free(dir);
	assert_non_null(path);
	return path;
}

/* huggingface_hub's cache scan reports every entry of the cache root but
 * .locks/ and CACHEDIR.TAG that is not a repo's: the hint must not add one. */
static void root_holds_only_repos(void)
{
	struct dirent *e;
	DIR *d;

	assert_non_null(d = opendir(W.cache));
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, ".locks") ||
		    !strcmp(e->d_name, "CACHEDIR.TAG"))
			continue;
		if (strncmp(e->d_name, "kernels--", 9) && strncmp(e->d_name, "models--", 8))
			fail_msg("the cache root holds %s, which `hf cache scan` reports as no repo", e->d_name);
	}
	closedir(d);
}

static void write_hint(const char *path, const char *fmt, const char *a, const char *b)
{
	char text[1024];
	int n = snprintf(text, sizeof(text), fmt, a, b);
	assert_int_equal(test_write_file(path, text, (size_t)n), 0);
}

/* The commit's files and records gone, the hint kept: the next get is cold. */
static void forget_repo(void)
{
	char *dir;
	assert_true(asprintf(&dir, "%s/kernels--acme--lfsreq", W.cache) > 0);
	test_rmtree(dir);
	free(dir);
	new_process();
}

/* Index in the fixture's log of the first request with `method` to `listener`; -1: none. */
static int first_in_log(const char *method, const char *listener)
{
	char *text = test_hub_log(W.hub);
	json_t *log = text ? json_loads(text, 0, NULL) : NULL, *e;
	size_t i;
	int at = -1;

	json_array_foreach(log, i, e) {
		if (!strcmp(json_string_value(json_object_get(e, "method")), method) &&
		    !strcmp(json_string_value(json_object_get(e, "listener")), listener)) {
			at = (int)i;
			break;
		}
	}
	json_decref(log);
	free(text);
	return at;
}

/* A cold get in a cache that followed this endpoint's redirect before
 * sends one HEAD to that CDN as soon as the commit is known; the file's
 * GET after the redirect goes over its connection. No hint, no warm-up;
 * a warm get or a cached commit pin sends none either. */
static void test_cdn_warm_up(void **state)
{
	kernels_options o;
	kernels_system s = sys_cpu();
	char *hint, *text, expect[600];
	(void)state;

	options(&o, &s);
	new_process();
	get_lfs(&o, "v1.1.0", 101, 0);
	assert_int_equal(cdn_heads(), 0); /* an empty cache: no hint */
	assert_true(test_hub_log_count_ex(W.hub, "GET", "/lfs/", "cdn", 0, -1) >= 1);
	hint = hint_file();
	root_holds_only_repos();
	assert_non_null(text = test_read_file(hint, NULL));
	snprintf(expect, sizeof(expect), "%s\t%s\n", test_hub_endpoint(W.hub), test_hub_cdn(W.hub));
	assert_string_equal(text, expect);
	free(text);

	new_process();
	get_lfs(&o, "v1", 101, 0);
	expect_requests("a warm get with a hint", 1);
	new_process();
	get_lfs(&o, lfs_commit, 101, 0);
	expect_requests("a cached commit pin with a hint", 0);

	new_process();
	get_lfs(&o, "v1.0.0", 100, 0); /* another commit: cold, with the hint */
	assert_int_equal(cdn_heads(), 1);
	assert_true(test_hub_log_count_ex(W.hub, "GET", "/lfs/", "cdn", 0, -1) >= 1);
	if (!(first_in_log("HEAD", "cdn") < first_in_log("GET", "cdn")) || test_hub_log_connections(W.hub, "cdn") != 1) {
		dump_log("a cold get with a hint");
		fail_msg("the warm-up did not go first, or the CDN's GET did not reuse its connection");
	}
	expect_connections("a cold get with a hint");
	/* HTTP/1.1 sends one request at a time on a connection: a redirect that
	 * comes while the warm-up is still out waits for it (for as long as
	 * the redirect took, at most) instead of opening a second connection.
	 * Staged: the warm-up's answer held 0.8 s, the Hub's /resolve/ 0.6 s. */
	forget_repo();
	assert_int_equal(test_hub_fault(W.hub, "[{\"method\": \"HEAD\", \"listener\": \"cdn\", \"mode\": \"slow\", "
					"\"delay\": 0.8}, {\"path\": \"/resolve/\", \"listener\": \"hub\", \"mode\": "
					"\"slow\", \"delay\": 0.6, \"count\": 2}]"), 0);
	get_lfs(&o, "v1.1.0", 101, 0);
	test_hub_faults_clear(W.hub);
	if (cdn_heads() != 1 || test_hub_log_connections(W.hub, "cdn") != 1) {
		dump_log("a redirect while the warm-up is out");
		fail_msg("a redirect while the warm-up was out opened another connection to the CDN");
	}
	/* Offline nothing is sent, the hint or not. */
	forget_repo();
	o.offline = 1;
	assert_int_equal(kernels_get(&(kernels_kernel *){ NULL }, LFS_REPO, "v1.0.0", &o), KERNELS_EOFFLINE);
	expect_requests("offline with a hint", 0);
	free(hint);
}

/* A hint is followed only for the endpoint it names, and only when it is
 * one line "{endpoint}\t{origin}" with an http(s) origin and nothing else. */
static void test_cdn_hint_ignored(void **state)
{
	static const char *const bad[] = {
		"http://127.0.0.1:1\t%2$s\n",  /* another endpoint's */
		"%s\tftp://%2$s\n", "%s\t%s/lfs\n", "%s %s\n", "%s\t%s", "%s\t%s\nmore\n", "\n", "%s\t\n",
	};
	kernels_options o;
	kernels_system s = sys_cpu();
	char *hint, cdn[300];
	size_t i;
	(void)state;

	options(&o, &s);
	get_lfs(&o, "v1.1.0", 101, 0);
	hint = hint_file();
	snprintf(cdn, sizeof(cdn), "%s", test_hub_cdn(W.hub));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		forget_repo();
		write_hint(hint, bad[i], test_hub_endpoint(W.hub), i == 1 ? cdn + 7 : cdn);
		get_lfs(&o, "v1.1.0", 101, 0);
		if (cdn_heads() != 0) {
			dump_log(bad[i]);
			fail_msg("hint '%s' was followed", bad[i]);
		}
	}
	free(hint);
}

/* A hint another user of a shared cache wrote is not followed: that user
 * could name any host, and this user's get would call on it. This user's
 * or root's is. */
static void test_cdn_hint_of_another_user_ignored(void **state)
{
	kernels_options o;
	kernels_system s = sys_cpu();
	char *hint;
	(void)state;

	if (getuid() != 0)
		skip(); /* no other user to give the hint to */
	options(&o, &s);
	get_lfs(&o, "v1.1.0", 101, 0);
	hint = hint_file();
	forget_repo();
	assert_int_equal(chown(hint, 65534, 65534), 0);
	get_lfs(&o, "v1.1.0", 101, 0);
	if (cdn_heads() != 0) {
		dump_log("a hint of uid 65534");
		fail_msg("the hint uid 65534 wrote was followed");
	}
	forget_repo();
	assert_int_equal(chown(hint, 0, 0), 0);
	get_lfs(&o, "v1.1.0", 101, 0);
	assert_int_equal(cdn_heads(), 1);
	free(hint);
}

/* The hint's folder is walked from the cache root as every write of the
 * cache is: with a link planted at .locks/.libkernels or at its cdn/, a
 * cold get succeeds and writes nothing where the link points. */
static void test_cdn_hint_not_written_through_a_link(void **state)
{
	static const char *const planted[] = { ".libkernels", ".libkernels/cdn" };
	kernels_options o;
	kernels_system s = sys_cpu();
	char *outside, *link_path;
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(planted) / sizeof(planted[0]); i++) {
		test_world_fresh_cache(&W);
		options(&o, &s); /* the fresh cache's folder */
		new_process();
		outside = test_mkdtemp("requests-outside");
		assert_int_equal(test_system("mkdir -p '%s/.locks/.libkernels'", W.cache), 0);
		if (i == 0)
			assert_int_equal(test_system("rmdir '%s/.locks/.libkernels'", W.cache), 0);
		assert_true(asprintf(&link_path, "%s/.locks/%s", W.cache, planted[i]) > 0);
		assert_int_equal(symlink(outside, link_path), 0);
		get_lfs(&o, "v1.1.0", 101, 0);
		if (test_system("test -z \"$(ls -A '%s')\"", outside) != 0)
			fail_msg("the CDN hint was written through the link %s", link_path);
		test_rmtree(outside);
		free(outside);
		free(link_path);
	}
}

static int early_failures;

static void count_early_failures(kernels_log_level level, const char *message, void *payload)
{
	(void)payload;
	if (level == KERNELS_LOG_INFO && strstr(message, "early failed"))
		early_failures++;
}

/* `msg` with each of libcurl's "after N ms" read as "after _ ms": how
 * long a refused connect took is not part of what failed, and on a busy
 * machine two refusals of the same port take 0 ms and 1 ms. */
static void without_elapsed(char *msg)
{
	char *at = msg, *digits, *end;

	while ((at = strstr(at, "after ")) != NULL) {
		digits = at + 6;
		for (end = digits; *end >= '0' && *end <= '9'; end++)
			;
		if (end > digits && !strncmp(end, " ms", 3)) {
			*digits = '_';
			memmove(digits + 1, end, strlen(end) + 1);
		}
		at = digits;
	}
}

/* kernels_get's outcome and message (elapsed times left out), the handle closed. */
static int get_outcome(const kernels_options *o, char *msg, size_t n)
{
	kernels_kernel *k = NULL;
	int rc = kernels_get(&k, LFS_REPO, "v1.1.0", o);

	snprintf(msg, n, "%s", rc < 0 ? kernels_error_last() : "");
	without_elapsed(msg);
	kernels_kernel_close(k);
	return rc;
}

/* A warm-up that fails fails nothing: refused, reset or left hanging, the
 * get succeeds as it would have; with the CDN down the get fails exactly
 * as it does without a hint. */
static void test_cdn_warm_up_fails(void **state)
{
	kernels_options o;
	kernels_system s = sys_cpu();
	char *hint, *dead = test_dead_endpoint(), cfg[400], with[2048], without[2048];
	int rc;
	(void)state;

	assert_non_null(dead);
	options(&o, &s);
	o.log_cb = count_early_failures;
	get_lfs(&o, "v1.1.0", 101, 0);
	hint = hint_file();

	forget_repo(); /* refused */
	write_hint(hint, "%s\t%s\n", test_hub_endpoint(W.hub), dead);
	early_failures = 0;
	get_lfs(&o, "v1.1.0", 101, 0);
	assert_int_equal(early_failures, 1);
	assert_int_equal(cdn_heads(), 0);

	forget_repo(); /* reset: the file's GET opens its own connection */
	assert_int_equal(test_hub_fault(W.hub, "{\"method\": \"HEAD\", \"listener\": \"cdn\", \"mode\": \"reset\"}"), 0);
	get_lfs(&o, "v1.1.0", 101, 0);
	assert_int_equal(cdn_heads(), 1);

	forget_repo(); /* hanging: the file's GET waits a round trip at most, then opens its own */
	assert_int_equal(test_hub_fault(W.hub, "{\"method\": \"HEAD\", \"listener\": \"cdn\", \"mode\": \"hang\", "
					"\"delay\": 30}"), 0);
	get_lfs(&o, "v1.1.0", 101, 0);
	assert_int_equal(cdn_heads(), 1);
	assert_int_equal(test_hub_log_connections(W.hub, "cdn"), 2);
	test_hub_faults_clear(W.hub);

	/* The CDN down: the Hub redirects to a port that refuses. */
	snprintf(cfg, sizeof(cfg), "{\"cdn\": \"%s\"}", dead);
	assert_int_equal(test_hub_config(W.hub, cfg), 0);
	o.log_cb = NULL;
	forget_repo();
	unlink(hint);
	kernels__hub_down_forget_all();
	rc = get_outcome(&o, without, sizeof(without));
	assert_true(rc < 0);
	forget_repo();
	write_hint(hint, "%s\t%s\n", test_hub_endpoint(W.hub), dead);
	kernels__hub_down_forget_all();
	assert_int_equal(get_outcome(&o, with, sizeof(with)), rc);
	assert_string_equal(with, without);
	kernels__hub_down_forget_all();
	snprintf(cfg, sizeof(cfg), "{\"cdn\": \"%s\"}", test_hub_cdn(W.hub));
	assert_int_equal(test_hub_config(W.hub, cfg), 0);
	free(hint);
	free(dead);
}

/* kernels_download of LFS_REPO's v1.1.0 (lfs_commit), one variant. */
static int download_lfs(const kernels_options *o, const char *variant)
{
	kernels_snapshot *snap = NULL;
	const char *const v[] = { variant };
	int rc = kernels_download(&snap, LFS_REPO, lfs_commit, v, 1, o);

	kernels_snapshot_free(snap);
	return rc;
}

static int early_starts;

/* The warm-ups a call began (hub_warm.c's debug line) and those that
 * failed: a warm-up of a call that sends nothing else is dropped unsent,
 * so only the log tells that one was begun. */
static void count_early(kernels_log_level level, const char *message, void *payload)
{
	count_early_failures(level, message, payload);
	if (level == KERNELS_LOG_DEBUG && strstr(message, "early (this cache's hint"))
		early_starts++;
}

/* kernels_download opens the CDN's connection early as a get does: with
 * the hint, a pin with a variant to fetch (its commit's other variant
 * cached or not) sends one HEAD to the CDN first, and the file's GET goes
 * over its connection; a pin whose variants are all cached, or offline,
 * begins none and sends nothing; a warm-up that fails changes nothing. */
static void test_cdn_warm_up_download(void **state)
{
	kernels_options o;
	kernels_system s = sys_cpu();
	char *hint, *dead = test_dead_endpoint();
	(void)state;

	assert_non_null(dead);
	options(&o, &s);
	o.log_cb = count_early;
	new_process();
	assert_int_equal(download_lfs(&o, CPU), 0);
	assert_int_equal(cdn_heads(), 0); /* an empty cache: no hint */
	hint = hint_file();

	forget_repo();
	assert_int_equal(download_lfs(&o, CPU), 0);
	if (cdn_heads() != 1 || !(first_in_log("HEAD", "cdn") < first_in_log("GET", "cdn")) ||
	    test_hub_log_connections(W.hub, "cdn") != 1) {
		dump_log("a download with a hint");
		fail_msg("a download with a hint sent no warm-up first, or the CDN's GET did not reuse its connection");
	}
	expect_connections("a download with a hint");
	new_process();
	assert_int_equal(download_lfs(&o, CU130), 0);
	assert_int_equal(cdn_heads(), 1);

	new_process();
	early_starts = 0;
	assert_int_equal(download_lfs(&o, CPU), 0);
	expect_requests("a cached download pin with a hint", 0);
	assert_int_equal(early_starts, 0);

	forget_repo();
	o.offline = 1;
	assert_int_equal(download_lfs(&o, CPU), KERNELS_EOFFLINE);
	expect_requests("a download offline with a hint", 0);
	assert_int_equal(early_starts, 0);

	o.offline = 0;
	write_hint(hint, "%s\t%s\n", test_hub_endpoint(W.hub), dead);
	early_failures = 0;
	assert_int_equal(download_lfs(&o, CPU), 0);
	assert_int_equal(early_failures, 1);
	kernels__hub_down_forget_all();
	free(hint);
	free(dead);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_cold_then_warm_cpu, fresh_cache),
		cmocka_unit_test_setup(test_cold_then_warm_gpu, fresh_cache),
		cmocka_unit_test_setup(test_reget_same_handle, fresh_cache),
		cmocka_unit_test_setup(test_reget_keeps_trust, fresh_cache),
		cmocka_unit_test_setup(test_model_repo, fresh_cache),
		cmocka_unit_test_setup(test_moved_name, fresh_cache),
		cmocka_unit_test_setup(test_cheap_refusals, fresh_cache),
		cmocka_unit_test_setup(test_ref_recorded_only_when_it_changes, fresh_cache),
		cmocka_unit_test_setup(test_unwritable_record_warns_once_per_call, fresh_cache),
		cmocka_unit_test_setup(test_cdn_warm_up, fresh_cache),
		cmocka_unit_test_setup(test_cdn_hint_ignored, fresh_cache),
		cmocka_unit_test_setup(test_cdn_hint_of_another_user_ignored, fresh_cache),
		cmocka_unit_test_setup(test_cdn_hint_not_written_through_a_link, fresh_cache),
		cmocka_unit_test_setup(test_cdn_warm_up_fails, fresh_cache),
		cmocka_unit_test_setup(test_cdn_warm_up_download, fresh_cache),
	};
	return cmocka_run_group_tests(tests, setup, test_world_teardown);
}
