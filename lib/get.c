/* The main calls: kernels_get and its kin run the plan of one kernel
 * (plan.c) at each endpoint in turn, answer from the in-process memo
 * (memo.c) and, when the Hub cannot be reached, from the cache (the one
 * place that decides it); a kernel's dependencies are loaded through
 * deps.c, which the loader is handed. */
#include "kernels/get.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "config.h"
#include "deps.h"
#include "download.h"
#include "info.h"
#include "error.h"
#include "get.h"
#include "hub.h"
#include "layout.h"
#include "loader.h"
#include "manifest.h"
#include "memo.h"
#include "prefetch.h"
#include "refs.h"
#include "repo.h"
#include "revision.h"
#include "system.h"
#include "trust.h"
#include "util.h"
#include "variant.h"

typedef kernels__plan plan;

/* ---- the Hub cannot be reached --------------------------------------------- */

/* The one place that decides the cache answers when the Hub cannot be
 * reached, or is not serving: the stages only report KERNELS_ENETWORK, or
 * a KERNELS_EHTTP marked as a 5xx or 429 that outlived the retries
 * (kernels__error_unserved; the current error says why). Any other
 * answer (a 4xx) stands. What the cache holds was verified, and its
 * publisher trusted, when it was downloaded, so it may answer, exactly as
 * offline; nothing new is fetched, so nothing unverified can arrive. The
 * run from the cache says the same code, with both halves, for what the
 * cache lacks. */
typedef struct {
	kernels__config cfg;  /* shallow copy of the call's: strings stay owned by it */
	int code;             /* the Hub's failure: KERNELS_ENETWORK or KERNELS_EHTTP */
	long status;          /* KERNELS_EHTTP's 5xx or 429 */
	char reason[2048];    /* the network error */
	char why[2600];       /* "the Hub at X cannot be reached (reason)" */
} fallback;

/* 1 with `f` set up for the run from the cache, 0 when `rc` stands. */
static int fallback_begin(const kernels__config *cfg, int rc, fallback *f)
{
	long status = rc == KERNELS_EHTTP ? kernels__error_unserved() : 0;

	if ((rc != KERNELS_ENETWORK && !status) || cfg->offline)
		return 0;
	f->code = rc;
	f->status = status;
	snprintf(f->reason, sizeof(f->reason), "%s", kernels_error_last());
	/* The reason names the status (kernels__hub_status_error's detail). */
	snprintf(f->why, sizeof(f->why), "the Hub at %s %s (%s)", cfg->endpoint,
		 status ? "is not serving" : "cannot be reached", f->reason);
	f->cfg = *cfg;
	f->cfg.offline = 1;
	f->cfg.offline_why = f->why;
	f->cfg.offline_code = rc;
	return 1;
}

/* The Hub's failure as the call's error: its code, and its mark, so that
 * a caller a level up reads it as the stage did. */
static int fallback_error(const fallback *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fallback_error(const fallback *f, const char *fmt, ...)
{
	char msg[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	kernels__error(f->code, "%s", msg);
	kernels__error_mark_unserved(f->status);
	return f->code;
}

/* After the run from the cache: a warning when it answered; a miss that a
 * stage reported as offline becomes the Hub's failure. */
static int fallback_end(const kernels__config *cfg, int rc, const fallback *f, const char *what)
{
	char inner[2048];

	if (rc == 0)
		kernels__log(cfg, KERNELS_LOG_WARNING, "%s; using the cached answer for %s", f->why, what);
	if (rc != KERNELS_EOFFLINE)
		return rc;
	snprintf(inner, sizeof(inner), "%s", kernels_error_last());
	return fallback_error(f, "%s, and the cache at %s cannot answer for %s (%s); try again when the Hub "
			      "answers", f->why, cfg->cache_dir, what, inner);
}

/* What the cache lacks for kernels_get, said plainly: the Hub's failure is
 * the reason given once, the cache's gap the other half, and nothing about
 * "offline" (the caller did not ask for that). `p` tells how far the plan
 * got. */
static int cache_lacks(const kernels__config *cfg, const char *repo_id, const char *revision, const plan *p,
		       const fallback *f)
{
	const char *variant = p->trace ? kernels_variant_trace_chosen(p->trace) : NULL;
	char lacks[512];

	if (!p->rev)
		snprintf(lacks, sizeof(lacks), "no record of revision '%s' of %s", revision ? revision : "", repo_id);
	else if (!variant)
		snprintf(lacks, sizeof(lacks), "no variant list for %s at commit %s",
			 p->repo.id[0] ? p->repo.id : repo_id, kernels_revision_commit(p->rev));
	else
		snprintf(lacks, sizeof(lacks), "no copy of variant %s of %s at commit %s", variant, p->repo.id,
			 kernels_revision_commit(p->rev));
	return fallback_error(f, "the Hub is %s (%s), and the cache at %s lacks what was asked: %s; try again "
			      "when the Hub answers, or ask for a revision the cache holds",
			      f->status ? "not serving" : "down or not answering", f->reason, cfg->cache_dir, lacks);
}

/* What locking needs (project.c): the revision, its redirects and the
 * publisher's trust, from the cache when the Hub is down. */
int kernels__plan_resolve(const kernels__config *cfg, const char *repo_id, const char *revision, plan *p)
{
	fallback f;
	int rc = kernels__plan_revision(cfg, repo_id, revision, NULL, p);

	if (fallback_begin(cfg, rc, &f)) {
		int pinned = p->pinned;
		kernels__plan_free(p);
		p->pinned = pinned;
		rc = kernels__plan_revision(&f.cfg, repo_id, revision, NULL, p);
		if (rc == KERNELS_EOFFLINE)
			rc = cache_lacks(cfg, repo_id, revision, p, &f);
		rc = fallback_end(cfg, rc, &f, repo_id);
	}
	return rc;
}

/* ---- the in-process memo (memo.h) ------------------------------------------ */

static void memo_hit_stats(kernels_get_stats *stats, const char *repo_id, const char *commit, double t0)
{
	stats->from_cache = 1;
	snprintf(stats->commit, sizeof(stats->commit), "%s", commit);
	snprintf(stats->repo_id, sizeof(stats->repo_id), "%s", repo_id);
	stats->load_ms = kernels__now_ms_precise() - t0;
}

/* The revision first: a name costs its refs request, and when its commit
 * is one whose variant this process holds, that handle is the answer (1).
 * Else 0 and *first, the revision, goes on to the whole path. */
static int memo_first(const kernels__config *cfg, const char *repo_id, const char *revision, const char *memo,
		      kernels_revision **first, kernels_get_stats *stats, kernels_kernel **out)
{
	double t0 = kernels__now_ms_precise(), t1;
	const char *commit;
	int rc;

	*first = NULL;
	if ((rc = kernels__revision_resolve(cfg, repo_id, revision, first)) < 0)
		return rc;
	commit = kernels_revision_commit(*first);
	t1 = kernels__now_ms_precise();
	if (!kernels__memo_take(memo, repo_id, commit, out))
		return 0;
	memo_hit_stats(stats, repo_id, commit, t1); /* load: the handle found again */
	stats->resolve_ms = t1 - t0;
	if (strcmp(revision, commit))
		kernels__memo_name_put(memo, repo_id, revision, commit);
	kernels_revision_free(*first);
	*first = NULL;
	return 1;
}

/* kernels_get at one endpoint. `memo`: the settings key, NULL for none. */
static int get_at(const kernels__config *cfg, const char *repo_id, const char *revision, plan *p,
		  kernels_get_stats *stats, kernels_kernel **out, const char *memo)
{
	kernels_revision *first = NULL;
	double t0 = kernels__now_ms_precise(), first_ms;
	int rc;

	if (memo && repo_id && revision && (rc = memo_first(cfg, repo_id, revision, memo, &first, stats, out)) != 0)
		return rc < 0 ? rc : 0;
	first_ms = kernels__now_ms_precise() - t0;
	p->fetch = 1;
	p->records_later = 1; /* the trust record's flush beside the listing and download */
	rc = kernels__plan_remote_from(cfg, repo_id, revision, first, p, stats);
	stats->resolve_ms += first_ms; /* the revision, asked before the plan */
	if (rc == 0)
		rc = kernels__plan_fetch_and_load(cfg, p, kernels__deps_load, stats, out);
	kernels__plan_settle(cfg, p);
	/* A redirect's destination may move under the same commit: never memoised. */
	if (rc == 0 && memo && !strcmp(p->repo.id, repo_id)) {
		kernels__memo_put(memo, repo_id, kernels_revision_commit(p->rev), *out);
		if (strcmp(revision, kernels_revision_commit(p->rev)))
			kernels__memo_name_put(memo, repo_id, revision, kernels_revision_commit(p->rev));
	}
	return rc;
}

static int get_with_config(const kernels__config *cfg, const char *repo_id, const char *revision,
			   kernels_kernel **out, kernels_get_stats *stats, const char *memo)
{
	kernels__config at;
	kernels__endpoint_try t;
	kernels__endpoint_failures failed = { .n = 0 };
	fallback f;
	char *local = NULL;
	plan p = { 0 };
	size_t i;
	int rc = 0;

	/* LOCAL_KERNELS (deps.c parses it; a malformed entry is an error) */
	if (repo_id && (rc = kernels__local_kernels_lookup(cfg, repo_id, &local)) < 0)
		return rc;
	if (rc == 1) {
		double t0 = kernels__now_ms_precise();
		stats->local = 1;
		snprintf(stats->repo_id, sizeof(stats->repo_id), "%s", repo_id);
		rc = kernels__loader_open_local(cfg, kernels__deps_load, repo_id, local, NULL, out);
		stats->load_ms = kernels__now_ms_precise() - t0;
		if (rc < 0)
			kernels__error_prefix("loading %s from LOCAL_KERNELS path '%s'", repo_id, local);
		free(local);
		return rc;
	}
	/* The endpoints in turn (a mirror, then the Hub), under one deadline,
	 * each but the last with its share for a first answer. */
	rc = KERNELS_ERROR;
	for (i = 0; i < cfg->n_endpoints; i++) {
		kernels__endpoint_try_begin(cfg, i, &at, &t);
		kernels__plan_free(&p);
		rc = get_at(&at, repo_id, revision, &p, stats, out, memo);
		if (!kernels__endpoint_next(cfg, i, &at, rc, &failed))
			break;
	}
	if (rc < 0)
		rc = kernels__endpoint_failures_raise(&failed, rc);
	/* No memo for the run from the cache: it chooses among the variants
	 * the cache holds, which a call with the Hub up should not inherit. */
	if (fallback_begin(cfg, rc, &f)) {
		kernels__plan_free(&p);
		rc = get_at(&f.cfg, repo_id, revision, &p, stats, out, NULL);
		if (rc == KERNELS_EOFFLINE)
			rc = cache_lacks(cfg, repo_id, revision, &p, &f);
		rc = fallback_end(cfg, rc, &f, repo_id);
	}
	kernels__plan_free(&p);
	return rc;
}

/* Where each version of kernels_get_stats ends (docs/api-stability.md). */
static const size_t get_stats_sizes[] = { 0, KERNELS__END(kernels_get_stats, download) };
static const kernels__layout get_stats_layout = { "kernels_get_stats", "KERNELS_GET_STATS_VERSION",
						  get_stats_sizes, KERNELS_GET_STATS_VERSION };
_Static_assert(sizeof(get_stats_sizes) / sizeof(get_stats_sizes[0]) == KERNELS_GET_STATS_VERSION + 1,
	       "a new kernels_get_stats version needs its size in get_stats_sizes");

static int get_full(kernels_kernel **out, const char *repo_id, const char *revision, const kernels_options *opts,
		    kernels_get_stats *stats);

int kernels_get_ext(kernels_kernel **out, kernels_get_stats *stats, const char *repo_id, const char *revision, const kernels_options *opts)
{
	kernels_options full;
	kernels_system system;
	kernels_get_stats all = KERNELS_GET_STATS_INIT;
	kernels__repo repo;
	int rc;

	if (!out)
		return kernels__error(KERNELS_EINVAL,
				      "kernels_get: out is NULL; pass the address of a kernels_kernel *");
	*out = NULL;
	/* The caller's structs, read (and written) no further than their
	 * versions reach: nothing below sees them. */
	if ((stats && (rc = kernels__layout_check(&get_stats_layout, stats)) < 0) ||
	    (rc = kernels__options_full(&full, &system, opts)) < 0 || (rc = kernels__repo_parse(&repo, repo_id)) < 0)
		return rc;
	rc = get_full(out, repo.id, revision, opts ? &full : NULL, &all);
	all.download.version = KERNELS_DOWNLOAD_STATS_VERSION;
	if (stats)
		kernels__layout_write(&get_stats_layout, stats, &all);
	return rc;
}

static int get_full(kernels_kernel **out, const char *repo_id, const char *revision, const kernels_options *opts,
		    kernels_get_stats *stats)
{
	kernels__config cfg;
	kernels__buf memo = { 0 };
	char commit[41];
	double t0 = kernels__now_ms_precise();
	int rc, pinned = 0;

	/* A commit this process already loaded a variant of, under the same
	 * settings: the same handle, before anything else is read (memo.h). A
	 * name resolved less than revision_ttl_s ago counts as its commit. */
	if (repo_id && revision && kernels__memo_settings(opts, &memo) == 0) {
		if (kernels__is_commit(revision, KERNELS__HEX_ANY_CASE)) {
			kernels__hex_lower(revision, 40, commit);
			pinned = 1;
		} else if (opts && opts->revision_ttl_s > 0) {
			pinned = kernels__memo_name(memo.ptr, repo_id, revision, opts->revision_ttl_s * 1000LL, commit);
			if (pinned)
				revision = commit; /* accepted as it was: no refs request */
		}
		if (pinned && kernels__memo_take(memo.ptr, repo_id, commit, out)) {
			memo_hit_stats(stats, repo_id, commit, t0);
			kernels__buf_free(&memo);
			return 0;
		}
	}
	if ((rc = kernels__config_load(&cfg, opts)) == 0) {
		rc = get_with_config(&cfg, repo_id, revision, out, stats, memo.ptr);
		kernels__config_free(&cfg);
	}
	kernels__buf_free(&memo);
	return rc;
}

int kernels_get(kernels_kernel **out, const char *repo_id, const char *revision, const kernels_options *opts)
{
	return kernels_get_ext(out, NULL, repo_id, revision, opts);
}

/* The variant decisions for `repo_id`: LOCAL_KERNELS' tree, else the plan
 * at the endpoints in turn. *out (the caller's) is the trace. */
static int decide_variants(const kernels__config *cfg, const char *repo_id, const char *revision, plan *p,
			   kernels_variant_trace **out)
{
	kernels_get_stats stats;
	kernels__endpoint_failures failed = { .n = 0 };
	char *local = NULL;
	size_t i;
	int rc;

	if (repo_id && (rc = kernels__local_kernels_lookup(cfg, repo_id, &local)) != 0) {
		if (rc == 1 && (rc = kernels__local_trace(cfg, local, NULL, out)) < 0)
			kernels__error_prefix("%s from LOCAL_KERNELS path '%s'", repo_id, local);
		free(local);
		return rc;
	}
	rc = KERNELS_ERROR;
	for (i = 0; i < cfg->n_endpoints; i++) {
		kernels__config at;
		kernels__endpoint_try t;
		kernels__endpoint_try_begin(cfg, i, &at, &t);
		kernels__plan_free(p);
		rc = kernels__plan_remote(&at, repo_id, revision, p, &stats);
		if (rc < 0 && !cfg->offline)
			kernels__endpoint_failed(&failed, at.endpoint, kernels_error_last());
		if (rc == 0 || cfg->offline || !kernels__endpoint_failover(rc))
			break;
	}
	if (rc < 0)
		rc = kernels__endpoint_failures_raise(&failed, rc);
	if (rc == 0) {
		*out = p->trace;
		p->trace = NULL;
	}
	return rc;
}

/* decide_variants; with `has` (kernels_has_kernel) *has is 1 when a
 * variant fits and, as 0.17's has_kernel, the kernels it depends on have
 * one too (deps.c). */
static int variants_and_deps(const kernels__config *cfg, const char *repo_id, const char *revision, plan *p,
			     kernels_variant_trace **out, int *has)
{
	int rc = decide_variants(cfg, repo_id, revision, p, out);

	if (rc < 0 || !has)
		return rc;
	*has = kernels_variant_trace_chosen(*out) != NULL;
	if (*has && (rc = kernels__deps_has_kernel(cfg, repo_id, revision)) >= 0) {
		*has = rc;
		rc = 0;
	}
	return rc;
}

static int variants_with_fallback(const kernels__config *cfg, const char *repo_id, const char *revision,
				  kernels_variant_trace **out, int *has)
{
	plan p = { 0 };
	fallback f;
	int rc = variants_and_deps(cfg, repo_id, revision, &p, out, has);

	if (fallback_begin(cfg, rc, &f)) {
		kernels__plan_free(&p);
		kernels_variant_trace_free(*out);
		*out = NULL;
		rc = variants_and_deps(&f.cfg, repo_id, revision, &p, out, has);
		if (rc == KERNELS_EOFFLINE)
			rc = cache_lacks(cfg, repo_id, revision, &p, &f);
		rc = fallback_end(cfg, rc, &f, repo_id);
	}
	kernels__plan_free(&p);
	if (rc < 0) {
		kernels_variant_trace_free(*out);
		*out = NULL;
	}
	return rc;
}

int kernels_get_variants(kernels_variant_trace **out, const char *repo_id, const char *revision,
			 const kernels_options *opts)
{
	kernels__config cfg;
	kernels__repo repo;
	int rc;

	if (!out)
		return kernels__error(KERNELS_EINVAL, "kernels_get_variants: out is NULL");
	*out = NULL;
	if ((rc = kernels__repo_parse(&repo, repo_id)) < 0 || (rc = kernels__config_load(&cfg, opts)) < 0)
		return rc;
	rc = variants_with_fallback(&cfg, repo.id, revision, out, NULL);
	kernels__config_free(&cfg);
	return rc;
}

int kernels_has_kernel(const char *repo_id, const char *revision, const kernels_options *opts)
{
	kernels_variant_trace *trace = NULL;
	kernels__config cfg;
	kernels__repo repo;
	int rc, has = 0;

	if ((rc = kernels__repo_parse(&repo, repo_id)) < 0 || (rc = kernels__config_load(&cfg, opts)) < 0)
		return rc;
	rc = variants_with_fallback(&cfg, repo.id, revision, &trace, &has);
	kernels_variant_trace_free(trace);
	kernels__config_free(&cfg);
	return rc < 0 ? rc : has;
}

/* ---- the calls that answer from the cache when the Hub is down ------------- */

int kernels_revision_resolve(kernels_revision **out, const char *repo_id, const char *revision,
			     const kernels_options *opts)
{
	kernels__config cfg;
	fallback f;
	char what[400];
	int rc;

	if (out)
		*out = NULL;
	if ((rc = kernels__config_load(&cfg, opts)) < 0)
		return rc;
	rc = kernels__revision_resolve(&cfg, repo_id, revision, out);
	if (fallback_begin(&cfg, rc, &f)) {
		rc = kernels__revision_resolve(&f.cfg, repo_id, revision, out);
		snprintf(what, sizeof(what), "'%.100s' of %s: %s", revision, repo_id,
			 rc == 0 ? kernels_revision_commit(*out) : "-");
		rc = fallback_end(&cfg, rc, &f, what);
	}
	kernels__config_free(&cfg);
	return rc;
}

int kernels_versions_list(char ***versions, size_t *count, const char *repo_id, const kernels_options *opts)
{
	kernels__config cfg;
	fallback f;
	char what[400];
	int rc;

	if ((rc = kernels__config_load(&cfg, opts)) < 0)
		return rc;
	rc = kernels__versions_list(&cfg, repo_id, versions, count);
	if (fallback_begin(&cfg, rc, &f)) {
		rc = kernels__versions_list(&f.cfg, repo_id, versions, count);
		snprintf(what, sizeof(what), "the versions of %s (those recorded in the cache)", repo_id);
		rc = fallback_end(&cfg, rc, &f, what);
	}
	kernels__config_free(&cfg);
	if (rc == 0 && (rc = kernels__strings_pack(versions, *count)) < 0)
		*count = 0;
	return rc;
}

int kernels_info_get(kernels_info **out, const char *kernel, const char *revision, const kernels_options *opts)
{
	kernels__config cfg;
	fallback f;
	int rc;

	if (!out || !kernel || !*kernel)
		return kernels__error(KERNELS_EINVAL,
				      "kernels_info_get: out and kernel (a repo id or a folder) must be given");
	*out = NULL;
	if ((rc = kernels__config_load(&cfg, opts)) < 0)
		return rc;
	rc = kernels__info_get(&cfg, out, kernel, revision);
	if (fallback_begin(&cfg, rc, &f))
		rc = fallback_end(&cfg, kernels__info_get(&f.cfg, out, kernel, revision), &f, kernel);
	kernels__config_free(&cfg);
	return rc;
}

int kernels_load_local(kernels_kernel **out, const char *path, const kernels_options *opts)
{
	kernels__config cfg;
	int rc;

	if (!out || !path || !*path)
		return kernels__error(KERNELS_EINVAL, "kernels_load_local: out and path must be given");
	*out = NULL;
	if ((rc = kernels__config_load(&cfg, opts)) < 0)
		return rc;
	rc = kernels__loader_open_local(&cfg, kernels__deps_load, NULL, path, NULL, out);
	kernels__config_free(&cfg);
	return rc;
}
