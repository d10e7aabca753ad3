/*
 * Internal: PEP 440 versions and version specifier sets.
 *
 * Semantics follow the `packaging` library (the version pinned in
 * tests/requirements.txt); tests/data/pep440/cases.tsv, generated from
 * `packaging` by tests/data/pep440/generate.py, is the contract.
 *
 * Versions: epoch `N!`, release `1.2.3`, pre-release `a`/`b`/`rc` (also
 * spelled alpha, beta, c, pre, preview), post-release `.postN` (also rev, r,
 * or the implicit `1.0-1`), dev release `.devN`, local label `+abc.1`. Parsing
 * is case-insensitive, accepts a leading `v`, surrounding whitespace and the
 * separators `.`, `-`, `_` where PEP 440 allows them. Numbers may be of any
 * size (they are compared as decimal strings, never converted to int).
 * Ordering is PEP 440's total order: `1.0 == 1.0.0 == v1`, `1.0.dev1 < 1.0a1 <
 * 1.0 < 1.0+local < 1.0.post1`, epochs first.
 *
 * Specifier sets: comma-separated `==`, `!=`, `<=`, `>=`, `<`, `>`, `~=`,
 * `===` specifiers, `==1.*` / `!=1.*` wildcards, whitespace tolerated, empty
 * items skipped (`""` is the set that accepts everything). Membership follows
 * PEP 440: `==1.0` matches `1.0+local`; `<1.0` excludes `1.0`'s pre-releases;
 * `>1.0` excludes `1.0.post1` and `1.0+local`; `===` compares the text
 * case-insensitively.
 *
 * Pre-releases (the `prereleases` argument below):
 *    1  pre-releases are allowed;
 *    0  pre-releases are excluded;
 *   -1  the PEP 440 default. contains() then accepts a pre-release that is in
 *       range (a single version has no alternatives, as packaging >= 26 says);
 *       filter()/select() drop pre-releases unless the set names one (a
 *       specifier other than != and ==X.* whose version is a pre-release) or
 *       no final release matches at all.
 *
 * Limits: texts longer than KERNELS__SPECIFIER_MAX bytes are refused; work is
 * linear in the input (no backtracking). Only ASCII whitespace counts as
 * whitespace, and `===` lower-cases ASCII only; non-ASCII bytes are otherwise
 * treated as ordinary (invalid) characters.
 *
 * No global state: every function is safe to call from several threads on
 * different objects, and on the same object when only reading it.
 */
#ifndef KERNELS_LIB_SPECIFIER_H
#define KERNELS_LIB_SPECIFIER_H

#include <stddef.h>

/* Longest version or specifier-set text accepted, in bytes. */
#define KERNELS__SPECIFIER_MAX 4096

typedef struct kernels__version kernels__version;

/* Parses `text` (NUL-terminated) into a new version owned by the caller
 * (kernels__version_free), raising nothing: NULL when invalid or out of
 * memory. For callers that skip names which are not versions (git tags). */
kernels__version *kernels__version_try_parse(const char *text);

/* PEP 440 total order: <0, 0 or >0. Equal means equivalent (`1.0` and `v1.0.0`). */
int kernels__version_compare(const kernels__version *a, const kernels__version *b);

/* 1 for a pre-release or development release (`1.0a1`, `1.0.dev1`, `1.0rc1.post1`). */
int kernels__version_is_prerelease(const kernels__version *v);

void kernels__version_free(kernels__version *v);

/* A name and the version it carries ("v1.2.0": 1.2.0), ordered for qsort
 * by version, then by name. */
typedef struct {
	kernels__version *v;
	const char *name;
} kernels__named_version;
int kernels__named_version_cmp(const void *a, const void *b);

typedef struct kernels__specifier_set kernels__specifier_set;

/*
 * Parses a comma-separated specifier set (`>=1.1.2,<2`, `~=1.1`, `==1.*`).
 * The result is owned by the caller (kernels__specifier_set_free). Errors:
 * KERNELS_EINVAL (NULL argument), KERNELS_EPARSE (the message quotes the
 * set, names the column and what was expected), KERNELS_ENOMEM.
 */
int kernels__specifier_parse(const char *text, kernels__specifier_set **out);

/*
 * Picks the highest version among `versions` (n strings such as "1.1.2" or
 * "v1.1.2"; NULL entries and names that are not versions are skipped) that
 * packaging's SpecifierSet.filter keeps (`prereleases`: see above), the
 * first of equal ones, and stores its index in `*best`. Returns 0,
 * KERNELS_ENOMATCH (the message names the spec and lists the versions that
 * exist), KERNELS_EINVAL or KERNELS_ENOMEM.
 */
int kernels__specifier_select(const kernels__specifier_set *s, const char *const *versions, size_t n,
	int prereleases, size_t *best);

void kernels__specifier_set_free(kernels__specifier_set *s);

/* Heuristic for the revision resolver: 1 when `text` (after leading
 * whitespace) starts with a specifier operator (==, !=, <=, >=, <, >, ~=,
 * ===), so it is meant as a specifier set rather than a branch, tag or commit. */
int kernels__specifier_looks_like(const char *text);

#ifdef KERNELS_TESTING
/* The test build only: what the tests and fuzzers check against `packaging`
 * (tests/data/pep440/cases.tsv), beyond what the library calls. */

/*
 * kernels__version_try_parse with errors: KERNELS_EINVAL (NULL argument),
 * KERNELS_EPARSE (not a PEP 440 version: the message quotes the text, gives
 * the 1-based column and what was expected there), KERNELS_ENOMEM.
 */
int kernels__version_parse(const char *text, kernels__version **out);

/* The canonical text, as packaging's str(Version): `1!2.0rc1.post3.dev4+abc.5`.
 * malloc'ed, owned by the caller; NULL when out of memory (error set). */
char *kernels__version_normalized(const kernels__version *v);

/* The text the version was parsed from, verbatim. Owned by `v`. */
const char *kernels__version_text(const kernels__version *v);

/* The text the set was parsed from, verbatim. Owned by `s`. */
const char *kernels__specifier_text(const kernels__specifier_set *s);

/* Number of specifiers in the set (empty items do not count). */
size_t kernels__specifier_count(const kernels__specifier_set *s);

/* 1 when the set names a pre-release, so that pre-releases are allowed by
 * default (packaging's SpecifierSet.prereleases being True). */
int kernels__specifier_implies_prereleases(const kernels__specifier_set *s);

/* 1 when `v` satisfies every specifier of `s`, else 0. `prereleases`: see above. */
int kernels__specifier_contains(const kernels__specifier_set *s, const kernels__version *v, int prereleases);

/*
 * packaging's SpecifierSet.filter over `versions` (n strings such as "1.1.2"
 * or "v1.1.2"; NULL entries and names that are not versions are skipped):
 * writes the indices of the matching ones, in input order, to `matches`
 * (room for n entries) and their number to `*count`. Returns 0, or
 * KERNELS_EINVAL / KERNELS_ENOMEM.
 */
int kernels__specifier_filter(const kernels__specifier_set *s, const char *const *versions, size_t n,
	int prereleases, size_t *matches, size_t *count);

/*
 * The seed-era Python client's rule over git tags (Python kernels'
 * _versions.py, resolve_version_spec_as_ref, in 0.10): only
 * names starting with 'v' count, the rest of the name must be a version;
 * the highest one the set accepts wins, with the default pre-release rule,
 * `===` comparing the normalised version, and the last of equal versions
 * winning (the client keys tags by version, later tags overwrite). Returns 0
 * with the tag's index in `*best`, KERNELS_ENOMATCH (the message names the
 * spec and lists the version tags that exist), KERNELS_EINVAL or
 * KERNELS_ENOMEM.
 */
int kernels__specifier_select_tags(const kernels__specifier_set *s, const char *const *tags, size_t n, size_t *best);
#endif

#endif
