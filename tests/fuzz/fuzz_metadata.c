/*
 * libFuzzer target over the metadata.json parser (lib/verify.c,
 * kernels__metadata_parse: what kernels_metadata_read runs on the file).
 *
 * Invariants besides memory errors, leaks and undefined behaviour:
 *  - a failure is EPARSE/ENOMEM with a message and no object;
 *  - a success has what the header promises: non-empty id, name, license;
 *    a version >= 0; a backend of the documented list; archs as a
 *    NULL-terminated list of archs_count strings (NULL when none); dirty
 *    0 or 1; no verified files yet;
 *  - the verdict depends on the JSON value only, not on how it is written:
 *    the same document re-serialised (keys sorted, compact) parses the same
 *    way, to the same fields; input that is not JSON never parses.
 */
#include <jansson.h>

#include "fuzz_common.h"
#include "kernels/metadata.h"
#include "verify.h"

static const char *const backends[] = { "cann", "cpu", "cuda", "metal", "neuron", "rocm", "tpu", "xpu" };

static void check_ok(const kernels_metadata *m)
{
	const char *const *archs;
	size_t i, n, nb = sizeof(backends) / sizeof(backends[0]);
	int known = 0;

	CHECK(kernels_metadata_id(m) && kernels_metadata_id(m)[0]);
	CHECK(kernels_metadata_name(m) && kernels_metadata_name(m)[0]);
	CHECK(kernels_metadata_license(m) && kernels_metadata_license(m)[0]);
	CHECK(kernels_metadata_version(m) >= 0);
	CHECK(kernels_metadata_backend(m) != NULL);
	for (i = 0; i < nb; i++)
		known |= !strcmp(kernels_metadata_backend(m), backends[i]);
	CHECK(known);
	n = kernels_metadata_arch_count(m);
	archs = kernels_metadata_archs(m);
	CHECK((n == 0) == (archs == NULL));
	for (i = 0; i < n; i++) {
		CHECK(archs[i] != NULL);
		CHECK(kernels_metadata_arch_at(m, i) == archs[i]);
	}
	CHECK(!archs || archs[n] == NULL);
	CHECK(kernels_metadata_arch_at(m, n) == NULL);
	CHECK(kernels_metadata_dirty(m) == 0 || kernels_metadata_dirty(m) == 1);
	CHECK(kernels__metadata_file_count(m) == 0);
}

static int same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static void check_same(const kernels_metadata *a, const kernels_metadata *b)
{
	size_t i;

	CHECK(same_str(kernels_metadata_id(a), kernels_metadata_id(b)));
	CHECK(same_str(kernels_metadata_name(a), kernels_metadata_name(b)));
	CHECK(same_str(kernels_metadata_license(a), kernels_metadata_license(b)));
	CHECK(same_str(kernels_metadata_backend(a), kernels_metadata_backend(b)));
	CHECK(kernels_metadata_version(a) == kernels_metadata_version(b));
	CHECK(kernels_metadata_dirty(a) == kernels_metadata_dirty(b));
	CHECK(kernels_metadata_arch_count(a) == kernels_metadata_arch_count(b));
	for (i = 0; i < kernels_metadata_arch_count(a); i++)
		CHECK(same_str(kernels_metadata_arch_at(a, i), kernels_metadata_arch_at(b, i)));
}

static int parse(const char *buf, size_t len, kernels_metadata **m)
{
	int rc = kernels__metadata_parse(buf, len, "fuzz/metadata.json", m);

	if (rc < 0) {
		fuzz_check_failure(rc);
		CHECK(rc == KERNELS_EPARSE || rc == KERNELS_ENOMEM);
		CHECK(*m == NULL);
	} else {
		CHECK(rc == 0 && *m != NULL);
		check_ok(*m);
	}
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	kernels_metadata *m = NULL, *again = NULL;
	json_t *doc;
	char *text;
	int rc, rc2;

	if (size > (1u << 20))
		return 0;
	rc = parse((const char *)data, size, &m);
	doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	if (!doc) {
		CHECK(rc == KERNELS_EPARSE);
		goto out;
	}
	text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	json_decref(doc);
	/* a long number may print longer than it was written: past the cap
	 * the verdict is the cap's */
	if (text && strlen(text) <= size) {
		rc2 = parse(text, strlen(text), &again);
		CHECK(rc2 == rc || rc == KERNELS_ENOMEM || rc2 == KERNELS_ENOMEM);
		if (rc == 0 && rc2 == 0)
			check_same(m, again);
	}
	free(text);
out:
	kernels_metadata_free(m);
	kernels_metadata_free(again);
	kernels_error_clear();
	return 0;
}
