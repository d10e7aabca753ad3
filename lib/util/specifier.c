/*
 * PEP 440 versions and specifier sets, following `packaging` (see
 * specifier.h). The version grammar is scanned by hand, greedily, the way
 * packaging's possessive regular expression matches it, so parsing is linear
 * and never backtracks. Numbers stay decimal strings: no overflow, any size.
 */
#include "specifier.h"
#include "error.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A non-negative integer as decimal digits without leading zeros ("0" for 0). */
struct num {
	const char *p;
	size_t n;
};

/* One local label segment: a number, or a lower-cased word. */
struct lseg {
	int numeric;
	struct num v;
};

enum { PRE_NONE = -1, PRE_A = 0, PRE_B = 1, PRE_RC = 2 };

struct kernels__version {
	char *text;             /* verbatim input */
	char *low;              /* lower-cased copy; numbers and words point here */
	struct num epoch;
	struct num *release;
	size_t nrelease;
	int pre;                /* PRE_* */
	struct num pre_n;
	int has_post;
	struct num post;
	int has_dev;
	struct num dev;
	struct lseg *local;
	size_t nlocal;
	/* Only for specifier checks: where things were found (0-based offsets). */
	int wildcard;           /* ended in ".*" (allowed only when asked for) */
	size_t local_at, release_end;
};

static const struct num ZERO = { "0", 1 };

/* ---- characters (ASCII only, locale-independent) ---- */

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_alnum(char c) { return is_digit(c) || (c >= 'a' && c <= 'z'); }
static int is_sep(char c) { return c == '.' || c == '_' || c == '-'; }
static char to_lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c; }

/* The ASCII characters Python's str.isspace() and re's \s accept. */
static int is_space(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
}

/* ---- numbers ---- */

static struct num mknum(const char *s, size_t from, size_t to)
{
	struct num n;
	while (to - from > 1 && s[from] == '0')
		from++;
	n.p = s + from;
	n.n = to - from;
	return n;
}

static int num_cmp(struct num a, struct num b)
{
	int c;
	if (a.n != b.n)
		return a.n < b.n ? -1 : 1;
	c = memcmp(a.p, b.p, a.n);
	return c < 0 ? -1 : c > 0;
}

static int num_is_zero(struct num a)
{
	return a.n == 1 && a.p[0] == '0';
}

/* ---- the scanner ---- */

/* What the scanner had recognised when it stopped: decides what to expect. */
enum scan_state {
	ST_START, ST_EPOCH, ST_RELEASE, ST_PRE, ST_POST, ST_DEV, ST_LOCAL_START, ST_LOCAL, ST_WILDCARD, ST_SPACE
};

struct perr {
	size_t at;              /* 0-based offset in the scanned text */
	enum scan_state state;
};

static const char *expected_after(enum scan_state st, int wildcard_ok)
{
	switch (st) {
	case ST_START:
		return "a release number such as 1.2.3 (optionally after 'v' or an epoch 'N!')";
	case ST_EPOCH:
		return "a release number after the epoch '!'";
	case ST_RELEASE:
		return wildcard_ok
			? "'.N', '.*', a pre-release (a1, b1, rc1), a post-release (.post1, -1), "
			  "a dev release (.dev1), a local label (+abc) or the end"
			: "'.N', a pre-release (a1, b1, rc1), a post-release (.post1, -1), "
			  "a dev release (.dev1), a local label (+abc) or the end";
	case ST_PRE:
		return "a post-release (.post1, -1), a dev release (.dev1), a local label (+abc) or the end";
	case ST_POST:
		return "a dev release (.dev1), a local label (+abc) or the end";
	case ST_DEV:
		return "a local label (+abc) or the end";
	case ST_LOCAL_START:
		return "letters or digits after '+'";
	case ST_LOCAL:
		return "'.', '-' or '_' followed by letters or digits, or the end";
	case ST_WILDCARD:
		return "the end after '.*' (a wildcard cannot be followed by anything)";
	case ST_SPACE:
		return "the end (a version cannot contain spaces)";
	}
	return "a PEP 440 version";
}

/* Length of the longest of `words` (tried in order, first match wins, like
 * a regex alternation) found at s[i..end), or 0; its index goes to *which. */
static size_t match_word(const char *s, size_t i, size_t end, const char *const *words, int *which)
{
	int k;
	for (k = 0; words[k]; k++) {
		size_t n = strlen(words[k]);
		if (end - i >= n && !memcmp(s + i, words[k], n)) {
			*which = k;
			return n;
		}
	}
	return 0;
}

static size_t skip_digits(const char *s, size_t i, size_t end)
{
	while (i < end && is_digit(s[i]))
		i++;
	return i;
}

static size_t skip_alnum(const char *s, size_t i, size_t end)
{
	while (i < end && is_alnum(s[i]))
		i++;
	return i;
}

static int push_release(kernels__version *v, size_t *cap, struct num n)
{
	if (KERNELS__ARRAY_GROW(v->release, *cap, v->nrelease) < 0)
		return -1;
	v->release[v->nrelease++] = n;
	return 0;
}

static int push_local(kernels__version *v, size_t *cap, const char *s, size_t from, size_t to)
{
	struct lseg seg;
	size_t i;

	if (KERNELS__ARRAY_GROW(v->local, *cap, v->nlocal) < 0)
		return -1;
	seg.numeric = 1;
	for (i = from; i < to; i++)
		if (!is_digit(s[i]))
			seg.numeric = 0;
	if (seg.numeric) {
		seg.v = mknum(s, from, to);
	} else {
		seg.v.p = s + from;
		seg.v.n = to - from;
	}
	v->local[v->nlocal++] = seg;
	return 0;
}

static const char *const PRE_WORDS[] = { "alpha", "a", "beta", "b", "preview", "pre", "c", "rc", NULL };
static const int PRE_KIND[] = { PRE_A, PRE_A, PRE_B, PRE_B, PRE_RC, PRE_RC, PRE_RC, PRE_RC };
static const char *const POST_WORDS[] = { "post", "rev", "r", NULL };
static const char *const DEV_WORDS[] = { "dev", NULL };

/* [._-]? WORD [._-]? N? at s[i..len), WORD one of `words`: the index past
 * it, or `i` when there is none; *which the word, *n its number (0 when
 * absent), left alone when there is none. */
static size_t lettered(const char *s, size_t i, size_t len, const char *const *words, int *which, struct num *n)
{
	size_t k = i < len && is_sep(s[i]) ? i + 1 : i, w, j;

	if (!(w = match_word(s, k, len, words, which)))
		return i;
	k += w;
	if (k < len && is_sep(s[k]))
		k++;
	j = skip_digits(s, k, len);
	*n = j > k ? mknum(s, k, j) : ZERO;
	return j;
}

/* The release N(.N)*, after an optional epoch N!, from *at (moved past
 * it, or to where it went wrong): 0, -1 on a syntax error, -2 when out of
 * memory. */
static int scan_release(kernels__version *v, size_t len, size_t *at, enum scan_state *st)
{
	const char *s = v->low;
	size_t i = *at, j = skip_digits(s, i, len), cap = 0;

	if (j == i)
		return -1;
	if (j < len && s[j] == '!') {
		v->epoch = mknum(s, i, j);
		*at = i = j + 1;
		*st = ST_EPOCH;
		if ((j = skip_digits(s, i, len)) == i)
			return -1;
	}
	for (;;) {
		if (push_release(v, &cap, mknum(s, i, j)) < 0)
			return -2;
		i = j;
		if (!(i + 1 < len && s[i] == '.' && is_digit(s[i + 1])))
			break;
		j = skip_digits(s, i + 1, len);
		i++;
	}
	*at = i;
	return 0;
}

/* The pre-release (a, b, rc and their spellings), the post-release (-N,
 * or post, rev, r) and the dev release, each optional, in that order,
 * from `i`: the index past them. */
static size_t scan_suffixes(kernels__version *v, size_t i, size_t len, enum scan_state *st)
{
	const char *s = v->low;
	size_t j;
	int which;

	if ((j = lettered(s, i, len, PRE_WORDS, &which, &v->pre_n)) != i) {
		v->pre = PRE_KIND[which];
		i = j;
		*st = ST_PRE;
	}
	if (i + 1 < len && s[i] == '-' && is_digit(s[i + 1])) {
		j = skip_digits(s, i + 1, len);
		v->post = mknum(s, i + 1, j);
	} else {
		j = lettered(s, i, len, POST_WORDS, &which, &v->post);
	}
	if (j != i) {
		v->has_post = 1;
		i = j;
		*st = ST_POST;
	}
	if ((j = lettered(s, i, len, DEV_WORDS, &which, &v->dev)) != i) {
		v->has_dev = 1;
		i = j;
		*st = ST_DEV;
	}
	return i;
}

/* The local label + [a-z0-9]+ ([._-][a-z0-9]+)*, *at on its '+' (moved past
 * it, or to where it went wrong): 0, -1 on a syntax error, -2 when out of
 * memory. */
static int scan_local(kernels__version *v, size_t len, size_t *at)
{
	const char *s = v->low;
	size_t i = *at, j, cap = 0;

	if (!(i + 1 < len && is_alnum(s[i + 1]))) {
		*at = i + 1;
		return -1;
	}
	v->local_at = i;
	for (;;) {
		j = skip_alnum(s, i + 1, len);
		if (push_local(v, &cap, s, i + 1, j) < 0)
			return -2;
		i = j;
		if (!(i + 1 < len && is_sep(s[i]) && is_alnum(s[i + 1])))
			break;
	}
	*at = i;
	return 0;
}

/*
 * Scans v->low[0..len) as one version, surrounded by optional whitespace.
 * Returns 0, -1 on a syntax error (err filled) or -2 when out of memory.
 */
static int scan(kernels__version *v, size_t len, int wildcard_ok, struct perr *err)
{
	const char *s = v->low;
	size_t i = 0, j;
	enum scan_state st = ST_START;
	int rc;

	while (i < len && is_space(s[i]))
		i++;
	if (i < len && s[i] == 'v')
		i++;
	if ((rc = scan_release(v, len, &i, &st)) < 0) {
		if (rc == -2)
			return -2;
		goto fail;
	}
	v->release_end = i;
	st = ST_RELEASE;
	if (wildcard_ok && i + 1 < len && s[i] == '.' && s[i + 1] == '*') {
		v->wildcard = 1;
		i += 2;
		st = ST_WILDCARD;
	} else {
		i = scan_suffixes(v, i, len, &st);
		if (i < len && s[i] == '+') {
			if ((rc = scan_local(v, len, &i)) == -2)
				return -2;
			st = rc < 0 ? ST_LOCAL_START : ST_LOCAL;
			if (rc < 0)
				goto fail;
		}
	}
	j = i;
	while (j < len && is_space(s[j]))
		j++;
	if (j == len)
		return 0;
	if (j > i) {
		i = j;
		st = ST_SPACE;
	}
fail:
	/* After a release, pre, post or dev part a separator is fine in itself:
	 * what follows it is what went wrong. */
	if (i < len && is_sep(s[i]) && st >= ST_RELEASE && st <= ST_DEV && (i + 1 == len || !is_space(s[i + 1])))
		i++;
	err->at = i;
	err->state = st;
	return -1;
}

static kernels__version *version_new(const char *text, size_t len)
{
	kernels__version *v = calloc(1, sizeof(*v));
	size_t i;

	if (!v)
		return NULL;
	v->text = malloc(len + 1);
	v->low = malloc(len + 1);
	if (!v->text || !v->low) {
		kernels__version_free(v);
		return NULL;
	}
	memcpy(v->text, text, len);
	v->text[len] = '\0';
	for (i = 0; i < len; i++)
		v->low[i] = to_lower(text[i]);
	v->low[len] = '\0';
	v->epoch = ZERO;
	v->pre = PRE_NONE;
	v->pre_n = v->post = v->dev = ZERO;
	return v;
}

/* Parses text[0..len). Returns 0, -1 (syntax, err filled) or -2 (memory). */
static int parse_core(const char *text, size_t len, int wildcard_ok, kernels__version **out, struct perr *err)
{
	kernels__version *v;
	int rc;

	*out = NULL;
	if (memchr(text, '\0', len)) {
		err->at = (size_t)((const char *)memchr(text, '\0', len) - text);
		err->state = ST_START;
		return -1;
	}
	if (!(v = version_new(text, len)))
		return -2;
	rc = scan(v, len, wildcard_ok, err);
	if (rc < 0) {
		kernels__version_free(v);
		return rc;
	}
	*out = v;
	return 0;
}

/* "'x'" or "\xHH" or "end of text" for a message. */
static void describe_at(char *buf, size_t size, const char *text, size_t len, size_t at)
{
	unsigned char c;
	if (at >= len) {
		snprintf(buf, size, "the text ends");
		return;
	}
	c = (unsigned char)text[at];
	if (c >= 0x21 && c < 0x7f)
		snprintf(buf, size, "unexpected '%c'", c);
	else
		snprintf(buf, size, "unexpected byte 0x%02x", c);
}

#define QUOTE_MAX 200

#ifdef KERNELS_TESTING
int kernels__version_parse(const char *text, kernels__version **out)
{
	struct perr err = { 0, ST_START };
	char what[64];
	size_t len;
	int rc;

	if (!out)
		return kernels__error(KERNELS_EINVAL, "kernels__version_parse: no output pointer given");
	*out = NULL;
	if (!text)
		return kernels__error(KERNELS_EINVAL, "no version given; pass a PEP 440 version such as 1.2.3");
	len = strnlen(text, KERNELS__SPECIFIER_MAX + 1);
	if (len > KERNELS__SPECIFIER_MAX)
		return kernels__error(KERNELS_EPARSE,
			"version '%.*s...' is longer than the %d bytes allowed; pass a PEP 440 version such as 1.2.3",
			QUOTE_MAX, text, KERNELS__SPECIFIER_MAX);
	rc = parse_core(text, len, 0, out, &err);
	if (rc == -2)
		return kernels__error_oom();
	if (rc < 0) {
		describe_at(what, sizeof(what), text, len, err.at);
		return kernels__error(KERNELS_EPARSE,
			"'%.*s%s' is not a valid PEP 440 version: %s at column %zu, expected %s; "
			"use a version such as 1.2.3, v1.2.3, 1!2.0, 1.0a1, 1.0.post1, 1.0.dev1 or 1.0+local",
			QUOTE_MAX, text, len > QUOTE_MAX ? "..." : "", what, err.at + 1, expected_after(err.state, 0));
	}
	return 0;
}
#endif

kernels__version *kernels__version_try_parse(const char *text)
{
	struct perr err;
	kernels__version *v = NULL;
	size_t len;

	if (!text)
		return NULL;
	len = strnlen(text, KERNELS__SPECIFIER_MAX + 1);
	if (len > KERNELS__SPECIFIER_MAX)
		return NULL;
	if (parse_core(text, len, 0, &v, &err) < 0)
		return NULL;
	return v;
}

void kernels__version_free(kernels__version *v)
{
	if (!v)
		return;
	free(v->text);
	free(v->low);
	free(v->release);
	free(v->local);
	free(v);
}

#ifdef KERNELS_TESTING
const char *kernels__version_text(const kernels__version *v)
{
	return v->text;
}
#endif

int kernels__version_is_prerelease(const kernels__version *v)
{
	return v->pre != PRE_NONE || v->has_dev;
}

/* ---- ordering ---- */

/* Releases compare as if padded with zeros: 1.0 == 1 == 1.0.0. */
static int release_cmp(const kernels__version *a, const kernels__version *b)
{
	size_t i, n = a->nrelease > b->nrelease ? a->nrelease : b->nrelease;
	for (i = 0; i < n; i++) {
		struct num x = i < a->nrelease ? a->release[i] : ZERO;
		struct num y = i < b->nrelease ? b->release[i] : ZERO;
		int c = num_cmp(x, y);
		if (c)
			return c;
	}
	return 0;
}

/* PEP 440's suffix order: X.devN < X.aN < X.bN < X.rcN < X < X.postN, and
 * within each, a .devM sorts before the same thing without it. */
static int pre_rank(const kernels__version *v)
{
	if (v->pre == PRE_NONE && !v->has_post && v->has_dev)
		return -1;
	return v->pre == PRE_NONE ? 3 : v->pre;
}

static int int_cmp(int a, int b)
{
	return (a > b) - (a < b);
}

static int public_cmp(const kernels__version *a, const kernels__version *b)
{
	int c;
	if ((c = num_cmp(a->epoch, b->epoch)) || (c = release_cmp(a, b)))
		return c;
	if ((c = int_cmp(pre_rank(a), pre_rank(b))) || (c = num_cmp(a->pre_n, b->pre_n)))
		return c;
	if ((c = int_cmp(a->has_post, b->has_post)) || (c = num_cmp(a->post, b->post)))
		return c;
	if ((c = int_cmp(!a->has_dev, !b->has_dev)) || (c = num_cmp(a->dev, b->dev)))
		return c;
	return 0;
}

/* Local labels: none < any; segment by segment, words < numbers, numbers by
 * value, words bytewise; a label that is a prefix of another sorts first. */
static int local_cmp(const kernels__version *a, const kernels__version *b)
{
	size_t i;
	for (i = 0; i < a->nlocal && i < b->nlocal; i++) {
		const struct lseg *x = &a->local[i], *y = &b->local[i];
		int c;
		if (x->numeric != y->numeric)
			return x->numeric ? 1 : -1;
		if (x->numeric) {
			c = num_cmp(x->v, y->v);
		} else {
			size_t n = x->v.n < y->v.n ? x->v.n : y->v.n;
			c = memcmp(x->v.p, y->v.p, n);
			c = c ? (c < 0 ? -1 : 1) : int_cmp(x->v.n > y->v.n, x->v.n < y->v.n);
		}
		if (c)
			return c;
	}
	return int_cmp(a->nlocal > i, b->nlocal > i);
}

int kernels__version_compare(const kernels__version *a, const kernels__version *b)
{
	int c = public_cmp(a, b);
	return c ? c : local_cmp(a, b);
}

int kernels__named_version_cmp(const void *a, const void *b)
{
	const kernels__named_version *x = a, *y = b;
	int c = kernels__version_compare(x->v, y->v);
	return c ? c : strcmp(x->name, y->name);
}

/* ---- normalised text ---- */

static int put_num(kernels__buf *b, struct num n)
{
	return kernels__buf_put(b, n.p, n.n);
}

/* Writes epoch and the first `nrel` release numbers, the last one plus one
 * when `bump`. */
static int put_base(kernels__buf *b, const kernels__version *v, size_t nrel, int bump)
{
	size_t i;
	if (!num_is_zero(v->epoch) && (put_num(b, v->epoch) < 0 || kernels__buf_puts(b, "!") < 0))
		return -1;
	for (i = 0; i < nrel; i++) {
		if (i && kernels__buf_puts(b, ".") < 0)
			return -1;
		if (bump && i + 1 == nrel) {
			/* decimal increment of a digit string */
			struct num n = v->release[i];
			size_t k = n.n, start = b->len;
			int carry = 1;
			if (kernels__buf_put(b, n.p, n.n) < 0)
				return -1;
			while (carry && k > 0) {
				char *d = &b->ptr[start + k - 1];
				if (*d == '9') {
					*d = '0';
				} else {
					(*d)++;
					carry = 0;
				}
				k--;
			}
			if (carry) {
				if (kernels__buf_puts(b, "0") < 0)
					return -1;
				b->ptr[start] = '1';
			}
		} else if (put_num(b, v->release[i]) < 0) {
			return -1;
		}
	}
	return 0;
}

static int put_public(kernels__buf *b, const kernels__version *v)
{
	static const char *const pre_names[] = { "a", "b", "rc" };
	if (put_base(b, v, v->nrelease, 0) < 0)
		return -1;
	if (v->pre != PRE_NONE && (kernels__buf_puts(b, pre_names[v->pre]) < 0 || put_num(b, v->pre_n) < 0))
		return -1;
	if (v->has_post && (kernels__buf_puts(b, ".post") < 0 || put_num(b, v->post) < 0))
		return -1;
	if (v->has_dev && (kernels__buf_puts(b, ".dev") < 0 || put_num(b, v->dev) < 0))
		return -1;
	return 0;
}

#ifdef KERNELS_TESTING
char *kernels__version_normalized(const kernels__version *v)
{
	kernels__buf b = { 0 };
	size_t i;

	if (put_public(&b, v) < 0)
		goto oom;
	for (i = 0; i < v->nlocal; i++)
		if (kernels__buf_puts(&b, i ? "." : "+") < 0 || put_num(&b, v->local[i].v) < 0)
			goto oom;
	return kernels__buf_detach(&b);
oom:
	kernels__buf_free(&b);
	kernels__error_oom();
	return NULL;
}
#endif

/* ---- specifiers ---- */

enum op { OP_EQ, OP_NE, OP_LE, OP_GE, OP_LT, OP_GT, OP_COMPAT, OP_ARBITRARY };

struct spec {
	enum op op;
	int wildcard;           /* ==V.* / !=V.* */
	int exact_local;        /* ==V+local / !=V+local: compare the label too */
	kernels__version *v;    /* the version (NULL for ===) */
	kernels__version *lo;   /* derived bounds, see spec_bounds() */
	kernels__version *hi;
	char *arbitrary;        /* === text, lower-cased */
	int prerelease;         /* this specifier names a pre-release */
};

struct kernels__specifier_set {
	char *text;
	struct spec *specs;
	size_t n;
	int prerelease;
};

/* Builds "E!r0...r(nrel-1)[+1].dev0" (or `v`'s public text + ".dev0"). */
static int derive(const kernels__version *v, size_t nrel, int bump, int whole, kernels__version **out)
{
	kernels__buf b = { 0 };
	struct perr err;
	int rc;

	rc = whole ? put_public(&b, v) : put_base(&b, v, nrel, bump);
	if (rc < 0 || kernels__buf_puts(&b, ".dev0") < 0) {
		kernels__buf_free(&b);
		return kernels__error_oom();
	}
	rc = parse_core(b.ptr, b.len, 0, out, &err);
	kernels__buf_free(&b);
	if (rc == -2)
		return kernels__error_oom();
	if (rc < 0)
		return kernels__error(KERNELS_ERROR, "internal error: derived version bound does not parse");
	return 0;
}

/*
 * The bounds packaging's range engine uses:
 *   <V      below V.dev0 (V itself when V is a pre-release): V's pre-releases are out;
 *   ~=X.Y.Z [X.Y.Z, X.(Y+1).dev0);
 *   ==V.*   [V.dev0, V'.dev0) with V' = V's release with its last number plus one.
 */
static int spec_bounds(struct spec *sp)
{
	const kernels__version *v = sp->v;
	if (sp->op == OP_LT && !kernels__version_is_prerelease(v))
		return derive(v, 0, 0, 1, &sp->lo);
	if (sp->op == OP_COMPAT)
		return derive(v, v->nrelease - 1, 1, 0, &sp->hi);
	if (sp->wildcard) {
		int rc = derive(v, v->nrelease, 0, 0, &sp->lo);
		return rc < 0 ? rc : derive(v, v->nrelease, 1, 0, &sp->hi);
	}
	return 0;
}

static int ascii_case_equal(const char *a, const char *lower_b)
{
	for (; *a && *lower_b; a++, lower_b++)
		if (to_lower(*a) != *lower_b)
			return 0;
	return *a == *lower_b;
}

/* Same epoch, release and pre-release: V itself, V+local or V.postN(.devM). */
static int same_release_and_pre(const kernels__version *p, const kernels__version *v)
{
	return !num_cmp(p->epoch, v->epoch) && !release_cmp(p, v) && p->pre == v->pre && !num_cmp(p->pre_n, v->pre_n);
}

static int spec_match(const struct spec *sp, const kernels__version *p)
{
	const kernels__version *v = sp->v;
	int in;

	switch (sp->op) {
	case OP_ARBITRARY:
		return ascii_case_equal(p->text, sp->arbitrary);
	case OP_GE:
		return kernels__version_compare(p, v) >= 0;
	case OP_LE:
		return public_cmp(p, v) <= 0;
	case OP_LT:
		return kernels__version_compare(p, sp->lo ? sp->lo : v) < 0;
	case OP_GT:
		if (kernels__version_compare(p, v) <= 0)
			return 0;
		/* >V is not satisfied by V+local nor, unless V is a post or dev
		 * release itself, by V's post-releases. */
		if (v->has_post || v->has_dev)
			return public_cmp(p, v) != 0;
		return !same_release_and_pre(p, v);
	case OP_COMPAT:
		return kernels__version_compare(p, v) >= 0 && kernels__version_compare(p, sp->hi) < 0;
	case OP_EQ:
	case OP_NE:
		if (sp->wildcard)
			in = kernels__version_compare(p, sp->lo) >= 0 && kernels__version_compare(p, sp->hi) < 0;
		else if (sp->exact_local)
			in = kernels__version_compare(p, v) == 0;
		else
			in = public_cmp(p, v) == 0;
		return sp->op == OP_EQ ? in : !in;
	}
	return 0;
}

static void spec_clear(struct spec *sp)
{
	kernels__version_free(sp->v);
	kernels__version_free(sp->lo);
	kernels__version_free(sp->hi);
	free(sp->arbitrary);
}

void kernels__specifier_set_free(kernels__specifier_set *s)
{
	size_t i;
	if (!s)
		return;
	for (i = 0; i < s->n; i++)
		spec_clear(&s->specs[i]);
	free(s->specs);
	free(s->text);
	free(s);
}

#define SPEC_HINT "PEP 440 specifiers look like '>=1.1.2,<2', '~=1.1', '==1.*' or '!=1.1.0'"

static int spec_syntax_error(const char *text, size_t len, size_t at, const char *expected)
{
	char what[64];
	/* ">=1 <2", ">=1;<2", ">=1 && <2": another specifier where one ended */
	int joined = at > 0 && at < len && strchr(";<>=!~&|", text[at]);
	describe_at(what, sizeof(what), text, len, at);
	return kernels__error(KERNELS_EPARSE,
		"version specifier '%.*s%s' is malformed: %s at column %zu, expected %s%s; " SPEC_HINT,
		QUOTE_MAX, text, len > QUOTE_MAX ? "..." : "", what, at + 1, expected,
		joined ? " (separate specifiers with ',')" : "");
}

static int spec_rule_error(const char *text, size_t len, size_t at, const char *rule)
{
	return kernels__error(KERNELS_EPARSE, "version specifier '%.*s%s' is malformed at column %zu: %s; " SPEC_HINT,
		QUOTE_MAX, text, len > QUOTE_MAX ? "..." : "", at + 1, rule);
}

/* One item text[from..to) (already stripped, non-empty) into *sp. */
/* The operator at text[from..to) into sp->op: its length, or 0 (the
 * error set) when there is none. */
static size_t parse_op(const char *text, size_t len, size_t from, size_t to, struct spec *sp)
{
	static const char firsts[] = "~=!<>";
	static const enum op two[] = { OP_COMPAT, OP_EQ, OP_NE, OP_LE, OP_GE };
	const char *first = text[from] ? strchr(firsts, text[from]) : NULL;

	if (to - from >= 3 && !memcmp(text + from, "===", 3)) {
		sp->op = OP_ARBITRARY;
		return 3;
	}
	if (to - from >= 2 && text[from + 1] == '=' && first) {
		sp->op = two[first - firsts];
		return 2;
	}
	if (text[from] == '<' || text[from] == '>') {
		sp->op = text[from] == '<' ? OP_LT : OP_GT;
		return 1;
	}
	spec_syntax_error(text, len, from, "an operator (==, !=, <=, >=, <, >, ~= or ===)");
	return 0;
}

/* The version of '===' at text[i..to): a literal string, lower-cased. */
static int parse_arbitrary(const char *text, size_t len, size_t i, size_t to, struct spec *sp)
{
	struct perr err;
	size_t k;

	while (i < to && is_space(text[i]))
		i++;
	for (k = i; k < to; k++)
		if (is_space(text[k]) || text[k] == ';' || text[k] == ')')
			return spec_syntax_error(text, len, k,
				"no whitespace, ';' or ')' in the version of '===' (it is compared as a "
				"literal string)");
	if (!(sp->arbitrary = malloc(to - i + 1)))
		return kernels__error_oom();
	for (k = i; k < to; k++)
		sp->arbitrary[k - i] = to_lower(text[k]);
	sp->arbitrary[to - i] = '\0';
	/* It still names a pre-release when it parses as one. */
	if (parse_core(text + i, to - i, 0, &sp->v, &err) == 0)
		sp->prerelease = kernels__version_is_prerelease(sp->v);
	kernels__version_free(sp->v);
	sp->v = NULL;
	return 0;
}

static int parse_item(const char *text, size_t len, size_t from, size_t to, struct spec *sp)
{
	size_t oplen = parse_op(text, len, from, to, sp), i = from + oplen;
	struct perr err;
	int eq, rc;

	if (!oplen)
		return KERNELS_EPARSE;
	eq = sp->op == OP_EQ || sp->op == OP_NE;
	if (sp->op == OP_ARBITRARY)
		return parse_arbitrary(text, len, i, to, sp);
	if (i == to)
		return spec_syntax_error(text, len, i, "a version after the operator");
	if ((rc = parse_core(text + i, to - i, eq, &sp->v, &err)) == -2)
		return kernels__error_oom();
	if (rc < 0)
		return spec_syntax_error(text, len, i + err.at, expected_after(err.state, eq));
	if (sp->v->nlocal && !eq)
		return spec_rule_error(text, len, i + sp->v->local_at,
			"a local version label (+...) is only allowed with == and !=");
	if (sp->op == OP_COMPAT && sp->v->nrelease < 2)
		return spec_rule_error(text, len, i + sp->v->release_end,
			"'~=' needs a release of at least two numbers, as in ~=1.4 or ~=1.4.5");
	sp->wildcard = sp->v->wildcard;
	sp->exact_local = sp->v->nlocal > 0;
	sp->prerelease = sp->op != OP_NE && !sp->wildcard && kernels__version_is_prerelease(sp->v);
	return spec_bounds(sp);
}

int kernels__specifier_parse(const char *text, kernels__specifier_set **out)
{
	kernels__specifier_set *s;
	size_t len, start, cap = 0, i;
	int rc;

	if (!out)
		return kernels__error(KERNELS_EINVAL, "kernels__specifier_parse: no output pointer given");
	*out = NULL;
	if (!text)
		return kernels__error(KERNELS_EINVAL, "no version specifier given; pass one such as '>=1.1.2,<2'");
	len = strnlen(text, KERNELS__SPECIFIER_MAX + 1);
	if (len > KERNELS__SPECIFIER_MAX)
		return kernels__error(KERNELS_EPARSE,
			"version specifier '%.*s...' is longer than the %d bytes allowed; shorten it (" SPEC_HINT ")",
			QUOTE_MAX, text, KERNELS__SPECIFIER_MAX);
	if (!(s = calloc(1, sizeof(*s))) || !(s->text = kernels__strdup(text))) {
		free(s);
		return kernels__error_oom();
	}
	for (start = 0; start <= len; start = i + 1) {
		size_t a = start, b;
		for (i = start; i < len && text[i] != ','; i++)
			;
		b = i;
		while (a < b && is_space(text[a]))
			a++;
		while (b > a && is_space(text[b - 1]))
			b--;
		if (a == b)
			continue;   /* packaging skips empty items: ">=1,,<2" is ">=1,<2" */
		if ((rc = KERNELS__ARRAY_GROW(s->specs, cap, s->n)) < 0)
			goto fail;
		memset(&s->specs[s->n], 0, sizeof(s->specs[s->n]));
		s->n++;
		if ((rc = parse_item(text, len, a, b, &s->specs[s->n - 1])) < 0)
			goto fail;
		s->prerelease |= s->specs[s->n - 1].prerelease;
	}
	*out = s;
	return 0;
fail:
	kernels__specifier_set_free(s);
	return rc;
}

#ifdef KERNELS_TESTING
const char *kernels__specifier_text(const kernels__specifier_set *s)
{
	return s->text;
}

size_t kernels__specifier_count(const kernels__specifier_set *s)
{
	return s->n;
}

int kernels__specifier_implies_prereleases(const kernels__specifier_set *s)
{
	return s->prerelease;
}
#endif

/* In range of every specifier, pre-release policy aside. */
static int in_range(const kernels__specifier_set *s, const kernels__version *v)
{
	size_t i;
	for (i = 0; i < s->n; i++)
		if (!spec_match(&s->specs[i], v))
			return 0;
	return 1;
}

#ifdef KERNELS_TESTING
int kernels__specifier_contains(const kernels__specifier_set *s, const kernels__version *v, int prereleases)
{
	if (prereleases == 0 && kernels__version_is_prerelease(v))
		return 0;
	return in_range(s, v);
}
#endif

/* Parses versions[0..n) (NULL where not a version) and marks which are in
 * range; returns 0 or an error code. */
static int parse_all(const kernels__specifier_set *s, const char *const *versions, size_t n,
	kernels__version ***parsed, unsigned char **ok)
{
	size_t i;
	*parsed = calloc(n ? n : 1, sizeof(**parsed));
	*ok = calloc(n ? n : 1, 1);
	if (!*parsed || !*ok) {
		free(*parsed);
		free(*ok);
		return kernels__error_oom();
	}
	for (i = 0; i < n; i++) {
		(*parsed)[i] = kernels__version_try_parse(versions[i]);
		(*ok)[i] = (*parsed)[i] && in_range(s, (*parsed)[i]);
	}
	return 0;
}

static void free_all(kernels__version **parsed, unsigned char *ok, size_t n)
{
	size_t i;
	for (i = 0; parsed && i < n; i++)
		kernels__version_free(parsed[i]);
	free(parsed);
	free(ok);
}

/* Applies the pre-release policy to the in-range marks, like packaging's
 * filter: with the default, pre-releases stay only when no final is in range. */
static void apply_prereleases(const kernels__specifier_set *s, kernels__version **parsed, unsigned char *ok,
	size_t n, int prereleases)
{
	size_t i;
	int finals = 0;

	if (prereleases < 0 && s->prerelease)
		prereleases = 1;
	if (prereleases == 1)
		return;
	for (i = 0; i < n; i++)
		if (ok[i] && !kernels__version_is_prerelease(parsed[i]))
			finals = 1;
	if (prereleases < 0 && !finals)
		return;
	for (i = 0; i < n; i++)
		if (ok[i] && kernels__version_is_prerelease(parsed[i]))
			ok[i] = 0;
}

#ifdef KERNELS_TESTING
int kernels__specifier_filter(const kernels__specifier_set *s, const char *const *versions, size_t n,
	int prereleases, size_t *matches, size_t *count)
{
	kernels__version **parsed;
	unsigned char *ok;
	size_t i;
	int rc;

	if (!s || (n && (!versions || !matches)) || !count)
		return kernels__error(KERNELS_EINVAL, "kernels__specifier_filter: missing argument");
	if ((rc = parse_all(s, versions, n, &parsed, &ok)) < 0)
		return rc;
	apply_prereleases(s, parsed, ok, n, prereleases);
	*count = 0;
	for (i = 0; i < n; i++)
		if (ok[i])
			matches[(*count)++] = i;
	free_all(parsed, ok, n);
	return 0;
}
#endif

struct named {
	const kernels__version *v;
	const char *name;
};

static int cmp_named(const void *a, const void *b)
{
	return kernels__version_compare(((const struct named *)a)->v, ((const struct named *)b)->v);
}

#define LIST_MAX 40

/* The ENOMATCH message: the spec and the versions that exist (by the names
 * the caller knows them by; the highest ones when there are many), ascending. */
static int no_match_error(const kernels__specifier_set *s, kernels__version **parsed, const char *const *names,
	size_t n, int prereleases)
{
	kernels__buf b = { 0 };
	struct named *valid;
	size_t i, nvalid = 0, from;
	int excluded_pre = 0, rc;

	if (!(valid = malloc((n ? n : 1) * sizeof(*valid))))
		return kernels__error_oom();
	for (i = 0; i < n; i++) {
		if (!parsed[i])
			continue;
		valid[nvalid].v = parsed[i];
		valid[nvalid++].name = names[i];
		if (prereleases == 0 && kernels__version_is_prerelease(parsed[i]) && in_range(s, parsed[i]))
			excluded_pre = 1;
	}
	qsort(valid, nvalid, sizeof(*valid), cmp_named);
	if (nvalid == 0) {
		rc = kernels__buf_printf(&b, "no versions exist (%s)",
			n ? "none of the names is a PEP 440 version" : "there are no version tags");
	} else {
		from = nvalid > LIST_MAX ? nvalid - LIST_MAX : 0;
		rc = kernels__buf_printf(&b, "the versions that exist are: %s", from ? "... " : "");
		for (i = from; rc == 0 && i < nvalid; i++)
			rc = kernels__buf_printf(&b, "%s%s", i > from ? ", " : "", valid[i].name);
		if (rc == 0 && from)
			rc = kernels__buf_printf(&b, " (%zu versions in all)", nvalid);
	}
	free(valid);
	if (rc < 0) {
		kernels__buf_free(&b);
		return rc;
	}
	rc = kernels__error(KERNELS_ENOMATCH, "no version satisfies '%.*s'%s; %s; relax the specifier or pin a "
			    "revision",
		QUOTE_MAX, s->text, excluded_pre ? " (matching pre-releases were excluded)" : "", b.ptr);
	kernels__buf_free(&b);
	return rc;
}

/* texts: what is parsed and what === compares; names: what messages show.
 * Among equal versions the first wins, or the last with `last_of_equals`. */
static int select_impl(const kernels__specifier_set *s, const char *const *texts, const char *const *names,
	size_t n, int prereleases, int last_of_equals, size_t *best)
{
	kernels__version **parsed;
	unsigned char *ok;
	size_t i;
	int rc, found = 0;

	if ((rc = parse_all(s, texts, n, &parsed, &ok)) < 0)
		return rc;
	apply_prereleases(s, parsed, ok, n, prereleases);
	for (i = 0; i < n; i++) {
		int c;
		if (!ok[i])
			continue;
		c = found ? kernels__version_compare(parsed[i], parsed[*best]) : 1;
		if (c > 0 || (c == 0 && last_of_equals)) {
			*best = i;
			found = 1;
		}
	}
	rc = found ? 0 : no_match_error(s, parsed, names, n, prereleases);
	free_all(parsed, ok, n);
	return rc;
}

int kernels__specifier_select(const kernels__specifier_set *s, const char *const *versions, size_t n,
	int prereleases, size_t *best)
{
	if (!s || (n && !versions) || !best)
		return kernels__error(KERNELS_EINVAL, "kernels__specifier_select: missing argument");
	return select_impl(s, versions, versions, n, prereleases, 0, best);
}

struct tag {
	kernels__version *v;
	size_t index;
};

#ifdef KERNELS_TESTING
static int cmp_tag(const void *a, const void *b)
{
	const struct tag *x = a, *y = b;
	int c = kernels__version_compare(x->v, y->v);
	return c ? c : (x->index > y->index) - (x->index < y->index);
}

int kernels__specifier_select_tags(const kernels__specifier_set *s, const char *const *tags, size_t n, size_t *best)
{
	struct tag *t;
	char **norm;
	size_t i, nt = 0, first = 0;
	int rc = 0;

	if (!s || (n && !tags) || !best)
		return kernels__error(KERNELS_EINVAL, "kernels__specifier_select_tags: missing argument");
	norm = calloc(n ? n : 1, sizeof(*norm));
	t = calloc(n ? n : 1, sizeof(*t));
	if (!norm || !t) {
		rc = kernels__error_oom();
		goto out;
	}
	/* The Python client keys tags by Version(name[1:]) for names starting
	 * with a lower-case 'v': equal versions share the first tag's key (its
	 * normalised text is what === sees) and the last tag is the value. */
	for (i = 0; i < n; i++) {
		kernels__version *v = tags[i] && tags[i][0] == 'v' ? kernels__version_try_parse(tags[i] + 1) : NULL;
		if (v) {
			t[nt].v = v;
			t[nt++].index = i;
		}
	}
	qsort(t, nt, sizeof(*t), cmp_tag);
	for (i = 0; i < nt && rc == 0; i++) {
		if (i > 0 && kernels__version_compare(t[i].v, t[first].v) != 0)
			first = i;
		if (!(norm[t[i].index] = kernels__version_normalized(t[first].v)))
			rc = KERNELS_ENOMEM;
	}
	if (rc == 0)
		rc = select_impl(s, (const char *const *)norm, tags, n, -1, 1, best);
out:
	for (i = 0; norm && i < n; i++)
		free(norm[i]);
	for (i = 0; t && i < nt; i++)
		kernels__version_free(t[i].v);
	free(norm);
	free(t);
	return rc;
}
#endif

int kernels__specifier_looks_like(const char *text)
{
	if (!text)
		return 0;
	while (is_space(*text))
		text++;
	if (text[0] == '<' || text[0] == '>')
		return 1;
	return (text[0] == '=' || text[0] == '!' || text[0] == '~') && text[1] == '=';
}
