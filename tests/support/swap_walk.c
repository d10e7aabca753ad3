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
	int fired;
} swap;

void kernels__test_after_walk(const char *root, const char *rel);
void kernels__test_after_walk(const char *root, const char *rel)
{
	size_t n = swap.level ? strlen(swap.level) : 0;
	char *at, *aside;

	if (!n || swap.fired || strncmp(rel, swap.level, n) || (rel[n] && rel[n] != '/'))
		return;
	swap.fired = 1;
	assert_true(asprintf(&at, "%s/%s", root, swap.level) > 0);
	assert_true(asprintf(&aside, "%s.aside", at) > 0);
	assert_int_equal(rename(at, aside), 0);
	assert_int_equal(symlink(swap.outside, at), 0);
	free(at);
	free(aside);
}

void test_swap_arm(const char *level, const char *outside)
{
	swap.level = level;
	swap.outside = outside;
	swap.fired = 0;
}

int test_swap_disarm(void)
{
	swap.level = NULL;
	swap.outside = NULL;
	return swap.fired;
}
