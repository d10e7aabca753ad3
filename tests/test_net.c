/* The Hub down, hanging, or a mirror (issue 12): kernels_get stays within
 * its deadline, answers from the cache when it can, says plainly what is
 * missing when it cannot, and leaves no thread and no socket behind. Faults
 * are injected in the local Hub (tests/hub: "hang", refused connections,
 * mirror switches); every test counts /proc/self/task and the socket fds
 * before and after. Only one test waits for the default deadline (10 s);
 * the others use small ones. */
#include <setjmp.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "hub.h"
#include "kernels.h"
#include "test_world.h"
#include "testutil.h"
#include "../tests/data/variants/fixture.h"

#define REPO "acme/net"
#define VARIANT "torch211-cxx11-cpu-x86_64-linux"
#define NEEDLES(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* commit[]: v1.0.0, v1.1.0 */
static test_world W;
/* An endpoint where nothing listens (dead_endpoint); owned here. */
static char *dead;

/* ---- what the process holds ---- */

typedef struct {
	int threads, sockets;
} held;

static int count_dir(const char *path, int sockets_only)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char link[320], target[256];
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d))) {
		ssize_t k;
		if (e->d_name[0] == '.')
			continue;
		if (!sockets_only) {
			n++;
			continue;
		}
		snprintf(link, sizeof(link), "%s/%s", path, e->d_name);
		k = readlink(link, target, sizeof(target) - 1);
		if (k > 0) {
			target[k] = '\0';
			n += !strncmp(target, "socket:", 7);
		}
	}
	closedir(d);
	return n;
}

static held now_held(void)
{
	held h = { count_dir("/proc/self/task", 0), count_dir("/proc/self/fd", 1) };
	return h;
}

static void expect_nothing_left(held before)
{
	held after = now_held();
	if (after.threads != before.threads || after.sockets != before.sockets)
		fail_msg("left behind: %d thread(s) (had %d), %d socket(s) (had %d)", after.threads, before.threads,
			 after.sockets, before.sockets);
}

/* ---- the world ---- */

static void publish(int version, int minor, const char *refs, int slot)
{
	char *root;

	assert_true(asprintf(&root, "%s/src-%d-%d", W.tmp, version, minor) > 0);
	assert_int_equal(fx_answer_variant(root, VARIANT, "answer", version * 1000 + minor * 100 + 1, "cpu", NULL,
					   version), 0);
	/* A low LFS threshold puts the shared object on the CDN. */
	assert_int_equal(test_world_publish(&W, slot, "--repo " REPO " --dir '%s' --lfs-threshold 4096 %s", root, refs),
			 0);
	free(root);
}

static int setup(void **state)
{
	(void)state;
	kernels__hub_set_backoff_base_ms(20);
	if (test_world_start(&W, "net"))
		return -1;
	publish(1, 0, "--branch main --branch v1 --tag v1.0.0 --trusted", 0);
	publish(1, 1, "--branch main --branch v1 --tag v1.1.0", 1);
	dead = test_dead_endpoint();
	assert_non_null(dead);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	test_world_stop(&W);
	free(dead);
	return 0;
}

static int fresh(void **state)
{
	(void)state;
	test_world_fresh_cache(&W);
	test_hub_faults_clear(W.hub);
	assert_int_equal(test_hub_config(W.hub, "{\"smart_http\": true, \"refs_api\": true, \"org_overview\": true}"), 0);
	kernels__hub_down_forget_all();
	test_logged_clear();
	return 0;
}

static const kernels_system SYS = TEST_SYS_CPU;

/* Defaults, aimed at the local Hub, with our cache and log. */
static void options(kernels_options *o)
{
	test_world_options(&W, o, &SYS);
	o->token = "";
	o->log_cb = test_log_warnings;
}

/* kernels_get that must succeed with `answer`. No test here reads a clock:
 * a busy machine makes any bound on a duration flaky. What a deadline or a
 * stall decides is checked by its outcome instead (which answer, which
 * message, which requests the Hub saw, nothing left behind); ctest's
 * timeout guards against a hang. */
static void get_ok(const kernels_options *o, const char *rev, int answer)
{
	kernels_kernel *k = NULL;

	if (kernels_get(&k, REPO, rev, o) < 0)
		fail_msg("kernels_get(%s): %s", rev, kernels_error_last());
	assert_int_equal(test_kernel_answer(k), answer);
	kernels_kernel_close(k);
}

/* kernels_get that must fail with `code` and every needle in the message. */
static void get_fails(const kernels_options *o, const char *rev, int code, const char *const *needles)
{
	kernels_kernel *k = NULL;
	int rc = kernels_get(&k, REPO, rev, o);

	if (rc != code)
		fail_msg("kernels_get(%s) gave %d, not %d: %s", rev, rc, code, kernels_error_last());
	assert_null(k);
	for (; *needles; needles++)
		if (!strstr(kernels_error_last(), *needles))
			fail_msg("'%s' not in: %s", *needles, kernels_error_last());
}

static void warm(void)
{
	kernels_options o;
	options(&o);
	get_ok(&o, "v1.0.0", 1001);
	test_hub_log_clear(W.hub);
	test_logged_clear();
}

/* ---- configuration ---- */

static void test_config_timeouts_deadline_endpoints(void **state)
{
	kernels_options o;
	kernels__config c;
	(void)state;

	unsetenv("HF_HUB_ETAG_TIMEOUT");
	unsetenv("HF_HUB_DOWNLOAD_TIMEOUT");
	unsetenv("KERNELS_DEADLINE_MS");
	unsetenv("KERNELS_ENDPOINTS");
	assert_int_equal(kernels__config_load(&c, NULL), 0);
	assert_int_equal(c.timeout_ms, 10000);          /* huggingface_hub's defaults */
	assert_int_equal(c.download_timeout_ms, 10000);
	assert_int_equal(c.deadline_ms, 10000);
	assert_true(c.deadline_at > 0);         /* a deadline is set; how much of it is left is the clock's */
	assert_int_equal(c.n_endpoints, 1);
	assert_string_equal(c.endpoints[0], c.endpoint);
	kernels__config_free(&c);

	setenv("HF_HUB_ETAG_TIMEOUT", "3", 1);
	setenv("HF_HUB_DOWNLOAD_TIMEOUT", "7", 1);
	setenv("KERNELS_DEADLINE_MS", "2500", 1);
	setenv("KERNELS_ENDPOINTS", "http://mirror.invalid:8090/, https://hub.invalid", 1);
	assert_int_equal(kernels__config_load(&c, NULL), 0);
	assert_int_equal(c.timeout_ms, 3000);
	assert_int_equal(c.download_timeout_ms, 7000);
	assert_int_equal(c.deadline_ms, 2500);
	assert_int_equal(c.n_endpoints, 2);
	assert_string_equal(c.endpoint, "http://mirror.invalid:8090");
	assert_string_equal(c.endpoints[1], "https://hub.invalid");
	kernels__config_free(&c);

	/* Options win over the environment; a negative deadline is none. */
	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	o.timeout_ms = 500;
	o.deadline_ms = -1;
	o.endpoints = "http://a.invalid";
	assert_int_equal(kernels__config_load(&c, &o), 0);
	assert_int_equal(c.timeout_ms, 500);
	assert_int_equal(c.download_timeout_ms, 500);
	assert_int_equal(c.deadline_at, 0);
	assert_true(kernels__deadline_left_ms(&c) == LONG_MAX);   /* none: no clock is read */
	assert_int_equal(c.n_endpoints, 1);
	assert_string_equal(c.endpoint, "http://a.invalid");
	kernels__config_free(&c);

	o.endpoints = "http://a.invalid,ftp://b.invalid";
	assert_int_equal(kernels__config_load(&c, &o), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "ftp://b.invalid"));
	o.endpoints = " , ";
	assert_int_equal(kernels__config_load(&c, &o), KERNELS_EINVAL);

	/* As huggingface_hub: 0 means the default. */
	setenv("HF_HUB_ETAG_TIMEOUT", "0", 1);
	assert_int_equal(kernels__config_load(&c, NULL), 0);
	assert_int_equal(c.timeout_ms, 10000);
	kernels__config_free(&c);
	unsetenv("HF_HUB_ETAG_TIMEOUT");
	unsetenv("HF_HUB_DOWNLOAD_TIMEOUT");
	unsetenv("KERNELS_DEADLINE_MS");
	unsetenv("KERNELS_ENDPOINTS");
}

/* ---- the Hub down ---- */

/* Defaults, warm cache, then the Hub goes away (nothing listens on its
 * port): the first call answers from the cache, and the process remembers
 * the Hub as down, so the next call answers from the cache without trying
 * it again. */
static void test_hub_down_defaults(void **state)
{
	kernels_options o;
	test_hub *gone;
	char *endpoint;
	held before;
	(void)state;

	assert_non_null(gone = test_hub_start());
	assert_int_equal(test_hub_publish(gone, "--repo " REPO " --dir '%s/src-1-0' --branch main --tag v1.0.0 --trusted",
					  W.tmp), 0);
	assert_non_null(endpoint = strdup(test_hub_endpoint(gone)));
	options(&o);
	o.endpoint = endpoint;
	get_ok(&o, "v1.0.0", 1001);
	test_hub_stop(gone);
	test_logged_clear();
	before = now_held();
	get_ok(&o, "v1.0.0", 1001);
	assert_non_null(strstr(test_logged, "cache"));
	assert_null(strstr(test_logged, "not asking again"));
	assert_true(kernels__hub_down_check(endpoint) < 0);   /* remembered */
	test_logged_clear();
	o.log_cb = test_log_all;
	get_ok(&o, "v1.0.0", 1001);
	assert_non_null(strstr(test_logged, "not asking again"));
	o.log_cb = test_log_warnings;
	/* What the cache lacks: said once, without "offline". */
	get_fails(&o, "v1.1.0", KERNELS_ENETWORK, NEEDLES("cannot be reached", "v1.1.0"));
	assert_null(strstr(kernels_error_last(), "HF_HUB_OFFLINE"));
	assert_null(strstr(kernels_error_last(), "offline"));
	expect_nothing_left(before);
	free(endpoint);
}

/* The memory expires: the call after it tries the Hub again. Time passes
 * by the memory's fake clock (kernels__hub_down_age_all), not by sleeping,
 * so a busy machine cannot make the memory expire early or late. */
static void test_down_memory_expires(void **state)
{
	kernels_options o;
	kernels_revision *r = NULL;
	(void)state;

	options(&o);
	o.endpoint = dead;
	assert_int_equal(kernels_revision_resolve(&r, "acme/never", "main", &o), KERNELS_ENETWORK);
	assert_null(strstr(kernels_error_last(), "not asking again"));
	assert_int_equal(kernels_revision_resolve(&r, "acme/never", "main", &o), KERNELS_ENETWORK);
	assert_non_null(strstr(kernels_error_last(), "not asking again"));
	kernels__hub_down_age_all(30001);        /* the default memory: 30 s */
	assert_int_equal(kernels_revision_resolve(&r, "acme/never", "main", &o), KERNELS_ENETWORK);
	assert_null(strstr(kernels_error_last(), "not asking again"));
	/* Any answer clears it at once: the live Hub is a different origin,
	 * never affected. */
	o.endpoint = test_hub_endpoint(W.hub);
	assert_int_equal(kernels_revision_resolve(&r, REPO, "main", &o), 0);
	kernels_revision_free(r);
}

/* ---- the Hub hangs ---- */

/* Defaults, warm cache, info/refs accepts and says nothing: the cached
 * answer once the default deadline has run out, and the log says so. */
static void test_hang_info_refs_defaults(void **state)
{
	kernels_options o;
	held before;
	(void)state;

	warm();
	before = now_held();
	assert_int_equal(test_hub_fault(W.hub, "{\"path\": \"/info/refs\", \"mode\": \"hang\", \"count\": -1}"), 0);
	options(&o);
	get_ok(&o, "v1.0.0", 1001);
	assert_true(test_hub_log_count(W.hub, "GET", "/info/refs") >= 1);
	assert_non_null(strstr(test_logged, "deadline"));
	test_hub_faults_clear(W.hub);
	expect_nothing_left(before);
}

static void test_hang_info_refs_small_deadline(void **state)
{
	kernels_options o;
	held before = now_held();
	(void)state;

	assert_int_equal(test_hub_fault(W.hub, "{\"path\": \"/info/refs\", \"mode\": \"hang\", \"count\": -1}"), 0);
	options(&o);
	o.deadline_ms = 1000;
	get_fails(&o, "v1.0.0", KERNELS_ENETWORK, NEEDLES("info/refs", "deadline of 1000 ms", "not in the cache"));
	/* Given up at the deadline: nothing was asked after the refs. */
	assert_int_equal(test_hub_log_count(W.hub, NULL, "/api/"), 0);
	assert_int_equal(test_hub_log_count(W.hub, NULL, "/resolve/"), 0);
	test_hub_faults_clear(W.hub);
	expect_nothing_left(before);
}

/* The API hangs (trust check, tree listing): warm, from the cache; cold, a
 * network error within the deadline. */
static void test_hang_api(void **state)
{
	kernels_options o;
	held before;
	(void)state;

	warm();
	before = now_held();
	assert_int_equal(test_hub_fault(W.hub, "{\"path\": \"/api/\", \"mode\": \"hang\", \"count\": -1}"), 0);
	options(&o);
	o.deadline_ms = 1000;
	get_ok(&o, "v1.0.0", 1001);
	kernels__hub_down_forget_all();
	get_fails(&o, "v1.1.0", KERNELS_ENETWORK, NEEDLES("deadline", "/api/"));
	assert_int_equal(test_hub_log_count(W.hub, NULL, "/resolve/"), 0);
	assert_null(strstr(kernels_error_last(), "offline"));
	test_hub_faults_clear(W.hub);
	expect_nothing_left(before);
}

/* The CDN hangs: no byte of the kernel arrives; a clear network error
 * naming the file, within the deadline. */
static void test_hang_cdn(void **state)
{
	kernels_options o;
	held before = now_held();
	(void)state;

	assert_int_equal(test_hub_fault(W.hub, "{\"listener\": \"cdn\", \"mode\": \"hang\", \"count\": -1}"), 0);
	options(&o);
	o.deadline_ms = 1500;
	get_fails(&o, "v1.0.0", KERNELS_ENETWORK, NEEDLES("no byte", "deadline of 1500 ms", ".so", "lacks"));
	assert_true(test_hub_log_count_ex(W.hub, "GET", "/lfs/", "cdn", 0, -1) >= 1);
	test_hub_faults_clear(W.hub);
	expect_nothing_left(before);
	/* The same call with the CDN back: fetched and loaded. */
	kernels__hub_down_forget_all();
	get_ok(&o, "v1.0.0", 1001);
}

/* ---- retries worth their cost ---- */

static void test_retries(void **state)
{
	kernels_options o;
	held before = now_held();
	(void)state;

	/* 5xx with Retry-After: waited for (the wait the log announces is the
	 * server's second, not the short test backoff), then answered. */
	assert_int_equal(test_hub_fault(W.hub, "{\"path\": \"/overview\", \"mode\": \"502\", \"retry_after\": 1, \"count\": 1}"), 0);
	/* A reset in the middle of an API answer: retried. */
	assert_int_equal(test_hub_fault(W.hub, "{\"path\": \"/tree/\", \"mode\": \"reset\", \"after_bytes\": 5}"), 0);
	options(&o);
	o.log_cb = test_log_all;
	get_ok(&o, "v1.0.0", 1001);
	if (!strstr(test_logged, "answered 502; retrying in 1050 ms"))
		fail_msg("no wait of the server's Retry-After in the log:\n%s", test_logged);
	o.log_cb = test_log_warnings;
	assert_int_equal(test_hub_log_count_ex(W.hub, "GET", "/overview", "hub", 502, -1), 1);
	assert_true(test_hub_log_count(W.hub, "GET", "/overview") >= 2);
	assert_true(test_hub_log_count(W.hub, "GET", "/tree/") >= 2);

	/* A Retry-After longer than the deadline left is not waited for. */
	test_hub_log_clear(W.hub);
	assert_int_equal(test_hub_fault(W.hub, "{\"path\": \"/info/refs\", \"mode\": \"429\", \"retry_after\": 30, \"count\": -1}"), 0);
	o.deadline_ms = 1000;
	get_fails(&o, "v1.1.0", KERNELS_EHTTP, NEEDLES("429"));
	assert_int_equal(test_hub_log_count(W.hub, "GET", "/info/refs"), 1);     /* not retried */
	test_hub_faults_clear(W.hub);
	expect_nothing_left(before);
}

/* ---- the Hub not serving ---- */

/* The Hub answers `status` (a 5xx or 429) to everything until the retries
 * run out: not serving, so as when it cannot be reached the cache answers
 * what it holds (a warning naming the status), what it lacks is
 * KERNELS_EHTTP saying both halves. An outage's status (`remembered`) has
 * the next call fall back without asking; a 500 or 429 is asked again.
 * A 404 everywhere still does not fall back. */
static void hub_not_serving(const char *status, int remembered)
{
	kernels_options o;
	kernels_kernel *k = NULL;
	char fault[96], said[32];
	held before;

	warm();
	before = now_held();
	snprintf(fault, sizeof(fault), "{\"mode\": \"%s\", \"count\": -1}", status);
	snprintf(said, sizeof(said), "HTTP %s", status);
	assert_int_equal(test_hub_fault(W.hub, fault), 0);
	options(&o);
	o.max_retries = 0;     /* spent at once: the answer outlived them */
	get_ok(&o, "v1.0.0", 1001);
	if (!strstr(test_logged, "cached answer") || !strstr(test_logged, said))
		fail_msg("no warning naming %s and the cache:\n%s", said, test_logged);
	kernels__hub_down_forget_all();   /* the uncached call asks the Hub too */
	get_fails(&o, "v1.1.0", KERNELS_EHTTP, NEEDLES(said, "the cache cannot answer", "v1.1.0"));
	assert_null(strstr(kernels_error_last(), "offline"));
	/* An outage is remembered: the next call asks nothing. Anything else
	 * is asked again, and falls back again. */
	test_hub_log_clear(W.hub);
	test_logged_clear();
	get_ok(&o, "v1.0.0", 1001);
	if (remembered)
		assert_int_equal(test_hub_log_count(W.hub, NULL, "/"), 0);
	else
		assert_true(test_hub_log_count(W.hub, NULL, "/") >= 1);
	if (!strstr(test_logged, "cached answer") || !strstr(test_logged, said))
		fail_msg("the next call: no warning naming %s and the cache:\n%s", said, test_logged);
	test_hub_faults_clear(W.hub);
	kernels__hub_down_forget_all();

	/* A 404 is an answer about the repo, not an outage: no cached answer. */
	assert_int_equal(test_hub_fault(W.hub, "{\"mode\": \"404\", \"count\": -1}"), 0);
	test_logged_clear();
	assert_true(kernels_get(&k, REPO, "v1.0.0", &o) < 0);
	assert_null(k);
	if (strstr(test_logged, "cached answer") || strstr(kernels_error_last(), "cache"))
		fail_msg("a 404 fell back to the cache: %s\n%s", kernels_error_last(), test_logged);
	test_hub_faults_clear(W.hub);
	expect_nothing_left(before);
}

static void test_hub_503_falls_back(void **state)
{
	(void)state;
	hub_not_serving("503", 1);
}

static void test_hub_502_falls_back(void **state)
{
	(void)state;
	hub_not_serving("502", 1);
}

static void test_hub_429_falls_back(void **state)
{
	(void)state;
	hub_not_serving("429", 0);
}

static void test_hub_500_falls_back(void **state)
{
	(void)state;
	hub_not_serving("500", 0);
}

/* The file downloads (Hub and CDN) answer 503 while the API serves: an
 * uncached variant's error is KERNELS_EHTTP with both halves. */
static void test_downloads_503_cache_lacks(void **state)
{
	kernels_options o;
	held before = now_held();
	(void)state;

	assert_int_equal(test_hub_fault(W.hub, "{\"path\": \"/resolve/\", \"mode\": \"503\", \"count\": -1}"),
			 0);
	assert_int_equal(test_hub_fault(W.hub, "{\"listener\": \"cdn\", \"mode\": \"503\", \"count\": -1}"), 0);
	options(&o);
	o.max_retries = 0;
	get_fails(&o, "v1.1.0", KERNELS_EHTTP, NEEDLES("HTTP 503", "lacks"));
	assert_true(test_hub_log_count(W.hub, "GET", "/resolve/") >= 1);
	test_hub_faults_clear(W.hub);
	expect_nothing_left(before);
}

/* The file downloads answering 500 (one path's fault, not an outage):
 * the call fails, naming it, and the next call asks the Hub again. */
static void test_downloads_500_asked_again(void **state)
{
	kernels_options o;
	held before = now_held();
	(void)state;

	assert_int_equal(test_hub_fault(W.hub, "{\"path\": \"/resolve/\", \"mode\": \"500\", \"count\": -1}"),
			 0);
	options(&o);
	o.max_retries = 0;
	get_fails(&o, "v1.1.0", KERNELS_EHTTP, NEEDLES("HTTP 500", "lacks"));
	test_hub_log_clear(W.hub);
	get_fails(&o, "v1.1.0", KERNELS_EHTTP, NEEDLES("HTTP 500"));
	assert_true(test_hub_log_count(W.hub, "GET", "/resolve/") >= 1);
	test_hub_faults_clear(W.hub);
	expect_nothing_left(before);
}

/* The organization API answering 503 on every retry gives no verdict on
 * the publisher: not "untrusted" but the Hub not serving (KERNELS_EHTTP,
 * what the empty cache lacks named). */
static void test_trust_503_is_not_untrusted(void **state)
{
	kernels_options o;
	held before = now_held();
	(void)state;

	assert_int_equal(test_hub_fault(W.hub, "{\"path\": \"/overview\", \"mode\": \"503\", \"count\": -1}"), 0);
	options(&o);
	o.max_retries = 0;
	get_fails(&o, "v1.0.0", KERNELS_EHTTP, NEEDLES("HTTP 503", "lacks"));
	assert_true(test_hub_log_count(W.hub, "GET", "/overview") >= 1);
	test_hub_faults_clear(W.hub);
	expect_nothing_left(before);
}

/* A mirror answering 503 to everything is passed over for the Hub, and
 * then remembered as not serving (not asked again); with the Hub failing
 * too, the cache answers. */
static void test_mirror_503_fails_over(void **state)
{
	kernels_options o;
	test_hub *mirror;
	char *list;
	held before;
	(void)state;

	warm();
	before = now_held();
	assert_non_null(mirror = test_hub_start());
	assert_int_equal(test_hub_fault(mirror, "{\"mode\": \"503\", \"count\": -1}"), 0);
	options(&o);
	o.max_retries = 0;
	o.trusted_orgs = "acme";
	assert_true(asprintf(&list, "%s,%s", test_hub_endpoint(mirror), test_hub_endpoint(W.hub)) > 0);
	o.endpoints = list;
	get_ok(&o, "v1.1.0", 1101);
	assert_true(test_hub_log_count(mirror, NULL, "/") >= 1);
	assert_null(strstr(test_logged, "cached answer"));
	test_hub_log_clear(mirror);
	get_ok(&o, "v1.1.0", 1101);
	assert_int_equal(test_hub_log_count(mirror, NULL, "/"), 0);
	/* Both failing: the cache answers, naming the status. */
	assert_int_equal(test_hub_fault(W.hub, "{\"mode\": \"503\", \"count\": -1}"), 0);
	get_ok(&o, "v1.0.0", 1001);
	if (!strstr(test_logged, "cached answer") || !strstr(test_logged, "HTTP 503"))
		fail_msg("no warning naming HTTP 503 and the cache:\n%s", test_logged);
	test_hub_faults_clear(W.hub);
	test_hub_stop(mirror);
	free(list);
	kernels__hub_down_forget_all();
	expect_nothing_left(before);
}

/* ---- mirrors ---- */

/* An endpoint without git smart HTTP (olah and other mirrors): every form
 * resolves through the REST refs listing, and the cache records them. */
static void test_rest_refs_without_smart_http(void **state)
{
	kernels_options o;
	char short_id[8], *ref;
	held before = now_held();
	(void)state;

	assert_int_equal(test_hub_config(W.hub, "{\"smart_http\": false}"), 0);
	options(&o);
	get_ok(&o, "v1.0.0", 1001);
	get_ok(&o, "1", 1101);
	get_ok(&o, ">=1.0,<1.1", 1001);
	get_ok(&o, "main", 1101);
	memcpy(short_id, W.commit[0], 7);
	short_id[7] = '\0';
	get_ok(&o, short_id, 1001);
	assert_true(test_hub_log_count(W.hub, "GET", "/api/kernels/" REPO "/refs") >= 4);
	assert_int_equal(test_hub_log_count_ex(W.hub, "GET", "/info/refs", "hub", 200, -1), 0);
	/* The same cache records as through git. */
	assert_true(asprintf(&ref, "%s/kernels--acme--net/refs/v1.0.0", W.cache) > 0);
	assert_true(test_exists(ref));
	free(ref);

	/* Neither git nor the REST listing: said so; full commit ids still work. */
	assert_int_equal(test_hub_config(W.hub, "{\"refs_api\": false}"), 0);
	get_fails(&o, "v1.1.0", KERNELS_EHTTP, NEEDLES("lists no refs", "full commit"));
	get_ok(&o, W.commit[1], 1101);
	expect_nothing_left(before);
}

/* endpoints: a mirror first, the Hub second, under one deadline. */
static void test_endpoints_in_turn(void **state)
{
	kernels_options o;
	test_hub *empty;
	char *list;
	held before;
	(void)state;

	/* A dead mirror: refused at once, the Hub answers. (Mirrors rarely
	 * serve the organization API: the publisher is named here.) */
	options(&o);
	o.trusted_orgs = "acme";
	assert_true(asprintf(&list, "%s,%s", dead, test_hub_endpoint(W.hub)) > 0);
	o.endpoints = list;
	before = now_held();
	get_ok(&o, "v1.0.0", 1001);
	assert_null(strstr(test_logged, "from the cache"));
	assert_true(test_hub_log_count(W.hub, "GET", "/info/refs") >= 1);
	free(list);

	/* A mirror that lacks the repo: the Hub after it. */
	assert_non_null(empty = test_hub_start());
	assert_true(asprintf(&list, "%s %s", test_hub_endpoint(empty), test_hub_endpoint(W.hub)) > 0);
	o.endpoints = list;
	get_ok(&o, "v1.1.0", 1101);
	assert_true(test_hub_log_count(empty, "GET", "/info/refs") >= 1);
	test_hub_stop(empty);
	free(list);

	/* All down: the cache answers, once. */
	kernels__hub_down_forget_all();
	assert_true(asprintf(&list, "%s,%s", dead, "http://127.0.0.1:9") > 0);
	o.endpoints = list;
	get_ok(&o, "v1.0.0", 1001);
	free(list);
	expect_nothing_left(before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_config_timeouts_deadline_endpoints, fresh),
		cmocka_unit_test_setup(test_hub_down_defaults, fresh),
		cmocka_unit_test_setup(test_down_memory_expires, fresh),
		cmocka_unit_test_setup(test_hang_info_refs_defaults, fresh),
		cmocka_unit_test_setup(test_hang_info_refs_small_deadline, fresh),
		cmocka_unit_test_setup(test_hang_api, fresh),
		cmocka_unit_test_setup(test_hang_cdn, fresh),
		cmocka_unit_test_setup(test_retries, fresh),
		cmocka_unit_test_setup(test_rest_refs_without_smart_http, fresh),
		cmocka_unit_test_setup(test_endpoints_in_turn, fresh),
		cmocka_unit_test_setup(test_hub_503_falls_back, fresh),
		cmocka_unit_test_setup(test_hub_502_falls_back, fresh),
		cmocka_unit_test_setup(test_hub_429_falls_back, fresh),
		cmocka_unit_test_setup(test_hub_500_falls_back, fresh),
		cmocka_unit_test_setup(test_downloads_503_cache_lacks, fresh),
		cmocka_unit_test_setup(test_downloads_500_asked_again, fresh),
		cmocka_unit_test_setup(test_trust_503_is_not_untrusted, fresh),
		cmocka_unit_test_setup(test_mirror_503_fails_over, fresh),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
