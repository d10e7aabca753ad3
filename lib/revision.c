/* The revision stage: what the caller asked for -> one commit id.
 *
 * The refs come from the repo's git remote through libgit2 (one GET of
 * info/refs, no clone, carried by the Hub client: lib/gitls.c); from the
 * REST listing /api/{kernels,models}/{repo}/refs when the endpoint serves
 * no git smart HTTP (a mirror); or from the cache's refs/ folder offline
 * (get.c runs a call offline when the Hub cannot be reached). All feed the
 * same matcher (resolve_in), so every answer follows the same documented
 * order. */
#include "revision.h"
#include "error.h"
#include "gitls.h"
#include "hub.h"
#include "cache.h"
#include "refs.h"
#include "specifier.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#define REVISION_MAX 255
#define MAJOR_DIGITS_MAX 6
#define SHORT_COMMIT_MIN 7
#define NEAREST_MAX 5
#define LISTED_MAX 30          /* versions named in an error message */

/* ---- the table of names a revision is matched against ---- */

typedef struct {
	char *name;                 /* "main", "v1.1.2"; the full name for other refs ("refs/pr/1") */
	char *full;                 /* "refs/heads/main"; NULL for cache entries */
	char commit[41];
	kernels_revision_kind kind; /* BRANCH or TAG */
} entry;

typedef struct {
	entry *v;
	size_t n;
	kernels__repo_type type;
	int from_cache;
	char *repo_dir;             /* the cache folder (cache tables) */
} table;

static void table_free(table *t)
{
	size_t i;

	for (i = 0; i < t->n; i++) {
		free(t->v[i].name);
		free(t->v[i].full);
	}
	free(t->v);
	free(t->repo_dir);
	memset(t, 0, sizeof(*t));
}

static int table_add(table *t, const char *name, const char *full, const char *commit, kernels_revision_kind kind)
{
	entry *e;

	if (!(e = realloc(t->v, (t->n + 1) * sizeof(*e))))
		return kernels__error_oom();
	t->v = e;
	e = &t->v[t->n];
	memset(e, 0, sizeof(*e));
	e->name = kernels__strdup(name);
	e->full = full ? kernels__strdup(full) : NULL;
	if (!e->name || (full && !e->full)) {
		free(e->name);
		free(e->full);
		return KERNELS_ENOMEM;
	}
	memcpy(e->commit, commit, 41);
	e->kind = kind;
	t->n++;
	return 0;
}

static int starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Remote heads -> table; an annotated tag's "^{}" line carries the commit
 * the tag points at, which replaces the tag object's id. */
static int table_from_heads(table *t, const kernels__ref *heads, size_t n)
{
	size_t i, k, len;
	int rc;

	for (i = 0; i < n; i++) {
		const char *full = heads[i].name;
		len = strlen(full);
		if (!strcmp(full, "HEAD") || (len > 3 && !strcmp(full + len - 3, "^{}")))
			continue;
		/* A server's odd names (empty, "..", control characters) are
		 * skipped as the REST listing skips them: never matched, never
		 * echoed in a message. */
		if (kernels__ref_name_check(starts_with(full, "refs/heads/") ? full + 11 :
					    starts_with(full, "refs/tags/") ? full + 10 : full) < 0) {
			kernels_error_clear();
			continue;
		}
		if (starts_with(full, "refs/heads/"))
			rc = table_add(t, full + 11, full, heads[i].commit, KERNELS_REVISION_BRANCH);
		else if (starts_with(full, "refs/tags/"))
			rc = table_add(t, full + 10, full, heads[i].commit, KERNELS_REVISION_TAG);
		else
			rc = table_add(t, full, full, heads[i].commit, KERNELS_REVISION_BRANCH);
		if (rc < 0)
			return rc;
	}
	for (i = 0; i < n; i++) {
		len = strlen(heads[i].name);
		if (len <= 3 || strcmp(heads[i].name + len - 3, "^{}"))
			continue;
		for (k = 0; k < t->n; k++)
			if (t->v[k].full && strlen(t->v[k].full) == len - 3 && !strncmp(t->v[k].full, heads[i].name, len - 3))
				memcpy(t->v[k].commit, heads[i].commit, 41);
	}
	return 0;
}

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

/* The cache does not say branch or tag: "v" + a dotted version is a tag
 * (the seed era's vX.Y.Z), anything else a branch (main, vN). */
static kernels_revision_kind guess_kind(const char *name)
{
	kernels__version *v;

	if (name[0] != 'v' || !strchr(name, '.') || !(v = kernels__version_try_parse(name + 1)))
		return KERNELS_REVISION_BRANCH;
	kernels__version_free(v);
	return KERNELS_REVISION_TAG;
}

/* The cache folder of the repo (kernels__cache_repo_type). Returns 1 when
 * one exists (t->repo_dir, t->type set). */
static int cache_pick(const kernels__config *cfg, const char *repo_id, table *t)
{
	int rc = kernels__cache_repo_type(cfg, repo_id, &t->type);

	if (rc > 0 && !(t->repo_dir = kernels__cache_repo_dir(cfg, t->type, repo_id)))
		return KERNELS_ENOMEM;
	return rc;
}

static int table_from_cache(table *t)
{
	kernels__ref *refs;
	size_t n, i;
	int rc;

	t->from_cache = 1;
	if ((rc = kernels__refs_list(t->repo_dir, &refs, &n)) < 0)
		return rc;
	for (i = 0; i < n && rc == 0; i++)
		rc = table_add(t, refs[i].name, NULL, refs[i].commit, guess_kind(refs[i].name));
	kernels__refs_free(refs, n);
	return rc;
}

/* ---- the remote, kernel type first, then model type ---- */

static char *repo_url(const kernels__config *cfg, kernels__repo_type type, const char *repo_id)
{
	return kernels__sprintf("%s/%s%s", cfg->endpoint, kernels__repo_url_prefix(type), repo_id);
}

/* One "branches"/"tags" list of the REST refs listing into `t`. */
static int table_from_rest_list(table *t, json_t *list, kernels_revision_kind kind, const char *where)
{
	size_t i;
	json_t *item;
	int rc;

	if (!list)
		return 0;
	if (!json_is_array(list))
		return kernels__error(KERNELS_EPARSE, "%s: \"%s\" is not a list; check the endpoint", where,
				      kind == KERNELS_REVISION_TAG ? "tags" : "branches");
	json_array_foreach(list, i, item) {
		const char *name = json_string_value(json_object_get(item, "name"));
		const char *ref = json_string_value(json_object_get(item, "ref"));
		const char *commit = json_string_value(json_object_get(item, "targetCommit"));
		char lower[41];
		size_t k;

		if (!name || !commit || !kernels__is_full_commit(commit))
			return kernels__error(KERNELS_EPARSE, "%s: an entry has no \"name\" or no 40-hex \"targetCommit\"; "
					      "check the endpoint", where);
		if (kernels__ref_name_check(name) < 0) {
			kernels_error_clear();      /* a name git would refuse: never asked for */
			continue;
		}
		for (k = 0; k <= 40; k++)
			lower[k] = (char)tolower((unsigned char)commit[k]);
		if ((rc = table_add(t, name, ref, lower, kind)) < 0)
			return rc;
	}
	return 0;
}

/* GET /api/{kernels,models}/{repo}/refs, as huggingface_hub's list_repo_refs
 * reads it. 0 with `t` filled; else *status is the last answer's status
 * (0: none) and *missing is 1 when every answer was the Hub's RepoNotFound. */
static int table_from_rest(const kernels__config *cfg, const char *repo_id, table *t, long *status, int *missing)
{
	kernels__hub_response r;
	char *path, where[400];
	json_t *doc;
	int i, rc;

	*status = 0;
	*missing = 1;
	for (i = 0; i < 2; i++) {
		if (!(path = kernels__sprintf("/api/%s/%s/refs", kernels__repo_api_name((kernels__repo_type)i), repo_id)))
			return KERNELS_ENOMEM;
		snprintf(where, sizeof(where), "%s%s", cfg->endpoint, path);
		rc = kernels__hub_request(cfg, path, 0, &r);
		free(path);
		if (rc < 0)
			return rc;
		*status = r.status;
		if (r.status == 200) {
			doc = json_loadb(r.body ? r.body : "", r.body_len, 0, NULL);
			kernels__hub_response_free(&r);
			if (!json_is_object(doc)) {
				json_decref(doc);
				return kernels__error(KERNELS_EPARSE, "%s is not a JSON object; check the endpoint", where);
			}
			t->type = (kernels__repo_type)i;
			rc = table_from_rest_list(t, json_object_get(doc, "branches"), KERNELS_REVISION_BRANCH, where);
			if (rc == 0)
				rc = table_from_rest_list(t, json_object_get(doc, "tags"), KERNELS_REVISION_TAG, where);
			json_decref(doc);
			return rc;
		}
		if (!(r.status == 404 && r.error_code && !strcmp(r.error_code, "RepoNotFound")))
			*missing = 0;
		kernels__hub_response_free(&r);
		/* A 404 of any kind under the kernel form: the repo may be a model
		 * repo, or a mirror may serve only models. */
		if (*status != 404 && *status != 401 && *status != 403)
			break;
	}
	return KERNELS_ENOTFOUND;
}

/* The repo exists nowhere we may read (both git forms and the REST listing
 * said so): which of "needs a token", "token refused", "not found". */
static int not_found_error(const kernels__config *cfg, const char *repo_id, int auth)
{
	if (auth && cfg->token)
		return kernels__error(KERNELS_EAUTH,
				      "the Hub at %s refused the token for %s (HTTP 401/403): check that HF_TOKEN "
				      "(or kernels_options.token) is valid and has read access to the repo (for a gated "
				      "repo, request access on its Hub page)", cfg->endpoint, repo_id);
	if (auth)
		return kernels__error(KERNELS_EAUTH,
				      "%s needs authentication (a private or gated repo on %s): set HF_TOKEN (or "
				      "kernels_options.token, or log in with `hf auth login`) to a token with read access",
				      repo_id, cfg->endpoint);
	return kernels__error(KERNELS_ENOTFOUND,
			      "repository %s not found on %s: neither a kernel repo (%s/kernels/%s) nor a "
			      "model repo (%s/%s); check the name%s", repo_id, cfg->endpoint, cfg->endpoint, repo_id,
			      cfg->endpoint, repo_id, cfg->token ? "" : ", and set HF_TOKEN if it is private");
}

/* Fills `t` from the Hub: git smart HTTP first (kernel form, then model
 * form), the REST listing when neither serves it. KERNELS_ENETWORK means
 * "unreachable", the error saying why (get.c decides whether the cache
 * answers instead). */
static int table_from_remote(const kernels__config *cfg, const char *repo_id, table *t)
{
	kernels__git_refs res;
	kernels__repo_type type, first = KERNELS__REPO_KERNEL;
	table cached = { 0 };
	long rest_status;
	char *url;
	int i, rc, auth = 0, no_smart = 0, missing;

	if (cfg->token && strpbrk(cfg->token, "\r\n"))
		return kernels__error(KERNELS_EINVAL, "the Hub token contains a line break; fix HF_TOKEN or the token file");
	/* A repo the cache knows as a model repo is asked for as one first:
	 * a warm call then costs one request, not a 404 and then the answer. */
	if ((rc = cache_pick(cfg, repo_id, &cached)) < 0)
		return rc;
	first = cached.type;
	table_free(&cached);
	for (i = 0; i < 2; i++) {
		type = i ? (first == KERNELS__REPO_KERNEL ? KERNELS__REPO_MODEL : KERNELS__REPO_KERNEL) : first;
		if (!(url = repo_url(cfg, type, repo_id)))
			return KERNELS_ENOMEM;
		rc = kernels__git_ls(cfg, url, &res);
		free(url);
		if (rc == 0) {
			t->type = type;
			rc = table_from_heads(t, res.heads, res.count);
			kernels__git_refs_free(&res);
			return rc;
		}
		if (rc == KERNELS_ENETWORK)
			return rc;
		if (rc == KERNELS_EHTTP && res.no_smart) {
			no_smart = 1;
			break;
		}
		/* The Hub answers 404 (or asks for credentials) when no kernel
		 * repo has this name: then try the model repo. */
		if (rc != KERNELS_EHTTP || (res.status != 404 && res.status != 401 && res.status != 403)) {
			if (rc == KERNELS_EHTTP)
				rc = kernels__error(KERNELS_EHTTP, "the Hub at %s answered HTTP %ld when listing the refs of %s "
						    "(%s); try again later", cfg->endpoint, res.status, repo_id,
						    kernels_error_last());
			return rc;
		}
		auth |= res.status == 401 || res.status == 403;
	}
	/* A 401/403 is the Hub asking for a token (a private or gated repo):
	 * git's answer stands. A 404 for both forms, or an answer that is not
	 * smart HTTP: the repo does not exist, or the endpoint (a mirror)
	 * serves only the REST API, which then lists the refs. */
	if (auth && !no_smart)
		return not_found_error(cfg, repo_id, 1);
	rc = table_from_rest(cfg, repo_id, t, &rest_status, &missing);
	if (rc == 0) {
		kernels__log(cfg, KERNELS_LOG_INFO, "%s serves no git smart HTTP for %s; listed its refs through "
			     "the REST API", cfg->endpoint, repo_id);
		return 0;
	}
	if (rc != KERNELS_ENOTFOUND)
		return rc;
	if (missing || rest_status == 401 || rest_status == 403)
		return not_found_error(cfg, repo_id, rest_status == 401 || rest_status == 403);
	return kernels__error(KERNELS_EHTTP,
			      "%s lists no refs for %s: it serves neither git smart HTTP (info/refs: %s) nor the "
			      "refs API (/api/{kernels,models}/%s/refs: HTTP %ld), as a mirror may not; through it only "
			      "full commit ids resolve. Pin a full commit id, or list the Hub after it in "
			      "KERNELS_ENDPOINTS (kernels_options.endpoints)", cfg->endpoint, repo_id,
			      no_smart ? "not a smart-HTTP answer" : "HTTP 404", repo_id,
			      rest_status);
}

/* table_from_remote at each endpoint in turn (a mirror, then the Hub),
 * under the call's one deadline. KERNELS_ENETWORK only when none could be
 * reached. */
static int table_from_endpoints(const kernels__config *cfg, const char *repo_id, table *t)
{
	kernels__config at;
	kernels__buf tried = { 0 };
	size_t i;
	int rc = 0;

	for (i = 0; i < cfg->n_endpoints; i++) {
		kernels__config_at_endpoint(cfg, i, &at);
		table_free(t);
		rc = table_from_remote(&at, repo_id, t);
		if (rc == 0 || !kernels__endpoint_failover(rc) || i + 1 == cfg->n_endpoints)
			break;
		kernels__log(cfg, KERNELS_LOG_INFO, "%s: %s; trying %s", at.endpoint, kernels_error_last(),
			     cfg->endpoints[i + 1]);
		kernels__buf_printf(&tried, "%s%s: %.300s", tried.len ? "; " : "", at.endpoint, kernels_error_last());
	}
	if (rc < 0 && tried.len)
		kernels__error_prefix("tried %s first", tried.ptr);
	kernels__buf_free(&tried);
	return rc;
}

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

static const entry *find_name(const table *t, const char *name, kernels_revision_kind kind)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (t->v[i].kind == kind && !strcmp(t->v[i].name, name))
			return &t->v[i];
	return NULL;
}

static const entry *find_exact(const table *t, const char *rev)
{
	const entry *e;
	size_t i;

	if ((e = find_name(t, rev, KERNELS_REVISION_BRANCH)) || (e = find_name(t, rev, KERNELS_REVISION_TAG)))
		return e;
	for (i = 0; i < t->n; i++)
		if (t->v[i].full && !strcmp(t->v[i].full, rev))
			return &t->v[i];
	return NULL;
}

static int set_result(kernels_revision *r, const entry *e, kernels_revision_kind kind)
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
		if (e->kind != KERNELS_REVISION_BRANCH || e->name[0] != 'v' || !all_digits(e->name + 1) ||
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
	if (!(e = find_name(t, name, KERNELS_REVISION_BRANCH))) {
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

static int is_hex(const char *s)
{
	for (; *s; s++)
		if (!isxdigit((unsigned char)*s))
			return 0;
	return 1;
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
		if (kernels__is_full_commit(d->d_name))
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
	if (!json_is_string(sha) || !kernels__is_full_commit(json_string_value(sha)) ||
	    strncasecmp(json_string_value(sha), lower, strlen(lower))) {
		json_decref(info);
		return kernels__error(KERNELS_EHTTP,
				      "the Hub's answer for short commit id '%s' of %s has no matching 'sha'; "
				      "pin the full commit id instead", lower, repo_id);
	}
	for (rc = 0; rc < 40; rc++)
		r->commit[rc] = (char)tolower((unsigned char)json_string_value(sha)[rc]);
	r->commit[40] = '\0';
	json_decref(info);
	r->kind = KERNELS_REVISION_SHORT_COMMIT;
	return 0;
}

static int resolve_short(const kernels__config *cfg, const char *repo_id, const char *rev, const table *t,
			 kernels_revision *r)
{
	char lower[41], found[2][41], w[600];
	size_t i, n = 0, len = strlen(rev);

	for (i = 0; i <= len; i++)
		lower[i] = (char)tolower((unsigned char)rev[i]);
	for (i = 0; i < t->n; i++)
		prefix_match(t->v[i].commit, lower, found, &n);
	if (t->from_cache)
		snapshot_matches(t, lower, found, &n);
	if (n > 1)
		return kernels__error(KERNELS_EAMBIGUOUS,
				      "short commit id '%s' is ambiguous in %s (%s, %s%s); give more digits or the full "
				      "40-hex commit id", lower, where(t, repo_id, w, sizeof(w)), found[0], found[1],
				      n > 2 ? ", ..." : "");
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

typedef struct {
	kernels__version *v;
	const char *name;
} tagver;

static int tagver_cmp(const void *a, const void *b)
{
	const tagver *x = a, *y = b;
	int c = kernels__version_compare(x->v, y->v);
	return c ? c : strcmp(x->name, y->name);
}

/* The table's "v" + version tags, parsed (skipping the rest), sorted. */
static int tag_versions(const table *t, tagver **out, size_t *count)
{
	tagver *v = t->n ? calloc(t->n, sizeof(*v)) : NULL;
	size_t i, n = 0;

	*out = NULL;
	*count = 0;
	if (t->n && !v)
		return kernels__error_oom();
	for (i = 0; i < t->n; i++) {
		const entry *e = &t->v[i];
		if (e->kind != KERNELS_REVISION_TAG || e->name[0] != 'v' || !(v[n].v = kernels__version_try_parse(e->name + 1)))
			continue;
		v[n++].name = e->name;
	}
	if (n)
		qsort(v, n, sizeof(*v), tagver_cmp);
	*out = v;
	*count = n;
	return 0;
}

static void tagvers_free(tagver *v, size_t n)
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
	tagver *tags;
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
		memcpy(e.commit, find_name(t, tags[best].name, KERNELS_REVISION_TAG)->commit, 41);
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
	tagvers_free(tags, n);
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
		if (all_digits(rev) && len <= MAJOR_DIGITS_MAX)
			kernels__log(cfg, KERNELS_LOG_WARNING, "%s: revision '%s' is the %s of that name (as Python kernels "
				     "reads it), not version %s (the branch v%s); pass \"v%s\" for the branch", repo_id, rev,
				     e->kind == KERNELS_REVISION_TAG ? "tag" : "branch", rev, rev, rev);
		return set_result(r, e, e->kind);
	}
	if (all_digits(rev) && len <= MAJOR_DIGITS_MAX)
		return resolve_major(cfg, repo_id, rev, t, r);
	if (len >= SHORT_COMMIT_MIN && len < 40 && is_hex(rev))
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
					      "revision has a control character (0x%02x) at offset %zu; pass the branch, "
					      "tag, commit or version as printable text", (unsigned char)*p,
					      (size_t)(p - revision));
	if (strstr(revision, ".."))
		return kernels__error(KERNELS_EINVAL, "revision '%s' contains '..', which no branch, tag, commit or "
				      "version does", revision);
	return 0;
}

/* After an online answer: refs/{name} = commit, as huggingface_hub does.
 * A cache that cannot be written only costs the offline answer later. */
static void record(const kernels__config *cfg, const kernels_revision *r)
{
	char *dir;

	if (!r->ref || kernels__ref_name_check(r->ref) < 0) {
		kernels_error_clear();
		return;
	}
	if (!(dir = kernels__cache_repo_dir(cfg, r->type, r->repo_id)))
		return;
	if (kernels__refs_write(dir, r->ref, r->commit) < 0)
		kernels__log(cfg, KERNELS_LOG_WARNING, "could not record %s of %s in the cache: %s", r->ref, r->repo_id,
			     kernels_error_last());
	kernels_error_clear();
	free(dir);
}

/* Why the call runs from the cache, and the code a miss becomes:
 * KERNELS_EOFFLINE when the caller asked for offline, KERNELS_ENETWORK when
 * get.c runs it offline because the Hub cannot be reached. */
static int offline_why(const kernels__config *cfg, const char **why)
{
	*why = cfg->offline_why ? cfg->offline_why : "offline (HF_HUB_OFFLINE or kernels_options.offline)";
	return cfg->offline_why ? KERNELS_ENETWORK : KERNELS_EOFFLINE;
}

/* Answers from the cache's refs/ (offline). */
static int resolve_cached(const kernels__config *cfg, const char *repo_id, const char *rev, kernels_revision *r)
{
	const char *why;
	int code = offline_why(cfg, &why);
	const char *todo = code == KERNELS_EOFFLINE
		? "resolve it once online (unset HF_HUB_OFFLINE) so it is recorded, or pin a full commit id"
		: "check the network connection, HF_ENDPOINT and proxy settings, or pin a full commit id";
	char inner[1024];
	table t = { 0 };
	int rc;

	if ((rc = cache_pick(cfg, repo_id, &t)) < 0)
		return rc;
	if (rc == 0) {
		rc = kernels__error(code, "%s, and %s is not in the cache at %s; %s", why, repo_id, cfg->cache_dir, todo);
		goto out;
	}
	if ((rc = table_from_cache(&t)) < 0)
		goto out;
	rc = resolve_in(cfg, repo_id, rev, &t, r);
	if (rc == KERNELS_ENOTFOUND || rc == KERNELS_ENOMATCH) {
		snprintf(inner, sizeof(inner), "%s", kernels_error_last());
		rc = kernels__error(code, "%s, and the cache cannot answer '%s': %s; %s", why, rev, inner, todo);
	}
	if (rc == 0) {
		r->type = t.type;
		r->from_cache = 1;
	}
out:
	table_free(&t);
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
	int rc, i;

	if (!out)
		return kernels__error(KERNELS_EINVAL, "kernels_revision_resolve: out is NULL");
	*out = NULL;
	if ((rc = kernels__repo_id_check(repo_id)) < 0 || (rc = kernels__revision_check(revision)) < 0)
		return rc;
	if (!(r = revision_new(repo_id)))
		return KERNELS_ENOMEM;

	if (kernels__is_full_commit(revision)) {
		for (i = 0; i < 40; i++)
			r->commit[i] = (char)tolower((unsigned char)revision[i]);
		r->kind = KERNELS_REVISION_COMMIT;
		if ((rc = cache_pick(cfg, repo_id, &t)) >= 0) {
			r->type = t.type;
			rc = 0;
		}
	} else if (cfg->offline) {
		rc = resolve_cached(cfg, repo_id, revision, r);
	} else if ((rc = table_from_endpoints(cfg, repo_id, &t)) == 0) {
		r->type = t.type;
		if ((rc = resolve_in(cfg, repo_id, revision, &t, r)) == 0)
			record(cfg, r);
	}
	table_free(&t);
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

kernels_revision_kind kernels_revision_kind_of(const kernels_revision *r)
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

/* ---- versions ---- */

typedef struct {
	kernels__version *v;
	const char *name;
} named_version;

static int named_cmp(const void *a, const void *b)
{
	const named_version *x = a, *y = b;
	int c = kernels__version_compare(x->v, y->v);
	return c ? c : strcmp(x->name, y->name);
}

/* vN branches and v+version tags of `t`, sorted, each name once. */
static int versions_from(const table *t, char ***versions, size_t *count)
{
	named_version *v = t->n ? calloc(t->n, sizeof(*v)) : NULL;
	char **names = NULL;
	size_t i, n = 0, k = 0;
	int rc = 0;

	if (t->n && !v)
		return kernels__error_oom();
	for (i = 0; i < t->n; i++) {
		const entry *e = &t->v[i];
		int major = e->kind == KERNELS_REVISION_BRANCH && e->name[0] == 'v' && all_digits(e->name + 1);
		int tag = e->kind == KERNELS_REVISION_TAG && e->name[0] == 'v';
		if (!major && !tag)
			continue;
		if ((v[n].v = kernels__version_try_parse(e->name + 1)))
			v[n++].name = e->name;
	}
	if (n) {
		qsort(v, n, sizeof(*v), named_cmp);
		if (!(names = calloc(n, sizeof(*names))))
			rc = kernels__error_oom();
	}
	for (i = 0; rc == 0 && i < n; i++) {
		if (k && !strcmp(names[k - 1], v[i].name))
			continue;
		if (!(names[k++] = kernels__strdup(v[i].name)))
			rc = KERNELS_ENOMEM;
	}
	for (i = 0; i < n; i++)
		kernels__version_free(v[i].v);
	free(v);
	if (rc < 0) {
		kernels_strings_free(names, k);
		return rc;
	}
	*versions = k ? names : NULL;
	if (!k)
		free(names);
	*count = k;
	return 0;
}

static int versions_cached(const kernels__config *cfg, const char *repo_id, table *t)
{
	const char *why;
	int code = offline_why(cfg, &why);
	int rc = cache_pick(cfg, repo_id, t);

	if (rc < 0)
		return rc;
	if (rc == 0)
		return kernels__error(code, "%s, and %s is not in the cache at %s; %s", why, repo_id, cfg->cache_dir,
				      code == KERNELS_EOFFLINE ? "list its versions once online (unset HF_HUB_OFFLINE)"
							       : "check the network connection, HF_ENDPOINT and proxy settings");
	return table_from_cache(t);
}

int kernels__versions_list(const kernels__config *cfg, const char *repo_id, char ***versions, size_t *count)
{
	table t = { 0 };
	int rc;

	if (!versions || !count)
		return kernels__error(KERNELS_EINVAL, "kernels_versions_list: versions or count is NULL");
	*versions = NULL;
	*count = 0;
	if ((rc = kernels__repo_id_check(repo_id)) < 0)
		return rc;
	rc = cfg->offline ? versions_cached(cfg, repo_id, &t) : table_from_endpoints(cfg, repo_id, &t);
	if (rc == 0)
		rc = versions_from(&t, versions, count);
	table_free(&t);
	return rc;
}
