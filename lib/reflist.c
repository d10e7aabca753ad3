/* The refs a revision is matched against (reflist.h): the git remote's
 * advertisement through libgit2 (one GET of info/refs, no clone, carried by
 * the Hub client: gitls.c), the REST listing /api/{kernels,models}/{repo}/refs
 * when git does not settle a form (a mirror without git, a model repo not
 * yet known as one), or the cache's refs/ folder offline. */
#include "reflist.h"
#include "cache.h"
#include "error.h"
#include "gitls.h"
#include "hub.h"
#include "refs.h"
#include "specifier.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef kernels__ref_entry entry;
typedef kernels__reflist table;

void kernels__reflist_free(table *t)
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

static int table_add(table *t, const char *name, const char *full, const char *commit, kernels_revision_kind_t kind)
{
	entry *e;

	if (KERNELS__ARRAY_GROW(t->v, t->cap, t->n) < 0)
		return KERNELS_ENOMEM;
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
			if (t->v[k].full && strlen(t->v[k].full) == len - 3 &&
			    !strncmp(t->v[k].full, heads[i].name, len - 3))
				memcpy(t->v[k].commit, heads[i].commit, 41);
	}
	return 0;
}

/* The cache does not say branch or tag: "v" + a dotted version is a tag
 * (the seed era's vX.Y.Z), anything else a branch (main, vN). */
static kernels_revision_kind_t guess_kind(const char *name)
{
	kernels__version *v;

	if (name[0] != 'v' || !strchr(name, '.') || !(v = kernels__version_try_parse(name + 1)))
		return KERNELS_REVISION_BRANCH;
	kernels__version_free(v);
	return KERNELS_REVISION_TAG;
}

int kernels__reflist_cache_pick(const kernels__config *cfg, const char *repo_id, table *t)
{
	int rc = kernels__cache_repo_type(cfg, repo_id, &t->type);

	if (rc > 0 && !(t->repo_dir = kernels__cache_repo_dir(cfg, t->type, repo_id)))
		return KERNELS_ENOMEM;
	return rc;
}

static int read_cache(table *t)
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
static int table_from_rest_list(table *t, json_t *list, kernels_revision_kind_t kind, const char *where)
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

		if (!name || !commit || !kernels__is_commit(commit, KERNELS__HEX_ANY_CASE))
			return kernels__error(KERNELS_EPARSE,
					      "%s: an entry has no \"name\" or no 40-hex \"targetCommit\"; "
					      "check the endpoint", where);
		if (kernels__ref_name_check(name) < 0) {
			kernels_error_clear();      /* a name git would refuse: never asked for */
			continue;
		}
		kernels__hex_lower(commit, 40, lower);
		if ((rc = table_add(t, name, ref, lower, kind)) < 0)
			return rc;
	}
	return 0;
}

/* What the answers so far say about one form (kernel or model) of a repo. */
typedef enum { FORM_UNKNOWN, FORM_FOUND, FORM_ABSENT, FORM_AUTH } form_state;

/* One search for a repo's refs on one endpoint. */
typedef struct {
	const kernels__config *cfg;
	const char *repo_id;
	table *t;
	int no_smart;      /* git answered 200 with something that is not smart HTTP */
	long git_status;   /* the last info/refs status that was not 200 */
	long rest_status;  /* the last REST listing's status; 0: not asked */
} search;

/* GET /api/{kernels,models}/{repo}/refs of one form, as huggingface_hub's
 * list_repo_refs reads it: `t` filled (FOUND), or what the answer says. */
static int rest_form(search *s, kernels__repo_type type, form_state *st)
{
	kernels__hub_response r;
	char *path, where[400];
	json_t *doc;
	int rc;

	if (!(path = kernels__sprintf("/api/%s/%s/refs", kernels__repo_api_name(type), s->repo_id)))
		return KERNELS_ENOMEM;
	snprintf(where, sizeof(where), "%s%s", s->cfg->endpoint, path);
	rc = kernels__hub_request(s->cfg, path, 0, &r);
	free(path);
	if (rc < 0)
		return rc;
	s->rest_status = r.status;
	if (r.status != 200) {
		/* The Hub's own RepoNotFound is final; a bare 404 is an endpoint
		 * without the listing. */
		if (r.status == 401 || r.status == 403)
			*st = FORM_AUTH;
		else if (r.status == 404 && r.error_code && !strcmp(r.error_code, "RepoNotFound"))
			*st = FORM_ABSENT;
		kernels__hub_response_free(&r);
		return 0;
	}
	doc = json_loadb(r.body ? r.body : "", r.body_len, 0, NULL);
	kernels__hub_response_free(&r);
	if (!json_is_object(doc)) {
		json_decref(doc);
		return kernels__error(KERNELS_EPARSE, "%s is not a JSON object; check the endpoint", where);
	}
	s->t->type = type;
	rc = table_from_rest_list(s->t, json_object_get(doc, "branches"), KERNELS_REVISION_BRANCH, where);
	if (rc == 0)
		rc = table_from_rest_list(s->t, json_object_get(doc, "tags"), KERNELS_REVISION_TAG, where);
	json_decref(doc);
	*st = FORM_FOUND;
	return rc;
}

/* One form's git advertisement: `t` filled (FOUND), AUTH, or UNKNOWN with
 * *rnf set when the 404 carried the Hub's RepoNotFound. */
static int git_form(search *s, kernels__repo_type type, form_state *st, int *rnf)
{
	kernels__git_refs res;
	char *url = repo_url(s->cfg, type, s->repo_id);
	int rc;

	if (!url)
		return KERNELS_ENOMEM;
	rc = kernels__git_ls(s->cfg, url, &res);
	free(url);
	if (rc == 0) {
		s->t->type = type;
		rc = table_from_heads(s->t, res.heads, res.count);
		kernels__git_refs_free(&res);
		*st = FORM_FOUND;
		return rc;
	}
	if (rc == KERNELS_EHTTP && res.no_smart) {
		s->no_smart = 1;
		return 0;
	}
	if (rc != KERNELS_EHTTP || (res.status != 404 && res.status != 401 && res.status != 403)) {
		if (rc == KERNELS_EHTTP && kernels__error_unserved())
			return rc;   /* remembered as not serving: said so already */
		if (rc == KERNELS_EHTTP)
			rc = kernels__error(KERNELS_EHTTP, "the Hub at %s answered HTTP %ld when listing the refs of "
					    "%s (%s); try again later", s->cfg->endpoint, res.status, s->repo_id,
					    kernels_error_last());
		/* A 5xx or 429 here outlived hub.c's retries: not serving. */
		if (rc == KERNELS_EHTTP && kernels__hub_transient_status(res.status))
			kernels__error_mark_unserved(res.status);
		return rc;
	}
	s->git_status = res.status;
	*rnf = res.status == 404 && res.repo_not_found;
	if (res.status != 404)
		*st = FORM_AUTH;  /* a private or gated repo: git's answer stands */
	return 0;
}

/* Settles one form with as few requests as what each answer proves allows.
 * git's 404 RepoNotFound proves a kernel repo absent (mirrors serve kernel
 * repos through git or not at all) but not a model repo: olah answers git
 * that way for a model repo it serves only through the REST listing, whose
 * RepoNotFound is final everywhere. So the model form, when not the one the
 * cache expects, is asked of the REST listing first: a repo the Hub does
 * not have then costs two requests, one per form. */
static int settle(search *s, kernels__repo_type type, int expected, form_state *st)
{
	int rc, rnf = 0, rest_first = type == KERNELS__REPO_MODEL && !expected;

	*st = FORM_UNKNOWN;
	if (!rest_first && !s->no_smart) {
		if ((rc = git_form(s, type, st, &rnf)) < 0 || *st != FORM_UNKNOWN)
			return rc;
		if (rnf && type == KERNELS__REPO_KERNEL) {
			*st = FORM_ABSENT;
			return 0;
		}
	}
	if ((rc = rest_form(s, type, st)) < 0 || *st != FORM_UNKNOWN) {
		if (rc == 0 && *st == FORM_FOUND && !rest_first)
			kernels__log(s->cfg, KERNELS_LOG_INFO, "%s serves no git smart HTTP for %s; listed its refs "
				     "through the REST API", s->cfg->endpoint, s->repo_id);
		return rc;
	}
	if (rest_first && !s->no_smart && ((rc = git_form(s, type, st, &rnf)) < 0 || *st != FORM_UNKNOWN))
		return rc;
	/* An endpoint without the REST listing: git's own RepoNotFound is its word. */
	if (rnf && s->rest_status == 404)
		*st = FORM_ABSENT;
	return 0;
}

/* The repo exists nowhere we may read (both forms said so): which of
 * "needs a token", "token refused", "not found". */
static int not_found_error(const kernels__config *cfg, const char *repo_id, int auth)
{
	if (auth && cfg->token)
		return kernels__error(KERNELS_EAUTH,
				      "the Hub at %s refused the token for %s (HTTP 401/403): check that HF_TOKEN "
				      "(or kernels_options.token) is valid and has read access to the repo (for a "
				      "gated repo, request access on its Hub page)", cfg->endpoint, repo_id);
	if (auth)
		return kernels__error(KERNELS_EAUTH,
				      "%s needs authentication (a private or gated repo on %s): set HF_TOKEN (or "
				      "kernels_options.token, or log in with `hf auth login`) to a token with read "
				      "access", repo_id, cfg->endpoint);
	return kernels__error(KERNELS_ENOTFOUND,
			      "repository %s not found on %s: neither a kernel repo (%s/kernels/%s) nor a "
			      "model repo (%s/%s); check the name%s", repo_id, cfg->endpoint, cfg->endpoint, repo_id,
			      cfg->endpoint, repo_id, cfg->token ? "" : ", and set HF_TOKEN if it is private");
}

/* Fills `t` from the Hub: the form the cache expects first (kernel when it
 * knows nothing), then the other, each settled by settle(). KERNELS_ENETWORK
 * means "unreachable", the error saying why (get.c decides whether the cache
 * answers instead). */
static int table_from_remote(const kernels__config *cfg, const char *repo_id, table *t)
{
	search s = { .cfg = cfg, .repo_id = repo_id, .t = t };
	form_state st[2];
	kernels__repo_type type, first;
	table cached = { 0 };
	int i, rc;

	if (cfg->token && strpbrk(cfg->token, "\r\n"))
		return kernels__error(KERNELS_EINVAL,
				      "the Hub token contains a line break; fix HF_TOKEN or the token file");
	/* A repo the cache knows as a model repo is asked for as one first:
	 * a warm call then costs one request, not a 404 and then the answer. */
	if ((rc = kernels__reflist_cache_pick(cfg, repo_id, &cached)) < 0)
		return rc;
	first = cached.type;
	kernels__reflist_free(&cached);
	for (i = 0; i < 2; i++) {
		type = i ? (first == KERNELS__REPO_KERNEL ? KERNELS__REPO_MODEL : KERNELS__REPO_KERNEL) : first;
		if ((rc = settle(&s, type, i == 0, &st[i])) < 0 || st[i] == FORM_FOUND)
			return rc;
	}
	if (st[0] == FORM_AUTH || st[1] == FORM_AUTH || (st[0] == FORM_ABSENT && st[1] == FORM_ABSENT))
		return not_found_error(cfg, repo_id, st[0] == FORM_AUTH || st[1] == FORM_AUTH);
	return kernels__error(KERNELS_EHTTP,
			      "%s lists no refs for %s: it serves neither git smart HTTP (info/refs: %s) nor the "
			      "refs API (/api/{kernels,models}/%s/refs: HTTP %ld), as a mirror may not; through it "
			      "only full commit ids resolve. Pin a full commit id, or list the Hub after it in "
			      "KERNELS_ENDPOINTS (kernels_options.endpoints)", cfg->endpoint, repo_id,
			      s.no_smart ? "not a smart-HTTP answer" : "HTTP 404", repo_id, s.rest_status);
}

int kernels__reflist_remote(const kernels__config *cfg, const char *repo_id, table *t)
{
	kernels__config at;
	kernels__endpoint_try try_;
	kernels__endpoint_failures failed = { .n = 0 };
	size_t i;
	int rc = 0;

	/* A caller walking the endpoints itself (get.c) asks this one alone. */
	if (cfg->endpoint_pinned) {
		kernels__reflist_free(t);
		return table_from_remote(cfg, repo_id, t);
	}
	for (i = 0; i < cfg->n_endpoints; i++) {
		kernels__endpoint_try_begin(cfg, i, &at, &try_);
		kernels__reflist_free(t);
		if ((rc = table_from_remote(&at, repo_id, t)) < 0)
			kernels__endpoint_failed(&failed, at.endpoint, kernels_error_last());
		if (rc == 0 || !kernels__endpoint_failover(rc) || i + 1 == cfg->n_endpoints)
			break;
		kernels__log(cfg, KERNELS_LOG_INFO, "%s: %s; trying %s", at.endpoint, kernels_error_last(),
			     cfg->endpoints[i + 1]);
	}
	return rc < 0 ? kernels__endpoint_failures_raise(&failed, rc) : rc;
}

int kernels__reflist_cached(const kernels__config *cfg, const char *repo_id, table *t)
{
	int rc = kernels__reflist_cache_pick(cfg, repo_id, t);

	if (rc <= 0)
		return rc;
	return (rc = read_cache(t)) < 0 ? rc : 1;
}

const entry *kernels__reflist_find(const table *t, const char *name, kernels_revision_kind_t kind)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (t->v[i].kind == kind && !strcmp(t->v[i].name, name))
			return &t->v[i];
	return NULL;
}

int kernels__reflist_offline_why(const kernels__config *cfg, const char **why)
{
	*why = cfg->offline_why ? cfg->offline_why : kernels__config_offline_said(cfg);
	if (!cfg->offline_why)
		return KERNELS_EOFFLINE;
	return cfg->offline_code ? cfg->offline_code : KERNELS_ENETWORK;
}
