/*
 * libFuzzer target over the TOML reader (lib/util/toml.c) and the two documents
 * read with it (lib/manifest.c): pyproject.toml's [tool.kernels.dependencies]
 * and a Hub repo's kernel-status.toml. One input is tried as all three.
 *
 * Invariants besides memory errors, leaks and undefined behaviour:
 *  - a failure is EPARSE/EINVAL/ENOMEM with a message naming the input,
 *    and no tree;
 *  - the tree is well-formed: tables whose keys are unique (the lookup
 *    finds each), NUL-terminated at their length, with places >= 1:1;
 *    strings that are valid UTF-8 without surrogates; each value deeper
 *    than its parent and within KERNELS__TOML_MAX_DEPTH; floats whose
 *    text reads as their value; dates whose text has the length of their
 *    kind;
 *  - the tree round-trips: written back as TOML (every table inline, every
 *    string escaped) it parses to an equal tree;
 *  - the manifest and the status agree with the tree: they read only when
 *    the TOML does, list exactly the keys of [tool.kernels.dependencies]
 *    in order with valid repo ids, and a redirect has a valid destination
 *    and a non-empty revision; the written-back document reads the same.
 */
#include <math.h>

#include "fuzz_common.h"
#include "kernels/lock.h"
#include "manifest.h"
#include "repo.h"
#include "toml.h"
#include "util.h"

#define NAME "fuzz.toml"

/* Strict UTF-8 (no overlongs, no surrogates, <= U+10FFFF), NULs allowed. */
static int utf8_strict(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned c = s[i], cp, k, need;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			need = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			need = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3;
			cp = c & 0x07;
		} else {
			return 0;
		}
		for (k = 1; k <= need; k++) {
			if (i + k >= n || (s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += need + 1;
	}
	return 1;
}

static void check_value(const kernels__toml_value *v, int parent_depth)
{
	size_t i;

	CHECK(v != NULL);
	CHECK(v->depth > parent_depth && v->depth <= KERNELS__TOML_MAX_DEPTH);
	CHECK(v->line >= 1 && v->col >= 1);
	CHECK(kernels__toml_type_name(v->type) != NULL);
	switch (v->type) {
	case KERNELS__TOML_TABLE:
		for (i = 0; i < v->u.t.n; i++) {
			const kernels__toml_entry *e = &v->u.t.items[i];
			CHECK(e->key && e->key[e->key_len] == '\0');
			CHECK(utf8_strict((const unsigned char *)e->key, e->key_len));
			CHECK(e->line >= 1 && e->col >= 1);
			if (strlen(e->key) == e->key_len)
				CHECK(kernels__toml_entry_get(v, e->key) == e);
			check_value(e->value, v->depth);
		}
		break;
	case KERNELS__TOML_ARRAY:
		for (i = 0; i < v->u.a.n; i++)
			check_value(v->u.a.items[i], v->depth);
		break;
	case KERNELS__TOML_STRING:
		CHECK(v->u.s.ptr && v->u.s.ptr[v->u.s.len] == '\0');
		CHECK(utf8_strict((const unsigned char *)v->u.s.ptr, v->u.s.len));
		break;
	case KERNELS__TOML_FLOAT: {
		char clean[600];
		size_t k, n = 0;
		CHECK(v->u.s.ptr && strlen(v->u.s.ptr) == v->u.s.len && v->u.s.len < sizeof(clean));
		for (k = 0; k < v->u.s.len; k++)
			if (v->u.s.ptr[k] != '_')
				clean[n++] = v->u.s.ptr[k];
		clean[n] = '\0';
		if (strstr(clean, "nan"))
			CHECK(isnan(v->f));
		else
			CHECK(strtod(clean, NULL) == v->f);
		break;
	}
	case KERNELS__TOML_DATETIME: {
		size_t n = v->u.s.len;
		CHECK(v->u.s.ptr && strlen(v->u.s.ptr) == n);
		switch (v->datetime_kind) {
		case KERNELS__TOML_LOCAL_DATE: CHECK(n == 10); break;
		case KERNELS__TOML_LOCAL_TIME: CHECK(n >= 8 && v->u.s.ptr[2] == ':'); break;
		case KERNELS__TOML_LOCAL_DATETIME: CHECK(n >= 19); break;
		case KERNELS__TOML_OFFSET_DATETIME: CHECK(n >= 20); break;
		default: CHECK(0);
		}
		break;
	}
	case KERNELS__TOML_INTEGER:
		break;
	case KERNELS__TOML_BOOL:
		CHECK(v->u.b == 0 || v->u.b == 1);
		break;
	default:
		CHECK(0);
	}
}

/* ---- writing a tree back as TOML ---- */

static void put_string(kernels__buf *b, const char *s, size_t n)
{
	size_t i;

	kernels__buf_puts(b, "\"");
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			kernels__buf_printf(b, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			kernels__buf_printf(b, "\\u%04x", c);
		else
			kernels__buf_put(b, &s[i], 1);
	}
	kernels__buf_puts(b, "\"");
}

static void put_value(kernels__buf *b, const kernels__toml_value *v)
{
	size_t i;

	switch (v->type) {
	case KERNELS__TOML_TABLE:
		kernels__buf_puts(b, "{");
		for (i = 0; i < v->u.t.n; i++) {
			kernels__buf_puts(b, i ? ", " : " ");
			put_string(b, v->u.t.items[i].key, v->u.t.items[i].key_len);
			kernels__buf_puts(b, " = ");
			put_value(b, v->u.t.items[i].value);
		}
		kernels__buf_puts(b, v->u.t.n ? " }" : "}");
		break;
	case KERNELS__TOML_ARRAY:
		kernels__buf_puts(b, "[");
		for (i = 0; i < v->u.a.n; i++) {
			kernels__buf_puts(b, i ? ",\n  " : "\n  ");
			put_value(b, v->u.a.items[i]);
		}
		kernels__buf_puts(b, "]");
		break;
	case KERNELS__TOML_STRING:
		put_string(b, v->u.s.ptr, v->u.s.len);
		break;
	case KERNELS__TOML_INTEGER:
		kernels__buf_printf(b, "%lld", v->u.i);
		break;
	case KERNELS__TOML_FLOAT:
	case KERNELS__TOML_DATETIME:
		kernels__buf_put(b, v->u.s.ptr, v->u.s.len);
		break;
	case KERNELS__TOML_BOOL:
		kernels__buf_puts(b, v->u.b ? "true" : "false");
		break;
	}
}

static char *write_back(const kernels__toml_value *root, size_t *len)
{
	kernels__buf b = { 0 };
	size_t i;

	kernels__buf_puts(&b, "# written back\n");
	for (i = 0; i < root->u.t.n; i++) {
		put_string(&b, root->u.t.items[i].key, root->u.t.items[i].key_len);
		kernels__buf_puts(&b, " = ");
		put_value(&b, root->u.t.items[i].value);
		kernels__buf_puts(&b, "\n");
	}
	CHECK(b.ptr != NULL);
	*len = b.len;
	return kernels__buf_detach(&b);
}

static void check_equal(const kernels__toml_value *a, const kernels__toml_value *b)
{
	size_t i;

	CHECK(a->type == b->type);
	switch (a->type) {
	case KERNELS__TOML_TABLE:
		CHECK(a->u.t.n == b->u.t.n);
		for (i = 0; i < a->u.t.n; i++) {
			const kernels__toml_entry *x = &a->u.t.items[i], *y = &b->u.t.items[i];
			CHECK(x->key_len == y->key_len && !memcmp(x->key, y->key, x->key_len));
			check_equal(x->value, y->value);
		}
		break;
	case KERNELS__TOML_ARRAY:
		CHECK(a->u.a.n == b->u.a.n);
		for (i = 0; i < a->u.a.n; i++)
			check_equal(a->u.a.items[i], b->u.a.items[i]);
		break;
	case KERNELS__TOML_STRING:
		CHECK(a->u.s.len == b->u.s.len && !memcmp(a->u.s.ptr, b->u.s.ptr, a->u.s.len));
		break;
	case KERNELS__TOML_INTEGER:
		CHECK(a->u.i == b->u.i);
		break;
	case KERNELS__TOML_FLOAT:
		CHECK(!strcmp(a->u.s.ptr, b->u.s.ptr));
		CHECK(a->f == b->f || (isnan(a->f) && isnan(b->f)));
		break;
	case KERNELS__TOML_DATETIME:
		CHECK(a->datetime_kind == b->datetime_kind && !strcmp(a->u.s.ptr, b->u.s.ptr));
		break;
	case KERNELS__TOML_BOOL:
		CHECK(a->u.b == b->u.b);
		break;
	}
}

/* ---- the documents ---- */

static int manifest_read(const char *data, size_t len, const kernels__toml_value *tree, kernels_manifest **out)
{
	const kernels__toml_value *deps = tree ? kernels__toml_get_path(tree, "tool", "kernels", "dependencies", NULL)
					       : NULL;
	size_t i, n;
	int rc = kernels_manifest_load_string(out, data, len, NAME);

	if (rc < 0) {
		fuzz_check_failure(rc);
		CHECK(rc == KERNELS_EPARSE || rc == KERNELS_ENOTFOUND || rc == KERNELS_EINVAL || rc == KERNELS_ENOMEM);
		CHECK(*out == NULL);
		/* no table at all is the only ENOTFOUND */
		CHECK(rc != KERNELS_ENOTFOUND || (tree && !deps));
		return rc;
	}
	CHECK(tree != NULL && deps != NULL && deps->type == KERNELS__TOML_TABLE);
	n = kernels_manifest_dependency_count(*out);
	CHECK(n == deps->u.t.n);
	CHECK(kernels_manifest_dependency_at(*out, n) == NULL);
	for (i = 0; i < n; i++) {
		const kernels_dependency *d = kernels_manifest_dependency_at(*out, i);
		const kernels__toml_entry *e = &deps->u.t.items[i];
		CHECK(d && d->repo_id && !strcmp(d->repo_id, e->key));
		CHECK(kernels__repo_id_check(d->repo_id) == 0);
		CHECK(d->line == e->line && d->col == e->col);
		if (d->kind == KERNELS_DEPENDENCY_VERSION) {
			CHECK(d->specifier == NULL);
			CHECK(e->value->type == KERNELS__TOML_INTEGER && (unsigned long long)e->value->u.i == d->version);
		} else {
			CHECK(d->kind == KERNELS_DEPENDENCY_SPECIFIER && d->specifier);
			CHECK(e->value->type == KERNELS__TOML_STRING && !strcmp(d->specifier, e->value->u.s.ptr));
		}
	}
	return 0;
}

static int status_read(const char *data, size_t len, const kernels__toml_value *tree, kernels__kernel_status *st)
{
	const kernels__toml_value *kind = tree ? kernels__toml_get(tree, "kind") : NULL;
	int rc = kernels__kernel_status_parse(data, len, NAME, st);

	if (rc < 0) {
		fuzz_check_failure(rc);
		CHECK(rc == KERNELS_EPARSE || rc == KERNELS_EINVAL || rc == KERNELS_ENOMEM);
		CHECK(st->destination == NULL && st->revision == NULL);
		return rc;
	}
	CHECK(tree && kind && kind->type == KERNELS__TOML_STRING && !strcmp(kind->u.s.ptr, "redirect"));
	CHECK(st->kind == KERNELS__STATUS_REDIRECT);
	CHECK(st->destination && kernels__repo_id_check(st->destination) == 0);
	CHECK(st->revision && st->revision[0]);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	kernels__toml_value *tree = NULL, *again = NULL;
	kernels_manifest *m = NULL, *m2 = NULL;
	kernels__kernel_status st, st2;
	char *text = NULL;
	size_t len = 0, i;
	int rc, rc_m, rc_s;

	rc = kernels__toml_parse((const char *)data, size, NAME, &tree);
	if (rc < 0) {
		fuzz_check_failure(rc);
		CHECK(rc == KERNELS_EPARSE || rc == KERNELS_EINVAL || rc == KERNELS_ENOMEM);
		CHECK(tree == NULL);
		CHECK(strstr(kernels_error_last(), NAME) != NULL);
	} else {
		CHECK(tree != NULL && tree->type == KERNELS__TOML_TABLE && tree->depth == 0);
		for (i = 0; i < tree->u.t.n; i++)
			check_value(tree->u.t.items[i].value, 0);
	}
	rc_m = manifest_read((const char *)data, size, tree, &m);
	rc_s = status_read((const char *)data, size, tree, &st);
	if (rc < 0) {
		CHECK(rc_m == rc && rc_s == rc);
		goto out;
	}

	text = write_back(tree, &len);
	rc = kernels__toml_parse(text, len, NAME, &again);
	if (rc < 0)
		fprintf(stderr, "the tree written back does not parse: %s\n%s\n", kernels_error_last(), text);
	CHECK(rc == 0);
	check_equal(tree, again);

	/* the documents read the same from the written-back text */
	if (rc_m != KERNELS_ENOMEM) {
		int rc2 = manifest_read(text, len, again, &m2);
		CHECK(rc2 == rc_m || rc2 == KERNELS_ENOMEM);
		if (rc_m == 0 && rc2 == 0) {
			CHECK(kernels_manifest_dependency_count(m) == kernels_manifest_dependency_count(m2));
			for (i = 0; i < kernels_manifest_dependency_count(m); i++) {
				const kernels_dependency *x = kernels_manifest_dependency_at(m, i), *y = kernels_manifest_dependency_at(m2, i);
				CHECK(!strcmp(x->repo_id, y->repo_id) && x->kind == y->kind && x->version == y->version);
				CHECK((!x->specifier && !y->specifier) || !strcmp(x->specifier, y->specifier));
			}
		}
	}
	if (rc_s != KERNELS_ENOMEM) {
		int rc2 = status_read(text, len, again, &st2);
		CHECK(rc2 == rc_s || rc2 == KERNELS_ENOMEM);
		if (rc_s == 0 && rc2 == 0)
			CHECK(!strcmp(st.destination, st2.destination) && !strcmp(st.revision, st2.revision));
		kernels__kernel_status_clear(&st2);
	}
out:
	free(text);
	kernels__kernel_status_clear(&st);
	kernels_manifest_free(m);
	kernels_manifest_free(m2);
	kernels__toml_free(tree);
	kernels__toml_free(again);
	kernels_error_clear();
	return 0;
}
