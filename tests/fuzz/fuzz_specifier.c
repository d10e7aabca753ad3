/*
 * libFuzzer target over the PEP 440 version and specifier parsers
 * (lib/util/specifier.c), built with clang and ASan/UBSan/LSan.
 *
 * Input: the first line is a specifier set, each further line a version
 * (up to MAX_VERSIONS); the whole input is also tried as a version and as a
 * specifier set. Besides memory errors and undefined behaviour, a finding is
 * any broken invariant:
 *  - a failure is EPARSE/ENOMEM with a message, and leaves no object behind;
 *  - the normalised form parses to an equal version and is a fixed point;
 *  - compare is antisymmetric and transitive, and agrees with equality of
 *    normalised forms;
 *  - contains with the default mode equals contains with pre-releases
 *    allowed, and refusing pre-releases only removes pre-releases;
 *  - filter keeps only members, select picks a kept version no other kept
 *    version exceeds, and reports ENOMATCH exactly when filter keeps none;
 *    select_tags picks a 'v' tag whose version the set accepts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/common.h"
#include "error.h"
#include "specifier.h"
#include "fuzz_common.h"

#define MAX_VERSIONS 12

static int sign(int c)
{
	return (c > 0) - (c < 0);
}

static void check_failure(int rc)
{
	CHECK(rc == KERNELS_EPARSE || rc == KERNELS_ENOMEM);
	CHECK(kernels_error_last_code() == rc);
	CHECK(kernels_error_last()[0] != '\0');
}

static kernels__version *check_version(const char *text)
{
	kernels__version *v = NULL, *again = NULL, *quiet;
	char *norm, *norm2;
	int rc = kernels__version_parse(text, &v);

	quiet = kernels__version_try_parse(text);
	if (rc < 0) {
		check_failure(rc);
		CHECK(v == NULL);
		CHECK(quiet == NULL || rc == KERNELS_ENOMEM);
		kernels__version_free(quiet);
		return NULL;
	}
	CHECK(quiet != NULL && kernels__version_compare(v, quiet) == 0);
	kernels__version_free(quiet);
	CHECK(strcmp(kernels__version_text(v), text) == 0);
	norm = kernels__version_normalized(v);
	CHECK(norm != NULL);
	/* The canonical form may be a few bytes longer than the text ("-1" is
	 * ".post1"): past the cap on input it is refused as too long. */
	if (strlen(norm) > KERNELS__SPECIFIER_MAX) {
		CHECK(kernels__version_parse(norm, &again) == KERNELS_EPARSE && again == NULL);
		free(norm);
		return v;
	}
	CHECK(kernels__version_parse(norm, &again) == 0);
	CHECK(kernels__version_compare(v, again) == 0);
	CHECK(kernels__version_is_prerelease(v) == kernels__version_is_prerelease(again));
	norm2 = kernels__version_normalized(again);
	CHECK(norm2 != NULL && strcmp(norm, norm2) == 0);
	free(norm);
	free(norm2);
	kernels__version_free(again);
	return v;
}

static void check_order(kernels__version **v, size_t n)
{
	size_t i, j, k;
	for (i = 0; i < n; i++) {
		CHECK(kernels__version_compare(v[i], v[i]) == 0);
		for (j = 0; j < n; j++) {
			int ij = sign(kernels__version_compare(v[i], v[j]));
			char *a, *b;
			CHECK(ij == -sign(kernels__version_compare(v[j], v[i])));
			a = kernels__version_normalized(v[i]);
			b = kernels__version_normalized(v[j]);
			/* equal normalised text means equal versions (not conversely: 1.0 == 1) */
			CHECK(a && b && (strcmp(a, b) != 0 || ij == 0));
			free(a);
			free(b);
			for (k = 0; k < n; k++) {
				int jk = sign(kernels__version_compare(v[j], v[k]));
				if (ij <= 0 && jk <= 0)
					CHECK(kernels__version_compare(v[i], v[k]) <= 0);
			}
		}
	}
}

static void check_set(const kernels__specifier_set *s, kernels__version **v, const char *const *texts, size_t n)
{
	size_t i, j, count, best, matches[MAX_VERSIONS];
	int mode;

	for (i = 0; i < n; i++) {
		int all, dflt, nopre;
		if (!v[i])
			continue;
		all = kernels__specifier_contains(s, v[i], 1);
		dflt = kernels__specifier_contains(s, v[i], -1);
		nopre = kernels__specifier_contains(s, v[i], 0);
		CHECK(all == 0 || all == 1);
		CHECK(dflt == all);
		CHECK(nopre == (all && !kernels__version_is_prerelease(v[i])));
	}
	for (mode = -1; mode <= 1; mode++) {
		int rc;
		CHECK(kernels__specifier_filter(s, texts, n, mode, matches, &count) == 0);
		CHECK(count <= n);
		for (j = 0; j < count; j++) {
			CHECK(matches[j] < n && v[matches[j]] != NULL);
			CHECK(j == 0 || matches[j] > matches[j - 1]);
			CHECK(kernels__specifier_contains(s, v[matches[j]], mode < 0 ? 1 : mode));
		}
		rc = kernels__specifier_select(s, texts, n, mode, &best);
		if (count == 0) {
			CHECK(rc == KERNELS_ENOMATCH || rc == KERNELS_ENOMEM);
			continue;
		}
		if (rc == KERNELS_ENOMEM)
			continue;
		CHECK(rc == 0 && best < n);
		for (j = 0; j < count && matches[j] != best; j++)
			;
		CHECK(j < count);
		for (j = 0; j < count; j++)
			CHECK(kernels__version_compare(v[matches[j]], v[best]) <= 0);
	}
	/* the tag rule picks a 'v' name whose rest is a version the set accepts
	 * (=== aside, which compares the normalised text) */
	if (kernels__specifier_select_tags(s, texts, n, &best) == 0) {
		kernels__version *t;
		CHECK(best < n && texts[best][0] == 'v');
		t = kernels__version_try_parse(texts[best] + 1);
		CHECK(t != NULL);
		CHECK(strstr(kernels__specifier_text(s), "===") || kernels__specifier_contains(s, t, 1));
		kernels__version_free(t);
	} else {
		CHECK(kernels_error_last_code() == KERNELS_ENOMATCH || kernels_error_last_code() == KERNELS_ENOMEM);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf, *line, *spec_text;
	const char *texts[MAX_VERSIONS];
	kernels__version *v[MAX_VERSIONS], *whole;
	kernels__specifier_set *s = NULL, *s2 = NULL;
	size_t n = 0, i;
	int rc;

	if (size > 2 * KERNELS__SPECIFIER_MAX)
		return 0;
	if (!(buf = malloc(size + 1)))
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';

	/* the whole input, as each kind of text */
	whole = check_version(buf);
	kernels__version_free(whole);
	rc = kernels__specifier_parse(buf, &s2);
	if (rc < 0) {
		check_failure(rc);
		CHECK(s2 == NULL);
	} else {
		CHECK(strcmp(kernels__specifier_text(s2), buf) == 0);
	}
	kernels__specifier_set_free(s2);
	(void)kernels__specifier_looks_like(buf);

	/* line 1: a specifier set; the next lines: versions */
	spec_text = buf;
	line = strchr(buf, '\n');
	if (line)
		*line++ = '\0';
	while (line && n < MAX_VERSIONS) {
		char *next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		texts[n] = line;
		v[n] = check_version(line);
		n++;
		line = next;
	}
	{
		kernels__version *valid[MAX_VERSIONS];
		size_t m = 0;
		for (i = 0; i < n; i++)
			if (v[i])
				valid[m++] = v[i];
		check_order(valid, m);
	}
	rc = kernels__specifier_parse(spec_text, &s);
	if (rc < 0) {
		check_failure(rc);
		CHECK(s == NULL);
	} else {
		check_set(s, v, texts, n);
		kernels__specifier_set_free(s);
	}
	for (i = 0; i < n; i++)
		kernels__version_free(v[i]);
	free(buf);
	kernels_error_clear();
	return 0;
}
