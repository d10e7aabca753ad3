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
