/* PEP 440 versions and specifier sets (lib/util/specifier.c).
 *
 * The bulk of the checking is table-driven: tests/data/pep440/cases.tsv holds
 * thousands of cases whose answers `packaging` computed (generate.py next to
 * it); every line must agree. KERNELS_PEP440_TABLE overrides the table's path
 * (tests/python/test_specifier_packaging.py runs this program over a table
 * it just regenerated). The other tests cover what `packaging` cannot say:
 * our error messages, limits and argument checks. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernels.h"
#include "specifier.h"
#include "testutil.h"

/* ---- the table ---- */

#define MAX_FIELDS 64

struct table_run {
	size_t cases, failures, line;
	const char *path;
};

static void fail_case(struct table_run *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail_case(struct table_run *run, const char *fmt, ...)
{
	va_list ap;
	run->failures++;
	if (run->failures > 50)
		return;
	fprintf(stderr, "%s:%zu: ", run->path, run->line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Undoes generate.py's escape() in place. 0, or -1 when malformed. */
static int unescape(char *s)
{
	char *w = s;
	while (*s) {
		if (*s != '\\') {
			*w++ = *s++;
			continue;
		}
		s++;
		switch (*s) {
		case '\\': *w++ = '\\'; s++; break;
		case 't': *w++ = '\t'; s++; break;
		case 'n': *w++ = '\n'; s++; break;
		case 'r': *w++ = '\r'; s++; break;
		case 'x':
			if (hexval(s[1]) < 0 || hexval(s[2]) < 0)
				return -1;
			*w++ = (char)(hexval(s[1]) * 16 + hexval(s[2]));
			s += 3;
			break;
		default:
			return -1;
		}
	}
	*w = '\0';
	return 0;
}

static int mode_of(const char *m)
{
	if (!strcmp(m, "true"))
		return 1;
	if (!strcmp(m, "false"))
		return 0;
	return -1;
}

static void check_version(struct table_run *run, char **f, int nf)
{
	kernels__version *v = NULL, *again = NULL;
	char *norm = NULL, *norm2 = NULL;

	if (nf != 4)
		return fail_case(run, "version line needs 4 fields");
	if (kernels__version_parse(f[1], &v) < 0)
		return fail_case(run, "'%s' should parse (as %s) but: %s", f[1], f[2], kernels_error_last());
	norm = kernels__version_normalized(v);
	if (!norm || strcmp(norm, f[2]))
		fail_case(run, "'%s' normalises to '%s', packaging says '%s'", f[1], norm ? norm : "(null)", f[2]);
	if (kernels__version_is_prerelease(v) != atoi(f[3]))
		fail_case(run, "'%s': is_prerelease %d, packaging says %s", f[1], kernels__version_is_prerelease(v), f[3]);
	if (strcmp(kernels__version_text(v), f[1]))
		fail_case(run, "'%s': text not kept verbatim", f[1]);
	/* the normalised form is a fixed point and means the same version */
	if (norm && (kernels__version_parse(norm, &again) < 0 || kernels__version_compare(v, again) != 0 ||
		     !(norm2 = kernels__version_normalized(again)) || strcmp(norm, norm2)))
		fail_case(run, "'%s': normalised form '%s' does not round-trip", f[1], norm);
	free(norm);
	free(norm2);
	kernels__version_free(again);
	kernels__version_free(v);
}

static void check_badversion(struct table_run *run, char **f, int nf)
{
	kernels__version *v = NULL;
	int rc;

	if (nf != 2)
		return fail_case(run, "badversion line needs 2 fields");
	rc = kernels__version_parse(f[1], &v);
	if (rc != KERNELS_EPARSE || v) {
		kernels__version_free(v);
		return fail_case(run, "'%s' should be refused, got %d", f[1], rc);
	}
	if (!strstr(kernels_error_last(), "column") || !strstr(kernels_error_last(), "expected"))
		fail_case(run, "'%s': message without column/expectation: %s", f[1], kernels_error_last());
	if (kernels__version_try_parse(f[1]))
		fail_case(run, "'%s': try_parse accepted it", f[1]);
}

static void check_compare(struct table_run *run, char **f, int nf)
{
	kernels__version *a = NULL, *b = NULL;
	int want, got, back;

	if (nf != 4)
		return fail_case(run, "compare line needs 4 fields");
	if (kernels__version_parse(f[1], &a) < 0 || kernels__version_parse(f[2], &b) < 0) {
		fail_case(run, "compare '%s' '%s': %s", f[1], f[2], kernels_error_last());
		goto out;
	}
	want = atoi(f[3]);
	got = kernels__version_compare(a, b);
	back = kernels__version_compare(b, a);
	got = (got > 0) - (got < 0);
	back = (back > 0) - (back < 0);
	if (got != want || back != -want)
		fail_case(run, "compare('%s', '%s') = %d (reverse %d), packaging says %d", f[1], f[2], got, back, want);
out:
	kernels__version_free(a);
	kernels__version_free(b);
}

static void check_spec(struct table_run *run, char **f, int nf)
{
	kernels__specifier_set *s = NULL;

	if (nf != 4)
		return fail_case(run, "spec line needs 4 fields");
	if (kernels__specifier_parse(f[1], &s) < 0)
		return fail_case(run, "spec '%s' should parse but: %s", f[1], kernels_error_last());
	if (kernels__specifier_count(s) != (size_t)atoi(f[2]))
		fail_case(run, "spec '%s' has %zu items, packaging says %s", f[1], kernels__specifier_count(s), f[2]);
	if (kernels__specifier_implies_prereleases(s) != atoi(f[3]))
		fail_case(run, "spec '%s': implies pre-releases %d, packaging says %s", f[1],
			  kernels__specifier_implies_prereleases(s), f[3]);
	if (strcmp(kernels__specifier_text(s), f[1]))
		fail_case(run, "spec '%s': text not kept verbatim", f[1]);
	kernels__specifier_set_free(s);
}

static void check_badspec(struct table_run *run, char **f, int nf)
{
	kernels__specifier_set *s = NULL;
	int rc;

	if (nf != 2)
		return fail_case(run, "badspec line needs 2 fields");
	rc = kernels__specifier_parse(f[1], &s);
	if (rc != KERNELS_EPARSE || s) {
		kernels__specifier_set_free(s);
		return fail_case(run, "spec '%s' should be refused, got %d", f[1], rc);
	}
	if (!strstr(kernels_error_last(), "column"))
		fail_case(run, "spec '%s': message without a column: %s", f[1], kernels_error_last());
}

static void check_contains(struct table_run *run, char **f, int nf)
{
	kernels__specifier_set *s = NULL;
	kernels__version *v = NULL;
	int got;

	if (nf != 5)
		return fail_case(run, "contains line needs 5 fields");
	if (kernels__specifier_parse(f[1], &s) < 0 || kernels__version_parse(f[2], &v) < 0) {
		fail_case(run, "contains '%s' '%s': %s", f[1], f[2], kernels_error_last());
		goto out;
	}
	got = kernels__specifier_contains(s, v, mode_of(f[3]));
	if (got != atoi(f[4]))
		fail_case(run, "'%s' contains '%s' (prereleases=%s): %d, packaging says %s", f[1], f[2], f[3], got, f[4]);
out:
	kernels__specifier_set_free(s);
	kernels__version_free(v);
}

static void check_filter(struct table_run *run, char **f, int nf)
{
	kernels__specifier_set *s = NULL;
	size_t n, count = 0, best = 0, i, matches[MAX_FIELDS];
	char got[512] = "", *want_matches, *want_best;
	int rc;

	if (nf < 4 || (n = (size_t)atoi(f[3])) + 6 != (size_t)nf)
		return fail_case(run, "filter line has the wrong number of fields");
	want_matches = f[4 + n];
	want_best = f[5 + n];
	if (kernels__specifier_parse(f[1], &s) < 0)
		return fail_case(run, "filter '%s': %s", f[1], kernels_error_last());
	if (kernels__specifier_filter(s, (const char *const *)&f[4], n, mode_of(f[2]), matches, &count) < 0) {
		fail_case(run, "filter '%s': %s", f[1], kernels_error_last());
		goto out;
	}
	for (i = 0; i < count; i++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%zu", i ? "," : "", matches[i]);
	if (strcmp(got[0] ? got : "-", want_matches))
		fail_case(run, "filter '%s' (prereleases=%s) keeps [%s], packaging says [%s]", f[1], f[2], got, want_matches);
	rc = kernels__specifier_select(s, (const char *const *)&f[4], n, mode_of(f[2]), &best);
	if (!strcmp(want_best, "-")) {
		if (rc != KERNELS_ENOMATCH)
			fail_case(run, "select '%s' (prereleases=%s): %d (index %zu), expected no match", f[1], f[2], rc, best);
		else if (!strstr(kernels_error_last(), kernels__specifier_text(s)))
			fail_case(run, "select '%s': no-match message does not name the spec: %s", f[1], kernels_error_last());
	} else if (rc != 0 || best != (size_t)atoi(want_best)) {
		fail_case(run, "select '%s' (prereleases=%s): rc %d index %zu, packaging says %s", f[1], f[2], rc, best, want_best);
	}
out:
	kernels__specifier_set_free(s);
}

static void check_tags(struct table_run *run, char **f, int nf)
{
	kernels__specifier_set *s = NULL;
	size_t n, best = 0;
	char *want;
	int rc;

	if (nf < 3 || (n = (size_t)atoi(f[2])) + 4 != (size_t)nf)
		return fail_case(run, "tags line has the wrong number of fields");
	want = f[3 + n];
	if (kernels__specifier_parse(f[1], &s) < 0)
		return fail_case(run, "tags '%s': %s", f[1], kernels_error_last());
	rc = kernels__specifier_select_tags(s, (const char *const *)&f[3], n, &best);
	if (!strcmp(want, "-")) {
		if (rc != KERNELS_ENOMATCH)
			fail_case(run, "tags '%s': %d (index %zu), the Python client finds no match", f[1], rc, best);
	} else if (rc != 0 || best != (size_t)atoi(want)) {
		fail_case(run, "tags '%s': rc %d index %zu, the Python client picks %s", f[1], rc, best, want);
	}
	kernels__specifier_set_free(s);
}

static char *table_path(void)
{
	const char *env = getenv("KERNELS_PEP440_TABLE"), *src = getenv("KERNELS_SOURCE_DIR");
	char *p;
	if (env && *env)
		return strdup(env);
	if (!src || !*src)
		src = KERNELS_SOURCE_DIR;
	p = malloc(strlen(src) + 64);
	assert_non_null(p);
	sprintf(p, "%s/tests/data/pep440/cases.tsv", src);
	return p;
}

static void test_table_agrees_with_packaging(void **state)
{
	struct table_run run = { 0, 0, 0, NULL };
	char *path = table_path(), *text, *line, *next;
	size_t counts[9] = { 0 };
	static const char *const kinds[] = { "version", "badversion", "compare", "spec", "badspec", "contains", "filter", "tags" };
	(void)state;

	run.path = path;
	text = test_read_file(path, NULL);
	if (!text)
		fail_msg("cannot read the PEP 440 table %s", path);
	for (line = text; line && *line; line = next) {
		char *f[MAX_FIELDS + 8], *p;
		int nf = 0, k;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		run.line++;
		if (line[0] == '#' || line[0] == '\0')
			continue;
		for (p = line; nf < MAX_FIELDS + 8; ) {
			f[nf++] = p;
			if (!(p = strchr(p, '\t')))
				break;
			*p++ = '\0';
		}
		for (k = 0; k < nf; k++)
			if (unescape(f[k]) < 0)
				break;
		if (k < nf) {
			fail_case(&run, "bad escape in field %d", k + 1);
			continue;
		}
		run.cases++;
		for (k = 0; k < 8 && strcmp(f[0], kinds[k]); k++)
			;
		counts[k]++;
		switch (k) {
		case 0: check_version(&run, f, nf); break;
		case 1: check_badversion(&run, f, nf); break;
		case 2: check_compare(&run, f, nf); break;
		case 3: check_spec(&run, f, nf); break;
		case 4: check_badspec(&run, f, nf); break;
		case 5: check_contains(&run, f, nf); break;
		case 6: check_filter(&run, f, nf); break;
		case 7: check_tags(&run, f, nf); break;
		default: fail_case(&run, "unknown case kind '%s'", f[0]);
		}
	}
	free(text);
	printf("PEP 440 table %s: %zu cases (%zu version, %zu badversion, %zu compare, %zu spec, %zu badspec, "
	       "%zu contains, %zu filter, %zu tags), %zu disagree with packaging\n",
	       path, run.cases, counts[0], counts[1], counts[2], counts[3], counts[4], counts[5], counts[6], counts[7],
	       run.failures);
	free(path);
	assert_int_equal(run.failures, 0);
	/* every kind is exercised, so a truncated table cannot pass */
	for (int k = 0; k < 8; k++)
		assert_true(counts[k] >= 50);
	assert_int_equal(counts[8], 0);
}

/* ---- what packaging cannot tell us: our messages and limits ---- */

static void assert_error_has(const char *needle)
{
	if (!strstr(kernels_error_last(), needle))
		fail_msg("error message lacks '%s': %s", needle, kernels_error_last());
}

static void test_version_error_says_where_and_what(void **state)
{
	kernels__version *v = NULL;
	(void)state;

	assert_int_equal(kernels__version_parse("1.0x", &v), KERNELS_EPARSE);
	assert_null(v);
	assert_error_has("'1.0x' is not a valid PEP 440 version");
	assert_error_has("unexpected 'x' at column 4");
	assert_error_has("a pre-release (a1, b1, rc1)");

	assert_int_equal(kernels__version_parse("1.0+", &v), KERNELS_EPARSE);
	assert_error_has("the text ends at column 5");
	assert_error_has("letters or digits after '+'");

	assert_int_equal(kernels__version_parse("2!", &v), KERNELS_EPARSE);
	assert_error_has("a release number after the epoch");

	assert_int_equal(kernels__version_parse("1.0 a1", &v), KERNELS_EPARSE);
	assert_error_has("unexpected 'a' at column 5");
	assert_error_has("cannot contain spaces");

	assert_int_equal(kernels__version_parse("main", &v), KERNELS_EPARSE);
	assert_error_has("unexpected 'm' at column 1");
	assert_error_has("a release number such as 1.2.3");

	assert_int_equal(kernels__version_parse("-1.0", &v), KERNELS_EPARSE);
	assert_error_has("unexpected '-' at column 1");
	assert_int_equal(kernels__version_parse("1.0+.abc", &v), KERNELS_EPARSE);
	assert_error_has("unexpected '.' at column 5");
	assert_int_equal(kernels__version_parse("1.0.x", &v), KERNELS_EPARSE);
	assert_error_has("unexpected 'x' at column 5");

	assert_int_equal(kernels__version_parse("1.0\x01", &v), KERNELS_EPARSE);
	assert_error_has("unexpected byte 0x01 at column 4");
}

static void test_spec_error_says_where_and_what(void **state)
{
	kernels__specifier_set *s = NULL;
	(void)state;

	assert_int_equal(kernels__specifier_parse(">=1.0,<2.x", &s), KERNELS_EPARSE);
	assert_null(s);
	assert_error_has("version specifier '>=1.0,<2.x' is malformed");
	assert_error_has("unexpected 'x' at column 10");

	assert_int_equal(kernels__specifier_parse(">=1.0, 2", &s), KERNELS_EPARSE);
	assert_error_has("unexpected '2' at column 8");
	assert_error_has("an operator (==, !=, <=, >=, <, >, ~= or ===)");

	assert_int_equal(kernels__specifier_parse("~=1", &s), KERNELS_EPARSE);
	assert_error_has("at column 4");
	assert_error_has("'~=' needs a release of at least two numbers");

	assert_int_equal(kernels__specifier_parse(" >=1.0+abc", &s), KERNELS_EPARSE);
	assert_error_has("at column 7");
	assert_error_has("only allowed with == and !=");

	assert_int_equal(kernels__specifier_parse(">=1.0.*", &s), KERNELS_EPARSE);
	assert_error_has("unexpected '*' at column 7");

	assert_int_equal(kernels__specifier_parse("==1.0.*.1", &s), KERNELS_EPARSE);
	assert_error_has("at column 8");
	assert_error_has("the end after '.*'");

	assert_int_equal(kernels__specifier_parse(">=", &s), KERNELS_EPARSE);
	assert_error_has("the text ends at column 3");
	assert_error_has("a version after the operator");

	assert_int_equal(kernels__specifier_parse(">=1.0 <2", &s), KERNELS_EPARSE);
	assert_error_has("unexpected '<' at column 7");
	assert_error_has("(separate specifiers with ',')");
	assert_int_equal(kernels__specifier_parse(">=1.0;<2", &s), KERNELS_EPARSE);
	assert_error_has("(separate specifiers with ',')");

	assert_int_equal(kernels__specifier_parse("===a b", &s), KERNELS_EPARSE);
	assert_error_has("unexpected byte 0x20 at column 5");
}

static void test_limits_and_arguments(void **state)
{
	char *big = malloc(KERNELS__SPECIFIER_MAX + 2);
	kernels__version *v = NULL;
	kernels__specifier_set *s = NULL;
	size_t best = 0, count = 0, matches[1];
	(void)state;

	assert_non_null(big);
	/* right at the limit is fine; one byte more is refused with a message */
	memset(big, '1', KERNELS__SPECIFIER_MAX);
	big[KERNELS__SPECIFIER_MAX] = '\0';
	assert_int_equal(kernels__version_parse(big, &v), 0);
	kernels__version_free(v);
	big[KERNELS__SPECIFIER_MAX] = '1';
	big[KERNELS__SPECIFIER_MAX + 1] = '\0';
	assert_int_equal(kernels__version_parse(big, &v), KERNELS_EPARSE);
	assert_error_has("longer than the 4096 bytes allowed");
	assert_null(kernels__version_try_parse(big));
	big[0] = '>';
	assert_int_equal(kernels__specifier_parse(big, &s), KERNELS_EPARSE);
	assert_error_has("longer than the 4096 bytes allowed");
	free(big);

	assert_int_equal(kernels__version_parse(NULL, &v), KERNELS_EINVAL);
	assert_int_equal(kernels__version_parse("1.0", NULL), KERNELS_EINVAL);
	assert_null(kernels__version_try_parse(NULL));
	assert_int_equal(kernels__specifier_parse(NULL, &s), KERNELS_EINVAL);
	assert_int_equal(kernels__specifier_parse(">=1", NULL), KERNELS_EINVAL);
	kernels__version_free(NULL);
	kernels__specifier_set_free(NULL);

	assert_int_equal(kernels__specifier_parse(">=1", &s), 0);
	assert_int_equal(kernels__specifier_select(s, NULL, 0, -1, &best), KERNELS_ENOMATCH);
	assert_error_has("no version satisfies '>=1'");
	assert_error_has("there are no version tags");
	assert_int_equal(kernels__specifier_filter(s, NULL, 0, -1, matches, &count), 0);
	assert_int_equal(count, 0);
	assert_int_equal(kernels__specifier_select(s, NULL, 0, -1, NULL), KERNELS_EINVAL);
	kernels__specifier_set_free(s);
}

static void test_huge_numbers_compare_exactly(void **state)
{
	kernels__version *a = NULL, *b = NULL;
	kernels__specifier_set *s = NULL;
	char *n;
	(void)state;

	/* far beyond 64 bits: compared as decimal strings */
	assert_int_equal(kernels__version_parse("18446744073709551616.0", &a), 0);
	assert_int_equal(kernels__version_parse("18446744073709551615.9", &b), 0);
	assert_true(kernels__version_compare(a, b) > 0);
	kernels__version_free(b);
	assert_int_equal(kernels__version_parse("0018446744073709551616", &b), 0);
	assert_int_equal(kernels__version_compare(a, b), 0);
	n = kernels__version_normalized(b);
	assert_string_equal(n, "18446744073709551616");
	free(n);
	/* ~= and wildcards add one to the last number: 999 -> 1000 */
	assert_int_equal(kernels__specifier_parse("~=1.999", &s), 0);
	kernels__version_free(a);
	assert_int_equal(kernels__version_parse("1.1000", &a), 0);
	assert_true(kernels__specifier_contains(s, a, -1));
	kernels__version_free(a);
	assert_int_equal(kernels__version_parse("2.0", &a), 0);
	assert_false(kernels__specifier_contains(s, a, -1));
	kernels__specifier_set_free(s);
	assert_int_equal(kernels__specifier_parse("==99.*", &s), 0);
	kernels__version_free(a);
	assert_int_equal(kernels__version_parse("99.99999999999999999999", &a), 0);
	assert_true(kernels__specifier_contains(s, a, -1));
	kernels__version_free(a);
	assert_int_equal(kernels__version_parse("100.dev0", &a), 0);
	assert_false(kernels__specifier_contains(s, a, -1));
	kernels__specifier_set_free(s);
	kernels__version_free(a);
	kernels__version_free(b);
}

static void test_select_over_tags(void **state)
{
	/* the resolver's use: tags, some not versions; the highest match wins */
	const char *tags[] = { "v0.1.0", "main", "v0.1.2", "v1.1.2", "v1.2.0rc1", "vfoo", "v1.1.10", "v2.0.0", "1.1.3" };
	kernels__specifier_set *s = NULL;
	size_t best = 99;
	(void)state;

	assert_int_equal(kernels__specifier_parse(">=1.1.2,<2", &s), 0);
	assert_int_equal(kernels__specifier_select(s, tags, 9, -1, &best), 0);
	assert_string_equal(tags[best], "v1.1.10");
	/* forcing pre-releases in lets 1.2.0rc1 win */
	assert_int_equal(kernels__specifier_select(s, tags, 9, 1, &best), 0);
	assert_string_equal(tags[best], "v1.2.0rc1");
	kernels__specifier_set_free(s);

	/* only a pre-release matches: the default takes it */
	assert_int_equal(kernels__specifier_parse(">1.1.2", &s), 0);
	assert_int_equal(kernels__specifier_select(s, tags, 6, -1, &best), 0);
	assert_string_equal(tags[best], "v1.2.0rc1");
	/* unless pre-releases are refused: then the message says so */
	assert_int_equal(kernels__specifier_select(s, tags, 6, 0, &best), KERNELS_ENOMATCH);
	assert_error_has("no version satisfies '>1.1.2' (matching pre-releases were excluded)");
	kernels__specifier_set_free(s);

	assert_int_equal(kernels__specifier_parse(">=3", &s), 0);
	assert_int_equal(kernels__specifier_select(s, tags, 9, -1, &best), KERNELS_ENOMATCH);
	assert_int_equal(kernels_error_last_code(), KERNELS_ENOMATCH);
	assert_error_has("no version satisfies '>=3'");
	assert_error_has("the versions that exist are: v0.1.0, v0.1.2, v1.1.2, 1.1.3, v1.1.10, v1.2.0rc1, v2.0.0;");
	assert_error_has("relax the specifier or pin a revision");
	assert_int_equal(kernels__specifier_select(s, tags + 1, 1, -1, &best), KERNELS_ENOMATCH);
	assert_error_has("none of the names is a PEP 440 version");
	/* the Python client's tag rule: only 'v' names count */
	assert_int_equal(kernels__specifier_select_tags(s, tags, 9, &best), KERNELS_ENOMATCH);
	assert_error_has("the versions that exist are: v0.1.0, v0.1.2, v1.1.2, v1.1.10, v1.2.0rc1, v2.0.0;");
	kernels__specifier_set_free(s);

	assert_int_equal(kernels__specifier_parse("~=1.1.3", &s), 0);
	assert_int_equal(kernels__specifier_select(s, tags, 9, -1, &best), 0);
	assert_string_equal(tags[best], "v1.1.10");
	assert_int_equal(kernels__specifier_select_tags(s, tags, 9, &best), 0);
	assert_string_equal(tags[best], "v1.1.10");
	kernels__specifier_set_free(s);
	assert_int_equal(kernels__specifier_parse("==1.1.3", &s), 0);
	assert_int_equal(kernels__specifier_select(s, tags, 9, -1, &best), 0);
	assert_string_equal(tags[best], "1.1.3");
	assert_int_equal(kernels__specifier_select_tags(s, tags, 9, &best), KERNELS_ENOMATCH);
	assert_int_equal(kernels__specifier_select_tags(s, NULL, 0, NULL), KERNELS_EINVAL);
	kernels__specifier_set_free(s);
}

static void test_long_version_lists_are_shortened(void **state)
{
	char names[100][16];
	const char *list[100];
	kernels__specifier_set *s = NULL;
	size_t best;
	int i;
	(void)state;

	for (i = 0; i < 100; i++) {
		snprintf(names[i], sizeof(names[i]), "v0.%d", i);
		list[i] = names[i];
	}
	assert_int_equal(kernels__specifier_parse(">=1", &s), 0);
	assert_int_equal(kernels__specifier_select(s, list, 100, -1, &best), KERNELS_ENOMATCH);
	/* the highest ones are listed, with the total */
	assert_error_has("are: ... v0.60, v0.61,");
	assert_error_has("v0.99 (100 versions in all)");
	assert_null(strstr(kernels_error_last(), "v0.59,"));
	kernels__specifier_set_free(s);
}

static void test_looks_like(void **state)
{
	(void)state;
	assert_true(kernels__specifier_looks_like(">=1.1.2,<2"));
	assert_true(kernels__specifier_looks_like("  ~=1.1"));
	assert_true(kernels__specifier_looks_like("==1.*"));
	assert_true(kernels__specifier_looks_like("!=1.1.0"));
	assert_true(kernels__specifier_looks_like("<2"));
	assert_true(kernels__specifier_looks_like("===foo"));
	assert_false(kernels__specifier_looks_like("v1.1.2"));
	assert_false(kernels__specifier_looks_like("1"));
	assert_false(kernels__specifier_looks_like("main"));
	assert_false(kernels__specifier_looks_like("4148918"));
	assert_false(kernels__specifier_looks_like("=1"));
	assert_false(kernels__specifier_looks_like("~1"));
	assert_false(kernels__specifier_looks_like(""));
	assert_false(kernels__specifier_looks_like("!"));
	assert_false(kernels__specifier_looks_like(NULL));
}

/* No global state: threads share one parsed set and keep their own errors. */
struct worker {
	const kernels__specifier_set *set;
	int id, ok;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	const char *tags[] = { "v0.9", "v1.0", "v1.5", "v1.9.9", "v2.0", "main" };
	char bad[32];
	int i;

	w->ok = 1;
	for (i = 0; i < 2000 && w->ok; i++) {
		size_t best = 99;
		kernels__version *v = NULL;
		snprintf(bad, sizeof(bad), "1.0x%d", w->id);
		if (kernels__specifier_select_tags(w->set, tags, 6, &best) != 0 || best != 3)
			w->ok = 0;
		if (kernels__version_parse(bad, &v) != KERNELS_EPARSE || !strstr(kernels_error_last(), bad))
			w->ok = 0;
	}
	return NULL;
}

static void test_threads_share_a_set(void **state)
{
	kernels__specifier_set *s = NULL;
	pthread_t t[8];
	struct worker w[8];
	int i;
	(void)state;

	assert_int_equal(kernels__specifier_parse(">=1.0,<2,!=1.5.*", &s), 0);
	for (i = 0; i < 8; i++) {
		w[i].set = s;
		w[i].id = i;
		assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	for (i = 0; i < 8; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_true(w[i].ok);
	}
	kernels__specifier_set_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_agrees_with_packaging),
		cmocka_unit_test(test_version_error_says_where_and_what),
		cmocka_unit_test(test_spec_error_says_where_and_what),
		cmocka_unit_test(test_limits_and_arguments),
		cmocka_unit_test(test_huge_numbers_compare_exactly),
		cmocka_unit_test(test_select_over_tags),
		cmocka_unit_test(test_long_version_lists_are_shortened),
		cmocka_unit_test(test_looks_like),
		cmocka_unit_test(test_threads_share_a_set),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
