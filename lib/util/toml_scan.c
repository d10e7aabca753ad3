/* The TOML reader's lower half (see toml_scan.h): where a position is,
 * messages that say so, the tree's nodes, and the language's tokens, each
 * read as TOML 1.0 and Python's tomllib read them. */
#include "toml_scan.h"
#include "error.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kernels__toml_locate(parser *p, size_t pos, int *line, int *col)
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

int kernels__toml_fail_at(parser *p, size_t pos, const char *fmt, ...)
{
	char msg[1024];
	int line, col;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	kernels__toml_locate(p, pos, &line, &col);
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

int kernels__toml_fail_expected(parser *p, const char *what)
{
	char buf[48];
	return kernels__toml_fail_at(p, p->pos, "expected %s, found %s", what, describe(p, p->pos, buf, sizeof(buf)));
}

/* ---- the tree ---- */

void kernels__toml_value_free(kernels__toml_value *v)
{
	size_t i;

	if (!v)
		return;
	switch (v->type) {
	case KERNELS__TOML_TABLE:
		for (i = 0; i < v->u.t.n; i++) {
			free(v->u.t.items[i].key);
			kernels__toml_value_free(v->u.t.items[i].value);
		}
		free(v->u.t.items);
		free(v->u.t.index);
		break;
	case KERNELS__TOML_ARRAY:
		for (i = 0; i < v->u.a.n; i++)
			kernels__toml_value_free(v->u.a.items[i]);
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
	kernels__toml_value_free(root);
}

kernels__toml_value *kernels__toml_value_new_lc(parser *p, kernels__toml_type type, size_t pos, int line, int col,
					 int depth)
{
	kernels__toml_value *v;

	if (depth > KERNELS__TOML_MAX_DEPTH) {
		kernels__toml_fail_at(p, pos, "nesting deeper than %d levels; flatten the document",
				      KERNELS__TOML_MAX_DEPTH);
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

kernels__toml_value *kernels__toml_value_new(parser *p, kernels__toml_type type, size_t pos, int depth)
{
	int line, col;

	kernels__toml_locate(p, pos, &line, &col);
	return kernels__toml_value_new_lc(p, type, pos, line, col, depth);
}

static uint32_t key_hash(const char *key, size_t len)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)key[i]) * 16777619u;
	return h;
}

long kernels__toml_table_find(const kernels__toml_value *t, const char *key, size_t len)
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
int kernels__toml_table_add(kernels__toml_value *t, const char *key, size_t len, int line, int col,
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
	kernels__toml_value_free(v);
	return kernels__error_oom();
}

int kernels__toml_array_add(kernels__toml_value *a, kernels__toml_value *v)
{
	if (KERNELS__ARRAY_GROW(a->u.a.items, a->u.a.cap, a->u.a.n) < 0) {
		kernels__toml_value_free(v);
		return KERNELS_ENOMEM;
	}
	a->u.a.items[a->u.a.n++] = v;
	return 0;
}

void kernels__toml_freeze(kernels__toml_value *v)
{
	size_t i;

	v->flags |= T_FROZEN;
	if (v->type == KERNELS__TOML_TABLE)
		for (i = 0; i < v->u.t.n; i++)
			kernels__toml_freeze(v->u.t.items[i].value);
	else if (v->type == KERNELS__TOML_ARRAY)
		for (i = 0; i < v->u.a.n; i++)
			kernels__toml_freeze(v->u.a.items[i]);
}

/* ---- lexical helpers ---- */

int kernels__toml_at_end(parser *p)
{
	return p->pos >= p->len;
}

int kernels__toml_peek(parser *p, size_t ahead)
{
	return p->pos + ahead < p->len ? (unsigned char)p->src[p->pos + ahead] : -1;
}

void kernels__toml_skip_ws(parser *p)
{
	while (!kernels__toml_at_end(p) && (p->src[p->pos] == ' ' || p->src[p->pos] == '\t'))
		p->pos++;
}

static int is_newline(parser *p)
{
	return kernels__toml_peek(p, 0) == '\n' ||
	       (kernels__toml_peek(p, 0) == '\r' && kernels__toml_peek(p, 1) == '\n');
}

int kernels__toml_skip_newline(parser *p)
{
	if (kernels__toml_peek(p, 0) == '\n') {
		p->pos++;
		return 1;
	}
	if (kernels__toml_peek(p, 0) == '\r' && kernels__toml_peek(p, 1) == '\n') {
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
	if (kernels__toml_peek(p, 0) != '#')
		return 0;
	while (!kernels__toml_at_end(p) && !is_newline(p)) {
		int c = kernels__toml_peek(p, 0);
		if (is_control(c))
			return kernels__toml_fail_at(p, p->pos, "control character U+%04X in a comment; remove it", c);
		p->pos++;
	}
	return 0;
}

/* Whitespace, newlines and comments, as allowed between array items. */
int kernels__toml_skip_ws_comments_newlines(parser *p)
{
	for (;;) {
		kernels__toml_skip_ws(p);
		if (kernels__toml_peek(p, 0) == '#') {
			if (skip_comment(p) < 0)
				return KERNELS_EPARSE;
		} else if (!kernels__toml_skip_newline(p)) {
			return 0;
		}
	}
}

/* After a statement: optional whitespace and comment, then a newline or the
 * end of the file. */
int kernels__toml_end_of_statement(parser *p)
{
	kernels__toml_skip_ws(p);
	if (skip_comment(p) < 0)
		return KERNELS_EPARSE;
	if (kernels__toml_at_end(p) || kernels__toml_skip_newline(p))
		return 0;
	return kernels__toml_fail_expected(p, "end of line (or a '#' comment) after the statement");
}

/* Checks the whole input is UTF-8 (no overlong forms, no surrogates, nothing
 * above U+10FFFF) before parsing, so the parser can treat bytes >= 0x80 as
 * parts of valid characters. */
int kernels__toml_check_utf8(parser *p)
{
	size_t bad = kernels__utf8_valid_prefix(p->src, p->len);

	if (bad == p->len)
		return 0;
	return kernels__toml_fail_at(p, bad, "invalid UTF-8 byte sequence; TOML files must be UTF-8 encoded");
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
	int c = kernels__toml_peek(p, 1), digits, i;
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
		return kernels__toml_fail_at(p, start, "invalid escape sequence '\\' followed by %s; expected one of "
					     "\\b \\t \\n \\f \\r \\\" \\\\ \\uXXXX \\UXXXXXXXX",
					     describe(p, start + 1, buf, sizeof(buf)));
	}
	for (i = 0; i < digits; i++) {
		int h = hexval(kernels__toml_peek(p, 0));
		if (h < 0)
			return kernels__toml_fail_at(p, start, "escape \\%c needs exactly %d hexadecimal digits", c,
						     digits);
		cp = (cp << 4) | (uint32_t)h;
		p->pos++;
	}
	if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return kernels__toml_fail_at(p, start,
					     "escape \\%c%0*X is not a Unicode scalar value; expected a code point "
					     "up to U+10FFFF outside U+D800..U+DFFF",
					     c, digits, (unsigned)cp);
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
		int c = kernels__toml_peek(p, 0);
		if (c < 0 || c == '\n' || (c == '\r' && kernels__toml_peek(p, 1) == '\n'))
			return kernels__toml_fail_at(
				p, start, "unterminated string: missing closing %c before the end of the line", quote);
		if (c == quote) {
			p->pos++;
			return 0;
		}
		if (is_control(c))
			return kernels__toml_fail_at(p, p->pos,
						     "control character U+%04X in a string; write it as an escape "
						     "in a basic string (\"\\u%04X\")",
						     c, c);
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
	kernels__toml_skip_newline(p); /* a newline right after the opening quotes is trimmed */
	for (;;) {
		int c = kernels__toml_peek(p, 0);
		if (c < 0)
			return kernels__toml_fail_at(p, start, "unterminated multi-line string: missing closing %c%c%c",
						     quote, quote, quote);
		if (c == quote && kernels__toml_peek(p, 1) == quote && kernels__toml_peek(p, 2) == quote) {
			/* up to two more quotes belong to the content */
			int extra = 0;
			while (extra < 2 && kernels__toml_peek(p, 3 + extra) == quote)
				extra++;
			if (kernels__buf_put(b, &p->src[p->pos], (size_t)extra) < 0)
				return KERNELS_ENOMEM;
			p->pos += 3 + (size_t)extra;
			return 0;
		}
		if (kernels__toml_skip_newline(p)) {
			if (kernels__buf_put(b, "\n", 1) < 0)
				return KERNELS_ENOMEM;
			continue;
		}
		if (is_control(c))
			return kernels__toml_fail_at(p, p->pos,
						     "control character U+%04X in a string; write it as an escape "
						     "in a basic string",
						     c);
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
					kernels__toml_skip_ws(p);
					if (!kernels__toml_skip_newline(p))
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

int kernels__toml_parse_string(parser *p, kernels__buf *b, int allow_multi)
{
	int q = kernels__toml_peek(p, 0);

	if (kernels__toml_peek(p, 1) == q && kernels__toml_peek(p, 2) == q) {
		if (!allow_multi)
			return kernels__toml_fail_at(p, p->pos,
						     "a multi-line string cannot be a key; use a one-line string");
		return parse_string_multi(p, q, b);
	}
	return parse_string_line(p, q, b);
}

/* ---- keys ---- */

void kernels__toml_keypath_free(keypath *k)
{
	size_t i;

	for (i = 0; i < k->n; i++)
		kernels__buf_free(&k->part[i].buf);
	free(k->part);
	k->part = NULL;
	k->n = k->cap = 0;
}

int kernels__toml_is_bare(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* key = simple-key *( ws '.' ws simple-key ); leaves p->pos after the key. */
int kernels__toml_parse_key(parser *p, keypath *k)
{
	for (;;) {
		kernels__buf *b;
		keypart *kp;
		int c = kernels__toml_peek(p, 0);
		if (k->n == KERNELS__TOML_MAX_DEPTH)
			return kernels__toml_fail_at(p, p->pos, "key with more than %d dotted parts",
						     KERNELS__TOML_MAX_DEPTH);
		if (KERNELS__ARRAY_GROW(k->part, k->cap, k->n) < 0)
			return KERNELS_ENOMEM;
		kp = &k->part[k->n++];
		memset(kp, 0, sizeof(*kp));
		kp->pos = p->pos;
		kernels__toml_locate(p, p->pos, &kp->line, &kp->col);
		b = &kp->buf;
		if (c == '"' || c == '\'') {
			if (kernels__toml_parse_string(p, b, 0) < 0)
				return KERNELS_EPARSE;
		} else if (kernels__toml_is_bare(c)) {
			size_t s = p->pos;
			while (kernels__toml_is_bare(kernels__toml_peek(p, 0)))
				p->pos++;
			if (kernels__buf_put(b, p->src + s, p->pos - s) < 0)
				return KERNELS_ENOMEM;
		} else {
			return kernels__toml_fail_expected(p, "a key (letters, digits, '_', '-', or a quoted string)");
		}
		if (!b->ptr && kernels__buf_put(b, "", 0) < 0)
			return KERNELS_ENOMEM;
		kernels__toml_skip_ws(p);
		if (kernels__toml_peek(p, 0) != '.')
			return 0;
		p->pos++;
		kernels__toml_skip_ws(p);
	}
}

const char *kernels__toml_keypath_str(const keypath *k, size_t upto, char *out, size_t size)
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

int kernels__toml_is_digit(int c)
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

#define NUMBER_MAX 512 /* characters of a number's text, with room for its NUL */

/* `v` keeps its text as written, src[start..start+n): a writer repeats
 * floats and dates as they were. -1 when out of memory, `v` freed. */
static int keep_text(parser *p, kernels__toml_value *v, size_t start, size_t n)
{
	if (!(v->u.s.ptr = malloc(n + 1))) {
		kernels__toml_value_free(v);
		kernels__error_oom();
		return -1;
	}
	memcpy(v->u.s.ptr, p->src + start, n);
	v->u.s.ptr[n] = '\0';
	v->u.s.len = n;
	return 0;
}

static int integer_value(parser *p, size_t start, int depth, long long i, kernels__toml_value **out)
{
	kernels__toml_value *v = kernels__toml_value_new(p, KERNELS__TOML_INTEGER, start, depth);

	if (!v)
		return kernels_error_last_code();
	v->u.i = i;
	*out = v;
	return 0;
}

static int float_value(parser *p, size_t start, size_t n, int depth, double f, kernels__toml_value **out)
{
	kernels__toml_value *v = kernels__toml_value_new(p, KERNELS__TOML_FLOAT, start, depth);

	if (!v)
		return kernels_error_last_code();
	v->f = f;
	if (keep_text(p, v, start, n) < 0)
		return KERNELS_ENOMEM;
	*out = v;
	return 0;
}

/* 0x, 0o or 0b and digits of that base, '_' only between them, within a
 * signed 64-bit integer. */
static int based_integer(parser *p, size_t start, size_t n, int depth, char *clean, kernels__toml_value **out)
{
	const char *s = p->src + start;
	int base = s[1] == 'x' ? 16 : s[1] == 'o' ? 8 : 2;
	unsigned long long acc = 0;
	size_t i = 2, cl = 0, k;

	if (scan_digits(s, n, &i, base, clean, &cl) <= 0 || i != n)
		return kernels__toml_fail_at(p, start,
					     "invalid %s integer; expected digits of base %d after '0%c', "
					     "'_' only between digits",
					     base == 16 ? "hexadecimal" : base == 8 ? "octal" : "binary", base, s[1]);
	for (k = 0; k < cl; k++) {
		if (acc > (unsigned long long)INT64_MAX / (unsigned)base ||
		    acc * (unsigned)base + (unsigned)hexval(clean[k]) > (unsigned long long)INT64_MAX)
			return kernels__toml_fail_at(p, start, "integer out of range; TOML integers are 64-bit signed");
		acc = acc * (unsigned)base + (unsigned)hexval(clean[k]);
	}
	return integer_value(p, start, depth, (long long)acc, out);
}

/* A decimal integer or float from s[i] on, its digits (and sign, '.',
 * exponent) copied to clean[cl..] without the '_': 1 for a float, 0 for
 * an integer, or the refusal. */
static int decimal_text(parser *p, size_t start, size_t n, size_t i, char *clean, size_t cl)
{
	const char *s = p->src + start;
	size_t int_start = cl;
	int nd = scan_digits(s, n, &i, 10, clean, &cl), is_float = 0;

	if (nd < 0)
		return kernels__toml_fail_at(p, start, "invalid number '%.*s'; '_' is only allowed between digits",
					     (int)(n > 64 ? 64 : n), s);
	if (nd == 0)
		return kernels__toml_fail_at(p, start, "expected a value (string, number, true/false, date, array or "
						       "inline table)");
	if (nd > 1 && clean[int_start] == '0')
		return kernels__toml_fail_at(p, start, "leading zeros are not allowed in decimal numbers");
	if (i < n && s[i] == '.') {
		clean[cl++] = s[i++];
		is_float = 1;
		if (scan_digits(s, n, &i, 10, clean, &cl) <= 0)
			return kernels__toml_fail_at(p, start, "invalid float; expected digits after the '.'");
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		clean[cl++] = s[i++];
		is_float = 1;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			clean[cl++] = s[i++];
		if (scan_digits(s, n, &i, 10, clean, &cl) <= 0)
			return kernels__toml_fail_at(p, start, "invalid float; expected digits in the exponent");
	}
	if (i != n)
		return kernels__toml_fail_at(p, start, "invalid number '%.*s'", (int)(n > 64 ? 64 : n), s);
	clean[cl] = '\0';
	return is_float;
}

int kernels__toml_parse_number(parser *p, kernels__toml_value **out, int depth)
{
	size_t start = p->pos, n = 0, i = 0;
	const char *s = p->src + start;
	char clean[NUMBER_MAX];
	int sign = 0, rc;
	long long val;

	while (start + n < p->len && (kernels__toml_is_bare(s[n]) || s[n] == '+' || s[n] == '.'))
		n++;
	if (n >= sizeof(clean) - 1)
		return kernels__toml_fail_at(p, start, "number too long");
	if (s[0] == '+' || s[0] == '-') {
		sign = s[0];
		clean[i++] = s[0];
	}
	if (n - i == 3 && (memcmp(s + i, "inf", 3) == 0 || memcmp(s + i, "nan", 3) == 0))
		rc = float_value(p, start, n, depth,
				 s[i] == 'i' ? (sign == '-' ? -HUGE_VAL : HUGE_VAL) : (sign == '-' ? -NAN : NAN), out);
	else if (!sign && n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o' || s[1] == 'b'))
		rc = based_integer(p, start, n, depth, clean, out);
	else if ((rc = decimal_text(p, start, n, i, clean, i)) == 1)
		rc = float_value(p, start, n, depth, strtod(clean, NULL), out);
	else if (rc == 0) {
		errno = 0;
		val = strtoll(clean, NULL, 10);
		rc = errno == ERANGE ? kernels__toml_fail_at(p, start, "integer out of range; TOML integers are 64-bit signed")
				     : integer_value(p, start, depth, val, out);
	}
	if (rc == 0)
		p->pos = start + n;
	return rc;
}

static int digits_at(parser *p, size_t pos, int count, int *val)
{
	int i;

	*val = 0;
	for (i = 0; i < count; i++) {
		if (pos + (size_t)i >= p->len || !kernels__toml_is_digit((unsigned char)p->src[pos + (size_t)i]))
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

	if (!digits_at(p, pos, 2, &h) || kernels__toml_peek(p, pos + 2 - p->pos) != ':' ||
	    !digits_at(p, pos + 3, 2, &m) || kernels__toml_peek(p, pos + 5 - p->pos) != ':' ||
	    !digits_at(p, pos + 6, 2, &s))
		return 0;
	*ok_range = h < 24 && m < 60 && s < 60;
	if (pos + 8 < p->len && p->src[pos + 8] == '.') {
		n = 9;
		while (pos + n < p->len && kernels__toml_is_digit((unsigned char)p->src[pos + n]))
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
/* After a date-time's time, at start + *n: Z, or +HH:MM / -HH:MM, makes
 * it an offset date-time (*n past it). */
static int scan_offset(parser *p, size_t start, size_t *n, kernels__toml_datetime_kind *kind)
{
	char c = start + *n < p->len ? p->src[start + *n] : '\0';
	int oh, om;

	if (c == 'Z' || c == 'z') {
		(*n)++;
		*kind = KERNELS__TOML_OFFSET_DATETIME;
	} else if (c == '+' || c == '-') {
		if (!digits_at(p, start + *n + 1, 2, &oh) || kernels__toml_peek(p, *n + 3) != ':' ||
		    !digits_at(p, start + *n + 4, 2, &om) || oh > 23 || om > 59)
			return kernels__toml_fail_at(p, start, "invalid time offset; expected +HH:MM or -HH:MM");
		*n += 6;
		*kind = KERNELS__TOML_OFFSET_DATETIME;
	}
	return 0;
}

/* YYYY-MM-DD at `start` (its year `y` read), then a time after 'T', 't'
 * or ' ', then an offset, each optional: *n its length, *kind which. */
static int scan_date(parser *p, size_t start, int y, size_t *n, kernels__toml_datetime_kind *kind)
{
	int mo, d, ok = 1;
	size_t t;
	char sep;

	if (!digits_at(p, start + 5, 2, &mo) || kernels__toml_peek(p, 7) != '-' || !digits_at(p, start + 8, 2, &d))
		return kernels__toml_fail_at(p, start, "invalid date; expected YYYY-MM-DD");
	if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
		return kernels__toml_fail_at(p, start, "invalid date: no such day");
	*n = 10;
	*kind = KERNELS__TOML_LOCAL_DATE;
	sep = start + 10 < p->len ? p->src[start + 10] : '\0';
	if (sep != 'T' && sep != 't' && sep != ' ')
		return 0;
	if (!(t = scan_time(p, start + 11, &ok)))
		return sep == ' ' ? 0 : kernels__toml_fail_at(p, start, "invalid date-time; expected HH:MM:SS after the 'T'");
	if (!ok)
		return kernels__toml_fail_at(p, start, "invalid time of day in the date-time");
	*n = 11 + t;
	*kind = KERNELS__TOML_LOCAL_DATETIME;
	return scan_offset(p, start, n, kind);
}

int kernels__toml_parse_datetime(parser *p, kernels__toml_value **out, int depth)
{
	size_t start = p->pos, n = 0;
	int y, ok = 1, rc;
	kernels__toml_datetime_kind kind = KERNELS__TOML_LOCAL_DATE;
	kernels__toml_value *v;

	if (digits_at(p, start, 4, &y) && kernels__toml_peek(p, 4) == '-') {
		if ((rc = scan_date(p, start, y, &n, &kind)) < 0)
			return rc;
	} else if (digits_at(p, start, 2, &y) && kernels__toml_peek(p, 2) == ':') {
		if (!(n = scan_time(p, start, &ok)) || !ok)
			return kernels__toml_fail_at(p, start,
						     "invalid time; expected HH:MM:SS with hours < 24, minutes and "
						     "seconds < 60");
		kind = KERNELS__TOML_LOCAL_TIME;
	} else {
		return 0;
	}
	if (!(v = kernels__toml_value_new(p, KERNELS__TOML_DATETIME, start, depth)))
		return kernels_error_last_code();
	v->datetime_kind = kind;
	if (keep_text(p, v, start, n) < 0)
		return KERNELS_ENOMEM;
	p->pos = start + n;
	*out = v;
	return 1;
}

