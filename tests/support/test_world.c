/* The local-Hub world of a test file (test_world.h). */
#include "test_world.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

int test_world_start(test_world *w, const char *tag)
{
	memset(w, 0, sizeof(*w));
	snprintf(w->tag, sizeof(w->tag), "%s", tag);
	if (!(w->hub = test_hub_start()))
		return -1;
	if (!(w->tmp = test_mkdtemp(tag))) {
		fprintf(stderr, "test_world_start: no scratch folder for %s\n", tag);
		test_world_stop(w);
		return -1;
	}
	return 0;
}

int test_world_publish(test_world *w, int slot, const char *fmt, ...)
{
	char *args = NULL;
	va_list ap;
	int rc, n;

	if (slot < 0 || slot >= TEST_WORLD_COMMITS)
		return -1;
	va_start(ap, fmt);
	n = vasprintf(&args, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	/* Through "%s": the arguments are formatted once, here. */
	rc = test_hub_publish(w->hub, "%s", args);
	free(args);
	return rc != 0 ? -1 : test_world_keep_last(w, slot);
}

int test_world_keep_last(test_world *w, int slot)
{
	const char *last = test_hub_last_commit(w->hub);

	if (slot < 0 || slot >= TEST_WORLD_COMMITS || !last)
		return -1;
	snprintf(w->commit[slot], sizeof(w->commit[slot]), "%s", last);
	return strlen(last) == 40 && strspn(last, "0123456789abcdef") == 40 ? 0 : -1;
}

void test_world_fresh_cache(test_world *w)
{
	char tag[64];

	snprintf(tag, sizeof(tag), "%s-cache", w->tag);
	test_fresh_dir(&w->cache, tag);
	test_hub_log_clear(w->hub);
}

void test_world_options(const test_world *w, kernels_options *o, const kernels_system *sys)
{
	test_hub_options(o, w->hub, w->cache, sys);
}

int test_world_plant_file(test_world *w, const char *repo, const char *commit, const char *variant)
{
	char *path = NULL, *fault = NULL;
	int rc = -1;

	if (asprintf(&path, "%s/planted-listing.json", w->tmp) < 0)
		return -1;
	if (test_system("python3 -c 'import hashlib, json, sys, urllib.request\n"
			"l = json.load(urllib.request.urlopen(sys.argv[1]))\n"
			"b = json.dumps(\"x\").encode()\n"
			"l.append({\"type\": \"file\", \"size\": len(b), \"path\": \"build/%s/evil.txt\", "
			"\"oid\": hashlib.sha1(b\"blob %%d\\0\" %% len(b) + b).hexdigest()})\n"
			"json.dump({\"regex\": \"/tree/.*/build$\", \"mode\": \"200\", \"body\": l}, "
			"open(sys.argv[2], \"w\"))' "
			"'%s/api/kernels/%s/tree/%s/build?recursive=true&limit=1000' '%s'",
			variant, test_hub_endpoint(w->hub), repo, commit, path) == 0 &&
	    (fault = test_read_file(path, NULL)) && test_hub_fault(w->hub, fault) == 0 &&
	    test_hub_fault(w->hub, "{\"path\": \"/evil.txt\", \"mode\": \"200\", \"body\": \"x\"}") == 0)
		rc = 0;
	free(fault);
	free(path);
	return rc;
}

void test_world_stop(test_world *w)
{
	test_hub_stop(w->hub);
	test_rmtree_free(&w->tmp);
	test_rmtree_free(&w->cache);
	memset(w, 0, sizeof(*w));
}

int test_world_fresh(void **state)
{
	test_world_fresh_cache(*state);
	return 0;
}

int test_world_teardown(void **state)
{
	test_world_stop(*state);
	return 0;
}

int test_kernel_answer(const kernels_kernel *k)
{
	void *p = kernels_symbol(k, "kernel_answer");

	assert_non_null(p);
	return ((int (*)(void))(uintptr_t)p)();
}
