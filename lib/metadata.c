/* The keys of metadata.json that say what a kernel is and needs rather
 * than how it was built: its name, python-depends, kernel-depends,
 * kernels-minver, upstream, source and provenance. They are read with the
 * rules of Python kernels 0.17.2's parser (kernels-data's Metadata), so a
 * variant it refuses is refused here too, for the same reason; verify.c
 * calls this once per parse and keeps the result with the metadata. */
#include "metadata.h"
#include "error.h"
#include "layout.h"
#include "giturl.h"
#include "util.h"
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kernels__metafields {
	char *upstream, *source;                /* normalised as 0.17.2 does (giturl.h) */
	char minver[64];                        /* normalised; "" when absent */
	const char **python_depends;            /* borrowed */
	size_t n_python;
	kernels_kernel_dependency *deps;        /* strings borrowed */
	size_t n_deps;
	int has_provenance;
	const char *builder_version;
	char builder_commit[65], kernel_commit[65]; /* lower-case; "" when unknown */
	int builder_dirty, kernel_dirty;         /* -1 when unknown */
};

void kernels__metafields_free(kernels__metafields *f)
{
	if (!f)
		return;
	free(f->python_depends);
	free(f->deps);
	free(f->upstream);
	free(f->source);
	free(f);
}

static int bad(const char *path, const char *key, const char *want)
{
	return kernels__error(KERNELS_EPARSE, "%s: key '%s' %s; the variant's metadata.json is not what kernel-builder "
			      "writes (rebuild or re-upload the variant)", path, key, want);
}

/* `^[a-z][-a-z0-9]*[a-z0-9]$`, kernels-data's KernelName. */
int kernels__kernel_name_valid(const char *name)
{
	size_t i, n = strlen(name);

	if (n < 2 || name[0] < 'a' || name[0] > 'z' || name[n - 1] == '-')
		return 0;
	for (i = 1; i < n; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') || name[i] == '-'))
			return 0;
	return 1;
}

/* Rust's usize::from_str: an optional '+', then decimal digits only. */
static int parse_usize(const char *s, size_t n, unsigned long long *out)
{
	unsigned long long v = 0;
	size_t i = 0;

	if (n && s[0] == '+')
		i++;
	if (i == n)
		return -1;
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9' || v > (~0ULL - 9) / 10)
			return -1;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	*out = v;
	return 0;
}

/* kernels-minver: "X.Y.Z" of decimal numbers (whitespace around it
 * trimmed, leading zeros and a '+' allowed, as 0.17 reads it), written
 * back normalised into `out`. */
int kernels__minver_parse(const char *s, char *out, size_t size)
{
	unsigned long long part[3];
	const char *end;
	size_t k = 0;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		end--;
	if (end == s)
		return -1;
	for (;;) {
		const char *dot = memchr(s, '.', (size_t)(end - s));
		size_t n = dot ? (size_t)(dot - s) : (size_t)(end - s);
		if (k == 3 || parse_usize(s, n, &part[k++]) < 0)
			return -1;
		if (!dot)
			break;
		s = dot + 1;
	}
	if (k != 3)
		return -1;
	snprintf(out, size, "%llu.%llu.%llu", part[0], part[1], part[2]);
	return 0;
}

static int optional_url(json_t *root, const char *path, const char *key, char **out)
{
	json_t *v = json_object_get(root, key);
	const char *why;
	int rc;

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return bad(path, key, "must be a string (a git URL)");
	/* kept as 0.17.2 returns it (giturl.h): both clients show the same text */
	if ((rc = kernels__git_url_normalize(json_string_value(v), out, &why)) == -1)
		return kernels__error(KERNELS_EPARSE, "%s: key '%s' is not a git URL ('%s': %s): one of https, http, "
				      "git, ssh, git+ssh, git+https, git+http, or user@host:path", path, key,
				      json_string_value(v), why);
	return rc;
}

static int parse_python_depends(kernels__metafields *f, json_t *root, const char *path)
{
	json_t *v = json_object_get(root, "python-depends"), *e;
	size_t i;

	if (!v)
		return bad(path, "python-depends", "is missing (kernels 0.17 requires it; [] when there are none)");
	if (!json_is_array(v))
		return bad(path, "python-depends", "must be a list of strings");
	if (!(f->python_depends = calloc(json_array_size(v) + 1, sizeof(*f->python_depends))))
		return kernels__error_oom();
	json_array_foreach(v, i, e) {
		if (!json_is_string(e))
			return bad(path, "python-depends", "must be a list of strings");
		f->python_depends[i] = json_string_value(e);
	}
	f->n_python = json_array_size(v);
	return 0;
}

static int parse_dependency(json_t *e, const char *path, size_t i, kernels_kernel_dependency *d)
{
	json_t *repo, *version, *revision, *v;
	const char *key;
	char label[64];

	snprintf(label, sizeof(label), "kernel-depends[%zu]", i);
	if (!json_is_object(e))
		return bad(path, label, "must be an object {\"repo-id\": ..., \"version\": N} (or \"revision\")");
	json_object_foreach(e, key, v)
		if (strcmp(key, "repo-id") && strcmp(key, "version") && strcmp(key, "revision"))
			return kernels__error(KERNELS_EPARSE,
					      "%s: %s has the unknown key '%s'; expected repo-id, version, "
					      "revision", path, label, key);
	repo = json_object_get(e, "repo-id");
	version = json_object_get(e, "version");
	revision = json_object_get(e, "revision");
	if (!json_is_string(repo))
		return bad(path, label, repo ? "has a repo-id that is not a string" : "has no repo-id");
	if (version && revision)
		return bad(path, label, "has both version and revision; they are mutually exclusive");
	if (!version && !revision)
		return bad(path, label, "has neither version nor revision; one must be given");
	if (version && (!json_is_integer(version) || json_integer_value(version) < 0))
		return bad(path, label, "has a version that is not a non-negative integer");
	if (revision && !json_is_string(revision))
		return bad(path, label, "has a revision that is not a string");
	d->repo_id = json_string_value(repo);
	d->version = version ? (long long)json_integer_value(version) : -1;
	d->revision = revision ? json_string_value(revision) : NULL;
	return 0;
}

static int parse_kernel_depends(kernels__metafields *f, json_t *root, const char *path)
{
	json_t *v = json_object_get(root, "kernel-depends"), *e;
	size_t i;
	int rc;

	if (!v)
		return 0; /* serde default: none */
	if (!json_is_array(v))
		return bad(path, "kernel-depends", "must be a list of {\"repo-id\", \"version\" | \"revision\"}");
	if (!(f->deps = calloc(json_array_size(v) + 1, sizeof(*f->deps))))
		return kernels__error_oom();
	json_array_foreach(v, i, e)
		if ((rc = parse_dependency(e, path, i, &f->deps[i])) < 0)
			return rc;
	f->n_deps = json_array_size(v);
	return 0;
}

static int git_oid(const char *s, char *out)
{
	size_t n = strlen(s);

	if (!kernels__is_hex(s, 40, KERNELS__HEX_ANY_CASE) && !kernels__is_hex(s, 64, KERNELS__HEX_ANY_CASE))
		return -1;
	kernels__hex_lower(s, n, out);
	return 0;
}

/* {commit (or its old name sha), dirty}: both or neither (`required`: both). */
static int parse_git(json_t *obj, const char *path, const char *label, int required, char *commit, int *dirty)
{
	json_t *c = json_object_get(obj, "commit"), *d = json_object_get(obj, "dirty");

	if (!c)
		c = json_object_get(obj, "sha");
	*dirty = -1;
	*commit = '\0';
	if (!c && !d && !required)
		return 0;
	if (!c || !d)
		return bad(path, label, "must give the git commit and dirty together");
	if (!json_is_string(c) || git_oid(json_string_value(c), commit) < 0)
		return bad(path, label, "has a commit that is not a git object id (40 or 64 hex digits)");
	if (!json_is_boolean(d))
		return bad(path, label, "has a dirty that is not true or false");
	*dirty = json_is_true(d);
	return 0;
}

static int parse_provenance(kernels__metafields *f, json_t *root, const char *path)
{
	json_t *p = json_object_get(root, "provenance"), *kb, *k, *version;
	int rc;

	f->builder_dirty = f->kernel_dirty = -1;
	if (!p || json_is_null(p))
		return 0;
	if (!json_is_object(p))
		return bad(path, "provenance", "must be an object {\"kernel-builder\": {...}, \"kernel\": {...}}");
	kb = json_object_get(p, "kernel-builder");
	if (!json_is_object(kb))
		return bad(path, "provenance.kernel-builder", kb ? "must be an object" : "is missing");
	version = json_object_get(kb, "version");
	if (!json_is_string(version))
		return bad(path, "provenance.kernel-builder.version", version ? "must be a string" : "is missing");
	f->builder_version = json_string_value(version);
	if ((rc = parse_git(kb, path, "provenance.kernel-builder", 0, f->builder_commit, &f->builder_dirty)) < 0)
		return rc;
	k = json_object_get(p, "kernel");
	if (k && !json_is_null(k)) {
		if (!json_is_object(k))
			return bad(path, "provenance.kernel", "must be an object {\"commit\", \"dirty\"}");
		if ((rc = parse_git(k, path, "provenance.kernel", 1, f->kernel_commit, &f->kernel_dirty)) < 0)
			return rc;
	}
	f->has_provenance = 1;
	return 0;
}

int kernels__metafields_parse(json_t *root, const char *path, kernels__metafields **out)
{
	kernels__metafields *f;
	const char *name = json_string_value(json_object_get(root, "name"));
	json_t *minver = json_object_get(root, "kernels-minver");
	int rc;

	*out = NULL;
	if (name && !kernels__kernel_name_valid(name))
		return kernels__error(KERNELS_EPARSE, "%s: invalid kernel name '%s': it must start with a lower-case "
				      "letter, hold only lower-case letters, digits and dashes, end with a letter or "
				      "digit, and be at least 2 characters long", path, name);
	if (!(f = calloc(1, sizeof(*f))))
		return kernels__error_oom();
	if (minver && !json_is_null(minver) &&
	    (!json_is_string(minver) ||
	     kernels__minver_parse(json_string_value(minver), f->minver, sizeof(f->minver)) < 0))
		rc = bad(path, "kernels-minver", "must be a version of three numbers, e.g. \"0.17.0\"");
	else if ((rc = optional_url(root, path, "upstream", &f->upstream)) == 0 &&
		 (rc = optional_url(root, path, "source", &f->source)) == 0 &&
		 (rc = parse_python_depends(f, root, path)) == 0 && (rc = parse_kernel_depends(f, root, path)) == 0)
		rc = parse_provenance(f, root, path);
	if (rc < 0) {
		kernels__metafields_free(f);
		return rc;
	}
	*out = f;
	return 0;
}

/* ---- public accessors ------------------------------------------------------ */

static const kernels__metafields *fields(const kernels_metadata *m)
{
	return m ? m->fields : NULL;
}

const char *kernels_metadata_upstream(const kernels_metadata *m)
{
	return fields(m) ? fields(m)->upstream : NULL;
}

const char *kernels_metadata_source(const kernels_metadata *m)
{
	return fields(m) ? fields(m)->source : NULL;
}

const char *kernels_metadata_kernels_minver(const kernels_metadata *m)
{
	return fields(m) && fields(m)->minver[0] ? fields(m)->minver : NULL;
}

size_t kernels_metadata_python_depend_count(const kernels_metadata *m)
{
	return fields(m) ? fields(m)->n_python : 0;
}

const char *kernels_metadata_python_depend_at(const kernels_metadata *m, size_t i)
{
	return i < kernels_metadata_python_depend_count(m) ? fields(m)->python_depends[i] : NULL;
}

size_t kernels_metadata_kernel_depend_count(const kernels_metadata *m)
{
	return fields(m) ? fields(m)->n_deps : 0;
}

int kernels_metadata_kernel_depend_at(kernels_kernel_dependency *out, const kernels_metadata *m, size_t i)
{
	if (!out || i >= kernels_metadata_kernel_depend_count(m))
		return kernels__error(KERNELS_EINVAL, "kernels_metadata_kernel_depend_at: index %zu out of range (%zu "
				      "dependencies)", i, kernels_metadata_kernel_depend_count(m));
	*out = fields(m)->deps[i];
	return 0;
}

/* Where each version of kernels_provenance ends (docs/api-stability.md). */
static const size_t provenance_sizes[] = { 0, KERNELS__END(kernels_provenance, kernel_dirty) };
static const kernels__layout provenance_layout = { "kernels_provenance", "KERNELS_PROVENANCE_VERSION",
						   provenance_sizes, KERNELS_PROVENANCE_VERSION };
_Static_assert(sizeof(provenance_sizes) / sizeof(provenance_sizes[0]) == KERNELS_PROVENANCE_VERSION + 1,
	       "a new kernels_provenance version needs its size in provenance_sizes");

int kernels_metadata_provenance(kernels_provenance *out, const kernels_metadata *m)
{
	const kernels__metafields *f = fields(m);
	kernels_provenance p = KERNELS_PROVENANCE_INIT;
	int rc;

	if (!out)
		return kernels__error(KERNELS_EINVAL, "kernels_metadata_provenance: out is NULL");
	if ((rc = kernels__layout_check(&provenance_layout, out)) < 0)
		return rc;
	if (f && f->has_provenance) {
		p.builder_version = f->builder_version;
		p.builder_commit = f->builder_commit[0] ? f->builder_commit : NULL;
		p.builder_dirty = f->builder_dirty;
		p.kernel_commit = f->kernel_commit[0] ? f->kernel_commit : NULL;
		p.kernel_dirty = f->kernel_dirty;
	}
	kernels__layout_write(&provenance_layout, out, &p);
	return f && f->has_provenance ? 1 : 0;
}

/* ---- kernels-minver against what libkernels is compatible with ----------- */

static int cmp_version(const char *a, const char *b)
{
	unsigned long long x, y;

	for (;;) {
		x = strtoull(a, (char **)&a, 10);
		y = strtoull(b, (char **)&b, 10);
		if (x != y)
			return x < y ? -1 : 1;
		if (*a != '.' || *b != '.')
			return 0;
		a++;
		b++;
	}
}

int kernels__metadata_rules(const kernels__config *cfg, const kernels_metadata *m, const char *what)
{
	const char *need = kernels_metadata_kernels_minver(m);
	size_t i, n = kernels_metadata_python_depend_count(m);

	if (need && cmp_version(need, KERNELS_COMPAT_KERNELS_VERSION) > 0)
		return kernels__error(KERNELS_ELOAD,
				      "kernel '%s' variant %s requires kernels>=%s, but libkernels %s is "
				      "compatible with kernels %s only; use a variant or revision built for an older "
				      "kernels, or a libkernels that declares compatibility with kernels %s",
				      m->name, what, need, kernels_version(), KERNELS_COMPAT_KERNELS_VERSION,
				      need);
	/* python-depends: what a Python host must install (the binding checks them
	 * with 0.17's rules); a C host has nothing to check, but says so. */
	if (n) {
		kernels__buf b = { 0 };
		for (i = 0; i < n; i++)
			kernels__buf_printf(&b, "%s%s", i ? ", " : "", kernels_metadata_python_depend_at(m, i));
		kernels__log(cfg, KERNELS_LOG_INFO, "%s declares python-depends %s: Python packages its Python code "
			     "needs (the Python binding checks them as kernels 0.17 does); not checked for a C host",
			     what, b.ptr ? b.ptr : "");
		kernels__buf_free(&b);
	}
	return 0;
}
