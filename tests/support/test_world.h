/*
 * A test file's local-Hub world: one Hub (test_hub.h), a scratch folder
 * for the sources it publishes, a cache each test may renew, and the
 * commits the set-up published.  The group set-up starts it, the group
 * tear-down stops it; every pointer in it is owned by the world.
 */
#ifndef KERNELS_TEST_WORLD_H
#define KERNELS_TEST_WORLD_H

#include "kernels.h"
#include "test_hub.h"

/* How many published commits a world keeps by slot. */
#define TEST_WORLD_COMMITS 4

typedef struct test_world {
	test_hub *hub; /* owned: test_world_stop stops it */
	char *tmp;     /* owned: the sources' folder, removed by test_world_stop */
	char *cache;   /* owned: NULL until test_world_fresh_cache; removed by test_world_stop */
	char commit[TEST_WORLD_COMMITS][41]; /* what test_world_publish kept, by slot; "" before */
	char tag[48]; /* names the world's folders: test_world_start's tag */
} test_world;

/* Starts the Hub and makes tmp (test_mkdtemp(tag)). 0, or -1 with a
 * message on stderr and nothing left behind. */
int test_world_start(test_world *w, const char *tag);

/* Publishes (test_hub_publish's arguments) and keeps the commit it made
 * in w->commit[slot]. 0 when it published and the commit is 40 hex
 * digits; -1 otherwise. */
int test_world_publish(test_world *w, int slot, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Keeps the Hub's last published commit in w->commit[slot]: for a publish
 * made some other way (fx_publish_answer). 0 when it is 40 hex digits, -1
 * otherwise. */
int test_world_keep_last(test_world *w, int slot);

/* A test's fresh start: the cache becomes a new empty folder
 * (test_mkdtemp("<tag>-cache")) and the Hub's request log is cleared. */
void test_world_fresh_cache(test_world *w);

/* test_hub_options aimed at the world's Hub and cache, for `sys` (NULL:
 * detect). `sys` is borrowed: it must outlive the options' use. */
void test_world_options(const test_world *w, kernels_options *o, const kernels_system *sys);

/* A listing that plants a file: the Hub answers the build/ listing of the
 * kernel repo `repo` at `commit` with its honest listing and one file
 * more, build/{variant}/evil.txt, and serves that file with the bytes the
 * listing names (faults, until test_hub_faults_clear). 0, or -1. */
int test_world_plant_file(test_world *w, const char *repo, const char *commit, const char *variant);

/* Stops the Hub, removes tmp and cache; *w is then zeroed. */
void test_world_stop(test_world *w);

/* The same as cmocka fixtures, for a world the group set-up handed on
 * (*state = &world; cmocka passes it to every test and its set-up):
 * test_world_fresh is a test's set-up (test_world_fresh_cache),
 * test_world_teardown the group's tear-down (test_world_stop). */
int test_world_fresh(void **state);
int test_world_teardown(void **state);

/* What the test fixture's kernels (tests/data/variants/fixture.h) answer:
 * calls their `int kernel_answer(void)`; fails the running cmocka test when
 * the kernel has no such symbol. */
int test_kernel_answer(const kernels_kernel *k);

#endif
