/*
 * libFuzzer target over the lock-file reader (lib/lock.c,
 * kernels_lock_load_string): both formats, the kernels 0.17 DEPENDENCY
 * one and the seed-era VARIANTS one.
 *
 * Invariants besides memory errors, leaks and undefined behaviour:
 *  - a failure is EPARSE/ENOMEM with a message and no lock;
 *  - every entry of a lock that reads is well-formed: a valid repo id, a
 *    lower-case hex commit (40, or 64 in DEPENDENCY format), the request
 *    that fits the format, DEPENDENCY entries sorted as kernels 0.17 sorts
 *    them without duplicates, VARIANTS entries with one entry per repo and
 *    well-formed, distinct variants; the lookups agree with the entries;
 *  - the writer round-trips: what kernels_lock_to_string writes reads back
 *    to the same entries and writes again byte for byte (a fixed point);
 *  - the builder agrees with the reader: the same entries added one by one
 *    to a new lock write the same text.
 */
#include "fuzz_common.h"
#include "kernels/lock.h"
#include "repo.h"

static int cmp_dep(const kernels_lock_entry *a, const kernels_lock_entry *b)
{
	int c = strcmp(a->repo_id, b->repo_id);

	if (c)
		return c;
	if (a->request != b->request)
		return a->request == KERNELS_LOCK_REQUEST_VERSION ? -1 : 1;
	if (a->request == KERNELS_LOCK_REQUEST_VERSION)
		return a->version < b->version ? -1 : a->version > b->version;
	return strcmp(a->revision, b->revision);
}

static void check_entry(const kernels_lock *lock, kernels_lock_format_t fmt, size_t i)
{
	const kernels_lock_entry *e = kernels_lock_entry_at(lock, i), *first;
	size_t k, j;

	CHECK(e != NULL && e->repo_id && e->commit);
	CHECK(kernels__repo_id_check(e->repo_id) == 0);
	first = kernels_lock_find(lock, e->repo_id);
	CHECK(first != NULL && !strcmp(first->repo_id, e->repo_id));
	for (k = 0; kernels_lock_entry_at(lock, k) != first; k++)
		CHECK(strcmp(kernels_lock_entry_at(lock, k)->repo_id, e->repo_id));
	CHECK(k <= i);
	if (fmt == KERNELS_LOCK_FORMAT_DEPENDENCY) {
		CHECK(fuzz_is_lower_hex(e->commit, 40) || fuzz_is_lower_hex(e->commit, 64));
		CHECK(e->request == KERNELS_LOCK_REQUEST_VERSION || e->request == KERNELS_LOCK_REQUEST_REVISION);
		CHECK((e->request == KERNELS_LOCK_REQUEST_REVISION) == (e->revision != NULL));
		CHECK(!e->revision || e->revision[0]);
		CHECK(e->variant_count == 0);
		if (i > 0)
			CHECK(cmp_dep(kernels_lock_entry_at(lock, i - 1), e) < 0);
		return;
	}
	CHECK(fuzz_is_lower_hex(e->commit, 40));
	CHECK(e->request == KERNELS_LOCK_REQUEST_NONE && e->revision == NULL);
	CHECK(first == e); /* one entry per repo */
	CHECK(e->variant_count == 0 || e->variants != NULL);
	for (k = 0; k < e->variant_count; k++) {
		const kernels_lock_variant *v = &e->variants[k];
		CHECK(v->name && v->name[0] && !strchr(v->name, '/') && strcmp(v->name, ".") && strcmp(v->name, ".."));
		CHECK(v->hash && !strncmp(v->hash, "sha256-", 7) && fuzz_is_lower_hex(v->hash + 7, 64));
		CHECK(v->hash_type && !strcmp(v->hash_type, "git_lfs_concat"));
		CHECK(kernels_lock_entry_variant_hash(e, v->name) == v->hash);
		for (j = 0; j < k; j++)
			CHECK(strcmp(e->variants[j].name, v->name));
	}
}

static void check_lock(const kernels_lock *lock)
{
	kernels_lock_format_t fmt = kernels_lock_format(lock);
	size_t i, n = kernels_lock_entry_count(lock);

	CHECK(fmt == KERNELS_LOCK_FORMAT_DEPENDENCY || fmt == KERNELS_LOCK_FORMAT_VARIANTS);
	for (i = 0; i < n; i++)
		check_entry(lock, fmt, i);
	CHECK(kernels_lock_entry_at(lock, n) == NULL);
}

static void check_same(const kernels_lock *a, const kernels_lock *b)
{
	size_t i, k, n = kernels_lock_entry_count(a);

	CHECK(kernels_lock_format(a) == kernels_lock_format(b) || n == 0);
	CHECK(kernels_lock_entry_count(b) == n);
	for (i = 0; i < n; i++) {
		const kernels_lock_entry *x = kernels_lock_entry_at(a, i), *y = kernels_lock_entry_at(b, i);
		CHECK(!strcmp(x->repo_id, y->repo_id) && !strcmp(x->commit, y->commit));
		CHECK(x->request == y->request && x->version == y->version);
		CHECK((!x->revision && !y->revision) || (x->revision && y->revision && !strcmp(x->revision, y->revision)));
		CHECK(x->variant_count == y->variant_count);
		for (k = 0; k < x->variant_count; k++) {
			CHECK(!strcmp(x->variants[k].name, y->variants[k].name));
			CHECK(!strcmp(x->variants[k].hash, y->variants[k].hash));
		}
	}
}

/* The entries of `lock`, added one by one to a new lock of its format. */
static kernels_lock *rebuild(const kernels_lock *lock)
{
	kernels_lock_format_t fmt = kernels_lock_format(lock);
	kernels_lock *copy = NULL;
	size_t i, k;

	CHECK(kernels_lock_new(&copy, fmt) == 0);
	/* in reverse, so the DEPENDENCY sort has work to do */
	for (i = kernels_lock_entry_count(lock); i-- > 0;) {
		const kernels_lock_entry *e = kernels_lock_entry_at(lock, i);
		if (fmt == KERNELS_LOCK_FORMAT_DEPENDENCY) {
			if (e->request == KERNELS_LOCK_REQUEST_VERSION)
				CHECK(kernels_lock_add_version(copy, e->repo_id, e->version, e->commit) == 0);
			else
				CHECK(kernels_lock_add_revision(copy, e->repo_id, e->revision, e->commit) == 0);
		}
	}
	for (i = 0; fmt == KERNELS_LOCK_FORMAT_VARIANTS && i < kernels_lock_entry_count(lock); i++) {
		const kernels_lock_entry *e = kernels_lock_entry_at(lock, i);
		CHECK(kernels_lock_add_entry(copy, e->repo_id, e->commit) == 0);
		for (k = 0; k < e->variant_count; k++)
			CHECK(kernels_lock_add_variant(copy, e->repo_id, e->variants[k].name, e->variants[k].hash) == 0);
		/* adding one twice is refused */
		CHECK(kernels_lock_add_entry(copy, e->repo_id, e->commit) == KERNELS_EINVAL);
	}
	return copy;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	kernels_lock *lock = NULL, *again = NULL, *copy;
	char *text = NULL, *text2 = NULL, *text3 = NULL;
	int rc;

	rc = kernels_lock_load_string(&lock, (const char *)data, size, "fuzz.lock");
	if (rc < 0) {
		fuzz_check_failure(rc);
		CHECK(rc == KERNELS_EPARSE || rc == KERNELS_ENOMEM);
		CHECK(lock == NULL);
		kernels_error_clear();
		return 0;
	}
	CHECK(rc == 0 && lock != NULL);
	check_lock(lock);

	CHECK(kernels_lock_to_string(&text, lock) == 0 && text != NULL);
	rc = kernels_lock_load_string(&again, text, strlen(text), "written.lock");
	if (rc < 0)
		fprintf(stderr, "the written lock does not read back: %s\n%s\n", kernels_error_last(), text);
	CHECK(rc == 0);
	check_lock(again);
	check_same(lock, again);
	CHECK(kernels_lock_to_string(&text2, again) == 0);
	CHECK(!strcmp(text, text2));

	copy = rebuild(lock);
	check_same(lock, copy);
	CHECK(kernels_lock_to_string(&text3, copy) == 0);
	CHECK(!strcmp(text, text3));

	kernels_free(text);
	kernels_free(text2);
	kernels_free(text3);
	kernels_lock_free(lock);
	kernels_lock_free(again);
	kernels_lock_free(copy);
	kernels_error_clear();
	return 0;
}
