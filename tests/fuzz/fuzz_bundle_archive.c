/*
 * libFuzzer target over the bundle reader (lib/bundle.c): the input is
 * read both as a manifest (kernels__bundle_parse) and as a whole bundle
 * archive (kernels__bundle_reader over memory: decompression, the tar
 * reader behind the byte counter, the manifest entry, then every entry
 * checked against the manifest and hashed, with no sink: nothing written).
 * The seeds (corpus/bundle_archive) are small honest bundles, plain and
 * zstd, and a manifest alone.
 *
 * Invariants besides memory errors, leaks and undefined behaviour:
 *  - a failure has a code and a message;
 *  - a parsed manifest finds each of its entries by its archive path, and
 *    no entry path is absolute or climbs with "..";
 *  - an archive read to its end read exactly the bytes its manifest lists,
 *    and never more uncompressed bytes than the reader's limit.
 */
#include <string.h>

#include "fuzz_common.h"
#include "bundle.h"

static int climbs(const char *p)
{
	const char *s;

	if (p[0] == '/')
		return 1;
	for (s = p; s; s = strchr(s, '/') ? strchr(s, '/') + 1 : NULL)
		if (!strncmp(s, "..", 2) && (s[2] == '/' || s[2] == '\0'))
			return 1;
	return 0;
}

static void check_manifest(const kernels_bundle *b)
{
	size_t i;

	CHECK(kernels__bundle_find(b, KERNELS__BUNDLE_LOCK) == &b->lock);
	for (i = 0; i < b->nfiles; i++) {
		CHECK(kernels__bundle_find(b, b->files[i].entry) == &b->files[i]);
		CHECK(!climbs(b->files[i].entry));
		CHECK(strlen(b->files[i].f.sha256) == 64);
	}
	CHECK(kernels_bundle_file_count(b) == b->nfiles);
	CHECK(kernels_bundle_file_at(b, b->nfiles) == NULL);
}

static void as_manifest(const uint8_t *data, size_t size)
{
	kernels_bundle *b = NULL;
	int rc = kernels__bundle_parse((const char *)data, size, "fuzz", &b);

	if (rc < 0) {
		fuzz_check_failure(rc);
		CHECK(b == NULL);
		return;
	}
	check_manifest(b);
	kernels_bundle_free(b);
}

static void as_archive(const uint8_t *data, size_t size)
{
	kernels__bundle_reader r;
	kernels_bundle *b = NULL;
	unsigned long long bytes = 0;
	int rc = kernels__bundle_reader_open(&r, NULL, data, size, "fuzz");

	if (rc == 0 && (rc = kernels__bundle_read_manifest(&r, &b)) == 0) {
		check_manifest(b);
		rc = kernels__bundle_scan(&r, b, NULL, &bytes);
		if (rc == 0)
			CHECK(bytes == b->total);
	}
	if (rc < 0)
		fuzz_check_failure(rc);
	CHECK(r.got <= r.limit);
	kernels__bundle_reader_close(&r);
	kernels_bundle_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	kernels_error_clear();
	as_manifest(data, size);
	kernels_error_clear();
	as_archive(data, size);
	return 0;
}
