/* The cache root is the only trusted path (lib/cache.c): a symbolic link
 * planted at the repo folder, blobs/, snapshots/, refs/, .libkernels/ or
 * .locks/ is refused by name, nothing is written outside the root, and no
 * code from behind the link runs (the variant's constructor leaves a
 * marker when it runs). */
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
#include "test_hub.h"
#include "testutil.h"
#include "../tests/data/variants/fixture.h"

#define VARIANT "torch211-cxx11-cpu-x86_64-linux"

static test_hub *hub;
static char *tmp, *marker;
static kernels_system sys_cpu = { .torch_version = 211, .torch_cxx11_abi = 1, .tvm_ffi_version = -1,
				  .backend = "cpu", .cpu = "x86_64", .os = "linux", .no_gpu = 1 };

static int setup(void **state)
{
	(void)state;
	if (!(hub = test_hub_start()) || !(tmp = test_mkdtemp("cache-guard")))
		return -1;
	assert_true(asprintf(&marker, "%s/constructor.ran", tmp) > 0);
	return fx_publish_answer(hub, tmp, "acme/guard", "guard", 1, marker, "--trusted");
}

static int teardown(void **state)
{
	(void)state;
	test_hub_stop(hub);
	test_rmtree(tmp);
	free(tmp);
	free(marker);
	return 0;
}

static void options(kernels_options *o, const char *cache)
{
	kernels_options_init(o, KERNELS_OPTIONS_VERSION);
	o->endpoint = test_hub_endpoint(hub);
	o->cache_dir = cache;
	o->offline = 0;
	o->system = &sys_cpu;
}

/* A complete, self-consistent cache of acme/guard at `cache`. */
static void fill(const char *cache)
{
	kernels_options o;
	kernels_kernel *k = NULL;

	options(&o, cache);
	if (kernels_get(&k, "acme/guard", "v1.0.0", &o) < 0)
		fail_msg("filling %s: %s", cache, kernels_error_last());
	kernels_kernel_close(k);
}

static void refused(const char *cache, int offline, const char *link)
{
	kernels_options o;
	kernels_kernel *k = NULL;

	remove(marker);
	options(&o, cache);
	o.offline = offline;
	assert_int_equal(kernels_get(&k, "acme/guard", "v1.0.0", &o), KERNELS_EUNSAFE);
	assert_null(k);
	if (!strstr(kernels_error_last(), link) || !strstr(kernels_error_last(), "symbolic link"))
		fail_msg("the message does not name %s: %s", link, kernels_error_last());
	assert_int_not_equal(access(marker, F_OK), 0);
}

static char *make_cache(const char *name)
{
	char *cache;
	assert_true(asprintf(&cache, "%s/%s", tmp, name) > 0);
	test_system("rm -rf '%s' && mkdir -p '%s'", cache, cache);
	return cache;
}

/* A repo folder that is a link to a complete cache elsewhere: loading it
 * would run code from outside the cache. */
static void test_planted_repo_folder(void **state)
{
	char *elsewhere = make_cache("elsewhere"), *cache = make_cache("repo-link"), *link;
	(void)state;

	fill(elsewhere);
	assert_true(asprintf(&link, "%s/kernels--acme--guard", cache) > 0);
	assert_int_equal(test_system("ln -s '%s/kernels--acme--guard' '%s'", elsewhere, link), 0);
	refused(cache, 1, link);
	refused(cache, 0, link);
	free(link);
	free(cache);
	free(elsewhere);
}

/* blobs/, snapshots/, refs/, .libkernels/ linked outside an empty cache:
 * a download would write there. */
static void test_planted_subfolders(void **state)
{
	static const char *const subs[] = { "blobs", "snapshots", "refs", ".libkernels" };
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		char *cache = make_cache("sub-link"), *outside = make_cache("outside"), *link;
		assert_true(asprintf(&link, "%s/kernels--acme--guard/%s", cache, subs[i]) > 0);
		assert_int_equal(test_system("mkdir -p '%s/kernels--acme--guard' && ln -s '%s' '%s'", cache, outside, link), 0);
		refused(cache, 0, link);
		assert_int_equal(test_system("[ -z \"$(ls -A '%s')\" ]", outside), 0); /* nothing written there */
		free(link);
		free(outside);
		free(cache);
	}
}

static void test_planted_locks(void **state)
{
	char *cache = make_cache("locks-link"), *outside = make_cache("outside-locks"), *link;
	(void)state;

	assert_true(asprintf(&link, "%s/.locks", cache) > 0);
	assert_int_equal(test_system("ln -s '%s' '%s'", outside, link), 0);
	refused(cache, 0, link);
	assert_int_equal(test_system("[ -z \"$(ls -A '%s')\" ]", outside), 0);
	free(link);
	assert_true(asprintf(&link, "%s/.locks/kernels--acme--guard", cache) > 0);
	assert_int_equal(test_system("rm '%s/.locks' && mkdir '%s/.locks' && ln -s '%s' '%s'", cache, cache, outside, link), 0);
	refused(cache, 0, link);
	assert_int_equal(test_system("[ -z \"$(ls -A '%s')\" ]", outside), 0);
	free(link);
	free(outside);
	free(cache);
}

/* A lock folder this process may not write (an immutable folder: EPERM
 * even for root) reports that errno and the advice, not the ENOENT of the
 * read-only retry. Skipped (not passed) where the file system has no
 * immutable attribute. */
static void test_lock_folder_errno(void **state)
{
	char *cache = make_cache("locks-eperm"), *locks;
	kernels_options o;
	kernels_kernel *k = NULL;
	(void)state;

	assert_true(asprintf(&locks, "%s/.locks/kernels--acme--guard", cache) > 0);
	assert_int_equal(test_system("mkdir -p '%s'", locks), 0);
	if (test_system("chattr +i '%s' 2>/dev/null", locks) != 0) {
		free(locks);
		free(cache);
		skip();
	}
	options(&o, cache);
	assert_int_equal(kernels_get(&k, "acme/guard", "v1.0.0", &o), KERNELS_EIO);
	test_system("chattr -i '%s'", locks);
	if (!strstr(kernels_error_last(), "Operation not permitted") || !strstr(kernels_error_last(), locks) ||
	    !strstr(kernels_error_last(), "writable"))
		fail_msg("the lock error lost its errno, path or advice: %s", kernels_error_last());
	free(locks);
	free(cache);
}

/* The cache root itself may be a link (a cache moved to a bigger disk):
 * that is the caller's choice, and it works. */
static void test_root_may_be_a_link(void **state)
{
	char *real = make_cache("real-root"), *link;
	kernels_options o;
	kernels_kernel *k = NULL;
	(void)state;

	assert_true(asprintf(&link, "%s/root-link", tmp) > 0);
	assert_int_equal(test_system("rm -f '%s' && ln -s '%s' '%s'", link, real, link), 0);
	options(&o, link);
	assert_int_equal(kernels_get(&k, "acme/guard", "v1.0.0", &o), 0);
	kernels_kernel_close(k);
	free(link);
	free(real);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_planted_repo_folder),
		cmocka_unit_test(test_planted_subfolders),
		cmocka_unit_test(test_planted_locks),
		cmocka_unit_test(test_lock_folder_errno),
		cmocka_unit_test(test_root_may_be_a_link),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
