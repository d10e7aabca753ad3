/* The local Hub fixture seen from C: start, publish, query over HTTP and
 * with libgit2 (the library's own git client), inject a fault, read the
 * log, stop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <git2.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_hub.h"
#include "testutil.h"

struct reply {
	long status;
	char *body;
	size_t len;
	char etag[128];
	char commit[64];
	char location[512];
	char content_range[128];
};

static size_t on_body(char *p, size_t s, size_t n, void *ud)
{
	struct reply *r = ud;
	char *grown = realloc(r->body, r->len + s * n + 1);

	if (!grown)
		return 0;
	r->body = grown;
	memcpy(r->body + r->len, p, s * n);
	r->len += s * n;
	r->body[r->len] = '\0';
	return s * n;
}

static void header_value(const char *line, size_t n, const char *name, char *out, size_t cap)
{
	size_t k = strlen(name), len;

	if (n <= k + 1 || strncasecmp(line, name, k) || line[k] != ':')
		return;
	line += k + 1;
	n -= k + 1;
	while (n && *line == ' ')
		line++, n--;
	while (n && (line[n - 1] == '\r' || line[n - 1] == '\n'))
		n--;
	len = n < cap - 1 ? n : cap - 1;
	memcpy(out, line, len);
	out[len] = '\0';
}

static size_t on_header(char *p, size_t s, size_t n, void *ud)
{
	struct reply *r = ud;

	header_value(p, s * n, "ETag", r->etag, sizeof(r->etag));
	header_value(p, s * n, "X-Repo-Commit", r->commit, sizeof(r->commit));
	header_value(p, s * n, "Location", r->location, sizeof(r->location));
	header_value(p, s * n, "Content-Range", r->content_range, sizeof(r->content_range));
	return s * n;
}

/* GET without following redirects; returns the reply (free body). */
static struct reply get(const char *url, const char *range)
{
	struct reply r = { 0 };
	CURL *c = curl_easy_init();

	assert_non_null(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
	if (range)
		curl_easy_setopt(c, CURLOPT_RANGE, range);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
	curl_easy_cleanup(c);
	return r;
}

static char *url_of(const test_hub *h, const char *path)
{
	char *u;

	assert_true(asprintf(&u, "%s%s", test_hub_endpoint(h), path) > 0);
	return u;
}

static void test_start_publish_query(void **state)
{
	test_hub *h = test_hub_start();
	char *u, *c1, *log;
	struct reply r;
	json_t *j;

	(void)state;
	assert_non_null(h);
	assert_int_equal(test_hub_publish(h, "--repo org/k --text README.md=hello --tag v1.0.0 --branch main --branch v1"), 0);
	c1 = strdup(test_hub_last_commit(h));
	assert_int_equal(strlen(c1), 40);
	assert_int_equal(test_hub_publish(h, "--repo org/k --text README.md=world --random big.bin=2000000:3 --tag v1.1.0 "
					     "--branch main --branch v1"),
			 0);
	assert_string_not_equal(c1, test_hub_last_commit(h));
	/* A bad option fails instead of silently publishing. */
	assert_int_not_equal(test_hub_publish(h, "--repo not-an-id --text a=b 2>/dev/null"), 0);

	/* refs */
	u = url_of(h, "/api/kernels/org/k/refs");
	r = get(u, NULL);
	assert_int_equal(r.status, 200);
	j = json_loads(r.body, 0, NULL);
	assert_non_null(j);
	assert_int_equal(json_array_size(json_object_get(j, "tags")), 2);
	assert_int_equal(json_array_size(json_object_get(j, "branches")), 2);
	json_decref(j);
	free(r.body);
	free(u);

	/* short commit id expands */
	{
		char path[128];

		snprintf(path, sizeof(path), "/api/kernels/org/k/revision/%.7s", c1);
		u = url_of(h, path);
		r = get(u, NULL);
		assert_int_equal(r.status, 200);
		j = json_loads(r.body, 0, NULL);
		assert_string_equal(json_string_value(json_object_get(j, "sha")), c1);
		json_decref(j);
		free(r.body);
		free(u);
	}

	/* plain file: ETag is the blob sha1 of "world", range honoured */
	u = url_of(h, "/kernels/org/k/resolve/v1.1.0/README.md");
	r = get(u, "1-3");
	assert_int_equal(r.status, 206);
	assert_string_equal(r.body, "orl");
	assert_string_equal(r.etag, "\"04fea06420ca60892f73becee3614f6d023a4b7f\"");
	assert_string_equal(r.commit, test_hub_last_commit(h));
	assert_string_equal(r.content_range, "bytes 1-3/5");
	free(r.body);
	free(u);

	/* LFS file: 302 to the CDN, which serves the bytes */
	u = url_of(h, "/kernels/org/k/resolve/main/big.bin");
	r = get(u, NULL);
	assert_int_equal(r.status, 302);
	assert_true(strncmp(r.location, test_hub_cdn(h), strlen(test_hub_cdn(h))) == 0);
	free(r.body);
	free(u);
	{
		char loc[512];

		strcpy(loc, r.location);
		r = get(loc, NULL);
		assert_int_equal(r.status, 200);
		assert_int_equal(r.len, 2000000);
		free(r.body);
	}

	/* kernel repo is not a model repo; v1.0.0 has no big.bin */
	u = url_of(h, "/org/k/resolve/main/README.md");
	r = get(u, NULL);
	assert_int_equal(r.status, 404);
	free(r.body);
	free(u);
	u = url_of(h, "/kernels/org/k/resolve/v1.0.0/big.bin");
	r = get(u, NULL);
	assert_int_equal(r.status, 404);
	free(r.body);
	free(u);

	/* one injected 503, then normal again; the log shows both */
	test_hub_log_clear(h);
	assert_int_equal(test_hub_fault(h, "{\"path\": \"/resolve/main/README.md\", \"mode\": \"503\", \"count\": 1}"), 0);
	u = url_of(h, "/kernels/org/k/resolve/main/README.md");
	r = get(u, NULL);
	assert_int_equal(r.status, 503);
	free(r.body);
	r = get(u, NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "world");
	free(r.body);
	free(u);
	assert_int_equal(test_hub_log_count(h, "GET", "/resolve/main/README.md"), 2);
	assert_int_equal(test_hub_log_count(h, "HEAD", NULL), 0);
	log = test_hub_log(h);
	assert_non_null(log);
	assert_non_null(strstr(log, "\"status\": 503"));
	free(log);
	assert_int_not_equal(test_hub_fault(h, "{\"mode\": \"bogus\"}"), 0);

	free(c1);
	test_hub_stop(h);
}

/* Fetches v1 of `url` into a new bare repo at `dest` and checks a.txt is
 * "1".  Runs in a child that leaves with _exit: a remote bound to a repo
 * makes libgit2 1.5 leak pcre2 match data on every non-matching config
 * regexp (fixed upstream), which LeakSanitizer would report at exit. */
static int fetch_in_child(const char *dest, const char *url)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		char *spec = "+refs/heads/v1:refs/remotes/hub/v1";
		git_strarray specs = { &spec, 1 };
		git_fetch_options fopts;
		git_repository *repo = NULL;
		git_remote *remote = NULL;
		git_object *blob = NULL;
		int ok;

		git_fetch_options_init(&fopts, GIT_FETCH_OPTIONS_VERSION);
		ok = git_repository_init(&repo, dest, 1) == 0 && git_remote_create_anonymous(&remote, repo, url) == 0 &&
		     git_remote_fetch(remote, &specs, &fopts, NULL) == 0 &&
		     git_revparse_single(&blob, repo, "refs/remotes/hub/v1:a.txt") == 0 &&
		     git_blob_rawsize((git_blob *)blob) == 1 && !memcmp(git_blob_rawcontent((git_blob *)blob), "1", 1);
		if (!ok && git_error_last())
			fprintf(stderr, "fetch: %s\n", git_error_last()->message);
		_exit(ok ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_libgit2_ls_remote_and_clone(void **state)
{
	test_hub *h = test_hub_start();
	const git_remote_head **heads;
	git_remote *remote = NULL;
	size_t n, i;
	char *u, *dest;
	int seen_tag = 0, count = 0;

	(void)state;
	assert_non_null(h);
	assert_int_equal(test_hub_publish(h, "--repo org/k --text a.txt=1 --tag v1.0.0 --branch main --branch v1"), 0);
	assert_int_equal(test_hub_publish_json(h, "[{\"repo\": \"org/k\", \"files\": {\"a.txt\": \"2\"}, \"tags\": "
						 "[\"v2.0.0\"], \"branches\": [\"v2\"], \"annotated\": true}]"),
			 0);
	assert_int_not_equal(test_hub_publish_json(h, "[{\"repo\": \"org/k\", \"bogus\": 1}]"), 0);
	git_libgit2_init();

	u = url_of(h, "/kernels/org/k");
	assert_int_equal(git_remote_create_anonymous(&remote, NULL, u), 0);
	assert_int_equal(git_remote_connect(remote, GIT_DIRECTION_FETCH, NULL, NULL, NULL), 0);
	assert_int_equal(git_remote_ls(&heads, &n, remote), 0);
	for (i = 0; i < n; i++) {
		if (!strcmp(heads[i]->name, "refs/tags/v2.0.0^{}")) {
			char hex[41];

			git_oid_tostr(hex, sizeof(hex), &heads[i]->oid);
			assert_string_equal(hex, test_hub_last_commit(h));
			seen_tag = 1;
		}
		count++;
	}
	assert_true(seen_tag);
	assert_true(count >= 6); /* HEAD, 3 branches, 2 tags (+ peeled) */
	git_remote_free(remote);

	/* Fetch v1 into an empty repo (the POST upload-pack path). */
	dest = test_mkdtemp("hubclone");
	assert_int_equal(fetch_in_child(dest, u), 0);
	test_rmtree(dest);
	free(dest);
	free(u);

	/* a private repo: refused without a token, listed with a Bearer header
	 * (how the library passes its token to libgit2) */
	assert_int_equal(test_hub_publish(h, "--repo org/p --text a.txt=s --private-token tok-1"), 0);
	u = url_of(h, "/kernels/org/p");
	assert_int_equal(git_remote_create_anonymous(&remote, NULL, u), 0);
	assert_true(git_remote_connect(remote, GIT_DIRECTION_FETCH, NULL, NULL, NULL) < 0);
	git_remote_free(remote);
	{
		char *hdr = "Authorization: Bearer tok-1";
		git_strarray headers = { &hdr, 1 };

		assert_int_equal(git_remote_create_anonymous(&remote, NULL, u), 0);
		assert_int_equal(git_remote_connect(remote, GIT_DIRECTION_FETCH, NULL, NULL, &headers), 0);
		assert_int_equal(git_remote_ls(&heads, &n, remote), 0);
		assert_true(n >= 2);
		git_remote_free(remote);
	}
	assert_int_equal(test_hub_log_count_ex(h, "GET", "/kernels/org/p/info/refs", "hub", 401, 0), 1);
	assert_int_equal(test_hub_log_count_ex(h, "GET", "/kernels/org/p/info/refs", "hub", 200, 1), 1);

	free(u);

	/* the model URL form does not find a kernel repo */
	u = url_of(h, "/org/k");
	assert_int_equal(git_remote_create_anonymous(&remote, NULL, u), 0);
	assert_true(git_remote_connect(remote, GIT_DIRECTION_FETCH, NULL, NULL, NULL) < 0);
	git_remote_free(remote);
	free(u);
	git_libgit2_shutdown();
	test_hub_stop(h);
}

static void test_independent_instances(void **state)
{
	test_hub *a = test_hub_start(), *b = test_hub_start();
	char *root_a;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	assert_string_not_equal(test_hub_endpoint(a), test_hub_endpoint(b));
	assert_string_not_equal(test_hub_root(a), test_hub_root(b));
	root_a = strdup(test_hub_root(a));
	test_hub_stop(a);
	assert_false(test_exists(root_a));
	free(root_a);
	assert_int_equal(test_hub_log_count(b, NULL, NULL), 0);
	test_hub_stop(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_start_publish_query),
		cmocka_unit_test(test_libgit2_ls_remote_and_clone),
		cmocka_unit_test(test_independent_instances),
	};

	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
