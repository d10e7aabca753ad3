/* The Hub client's pure pieces: escaping, ETags, path safety, retry timing,
 * User-Agent, origins. Network behaviour is tested against the fixture in
 * test_download*.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernels.h"
#include "config.h"
#include "../lib/hub.h" /* tests/support/hub.h is the fixture */

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

static void test_path_check(void **state)
{
	static const char *ok[] = { "build/v/a.so", "build/v/x/y/__init__.py", "a", "build/v/..hidden", "b/ü.txt" };
	static const char *bad[] = { "", "/etc/passwd", "build/../x", "..", "build/v/..", "a//b", "a/./b", "a/",
				     "a\\b", "a\nb", "a\x01", "a\x7f" };
	size_t i;
	(void)state;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		assert_int_equal(kernels__repo_path_check(ok[i]), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(kernels__repo_path_check(bad[i]), KERNELS_EUNSAFE);
	assert_non_null(strstr(kernels_error_last(), "refusing"));
}

static void test_retry_timing(void **state)
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
	assert_true(kernels__hub_transient_curl(CURLE_COULDNT_CONNECT));
	assert_false(kernels__hub_transient_curl(CURLE_SSL_CACERT_BADFILE));
}

static void test_user_agent(void **state)
{
	kernels__config cfg;
	char *ua;
	(void)state;
	assert_int_equal(kernels__config_load(&cfg, NULL), 0);
	cfg.telemetry = 1;
	assert_int_equal(kernels__hub_set_user_agent_extra("torch/2.7.0; cuda/12.6"), 0);
	ua = kernels__hub_user_agent(&cfg);
	assert_non_null(strstr(ua, "libkernels/" KERNELS_VERSION_STRING "; os/"));
	assert_non_null(strstr(ua, "; cpu/"));
	assert_non_null(strstr(ua, "; torch/2.7.0; cuda/12.6"));
	free(ua);
	cfg.telemetry = 0;
	ua = kernels__hub_user_agent(&cfg);
	assert_string_equal(ua, "libkernels/" KERNELS_VERSION_STRING);
	free(ua);
	kernels__hub_set_user_agent_extra(NULL);
	kernels__config_free(&cfg);
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

static void test_offline_refuses(void **state)
{
	kernels__config cfg;
	kernels__hub_response r;
	(void)state;
	assert_int_equal(kernels__config_load(&cfg, NULL), 0);
	cfg.offline = 1;
	assert_int_equal(kernels__hub_request(&cfg, "/api/kernels/a/b", 0, &r), KERNELS_EOFFLINE);
	assert_non_null(strstr(kernels_error_last(), "HF_HUB_OFFLINE"));
	kernels__config_free(&cfg);
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
	assert_int_equal(kernels__hub_api_json(&cfg, &t, "org/name", "/refs", &j), KERNELS_ENETWORK);
	assert_null(j);
	assert_non_null(strstr(kernels_error_last(), "3 attempt(s)"));
	assert_int_equal(kernels__hub_api_json(&cfg, &t, "../x", "/refs", &j), KERNELS_EINVAL);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url_escape),     cmocka_unit_test(test_etag),
		cmocka_unit_test(test_path_check),     cmocka_unit_test(test_retry_timing),
		cmocka_unit_test(test_user_agent),     cmocka_unit_test(test_origins),
		cmocka_unit_test(test_offline_refuses), cmocka_unit_test(test_unreachable),
		cmocka_unit_test(test_status_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
