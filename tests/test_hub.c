/* The Hub client's pure pieces: escaping, ETags, retry timing,
 * User-Agent, origins. Network behaviour is tested against the fixture in
 * test_download*.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "kernels.h"
#include "config.h"
#include "hub.h"
#include "test_world.h"
#include "testutil.h"

static void test_url_escape(void **state)
{
	char *a = kernels__url_escape("refs/pr/1 x%", 0), *b = kernels__url_escape("build/v 1/a~b.so", 1);
	(void)state;
	assert_string_equal(a, "refs%2Fpr%2F1%20x%25");
	assert_string_equal(b, "build/v%201/a~b.so");
	free(a);
	free(b);
}

static void test_etag(void **state)
{
	char *a = kernels__etag_normalize("\"abc\""), *b = kernels__etag_normalize("W/\"def\""),
	     *c = kernels__etag_normalize("plain");
	(void)state;
	assert_string_equal(a, "abc");
	assert_string_equal(b, "def");
	assert_string_equal(c, "plain");
	free(a);
	free(b);
	free(c);
}

/* What a retry waits and which failures it retries: pure functions of
 * their arguments (Retry-After, attempt, base), bounds only, no clock. */
static void test_retry_delays(void **state)
{
	long a, b;
	(void)state;
	assert_int_equal(kernels__hub_parse_retry_after("3"), 3);
	assert_int_equal(kernels__hub_parse_retry_after(""), -1);
	assert_int_equal(kernels__hub_parse_retry_after("soon"), -1);
	assert_int_equal(kernels__hub_parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), 0);
	assert_true(kernels__hub_backoff_ms(0, 2) >= 2000);
	assert_true(kernels__hub_backoff_ms(0, 100000) <= 61000); /* capped */
	kernels__hub_set_backoff_base_ms(100);
	a = kernels__hub_backoff_ms(0, -1);
	b = kernels__hub_backoff_ms(3, -1);
	assert_true(a >= 100 && a <= 125);
	assert_true(b >= 800 && b <= 1000);
	assert_true(kernels__hub_backoff_ms(30, -1) <= 12500);
	assert_true(kernels__hub_transient_status(500) && kernels__hub_transient_status(503) &&
		    kernels__hub_transient_status(429));
	assert_false(kernels__hub_transient_status(404) || kernels__hub_transient_status(200));
	/* A refused connection or a failed lookup is not retried; a stall or a
	 * reset mid-body is. */
	assert_false(kernels__hub_transient_curl(CURLE_COULDNT_CONNECT));
	assert_false(kernels__hub_transient_curl(CURLE_COULDNT_RESOLVE_HOST));
	assert_true(kernels__hub_transient_curl(CURLE_OPERATION_TIMEDOUT));
	assert_true(kernels__hub_transient_curl(CURLE_RECV_ERROR));
	assert_true(kernels__hub_transient_curl(CURLE_PARTIAL_FILE));
	assert_false(kernels__hub_transient_curl(CURLE_SSL_CACERT_BADFILE));
}

static void test_user_agent(void **state)
{
	kernels__config cfg;
	char *ua;
	(void)state;
	kernels_options o;

	/* per call: the caller's tag first, then libkernels and the system */
	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	o.user_agent = "myapp/1.2";
	assert_int_equal(kernels__config_load(&cfg, &o), 0);
	cfg.telemetry = 1;
	snprintf(cfg.ua_system, KERNELS__UA_SYSTEM_MAX, "backend/cu126; torch/2.7.0");
	ua = kernels__hub_user_agent(&cfg);
	assert_non_null(strstr(ua, "myapp/1.2; libkernels/" KERNELS_VERSION_STRING "; os/"));
	assert_non_null(strstr(ua, "; cpu/"));
	assert_non_null(strstr(ua, "; file_type/kernel; backend/cu126; torch/2.7.0"));
	free(ua);
	cfg.telemetry = 0;
	ua = kernels__hub_user_agent(&cfg);
	assert_string_equal(ua, "libkernels/" KERNELS_VERSION_STRING);
	free(ua);
	kernels__config_free(&cfg);
	/* another call has its own, nothing is process-wide; its first
	 * request describes its system (backend/ from the first request on) */
	assert_int_equal(kernels__config_load(&cfg, NULL), 0);
	cfg.telemetry = 1;
	ua = kernels__hub_user_agent(&cfg);
	assert_null(strstr(ua, "myapp"));
	assert_null(strstr(ua, "backend/cu126; torch/2.7.0"));
	assert_non_null(strstr(ua, "; file_type/kernel; backend/"));
	free(ua);
	kernels__config_free(&cfg);
}

/* HF_HUB_USER_AGENT_ORIGIN ends the User-Agent with "; origin/<it>", as
 * huggingface_hub adds it, telemetry on or off; one that cannot be a
 * header's (a line break) is left out, with a warning. */
static void test_user_agent_origin(void **state)
{
	kernels__config cfg;
	char *ua;
	(void)state;

	setenv("HF_HUB_USER_AGENT_ORIGIN", "acme-ci", 1);
	assert_int_equal(kernels__config_load(&cfg, NULL), 0);
	cfg.telemetry = 1;
	ua = kernels__hub_user_agent(&cfg);
	assert_non_null(strstr(ua, "; file_type/kernel"));
	assert_string_equal(ua + strlen(ua) - strlen("; origin/acme-ci"), "; origin/acme-ci");
	free(ua);
	cfg.telemetry = 0;
	ua = kernels__hub_user_agent(&cfg);
	assert_string_equal(ua, "libkernels/" KERNELS_VERSION_STRING "; origin/acme-ci");
	free(ua);
	kernels__config_free(&cfg);
	setenv("HF_HUB_USER_AGENT_ORIGIN", "a\r\nX-Evil: 1", 1);
	assert_int_equal(kernels__config_load(&cfg, NULL), 0);
	cfg.telemetry = 0;
	ua = kernels__hub_user_agent(&cfg);
	assert_string_equal(ua, "libkernels/" KERNELS_VERSION_STRING);
	free(ua);
	kernels__config_free(&cfg);
	unsetenv("HF_HUB_USER_AGENT_ORIGIN");
}

static void test_origins(void **state)
{
	kernels__config cfg;
	kernels_options o;
	char *u;
	(void)state;
	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	o.endpoint = "http://Hub.example:8080/";
	assert_int_equal(kernels__config_load(&cfg, &o), 0);
	assert_true(kernels__hub_same_origin(&cfg, "http://hub.example:8080/api/x"));
	assert_false(kernels__hub_same_origin(&cfg, "http://hub.example:8081/api/x"));
	assert_false(kernels__hub_same_origin(&cfg, "https://hub.example:8080/api/x"));
	assert_false(kernels__hub_same_origin(&cfg, "http://cdn.example:8080/lfs/x"));
	assert_false(kernels__hub_same_origin(&cfg, "http://hub.example:8080@evil.example/"));
	u = kernels__url_resolve("http://a.example/kernels/x/resolve/main/f", "/x/resolve/main/f");
	assert_string_equal(u, "http://a.example/x/resolve/main/f");
	free(u);
	u = kernels__url_resolve("http://a.example/p", "https://cdn.example/lfs/1?x=y");
	assert_string_equal(u, "https://cdn.example/lfs/1?x=y");
	free(u);
	kernels__config_free(&cfg);
}

/* Offline, no request is made, and the refusal names what made the call
 * offline, to be undone: the variable (TRANSFORMERS_OFFLINE when
 * HF_HUB_OFFLINE is unset) or the option. */
static void offline_refused_by(const kernels_options *o, const char *by, const char *not)
{
	kernels__config cfg;
	kernels__hub_response r;

	assert_int_equal(kernels__config_load(&cfg, o), 0);
	assert_int_equal(kernels__hub_request(&cfg, "/api/kernels/a/b", 0, &r), KERNELS_EOFFLINE);
	assert_non_null(strstr(kernels_error_last(), by));
	assert_null(strstr(kernels_error_last(), not));
	kernels__config_free(&cfg);
}

static void test_offline_refuses(void **state)
{
	kernels_options o;
	(void)state;
	setenv("HF_HUB_OFFLINE", "1", 1);
	offline_refused_by(NULL, "offline (HF_HUB_OFFLINE) forbids the request /api/kernels/a/b; unset HF_HUB_OFFLINE",
			   "TRANSFORMERS");
	unsetenv("HF_HUB_OFFLINE");
	setenv("TRANSFORMERS_OFFLINE", "yes", 1);
	offline_refused_by(NULL, "offline (TRANSFORMERS_OFFLINE) forbids the request /api/kernels/a/b; unset "
			   "TRANSFORMERS_OFFLINE", "HF_HUB_OFFLINE");
	unsetenv("TRANSFORMERS_OFFLINE");
	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	o.offline = 1;
	offline_refused_by(&o, "offline (kernels_options.offline) forbids", "HF_HUB_OFFLINE");
}

static void test_unreachable(void **state)
{
	kernels__config cfg;
	kernels_options o;
	json_t *j = NULL;
	kernels__repo_type t = KERNELS__REPO_KERNEL;
	(void)state;
	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	o.endpoint = "http://127.0.0.1:9";
	o.max_retries = 2;
	o.offline = 0;
	assert_int_equal(kernels__config_load(&cfg, &o), 0);
	kernels__hub_set_backoff_base_ms(10);
	kernels__hub_down_forget_all();
	assert_int_equal(kernels__hub_api_json(&cfg, t, "org/name", "/refs", &j), KERNELS_ENETWORK);
	assert_null(j);
	/* Refused: one attempt, no retry ladder, and no advice to go offline. */
	assert_non_null(strstr(kernels_error_last(), "1 attempt)"));
	assert_null(strstr(kernels_error_last(), "HF_HUB_OFFLINE"));
	/* Remembered: the next request does not even try. */
	assert_int_equal(kernels__hub_api_json(&cfg, t, "org/name", "/refs", &j), KERNELS_ENETWORK);
	assert_non_null(strstr(kernels_error_last(), "did not answer"));
	assert_non_null(strstr(kernels_error_last(), "not asking again"));
	kernels__hub_down_forget_all();
	assert_int_equal(kernels__hub_api_json(&cfg, t, "../x", "/refs", &j), KERNELS_EINVAL);
	kernels__config_free(&cfg);
}

static void test_status_errors(void **state)
{
	kernels__hub_response r = { 0 };
	(void)state;
	r.status = 404;
	r.error_code = "RepoNotFound";
	assert_int_equal(kernels__hub_status_error(&r, "org/x"), KERNELS_ENOTFOUND);
	assert_non_null(strstr(kernels_error_last(), "HF_TOKEN"));
	r.error_code = "RevisionNotFound";
	assert_int_equal(kernels__hub_status_error(&r, "org/x"), KERNELS_ENOTFOUND);
	r.status = 403;
	r.error_code = "GatedRepo";
	assert_int_equal(kernels__hub_status_error(&r, "org/x"), KERNELS_EAUTH);
	r.status = 429;
	r.error_code = NULL;
	assert_int_equal(kernels__hub_status_error(&r, "org/x"), KERNELS_EHTTP);
	assert_non_null(strstr(kernels_error_last(), "rate limit"));
	r.status = 502;
	r.body = "{\"error\":\"bad gateway\"}";
	r.body_len = strlen(r.body);
	assert_int_equal(kernels__hub_status_error(&r, "org/x"), KERNELS_EHTTP);
	assert_non_null(strstr(kernels_error_last(), "bad gateway"));
}

/* ---- against the local Hub fixture ------------------------------------------------- */

#define BIG (1536 * 1024 + 5)

/* The world's tmp holds the sources of org/k; its commits: org/k in
 * slot 0, org/m in slot 1. */
typedef struct {
	test_world w;
	kernels__config cfg;
} fx;

static int fx_setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));
	char path[4096];
	unsigned char *big = malloc(BIG);
	kernels_options o;
	size_t i;

	for (i = 0; i < BIG; i++)
		big[i] = (unsigned char)(i * 31 + (i >> 9));
	assert_int_equal(test_world_start(&f->w, "hub-src"), 0);
	snprintf(path, sizeof(path), "%s/build/v/big.bin", f->w.tmp);
	test_write_file(path, big, BIG);
	free(big);
	for (i = 0; i < 5; i++) {
		snprintf(path, sizeof(path), "%s/build/v/sub/f%zu.txt", f->w.tmp, i);
		test_write_file(path, "x", 1);
	}
	assert_int_equal(test_world_publish(&f->w, 0, "--repo org/k --dir '%s' --branch main", f->w.tmp), 0);
	assert_int_equal(test_world_publish(&f->w, 1, "--repo org/m --type model --text a.txt=1 --branch main"), 0);
	assert_int_equal(test_hub_publish(f->w.hub, "--repo org/gated --text a.txt=1 --gated auto --grant hf_ok"), 0);
	assert_int_equal(test_hub_publish(f->w.hub, "--repo org/private --text a.txt=1 --private-token hf_secret"), 0);
	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	o.endpoint = test_hub_endpoint(f->w.hub);
	o.offline = 0;
	o.max_retries = 3;
	o.token = "hf_secret";
	assert_int_equal(kernels__config_load(&f->cfg, &o), 0);
	kernels__hub_set_backoff_base_ms(20);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	fx *f = *state;
	kernels__config_free(&f->cfg);
	test_world_stop(&f->w);
	free(f);
	return 0;
}

static int fx_reset(void **state)
{
	fx *f = *state;
	test_hub_faults_clear(f->w.hub);
	test_hub_log_clear(f->w.hub);
	return 0;
}

static void test_fx_model_fallback(void **state)
{
	fx *f = *state;
	kernels__repo_type t = KERNELS__REPO_KERNEL;
	json_t *j = NULL;

	/* Which form knows the repo: asked once, kernel first, then model. */
	assert_int_equal(kernels__hub_repo_type(&f->cfg, "org/m", "main", &t), 0);
	assert_int_equal(t, KERNELS__REPO_MODEL);
	assert_int_equal(kernels__hub_api_json(&f->cfg, t, "org/m", "/revision/main", &j), 0);
	assert_string_equal(json_string_value(json_object_get(j, "sha")), f->w.commit[1]);
	json_decref(j);
	assert_int_equal(test_hub_log_count(f->w.hub, "GET", "/api/kernels/org/m/revision/main"), 1);
	assert_int_equal(test_hub_log_count(f->w.hub, "GET", "/api/models/org/m/revision/main"), 2);
	/* A kernel repo stays one; an unknown revision is not a reason to fall back. */
	t = KERNELS__REPO_MODEL;
	assert_int_equal(kernels__hub_repo_type(&f->cfg, "org/k", "nope", &t), 0);
	assert_int_equal(t, KERNELS__REPO_KERNEL);
	assert_int_equal(kernels__hub_api_json(&f->cfg, t, "org/k", "/revision/nope", &j), KERNELS_ENOTFOUND);
	assert_non_null(strstr(kernels_error_last(), "revision not found"));
	assert_int_equal(test_hub_log_count(f->w.hub, "GET", "/api/models/org/k/"), 0);
	assert_int_equal(kernels__hub_repo_type(&f->cfg, "org/none", "main", &t), KERNELS_ENOTFOUND);
	assert_non_null(strstr(kernels_error_last(), "repository not found"));
	assert_int_equal(kernels__hub_api_json(&f->cfg, KERNELS__REPO_KERNEL, "org/none", "/refs", &j), KERNELS_ENOTFOUND);
	assert_non_null(strstr(kernels_error_last(), "repository not found"));
	assert_null(j);
}

static void test_fx_auth(void **state)
{
	fx *f = *state;
	kernels__config anon = f->cfg;
	kernels__hub_response r;
	kernels__repo_type t = KERNELS__REPO_KERNEL;
	json_t *j = NULL;
	char url[512];

	/* Private: visible with the token, "not found" without. */
	assert_int_equal(kernels__hub_api_json(&f->cfg, t, "org/private", "/refs", &j), 0);
	json_decref(j);
	anon.token = NULL;
	t = KERNELS__REPO_KERNEL;
	assert_int_equal(kernels__hub_api_json(&anon, t, "org/private", "/refs", &j), KERNELS_ENOTFOUND);
	assert_non_null(strstr(kernels_error_last(), "HF_TOKEN"));
	/* Gated: files need a granted token. */
	snprintf(url, sizeof(url), "/kernels/org/gated/resolve/main/a.txt");
	assert_int_equal(kernels__hub_request(&anon, url, 0, &r), 0);
	assert_int_equal(r.status, 401);
	assert_int_equal(kernels__hub_status_error(&r, "org/gated a.txt"), KERNELS_EAUTH);
	kernels__hub_response_free(&r);
}

static void test_fx_lfs_redirect(void **state)
{
	fx *f = *state;
	kernels__hub_response r;
	char url[512];
	json_t *log, *it;
	size_t i;
	int cdn = 0;

	snprintf(url, sizeof(url), "/kernels/org/k/resolve/%s/build/v/big.bin", f->w.commit[0]);
	/* HEAD: the Hub's metadata, the CDN is not contacted. */
	assert_int_equal(kernels__hub_request(&f->cfg, url, 1, &r), 0);
	assert_int_equal(r.status, 302);
	assert_non_null(r.location);
	assert_int_equal(strncmp(r.location, test_hub_cdn(f->w.hub), strlen(test_hub_cdn(f->w.hub))), 0);
	assert_int_equal(strlen(r.etag), 64);
	assert_int_equal(r.size, BIG);
	assert_string_equal(r.repo_commit, f->w.commit[0]);
	assert_null(r.body);
	kernels__hub_response_free(&r);
	assert_int_equal(test_hub_log_count(f->w.hub, NULL, "/lfs/"), 0);
	/* GET follows to the CDN, without the token. */
	assert_int_equal(kernels__hub_request(&f->cfg, url, 0, &r), 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body_len, BIG);
	assert_int_equal(strlen(r.etag), 64);          /* X-Linked-Etag of the first answer */
	assert_string_equal(r.repo_commit, f->w.commit[0]);
	kernels__hub_response_free(&r);
	log = NULL;
	{
		char *text = test_hub_log(f->w.hub);
		log = json_loads(text, 0, NULL);
		free(text);
	}
	json_array_foreach(log, i, it) {
		int auth = json_is_true(json_object_get(it, "authorization"));
		if (!strcmp(json_string_value(json_object_get(it, "listener")), "cdn")) {
			cdn++;
			assert_false(auth);
		} else
			assert_true(auth);
	}
	json_decref(log);
	assert_int_equal(cdn, 1);
}

static void test_fx_tree_paging(void **state)
{
	fx *f = *state;
	kernels__repo_type t = KERNELS__REPO_KERNEL;
	kernels__tree tree;
	size_t i, files = 0;

	assert_int_equal(test_hub_config(f->w.hub, "{\"page_size\": 2}"), 0);
	assert_int_equal(kernels__hub_tree_list(&f->cfg, t, "org/k", f->w.commit[0], "build/v", 1, &tree), 0);
	test_hub_config(f->w.hub, "{\"page_size\": 50}");
	assert_int_equal(tree.n, 7); /* big.bin, sub/, 5 files */
	for (i = 0; i < tree.n; i++) {
		if (i)
			assert_true(strcmp(tree.entries[i - 1].path, tree.entries[i].path) < 0);
		if (!tree.entries[i].is_dir) {
			files++;
			assert_int_equal(strlen(tree.entries[i].oid), 40);
		}
		if (!strcmp(tree.entries[i].path, "build/v/big.bin")) {
			assert_non_null(tree.entries[i].lfs_sha256);
			assert_int_equal(tree.entries[i].size, BIG);
		}
	}
	assert_int_equal(files, 6);
	assert_int_equal(test_hub_log_count(f->w.hub, "GET", "/tree/"), 4);
	kernels__tree_free(&tree);
	/* Non-recursive: the folders and files of one level. */
	assert_int_equal(kernels__hub_tree_list(&f->cfg, t, "org/k", f->w.commit[0], "build", 0, &tree), 0);
	assert_int_equal(tree.n, 1);
	assert_true(tree.entries[0].is_dir);
	assert_string_equal(tree.entries[0].path, "build/v");
	kernels__tree_free(&tree);
	assert_int_equal(kernels__hub_tree_list(&f->cfg, t, "org/k", f->w.commit[0], "build/nope", 1, &tree),
			 KERNELS_ENOTFOUND);
	assert_int_equal(kernels__hub_tree_list(&f->cfg, t, "org/k", f->w.commit[0], "../x", 1, &tree), KERNELS_EUNSAFE);
}

/* Standard proxy variables apply (curl reads them per transfer); NO_PROXY exempts hosts. */
static void test_fx_proxy_env(void **state)
{
	fx *f = *state;
	kernels__config c = f->cfg;
	kernels__hub_response r;

	c.max_retries = 0;
	setenv("http_proxy", "http://127.0.0.1:9", 1);
	unsetenv("no_proxy");
	unsetenv("NO_PROXY");
	assert_int_equal(kernels__hub_request(&c, "/api/kernels/org/k/refs", 0, &r), KERNELS_ENETWORK);
	assert_int_equal(test_hub_log_count(f->w.hub, NULL, NULL), 0);
	setenv("NO_PROXY", "127.0.0.1", 1);
	assert_int_equal(kernels__hub_request(&c, "/api/kernels/org/k/refs", 0, &r), 0);
	assert_int_equal(r.status, 200);
	kernels__hub_response_free(&r);
	unsetenv("http_proxy");
	unsetenv("NO_PROXY");

	/* HTTP_PROXY too, as Python's clients read it (libcurl reads only
	 * http_proxy for http://): unless http_proxy is set, even empty, or a
	 * CGI request (REQUEST_METHOD) could have set it from a header. */
	setenv("HTTP_PROXY", "http://127.0.0.1:9", 1);
	assert_int_equal(kernels__hub_request(&c, "/api/kernels/org/k/refs", 0, &r), KERNELS_ENETWORK);
	assert_int_equal(test_hub_log_count(f->w.hub, NULL, NULL), 1); /* the one NO_PROXY let through above */
	setenv("NO_PROXY", "127.0.0.1", 1);
	assert_int_equal(kernels__hub_request(&c, "/api/kernels/org/k/refs", 0, &r), 0);
	kernels__hub_response_free(&r);
	unsetenv("NO_PROXY");
	setenv("http_proxy", "", 1);
	assert_int_equal(kernels__hub_request(&c, "/api/kernels/org/k/refs", 0, &r), 0);
	kernels__hub_response_free(&r);
	unsetenv("http_proxy");
	setenv("REQUEST_METHOD", "GET", 1);
	assert_int_equal(kernels__hub_request(&c, "/api/kernels/org/k/refs", 0, &r), 0);
	kernels__hub_response_free(&r);
	unsetenv("REQUEST_METHOD");
	unsetenv("HTTP_PROXY");
}

/* The CA bundle: the caller's variables first (requests' two, then
 * OpenSSL's), an empty one as unset; without them libcurl's own bundle when
 * it is there, else a distribution's usual file that is. */
static void test_ca_bundle(void **state)
{
	const char *from, *ca;
	(void)state;

	unsetenv("REQUESTS_CA_BUNDLE");
	unsetenv("CURL_CA_BUNDLE");
	unsetenv("SSL_CERT_FILE");
	setenv("SSL_CERT_DIR", "/certs", 1);
	assert_string_equal(kernels__hub_ca_bundle(&from), "/certs");
	assert_string_equal(from, "SSL_CERT_DIR");
	setenv("SSL_CERT_FILE", "/s.pem", 1); /* a file first, as httpx */
	assert_string_equal(kernels__hub_ca_bundle(&from), "/s.pem");
	unsetenv("SSL_CERT_FILE");
	unsetenv("SSL_CERT_DIR");
	ca = kernels__hub_ca_bundle(&from);
	if (ca) {
		assert_int_equal(access(ca, R_OK), 0);
		assert_string_equal(from, "found on this system");
	} else {
		assert_string_equal(from, "libcurl's default");
	}
	setenv("SSL_CERT_FILE", "/s.pem", 1);
	assert_string_equal(kernels__hub_ca_bundle(&from), "/s.pem");
	assert_string_equal(from, "SSL_CERT_FILE");
	setenv("CURL_CA_BUNDLE", "/c.pem", 1);
	assert_string_equal(kernels__hub_ca_bundle(&from), "/c.pem");
	assert_string_equal(from, "CURL_CA_BUNDLE");
	setenv("REQUESTS_CA_BUNDLE", "/r.pem", 1);
	assert_string_equal(kernels__hub_ca_bundle(&from), "/r.pem");
	assert_string_equal(from, "REQUESTS_CA_BUNDLE");
	setenv("REQUESTS_CA_BUNDLE", "", 1);
	assert_string_equal(kernels__hub_ca_bundle(&from), "/c.pem");
	unsetenv("REQUESTS_CA_BUNDLE");
	unsetenv("CURL_CA_BUNDLE");
	unsetenv("SSL_CERT_FILE");
}

static void test_fx_retries(void **state)
{
	fx *f = *state;
	kernels__repo_type t = KERNELS__REPO_KERNEL;
	kernels__hub_response r;
	json_t *j = NULL;

	assert_int_equal(test_hub_fault(f->w.hub, "{\"path\": \"/refs\", \"mode\": \"503\", \"count\": 2}"), 0);
	assert_int_equal(kernels__hub_api_json(&f->cfg, t, "org/k", "/refs", &j), 0);
	json_decref(j);
	assert_int_equal(test_hub_log_count(f->w.hub, "GET", "/refs"), 3);

	test_hub_log_clear(f->w.hub);
	assert_int_equal(test_hub_fault(f->w.hub, "{\"path\": \"/refs\", \"mode\": \"429\", \"retry_after\": 1}"), 0);
	/* Waited for the server's second, not the short test backoff. */
	f->cfg.log_cb = test_log_all;
	test_logged_clear();
	assert_int_equal(kernels__hub_api_json(&f->cfg, t, "org/k", "/refs", &j), 0);
	json_decref(j);
	f->cfg.log_cb = NULL;
	if (!strstr(test_logged, "answered 429; retrying in 1050 ms"))
		fail_msg("no wait of the server's Retry-After in the log:\n%s", test_logged);
	assert_int_equal(test_hub_log_count(f->w.hub, "GET", "/refs"), 2);

	test_hub_log_clear(f->w.hub);
	assert_int_equal(test_hub_fault(f->w.hub, "{\"path\": \"/refs\", \"mode\": \"reset\"}"), 0);
	assert_int_equal(kernels__hub_api_json(&f->cfg, t, "org/k", "/refs", &j), 0);
	json_decref(j);
	assert_int_equal(test_hub_log_count(f->w.hub, "GET", "/refs"), 2);

	/* Bounded: max_retries + 1 attempts, then the last answer is the error. */
	test_hub_log_clear(f->w.hub);
	assert_int_equal(test_hub_fault(f->w.hub, "{\"path\": \"/refs\", \"mode\": \"500\", \"count\": -1}"), 0);
	assert_int_equal(kernels__hub_request(&f->cfg, "/api/kernels/org/k/refs", 0, &r), 0);
	assert_int_equal(r.status, 500);
	kernels__hub_response_free(&r);
	assert_int_equal(test_hub_log_count(f->w.hub, "GET", "/refs"), 4);
	/* A 500 may be one path's fault: the next request is sent again. */
	test_hub_log_clear(f->w.hub);
	assert_int_equal(kernels__hub_api_json(&f->cfg, t, "org/k", "/refs", &j), KERNELS_EHTTP);
	assert_non_null(strstr(kernels_error_last(), "HTTP 500"));
	assert_int_equal(test_hub_log_count(f->w.hub, "GET", "/refs"), 4);
	/* An outage's 503 is remembered as not serving: the next request is
	 * not sent. */
	test_hub_faults_clear(f->w.hub);
	assert_int_equal(test_hub_fault(f->w.hub, "{\"path\": \"/refs\", \"mode\": \"503\", \"count\": -1}"), 0);
	assert_int_equal(kernels__hub_request(&f->cfg, "/api/kernels/org/k/refs", 0, &r), 0);
	assert_int_equal(r.status, 503);
	kernels__hub_response_free(&r);
	test_hub_log_clear(f->w.hub);
	assert_int_equal(kernels__hub_api_json(&f->cfg, t, "org/k", "/refs", &j), KERNELS_EHTTP);
	assert_non_null(strstr(kernels_error_last(), "try again later"));
	assert_non_null(strstr(kernels_error_last(), "HTTP 503"));
	assert_int_equal(test_hub_log_count(f->w.hub, "GET", "/refs"), 0);
	test_hub_faults_clear(f->w.hub);
	kernels__hub_down_forget_all();

	/* Garbage instead of JSON is a parse error, not a crash. */
	assert_int_equal(test_hub_fault(f->w.hub, "{\"path\": \"/refs\", \"mode\": \"200\", \"body\": \"not an object\"}"), 0);
	assert_int_equal(kernels__hub_api_json(&f->cfg, t, "org/k", "/refs", &j), KERNELS_EPARSE);
	assert_null(j);
	assert_non_null(strstr(kernels_error_last(), "not valid JSON"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url_escape),     cmocka_unit_test(test_etag),
		cmocka_unit_test(test_retry_delays),
		cmocka_unit_test(test_user_agent),     cmocka_unit_test(test_user_agent_origin),
		cmocka_unit_test(test_origins),
		cmocka_unit_test(test_offline_refuses), cmocka_unit_test(test_unreachable),
		cmocka_unit_test(test_status_errors),  cmocka_unit_test(test_ca_bundle),
	};
	const struct CMUnitTest fixture[] = {
		cmocka_unit_test_setup(test_fx_model_fallback, fx_reset),
		cmocka_unit_test_setup(test_fx_auth, fx_reset),
		cmocka_unit_test_setup(test_fx_lfs_redirect, fx_reset),
		cmocka_unit_test_setup(test_fx_tree_paging, fx_reset),
		cmocka_unit_test_setup(test_fx_retries, fx_reset),
		cmocka_unit_test_setup(test_fx_proxy_env, fx_reset),
	};
	int failed = cmocka_run_group_tests_name("pure", tests, NULL, NULL);
	return failed + cmocka_run_group_tests_name("fixture", fixture, fx_setup, fx_teardown);
}
