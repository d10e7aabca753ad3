/*
 * A folder swapped for a link right after the cache walk that opened it:
 * the race of a shared cache, made certain. lib/cache.c calls the hook
 * kernels__test_after_walk (a weak reference, test build only) between a
 * walk and the writes through the descriptor it opened; this file defines
 * it. A test program links it only by calling these functions.
 */
#ifndef KERNELS_TEST_SWAP_WALK_H
#define KERNELS_TEST_SWAP_WALK_H

/* Arms the swap: the first time a walk reaches {root}/{level} or below,
 * that folder is renamed aside ({level}.aside) and a link to `outside`
 * put in its place. Both strings are borrowed until test_swap_disarm.
 * {level} is found in the walked path wherever it lies, so a walk that
 * starts below the cache root reaches it too. */
void test_swap_arm(const char *level, const char *outside);

/* The same, at the walk after the first `skip` that reach it. */
void test_swap_arm_nth(const char *level, const char *outside, int skip);

/* Disarms it; 1 when the swap was made since test_swap_arm, else 0 (no
 * walk reached the level: the test did not test what it meant to). */
int test_swap_disarm(void);

/* Counts, from now on, the walks that end exactly at {root}/{rel} (`rel`
 * borrowed until the next call; NULL stops counting): how often a stage
 * looked at one folder. test_walk_counted: the walks counted so far. */
void test_walk_count(const char *rel);
int test_walk_counted(void);

#endif
