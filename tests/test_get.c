/* kernels_get from end to end, against the local Hub: kernels compiled by
 * the test (one small shared object per variant, answering a known number),
 * published under several variant names and versions, then fetched,
 * verified, dlopen'ed and called for injected system descriptions. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "kernels.h"
#include "memo.h"
#include "swap_walk.h"
#include "test_world.h"
#include "testutil.h"
#include "alloc_fail.h"
#include "opendir_count.h"
#include "../tests/data/variants/fixture.h"

/* Variant -> answer = version * 1000 + this offset. */
static const struct {
	const char *variant;
	int offset;
	const char *backend;
	const char *archs;
} layout[] = {
	{ "torch211-cxx11-cu130-x86_64-linux", 130, "cuda", "8.0,9.0+PTX" },
	{ "torch211-cxx11-cu126-x86_64-linux", 126, "cuda", "8.0,9.0" },
	{ "torch211-cxx11-cpu-x86_64-linux", 1, "cpu", NULL },
	{ "torch29-cxx11-cpu-x86_64-linux", 9, "cpu", NULL },
	{ "tvm-ffi01-cpu-x86_64-linux", 77, "cpu", NULL },
};

/* commit[]: v1.0.0, v1.1.2, v2.0.0 */
static test_world W;

/* One commit's tree: every variant of the layout answering for `version`. */
static char *make_tree(const char *tmp, int version, int minor)
{
	char *root;
	size_t i;

	assert_int_equal(asprintf(&root, "%s/src-%d-%d", tmp, version, minor) > 0, 1);
	for (i = 0; i < sizeof(layout) / sizeof(layout[0]); i++)
		assert_int_equal(fx_answer_variant(root, layout[i].variant, "answer",
						   version * 1000 + minor * 100 + layout[i].offset, layout[i].backend,
						   layout[i].archs, version), 0);
	return root;
}

static void publish(const char *src, const char *refs, int slot)
{
	assert_int_equal(test_world_publish(&W, slot, "--repo acme/answer --dir '%s' %s", src, refs), 0);
}

static int setup(void **state)
{
	char *a, *b, *c;

	assert_int_equal(test_world_start(&W, "get"), 0);
	a = make_tree(W.tmp, 1, 0);
	b = make_tree(W.tmp, 1, 1);
	c = make_tree(W.tmp, 2, 0);
	publish(a, "--branch main --branch v1 --tag v1.0.0 --trusted", 0);
	publish(b, "--branch main --branch v1 --tag v1.1.2", 1);
	publish(c, "--branch main --branch v2 --tag v2.0.0 --parent v1.1.2", 2);
	assert_int_equal(test_hub_publish(W.hub, "--repo acme/answer --target v1 --branch v1"), 0);
	free(a);
	free(b);
	free(c);
	*state = &W;
	return 0;
}

static void options(kernels_options *o, kernels_system *sys)
{
	test_world_options(&W, o, sys);
}

static kernels_system sys_cuda(void)
{
	kernels_system s = { 0 };
	s.torch_version = 211;
	s.torch_cxx11_abi = 1;
	s.backend = "cuda";
	s.backend_version = 1300;
	s.gpu_count = 1;
	s.gpu_archs[0] = 90;
	s.cpu = "x86_64";
	s.os = "linux";
	return s;
}

static kernels_system sys_cpu(int torch)
{
	kernels_system s = TEST_SYS_CPU;
	s.torch_version = torch;
	return s;
}

static void expect(const char *revision, kernels_system sys, const char *variant, int answer)
{
	kernels_options o;
	kernels_kernel *k = NULL;
	int rc;

	options(&o, &sys);
	rc = kernels_get(&k, "acme/answer", revision, &o);
	if (rc < 0)
		fail_msg("kernels_get(%s): %s", revision, kernels_error_last());
	assert_string_equal(kernels_kernel_variant(k), variant);
	assert_string_equal(kernels_kernel_repo(k), "acme/answer");
	assert_int_equal(test_kernel_answer(k), answer);
	kernels_kernel_close(k);
}

static void test_revision_forms_pick_the_right_commit(void **state)
{
	char short_id[8];
	(void)state;

	expect("v1.0.0", sys_cuda(), "torch211-cxx11-cu130-x86_64-linux", 1130);
	expect(">=1.1.2,<2", sys_cuda(), "torch211-cxx11-cu130-x86_64-linux", 1230);
	expect("~=1.0", sys_cuda(), "torch211-cxx11-cu130-x86_64-linux", 1230);
	expect("1", sys_cuda(), "torch211-cxx11-cu130-x86_64-linux", 1230);
	expect("2", sys_cuda(), "torch211-cxx11-cu130-x86_64-linux", 2130);
	expect("main", sys_cuda(), "torch211-cxx11-cu130-x86_64-linux", 2130);
	expect(W.commit[0], sys_cuda(), "torch211-cxx11-cu130-x86_64-linux", 1130);
	memcpy(short_id, W.commit[1], 7);
	short_id[7] = '\0';
	expect(short_id, sys_cuda(), "torch211-cxx11-cu130-x86_64-linux", 1230);
}

static void test_system_picks_the_variant(void **state)
{
	kernels_system older_cuda = sys_cuda(), tvm = sys_cpu(0), old_gpu = sys_cuda();
	(void)state;

	expect("v2.0.0", sys_cpu(211), "torch211-cxx11-cpu-x86_64-linux", 2001);
	expect("v2.0.0", sys_cpu(209), "torch29-cxx11-cpu-x86_64-linux", 2009);
	older_cuda.backend_version = 1208;
	expect("v2.0.0", older_cuda, "torch211-cxx11-cu126-x86_64-linux", 2126);
	tvm.tvm_ffi_version = 1;
	expect("v2.0.0", tvm, "tvm-ffi01-cpu-x86_64-linux", 2077);
	/* An sm_75 GPU: neither CUDA build covers it (8.0 and up), so the arch
	 * check rejects both and nothing fits. */
	old_gpu.gpu_archs[0] = 75;
	{
		kernels_options o;
		kernels_kernel *k = NULL;
		options(&o, &old_gpu);
		assert_int_equal(kernels_get(&k, "acme/answer", "v2.0.0", &o), KERNELS_ENOMATCH);
		assert_null(k);
		assert_non_null(strstr(kernels_error_last(), "torch211-cxx11-cu130-x86_64-linux"));
		assert_non_null(strstr(kernels_error_last(), "7.5"));
	}
}

static void test_trace_and_has_kernel(void **state)
{
	kernels_options o;
	kernels_system s = sys_cpu(211), none = sys_cpu(208);
	kernels_variant_trace *t = NULL;
	size_t i, accepted = 0;
	(void)state;

	options(&o, &s);
	assert_int_equal(kernels_get_variants(&t, "acme/answer", "v1.0.0", &o), 0);
	assert_int_equal(kernels_variant_trace_count(t), 5);
	assert_string_equal(kernels_variant_trace_chosen(t), "torch211-cxx11-cpu-x86_64-linux");
	for (i = 0; i < kernels_variant_trace_count(t); i++) {
		accepted += kernels_variant_trace_accepted_at(t, i) != 0;
		if (!kernels_variant_trace_accepted_at(t, i))
			assert_true(strlen(kernels_variant_trace_reason_at(t, i)) > 0);
	}
	assert_int_equal(accepted, 1);
	kernels_variant_trace_free(t);
	assert_int_equal(kernels_has_kernel("acme/answer", "v1.0.0", &o), 1);
	options(&o, &none);
	assert_int_equal(kernels_has_kernel("acme/answer", "v1.0.0", &o), 0);
	/* Listing variants downloads no variant files; has_kernel reads the
	 * chosen variant's metadata.json (its kernel-depends), as 0.17's does. */
	assert_int_equal(test_hub_log_count(W.hub, "GET", "/resolve/"),
			 test_hub_log_count(W.hub, "GET", "/metadata.json"));
}

static void test_second_get_is_served_from_cache_and_offline(void **state)
{
	kernels_options o;
	kernels_system s = sys_cpu(211);
	kernels_kernel *a = NULL, *b = NULL;
	kernels_get_stats st = KERNELS_GET_STATS_INIT;
	(void)state;

	options(&o, &s);
	assert_int_equal(kernels_get_ext(&a, &st, "acme/answer", ">=1,<2", &o), 0);
	assert_int_equal(st.from_cache, 0);
	assert_string_equal(st.commit, W.commit[1]);
	assert_true(test_hub_log_count(W.hub, "GET", "/resolve/") > 0);

	test_hub_log_clear(W.hub);
	assert_int_equal(kernels_get_ext(&b, &st, "acme/answer", ">=1,<2", &o), 0);
	assert_int_equal(st.from_cache, 1);
	assert_ptr_equal(a, b); /* same variant: same handle, one more reference */
	assert_int_equal(test_hub_log_count(W.hub, "GET", "/resolve/"), 0);
	kernels_kernel_close(b);

	test_hub_log_clear(W.hub);
	o.offline = 1;
	/* The cache guard's last walk: the plan runs it once, and the stages
	 * after it (status file, download, load) are told so. */
	test_walk_count(".locks/kernels--acme--answer");
	assert_int_equal(kernels_get_ext(&b, &st, "acme/answer", ">=1,<2", &o), 0);
	assert_int_equal(test_walk_counted(), 1);
	test_walk_count(NULL);
	assert_ptr_equal(a, b);
	assert_int_equal(test_kernel_answer(b), 1101);
	kernels_kernel_close(b);
	kernels_kernel_close(a);
	{
		char *log = test_hub_log(W.hub);
		assert_string_equal(log, "[]");
		free(log);
	}
}

/* Offline, a variant of which the arch check cached only metadata.json is
 * not in the cache: the loader's walk of it says so (the download stage
 * leaves it that walk). */
static void test_offline_metadata_only_variant_is_not_cached(void **state)
{
	kernels_options o;
	kernels_system s = sys_cuda();
	kernels_kernel *k = NULL;
	(void)state;

	options(&o, &s);
	assert_int_equal(kernels_has_kernel("acme/answer", "v1.0.0", &o), 1);
	o.offline = 1;
	assert_int_equal(kernels_get(&k, "acme/answer", "v1.0.0", &o), KERNELS_EOFFLINE);
	assert_null(k);
	assert_non_null(strstr(kernels_error_last(), "torch211-cxx11-cu130-x86_64-linux"));
	assert_non_null(strstr(kernels_error_last(), "only its metadata.json"));
}

/* Offline, a cached variant whose module's blob is gone is not in the
 * cache (the loader's walk, the only one, says so); nothing is loaded. */
static void test_offline_missing_blob_is_not_cached(void **state)
{
	static const char *variant[] = { "torch29-cxx11-cpu-x86_64-linux" };
	kernels_options o;
	kernels_system s = sys_cpu(209);
	kernels_snapshot *snap = NULL;
	kernels_kernel *k = NULL;
	(void)state;

	options(&o, &s);
	assert_int_equal(kernels_download(&snap, "acme/answer", W.commit[2], variant, 1, &o), 0);
	assert_int_equal(test_system("rm \"$(readlink -f %s/build/%s/*.so)\"", kernels_snapshot_path(snap), variant[0]),
			 0);
	kernels_snapshot_free(snap);
	assert_int_equal(kernels_has_kernel("acme/answer", W.commit[2], &o), 1); /* the publisher's verdict kept */
	o.offline = 1;
	assert_int_equal(kernels_get(&k, "acme/answer", W.commit[2], &o), KERNELS_EOFFLINE);
	assert_null(k);
	assert_non_null(strstr(kernels_error_last(), "is not in the cache (its link points at a missing blob)"));
}

/* kernels_get offline fails with `by` in its message (what made it
 * offline, and so what to undo) and without `not` (what did not). */
static void expect_offline_by(const char *rev, const kernels_options *o, const char *by, const char *not)
{
	kernels_kernel *k = NULL;

	assert_int_equal(kernels_get(&k, "acme/answer", rev, o), KERNELS_EOFFLINE);
	assert_null(k);
	assert_non_null(strstr(kernels_error_last(), by));
	assert_null(strstr(kernels_error_last(), not));
}

/* Offline, what the cache lacks is said with the way online: unset the
 * variable that made the call offline (TRANSFORMERS_OFFLINE, when
 * HF_HUB_OFFLINE is unset, as huggingface_hub reads them), or drop the
 * option. Each stage that can refuse: the revision, a variant's download,
 * a variant of which only metadata.json is cached. */
static void test_offline_says_what_made_it_so(void **state)
{
	static const char *variant[] = { "torch29-cxx11-cpu-x86_64-linux" };
	kernels_options o;
	kernels_system s = sys_cuda(), cpu = sys_cpu(209);
	kernels_snapshot *snap = NULL;
	(void)state;

	options(&o, &s);
	assert_int_equal(kernels_has_kernel("acme/answer", "v1.0.0", &o), 1); /* metadata.json of one variant */
	o.offline = KERNELS_FROM_ENV;
	unsetenv("HF_HUB_OFFLINE");
	setenv("TRANSFORMERS_OFFLINE", "1", 1);
	expect_offline_by("v0.9", &o, "unset TRANSFORMERS_OFFLINE", "HF_HUB_OFFLINE");
	expect_offline_by("v1.0.0", &o, "unset TRANSFORMERS_OFFLINE", "HF_HUB_OFFLINE");
	o.system = &cpu;
	assert_int_equal(kernels_download(&snap, "acme/answer", W.commit[2], variant, 1, &o), KERNELS_EOFFLINE);
	assert_non_null(strstr(kernels_error_last(), "unset TRANSFORMERS_OFFLINE"));
	assert_null(strstr(kernels_error_last(), "HF_HUB_OFFLINE"));
	o.system = &s;

	setenv("HF_HUB_OFFLINE", "1", 1);
	expect_offline_by("v0.9", &o, "unset HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE");
	expect_offline_by("v1.0.0", &o, "unset HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE");
	unsetenv("HF_HUB_OFFLINE");
	unsetenv("TRANSFORMERS_OFFLINE");
	o.offline = 1;
	expect_offline_by("v0.9", &o, "kernels_options.offline", "HF_HUB_OFFLINE");
	expect_offline_by("v1.0.0", &o, "kernels_options.offline", "HF_HUB_OFFLINE");
}

/* A cached variant is loaded without asking the Hub for its files; one
 * that an interrupted run left incomplete is repaired by the download. */
static void test_cached_variant_skips_listing_and_repairs(void **state)
{
	kernels_options o;
	kernels_system s = sys_cpu(209);
	kernels_kernel *k = NULL;
	(void)state;

	options(&o, &s);
	assert_int_equal(kernels_get(&k, "acme/answer", "v1.0.0", &o), 0);
	kernels_kernel_close(k);
	test_hub_log_clear(W.hub);
	assert_int_equal(kernels_get(&k, "acme/answer", "v1.0.0", &o), 0);
	kernels_kernel_close(k);
	assert_int_equal(test_hub_log_count(W.hub, "GET", "build/torch29-cxx11-cpu-x86_64-linux"), 0);

	assert_int_equal(test_system("rm '%s'/kernels--acme--answer/snapshots/%s/build/torch29-cxx11-cpu-x86_64-linux/*.so",
				     W.cache, W.commit[0]), 0);
	assert_int_equal(kernels_get(&k, "acme/answer", "v1.0.0", &o), 0);
	assert_int_equal(test_kernel_answer(k), 1009);
	kernels_kernel_close(k);
}

/* A cached blob damaged in place (same size: bit rot, another writer of
 * a shared cache) fails the load; online, the get then hashes the
 * variant's blobs against their names (the Hub's hashes), fetches the one
 * that does not match again, and loads. So does a get after the variant's
 * folder was deleted, as the message says to: the fetch reuses a blob by
 * its size. */
static void damage(const char *so)
{
	assert_int_equal(test_system("real=$(readlink -f '%s') && chmod u+w \"$real\" && "
				     "printf 'X' | dd of=\"$real\" bs=1 seek=100 conv=notrunc 2>/dev/null", so), 0);
}

static void test_damaged_blob_is_fetched_again(void **state)
{
	kernels_options o;
	kernels_system s = sys_cpu(209);
	kernels_kernel *k = NULL;
	char *so, *variant;
	int i;
	(void)state;

	options(&o, &s);
	assert_int_equal(kernels_get(&k, "acme/answer", "v1.0.0", &o), 0);
	assert_true(asprintf(&variant, "%s/kernels--acme--answer/snapshots/%s/build/torch29-cxx11-cpu-x86_64-linux",
			     W.cache, W.commit[0]) > 0);
	assert_true(asprintf(&so, "%s/%s", variant, strrchr(kernels_kernel_library(k), '/') + 1) > 0);
	kernels_kernel_close(k);
	for (i = 0; i < 2; i++) {
		damage(so);
		if (i == 1)
			assert_int_equal(test_system("rm -r '%s'", variant), 0);
		test_hub_log_clear(W.hub);
		if (kernels_get(&k, "acme/answer", "v1.0.0", &o) < 0)
			fail_msg("kernels_get (%s): %s", i ? "the folder deleted" : "as it is", kernels_error_last());
		assert_int_equal(test_kernel_answer(k), 1009);
		kernels_kernel_close(k);
		assert_int_equal(test_hub_log_count(W.hub, "GET", ".so"), 1);
	}
	free(so);
	free(variant);
}

/* A listing record ({repo}/.libkernels/trees/) that is whole and well
 * formed but lacks a file of the variant: the fetch leaves it out and the
 * load finds it missing; the get then asks the Hub for the listing again,
 * fetches the file and loads. */
static void test_record_lacking_a_file(void **state)
{
	kernels_options o;
	kernels_system s = sys_cpu(209);
	kernels_kernel *k = NULL;
	char *repo;
	(void)state;

	options(&o, &s);
	assert_int_equal(kernels_get(&k, "acme/answer", "v1.0.0", &o), 0);
	kernels_kernel_close(k);
	assert_true(asprintf(&repo, "%s/kernels--acme--answer", W.cache) > 0);
	assert_int_equal(test_system("f='%s/.libkernels/trees/%s/build.tsv' && "
				     "sed -i '/torch29-cxx11-cpu-x86_64-linux\\/_answer_1009.abi3.so$/d' \"$f\" && "
				     "n=$(($(wc -l < \"$f\") - 2)) && sed -i \"s/^end .*/end $n/\" \"$f\" && "
				     "rm -r '%s/snapshots/%s/build/torch29-cxx11-cpu-x86_64-linux'",
				     repo, W.commit[0], repo, W.commit[0]), 0);
	if (kernels_get(&k, "acme/answer", "v1.0.0", &o) < 0)
		fail_msg("kernels_get: %s", kernels_error_last());
	assert_int_equal(test_kernel_answer(k), 1009);
	kernels_kernel_close(k);
	assert_int_equal(test_system("grep -q '_answer_1009.abi3.so$' '%s/.libkernels/trees/%s/build.tsv'", repo,
				     W.commit[0]), 0);
	/* One lacking the only variant that fits: before none is said to
	 * fit, the Hub is asked. */
	assert_int_equal(test_system("f='%s/.libkernels/trees/%s/build.tsv' && "
				     "sed -i '/ build\\/torch29-cxx11-cpu-x86_64-linux/d' \"$f\" && "
				     "n=$(($(wc -l < \"$f\") - 2)) && sed -i \"s/^end .*/end $n/\" \"$f\"",
				     repo, W.commit[0]), 0);
	if (kernels_get(&k, "acme/answer", "v1.0.0", &o) < 0)
		fail_msg("kernels_get: %s", kernels_error_last());
	assert_int_equal(test_kernel_answer(k), 1009);
	kernels_kernel_close(k);
	free(repo);
}

/* How often an online kernels_get of `revision` opens `variant`'s folder
 * of commit `commit` as a folder to list it. */
static int variant_listings(kernels_system s, const char *revision, int commit, const char *variant)
{
	kernels_options o;
	kernels_kernel *k = NULL;
	char *folder;
	int n;

	options(&o, &s);
	assert_int_equal(asprintf(&folder, "/snapshots/%s/build/%s", W.commit[commit], variant) > 0, 1);
	opendir_count(folder);
	if (kernels_get(&k, "acme/answer", revision, &o) < 0)
		fail_msg("kernels_get(%s): %s", revision, kernels_error_last());
	n = opendir_counted();
	opendir_count(NULL);
	assert_string_equal(kernels_kernel_variant(k), variant);
	kernels_kernel_close(k);
	free(folder);
	return n;
}

/* The chosen variant's folder is listed twice by a get: once by the look
 * at build/ that decides on the CDN's connection (its answer reused to
 * tell a cached variant from one with only metadata.json), once by the
 * verification, which must see the folder as it is when it checks. */
static void test_get_lists_the_variant_twice(void **state)
{
	kernels_system cpu = sys_cpu(209), cuda = sys_cuda();
	kernels_options o;
	(void)state;

	/* cached, its handle closed: loaded from the cache, verified again */
	assert_int_equal(variant_listings(cpu, "v1.0.0", 0, "torch29-cxx11-cpu-x86_64-linux"), 1);
	assert_int_equal(variant_listings(cpu, "v1.0.0", 0, "torch29-cxx11-cpu-x86_64-linux"), 2);
	/* only its metadata.json cached (the arch check's): downloaded */
	options(&o, &cuda);
	assert_int_equal(kernels_has_kernel("acme/answer", "v1.0.0", &o), 1);
	assert_int_equal(variant_listings(cuda, "v1.0.0", 0, "torch211-cxx11-cu130-x86_64-linux"), 2);
}

/* The Hub down: what the cache holds still loads (with a warning), and
 * what it does not hold is a clear network error. */
static void test_hub_down_falls_back_to_the_cache(void **state)
{
	kernels_options o;
	kernels_system s = sys_cpu(211);
	kernels_kernel *k = NULL;
	(void)state;

	options(&o, &s);
	assert_int_equal(kernels_get(&k, "acme/answer", "v1.0.0", &o), 0);
	kernels_kernel_close(k);

	/* The same Hub, now resetting every connection: the cache answers, the
	 * publisher trusted by the verdict recorded when it was fetched. */
	assert_int_equal(test_hub_fault(W.hub, "{\"path\": \"/\", \"mode\": \"reset\", \"count\": -1}"), 0);
	o.max_retries = 0;
	assert_int_equal(kernels_get(&k, "acme/answer", "v1.0.0", &o), 0);
	assert_int_equal(test_kernel_answer(k), 1001);
	kernels_kernel_close(k);
	assert_int_equal(kernels_has_kernel("acme/answer", "v1.0.0", &o), 1);
	assert_int_equal(kernels_get(&k, "acme/answer", "v2.0.0", &o), KERNELS_ENETWORK);
	assert_non_null(strstr(kernels_error_last(), "cannot be reached"));
	assert_null(k);
	test_hub_faults_clear(W.hub);

	/* Another endpoint, unreachable: the cache answers on the verdict of
	 * the Hub that served it. */
	o.endpoint = "http://127.0.0.1:9"; /* nothing listens there */
	assert_int_equal(kernels_get(&k, "acme/answer", "v1.0.0", &o), 0);
	assert_int_equal(test_kernel_answer(k), 1001);
	kernels_kernel_close(k);
}

static void test_two_commits_side_by_side(void **state)
{
	kernels_options o;
	kernels_system s = sys_cpu(211);
	kernels_kernel *one = NULL, *two = NULL;
	(void)state;

	options(&o, &s);
	assert_int_equal(kernels_get(&one, "acme/answer", "v1.0.0", &o), 0);
	assert_int_equal(kernels_get(&two, "acme/answer", "v2.0.0", &o), 0);
	assert_ptr_not_equal(one, two);
	assert_int_equal(test_kernel_answer(one), 1001);
	assert_int_equal(test_kernel_answer(two), 2001);
	kernels_kernel_close(one);
	assert_int_equal(test_kernel_answer(two), 2001);
	assert_string_equal(kernels_kernel_commit(two), W.commit[2]);
	kernels_kernel_close(two);
}

static void test_untrusted_publisher_is_refused(void **state)
{
	kernels_options o;
	kernels_system s = sys_cpu(211);
	kernels_kernel *k = NULL;
	char *src = make_tree(W.tmp, 5, 0);
	(void)state;

	assert_int_equal(test_hub_publish(W.hub, "--repo shady/answer --dir '%s' --tag v5.0.0 --untrusted", src), 0);
	options(&o, &s);
	assert_int_equal(kernels_get(&k, "shady/answer", "v5.0.0", &o), KERNELS_EUNTRUSTED);
	assert_non_null(strstr(kernels_error_last(), "trust_remote_code"));
	assert_int_equal(test_hub_log_count(W.hub, "GET", "/resolve/"), 0);

	o.trusted_orgs = "other, shady/answer ,x";
	assert_int_equal(kernels_get(&k, "shady/answer", "v5.0.0", &o), 0);
	assert_int_equal(test_kernel_answer(k), 5001);
	kernels_kernel_close(k);
	free(src);
}

/* A mirror that accepts connections and never answers: a listening socket
 * nobody accepts from (the kernel completes the handshakes and takes the
 * requests). Its URL into `url`; the socket, to close. */
static int silent_endpoint(char *url, size_t n)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(s >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s, 64), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&a, &len), 0);
	snprintf(url, n, "http://127.0.0.1:%d", ntohs(a.sin_port));
	return s;
}

/* How often `needle` occurs in `hay`. */
static int occurrences(const char *hay, const char *needle)
{
	int n = 0;

	for (; (hay = strstr(hay, needle)); hay += strlen(needle))
		n++;
	return n;
}

/* A silent first endpoint takes its share of the call's deadline, not all
 * of it: with the default deadline the live endpoint after it is asked
 * (its request log shows it) and answers. */
static void test_silent_first_endpoint_hands_over(void **state)
{
	kernels_system sys = sys_cpu(211);
	kernels_options o;
	kernels_kernel *k = NULL;
	char hung[64], *list;
	int s = silent_endpoint(hung, sizeof(hung));
	(void)state;

	options(&o, &sys);
	assert_true(asprintf(&list, "%s,%s", hung, test_hub_endpoint(W.hub)) > 0);
	o.endpoints = list;
	if (kernels_get(&k, "acme/answer", "v1.0.0", &o) != 0)
		fail_msg("%s", kernels_error_last());
	assert_int_equal(test_kernel_answer(k), 1001);
	assert_true(test_hub_log_count(W.hub, "GET", "/info/refs") >= 1);
	assert_true(test_hub_log_count(W.hub, "GET", "/resolve/") >= 1);
	kernels_kernel_close(k);
	free(list);
	close(s);
}

/* Every endpoint silent: one message that names each endpoint's failure
 * once, in the order tried, whole. */
static void test_all_endpoints_silent_said_once_each(void **state)
{
	kernels_system sys = sys_cpu(211);
	kernels_options o;
	kernels_kernel *k = NULL;
	char a[64], b[64], first[96], second[96];
	const char *msg, *p1, *p2;
	int sa = silent_endpoint(a, sizeof(a)), sb = silent_endpoint(b, sizeof(b)), rc;
	char *list;
	(void)state;

	options(&o, &sys);
	o.deadline_ms = 3000;
	assert_true(asprintf(&list, "%s,%s", a, b) > 0);
	o.endpoints = list;
	rc = kernels_get(&k, "acme/answer", "v1.0.0", &o);
	assert_true(rc < 0);
	assert_null(k);
	msg = kernels_error_last();
	snprintf(first, sizeof(first), "(1) %s: ", a);
	snprintf(second, sizeof(second), "(2) %s: ", b);
	p1 = strstr(msg, first);
	p2 = strstr(msg, second);
	if (!p1 || !p2 || p2 < p1 || occurrences(msg, first) != 1 || occurrences(msg, second) != 1 ||
	    occurrences(msg, "(3) ") || strstr(msg, "tried "))
		fail_msg("not each endpoint once, in order: %s", msg);
	assert_non_null(strstr(msg, "first-byte budget"));
	free(list);
	close(sa);
	close(sb);
}

static void test_redirect_is_followed(void **state)
{
	kernels_options o;
	kernels_system s = sys_cpu(211);
	kernels_kernel *k = NULL;
	(void)state;

	assert_int_equal(test_hub_publish(W.hub, "--repo acme/old-name --text 'kernel-status.toml=kind = \"redirect\"\n"
				     "destination = \"acme/answer\"\nrevision = \"v2\"\n' --branch main --trusted"), 0);
	options(&o, &s);
	/* A listing of the commit's top folder that names nothing (not even
	 * build/) proves no file absent: kernel-status.toml is asked for
	 * itself, and no absence is marked to skip it next time. */
	assert_int_equal(test_hub_fault(W.hub, "{\"regex\": \"/tree/[0-9a-f]{40}$\", \"mode\": \"200\", \"body\": []}"),
			 0);
	if (kernels_get(&k, "acme/old-name", "main", &o) < 0)
		fail_msg("kernel-status.toml not followed after a listing naming nothing: %s", kernels_error_last());
	assert_string_equal(kernels_kernel_repo(k), "acme/answer");
	kernels_kernel_close(k);
	test_hub_faults_clear(W.hub);
	assert_int_equal(test_system("test ! -e '%s/kernels--acme--old-name/.no_exist'", W.cache), 0);
	assert_int_equal(kernels_get(&k, "acme/old-name", "main", &o), 0);
	assert_string_equal(kernels_kernel_repo(k), "acme/answer");
	assert_int_equal(test_kernel_answer(k), 2001);
	kernels_kernel_close(k);
}

/* A listing that plants a file in the variant (the Hub's honest listing
 * and one more file, served with the bytes it names): the digest check
 * refuses the variant, and says to delete its folder and fetch it again.
 * That works against the honest Hub: the listing is not kept to plant the
 * file again from its cached blob. */
static void test_planted_file_does_not_outlive_its_listing(void **state)
{
	static const char *const v = "torch29-cxx11-cpu-x86_64-linux";
	kernels_options o;
	kernels_system s = sys_cpu(209);
	kernels_kernel *k = NULL;
	(void)state;

	assert_int_equal(test_world_plant_file(&W, "acme/answer", W.commit[0], v), 0);
	options(&o, &s);
	assert_int_equal(kernels_get(&k, "acme/answer", "v1.0.0", &o), KERNELS_EINTEGRITY);
	assert_null(k);
	assert_non_null(strstr(kernels_error_last(), "delete the folder"));
	test_hub_faults_clear(W.hub);
	assert_int_equal(test_system("rm -r '%s/kernels--acme--answer/snapshots/%s/build/%s'", W.cache, W.commit[0], v), 0);
	if (kernels_get(&k, "acme/answer", "v1.0.0", &o) < 0)
		fail_msg("the variant's folder deleted, the honest Hub's get: %s", kernels_error_last());
	assert_int_equal(test_kernel_answer(k), 1009);
	kernels_kernel_close(k);
}

static void test_bad_input_is_refused_and_cache_untouched(void **state)
{
	kernels_options o;
	kernels_system s = sys_cpu(211);
	kernels_kernel *k = NULL;
	(void)state;

	options(&o, &s);
	assert_int_equal(kernels_get(&k, "acme/../x", "main", &o), KERNELS_EINVAL);
	assert_int_equal(kernels_get(&k, "acme/answer", NULL, &o), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "pin"));
	assert_int_equal(kernels_get(&k, "acme/answer", ">=9", &o), KERNELS_ENOMATCH);
	assert_non_null(strstr(kernels_error_last(), "v2.0.0"));
	assert_int_equal(kernels_get(&k, "acme/answer", ">=1,,<", &o), KERNELS_EPARSE);
	assert_int_equal(kernels_get(NULL, "acme/answer", "main", &o), KERNELS_EINVAL);
	assert_null(k);
	assert_int_equal(test_system("test -z \"$(find '%s' -path '*/blobs/*' -print -quit)\"", W.cache), 0);
}

static void test_local_kernels_override(void **state)
{
	kernels_options o;
	kernels_system s = sys_cpu(209);
	kernels_kernel *k = NULL;
	char *src = make_tree(W.tmp, 7, 0), *env;
	(void)state;

	assert_int_equal(asprintf(&env, "other/x=/nowhere:acme/local=%s", src) > 0, 1);
	setenv("LOCAL_KERNELS", env, 1);
	options(&o, &s);
	o.endpoint = "http://127.0.0.1:9"; /* no network is needed */
	assert_int_equal(kernels_get(&k, "acme/local", "main", &o), 0);
	assert_string_equal(kernels_kernel_variant(k), "torch29-cxx11-cpu-x86_64-linux");
	assert_int_equal(test_kernel_answer(k), 7009);
	kernels_kernel_close(k);
	/* The id is checked at the door, before LOCAL_KERNELS is read: a name
	 * the Hub would refuse is refused though an entry names it. */
	free(env);
	assert_int_equal(asprintf(&env, "acme/-local=%s", src) > 0, 1);
	setenv("LOCAL_KERNELS", env, 1);
	assert_int_equal(kernels_get(&k, "acme/-local", "main", &o), KERNELS_EINVAL);
	assert_null(k);
	assert_non_null(strstr(kernels_error_last(), "'acme/-local' is not valid"));
	unsetenv("LOCAL_KERNELS");

	assert_int_equal(kernels_load_local(&k, src, &o), 0);
	assert_int_equal(test_kernel_answer(k), 7009);
	kernels_kernel_close(k);
	free(env);
	free(src);
}

#define THREADS 16

static void *get_in_thread(void *arg)
{
	kernels_options o;
	kernels_system s = sys_cpu(211);
	kernels_kernel *k = NULL;
	intptr_t ok;

	options(&o, &s);
	ok = kernels_get(&k, "acme/answer", (const char *)arg, &o) == 0 &&
	     ((int (*)(void))kernels_symbol(k, "kernel_answer"))() == (!strcmp(arg, "v2.0.0") ? 2001 : 1001);
	if (!ok)
		fprintf(stderr, "thread failed: %s\n", kernels_error_last());
	kernels_kernel_close(k);
	return (void *)ok;
}

static int fx_metadata_dir_omit_digest(const char *src)
{
	char *dir;
	int rc;
	if (asprintf(&dir, "%s/build/torch211-cxx11-cpu-x86_64-linux", src) < 0)
		return -1;
	rc = fx_metadata(dir, "--name old --id _old_4242 --backend cpu --omit digest");
	free(dir);
	return rc;
}

/* One call of an allocation-failure sweep, with the n-th allocation made
 * to fail: its code, *fired whether that allocation happened, and when it
 * answered, the local tree's answer checked. */
typedef int (*local_call)(const kernels_options *o, long n, int *fired);

static int local_variants_call(const kernels_options *o, long n, int *fired)
{
	kernels_variant_trace *t = NULL;
	int rc;

	alloc_fail_nth(n);
	rc = kernels_get_variants(&t, "acme/answer", "main", o);
	*fired = alloc_fail_fired();
	alloc_fail_nth(0);
	if (rc < 0) {
		assert_null(t);
		return rc;
	}
	assert_non_null(kernels_variant_trace_chosen(t));
	assert_string_equal(kernels_variant_trace_chosen(t), "torch29-cxx11-cpu-x86_64-linux");
	kernels_variant_trace_free(t);
	return 0;
}

static int local_get_call(const kernels_options *o, long n, int *fired)
{
	kernels_kernel *k = NULL;
	int rc;

	alloc_fail_nth(n);
	rc = kernels_get(&k, "acme/answer", "main", o);
	*fired = alloc_fail_fired();
	alloc_fail_nth(0);
	if (rc < 0) {
		assert_null(k);
		return rc;
	}
	assert_int_equal(test_kernel_answer(k), 9009);
	kernels_kernel_close(k);
	return 0;
}

/* LOCAL_KERNELS names the repo (tree number `tree`) and every allocation
 * of the call is made to fail in turn: each time it either reports
 * KERNELS_ENOMEM or answers from the local tree. A lost LOCAL_KERNELS
 * never turns into a Hub request. */
static void sweep_allocation_failures(int tree, local_call call)
{
	kernels_options o;
	kernels_system s = sys_cpu(209);
	char *src = make_tree(W.tmp, tree, 0), *env;
	long n, failed = 0;

	assert_int_equal(asprintf(&env, "acme/answer=%s", src) > 0, 1);
	setenv("LOCAL_KERNELS", env, 1);
	options(&o, &s);
	test_hub_log_clear(W.hub);
	for (n = 1;; n++) {
		int rc, fired;

		kernels_error_clear();
		rc = call(&o, n, &fired);
		if (rc < 0) {
			assert_true(fired);
			assert_int_equal(rc, KERNELS_ENOMEM);
			failed++;
			continue;
		}
		if (!fired)
			break; /* past the last allocation */
	}
	assert_true(failed >= 10);
	assert_int_equal(test_hub_log_count(W.hub, NULL, NULL), 0);
	unsetenv("LOCAL_KERNELS");
	free(env);
	free(src);
}

static void test_local_kernels_survive_allocation_failures(void **state)
{
	(void)state;
	sweep_allocation_failures(8, local_variants_call);
}

/* The same for kernels_get itself: ENOMEM, or the local tree's kernel
 * loaded and answering, never a Hub request. */
static void test_local_get_survives_allocation_failures(void **state)
{
	(void)state;
	sweep_allocation_failures(9, local_get_call);
}

/* acme/<name>@v1.0.0: a CPU variant answering `answer` whose metadata.json
 * has no digest, published and fetched once (kernels_get, online). */
static void publish_without_digest(const char *name, int answer, kernels_options *o, kernels_system *s)
{
	kernels_kernel *k = NULL;
	char *src, repo[64];

	snprintf(repo, sizeof(repo), "acme/%s", name);
	assert_true(asprintf(&src, "%s/src-nodigest-%s", W.tmp, name) > 0);
	assert_int_equal(fx_answer_variant(src, "torch211-cxx11-cpu-x86_64-linux", name, answer, "cpu", NULL, 1), 0);
	assert_int_equal(fx_metadata_dir_omit_digest(src), 0);
	assert_int_equal(test_hub_publish(W.hub, "--repo %s --dir '%s' --branch main --tag v1.0.0 --trusted", repo, src),
			 0);
	options(o, s);
	if (kernels_get(&k, repo, "v1.0.0", o) < 0)
		fail_msg("kernels_get: %s", kernels_error_last());
	assert_int_equal(test_kernel_answer(k), answer);
	assert_int_equal(test_system("! grep -q digest '%s/metadata.json'", kernels_kernel_path(k)), 0);
	kernels_kernel_close(k);
	free(src);
}

/* A cache whose own path has a folder named "snapshots" (a ZFS or backup
 * mount, /srv/snapshots/hf): each cached variant is found in its repo by
 * the first snapshots/<commit>/ below a repo folder's name, not by the
 * first "/snapshots/" of its path. */
static void test_cache_under_a_snapshots_folder(void **state)
{
	kernels_options o;
	kernels_system s = sys_cpu(211);
	kernels_kernel *k = NULL;
	char *cache;
	int pass;
	(void)state;

	publish_without_digest("snap", 4343, &o, &s);
	assert_true(asprintf(&cache, "%s/snapshots/hub", W.tmp) > 0);
	assert_int_equal(test_system("mkdir -p '%s'", cache), 0);
	o.cache_dir = cache;
	for (pass = 0; pass < 2; pass++) {
		o.offline = pass;
		if (kernels_get(&k, "acme/snap", "v1.0.0", &o) < 0)
			fail_msg("kernels_get (%s): %s", pass ? "offline" : "online", kernels_error_last());
		assert_int_equal(test_kernel_answer(k), 4343);
		if (kernels_verify_variant(NULL, kernels_kernel_path(k), &o) < 0)
			fail_msg("kernels_verify_variant: %s", kernels_error_last());
		kernels_kernel_close(k);
		k = NULL;
	}
	free(cache);
}

/* A build from before metadata.json carried a digest (Python kernels 0.17
 * loads those): each cached file is proven by the hash the Hub listed for
 * its blob, and a tampered blob is refused with the file named. */
static void test_variant_without_digest(void **state)
{
	kernels_options o;
	kernels_system s = sys_cpu(211);
	kernels_kernel *k = NULL;
	char *so;
	(void)state;

	publish_without_digest("old", 4242, &o, &s);

	/* Tamper the cached module's blob (same size): refused before dlopen. */
	assert_true(asprintf(&so, "%s/kernels--acme--old/snapshots/%s/build/torch211-cxx11-cpu-x86_64-linux/_old_4242.abi3.so",
			     W.cache, test_hub_last_commit(W.hub)) > 0);
	assert_int_equal(test_system("real=$(readlink -f '%s') && chmod u+w \"$real\" && "
				     "printf 'X' | dd of=\"$real\" bs=1 seek=100 conv=notrunc 2>/dev/null", so), 0);
	o.offline = 1;
	assert_int_equal(kernels_get(&k, "acme/old", "v1.0.0", &o), KERNELS_EINTEGRITY);
	assert_null(k);
	assert_non_null(strstr(kernels_error_last(), "_old_4242.abi3.so"));
	assert_non_null(strstr(kernels_error_last(), "does not match the hash it was downloaded under"));
	free(so);
}

/* The same with huggingface_hub 2.4's shared blob store, where a blob is
 * named by its Xet hash, not by the hash of its bytes: each file is proven
 * by the hash the Hub listed for its path, and a changed byte is refused. */
static void test_variant_without_digest_in_shared_store(void **state)
{
	kernels_options o;
	kernels_system s = sys_cpu(211);
	kernels_kernel *k = NULL;
	char *so;
	(void)state;

	publish_without_digest("olds", 4343, &o, &s);
	assert_int_equal(test_share_blobs(W.cache, "kernels--acme--olds"), 0);
	kernels__memo_clear();
	o.offline = 1;
	if (kernels_get(&k, "acme/olds", "v1.0.0", &o) < 0)
		fail_msg("offline, from the shared store: %s", kernels_error_last());
	assert_int_equal(test_kernel_answer(k), 4343);
	kernels_kernel_close(k);

	assert_true(asprintf(&so, "%s/kernels--acme--olds/snapshots/%s/build/torch211-cxx11-cpu-x86_64-linux/_olds_4343.abi3.so",
			     W.cache, test_hub_last_commit(W.hub)) > 0);
	assert_int_equal(test_system("real=$(readlink -f '%s') && case \"$real\" in */blobs/[0-9a-f][0-9a-f]/*) ;; *) exit 1;; esac && "
				     "chmod u+w \"$real\" && printf 'X' | dd of=\"$real\" bs=1 seek=100 conv=notrunc "
				     "2>/dev/null", so), 0);
	kernels__memo_clear();
	assert_int_equal(kernels_get(&k, "acme/olds", "v1.0.0", &o), KERNELS_EINTEGRITY);
	assert_null(k);
	assert_non_null(strstr(kernels_error_last(), "_olds_4343.abi3.so"));
	free(so);
}

/* kernels_get with the cache the environment names: the variant loaded
 * from under `want` (a folder of the test's); the handle, left open (the
 * memo holds open ones only). */
static kernels_kernel *get_in(const char *want)
{
	kernels_options o;
	kernels_system s = sys_cpu(211);
	kernels_kernel *k = NULL;
	char real[4096];

	options(&o, &s);
	o.cache_dir = NULL;
	if (kernels_get(&k, "acme/answer", W.commit[0], &o) < 0)
		fail_msg("kernels_get: %s", kernels_error_last());
	assert_non_null(realpath(want, real));
	if (strncmp(kernels_kernel_path(k), real, strlen(real)))
		fail_msg("loaded from %s, not from the cache at %s", kernels_kernel_path(k), real);
	return k;
}

/* The memo answers a call only under the settings it was filled with: a
 * cache folder that the environment moves, by any variable the cache is
 * read from (the legacy HUGGINGFACE_HUB_CACHE, XDG_CACHE_HOME, as
 * huggingface_hub reads them), is another cache, which this call fills;
 * the handle of the first one is not the answer. */
static void test_memo_follows_the_cache_the_environment_names(void **state)
{
	char *a, *b, *c, *hf_home = getenv("HF_HOME") ? strdup(getenv("HF_HOME")) : NULL;
	kernels_kernel *k[3];
	int i;
	(void)state;

	assert_true(asprintf(&a, "%s/legacy-a", W.tmp) > 0 && asprintf(&b, "%s/legacy-b", W.tmp) > 0 &&
		    asprintf(&c, "%s/xdg", W.tmp) > 0);
	assert_int_equal(test_system("mkdir -p '%s' '%s' '%s/huggingface/hub'", a, b, c), 0);
	unsetenv("KERNELS_CACHE");
	unsetenv("HF_HUB_CACHE");
	setenv("HUGGINGFACE_HUB_CACHE", a, 1);
	k[0] = get_in(a);
	setenv("HUGGINGFACE_HUB_CACHE", b, 1);
	k[1] = get_in(b);
	unsetenv("HUGGINGFACE_HUB_CACHE");
	unsetenv("HF_HOME");
	setenv("XDG_CACHE_HOME", c, 1);
	k[2] = get_in(c);
	unsetenv("XDG_CACHE_HOME");
	for (i = 0; i < 3; i++)
		kernels_kernel_close(k[i]);
	if (hf_home)
		setenv("HF_HOME", hf_home, 1);
	free(hf_home);
	free(a);
	free(b);
	free(c);
}

/* The memo's key under the environment as it is now. */
static char *memo_key(void)
{
	kernels__buf b = { 0 };

	assert_int_equal(kernels__memo_settings(NULL, &b), 0);
	return kernels__buf_detach(&b);
}

/* Each variable that can decide an answer is in the memo's key (the
 * cache's, the offline and staging switches, detection's, the torch
 * search's); the token is not. */
static void test_memo_key_has_every_deciding_variable(void **state)
{
	static const char *const vars[] = { "XDG_CACHE_HOME", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_OFFLINE",
					    "HUGGINGFACE_CO_STAGING", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH",
					    "PYENV_VERSION", "PYTHONUSERBASE", "PYTHONNOUSERSITE", "HF_ENDPOINT",
					    "KERNELS_BACKEND", "HF_TOKEN" };
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		char *old = getenv(vars[i]) ? strdup(getenv(vars[i])) : NULL, *before, *after;

		unsetenv(vars[i]);
		before = memo_key();
		setenv(vars[i], "memo-test", 1);
		after = memo_key();
		if (!strcmp(vars[i], "HF_TOKEN") != !strcmp(before, after))
			fail_msg("%s %s the memo's key", vars[i], strcmp(before, after) ? "changes" : "is not in");
		if (old)
			setenv(vars[i], old, 1);
		else
			unsetenv(vars[i]);
		free(old);
		free(before);
		free(after);
	}
}

static void test_sixteen_threads(void **state)
{
	pthread_t t[THREADS];
	void *ok;
	int i;
	(void)state;

	for (i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, get_in_thread, i % 2 ? "v2.0.0" : "v1.0.0"), 0);
	for (i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(t[i], &ok), 0);
		assert_non_null(ok);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_revision_forms_pick_the_right_commit, test_world_fresh),
		cmocka_unit_test_setup(test_system_picks_the_variant, test_world_fresh),
		cmocka_unit_test_setup(test_trace_and_has_kernel, test_world_fresh),
		cmocka_unit_test_setup(test_second_get_is_served_from_cache_and_offline, test_world_fresh),
		cmocka_unit_test_setup(test_offline_metadata_only_variant_is_not_cached, test_world_fresh),
		cmocka_unit_test_setup(test_offline_missing_blob_is_not_cached, test_world_fresh),
		cmocka_unit_test_setup(test_offline_says_what_made_it_so, test_world_fresh),
		cmocka_unit_test_setup(test_damaged_blob_is_fetched_again, test_world_fresh),
		cmocka_unit_test_setup(test_record_lacking_a_file, test_world_fresh),
		cmocka_unit_test_setup(test_cached_variant_skips_listing_and_repairs, test_world_fresh),
		cmocka_unit_test_setup(test_get_lists_the_variant_twice, test_world_fresh),
		cmocka_unit_test_setup(test_hub_down_falls_back_to_the_cache, test_world_fresh),
		cmocka_unit_test_setup(test_two_commits_side_by_side, test_world_fresh),
		cmocka_unit_test_setup(test_untrusted_publisher_is_refused, test_world_fresh),
		cmocka_unit_test_setup(test_redirect_is_followed, test_world_fresh),
		cmocka_unit_test_setup(test_silent_first_endpoint_hands_over, test_world_fresh),
		cmocka_unit_test_setup(test_all_endpoints_silent_said_once_each, test_world_fresh),
		cmocka_unit_test_setup(test_planted_file_does_not_outlive_its_listing, test_world_fresh),
		cmocka_unit_test_setup(test_bad_input_is_refused_and_cache_untouched, test_world_fresh),
		cmocka_unit_test_setup(test_local_kernels_override, test_world_fresh),
		cmocka_unit_test_setup(test_local_kernels_survive_allocation_failures, test_world_fresh),
		cmocka_unit_test_setup(test_local_get_survives_allocation_failures, test_world_fresh),
		cmocka_unit_test_setup(test_cache_under_a_snapshots_folder, test_world_fresh),
		cmocka_unit_test_setup(test_variant_without_digest, test_world_fresh),
		cmocka_unit_test_setup(test_variant_without_digest_in_shared_store, test_world_fresh),
		cmocka_unit_test_setup(test_memo_follows_the_cache_the_environment_names, test_world_fresh),
		cmocka_unit_test(test_memo_key_has_every_deciding_variable),
		cmocka_unit_test_setup(test_sixteen_threads, test_world_fresh),
	};
	return cmocka_run_group_tests(tests, setup, test_world_teardown);
}
