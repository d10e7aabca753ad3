/* A strict TOML 1.0 reader (see toml.h). It follows the specification and
 * agrees with Python's tomllib, the reader pip and the `kernels` package
 * use, so a file both accept means the same to both and a file tomllib
 * refuses is refused here too. Here: the document (values, arrays,
 * inline tables, key/value lines, [headers]) and its entry points; the
 * tokens and the tree's nodes are toml_scan.c's. */
#include "toml.h"
#include "toml_scan.h"
#include "error.h"
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- values ---- */

static int parse_value(parser *p, kernels__toml_value **out, int depth);
static int parse_keyval(parser *p, kernels__toml_value *table, int inline_table, int depth);

/* The end of an array or inline table: past its closing bracket, frozen
 * and handed out; or, when not `ok`, freed, and the parse error returned. */
static int close_container(parser *p, kernels__toml_value *v, int ok, kernels__toml_value **out)
{
	if (!ok) {
		kernels__toml_value_free(v);
		return kernels_error_last_code() ? kernels_error_last_code() : KERNELS_EPARSE;
	}
	p->pos++;
	kernels__toml_freeze(v);
	*out = v;
	return 0;
}

static int parse_array(parser *p, kernels__toml_value **out, int depth)
{
	kernels__toml_value *a = kernels__toml_value_new(p, KERNELS__TOML_ARRAY, p->pos, depth), *item;

	if (!a)
		return KERNELS_EPARSE;
	p->pos++;
	for (;;) {
		if (kernels__toml_skip_ws_comments_newlines(p) < 0)
			goto fail;
		if (kernels__toml_peek(p, 0) == ']')
			break;
		if (parse_value(p, &item, depth + 1) < 0 || kernels__toml_array_add(a, item) < 0)
			goto fail;
		if (kernels__toml_skip_ws_comments_newlines(p) < 0)
			goto fail;
		if (kernels__toml_peek(p, 0) == ',') {
			p->pos++;
			continue;
		}
		if (kernels__toml_peek(p, 0) == ']')
			break;
		kernels__toml_fail_expected(p, "',' or ']' in the array");
		goto fail;
	}
	return close_container(p, a, 1, out);
fail:
	return close_container(p, a, 0, out);
}

static int parse_inline_table(parser *p, kernels__toml_value **out, int depth)
{
	kernels__toml_value *t = kernels__toml_value_new(p, KERNELS__TOML_TABLE, p->pos, depth);

	if (!t)
		return KERNELS_EPARSE;
	p->pos++;
	kernels__toml_skip_ws(p);
	if (kernels__toml_peek(p, 0) != '}') {
		for (;;) {
			kernels__toml_skip_ws(p);
			if (parse_keyval(p, t, 1, depth) < 0)
				goto fail;
			kernels__toml_skip_ws(p);
			if (kernels__toml_peek(p, 0) == ',') {
				p->pos++;
				continue;
			}
			if (kernels__toml_peek(p, 0) == '}')
				break;
			kernels__toml_fail_expected(
				p, "',' or '}' in the inline table (it must stay on one line, without a "
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
	int c = kernels__toml_peek(p, 0), rc;
	size_t start = p->pos;

	if (depth > KERNELS__TOML_MAX_DEPTH)
		return kernels__toml_fail_at(p, start, "nesting deeper than %d levels; flatten the document",
					     KERNELS__TOML_MAX_DEPTH);
	if (c == '"' || c == '\'') {
		kernels__buf b = { 0 };
		kernels__toml_value *v;
		if ((rc = kernels__toml_parse_string(p, &b, 1)) < 0 || (rc = kernels__buf_put(&b, "", 0)) < 0) {
			kernels__buf_free(&b);
			return rc;
		}
		if (!(v = kernels__toml_value_new(p, KERNELS__TOML_STRING, start, depth))) {
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
		if (p->len - p->pos >= n && memcmp(p->src + p->pos, word, n) == 0 &&
		    !kernels__toml_is_bare(kernels__toml_peek(p, n))) {
			kernels__toml_value *v = kernels__toml_value_new(p, KERNELS__TOML_BOOL, start, depth);
			if (!v)
				return kernels_error_last_code();
			v->u.b = val;
			p->pos += n;
			*out = v;
			return 0;
		}
	}
	if (kernels__toml_is_digit(c)) {
		rc = kernels__toml_parse_datetime(p, out, depth);
		if (rc != 0)
			return rc < 0 ? rc : 0;
	}
	if (kernels__toml_is_digit(c) || c == '+' || c == '-' || c == 'i' || c == 'n')
		return kernels__toml_parse_number(p, out, depth);
	return kernels__toml_fail_expected(p, "a value (string, number, true/false, date, array or inline table)");
}

/* Is this table open for dotted keys in the current section? */
static int dotted_closed(parser *p, const kernels__toml_value *t)
{
	return (t->flags & (T_EXPLICIT | T_FROZEN | T_AOT)) ||
	       ((t->flags & T_DOTTED) && t->section != p->section);
}

/* key = value, into `table` (the current section's table, or an inline
 * table being built). */
/* Part i of a dotted key, not its last, from table `t`: the table it
 * names (*next), made when absent; refused when it is a value, or a table
 * defined elsewhere. */
static int dotted_step(parser *p, kernels__toml_value *t, const keypath *k, size_t i, int inline_table,
		       kernels__toml_value **next)
{
	const keypart *part = &k->part[i];
	long idx = kernels__toml_table_find(t, part->buf.ptr, part->buf.len);
	kernels__toml_value *n;
	char buf[512];

	if (idx < 0) {
		if (!(n = kernels__toml_value_new_lc(p, KERNELS__TOML_TABLE, part->pos, part->line, part->col,
						     t->depth + 1)))
			return kernels_error_last_code();
		n->flags = T_DOTTED;
		n->section = p->section;
		*next = n;
		return kernels__toml_table_add(t, part->buf.ptr, part->buf.len, part->line, part->col, n);
	}
	n = t->u.t.items[idx].value;
	if (n->type != KERNELS__TOML_TABLE || (!inline_table && dotted_closed(p, n)) ||
	    (inline_table && (n->flags & T_FROZEN)))
		return kernels__toml_fail_at(p, part->pos,
					     "cannot add keys to '%s' with a dotted key: it is %s defined elsewhere",
					     kernels__toml_keypath_str(k, i + 1, buf, sizeof(buf)),
					     n->type == KERNELS__TOML_TABLE ? "a table" : "a value");
	/* a table a dotted key went through is defined by this section, even
	 * if a header had implied it before */
	if (!inline_table) {
		n->flags |= T_DOTTED;
		n->section = p->section;
	}
	*next = n;
	return 0;
}

static int parse_keyval(parser *p, kernels__toml_value *table, int inline_table, int depth)
{
	keypath k = { .n = 0 };
	kernels__toml_value *t = table, *v = NULL;
	const keypart *last;
	char buf[512];
	size_t i;
	int rc;

	if ((rc = kernels__toml_parse_key(p, &k)) < 0)
		goto out;
	if (kernels__toml_peek(p, 0) != '=') {
		rc = kernels__toml_fail_expected(p, "'=' after the key");
		goto out;
	}
	p->pos++;
	kernels__toml_skip_ws(p);
	for (i = 0; i + 1 < k.n; i++)
		if ((rc = dotted_step(p, t, &k, i, inline_table, &t)) < 0)
			goto out;
	last = &k.part[k.n - 1];
	if (kernels__toml_table_find(t, last->buf.ptr, last->buf.len) >= 0) {
		rc = kernels__toml_fail_at(p, last->pos, "duplicate key '%s'; each key may be defined only once",
					   kernels__toml_keypath_str(&k, k.n, buf, sizeof(buf)));
		goto out;
	}
	if ((rc = parse_value(p, &v, t->depth + 1)) < 0)
		goto out;
	rc = kernels__toml_table_add(t, last->buf.ptr, last->buf.len, last->line, last->col, v);
out:
	kernels__toml_keypath_free(&k);
	(void)depth;
	return rc;
}

/* Where a header starts: the tables it makes are reported there. */
typedef struct {
	size_t start;
	int line, col;
} header_at;

/* A new element table at the end of the array of tables `arr`: *elem. */
static int aot_append(parser *p, kernels__toml_value *arr, const header_at *h, kernels__toml_value **elem)
{
	kernels__toml_value *e = kernels__toml_value_new_lc(p, KERNELS__TOML_TABLE, h->start, h->line, h->col,
							      arr->depth + 1);
	int rc;

	if (!e)
		return kernels_error_last_code();
	e->flags = T_EXPLICIT;
	if ((rc = kernels__toml_array_add(arr, e)) < 0)
		return rc;
	*elem = e;
	return 0;
}

/* Part i of a header's key, absent from `t`: made there, a table (for
 * the last part of a [[header]], an array of tables with its first
 * element); *into the table the header goes on in. */
static int header_make(parser *p, kernels__toml_value *t, const keypath *k, size_t i, int aot, const header_at *h,
		       kernels__toml_value **into)
{
	const keypart *part = &k->part[i];
	int last = i + 1 == k->n, rc;
	kernels__toml_value *next;

	if (last && aot) {
		if (!(next = kernels__toml_value_new_lc(p, KERNELS__TOML_ARRAY, h->start, h->line, h->col, t->depth + 1)))
			return kernels_error_last_code();
		next->flags = T_AOT;
		if ((rc = aot_append(p, next, h, into)) < 0) {
			kernels__toml_value_free(next);
			return rc;
		}
	} else {
		if (!(next = kernels__toml_value_new_lc(p, KERNELS__TOML_TABLE, part->pos, last ? h->line : part->line,
							last ? h->col : part->col, t->depth + 1)))
			return kernels_error_last_code();
		next->flags = last ? T_EXPLICIT : 0;
		*into = next;
	}
	return kernels__toml_table_add(t, part->buf.ptr, part->buf.len, part->line, part->col, next);
}

/* Part i of a header's key, found as `next`: *into the table the header
 * goes on in, or the header refused (an inline value, a value, a table
 * defined twice, an array of tables named by [header] or a table by
 * [[header]]). */
static int header_enter(parser *p, const keypath *k, size_t i, int aot, const header_at *h, kernels__toml_value *next,
			kernels__toml_value **into)
{
	int last = i + 1 == k->n;
	size_t pos = k->part[i].pos;
	char buf[512];

	if (next->flags & T_FROZEN)
		return kernels__toml_fail_at(p, pos, "cannot extend '%s': it was written as an inline value",
					     kernels__toml_keypath_str(k, i + 1, buf, sizeof(buf)));
	if (last && aot) {
		if (!(next->flags & T_AOT))
			return kernels__toml_fail_at(p, pos, "'%s' is already defined as %s, not an array of tables",
						     kernels__toml_keypath_str(k, i + 1, buf, sizeof(buf)),
						     next->type == KERNELS__TOML_TABLE ? "a table" : "a value");
		return aot_append(p, next, h, into);
	}
	if (next->flags & T_AOT) {
		if (last)
			return kernels__toml_fail_at(p, pos, "'%s' is an array of tables; use [[%s]] to add an element",
						     kernels__toml_keypath_str(k, i + 1, buf, sizeof(buf)), buf);
		next = next->u.a.items[next->u.a.n - 1];
	} else if (next->type != KERNELS__TOML_TABLE) {
		return kernels__toml_fail_at(p, pos, "'%s' is already defined as a value, not a table",
					     kernels__toml_keypath_str(k, i + 1, buf, sizeof(buf)));
	} else if (last && (next->flags & (T_EXPLICIT | T_DOTTED))) {
		return kernels__toml_fail_at(p, pos, "table '%s' is defined more than once",
					     kernels__toml_keypath_str(k, i + 1, buf, sizeof(buf)));
	}
	if (last) {
		next->flags |= T_EXPLICIT;
		next->line = h->line;
		next->col = h->col;
	}
	*into = next;
	return 0;
}

/* [a.b.c] or [[a.b.c]]: finds or creates the table and makes it current. */
static int parse_header(parser *p)
{
	header_at h = { .start = p->pos };
	int aot = kernels__toml_peek(p, 1) == '[', rc;
	keypath k = { .n = 0 };
	kernels__toml_value *t = p->root;
	size_t i;

	kernels__toml_locate(p, h.start, &h.line, &h.col);
	p->pos += aot ? 2 : 1;
	p->section++;
	kernels__toml_skip_ws(p);
	if ((rc = kernels__toml_parse_key(p, &k)) < 0)
		goto out;
	if (kernels__toml_peek(p, 0) != ']' || (aot && kernels__toml_peek(p, 1) != ']')) {
		rc = kernels__toml_fail_expected(p, aot ? "']]' to close the array-of-tables header"
							: "']' to close the table header");
		goto out;
	}
	p->pos += aot ? 2 : 1;
	if ((rc = kernels__toml_end_of_statement(p)) < 0)
		goto out;
	for (i = 0, rc = 0; i < k.n && rc == 0; i++) {
		long idx = kernels__toml_table_find(t, k.part[i].buf.ptr, k.part[i].buf.len);
		rc = idx < 0 ? header_make(p, t, &k, i, aot, &h, &t)
			     : header_enter(p, &k, i, aot, &h, t->u.t.items[idx].value, &t);
	}
	if (rc == 0)
		p->cur = t;
out:
	kernels__toml_keypath_free(&k);
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
	if ((rc = kernels__toml_check_utf8(&p)) < 0)
		return rc;
	if (!(p.root = kernels__toml_value_new(&p, KERNELS__TOML_TABLE, 0, 0)))
		return KERNELS_ENOMEM;
	p.root->flags = T_EXPLICIT;
	p.cur = p.root;
	while (rc == 0) {
		kernels__toml_skip_ws(&p);
		if (kernels__toml_at_end(&p))
			break;
		if (kernels__toml_skip_newline(&p))
			continue;
		if (kernels__toml_peek(&p, 0) == '#') {
			rc = kernels__toml_end_of_statement(&p);
		} else if (kernels__toml_peek(&p, 0) == '[') {
			rc = parse_header(&p);
		} else {
			rc = parse_keyval(&p, p.cur, 0, p.cur->depth);
			if (rc == 0)
				rc = kernels__toml_end_of_statement(&p);
		}
	}
	if (rc < 0) {
		kernels__toml_value_free(p.root);
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
	idx = kernels__toml_table_find(table, key, strlen(key));
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
