/* The swap after a cache walk (swap_walk.h). */
#include "swap_walk.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

/* One swap armed at a time: the tests that arm it run one call at a time. */
static struct {
	const char *level, *outside;
	int skip, fired;
} swap;

/* Where the armed level lies in the walked path {root}/{rel}: the folder
 * to swap, or NULL. A walk may start below the cache root (the staging
 * folder of a bundle import walks from .libkernels/), so the level is
 * looked for as a run of whole names anywhere in the path. */
static char *reached(const char *root, const char *rel)
{
	size_t n = strlen(swap.level);
	char *full, *at;

	assert_true(asprintf(&full, "%s/%s", root, rel) > 0);
	for (at = strchr(full, '/'); at; at = strchr(at + 1, '/'))
		if (!strncmp(at + 1, swap.level, n) && (!at[1 + n] || at[1 + n] == '/')) {
			at[1 + n] = '\0';
			return full;
		}
	free(full);
	return NULL;
}

void kernels__test_after_walk(const char *root, const char *rel);
/* The walks test_walk_count watches for. */
static struct {
	const char *rel;
	int n;
} counted;

void test_walk_count(const char *rel)
{
	counted.rel = rel;
	counted.n = 0;
}

int test_walk_counted(void)
{
	return counted.n;
}

void kernels__test_after_walk(const char *root, const char *rel)
{
	char *at, *aside;

	if (counted.rel && !strcmp(rel, counted.rel))
		counted.n++;
	if (!swap.level || swap.fired || !(at = reached(root, rel)))
		return;
	if (swap.skip-- > 0) {
		free(at);
		return;
	}
	swap.fired = 1;
	assert_true(asprintf(&aside, "%s.aside", at) > 0);
	assert_int_equal(rename(at, aside), 0);
	assert_int_equal(symlink(swap.outside, at), 0);
	free(at);
	free(aside);
}

void test_swap_arm_nth(const char *level, const char *outside, int skip)
{
	swap.level = level;
	swap.outside = outside;
	swap.skip = skip;
	swap.fired = 0;
}

void test_swap_arm(const char *level, const char *outside)
{
	test_swap_arm_nth(level, outside, 0);
}

int test_swap_disarm(void)
{
	swap.level = NULL;
	swap.outside = NULL;
	return swap.fired;
}
