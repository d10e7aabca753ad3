/* A strict TOML 1.0 reader (see toml.h). It follows the specification and
 * agrees with Python's tomllib, the reader pip and the `kernels` package
 * use, so a file both accept means the same to both and a file tomllib
 * refuses is refused here too. */
#include "toml.h"
#include "error.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Table flags. A table may be given by a [header] once; a table made by
 * dotted keys belongs to the section that made it and is closed for dotted
 * keys and headers after it; inline tables and arrays written as values are
 * closed for good. */
#define T_EXPLICIT 1u   /* defined by [header] or as a [[array]] element */
#define T_DOTTED 2u     /* created by a dotted key in `section` */
#define T_FROZEN KERNELS__TOML_FROZEN /* inline table or static array (and all below) */
#define T_AOT 8u        /* array created by [[header]] */

typedef struct {
	const char *src;
	size_t len, pos;
	const char *name;
	/* line/column cache: positions are asked for in increasing order, so
	 * advancing from the last answer keeps this linear overall */
	size_t cpos;
	int cline, ccol;
	int section;
	kernels__toml_value *root, *cur;
} parser;

static void locate(parser *p, size_t pos, int *line, int *col)
{
	if (pos < p->cpos) {
		p->cpos = 0;
		p->cline = 1;
		p->ccol = 1;
	}
	while (p->cpos < pos && p->cpos < p->len) {
		unsigned char c = (unsigned char)p->src[p->cpos++];
		if (c == '\n') {
			p->cline++;
			p->ccol = 1;
		} else if ((c & 0xC0) != 0x80) {
			p->ccol++;
		}
	}
	*line = p->cline;
	*col = p->ccol;
}

static int fail_at(parser *p, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail_at(parser *p, size_t pos, const char *fmt, ...)
{
	char msg[1024];
	int line, col;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	locate(p, pos, &line, &col);
	return kernels__error(KERNELS_EPARSE, "%s:%d:%d: %s", p->name, line, col, msg);
}

/* What is at `pos`, for messages: "'x'", "end of line", "end of file". */
static const char *describe(parser *p, size_t pos, char *buf, size_t size)
{
	unsigned char c;

	if (pos >= p->len)
		return "end of file";
	c = (unsigned char)p->src[pos];
	if (c == '\n' || c == '\r')
		return "end of line";
	if (c < 0x20 || c == 0x7f)
		snprintf(buf, size, "control character U+%04X", c);
	else if (c >= 0x80)
		snprintf(buf, size, "a non-ASCII character");
	else
		snprintf(buf, size, "'%c'", c);
	return buf;
}

static int fail_expected(parser *p, const char *what)
{
	char buf[48];
	return fail_at(p, p->pos, "expected %s, found %s", what, describe(p, p->pos, buf, sizeof(buf)));
}

/* ---- the tree ---- */

static void value_free(kernels__toml_value *v)
{
	size_t i;

	if (!v)
		return;
	switch (v->type) {
	case KERNELS__TOML_TABLE:
		for (i = 0; i < v->u.t.n; i++) {
			free(v->u.t.items[i].key);
			value_free(v->u.t.items[i].value);
		}
		free(v->u.t.items);
		free(v->u.t.index);
		break;
	case KERNELS__TOML_ARRAY:
		for (i = 0; i < v->u.a.n; i++)
			value_free(v->u.a.items[i]);
		free(v->u.a.items);
		break;
	case KERNELS__TOML_STRING:
	case KERNELS__TOML_DATETIME:
	case KERNELS__TOML_FLOAT:
		free(v->u.s.ptr);
		break;
	default:
		break;
	}
	free(v);
}

void kernels__toml_free(kernels__toml_value *root)
{
	value_free(root);
}

static kernels__toml_value *value_new_lc(parser *p, kernels__toml_type type, size_t pos, int line, int col,
					 int depth)
{
	kernels__toml_value *v;

	if (depth > KERNELS__TOML_MAX_DEPTH) {
		fail_at(p, pos, "nesting deeper than %d levels; flatten the document", KERNELS__TOML_MAX_DEPTH);
		return NULL;
	}
	v = calloc(1, sizeof(*v));
	if (!v) {
		kernels__error_oom();
		return NULL;
	}
	v->type = type;
	v->depth = depth;
	v->line = line;
	v->col = col;
	return v;
}

static kernels__toml_value *value_new(parser *p, kernels__toml_type type, size_t pos, int depth)
{
	int line, col;

	locate(p, pos, &line, &col);
	return value_new_lc(p, type, pos, line, col, depth);
}

static uint32_t key_hash(const char *key, size_t len)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)key[i]) * 16777619u;
	return h;
}

static long table_find(const kernels__toml_value *t, const char *key, size_t len)
{
	size_t mask, i;

	if (!t->u.t.index_cap)
		return -1;
	mask = t->u.t.index_cap - 1;
	for (i = key_hash(key, len) & mask;; i = (i + 1) & mask) {
		uint32_t slot = t->u.t.index[i];
		const kernels__toml_entry *e;
		if (!slot)
			return -1;
		e = &t->u.t.items[slot - 1];
		if (e->key_len == len && memcmp(e->key, key, len) == 0)
			return (long)(slot - 1);
	}
}

static int table_reindex(kernels__toml_value *t, size_t cap)
{
	uint32_t *index = calloc(cap, sizeof(*index));
	size_t i, j;

	if (!index)
		return kernels__error_oom();
	for (i = 0; i < t->u.t.n; i++) {
		const kernels__toml_entry *e = &t->u.t.items[i];
		for (j = key_hash(e->key, e->key_len) & (cap - 1); index[j]; j = (j + 1) & (cap - 1))
			;
		index[j] = (uint32_t)(i + 1);
	}
	free(t->u.t.index);
	t->u.t.index = index;
	t->u.t.index_cap = cap;
	return 0;
}

/* Adds key -> v to table t (the key must be new); takes ownership of v. */
static int table_add(kernels__toml_value *t, const char *key, size_t len, int line, int col,
		     kernels__toml_value *v)
{
	kernels__toml_entry *e;
	char *k;

	if (KERNELS__ARRAY_GROW(t->u.t.items, t->u.t.cap, t->u.t.n) < 0)
		goto oom;
	if (!(k = malloc(len + 1)))
		goto oom;
	memcpy(k, key, len);
	k[len] = '\0';
	e = &t->u.t.items[t->u.t.n++];
	e->key = k;
	e->key_len = len;
	e->line = line;
	e->col = col;
	e->value = v;
	if (t->u.t.n * 2 > t->u.t.index_cap) {
		size_t cap = t->u.t.index_cap ? t->u.t.index_cap * 2 : 16;
		while (cap < t->u.t.n * 2)
			cap *= 2;
		if (table_reindex(t, cap) < 0)
			return KERNELS_ENOMEM; /* v is owned by the table now */
	} else {
		size_t j, mask = t->u.t.index_cap - 1;
		for (j = key_hash(k, len) & mask; t->u.t.index[j]; j = (j + 1) & mask)
			;
		t->u.t.index[j] = (uint32_t)t->u.t.n;
	}
	return 0;
oom:
	value_free(v);
	return kernels__error_oom();
}

static int array_add(kernels__toml_value *a, kernels__toml_value *v)
{
	if (KERNELS__ARRAY_GROW(a->u.a.items, a->u.a.cap, a->u.a.n) < 0) {
		value_free(v);
		return KERNELS_ENOMEM;
	}
	a->u.a.items[a->u.a.n++] = v;
	return 0;
}

static void freeze(kernels__toml_value *v)
{
	size_t i;

	v->flags |= T_FROZEN;
	if (v->type == KERNELS__TOML_TABLE)
		for (i = 0; i < v->u.t.n; i++)
			freeze(v->u.t.items[i].value);
	else if (v->type == KERNELS__TOML_ARRAY)
		for (i = 0; i < v->u.a.n; i++)
			freeze(v->u.a.items[i]);
}

/* ---- lexical helpers ---- */

static int at_end(parser *p)
{
	return p->pos >= p->len;
}

static int peek(parser *p, size_t ahead)
{
	return p->pos + ahead < p->len ? (unsigned char)p->src[p->pos + ahead] : -1;
}

static void skip_ws(parser *p)
{
	while (!at_end(p) && (p->src[p->pos] == ' ' || p->src[p->pos] == '\t'))
		p->pos++;
}

static int is_newline(parser *p)
{
	return peek(p, 0) == '\n' || (peek(p, 0) == '\r' && peek(p, 1) == '\n');
}

static int skip_newline(parser *p)
{
	if (peek(p, 0) == '\n') {
		p->pos++;
		return 1;
	}
	if (peek(p, 0) == '\r' && peek(p, 1) == '\n') {
		p->pos += 2;
		return 1;
	}
	return 0;
}

static int is_control(int c)
{
	return (c >= 0 && c < 0x20 && c != '\t') || c == 0x7f;
}

/* A comment runs to the end of the line; control characters are not
 * allowed in it (the tab is). */
static int skip_comment(parser *p)
{
	if (peek(p, 0) != '#')
		return 0;
	while (!at_end(p) && !is_newline(p)) {
		int c = peek(p, 0);
		if (is_control(c))
			return fail_at(p, p->pos, "control character U+%04X in a comment; remove it", c);
		p->pos++;
	}
	return 0;
}

/* Whitespace, newlines and comments, as allowed between array items. */
static int skip_ws_comments_newlines(parser *p)
{
	for (;;) {
		skip_ws(p);
		if (peek(p, 0) == '#') {
			if (skip_comment(p) < 0)
				return KERNELS_EPARSE;
		} else if (!skip_newline(p)) {
			return 0;
		}
	}
}

/* After a statement: optional whitespace and comment, then a newline or the
 * end of the file. */
static int end_of_statement(parser *p)
{
	skip_ws(p);
	if (skip_comment(p) < 0)
		return KERNELS_EPARSE;
	if (at_end(p) || skip_newline(p))
		return 0;
	return fail_expected(p, "end of line (or a '#' comment) after the statement");
}

/* Checks the whole input is UTF-8 (no overlong forms, no surrogates, nothing
 * above U+10FFFF) before parsing, so the parser can treat bytes >= 0x80 as
 * parts of valid characters. */
static int check_utf8(parser *p)
{
	size_t bad = kernels__utf8_valid_prefix(p->src, p->len);

	if (bad == p->len)
		return 0;
	return fail_at(p, bad, "invalid UTF-8 byte sequence; TOML files must be UTF-8 encoded");
}

/* ---- strings ---- */

static int put_utf8(kernels__buf *b, uint32_t cp)
{
	char out[4];
	size_t n;

	if (cp < 0x80) {
		out[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		out[0] = (char)(0xC0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3F));
		n = 2;
	} else if (cp < 0x10000) {
		out[0] = (char)(0xE0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		n = 3;
	} else {
		out[0] = (char)(0xF0 | (cp >> 18));
		out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		out[3] = (char)(0x80 | (cp & 0x3F));
		n = 4;
	}
	return kernels__buf_put(b, out, n);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* One escape after '\' in a basic string; p->pos is at the backslash. */
static int parse_escape(parser *p, kernels__buf *b)
{
	size_t start = p->pos;
	int c = peek(p, 1), digits, i;
	uint32_t cp = 0;
	char buf[48];

	p->pos += 2;
	switch (c) {
	case 'b': return kernels__buf_put(b, "\b", 1);
	case 't': return kernels__buf_put(b, "\t", 1);
	case 'n': return kernels__buf_put(b, "\n", 1);
	case 'f': return kernels__buf_put(b, "\f", 1);
	case 'r': return kernels__buf_put(b, "\r", 1);
	case '"': return kernels__buf_put(b, "\"", 1);
	case '\\': return kernels__buf_put(b, "\\", 1);
	case 'u': digits = 4; break;
	case 'U': digits = 8; break;
	default:
		return fail_at(p, start, "invalid escape sequence '\\' followed by %s; expected one of "
			       "\\b \\t \\n \\f \\r \\\" \\\\ \\uXXXX \\UXXXXXXXX",
			       describe(p, start + 1, buf, sizeof(buf)));
	}
	for (i = 0; i < digits; i++) {
		int h = hexval(peek(p, 0));
		if (h < 0)
			return fail_at(p, start, "escape \\%c needs exactly %d hexadecimal digits", c, digits);
		cp = (cp << 4) | (uint32_t)h;
		p->pos++;
	}
	if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return fail_at(p, start, "escape \\%c%0*X is not a Unicode scalar value; expected a code point "
			       "up to U+10FFFF outside U+D800..U+DFFF", c, digits, (unsigned)cp);
	return put_utf8(b, cp);
}

/* Appends the byte at the cursor to `b` and moves past it. */
static int take_byte(parser *p, kernels__buf *b)
{
	if (kernels__buf_put(b, &p->src[p->pos], 1) < 0)
		return KERNELS_ENOMEM;
	p->pos++;
	return 0;
}

/* Basic ("...") or literal ('...') string on one line; p->pos at the quote. */
static int parse_string_line(parser *p, int quote, kernels__buf *b)
{
	size_t start = p->pos;

	p->pos++;
	for (;;) {
		int c = peek(p, 0);
		if (c < 0 || c == '\n' || (c == '\r' && peek(p, 1) == '\n'))
			return fail_at(p, start, "unterminated string: missing closing %c before the end of the line",
				       quote);
		if (c == quote) {
			p->pos++;
			return 0;
		}
		if (is_control(c))
			return fail_at(p, p->pos, "control character U+%04X in a string; write it as an escape "
				       "in a basic string (\"\\u%04X\")", c, c);
		if (c == '\\' && quote == '"') {
			if (parse_escape(p, b) < 0)
				return KERNELS_EPARSE;
			continue;
		}
		if (take_byte(p, b) < 0)
			return KERNELS_ENOMEM;
	}
}

/* Multi-line basic ("""...""") or literal ('''...''') string; p->pos at the
 * first of the three quotes. */
static int parse_string_multi(parser *p, int quote, kernels__buf *b)
{
	size_t start = p->pos;

	p->pos += 3;
	skip_newline(p); /* a newline right after the opening quotes is trimmed */
	for (;;) {
		int c = peek(p, 0);
		if (c < 0)
			return fail_at(p, start, "unterminated multi-line string: missing closing %c%c%c", quote,
				       quote, quote);
		if (c == quote && peek(p, 1) == quote && peek(p, 2) == quote) {
			/* up to two more quotes belong to the content */
			int extra = 0;
			while (extra < 2 && peek(p, 3 + extra) == quote)
				extra++;
			if (kernels__buf_put(b, &p->src[p->pos], (size_t)extra) < 0)
				return KERNELS_ENOMEM;
			p->pos += 3 + (size_t)extra;
			return 0;
		}
		if (skip_newline(p)) {
			if (kernels__buf_put(b, "\n", 1) < 0)
				return KERNELS_ENOMEM;
			continue;
		}
		if (is_control(c))
			return fail_at(p, p->pos, "control character U+%04X in a string; write it as an escape "
				       "in a basic string", c);
		if (c == '\\' && quote == '"') {
			/* line-ending backslash: drop it and all whitespace up to the
			 * next non-whitespace character */
			size_t q = p->pos + 1;
			while (q < p->len && (p->src[q] == ' ' || p->src[q] == '\t'))
				q++;
			if (q < p->len && (p->src[q] == '\n' || (p->src[q] == '\r' && q + 1 < p->len &&
								     p->src[q + 1] == '\n'))) {
				p->pos = q;
				for (;;) {
					skip_ws(p);
					if (!skip_newline(p))
						break;
				}
				continue;
			}
			if (parse_escape(p, b) < 0)
				return KERNELS_EPARSE;
			continue;
		}
		if (take_byte(p, b) < 0)
			return KERNELS_ENOMEM;
	}
}

static int parse_string(parser *p, kernels__buf *b, int allow_multi)
{
	int q = peek(p, 0);

	if (peek(p, 1) == q && peek(p, 2) == q) {
		if (!allow_multi)
			return fail_at(p, p->pos, "a multi-line string cannot be a key; use a one-line string");
		return parse_string_multi(p, q, b);
	}
	return parse_string_line(p, q, b);
}

/* ---- keys ---- */

/* A dotted key; each part keeps where it was written. Heap-allocated so
 * that nesting inline tables does not pile large frames on the stack. */
typedef struct {
	kernels__buf buf;
	size_t pos;
	int line, col;
} keypart;

typedef struct {
	keypart *part;
	size_t n, cap;
} keypath;

static void keypath_free(keypath *k)
{
	size_t i;

	for (i = 0; i < k->n; i++)
		kernels__buf_free(&k->part[i].buf);
	free(k->part);
	k->part = NULL;
	k->n = k->cap = 0;
}

static int is_bare(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* key = simple-key *( ws '.' ws simple-key ); leaves p->pos after the key. */
static int parse_key(parser *p, keypath *k)
{
	for (;;) {
		kernels__buf *b;
		keypart *kp;
		int c = peek(p, 0);
		if (k->n == KERNELS__TOML_MAX_DEPTH)
			return fail_at(p, p->pos, "key with more than %d dotted parts", KERNELS__TOML_MAX_DEPTH);
		if (KERNELS__ARRAY_GROW(k->part, k->cap, k->n) < 0)
			return KERNELS_ENOMEM;
		kp = &k->part[k->n++];
		memset(kp, 0, sizeof(*kp));
		kp->pos = p->pos;
		locate(p, p->pos, &kp->line, &kp->col);
		b = &kp->buf;
		if (c == '"' || c == '\'') {
			if (parse_string(p, b, 0) < 0)
				return KERNELS_EPARSE;
		} else if (is_bare(c)) {
			size_t s = p->pos;
			while (is_bare(peek(p, 0)))
				p->pos++;
			if (kernels__buf_put(b, p->src + s, p->pos - s) < 0)
				return KERNELS_ENOMEM;
		} else {
			return fail_expected(p, "a key (letters, digits, '_', '-', or a quoted string)");
		}
		if (!b->ptr && kernels__buf_put(b, "", 0) < 0)
			return KERNELS_ENOMEM;
		skip_ws(p);
		if (peek(p, 0) != '.')
			return 0;
		p->pos++;
		skip_ws(p);
	}
}

static const char *keypath_str(const keypath *k, size_t upto, char *out, size_t size)
{
	size_t i, used = 0;

	out[0] = '\0';
	for (i = 0; i < upto && used + 1 < size; i++) {
		int n = snprintf(out + used, size - used, "%s%s", i ? "." : "", k->part[i].buf.ptr);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	return out;
}

/* ---- numbers and dates ---- */

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

/* Digits of `base` with single '_' between digits; returns the count or -1. */
static int scan_digits(const char *s, size_t n, size_t *i, int base, char *clean, size_t *cl)
{
	int count = 0, prev_digit = 0;

	while (*i < n) {
		int c = (unsigned char)s[*i];
		int v = hexval(c);
		if (c == '_') {
			if (!prev_digit || *i + 1 >= n || hexval((unsigned char)s[*i + 1]) < 0 ||
			    hexval((unsigned char)s[*i + 1]) >= base)
				return -1;
			prev_digit = 0;
			(*i)++;
			continue;
		}
		if (v < 0 || v >= base)
			break;
		clean[(*cl)++] = (char)c;
		prev_digit = 1;
		count++;
		(*i)++;
	}
	return count;
}

static int parse_number(parser *p, kernels__toml_value **out, int depth)
{
	size_t start = p->pos, n, i = 0, cl = 0;
	const char *s = p->src + start;
	char clean[512];
	int sign = 0, is_float = 0;
	kernels__toml_value *v;

	while (start + i < p->len && (is_bare(p->src[start + i]) || p->src[start + i] == '+' ||
				      p->src[start + i] == '.'))
		i++;
	n = i;
	i = 0;
	if (n >= sizeof(clean) - 1)
		return fail_at(p, start, "number too long");
	if (s[0] == '+' || s[0] == '-') {
		sign = s[0];
		clean[cl++] = s[i++];
	}
	/* inf and nan */
	if (n - i == 3 && (memcmp(s + i, "inf", 3) == 0 || memcmp(s + i, "nan", 3) == 0)) {
		if (!(v = value_new(p, KERNELS__TOML_FLOAT, start, depth)))
			return kernels_error_last_code();
		v->f = s[i] == 'i' ? (sign == '-' ? -HUGE_VAL : HUGE_VAL) : (sign == '-' ? -NAN : NAN);
		goto keep_text;
	}
	if (!sign && n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o' || s[1] == 'b')) {
		int base = s[1] == 'x' ? 16 : s[1] == 'o' ? 8 : 2;
		unsigned long long acc = 0;
		size_t k;
		i = 2;
		if (scan_digits(s, n, &i, base, clean, &cl) <= 0 || i != n)
			return fail_at(p, start, "invalid %s integer; expected digits of base %d after '0%c', "
				       "'_' only between digits", base == 16 ? "hexadecimal" : base == 8 ? "octal" :
				       "binary", base, s[1]);
		for (k = 0; k < cl; k++) {
			if (acc > (unsigned long long)INT64_MAX / (unsigned)base ||
			    acc * (unsigned)base + (unsigned)hexval(clean[k]) > (unsigned long long)INT64_MAX)
				return fail_at(p, start, "integer out of range; TOML integers are 64-bit signed");
			acc = acc * (unsigned)base + (unsigned)hexval(clean[k]);
		}
		if (!(v = value_new(p, KERNELS__TOML_INTEGER, start, depth)))
			return kernels_error_last_code();
		v->u.i = (long long)acc;
		goto done;
	}
	{
		size_t int_start = cl;
		int nd = scan_digits(s, n, &i, 10, clean, &cl);
		if (nd < 0)
			return fail_at(p, start, "invalid number '%.*s'; '_' is only allowed between digits",
				       (int)(n > 64 ? 64 : n), s);
		if (nd == 0)
			return fail_at(p, start, "expected a value (string, number, true/false, date, array or "
				       "inline table)");
		if (nd > 1 && clean[int_start] == '0')
			return fail_at(p, start, "leading zeros are not allowed in decimal numbers");
		if (i < n && s[i] == '.') {
			clean[cl++] = s[i++];
			is_float = 1;
			if (scan_digits(s, n, &i, 10, clean, &cl) <= 0)
				return fail_at(p, start, "invalid float; expected digits after the '.'");
		}
		if (i < n && (s[i] == 'e' || s[i] == 'E')) {
			clean[cl++] = s[i++];
			is_float = 1;
			if (i < n && (s[i] == '+' || s[i] == '-'))
				clean[cl++] = s[i++];
			if (scan_digits(s, n, &i, 10, clean, &cl) <= 0)
				return fail_at(p, start, "invalid float; expected digits in the exponent");
		}
		if (i != n)
			return fail_at(p, start, "invalid number '%.*s'", (int)(n > 64 ? 64 : n), s);
	}
	clean[cl] = '\0';
	if (is_float) {
		if (!(v = value_new(p, KERNELS__TOML_FLOAT, start, depth)))
			return kernels_error_last_code();
		v->f = strtod(clean, NULL);
		goto keep_text;
	} else {
		long long val;
		errno = 0;
		val = strtoll(clean, NULL, 10);
		if (errno == ERANGE)
			return fail_at(p, start, "integer out of range; TOML integers are 64-bit signed");
		if (!(v = value_new(p, KERNELS__TOML_INTEGER, start, depth)))
			return kernels_error_last_code();
		v->u.i = val;
		goto done;
	}
keep_text:
	if (!(v->u.s.ptr = malloc(n + 1))) {
		value_free(v);
		return kernels__error_oom();
	}
	memcpy(v->u.s.ptr, s, n);
	v->u.s.ptr[n] = '\0';
	v->u.s.len = n;
done:
	p->pos = start + n;
	*out = v;
	return 0;
}

static int digits_at(parser *p, size_t pos, int count, int *val)
{
	int i;

	*val = 0;
	for (i = 0; i < count; i++) {
		if (pos + (size_t)i >= p->len || !is_digit((unsigned char)p->src[pos + (size_t)i]))
			return 0;
		*val = *val * 10 + (p->src[pos + (size_t)i] - '0');
	}
	return 1;
}

/* HH:MM:SS(.frac)? at pos; returns its length or 0. */
static size_t scan_time(parser *p, size_t pos, int *ok_range)
{
	int h, m, s;
	size_t n = 8;

	if (!digits_at(p, pos, 2, &h) || peek(p, pos + 2 - p->pos) != ':' || !digits_at(p, pos + 3, 2, &m) ||
	    peek(p, pos + 5 - p->pos) != ':' || !digits_at(p, pos + 6, 2, &s))
		return 0;
	*ok_range = h < 24 && m < 60 && s < 60;
	if (pos + 8 < p->len && p->src[pos + 8] == '.') {
		n = 9;
		while (pos + n < p->len && is_digit((unsigned char)p->src[pos + n]))
			n++;
		if (n == 9)
			return 0;
	}
	return n;
}

static int days_in_month(int y, int m)
{
	static const int d[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return 29;
	return d[m - 1];
}

/* Dates and times; p->pos at the first digit. Returns 1 when it took one,
 * 0 when the text is not a date/time (then it is a number), <0 on error. */
static int parse_datetime(parser *p, kernels__toml_value **out, int depth)
{
	size_t start = p->pos, n;
	int y, mo, d, ok = 1;
	kernels__toml_datetime_kind kind;
	kernels__toml_value *v;

	if (digits_at(p, start, 4, &y) && peek(p, 4) == '-') {
		if (!digits_at(p, start + 5, 2, &mo) || peek(p, 7) != '-' || !digits_at(p, start + 8, 2, &d))
			return fail_at(p, start, "invalid date; expected YYYY-MM-DD");
		if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
			return fail_at(p, start, "invalid date: no such day");
		n = 10;
		kind = KERNELS__TOML_LOCAL_DATE;
		if (start + 10 < p->len && (p->src[start + 10] == 'T' || p->src[start + 10] == 't' ||
					     p->src[start + 10] == ' ')) {
			size_t t = scan_time(p, start + 11, &ok);
			if (t) {
				if (!ok)
					return fail_at(p, start, "invalid time of day in the date-time");
				n = 11 + t;
				kind = KERNELS__TOML_LOCAL_DATETIME;
				if (start + n < p->len && (p->src[start + n] == 'Z' || p->src[start + n] == 'z')) {
					n++;
					kind = KERNELS__TOML_OFFSET_DATETIME;
				} else if (start + n < p->len &&
					   (p->src[start + n] == '+' || p->src[start + n] == '-')) {
					int oh, om;
					if (!digits_at(p, start + n + 1, 2, &oh) || peek(p, n + 3) != ':' ||
					    !digits_at(p, start + n + 4, 2, &om) || oh > 23 || om > 59)
						return fail_at(p, start,
							       "invalid time offset; expected +HH:MM or -HH:MM");
					n += 6;
					kind = KERNELS__TOML_OFFSET_DATETIME;
				}
			} else if (p->src[start + 10] != ' ') {
				return fail_at(p, start, "invalid date-time; expected HH:MM:SS after the 'T'");
			}
		}
	} else if (digits_at(p, start, 2, &y) && peek(p, 2) == ':') {
		n = scan_time(p, start, &ok);
		if (!n || !ok)
			return fail_at(p, start, "invalid time; expected HH:MM:SS with hours < 24, minutes and "
				       "seconds < 60");
		kind = KERNELS__TOML_LOCAL_TIME;
	} else {
		return 0;
	}
	if (!(v = value_new(p, KERNELS__TOML_DATETIME, start, depth)))
		return kernels_error_last_code();
	v->datetime_kind = kind;
	if (!(v->u.s.ptr = malloc(n + 1))) {
		value_free(v);
		return kernels__error_oom();
	}
	memcpy(v->u.s.ptr, p->src + start, n);
	v->u.s.ptr[n] = '\0';
	v->u.s.len = n;
	p->pos = start + n;
	*out = v;
	return 1;
}

/* ---- values ---- */

static int parse_value(parser *p, kernels__toml_value **out, int depth);
static int parse_keyval(parser *p, kernels__toml_value *table, int inline_table, int depth);

/* The end of an array or inline table: past its closing bracket, frozen
 * and handed out; or, when not `ok`, freed, and the parse error returned. */
static int close_container(parser *p, kernels__toml_value *v, int ok, kernels__toml_value **out)
{
	if (!ok) {
		value_free(v);
		return kernels_error_last_code() ? kernels_error_last_code() : KERNELS_EPARSE;
	}
	p->pos++;
	freeze(v);
	*out = v;
	return 0;
}

static int parse_array(parser *p, kernels__toml_value **out, int depth)
{
	kernels__toml_value *a = value_new(p, KERNELS__TOML_ARRAY, p->pos, depth), *item;

	if (!a)
		return KERNELS_EPARSE;
	p->pos++;
	for (;;) {
		if (skip_ws_comments_newlines(p) < 0)
			goto fail;
		if (peek(p, 0) == ']')
			break;
		if (parse_value(p, &item, depth + 1) < 0 || array_add(a, item) < 0)
			goto fail;
		if (skip_ws_comments_newlines(p) < 0)
			goto fail;
		if (peek(p, 0) == ',') {
			p->pos++;
			continue;
		}
		if (peek(p, 0) == ']')
			break;
		fail_expected(p, "',' or ']' in the array");
		goto fail;
	}
	return close_container(p, a, 1, out);
fail:
	return close_container(p, a, 0, out);
}

static int parse_inline_table(parser *p, kernels__toml_value **out, int depth)
{
	kernels__toml_value *t = value_new(p, KERNELS__TOML_TABLE, p->pos, depth);

	if (!t)
		return KERNELS_EPARSE;
	p->pos++;
	skip_ws(p);
	if (peek(p, 0) != '}') {
		for (;;) {
			skip_ws(p);
			if (parse_keyval(p, t, 1, depth) < 0)
				goto fail;
			skip_ws(p);
			if (peek(p, 0) == ',') {
				p->pos++;
				continue;
			}
			if (peek(p, 0) == '}')
				break;
			fail_expected(p, "',' or '}' in the inline table (it must stay on one line, without a "
				      "trailing comma)");
			goto fail;
		}
	}
	return close_container(p, t, 1, out);
fail:
	return close_container(p, t, 0, out);
}

static int parse_value(parser *p, kernels__toml_value **out, int depth)
{
	int c = peek(p, 0), rc;
	size_t start = p->pos;

	if (depth > KERNELS__TOML_MAX_DEPTH)
		return fail_at(p, start, "nesting deeper than %d levels; flatten the document",
			       KERNELS__TOML_MAX_DEPTH);
	if (c == '"' || c == '\'') {
		kernels__buf b = { 0 };
		kernels__toml_value *v;
		if ((rc = parse_string(p, &b, 1)) < 0 || (rc = kernels__buf_put(&b, "", 0)) < 0) {
			kernels__buf_free(&b);
			return rc;
		}
		if (!(v = value_new(p, KERNELS__TOML_STRING, start, depth))) {
			kernels__buf_free(&b);
			return kernels_error_last_code();
		}
		v->u.s.len = b.len;
		v->u.s.ptr = kernels__buf_detach(&b);
		*out = v;
		return 0;
	}
	if (c == '[')
		return parse_array(p, out, depth);
	if (c == '{')
		return parse_inline_table(p, out, depth);
	if (c == 't' || c == 'f') {
		int val = c == 't';
		const char *word = val ? "true" : "false";
		size_t n = strlen(word);
		if (p->len - p->pos >= n && memcmp(p->src + p->pos, word, n) == 0 && !is_bare(peek(p, n))) {
			kernels__toml_value *v = value_new(p, KERNELS__TOML_BOOL, start, depth);
			if (!v)
				return kernels_error_last_code();
			v->u.b = val;
			p->pos += n;
			*out = v;
			return 0;
		}
	}
	if (is_digit(c)) {
		rc = parse_datetime(p, out, depth);
		if (rc != 0)
			return rc < 0 ? rc : 0;
	}
	if (is_digit(c) || c == '+' || c == '-' || c == 'i' || c == 'n')
		return parse_number(p, out, depth);
	return fail_expected(p, "a value (string, number, true/false, date, array or inline table)");
}

/* Is this table open for dotted keys in the current section? */
static int dotted_closed(parser *p, const kernels__toml_value *t)
{
	return (t->flags & (T_EXPLICIT | T_FROZEN | T_AOT)) ||
	       ((t->flags & T_DOTTED) && t->section != p->section);
}

/* key = value, into `table` (the current section's table, or an inline
 * table being built). */
static int parse_keyval(parser *p, kernels__toml_value *table, int inline_table, int depth)
{
	keypath k = { .n = 0 };
	kernels__toml_value *t = table, *v = NULL;
	char buf[512];
	size_t i;
	int rc;

	if ((rc = parse_key(p, &k)) < 0)
		goto out;
	if (peek(p, 0) != '=') {
		rc = fail_expected(p, "'=' after the key");
		goto out;
	}
	p->pos++;
	skip_ws(p);
	for (i = 0; i + 1 < k.n; i++) {
		long idx = table_find(t, k.part[i].buf.ptr, k.part[i].buf.len);
		kernels__toml_value *next;
		if (idx < 0) {
			if (!(next = value_new_lc(p, KERNELS__TOML_TABLE, k.part[i].pos, k.part[i].line,
						  k.part[i].col, t->depth + 1))) {
				rc = kernels_error_last_code();
				goto out;
			}
			next->flags = T_DOTTED;
			next->section = p->section;
			if ((rc = table_add(t, k.part[i].buf.ptr, k.part[i].buf.len, k.part[i].line, k.part[i].col,
					    next)) < 0)
				goto out;
		} else {
			next = t->u.t.items[idx].value;
			if (next->type != KERNELS__TOML_TABLE || (!inline_table && dotted_closed(p, next)) ||
			    (inline_table && (next->flags & T_FROZEN))) {
				rc = fail_at(p, k.part[i].pos, "cannot add keys to '%s' with a dotted key: it is %s "
					     "defined elsewhere", keypath_str(&k, i + 1, buf, sizeof(buf)),
					     next->type == KERNELS__TOML_TABLE ? "a table" : "a value");
				goto out;
			}
			/* a table a dotted key went through is defined by this
			 * section, even if a header had implied it before */
			if (!inline_table) {
				next->flags |= T_DOTTED;
				next->section = p->section;
			}
		}
		t = next;
	}
	if (table_find(t, k.part[k.n - 1].buf.ptr, k.part[k.n - 1].buf.len) >= 0) {
		rc = fail_at(p, k.part[k.n - 1].pos, "duplicate key '%s'; each key may be defined only once",
			     keypath_str(&k, k.n, buf, sizeof(buf)));
		goto out;
	}
	if ((rc = parse_value(p, &v, t->depth + 1)) < 0)
		goto out;
	rc = table_add(t, k.part[k.n - 1].buf.ptr, k.part[k.n - 1].buf.len, k.part[k.n - 1].line,
		       k.part[k.n - 1].col, v);
out:
	keypath_free(&k);
	(void)depth;
	return rc;
}

/* [a.b.c] or [[a.b.c]]: finds or creates the table and makes it current. */
static int parse_header(parser *p)
{
	size_t start = p->pos, i;
	int aot = peek(p, 1) == '[', rc, line, col, hline, hcol;
	keypath k = { .n = 0 };
	kernels__toml_value *t = p->root, *next;
	char buf[512];

	locate(p, start, &hline, &hcol);
	p->pos += aot ? 2 : 1;
	p->section++;
	skip_ws(p);
	if ((rc = parse_key(p, &k)) < 0)
		goto out;
	if (peek(p, 0) != ']' || (aot && peek(p, 1) != ']')) {
		rc = fail_expected(p, aot ? "']]' to close the array-of-tables header" : "']' to close the table "
				   "header");
		goto out;
	}
	p->pos += aot ? 2 : 1;
	if ((rc = end_of_statement(p)) < 0)
		goto out;
	for (i = 0; i < k.n; i++) {
		int last = i + 1 == k.n;
		long idx = table_find(t, k.part[i].buf.ptr, k.part[i].buf.len);
		line = k.part[i].line;
		col = k.part[i].col;
		if (idx < 0) {
			if (last && aot) {
				kernels__toml_value *elem;
				if (!(next = value_new_lc(p, KERNELS__TOML_ARRAY, start, hline, hcol, t->depth + 1)) ||
				    !(elem = value_new_lc(p, KERNELS__TOML_TABLE, start, hline, hcol, t->depth + 2))) {
					value_free(next);
					rc = kernels_error_last_code();
					goto out;
				}
				next->flags = T_AOT;
				elem->flags = T_EXPLICIT;
				if ((rc = array_add(next, elem)) < 0 ||
				    (rc = table_add(t, k.part[i].buf.ptr, k.part[i].buf.len, line, col, next)) < 0)
					goto out;
				t = elem;
				break;
			}
			if (!(next = value_new_lc(p, KERNELS__TOML_TABLE, k.part[i].pos, last ? hline : line,
						  last ? hcol : col, t->depth + 1))) {
				rc = kernels_error_last_code();
				goto out;
			}
			next->flags = last ? T_EXPLICIT : 0;
			if ((rc = table_add(t, k.part[i].buf.ptr, k.part[i].buf.len, line, col, next)) < 0)
				goto out;
			t = next;
			continue;
		}
		next = t->u.t.items[idx].value;
		if (next->flags & T_FROZEN) {
			rc = fail_at(p, k.part[i].pos, "cannot extend '%s': it was written as an inline value",
				     keypath_str(&k, i + 1, buf, sizeof(buf)));
			goto out;
		}
		if (last && aot) {
			kernels__toml_value *elem;
			if (!(next->flags & T_AOT)) {
				rc = fail_at(p, k.part[i].pos, "'%s' is already defined as %s, not an array of tables",
					     keypath_str(&k, i + 1, buf, sizeof(buf)),
					     next->type == KERNELS__TOML_TABLE ? "a table" : "a value");
				goto out;
			}
			if (!(elem = value_new_lc(p, KERNELS__TOML_TABLE, start, hline, hcol, next->depth + 1))) {
				rc = kernels_error_last_code();
				goto out;
			}
			elem->flags = T_EXPLICIT;
			if ((rc = array_add(next, elem)) < 0)
				goto out;
			t = elem;
			break;
		}
		if (next->flags & T_AOT) {
			if (last) {
				rc = fail_at(p, k.part[i].pos,
					     "'%s' is an array of tables; use [[%s]] to add an element",
					     keypath_str(&k, i + 1, buf, sizeof(buf)), buf);
				goto out;
			}
			next = next->u.a.items[next->u.a.n - 1];
		} else if (next->type != KERNELS__TOML_TABLE) {
			rc = fail_at(p, k.part[i].pos, "'%s' is already defined as a value, not a table",
				     keypath_str(&k, i + 1, buf, sizeof(buf)));
			goto out;
		} else if (last && (next->flags & (T_EXPLICIT | T_DOTTED))) {
			rc = fail_at(p, k.part[i].pos, "table '%s' is defined more than once",
				     keypath_str(&k, i + 1, buf, sizeof(buf)));
			goto out;
		}
		if (last) {
			next->flags |= T_EXPLICIT;
			next->line = hline;
			next->col = hcol;
		}
		t = next;
	}
	p->cur = t;
out:
	keypath_free(&k);
	return rc;
}

int kernels__toml_parse(const char *data, size_t len, const char *name, kernels__toml_value **out)
{
	parser p = { .src = data, .len = len, .name = name ? name : "<toml>", .cline = 1, .ccol = 1 };
	int rc = 0;

	*out = NULL;
	if (len > KERNELS__TOML_MAX_INPUT)
		return kernels__error(KERNELS_EINVAL, "%s: %zu bytes is over the %u byte limit for TOML input; "
				      "is this the right file?", p.name, len, KERNELS__TOML_MAX_INPUT);
	if (!data && len)
		return kernels__error(KERNELS_EINVAL, "%s: no data to parse", p.name);
	if ((rc = check_utf8(&p)) < 0)
		return rc;
	if (!(p.root = value_new(&p, KERNELS__TOML_TABLE, 0, 0)))
		return KERNELS_ENOMEM;
	p.root->flags = T_EXPLICIT;
	p.cur = p.root;
	while (rc == 0) {
		skip_ws(&p);
		if (at_end(&p))
			break;
		if (skip_newline(&p))
			continue;
		if (peek(&p, 0) == '#') {
			rc = end_of_statement(&p);
		} else if (peek(&p, 0) == '[') {
			rc = parse_header(&p);
		} else {
			rc = parse_keyval(&p, p.cur, 0, p.cur->depth);
			if (rc == 0)
				rc = end_of_statement(&p);
		}
	}
	if (rc < 0) {
		value_free(p.root);
		return rc;
	}
	*out = p.root;
	return 0;
}

int kernels__toml_parse_file(const char *path, kernels__toml_value **out)
{
	char *text;
	size_t len;
	int rc, e;

	*out = NULL;
	if (kernels__read_file(path, KERNELS__TOML_MAX_INPUT, 0, &text, &len, NULL) < 0) {
		if ((e = errno) == ENOMEM)
			return kernels__error_oom();
		if (e == EFBIG)
			return kernels__error(KERNELS_EINVAL, "%s: over the %u byte limit for TOML input; is this the "
					      "right file?", path, KERNELS__TOML_MAX_INPUT);
		return kernels__error(e == ENOENT ? KERNELS_ENOTFOUND : KERNELS_EIO, "cannot open '%s': %s%s", path,
				      strerror(e), e == ENOENT ? "; check the path" : "; check its permissions");
	}
	rc = kernels__toml_parse(text, len, path, out);
	free(text);
	return rc;
}

const kernels__toml_entry *kernels__toml_entry_get(const kernels__toml_value *table, const char *key)
{
	long idx;

	if (!table || table->type != KERNELS__TOML_TABLE || !key)
		return NULL;
	idx = table_find(table, key, strlen(key));
	return idx < 0 ? NULL : &table->u.t.items[idx];
}

const kernels__toml_value *kernels__toml_get(const kernels__toml_value *table, const char *key)
{
	const kernels__toml_entry *e = kernels__toml_entry_get(table, key);
	return e ? e->value : NULL;
}

#ifdef KERNELS_TESTING
const kernels__toml_value *kernels__toml_get_path(const kernels__toml_value *root, ...)
{
	const kernels__toml_value *v = root;
	const char *key;
	va_list ap;

	va_start(ap, root);
	while (v && (key = va_arg(ap, const char *)) != NULL)
		v = kernels__toml_get(v, key);
	va_end(ap);
	return v;
}

const char *kernels__toml_type_name(kernels__toml_type type)
{
	switch (type) {
	case KERNELS__TOML_TABLE: return "table";
	case KERNELS__TOML_ARRAY: return "array";
	case KERNELS__TOML_STRING: return "string";
	case KERNELS__TOML_INTEGER: return "integer";
	case KERNELS__TOML_FLOAT: return "float";
	case KERNELS__TOML_BOOL: return "boolean";
	case KERNELS__TOML_DATETIME: return "datetime";
	}
	return "unknown";
}
#endif
