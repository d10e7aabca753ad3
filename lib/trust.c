/* Publisher trust, as the current Python client checks it: a kernel is
 * native code from the internet, so only repos whose org the Hub marks as a
 * trusted kernel publisher load, unless the caller opted in.
 *
 * The Hub's verdict is recorded in the repo's cache folder
 * (.libkernels/trust.json: publisher, verdict, time, endpoint). Offline, or
 * with the Hub unreachable, only a "trusted" record younger than
 * KERNELS__TRUST_MAX_AGE stands in for the check (from whichever endpoint
 * served the cache's files: offline there is no other to ask); without one
 * (a repo another tool fetched, an old or foreign record) the caller must
 * opt in exactly as online. The record never overrides the caller: an
 * opt-in loads whatever it says. */
#include "trust.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "config.h"
#include "kernels/cache.h"
#include "error.h"
#include "hub.h"
#include "util.h"

#define RECORD_MAX (64 * 1024)

/* An allowlist entry is an org ("acme") or a repo id ("acme/relu"),
 * separated by commas, blanks around them ignored. */
static int allowlisted(const char *list, const char *repo_id)
{
	size_t org_len = strcspn(repo_id, "/"), id_len = strlen(repo_id);

	while (list && *list) {
		size_t n = strcspn(list, ",");
		const char *e = list, *end = list + n;

		while (e < end && *e == ' ')
			e++;
		while (end > e && end[-1] == ' ')
			end--;
		if (((size_t)(end - e) == id_len && !strncmp(e, repo_id, id_len)) ||
		    ((size_t)(end - e) == org_len && !strncmp(e, repo_id, org_len)))
			return 1;
		list += n + (list[n] == ',');
	}
	return 0;
}

static char *record_path(const kernels__config *cfg, kernels__repo_type type, const char *repo_id)
{
	char *dir = kernels__cache_repo_dir(cfg, type, repo_id);
	char *path = dir ? kernels__sprintf("%s/" KERNELS__TRUST_RECORD, dir) : NULL;

	free(dir);
	return path;
}

/* Best effort: a cache we may not write (shared, read-only) only means the
 * next offline load needs the opt-in. Written whole or not at all, flushed
 * before its rename. An "untrusted" verdict's rename is flushed too, so no
 * crash can bring back an older "trusted" record in its place; a "trusted"
 * one lost in a crash only costs the next offline load the opt-in, so the
 * cold path skips that journal commit, and with `later` its flush and
 * rename go on beside the call's next stages (the caller joins them): the
 * call itself never reads the record again. An "untrusted" verdict ends
 * the call: written here and now. */
static void record_write(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			 const char *org, int trusted, kernels__write_later **later)
{
	char *path = record_path(cfg, type, repo_id), *text = NULL, *dir = kernels__cache_repo_dir(cfg, type, repo_id);
	json_t *doc = json_pack("{s:s, s:s, s:I, s:s}", "publisher", org, "verdict", trusted ? "trusted" : "untrusted",
				"checked_at", (json_int_t)time(NULL), "endpoint", cfg->endpoint);

	if (path && dir && doc && kernels__cache_guard(cfg, type, repo_id) == 0 &&
	    (text = json_dumps(doc, JSON_SORT_KEYS)) &&
	    (trusted ? kernels__cache_write_later(later, dir, path, text, strlen(text), KERNELS__WRITE_FLUSHED,
						  "the trust verdict record")
		     : kernels__cache_write(dir, path, text, strlen(text), KERNELS__WRITE_DURABLE)) < 0)
		kernels__log(cfg, KERNELS_LOG_DEBUG, "cannot record the trust verdict for %s in %s: %s", repo_id, path,
			     kernels_error_last());
	kernels_error_clear();
	free(text);
	json_decref(doc);
	free(path);
	free(dir);
}

/* 1 when the cache holds a "trusted" verdict for this repo, younger than
 * the expiry; -1 when the Hub's recorded verdict is "untrusted"; 0 when
 * there is no usable record (none, malformed, too old). Why: in `why`. */
static int record_trusted(const kernels__config *cfg, kernels__repo_type type, const char *repo_id, const char *org,
			  long long max_age, char *why, size_t why_size)
{
	char *path = record_path(cfg, type, repo_id);
	json_t *doc = NULL;
	json_error_t jerr;
	struct stat st;
	int ok = 0;

	snprintf(why, why_size, "no record of a publisher check is in the cache (fetched by another tool, "
		 "or before libkernels kept records)");
	if (path && stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < RECORD_MAX &&
	    (doc = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr)) && json_is_object(doc)) {
		const char *verdict = json_string_value(json_object_get(doc, "verdict"));
		const char *publisher = json_string_value(json_object_get(doc, "publisher"));
		const char *endpoint = json_string_value(json_object_get(doc, "endpoint"));
		json_t *at = json_object_get(doc, "checked_at");
		/* before 1970: no check was made then, and its age need not fit */
		long long age = json_is_integer(at) && json_integer_value(at) >= 0
					? (long long)time(NULL) - (long long)json_integer_value(at) : -1;

		if (!verdict || !publisher || !endpoint || age < 0)
			snprintf(why, why_size, "the cache's trust record %s is malformed", path);
		else if (strcmp(verdict, "trusted") || strcmp(publisher, org)) {
			snprintf(why, why_size, "the Hub did not mark '%s' as a trusted publisher when it was last "
				 "asked", org);
			ok = -1;
		} else if (age > max_age)
			snprintf(why, why_size, "the Hub's verdict in the cache is %lld days old (older than %lld "
				 "days)", age / 86400, max_age / 86400);
		else
			ok = 1;
	}
	json_decref(doc);
	free(path);
	return ok;
}

static int untrusted(const char *repo_id, const char *why)
{
	return kernels__error(KERNELS_EUNTRUSTED,
			      "kernel repository '%s' %s; native code from it would run in this process. Set "
			      "options.trust_remote_code = 1, or list the repo or its org in options.trusted_orgs, to "
			      "load kernels from publishers the Hub does not mark as trusted", repo_id, why);
}

/* Nothing of the repo cached: that, not trust, is what the caller must
 * fix (and what a cache-only load reports). */
static int cached_at_all(const kernels__config *cfg, kernels__repo_type type, const char *repo_id)
{
	char *dir = kernels__cache_repo_dir(cfg, type, repo_id);
	char *snap = dir ? kernels__sprintf("%s/snapshots", dir) : NULL;
	struct stat st;
	int yes = snap && stat(snap, &st) == 0 && S_ISDIR(st.st_mode);

	free(snap);
	free(dir);
	return yes;
}

static int check_offline(const kernels__config *cfg, kernels__repo_type type, const char *repo_id, const char *org)
{
	char why[512], text[640];
	int known;

	if (!cached_at_all(cfg, type, repo_id))
		return kernels__error(KERNELS_EOFFLINE, "offline: nothing of %s is in the cache (%s); fetch it while "
				      "online (%s), or download the locked project first", repo_id, cfg->cache_dir,
				      kernels__config_online_hint(cfg));
	if ((known = record_trusted(cfg, type, repo_id, org, KERNELS__TRUST_MAX_AGE, why, sizeof(why))) > 0)
		return 0;
	if (known < 0) {
		snprintf(text, sizeof(text), "cannot be checked for a trusted publisher now (the Hub is not asked: "
			 "offline or unreachable) and %s", why);
		return untrusted(repo_id, text);
	}
	/* The one step for a cache Python kernels (or an old record) filled:
	 * the Hub's verdict, asked once online, stands in offline. */
	return kernels__error(KERNELS_EUNTRUSTED,
			      "kernel repository '%s' cannot be checked for a trusted publisher now (the Hub is not "
			      "asked: offline or unreachable) and %s. Run 'libkernels trust %s' once while online "
			      "(kernels_cache_trust): it records the Hub's verdict in the cache, and offline loads "
			      "then use it", repo_id, why, repo_id);
}

/* Asks one endpoint. 0 with *status and *trusted when it answered. */
static int ask(const kernels__config *cfg, const char *org, long *status, int *trusted)
{
	kernels__hub_response r = { 0 };
	char *path = kernels__sprintf("/api/organizations/%s/overview", org);
	json_t *doc = NULL;
	int rc;

	*status = 0;
	*trusted = 0;
	rc = path ? kernels__hub_request(cfg, path, 0, &r) : KERNELS_ENOMEM; /* sprintf set the message */
	/* A 5xx or 429 that outlived the retries is no verdict: the Hub is
	 * not serving (get.c answers from the cache, as when unreachable). */
	if (rc == 0 && kernels__hub_transient_status(r.status))
		rc = kernels__hub_status_error(&r, path);
	if (rc == 0) {
		*status = r.status;
		/* An overview lacking the flag is a publisher not marked trusted, as
		 * for Python kernels; an answer that is no JSON object is no verdict. */
		if (r.status == 200 && r.body && (doc = json_loadb(r.body, r.body_len, 0, NULL)) && json_is_object(doc))
			*trusted = json_is_true(json_object_get(doc, "trustedKernelPublisher"));
		else if (r.status == 200)
			*status = -1; /* an answer that is not the overview */
	}
	json_decref(doc);
	kernels__hub_response_free(&r);
	free(path);
	return rc;
}

/* The endpoint in use first; when it has no organization API (a mirror
 * answering 401/404), the others of the list in turn: the Hub behind the
 * mirror knows the publisher. */
static int check_online(const kernels__config *cfg, kernels__repo_type type, const char *repo_id, const char *org,
			int *recorded, kernels__write_later **later)
{
	kernels__config at;
	char why[512];
	long status = 0;
	size_t i;
	int rc, trusted = 0;

	/* A "trusted" verdict this young is not asked again: a warm call costs
	 * the refs listing alone. */
	if (record_trusted(cfg, type, repo_id, org, KERNELS__TRUST_FRESH, why, sizeof(why)) > 0)
		return *recorded = 1, 0;
	rc = ask(cfg, org, &status, &trusted);
	for (i = 0; rc == 0 && status != 200 && i < cfg->n_endpoints; i++) {
		if (!strcmp(cfg->endpoints[i], cfg->endpoint))
			continue;
		kernels__config_at_endpoint(cfg, i, &at);
		if (ask(&at, org, &status, &trusted) < 0)
			kernels_error_clear(); /* that one is down: the first answer stands */
		else if (status == 200)
			cfg = &at;
	}
	if (rc == 0 && status == 200)
		record_write(cfg, type, repo_id, org, trusted, later);
	*recorded = rc == 0 && status == 200;
	/* Unreachable (KERNELS_ENETWORK), or not serving (a 5xx or 429), is
	 * not "untrusted": the caller may then answer from the cache, where
	 * the record decides. */
	if (rc < 0 || trusted)
		return rc;
	if (status == 200)
		snprintf(why, sizeof(why), "is not from a trusted publisher ('%s' is not marked as one)", org);
	else if (status == -1)
		snprintf(why, sizeof(why), "is from a publisher whose trust status could not be verified (what %s "
			 "answered for '%s' is not an organization overview; check HF_ENDPOINT and any proxy)",
			 cfg->endpoint, org);
	else if (status == 404 || status == 401)
		snprintf(why, sizeof(why), "exists, but %s has no publisher information for '%s' (a mirror without "
			 "the organization API?), so its trust cannot be verified", cfg->endpoint, org);
	else
		snprintf(why, sizeof(why), "is from a publisher whose trust status could not be verified (the "
			 "Hub answered HTTP %ld for '%s')", status, org);
	return untrusted(repo_id, why);
}

int kernels__trust_check(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			 kernels__write_later **later)
{
	char *org;
	int rc, recorded;

	if (cfg->trust_remote_code || allowlisted(cfg->trusted_orgs, repo_id))
		return 0;
	if (!(org = strndup(repo_id, strcspn(repo_id, "/"))))
		return kernels__error_oom();
	rc = cfg->offline ? check_offline(cfg, type, repo_id, org)
			  : check_online(cfg, type, repo_id, org, &recorded, later);
	free(org);
	return rc;
}

/* ---- recording trust for a cache another client filled ----------------- */

/* The repos kernels_cache_trust could not call trusted: those the Hub
 * answered for (recorded) apart from those no endpoint gave a verdict for
 * (a mirror without the organization API: nothing recorded). */
typedef struct {
	kernels__buf untrusted, unverified;
	size_t n_untrusted, n_unverified;
	char first_why[1024]; /* why the first unverified one was */
} trust_tally;

/* One cached repo: the Hub asked (check_online records its answer). */
static int trust_one(const kernels__config *cfg, const kernels_cache_repo *r, trust_tally *t)
{
	kernels__repo_type type = r->is_model ? KERNELS__REPO_MODEL : KERNELS__REPO_KERNEL;
	char *org = strndup(r->repo_id, strcspn(r->repo_id, "/"));
	int rc, recorded = 0;

	if (!org)
		return kernels__error_oom();
	rc = check_online(cfg, type, r->repo_id, org, &recorded, NULL);
	free(org);
	kernels__log(cfg, KERNELS_LOG_INFO, "%s: %s", r->repo_id, rc == 0 ? "trusted publisher, recorded"
		     : rc == KERNELS_EUNTRUSTED && recorded ? "not from a trusted publisher, recorded" : kernels_error_last());
	if (rc == KERNELS_EUNTRUSTED && recorded) {
		t->n_untrusted++;
		kernels__buf_printf(&t->untrusted, "%s%s", t->untrusted.ptr ? ", " : "", r->repo_id);
	} else if (rc == KERNELS_EUNTRUSTED) {
		if (!t->n_unverified++)
			snprintf(t->first_why, sizeof(t->first_why), "%s", kernels_error_last());
		kernels__buf_printf(&t->unverified, "%s%s", t->unverified.ptr ? ", " : "", r->repo_id);
	}
	return rc;
}

static int trust_report(const trust_tally *t)
{
	char recorded[1024] = "";

	if (t->n_untrusted)
		snprintf(recorded, sizeof(recorded), "%zu cached repo%s not from a publisher the Hub marks as "
			 "trusted (%s): recorded as such, so offline loads of %s still need options.trust_remote_code "
			 "or options.trusted_orgs%s", t->n_untrusted, t->n_untrusted == 1 ? " is" : "s are",
			 t->untrusted.ptr, t->n_untrusted == 1 ? "it" : "them", t->n_unverified ? "; " : "");
	if (!t->n_unverified)
		return kernels__error(KERNELS_EUNTRUSTED, "%s", recorded);
	return kernels__error(KERNELS_EUNTRUSTED, "%s%zu cached repo%s (%s) got no verdict, so nothing was "
			      "recorded for %s: list an endpoint with the organization API (the Hub) after the mirror "
			      "in KERNELS_ENDPOINTS and run it again (the first: %s)", recorded, t->n_unverified,
			      t->n_unverified == 1 ? "" : "s", t->unverified.ptr, t->n_unverified == 1 ? "it" : "them",
			      t->first_why);
}

/* Asks the Hub about `repo_id` (NULL: every cached repo), tallying the
 * verdicts: 0, KERNELS_EUNTRUSTED with trust_report's message, or the
 * failure that stopped it. */
static int trust_cached(const kernels__config *cfg, const char *repo_id, const kernels_options *opts,
			trust_tally *t)
{
	kernels_cache_info *info = NULL;
	size_t i;
	int rc = 0;

	if (cfg->offline)
		rc = kernels__error(KERNELS_EOFFLINE, "offline: recording trust asks the Hub for each publisher; run "
				    "it while online (%s)", kernels__config_online_hint(cfg));
	if (rc == 0)
		rc = kernels_cache_scan(&info, repo_id, opts);
	if (rc == 0 && repo_id && info->repos_count == 0)
		rc = kernels__error(KERNELS_ENOTFOUND, "%s is not in the cache at %s; nothing to record trust for",
				    repo_id, info->cache_dir);
	for (i = 0; rc == 0 && info && i < info->repos_count; i++) {
		int one = trust_one(cfg, &info->repos[i], t);
		if (one != KERNELS_EUNTRUSTED) /* untrusted: the others are still asked */
			rc = one;
	}
	if (rc == 0 && (t->n_untrusted || t->n_unverified))
		rc = trust_report(t);
	kernels_cache_info_free(info);
	return rc;
}

/* The call behind both public ones; `verdict` may be NULL. */
static int cache_trust(kernels_trust_verdict *verdict, const char *repo_id, const kernels_options *opts)
{
	kernels__config cfg;
	trust_tally t = { 0 };
	int rc;

	if ((rc = kernels__config_load(&cfg, opts)) < 0)
		return rc;
	rc = trust_cached(&cfg, repo_id, opts, &t);
	if (verdict) /* an untrusted repo's verdict outranks a missing one: it is the Hub's answer */
		*verdict = rc == 0 ? KERNELS_TRUST_TRUSTED
			 : rc == KERNELS_EUNTRUSTED && t.n_untrusted ? KERNELS_TRUST_UNTRUSTED : KERNELS_TRUST_UNVERIFIED;
	kernels__buf_free(&t.untrusted);
	kernels__buf_free(&t.unverified);
	kernels__config_free(&cfg);
	return rc;
}

int kernels_cache_trust(const char *repo_id, const kernels_options *opts)
{
	return cache_trust(NULL, repo_id, opts);
}

int kernels_cache_trust_verdict(kernels_trust_verdict *verdict, const char *repo_id, const kernels_options *opts)
{
	if (verdict)
		*verdict = KERNELS_TRUST_UNVERIFIED;
	if (!verdict || !repo_id)
		return kernels__error(KERNELS_EINVAL, "kernels_cache_trust_verdict: %s is NULL; pass %s",
				      verdict ? "repo_id" : "verdict",
				      verdict ? "one cached repo id (kernels_cache_trust asks about them all)"
					      : "where the verdict goes");
	return cache_trust(verdict, repo_id, opts);
}
