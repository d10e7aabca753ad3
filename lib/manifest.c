/* [tool.kernels.dependencies] from pyproject.toml, and kernel-status.toml.
 *
 * What the Python package accepts: kernels 0.17's `kernels lock` passes
 * each value to KernelVersion.Version (an unsigned integer; a string fails
 * there), kernels 0.9 passed it to packaging's SpecifierSet (a string). We
 * take both forms and refuse everything else up front with the place it
 * was written. Booleans are refused although 0.17 lets `true` through as
 * version 1 (a Python quirk, never meant). */
#include "manifest.h"
#include "error.h"
#include "repo.h"
#include "toml.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct kernels_manifest {
	char *path;
	kernels_dependency *deps;
	size_t count;
};

void kernels_manifest_free(kernels_manifest *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->count; i++) {
		free((char *)m->deps[i].repo_id);
		free((char *)m->deps[i].specifier);
	}
	free(m->deps);
	free(m->path);
	free(m);
}

static const char *article_type(const kernels__toml_value *v)
{
	switch (v->type) {
	case KERNELS__TOML_TABLE: return v->flags & KERNELS__TOML_FROZEN ? "an inline table" : "a table";
	case KERNELS__TOML_ARRAY: return "an array";
	case KERNELS__TOML_FLOAT: return "a float";
	case KERNELS__TOML_BOOL: return "a boolean";
	case KERNELS__TOML_DATETIME: return "a date/time";
	case KERNELS__TOML_INTEGER: return "an integer";
	case KERNELS__TOML_STRING: return "a string";
	}
	return "a value";
}

/* The value at tool / tool.kernels must be a table if present. */
static int expect_table(const kernels__toml_value *v, const char *name, const char *what)
{
	if (v && v->type != KERNELS__TOML_TABLE)
		return kernels__error(KERNELS_EPARSE, "%s:%d:%d: '%s' is %s; expected a table", name, v->line, v->col,
				      what, article_type(v));
	return 0;
}

static int take_dependency(kernels_manifest *m, const kernels__toml_entry *e, const char *name)
{
	const kernels__toml_value *v = e->value;
	kernels_dependency *d = &m->deps[m->count];

	memset(d, 0, sizeof(*d));
	if (strlen(e->key) != e->key_len || kernels__repo_id_check(e->key) < 0) {
		char why[1024];
		snprintf(why, sizeof(why), "%s", strlen(e->key) != e->key_len ? "it contains a NUL character"
										: kernels_error_last());
		return kernels__error(KERNELS_EPARSE, "%s:%d:%d: [tool.kernels.dependencies] key '%s' is not a valid "
				      "repo id: %s", name, e->line, e->col, e->key, why);
	}
	if (v->type == KERNELS__TOML_INTEGER) {
		if (v->u.i < 0)
			return kernels__error(KERNELS_EPARSE, "%s:%d:%d: the version of '%s' is %lld; expected a "
					      "major version >= 0 (1 means branch v1)", name, v->line, v->col,
					      e->key, v->u.i);
		d->kind = KERNELS_DEPENDENCY_VERSION;
		d->version = (unsigned long long)v->u.i;
	} else if (v->type == KERNELS__TOML_STRING) {
		if (strlen(v->u.s.ptr) != v->u.s.len)
			return kernels__error(KERNELS_EPARSE, "%s:%d:%d: the version specifier of '%s' contains a NUL "
					      "character", name, v->line, v->col, e->key);
		d->kind = KERNELS_DEPENDENCY_SPECIFIER;
		if (!(d->specifier = kernels__strdup(v->u.s.ptr)))
			return KERNELS_ENOMEM;
	} else {
		return kernels__error(KERNELS_EPARSE, "%s:%d:%d: the version of '%s' is %s; expected an integer "
				      "major version (1 means branch v1) or a version specifier string such as "
				      "\">=0.1.2,<0.2.0\"", name, v->line, v->col, e->key, article_type(v));
	}
	if (!(d->repo_id = kernels__strdup(e->key))) {
		free((char *)d->specifier);
		return KERNELS_ENOMEM;
	}
	d->line = e->line;
	d->col = e->col;
	m->count++;
	return 0;
}

static int from_tree(const kernels__toml_value *root, const char *name, kernels_manifest **out)
{
	const kernels__toml_value *tool = kernels__toml_get(root, "tool");
	const kernels__toml_value *kern = kernels__toml_get(tool, "kernels");
	const kernels__toml_value *deps = kernels__toml_get(kern, "dependencies");
	kernels_manifest *m;
	size_t i;
	int rc;

	if ((rc = expect_table(tool, name, "tool")) < 0 || (rc = expect_table(kern, name, "tool.kernels")) < 0 ||
	    (rc = expect_table(deps, name, "tool.kernels.dependencies")) < 0)
		return rc;
	if (!deps)
		return kernels__error(KERNELS_ENOTFOUND, "%s has no [tool.kernels.dependencies] table; add one that "
				      "maps each kernel repo id to a major version, e.g. "
				      "\"kernels-community/activation\" = 1", name);
	if (!(m = calloc(1, sizeof(*m))) || !(m->path = kernels__strdup(name)) ||
	    (deps->u.t.n && !(m->deps = calloc(deps->u.t.n, sizeof(*m->deps))))) {
		kernels_manifest_free(m);
		return kernels__error_oom();
	}
	for (i = 0; i < deps->u.t.n; i++) {
		if ((rc = take_dependency(m, &deps->u.t.items[i], name)) < 0) {
			kernels_manifest_free(m);
			return rc;
		}
	}
	*out = m;
	return 0;
}

int kernels_manifest_load_string(kernels_manifest **out, const char *toml, size_t len, const char *name)
{
	kernels__toml_value *root;
	int rc;

	if (!out)
		return kernels__error(KERNELS_EINVAL, "kernels_manifest_load_string: `out` is NULL");
	*out = NULL;
	if (!name)
		name = "pyproject.toml";
	if ((rc = kernels__toml_parse(toml, len, name, &root)) < 0)
		return rc;
	rc = from_tree(root, name, out);
	kernels__toml_free(root);
	return rc;
}

int kernels_manifest_load(kernels_manifest **out, const char *path)
{
	kernels__toml_value *root;
	struct stat st;
	char *file;
	int rc;

	if (!out || !path)
		return kernels__error(KERNELS_EINVAL, "kernels_manifest_load: `out` and `path` are required");
	*out = NULL;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		file = kernels__sprintf("%s/pyproject.toml", path);
	else
		file = kernels__strdup(path);
	if (!file)
		return KERNELS_ENOMEM;
	if ((rc = kernels__toml_parse_file(file, &root)) == 0) {
		rc = from_tree(root, file, out);
		kernels__toml_free(root);
	} else if (rc == KERNELS_ENOTFOUND) {
		rc = kernels__error(KERNELS_ENOTFOUND, "no pyproject.toml at '%s'; give the project folder that holds "
				    "the pyproject.toml with [tool.kernels.dependencies]", file);
	}
	free(file);
	return rc;
}

size_t kernels_manifest_dependency_count(const kernels_manifest *m)
{
	return m ? m->count : 0;
}

const kernels_dependency *kernels_manifest_dependency_at(const kernels_manifest *m, size_t i)
{
	return m && i < m->count ? &m->deps[i] : NULL;
}

const char *kernels_manifest_path(const kernels_manifest *m)
{
	return m ? m->path : NULL;
}

/* ---- kernel-status.toml ---- */

void kernels__kernel_status_clear(kernels__kernel_status *s)
{
	if (!s)
		return;
	free(s->destination);
	free(s->revision);
	memset(s, 0, sizeof(*s));
}

static int status_string(const kernels__toml_value *root, const char *key, const char *name, const char **out)
{
	const kernels__toml_value *v = kernels__toml_get(root, key);

	*out = NULL;
	if (!v)
		return 0;
	if (v->type != KERNELS__TOML_STRING || strlen(v->u.s.ptr) != v->u.s.len)
		return kernels__error(KERNELS_EPARSE, "%s:%d:%d: '%s' is %s; expected a string", name, v->line, v->col,
				      key, article_type(v));
	*out = v->u.s.ptr;
	return 0;
}

int kernels__kernel_status_parse(const char *data, size_t len, const char *name, kernels__kernel_status *out)
{
	kernels__toml_value *root;
	const kernels__toml_value *kind_v;
	const char *dest, *rev;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!name)
		name = "kernel-status.toml";
	if ((rc = kernels__toml_parse(data, len, name, &root)) < 0)
		return rc;
	kind_v = kernels__toml_get(root, "kind");
	if (!kind_v || (kind_v->type == KERNELS__TOML_STRING && kind_v->u.s.len == 0)) {
		rc = kernels__error(KERNELS_EPARSE, "%s has no 'kind'; expected kind = \"redirect\" (the repo's "
				    "kernel-status.toml is malformed: tell its owner)", name);
		goto out;
	}
	if (kind_v->type != KERNELS__TOML_STRING || strcmp(kind_v->u.s.ptr, "redirect") != 0) {
		rc = kernels__error(KERNELS_EPARSE, "%s:%d:%d: unknown kernel status kind %s%s%s; this libkernels "
				    "knows only \"redirect\" (upgrade libkernels, or pin another repo)", name,
				    kind_v->line, kind_v->col, kind_v->type == KERNELS__TOML_STRING ? "\"" : "",
				    kind_v->type == KERNELS__TOML_STRING ? kind_v->u.s.ptr : article_type(kind_v),
				    kind_v->type == KERNELS__TOML_STRING ? "\"" : "");
		goto out;
	}
	if ((rc = status_string(root, "destination", name, &dest)) < 0 ||
	    (rc = status_string(root, "revision", name, &rev)) < 0)
		goto out;
	if (!dest || !*dest) {
		rc = kernels__error(KERNELS_EPARSE,
				    "%s: a redirect needs a non-empty 'destination' (\"org/name\" of the "
				    "repo to load instead)", name);
		goto out;
	}
	if (kernels__repo_id_check(dest) < 0) {
		const kernels__toml_value *v = kernels__toml_get(root, "destination");
		char why[1024];
		snprintf(why, sizeof(why), "%s", kernels_error_last());
		rc = kernels__error(KERNELS_EPARSE,
				    "%s:%d:%d: the redirect destination '%s' is not a valid repo id: %s", name,
				    v->line, v->col, dest, why);
		goto out;
	}
	if (rev && !*rev) {
		const kernels__toml_value *v = kernels__toml_get(root, "revision");
		rc = kernels__error(KERNELS_EPARSE,
				    "%s:%d:%d: the redirect 'revision' is empty; expected a branch, tag "
				    "or commit (or no 'revision' for \"main\")", name, v->line, v->col);
		goto out;
	}
	out->kind = KERNELS__STATUS_REDIRECT;
	if (!(out->destination = kernels__strdup(dest)) || !(out->revision = kernels__strdup(rev ? rev : "main"))) {
		kernels__kernel_status_clear(out);
		rc = KERNELS_ENOMEM;
	}
out:
	kernels__toml_free(root);
	return rc;
}
