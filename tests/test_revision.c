/* Revision resolution against the local Hub fixture: every accepted form,
 * both repo URL forms, private repos, the cache's refs/ offline and when
 * the Hub is unreachable, and the error messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_hub.h"
#include "kernels.h"
#include "refs.h"
#include "revision.h"
#include "testutil.h"
#include "thread_fail.h"

#include "hub.h"

static test_hub *hub;
static char c_v100[41], c_main[41], c_v2[41], c_rc[41], c_feat[41], c_annot[41], c_loose[41], c_model[41],
	c_secret[41], c_gated[41];

static void publish(char out[41], const char *args)
{
	assert_int_equal(test_hub_publish(hub, "%s", args), 0);
	if (out) {
		assert_int_equal(strlen(test_hub_last_commit(hub)), 40);
		memcpy(out, test_hub_last_commit(hub), 41);
	}
}

static int setup(void **state)
{
	(void)state;
	kernels__hub_set_backoff_base_ms(1);
	if (!(hub = test_hub_start()))
		return -1;
	/* org/kern: the seed era's tags and the current era's vN branches. */
	publish(c_v100, "--repo org/kern --text a=1 --branch main --branch v1 --tag v1.0.0");
	publish(c_main, "--repo org/kern --text a=2 --branch main --branch v1 --tag v1.1.2 --tag vjunk");
	publish(c_v2, "--repo org/kern --text a=3 --branch v2 --tag v2.0.0");
	publish(c_rc, "--repo org/kern --text a=4 --no-branch --tag v2.1.0rc1");
	publish(c_feat, "--repo org/kern --text a=5 --branch feature/x");
	publish(c_annot, "--repo org/kern --text a=6 --no-branch --tag v0.9.0 --annotated");
	/* A commit no ref names: only the revision API can expand it. */
	publish(c_loose, "--repo org/kern --text a=7 --branch tmp");
	publish(NULL, "--repo org/kern --delete-branch tmp");
	/* org/modl exists only as a model-type repo. */
	publish(c_model, "--repo org/modl --type model --text m=1 --branch main --tag v1.0.0");
	publish(c_secret, "--repo org/secret --text s=1 --branch main --private-token hf_good");
	publish(c_gated, "--repo org/gated --text g=1 --branch main --gated manual --grant hf_granted");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	test_hub_stop(hub);
	return 0;
}

typedef struct {
	char *cache;
	kernels_options opts;
} ctx;

static void ctx_init(ctx *c)
{
	c->cache = test_mkdtemp("revision");
	assert_non_null(c->cache);
	kernels_options_init(&c->opts, KERNELS_OPTIONS_VERSION);
	c->opts.endpoint = test_hub_endpoint(hub);
	c->opts.cache_dir = c->cache;
	c->opts.token = "";             /* no token, whatever the environment says */
	c->opts.offline = 0;
	c->opts.max_retries = 0;
	c->opts.log_cb = test_log_warnings;
	test_logged_clear();
}

static void ctx_free(ctx *c)
{
	test_rmtree(c->cache);
	free(c->cache);
}

/* Resolves and checks commit/kind/ref (ref NULL: none expected). */
static void expect(ctx *c, const char *repo, const char *rev, const char *commit, kernels_revision_kind_t kind,
		   const char *ref)
{
	kernels_revision *r = NULL;
	int rc = kernels_revision_resolve(&r, repo, rev, &c->opts);

	if (rc != 0)
		print_error("resolving '%s' of %s: %s\n", rev, repo, kernels_error_last());
	assert_int_equal(rc, 0);
	assert_string_equal(kernels_revision_commit(r), commit);
	assert_string_equal(kernels_revision_repo_id(r), repo);
	assert_int_equal(kernels_revision_kind(r), kind);
	if (ref)
		assert_string_equal(kernels_revision_ref(r), ref);
	else
		assert_null(kernels_revision_ref(r));
	kernels_revision_free(r);
}

/* Expects failure `code` with every string of `needles` in the message. */
static void expect_error(ctx *c, const char *repo, const char *rev, int code, const char *const *needles)
{
	kernels_revision *r = (kernels_revision *)1;
	int rc = kernels_revision_resolve(&r, repo, rev, &c->opts);

	if (rc != code)
		print_error("resolving '%s' of %s gave %d: %s\n", rev ? rev : "(null)", repo, rc, kernels_error_last());
	assert_int_equal(rc, code);
	assert_null(r);
	if (getenv("SHOW_ERRORS"))
		print_message("%s\n", kernels_error_last());
	for (; needles && *needles; needles++) {
		if (!strstr(kernels_error_last(), *needles))
			print_error("'%s' not in: %s\n", *needles, kernels_error_last());
		assert_non_null(strstr(kernels_error_last(), *needles));
	}
}

#define NEEDLES(...) ((const char *const[]){ __VA_ARGS__, NULL })

static char *ref_path(ctx *c, const char *folder, const char *name)
{
	char *p;
	assert_true(asprintf(&p, "%s/%s/refs/%s", c->cache, folder, name) > 0);
	return p;
}

static void expect_ref_file(ctx *c, const char *folder, const char *name, const char *commit)
{
	char *p = ref_path(c, folder, name), *text = test_read_file(p, NULL);

	if (!text)
		print_error("missing %s\n", p);
	assert_non_null(text);
	assert_string_equal(text, commit);
	free(text);
	free(p);
}

static void test_refused_input(void **state)
{
	ctx c;
	char longrev[300];
	(void)state;
	ctx_init(&c);
	expect_error(&c, "org/kern", NULL, KERNELS_EINVAL, NEEDLES("pin a branch", "tag", "commit", "version"));
	expect_error(&c, "org/kern", "", KERNELS_EINVAL, NEEDLES("pin a branch"));
	expect_error(&c, "org/kern", "ma\nin", KERNELS_EINVAL, NEEDLES("control character"));
	expect_error(&c, "org/kern", "v1/../../x", KERNELS_EINVAL, NEEDLES(".."));
	memset(longrev, 'a', sizeof(longrev) - 1);
	longrev[sizeof(longrev) - 1] = '\0';
	expect_error(&c, "org/kern", longrev, KERNELS_EINVAL, NEEDLES("longer than"));
	expect_error(&c, "../kern", "main", KERNELS_EINVAL, NEEDLES("org/name"));
	expect_error(&c, "org/a/b", "main", KERNELS_EINVAL, NEEDLES("org/name"));
	expect_error(&c, "org/k%20x", "main", KERNELS_EINVAL, NEEDLES("org/name"));
	expect_error(&c, NULL, "main", KERNELS_EINVAL, NEEDLES("repo id"));
	assert_int_equal(kernels_revision_resolve(NULL, "org/kern", "main", &c.opts), KERNELS_EINVAL);
	assert_int_equal(test_system("test -z \"$(ls -A '%s')\"", c.cache), 0);   /* nothing written */
	ctx_free(&c);
}

static void test_full_commit_no_request(void **state)
{
	char upper[41];
	ctx c;
	size_t i;
	(void)state;
	ctx_init(&c);
	test_hub_log_clear(hub);
	expect(&c, "org/kern", c_v2, c_v2, KERNELS_REVISION_COMMIT, NULL);
	for (i = 0; i < 41; i++)
		upper[i] = (char)(c_v2[i] >= 'a' && c_v2[i] <= 'f' ? c_v2[i] - 32 : c_v2[i]);
	expect(&c, "org/kern", upper, c_v2, KERNELS_REVISION_COMMIT, NULL);
	assert_int_equal(test_hub_log_count(hub, NULL, NULL), 0);
	ctx_free(&c);
}

/* The process's first listing readies libgit2 and OpenSSL on helpers
 * beside the refs request. In a process where no thread can be had (a
 * pids limit: EAGAIN), in a child here, before any listing of this
 * program, both are asked for, refused, and done in line: the names
 * resolve as anywhere else. */
static void test_first_listing_without_a_helper(void **state)
{
	int status = 0;
	pid_t pid;
	(void)state;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		kernels_revision *r = NULL;
		ctx c;
		int ok;

		ctx_init(&c);
		thread_fail_refuse(1);
		ok = kernels_revision_resolve(&r, "org/kern", "v1.0.0", &c.opts) == 0 &&
		     !strcmp(kernels_revision_commit(r), c_v100) && thread_fail_refused() >= 1;
		if (!ok)
			print_error("%s (%d threads refused)\n", r ? kernels_revision_commit(r) : kernels_error_last(),
				    thread_fail_refused());
		kernels_revision_free(r);
		ctx_free(&c);
		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_branches_and_tags(void **state)
{
	kernels_revision *r;
	ctx c;
	(void)state;
	ctx_init(&c);
	test_hub_log_clear(hub);
	expect(&c, "org/kern", "main", c_main, KERNELS_REVISION_BRANCH, "main");
	/* Through libgit2's smart HTTP listing, kernel URL form. */
	assert_true(test_hub_log_count(hub, "GET", "/kernels/org/kern/info/refs") >= 1);
	assert_int_equal(test_hub_log_count(hub, NULL, "/api/"), 0);
	expect(&c, "org/kern", "v1.0.0", c_v100, KERNELS_REVISION_TAG, "v1.0.0");
	expect(&c, "org/kern", "feature/x", c_feat, KERNELS_REVISION_BRANCH, "feature/x");
	expect(&c, "org/kern", "refs/heads/v2", c_v2, KERNELS_REVISION_BRANCH, "v2");
	/* An annotated tag resolves to the commit, not the tag object. */
	expect(&c, "org/kern", "v0.9.0", c_annot, KERNELS_REVISION_TAG, "v0.9.0");

	assert_int_equal(kernels_revision_resolve(&r, "org/kern", "main", &c.opts), 0);
	assert_int_equal(kernels_revision_is_model_repo(r), 0);
	kernels_revision_free(r);

	/* Recorded the way huggingface_hub does, nested names nested. */
	expect_ref_file(&c, "kernels--org--kern", "main", c_main);
	expect_ref_file(&c, "kernels--org--kern", "v1.0.0", c_v100);
	expect_ref_file(&c, "kernels--org--kern", "feature/x", c_feat);
	expect_ref_file(&c, "kernels--org--kern", "v0.9.0", c_annot);
	ctx_free(&c);
}

static void test_unknown_name(void **state)
{
	ctx c;
	(void)state;
	ctx_init(&c);
	expect_error(&c, "org/kern", "mian", KERNELS_ENOTFOUND, NEEDLES("'mian' not found", "org/kern", "nearest names: main"));
	expect_error(&c, "org/kern", "v1.0.1", KERNELS_ENOTFOUND, NEEDLES("v1.0.0"));
	expect_error(&c, "org/kern", "feature/y", KERNELS_ENOTFOUND, NEEDLES("feature/x"));
	assert_int_equal(test_system("test -z \"$(ls -A '%s')\"", c.cache), 0);
	ctx_free(&c);
}

static void test_short_commit(void **state)
{
	char s[16], upper[16];
	size_t i;
	ctx c;
	(void)state;
	ctx_init(&c);
	/* A short id of a commit a ref names needs no API call. */
	test_hub_log_clear(hub);
	snprintf(s, sizeof(s), "%.7s", c_v2);
	expect(&c, "org/kern", s, c_v2, KERNELS_REVISION_SHORT_COMMIT, NULL);
	assert_int_equal(test_hub_log_count(hub, NULL, "/revision/"), 0);
	for (i = 0; s[i]; i++)
		upper[i] = (char)(s[i] >= 'a' && s[i] <= 'f' ? s[i] - 32 : s[i]);
	upper[i] = '\0';
	expect(&c, "org/kern", upper, c_v2, KERNELS_REVISION_SHORT_COMMIT, NULL);

	/* One no ref names is expanded by /api/kernels/{repo}/revision/{rev}. */
	snprintf(s, sizeof(s), "%.9s", c_loose);
	expect(&c, "org/kern", s, c_loose, KERNELS_REVISION_SHORT_COMMIT, NULL);
	assert_int_equal(test_hub_log_count(hub, "GET", "/api/kernels/org/kern/revision/"), 1);

	/* Unknown: the Hub says RevisionNotFound. */
	snprintf(s, sizeof(s), "%s", c_loose[0] == '0' ? "1111111" : "0000000");
	expect_error(&c, "org/kern", s, KERNELS_ENOTFOUND, NEEDLES("short commit id", s, "full 40-hex"));
	ctx_free(&c);
}

static void test_version_specs(void **state)
{
	ctx c;
	(void)state;
	ctx_init(&c);
	expect(&c, "org/kern", ">=1.1.2,<2", c_main, KERNELS_REVISION_VERSION_SPEC, "v1.1.2");
	expect(&c, "org/kern", "~=1.0", c_main, KERNELS_REVISION_VERSION_SPEC, "v1.1.2");
	expect(&c, "org/kern", "==1.*", c_main, KERNELS_REVISION_VERSION_SPEC, "v1.1.2");
	expect(&c, "org/kern", "!=1.1.2,<2", c_v100, KERNELS_REVISION_VERSION_SPEC, "v1.0.0");
	expect(&c, "org/kern", "<1", c_annot, KERNELS_REVISION_VERSION_SPEC, "v0.9.0");
	/* Pre-releases only when the spec names one. */
	expect(&c, "org/kern", ">=2", c_v2, KERNELS_REVISION_VERSION_SPEC, "v2.0.0");
	expect(&c, "org/kern", ">=2.1.0rc1", c_rc, KERNELS_REVISION_VERSION_SPEC, "v2.1.0rc1");
	expect(&c, "org/kern", " >= 1.0 , < 1.1 ", c_v100, KERNELS_REVISION_VERSION_SPEC, "v1.0.0");
	/* The chosen tag is what refs/ records. */
	expect_ref_file(&c, "kernels--org--kern", "v1.1.2", c_main);
	expect_ref_file(&c, "kernels--org--kern", "v2.0.0", c_v2);

	expect_error(&c, "org/kern", ">=3", KERNELS_ENOMATCH,
		     NEEDLES("no version of org/kern satisfies '>=3'", "v0.9.0", "v1.0.0", "v1.1.2", "v2.0.0"));
	expect_error(&c, "org/kern", ">=1.1,<", KERNELS_EPARSE, NEEDLES("org/kern", "column"));
	expect_error(&c, "org/kern", "~=1", KERNELS_EPARSE, NEEDLES("~=1"));
	ctx_free(&c);
}

static void test_major_versions(void **state)
{
	ctx c;
	(void)state;
	ctx_init(&c);
	expect(&c, "org/kern", "1", c_main, KERNELS_REVISION_MAJOR, "v1");
	assert_non_null(strstr(test_logged, "newer major version v2"));
	expect_ref_file(&c, "kernels--org--kern", "v1", c_main);
	test_logged_clear();
	expect(&c, "org/kern", "2", c_v2, KERNELS_REVISION_MAJOR, "v2");
	assert_null(strstr(test_logged, "newer major"));
	expect_error(&c, "org/kern", "7", KERNELS_ENOTFOUND, NEEDLES("version 7 of org/kern not found", "available versions: 1, 2"));
	ctx_free(&c);
}

static void test_model_repo_fallback(void **state)
{
	kernels_revision *r;
	ctx c;
	(void)state;
	ctx_init(&c);
	test_hub_log_clear(hub);
	assert_int_equal(kernels_revision_resolve(&r, "org/modl", "v1.0.0", &c.opts), 0);
	assert_string_equal(kernels_revision_commit(r), c_model);
	assert_int_equal(kernels_revision_is_model_repo(r), 1);
	kernels_revision_free(r);
	/* The kernel form's git answer, then the model form's REST listing
	 * (git's RepoNotFound does not settle a model repo: olah answers so). */
	assert_int_equal(test_hub_log_count(hub, "GET", "/kernels/org/modl/info/refs"), 1);
	assert_int_equal(test_hub_log_count(hub, "GET", "/org/modl/info/refs"), 1);  /* substring of both */
	assert_int_equal(test_hub_log_count(hub, "GET", "/api/models/org/modl/refs"), 1);
	expect_ref_file(&c, "models--org--modl", "v1.0.0", c_model);
	expect(&c, "org/modl", ">=1", c_model, KERNELS_REVISION_VERSION_SPEC, "v1.0.0");
	ctx_free(&c);
}

static void test_unknown_repo(void **state)
{
	ctx c;
	(void)state;
	ctx_init(&c);
	expect_error(&c, "org/nope", "main", KERNELS_ENOTFOUND,
		     NEEDLES("org/nope not found", "kernels/org/nope", "check the name", "HF_TOKEN"));
	assert_int_equal(test_system("test -z \"$(ls -A '%s')\"", c.cache), 0);
	ctx_free(&c);
}

static void test_private_repo(void **state)
{
	kernels_revision *r;
	ctx c;
	(void)state;
	ctx_init(&c);
	expect_error(&c, "org/secret", "main", KERNELS_EAUTH, NEEDLES("org/secret", "set HF_TOKEN"));
	c.opts.token = "hf_wrong";
	expect_error(&c, "org/secret", "main", KERNELS_EAUTH, NEEDLES("refused the token", "HF_TOKEN"));
	assert_int_equal(test_system("test -z \"$(ls -A '%s')\"", c.cache), 0);
	c.opts.token = "hf_good";
	test_hub_log_clear(hub);
	expect(&c, "org/secret", "main", c_secret, KERNELS_REVISION_BRANCH, "main");
	assert_int_equal(kernels_revision_resolve(&r, "org/secret", "main", &c.opts), 0);
	assert_int_equal(kernels_revision_is_model_repo(r), 0);
	kernels_revision_free(r);
	/* The log records that the header went along. */
	{
		char *log = test_hub_log(hub);
		assert_non_null(log);
		assert_non_null(strstr(log, "\"authorization\": true"));
		assert_null(strstr(log, "\"authorization\": false"));
		free(log);
	}
	/* Short ids of private repos go through the API with the token. */
	{
		char s[16];
		snprintf(s, sizeof(s), "%.8s", c_secret);
		expect(&c, "org/secret", s, c_secret, KERNELS_REVISION_SHORT_COMMIT, NULL);
	}
	ctx_free(&c);
}

/* Gated repos: git asks for credentials; a granted token gets through. */
static void test_gated_repo(void **state)
{
	ctx c;
	(void)state;
	ctx_init(&c);
	expect_error(&c, "org/gated", "main", KERNELS_EAUTH, NEEDLES("org/gated", "gated", "set HF_TOKEN"));
	c.opts.token = "hf_not_granted";
	expect_error(&c, "org/gated", "main", KERNELS_EAUTH, NEEDLES("refused the token"));
	c.opts.token = "hf_granted";
	expect(&c, "org/gated", "main", c_gated, KERNELS_REVISION_BRANCH, "main");
	ctx_free(&c);
}

/* Online answers recorded in refs/ let offline calls resolve with no
 * request at all. */
static void test_offline(void **state)
{
	ctx c;
	(void)state;
	ctx_init(&c);
	expect(&c, "org/kern", "main", c_main, KERNELS_REVISION_BRANCH, "main");
	expect(&c, "org/kern", ">=1.1.2,<2", c_main, KERNELS_REVISION_VERSION_SPEC, "v1.1.2");
	expect(&c, "org/kern", "1", c_main, KERNELS_REVISION_MAJOR, "v1");
	expect(&c, "org/kern", "2", c_v2, KERNELS_REVISION_MAJOR, "v2");
	expect(&c, "org/kern", "v1.0.0", c_v100, KERNELS_REVISION_TAG, "v1.0.0");
	expect(&c, "org/modl", "main", c_model, KERNELS_REVISION_BRANCH, "main");

	test_hub_log_clear(hub);
	c.opts.offline = 1;
	test_logged_clear();
	expect(&c, "org/kern", "main", c_main, KERNELS_REVISION_BRANCH, "main");
	expect(&c, "org/kern", "v1.0.0", c_v100, KERNELS_REVISION_TAG, "v1.0.0");
	expect(&c, "org/kern", ">=1.1.2,<2", c_main, KERNELS_REVISION_VERSION_SPEC, "v1.1.2");
	expect(&c, "org/kern", "~=1.0", c_main, KERNELS_REVISION_VERSION_SPEC, "v1.1.2");
	expect(&c, "org/kern", "1", c_main, KERNELS_REVISION_MAJOR, "v1");
	assert_non_null(strstr(test_logged, "newer major version v2"));
	expect(&c, "org/kern", c_loose, c_loose, KERNELS_REVISION_COMMIT, NULL);
	{
		char s[16];
		snprintf(s, sizeof(s), "%.7s", c_v100);
		expect(&c, "org/kern", s, c_v100, KERNELS_REVISION_SHORT_COMMIT, NULL);
	}
	{
		kernels_revision *r;
		assert_int_equal(kernels_revision_resolve(&r, "org/modl", "main", &c.opts), 0);
		assert_int_equal(kernels_revision_is_model_repo(r), 1);
		kernels_revision_free(r);
	}
	expect_error(&c, "org/kern", "v9", KERNELS_EOFFLINE, NEEDLES("offline", "'v9'", "nearest names", "online"));
	expect_error(&c, "org/kern", ">=3", KERNELS_EOFFLINE, NEEDLES("offline", ">=3", "v1.1.2", "online"));
	expect_error(&c, "org/other", "main", KERNELS_EOFFLINE,
		     NEEDLES("org/other is not in the cache", "leave out --offline: kernels_options.offline = 0"));
	expect_error(&c, "org/kern", "1111111", KERNELS_EOFFLINE, NEEDLES("short commit id"));
	expect_error(&c, "org/kern", ">=1,<", KERNELS_EPARSE, NEEDLES("column"));
	assert_int_equal(test_hub_log_count(hub, NULL, NULL), 0);

	/* HF_HUB_OFFLINE=1 in the environment does the same. */
	c.opts.offline = KERNELS_FROM_ENV;
	setenv("HF_HUB_OFFLINE", "1", 1);
	expect(&c, "org/kern", "main", c_main, KERNELS_REVISION_BRANCH, "main");
	unsetenv("HF_HUB_OFFLINE");
	assert_int_equal(test_hub_log_count(hub, NULL, NULL), 0);
	ctx_free(&c);
}

/* Offline, several cached commits sharing a prefix are ambiguous. */
static void test_offline_ambiguous(void **state)
{
	ctx c;
	(void)state;
	ctx_init(&c);
	assert_int_equal(test_system("mkdir -p '%s/kernels--org--kern/snapshots/abcdef1%s' "
				     "'%s/kernels--org--kern/snapshots/abcdef1%s'", c.cache,
				     "000000000000000000000000000000000", c.cache, "fff000000000000000000000000000000"), 0);
	c.opts.offline = 1;
	expect_error(&c, "org/kern", "abcdef1", KERNELS_EAMBIGUOUS, NEEDLES("ambiguous", "more digits"));
	expect(&c, "org/kern", "abcdef1f", "abcdef1fff000000000000000000000000000000", KERNELS_REVISION_SHORT_COMMIT, NULL);
	ctx_free(&c);
}

static void test_unreachable_fallback(void **state)
{
	char *dead = test_dead_endpoint();
	ctx c;
	(void)state;
	assert_non_null(dead);
	ctx_init(&c);
	expect(&c, "org/kern", "main", c_main, KERNELS_REVISION_BRANCH, "main");
	expect(&c, "org/kern", ">=1,<2", c_main, KERNELS_REVISION_VERSION_SPEC, "v1.1.2");

	c.opts.endpoint = dead;
	test_logged_clear();
	expect(&c, "org/kern", "main", c_main, KERNELS_REVISION_BRANCH, "main");
	assert_non_null(strstr(test_logged, "cannot be reached"));
	assert_non_null(strstr(test_logged, "using the cached answer"));
	expect(&c, "org/kern", ">=1.1,<2", c_main, KERNELS_REVISION_VERSION_SPEC, "v1.1.2");

	expect_error(&c, "org/kern", "v2.0.0", KERNELS_ENETWORK, NEEDLES("cannot be reached", "'v2.0.0'", "network"));
	expect_error(&c, "org/never", "main", KERNELS_ENETWORK,
		     NEEDLES(dead, "cannot be reached", "org/never is not in the cache", "HF_ENDPOINT"));

	/* An unresolvable host name is unreachable too. */
	c.opts.endpoint = "http://nonexistent.invalid";
	test_logged_clear();
	expect(&c, "org/kern", "main", c_main, KERNELS_REVISION_BRANCH, "main");
	assert_non_null(strstr(test_logged, "cannot be reached"));
	ctx_free(&c);
	free(dead);
}

/* A Hub that accepts and then stays silent counts as unreachable once
 * the timeout passes. */
static void test_timeout_fallback(void **state)
{
	ctx c;
	(void)state;
	ctx_init(&c);
	expect(&c, "org/kern", "main", c_main, KERNELS_REVISION_BRANCH, "main");
	assert_int_equal(test_hub_fault(hub, "{\"path\": \"/kernels/org/kern/info/refs\", \"mode\": \"slow\", "
				       "\"delay\": 3, \"count\": 1}"), 0);
	c.opts.timeout_ms = 200;
	test_logged_clear();
	expect(&c, "org/kern", "main", c_main, KERNELS_REVISION_BRANCH, "main");
	assert_non_null(strstr(test_logged, "no answer within"));
	test_hub_faults_clear(hub);
	ctx_free(&c);
}

static void test_retries_5xx(void **state)
{
	ctx c;
	(void)state;
	ctx_init(&c);
	test_hub_log_clear(hub);
	assert_int_equal(test_hub_fault(hub, "{\"path\": \"/kernels/org/kern/info/refs\", \"mode\": \"503\", \"count\": 2}"), 0);
	c.opts.max_retries = 3;
	expect(&c, "org/kern", "main", c_main, KERNELS_REVISION_BRANCH, "main");
	assert_int_equal(test_hub_log_count(hub, "GET", "/kernels/org/kern/info/refs"), 3);
	/* Without retries the 503 outlives them: the Hub is not serving, so
	 * the cache answers what it recorded, with a warning naming it... */
	assert_int_equal(test_hub_fault(hub, "{\"path\": \"/kernels/org/kern/info/refs\", \"mode\": \"503\", \"count\": 1}"), 0);
	c.opts.max_retries = 0;
	test_logged_clear();
	expect(&c, "org/kern", "main", c_main, KERNELS_REVISION_BRANCH, "main");
	assert_non_null(strstr(test_logged, "HTTP 503"));
	kernels__hub_down_forget_all(); /* the 503 left the Hub remembered as not serving */
	/* ...and what it lacks is an HTTP error naming it, not "unreachable". */
	ctx_free(&c);
	ctx_init(&c);
	c.opts.max_retries = 0;
	assert_int_equal(test_hub_fault(hub, "{\"path\": \"/kernels/org/kern/info/refs\", \"mode\": \"503\", \"count\": 1}"), 0);
	expect_error(&c, "org/kern", "main", KERNELS_EHTTP, NEEDLES("503", "not in the cache"));
	test_hub_faults_clear(hub);
	kernels__hub_down_forget_all();
	ctx_free(&c);
}

static void test_versions_list(void **state)
{
	static const char *want[] = { "v0.9.0", "v1", "v1.0.0", "v1.1.2", "v2", "v2.0.0", "v2.1.0rc1" };
	char **v;
	size_t n, i;
	ctx c;
	(void)state;
	ctx_init(&c);
	assert_int_equal(kernels_versions_list(&v, &n, "org/kern", &c.opts), 0);
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	for (i = 0; i < n; i++)
		assert_string_equal(v[i], want[i]);
	kernels_free(v);

	assert_int_equal(kernels_versions_list(&v, &n, "org/modl", &c.opts), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0], "v1.0.0");
	kernels_free(v);

	assert_int_equal(kernels_versions_list(&v, &n, "org/nope", &c.opts), KERNELS_ENOTFOUND);
	assert_int_equal(kernels_versions_list(&v, &n, "bad", &c.opts), KERNELS_EINVAL);

	/* Offline: what refs/ recorded. */
	expect(&c, "org/kern", "1", c_main, KERNELS_REVISION_MAJOR, "v1");
	expect(&c, "org/kern", ">=1", c_v2, KERNELS_REVISION_VERSION_SPEC, "v2.0.0");
	expect(&c, "org/kern", "main", c_main, KERNELS_REVISION_BRANCH, "main");
	c.opts.offline = 1;
	test_hub_log_clear(hub);
	assert_int_equal(kernels_versions_list(&v, &n, "org/kern", &c.opts), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0], "v1");
	assert_string_equal(v[1], "v2.0.0");
	kernels_free(v);
	assert_int_equal(kernels_versions_list(&v, &n, "org/nope", &c.opts), KERNELS_EOFFLINE);
	assert_non_null(strstr(kernels_error_last(), "org/nope"));
	assert_int_equal(test_hub_log_count(hub, NULL, NULL), 0);
	ctx_free(&c);
}

/* The standard proxy variables are honoured for https (the real Hub):
 * libgit2 asks the proxy for a CONNECT tunnel. The fixture, posing as the
 * proxy, refuses CONNECT (501), which proves the proxy was used for a host
 * name that does not even resolve; no_proxy turns the proxy off again.
 * (libgit2 1.5 sends plain-http requests directly, proxy or not.) */
static void test_proxy(void **state)
{
	ctx c;
	(void)state;
	ctx_init(&c);
	c.opts.endpoint = "https://kernels-hub.invalid";
	setenv("https_proxy", test_hub_endpoint(hub), 1);
	unsetenv("no_proxy");
	unsetenv("NO_PROXY");
	/* Ref listing goes through the Hub client, so through the proxy too. */
	expect_error(&c, "org/kern", "main", KERNELS_ENETWORK, NEEDLES("CONNECT tunnel failed, response 501"));
	setenv("no_proxy", "kernels-hub.invalid", 1);
	expect_error(&c, "org/kern", "main", KERNELS_ENETWORK, NEEDLES("resolve host", "kernels-hub.invalid"));
	unsetenv("no_proxy");
	unsetenv("https_proxy");
	ctx_free(&c);
}

typedef struct {
	const char *cache;
	int failures;
} thread_arg;

static void *resolve_many(void *p)
{
	thread_arg *a = p;
	static const char *revs[] = { "main", "1", ">=1,<2", "v1.0.0", "feature/x" };
	kernels_options o;
	int i;

	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	o.endpoint = test_hub_endpoint(hub);
	o.cache_dir = a->cache;
	o.token = "";
	o.offline = 0;
	o.log_cb = test_log_warnings;
	for (i = 0; i < 10; i++) {
		kernels_revision *r;
		if (kernels_revision_resolve(&r, "org/kern", revs[i % 5], &o) != 0)
			a->failures++;
		else if (strcmp(kernels_revision_commit(r), i % 5 == 3 ? c_v100 : i % 5 == 4 ? c_feat : c_main))
			a->failures++;
		kernels_revision_free(r);
	}
	return NULL;
}

static void test_threads(void **state)
{
	pthread_t t[4];
	thread_arg a[4];
	ctx c;
	int i;
	(void)state;
	ctx_init(&c);
	for (i = 0; i < 4; i++) {
		a[i].cache = c.cache;
		a[i].failures = 0;
		assert_int_equal(pthread_create(&t[i], NULL, resolve_many, &a[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(a[i].failures, 0);
	}
	expect_ref_file(&c, "kernels--org--kern", "v1", c_main);
	ctx_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refused_input),
		cmocka_unit_test(test_full_commit_no_request),
		cmocka_unit_test(test_first_listing_without_a_helper), /* before any other listing */
		cmocka_unit_test(test_branches_and_tags),
		cmocka_unit_test(test_unknown_name),
		cmocka_unit_test(test_short_commit),
		cmocka_unit_test(test_version_specs),
		cmocka_unit_test(test_major_versions),
		cmocka_unit_test(test_model_repo_fallback),
		cmocka_unit_test(test_unknown_repo),
		cmocka_unit_test(test_private_repo),
		cmocka_unit_test(test_gated_repo),
		cmocka_unit_test(test_offline),
		cmocka_unit_test(test_offline_ambiguous),
		cmocka_unit_test(test_unreachable_fallback),
		cmocka_unit_test(test_timeout_fallback),
		cmocka_unit_test(test_retries_5xx),
		cmocka_unit_test(test_versions_list),
		cmocka_unit_test(test_proxy),
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
