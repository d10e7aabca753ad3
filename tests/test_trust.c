/* Publisher trust (lib/trust.c) end to end against the local Hub: the
 * Hub's verdict recorded in the cache, offline and Hub-down loads that need
 * the record or the caller's opt-in, a cache filled by the Python clients,
 * the record's expiry and endpoint, and existence before trust. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <cmocka.h>

#include "kernels.h"
#include "test_world.h"
#include "testutil.h"
#include "trust.h"
#include "fsync_log.h"
#include "../tests/data/variants/fixture.h"

static test_world W;
static const kernels_system sys_cpu = TEST_SYS_CPU;

static int setup(void **state)
{
	*state = &W;
	if (test_world_start(&W, "trust"))
		return -1;
	return fx_publish_answer(W.hub, W.tmp, "good/answer", "answer", 1, NULL, "--trusted") ||
	       fx_publish_answer(W.hub, W.tmp, "shady/answer", "shady", 2, NULL, "--untrusted") ? -1 : 0;
}

static int fresh_cache(void **state)
{
	(void)state;
	test_world_fresh_cache(&W);
	test_hub_faults_clear(W.hub);
	return 0;
}

static void options(kernels_options *o)
{
	test_world_options(&W, o, &sys_cpu);
	o->max_retries = 0;
}

static void get_ok(const char *repo, const kernels_options *o, int want)
{
	kernels_kernel *k = NULL;
	if (kernels_get(&k, repo, "v1.0.0", o) < 0)
		fail_msg("kernels_get(%s): %s", repo, kernels_error_last());
	assert_int_equal(test_kernel_answer(k), want);
	kernels_kernel_close(k);
}

static void get_untrusted(const char *repo, const kernels_options *o, const char *because)
{
	kernels_kernel *k = NULL;
	assert_int_equal(kernels_get(&k, repo, "v1.0.0", o), KERNELS_EUNTRUSTED);
	assert_null(k);
	/* the one step: the opt-in, or (no usable record) recording the Hub's verdict */
	if (!strstr(kernels_error_last(), because) || (!strstr(kernels_error_last(), "trust_remote_code") &&
						       !strstr(kernels_error_last(), "Run 'libkernels trust ")))
		fail_msg("%s: message lacks \"%s\" or the step to take: %s", repo, because, kernels_error_last());
}

/* An untrusted org fetched once with an opt-in: refused offline and with
 * the Hub down unless the caller opts in again. */
static void test_untrusted_needs_opt_in_offline(void **state)
{
	kernels_options o;
	(void)state;

	options(&o);
	get_untrusted("shady/answer", &o, "is not from a trusted publisher");
	o.trust_remote_code = 1;
	get_ok("shady/answer", &o, 2);

	o.trust_remote_code = 0;
	o.offline = 1;
	get_untrusted("shady/answer", &o, "did not mark 'shady' as a trusted publisher");
	o.offline = 0;
	assert_int_equal(test_hub_fault(W.hub, "{\"path\": \"/\", \"mode\": \"reset\", \"count\": -1}"), 0);
	get_untrusted("shady/answer", &o, "did not mark 'shady' as a trusted publisher");
	o.trusted_orgs = "shady";
	get_ok("shady/answer", &o, 2);
	o.offline = 1;
	get_ok("shady/answer", &o, 2);
}

/* fsyncs of the folder `dir` itself (fsync_log.h), not of what is in it. */
static int folder_flushes(const char *dir)
{
	char in[PATH_MAX + 2];

	snprintf(in, sizeof(in), "%s/", dir);
	return fsync_log_count(dir, NULL) - fsync_log_count(in, NULL);
}

/* A trusted org loads offline on the record the online check left. */
static void test_trusted_loads_offline(void **state)
{
	kernels_options o;
	char *record;
	(void)state;

	options(&o);
	fsync_log_clear();
	get_ok("good/answer", &o, 1);
	/* A "trusted" verdict is flushed before its rename (its name never holds
	 * bytes that missed the disk), its folder not after: a crash that loses
	 * it only costs the next offline load the opt-in. */
	assert_true(asprintf(&record, "%s/kernels--good--answer/.libkernels", W.cache) > 0);
	assert_true(fsync_log_count(record, "/trust.json.tmp-") >= 1);
	assert_int_equal(folder_flushes(record), 0);
	free(record);
	/* Online again: the fresh "trusted" verdict is not asked for again;
	 * an untrusted one always is (a publisher may become trusted). */
	test_hub_log_clear(W.hub);
	get_ok("good/answer", &o, 1);
	assert_int_equal(test_hub_log_count(W.hub, "GET", "/api/organizations/"), 0);
	o.trust_remote_code = 1;
	get_ok("shady/answer", &o, 2);
	o.trust_remote_code = 0;
	test_hub_log_clear(W.hub);
	fsync_log_clear();
	get_untrusted("shady/answer", &o, "is not from a trusted publisher");
	assert_int_equal(test_hub_log_count(W.hub, "GET", "/api/organizations/shady"), 1);
	/* An "untrusted" verdict is durable, file and folder: no crash brings an
	 * older "trusted" record back in its place. */
	assert_true(asprintf(&record, "%s/kernels--shady--answer/.libkernels", W.cache) > 0);
	assert_true(fsync_log_count(record, "/trust.json.tmp-") >= 1);
	assert_true(folder_flushes(record) >= 1);
	free(record);
	assert_true(asprintf(&record, "%s/kernels--good--answer/%s", W.cache, KERNELS__TRUST_RECORD) > 0);
	assert_int_equal(test_system("grep -q '\"verdict\": \"trusted\"' '%s' && grep -q '\"publisher\": \"good\"' '%s'",
				     record, record), 0);
	test_hub_log_clear(W.hub);
	o.offline = 1;
	get_ok("good/answer", &o, 1);
	assert_int_equal(test_hub_log_count(W.hub, NULL, ""), 0);

	/* Offline, whichever endpoint served the cache vouches for it. */
	o.endpoint = "https://elsewhere.example";
	get_ok("good/answer", &o, 1);
	/* Older than the expiry, or not "trusted": the opt-in again. */
	assert_int_equal(test_system("sed -i 's/\"checked_at\": [0-9]*/\"checked_at\": 1000/' '%s'", record), 0);
	get_untrusted("good/answer", &o, "days old");
	assert_int_equal(test_system("sed -i 's/\"checked_at\": 1000/\"checked_at\": %lld/; "
				     "s/\"verdict\": \"trusted\"/\"verdict\": \"untrusted\"/' '%s'",
				     (long long)time(NULL), record), 0);
	get_untrusted("good/answer", &o, "did not mark 'good' as a trusted publisher");
	/* A time no check was made at (before 1970, or the least integer,
	 * whose age would not fit) is a malformed record, not a fresh one. */
	assert_int_equal(test_system("sed -i 's/\"checked_at\": [0-9]*/\"checked_at\": -9223372036854775808/; "
				     "s/\"verdict\": \"untrusted\"/\"verdict\": \"trusted\"/' '%s'", record), 0);
	get_untrusted("good/answer", &o, "is malformed");
	free(record);
}

/* An organization overview that is JSON but no object is no verdict: the
 * call is refused as unverified, and the "trusted" record it would have
 * replaced stays, so offline loads still stand on it. */
static void test_answer_not_an_overview_records_nothing(void **state)
{
	static const char *const bodies[] = { "[]", "\"trusted\"", "null", "true" };
	kernels_options o;
	char *record;
	size_t i;
	(void)state;

	options(&o);
	get_ok("good/answer", &o, 1);
	assert_true(asprintf(&record, "%s/kernels--good--answer/%s", W.cache, KERNELS__TRUST_RECORD) > 0);
	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		char fault[256];
		/* two days old: asked again online, still good offline */
		assert_int_equal(test_system("sed -i 's/\"checked_at\": [0-9]*/\"checked_at\": %lld/' '%s'",
					     (long long)time(NULL) - 2 * 86400, record), 0);
		snprintf(fault, sizeof(fault), "{\"path\": \"/api/organizations/good/overview\", \"mode\": \"200\", "
			 "\"body\": %s}", bodies[i]);
		assert_int_equal(test_hub_fault(W.hub, fault), 0);
		o.offline = 0;
		get_untrusted("good/answer", &o, "is not an organization overview");
		assert_int_equal(test_system("grep -q '\"verdict\": \"trusted\"' '%s'", record), 0);
		o.offline = 1;
		get_ok("good/answer", &o, 1);
	}
	free(record);
}

/* The Python clients share the cache but never record a verdict: what
 * they fetched needs the opt-in offline. */
static void test_cache_filled_by_python_needs_opt_in(void **state)
{
	kernels_options o;
	(void)state;

	assert_int_equal(test_system("HF_ENDPOINT='%s' HF_HUB_CACHE='%s' %s -c \"from huggingface_hub import "
				     "snapshot_download; snapshot_download('good/answer', repo_type='kernel', "
				     "revision='v1.0.0')\" >/dev/null", test_hub_endpoint(W.hub), W.cache, KERNELS_PYTHON), 0);
	assert_int_equal(test_system("ls -d '%s'/kernels--good--answer/snapshots/*/build >/dev/null", W.cache), 0);
	options(&o);
	o.offline = 1;
	get_untrusted("good/answer", &o, "no record of a publisher check");
	assert_non_null(strstr(kernels_error_last(), "Run 'libkernels trust good/answer' once while online"));
	o.trusted_orgs = "good/answer";
	get_ok("good/answer", &o, 1);
}

/* kernels_cache_trust_verdict for `repo`: returns `rc`, with `verdict`. */
static void assert_verdict(const char *repo, const kernels_options *o, int rc, kernels_trust_verdict verdict)
{
	kernels_trust_verdict got = KERNELS_TRUST_TRUSTED;

	assert_int_equal(kernels_cache_trust_verdict(&got, repo, o), rc);
	assert_int_equal(got, verdict);
}

/* The one step for such a cache: kernels_cache_trust (`libkernels trust`)
 * asks the Hub once per cached repo while online and records the verdict;
 * offline loads then need no opt-in, and send nothing. An untrusted
 * publisher is recorded as such and still refused. */
static void test_cache_trust_records_python_filled_cache(void **state)
{
	kernels_options o;
	(void)state;

	assert_int_equal(test_system("HF_ENDPOINT='%s' HF_HUB_CACHE='%s' %s -c \"from huggingface_hub import "
				     "snapshot_download as d; d('good/answer', repo_type='kernel', revision='v1.0.0'); "
				     "d('shady/answer', repo_type='kernel', revision='v1.0.0')\" >/dev/null",
				     test_hub_endpoint(W.hub), W.cache, KERNELS_PYTHON), 0);
	options(&o);
	o.offline = 1;
	assert_int_equal(kernels_cache_trust(NULL, &o), KERNELS_EOFFLINE); /* the Hub must be asked */
	o.offline = 0;
	assert_int_equal(kernels_cache_trust("good/nothere", &o), KERNELS_ENOTFOUND);
	test_hub_log_clear(W.hub);
	assert_int_equal(kernels_cache_trust(NULL, &o), KERNELS_EUNTRUSTED);
	assert_non_null(strstr(kernels_error_last(), "shady/answer"));
	assert_null(strstr(kernels_error_last(), "good/answer"));
	assert_int_equal(test_hub_log_count(W.hub, "GET", "/api/organizations/"), 2); /* one per repo */
	assert_int_equal(test_hub_log_count(W.hub, NULL, NULL), 2);

	test_hub_log_clear(W.hub);
	o.offline = 1;
	get_ok("good/answer", &o, 1);
	get_untrusted("shady/answer", &o, "did not mark 'shady' as a trusted publisher");
	assert_int_equal(test_hub_log_count(W.hub, NULL, NULL), 0);
	o.offline = 0;
	assert_int_equal(kernels_cache_trust("good/answer", &o), 0);
	assert_int_equal(test_hub_log_count(W.hub, NULL, NULL), 0); /* recorded today: not asked again */
	assert_verdict("good/answer", &o, 0, KERNELS_TRUST_TRUSTED);
	assert_verdict("shady/answer", &o, KERNELS_EUNTRUSTED, KERNELS_TRUST_UNTRUSTED);
	assert_verdict("good/nothere", &o, KERNELS_ENOTFOUND, KERNELS_TRUST_UNVERIFIED);
	assert_verdict(NULL, &o, KERNELS_EINVAL, KERNELS_TRUST_UNVERIFIED);
	assert_int_equal(kernels_cache_trust_verdict(NULL, "good/answer", &o), KERNELS_EINVAL);
}

/* A repo that does not exist is "not found", whatever its org, and the
 * answer never suggests trusting it. */
static void test_existence_before_trust(void **state)
{
	kernels_options o;
	kernels_kernel *k = NULL;
	(void)state;

	options(&o);
	assert_int_equal(kernels_get(&k, "goood/answer", "v1.0.0", &o), KERNELS_ENOTFOUND);
	assert_null(strstr(kernels_error_last(), "trust"));
	assert_int_equal(kernels_get(&k, "good/answr", "v1.0.0", &o), KERNELS_ENOTFOUND);
	assert_null(strstr(kernels_error_last(), "trust"));
	assert_int_equal(kernels_get(&k, "good/answer.git", "v1.0.0", &o), KERNELS_EINVAL);
}

/* A second local Hub serving good/answer (answering 7) with no
 * organization API, as a mirror may; the caller stops it. */
static test_hub *mirror_without_org_api(void)
{
	test_hub *mirror;

	assert_non_null(mirror = test_hub_start());
	assert_int_equal(fx_publish_answer(mirror, W.tmp, "good/answer", "mirrored", 7, NULL, "--trusted"), 0);
	assert_int_equal(test_hub_config(mirror, "{\"org_overview\": false}"), 0);
	return mirror;
}

/* A mirror without the organization API first, the Hub second: the Hub
 * vouches for the publisher; the mirror alone cannot. */
static void test_mirror_without_org_api(void **state)
{
	kernels_options o;
	test_hub *mirror;
	char *list;
	(void)state;

	mirror = mirror_without_org_api();
	options(&o);
	o.endpoint = test_hub_endpoint(mirror);
	get_untrusted("good/answer", &o, "has no publisher information for 'good'");
	assert_true(asprintf(&list, "%s,%s", test_hub_endpoint(mirror), test_hub_endpoint(W.hub)) > 0);
	o.endpoints = list;
	test_hub_log_clear(W.hub);
	get_ok("good/answer", &o, 7); /* the mirror's files, the Hub's verdict */
	assert_int_equal(test_hub_log_count(W.hub, "GET", "/api/organizations/good"), 1);
	test_hub_stop(mirror);
	free(list);
}

/* Recording through a mirror that has no organization API: no endpoint
 * gives a verdict, so nothing is recorded and the message says so (not
 * "recorded as such"); with the Hub listed after the mirror, it is. */
static void test_cache_trust_without_a_verdict_records_nothing(void **state)
{
	kernels_options o;
	test_hub *mirror;
	char *list, *record;
	(void)state;

	mirror = mirror_without_org_api();
	options(&o);
	o.endpoint = test_hub_endpoint(mirror);
	o.trust_remote_code = 1; /* fetched with the opt-in: no verdict asked, none recorded */
	get_ok("good/answer", &o, 7);
	o.trust_remote_code = 0;
	assert_int_equal(kernels_cache_trust("good/answer", &o), KERNELS_EUNTRUSTED);
	assert_non_null(strstr(kernels_error_last(), "got no verdict, so nothing was recorded"));
	assert_null(strstr(kernels_error_last(), "recorded as such"));
	/* told apart from an untrusted publisher without reading the message */
	assert_verdict("good/answer", &o, KERNELS_EUNTRUSTED, KERNELS_TRUST_UNVERIFIED);
	assert_true(asprintf(&record, "%s/kernels--good--answer/%s", W.cache, KERNELS__TRUST_RECORD) > 0);
	assert_int_equal(access(record, F_OK), -1);
	assert_true(asprintf(&list, "%s,%s", test_hub_endpoint(mirror), test_hub_endpoint(W.hub)) > 0);
	o.endpoints = list;
	assert_int_equal(kernels_cache_trust("good/answer", &o), 0);
	assert_int_equal(access(record, F_OK), 0);
	test_hub_stop(mirror);
	free(record);
	free(list);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_untrusted_needs_opt_in_offline, fresh_cache),
		cmocka_unit_test_setup(test_trusted_loads_offline, fresh_cache),
		cmocka_unit_test_setup(test_answer_not_an_overview_records_nothing, fresh_cache),
		cmocka_unit_test_setup(test_cache_filled_by_python_needs_opt_in, fresh_cache),
		cmocka_unit_test_setup(test_cache_trust_records_python_filled_cache, fresh_cache),
		cmocka_unit_test_setup(test_cache_trust_without_a_verdict_records_nothing, fresh_cache),
		cmocka_unit_test_setup(test_existence_before_trust, fresh_cache),
		cmocka_unit_test_setup(test_mirror_without_org_api, fresh_cache),
	};
	return cmocka_run_group_tests(tests, setup, test_world_teardown);
}
