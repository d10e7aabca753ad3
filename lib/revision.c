/* The revision stage: what the caller asked for -> one commit id. The refs
 * come from reflist.c (the Hub's, or the cache's offline: get.c runs a call
 * offline when the Hub cannot be reached); all feed the same matcher
 * (resolve_in), so every answer follows the same documented order. */
#include "revision.h"
#include "cache.h"
#include "error.h"
#include "hub.h"
#include "reflist.h"
#include "refs.h"
#include "specifier.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define REVISION_MAX 255
#define MAJOR_DIGITS_MAX 6
#define SHORT_COMMIT_MIN 7
#define NEAREST_MAX 5
#define LISTED_MAX 30          /* versions named in an error message */

typedef kernels__ref_entry entry;
typedef kernels__reflist table;

/* ---- matching ---- */

size_t kernels__edit_distance(const char *a, const char *b, size_t cap)
{
	size_t la = strlen(a), lb = strlen(b), i, j, *row, best;

	if (la > 256 || lb > 256)
		return cap;
	if (!(row = malloc((lb + 1) * sizeof(*row))))
		return cap;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			size_t up = row[j], v = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < v)
				v = up + 1;
			if (row[j - 1] + 1 < v)
				v = row[j - 1] + 1;
			diag = up;
			row[j] = v;
		}
	}
	best = row[lb];
	free(row);
	return best < cap ? best : cap;
}

typedef struct {
	size_t dist;
	const char *name;
} near_name;

static int near_cmp(const void *a, const void *b)
{
	const near_name *x = a, *y = b;
	if (x->dist != y->dist)
		return x->dist < y->dist ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* ", nearest names: a, b, c" (up to NEAREST_MAX), or a note that the repo
 * has no branch or tag at all. */
static void nearest_names(const table *t, const char *rev, kernels__buf *out)
{
	near_name *v = t->n ? calloc(t->n, sizeof(*v)) : NULL;
	size_t i, n = 0;

	for (i = 0; v && i < t->n; i++) {
		v[n].dist = kernels__edit_distance(rev, t->v[i].name, (size_t)-1);
		v[n++].name = t->v[i].name;
	}
	if (!n) {
		kernels__buf_puts(out, t->n ? "" : "; it has no branch or tag at all");
		free(v);
		return;
	}
	qsort(v, n, sizeof(*v), near_cmp);
	kernels__buf_puts(out, "; nearest names: ");
	for (i = 0; i < n && i < NEAREST_MAX; i++)
		kernels__buf_printf(out, "%s%s", i ? ", " : "", v[i].name);
	free(v);
}

static const char *where(const table *t, const char *repo_id, char *buf, size_t n)
{
	if (t->from_cache)
		snprintf(buf, n, "the cached refs of %s (%s/refs)", repo_id, t->repo_dir);
	else
		snprintf(buf, n, "%s (%s repo)", repo_id, t->type == KERNELS__REPO_KERNEL ? "kernel" : "model");
	return buf;
}

static const entry *find_exact(const table *t, const char *rev)
{
	const entry *e;
	size_t i;

	if ((e = kernels__reflist_find(t, rev, KERNELS_REVISION_BRANCH)) ||
	    (e = kernels__reflist_find(t, rev, KERNELS_REVISION_TAG)))
		return e;
	for (i = 0; i < t->n; i++)
		if (t->v[i].full && !strcmp(t->v[i].full, rev))
			return &t->v[i];
	return NULL;
}

static int set_result(kernels_revision *r, const entry *e, kernels_revision_kind_t kind)
{
	memcpy(r->commit, e->commit, 41);
	r->kind = kind;
	free(r->ref);
	r->ref = kernels__strdup(e->name);
	return r->ref ? 0 : KERNELS_ENOMEM;
}

/* Major version numbers of the table's vN branches, for messages. */
static void majors(const table *t, kernels__buf *out, unsigned long *highest, const entry **high_entry)
{
	size_t i;

	*highest = 0;
	*high_entry = NULL;
	for (i = 0; i < t->n; i++) {
		const entry *e = &t->v[i];
		unsigned long m;
		if (e->kind != KERNELS_REVISION_BRANCH || e->name[0] != 'v' ||
		    !kernels__is_digits(e->name + 1, strlen(e->name + 1)) ||
		    strlen(e->name + 1) > MAJOR_DIGITS_MAX)
			continue;
		m = strtoul(e->name + 1, NULL, 10);
		kernels__buf_printf(out, "%s%lu", out->len ? ", " : "", m);
		if (!*high_entry || m > *highest) {
			*highest = m;
			*high_entry = e;
		}
	}
}

static int resolve_major(const kernels__config *cfg, const char *repo_id, const char *rev, const table *t,
			 kernels_revision *r)
{
	unsigned long n = strtoul(rev, NULL, 10), highest;
	kernels__buf avail = { 0 };
	const entry *e, *high;
	char name[32], w[600];
	int rc;

	snprintf(name, sizeof(name), "v%lu", n);
	majors(t, &avail, &highest, &high);
	if (!(e = kernels__reflist_find(t, name, KERNELS_REVISION_BRANCH))) {
		rc = kernels__error(KERNELS_ENOTFOUND,
				    "version %lu of %s not found: no branch %s in %s; available versions: %s",
				    n, repo_id, name, where(t, repo_id, w, sizeof(w)), avail.len ? avail.ptr : "none");
		kernels__buf_free(&avail);
		return rc;
	}
	kernels__buf_free(&avail);
	if (high && highest > n)
		kernels__log(cfg, KERNELS_LOG_WARNING,
			     "%s: a newer major version %s exists (you asked for version %lu); consider moving to it",
			     repo_id, high->name, n);
	return set_result(r, e, KERNELS_REVISION_MAJOR);
}

/* Adds `commit` to the distinct matches of `prefix`. */
static void prefix_match(const char *commit, const char *prefix, char found[2][41], size_t *n)
{
	if (strncmp(commit, prefix, strlen(prefix)))
		return;
	if (*n > 0 && !strcmp(found[0], commit))
		return;
	if (*n < 2)
		memcpy(found[*n], commit, 41);
	(*n)++;
}

/* Offline, snapshots/{commit} folders are commits we know too. */
static void snapshot_matches(const table *t, const char *prefix, char found[2][41], size_t *n)
{
	char *path = kernels__sprintf("%s/snapshots", t->repo_dir);
	struct dirent *d;
	DIR *dir;

	if (!path)
		return;
	dir = opendir(path);
	free(path);
	if (!dir)
		return;
	while ((d = readdir(dir)))
		if (kernels__is_commit(d->d_name, KERNELS__HEX_ANY_CASE))
			prefix_match(d->d_name, prefix, found, n);
	closedir(dir);
}

/* The Hub's revision API knows every commit, not only the ones refs name. */
static int expand_online(const kernels__config *cfg, const char *repo_id, const char *lower, const table *t,
			 kernels_revision *r)
{
	json_t *info = NULL, *sha;
	char *esc = kernels__url_escape(lower, 0), *suffix;
	int rc;

	if (!esc)
		return KERNELS_ENOMEM;
	suffix = kernels__sprintf("/revision/%s", esc);
	free(esc);
	if (!suffix)
		return KERNELS_ENOMEM;
	rc = kernels__hub_api_json(cfg, t->type, repo_id, suffix, &info);
	free(suffix);
	if (rc == KERNELS_ENOTFOUND)
		return kernels__error(KERNELS_ENOTFOUND,
				      "short commit id '%s' matches no commit of %s, or several; give more digits or "
				      "the full 40-hex commit id", lower, repo_id);
	if (rc < 0)
		return kernels__error_prefix("expanding short commit id '%s' of %s", lower, repo_id);
	sha = json_object_get(info, "sha");
	if (!json_is_string(sha) || !kernels__is_commit(json_string_value(sha), KERNELS__HEX_ANY_CASE) ||
	    strncasecmp(json_string_value(sha), lower, strlen(lower))) {
		json_decref(info);
		return kernels__error(KERNELS_EHTTP,
				      "the Hub's answer for short commit id '%s' of %s has no matching 'sha'; "
				      "pin the full commit id instead", lower, repo_id);
	}
	kernels__hex_lower(json_string_value(sha), 40, r->commit);
	json_decref(info);
	r->kind = KERNELS_REVISION_SHORT_COMMIT;
	return 0;
}

static int resolve_short(const kernels__config *cfg, const char *repo_id, const char *rev, const table *t,
			 kernels_revision *r)
{
	char lower[41], found[2][41], w[600];
	size_t i, n = 0, len = strlen(rev);

	kernels__hex_lower(rev, len, lower);
	for (i = 0; i < t->n; i++)
		prefix_match(t->v[i].commit, lower, found, &n);
	if (t->from_cache)
		snapshot_matches(t, lower, found, &n);
	if (n > 1)
		return kernels__error(KERNELS_EAMBIGUOUS,
				      "short commit id '%s' is ambiguous in %s (%s, %s%s); give more digits or the "
				      "full 40-hex commit id", lower, where(t, repo_id, w, sizeof(w)), found[0],
				      found[1], n > 2 ? ", ..." : "");
	if (n == 1) {
		memcpy(r->commit, found[0], 41);
		r->kind = KERNELS_REVISION_SHORT_COMMIT;
		return 0;
	}
	if (t->from_cache)
		return kernels__error(KERNELS_ENOTFOUND, "short commit id '%s' matches no commit in %s", lower,
				      where(t, repo_id, w, sizeof(w)));
	return expand_online(cfg, repo_id, lower, t, r);
}

/* The table's "v" + version tags, parsed (skipping the rest), sorted. */
static int tag_versions(const table *t, kernels__named_version **out, size_t *count)
{
	kernels__named_version *v = t->n ? calloc(t->n, sizeof(*v)) : NULL;
	size_t i, n = 0;

	*out = NULL;
	*count = 0;
	if (t->n && !v)
		return kernels__error_oom();
	for (i = 0; i < t->n; i++) {
		const entry *e = &t->v[i];
		if (e->kind != KERNELS_REVISION_TAG || e->name[0] != 'v' ||
		    !(v[n].v = kernels__version_try_parse(e->name + 1)))
			continue;
		v[n++].name = e->name;
	}
	if (n)
		qsort(v, n, sizeof(*v), kernels__named_version_cmp);
	*out = v;
	*count = n;
	return 0;
}

static void named_versions_free(kernels__named_version *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		kernels__version_free(v[i].v);
	free(v);
}

static int resolve_spec(const char *repo_id, const char *rev, const table *t, kernels_revision *r)
{
	kernels__specifier_set *spec;
	kernels__buf list = { 0 };
	const char **texts = NULL;
	kernels__named_version *tags;
	size_t n, i, best;
	char w[600];
	int rc;

	if ((rc = kernels__specifier_parse(rev, &spec)) < 0)
		return kernels__error_prefix("revision of %s is read as a version specifier set, but it does not parse",
					     repo_id);
	if ((rc = tag_versions(t, &tags, &n)) < 0)
		goto out;
	if (n && !(texts = calloc(n, sizeof(*texts)))) {
		rc = kernels__error_oom();
		goto out;
	}
	for (i = 0; i < n; i++)
		texts[i] = tags[i].name + 1;
	rc = n ? kernels__specifier_select(spec, texts, n, -1, &best) : KERNELS_ENOMATCH;
	if (rc == 0) {
		entry e = { (char *)tags[best].name, NULL, { 0 }, KERNELS_REVISION_TAG };
		memcpy(e.commit, kernels__reflist_find(t, tags[best].name, KERNELS_REVISION_TAG)->commit, 41);
		rc = set_result(r, &e, KERNELS_REVISION_VERSION_SPEC);
	} else if (rc == KERNELS_ENOMATCH) {
		for (i = 0; i < n && i < LISTED_MAX; i++)
			kernels__buf_printf(&list, "%s%s", i ? ", " : "", tags[i].name);
		if (n > LISTED_MAX)
			kernels__buf_printf(&list, ", ... (%zu in all)", n);
		rc = kernels__error(KERNELS_ENOMATCH,
				    "no version of %s satisfies '%s'; versions that exist in %s: %s", repo_id, rev,
				    where(t, repo_id, w, sizeof(w)), n ? list.ptr : "none (no vX.Y.Z tags)");
	}
out:
	kernels__buf_free(&list);
	free(texts);
	named_versions_free(tags, n);
	kernels__specifier_set_free(spec);
	return rc;
}

/* The documented order, after full commit ids (handled by the caller). */
static int resolve_in(const kernels__config *cfg, const char *repo_id, const char *rev, const table *t,
		      kernels_revision *r)
{
	const entry *e;
	size_t len = strlen(rev);
	kernels__buf near = { 0 };
	char w[600];
	int rc;

	if ((e = find_exact(t, rev))) {
		/* "1": Python kernels takes a revision as the ref of that name;
		 * libkernels too when there is one, else the branch v1. */
		if (kernels__is_digits(rev, strlen(rev)) && len <= MAJOR_DIGITS_MAX)
			kernels__log(cfg, KERNELS_LOG_WARNING,
				     "%s: revision '%s' is the %s of that name (as Python kernels "
				     "reads it), not version %s (the branch v%s); pass \"v%s\" for the branch",
				     repo_id, rev, e->kind == KERNELS_REVISION_TAG ? "tag" : "branch", rev, rev, rev);
		return set_result(r, e, e->kind);
	}
	if (kernels__is_digits(rev, strlen(rev)) && len <= MAJOR_DIGITS_MAX)
		return resolve_major(cfg, repo_id, rev, t, r);
	if (len >= SHORT_COMMIT_MIN && len < 40 && kernels__is_hex(rev, 0, KERNELS__HEX_ANY_CASE))
		return resolve_short(cfg, repo_id, rev, t, r);
	if (kernels__specifier_looks_like(rev))
		return resolve_spec(repo_id, rev, t, r);
	nearest_names(t, rev, &near);
	rc = kernels__error(KERNELS_ENOTFOUND, "revision '%s' not found: no branch or tag of that name in %s%s%s", rev,
			    where(t, repo_id, w, sizeof(w)), near.ptr ? near.ptr : "",
			    t->from_cache ? "" : "; pin an existing branch, tag, full commit id or version");
	kernels__buf_free(&near);
	return rc;
}

/* ---- entry points ---- */

int kernels__revision_check(const char *revision)
{
	const char *p;

	if (!revision || !*revision)
		return kernels__error(KERNELS_EINVAL,
				      "no revision given: pin a branch (\"main\"), a tag (\"v1.1.2\"), a commit id, a "
				      "major version (\"1\") or a version specifier (\">=1.1,<2\")");
	if (strlen(revision) > REVISION_MAX)
		return kernels__error(KERNELS_EINVAL, "revision '%.40s...' is longer than %d bytes; pin a shorter name",
				      revision, REVISION_MAX);
	for (p = revision; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return kernels__error(KERNELS_EINVAL,
					      "revision has a control character (0x%02x) at offset %zu; pass the "
					      "branch, tag, commit or version as printable text", (unsigned char)*p,
					      (size_t)(p - revision));
	if (strstr(revision, ".."))
		return kernels__error(KERNELS_EINVAL, "revision '%s' contains '..', which no branch, tag, commit or "
				      "version does", revision);
	return 0;
}

/* After an online answer: refs/{name} = commit, as huggingface_hub does.
 * A cache that cannot be written only costs the offline answer later; a
 * ref that already holds the commit is left alone, so a read-only shared
 * cache warns only when its record is out of date. */
static void record(const kernels__config *cfg, const kernels_revision *r)
{
	char *dir, held[41];

	if (!r->ref || kernels__ref_name_check(r->ref) < 0) {
		kernels_error_clear();
		return;
	}
	if (!(dir = kernels__cache_repo_dir(cfg, r->type, r->repo_id)))
		return;
	if ((kernels__refs_read(dir, r->ref, held) < 0 || strcmp(held, r->commit)) &&
	    kernels__refs_write(dir, r->ref, r->commit) < 0)
		kernels__log(cfg, KERNELS_LOG_WARNING, "could not record %s of %s in the cache: %s", r->ref, r->repo_id,
			     kernels_error_last());
	kernels_error_clear();
	free(dir);
}

/* What to do when the cache cannot answer, by why it was asked (`code`). */
static void cached_todo(const kernels__config *cfg, int code, char *todo, size_t n)
{
	if (code == KERNELS_EOFFLINE)
		snprintf(todo, n, "resolve it once online (%s) so it is recorded, or pin a full commit id",
			 kernels__config_online_hint(cfg));
	else if (code == KERNELS_EHTTP)
		snprintf(todo, n, "try again when the Hub answers, or pin a full commit id");
	else
		snprintf(todo, n, "check the network connection, HF_ENDPOINT and proxy settings, or pin a full "
			 "commit id");
}

/* 1 when refs/{rev} is there but holds no commit id (the listing skips
 * such a file), the error slot then saying which file and why: a ref left
 * empty by a crash is not a name the cache never saw. */
static int damaged_ref(const table *t, const char *rev)
{
	char held[41], branch[64];

	/* A bare major version N is the branch vN. */
	if (rev[strspn(rev, "0123456789")] == '\0' && strlen(rev) < sizeof(branch) - 1) {
		snprintf(branch, sizeof(branch), "v%s", rev);
		rev = branch;
	}
	return t->repo_dir && kernels__ref_name_check(rev) == 0 &&
	       kernels__refs_read(t->repo_dir, rev, held) == KERNELS_EPARSE;
}

/* A version specifier is matched offline against the vX.Y.Z tags the
 * cache can read: a tag's file left empty by a crash is out of the match,
 * and the answer may be older than the one the cache last saw. Said,
 * naming each such file. */
static void warn_damaged_versions(const kernels__config *cfg, const table *t, const char *rev)
{
	kernels__ref *refs = NULL;
	size_t n = 0, i;

	if (kernels__refs_list_damaged(t->repo_dir, &refs, &n) < 0)
		kernels_error_clear();
	for (i = 0; i < n; i++)
		if (refs[i].name[0] == 'v' && isdigit((unsigned char)refs[i].name[1]) && strchr(refs[i].name, '.'))
			kernels__log(cfg, KERNELS_LOG_WARNING, "ref file '%s/refs/%s' holds no 40-hex commit id (a "
				     "crash while it was written can leave it empty), so '%s' was matched offline "
				     "without it and may be older than the cache's newest; an online get rewrites it",
				     t->repo_dir, refs[i].name, rev);
	kernels__refs_free(refs, n);
}

/* Answers from the cache's refs/ (offline). */
static int resolve_cached(const kernels__config *cfg, const char *repo_id, const char *rev, kernels_revision *r)
{
	const char *why;
	int code = kernels__reflist_offline_why(cfg, &why);
	char inner[1024], todo[160];
	table t = { 0 };
	int rc;

	cached_todo(cfg, code, todo, sizeof(todo));
	if ((rc = kernels__reflist_cached(cfg, repo_id, &t)) <= 0) {
		if (rc == 0)
			rc = kernels__error(code, "%s, and %s is not in the cache at %s; %s", why, repo_id,
					    cfg->cache_dir, todo);
		goto out;
	}
	rc = resolve_in(cfg, repo_id, rev, &t, r);
	if (rc == KERNELS_ENOTFOUND || rc == KERNELS_ENOMATCH) {
		snprintf(inner, sizeof(inner), "%s", kernels_error_last());
		if (rc == KERNELS_ENOTFOUND && damaged_ref(&t, rev))
			rc = kernels__error(code, "%s, and the cache cannot answer '%s': %s; until then a full "
					    "commit id loads from the cache", why, rev, kernels_error_last());
		else
			rc = kernels__error(code, "%s, and the cache cannot answer '%s': %s; %s", why, rev, inner,
					    todo);
	}
	if (rc == 0) {
		r->type = t.type;
		r->from_cache = 1;
		if (r->kind == KERNELS_REVISION_VERSION_SPEC)
			warn_damaged_versions(cfg, &t, rev);
	}
out:
	kernels__reflist_free(&t);
	return rc;
}

static kernels_revision *revision_new(const char *repo_id)
{
	kernels_revision *r = calloc(1, sizeof(*r));

	if (!r || !(r->repo_id = kernels__strdup(repo_id))) {
		free(r);
		kernels__error_oom();
		return NULL;
	}
	return r;
}

int kernels__revision_resolve(const kernels__config *cfg, const char *repo_id, const char *revision,
			      kernels_revision **out)
{
	kernels_revision *r;
	table t = { 0 };
	int rc;

	if (!out)
		return kernels__error(KERNELS_EINVAL, "kernels_revision_resolve: out is NULL");
	*out = NULL;
	if ((rc = kernels__repo_id_check(repo_id)) < 0 || (rc = kernels__revision_check(revision)) < 0)
		return rc;
	if (!(r = revision_new(repo_id)))
		return KERNELS_ENOMEM;

	if (kernels__is_commit(revision, KERNELS__HEX_ANY_CASE)) {
		kernels__hex_lower(revision, 40, r->commit);
		r->kind = KERNELS_REVISION_COMMIT;
		if ((rc = kernels__reflist_cache_pick(cfg, repo_id, &t)) >= 0) {
			r->type = t.type;
			rc = 0;
		}
	} else if (cfg->offline) {
		rc = resolve_cached(cfg, repo_id, revision, r);
	} else if ((rc = kernels__reflist_remote(cfg, repo_id, &t)) == 0) {
		r->type = t.type;
		if ((rc = resolve_in(cfg, repo_id, revision, &t, r)) == 0)
			record(cfg, r);
	}
	kernels__reflist_free(&t);
	if (rc < 0) {
		kernels_revision_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

const char *kernels_revision_commit(const kernels_revision *r)
{
	return r ? r->commit : NULL;
}

const char *kernels_revision_repo_id(const kernels_revision *r)
{
	return r ? r->repo_id : NULL;
}

int kernels_revision_is_model_repo(const kernels_revision *r)
{
	return r && r->type == KERNELS__REPO_MODEL;
}

kernels_revision_kind_t kernels_revision_kind(const kernels_revision *r)
{
	return r ? r->kind : KERNELS_REVISION_COMMIT;
}

const char *kernels_revision_ref(const kernels_revision *r)
{
	return r && r->kind != KERNELS_REVISION_COMMIT && r->kind != KERNELS_REVISION_SHORT_COMMIT ? r->ref : NULL;
}

void kernels_revision_free(kernels_revision *r)
{
	if (!r)
		return;
	free(r->repo_id);
	free(r->ref);
	free(r);
}
