/* The plan of one kernel: what kernels_get, a dependency and a locked load
 * share. The revision (and kernel-status.toml's redirects), the publisher's
 * trust, kernel repo or model repo (decided once, download.c), the variant
 * for this system, then its files fetched, verified and loaded. Data flows
 * one way: revision -> trust -> redirect -> variant selection -> download
 * -> verify and load. The stages live in their own files; this one
 * sequences them for one kernel and keeps the timings. Its callers (get.c,
 * deps.c, project.c) sit above it, and hand the loader the function that
 * loads a kernel's own dependencies (deps.c). */
#include "plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "config.h"
#include "download.h"
#include "info.h"
#include "listing.h"
#include "error.h"
#include "hub.h"
#include "manifest.h"
#include "prefetch.h"
#include "repo.h"
#include "revision.h"
#include "system.h"
#include "trust.h"
#include "util.h"
#include "variant.h"

/* kernel-status.toml moves a repo elsewhere; a chain of moves longer than
 * this is a loop or a mistake. */
#define MAX_MOVES 4
#define STATUS_MAX (1 << 20)

typedef kernels__plan plan;

unsigned int kernels__plan_guarded(const plan *p)
{
	return p->guarded ? KERNELS__DOWNLOAD_GUARDED : 0;
}

void kernels__plan_settle(const kernels__config *cfg, plan *p)
{
	kernels__cache_settle(cfg, &p->records);
}

void kernels__plan_free(plan *p)
{
	kernels__write_later_join(&p->records, NULL, NULL);
	kernels_revision_free(p->rev);
	kernels_system_free(p->sys);
	kernels_variant_trace_free(p->trace);
	free(p->what);
	kernels__cache_seen_clear(&p->seen);
	memset(p, 0, sizeof(*p));
}

/* Detects the system once per call, and lets the Hub see what runs the
 * kernels in the User-Agent, as the Python client does (telemetry on). */
static int system_for(const kernels__config *cfg, kernels_system **sys)
{
	int rc;

	if (*sys)
		return 0;
	if ((rc = kernels__system_detect(cfg, sys)) < 0)
		return rc;
	if (cfg->ua_system)
		kernels__hub_ua_system_set(cfg, *sys);
	return 0;
}

/* ---- revision and redirects --------------------------------------------- */

/* Reads kernel-status.toml at the resolved commit, if the repo has one.
 * Returns 1 and fills `st` for a redirect, 0 when there is none. */
static int read_status(const kernels__config *cfg, plan *p, kernels__kernel_status *st)
{
	char *local = NULL, *data;
	size_t len;
	int rc;

	rc = kernels__download_file(cfg, p->repo.type, p->repo.id, kernels_revision_commit(p->rev),
				    "kernel-status.toml", &local, kernels__plan_guarded(p));
	if (rc == KERNELS_ENOTFOUND || rc == KERNELS_EOFFLINE) {
		kernels_error_clear();
		return 0;
	}
	if (rc < 0)
		return rc;
	/* A status file is a few lines; a megabyte is already absurd, and the
	 * TOML reader refuses what is cut short. */
	rc = kernels__read_file(local, STATUS_MAX, KERNELS__READ_PREFIX, &data, &len, NULL);
	free(local);
	if (rc < 0 && errno == ENOMEM)
		return kernels__error_oom();
	if (rc < 0)
		return kernels__error(KERNELS_EIO, "cannot read kernel-status.toml of %s from the cache", p->repo.id);
	rc = kernels__kernel_status_parse(data, len, "kernel-status.toml", st);
	free(data);
	return rc < 0 ? kernels__error_prefix("%s", p->repo.id) : 1;
}

/* A pinned repo that has moved stays where it is (kernels 0.17.2 never
 * reads kernel-status.toml): the user hears where it went. */
static int warn_moved(const kernels__config *cfg, const plan *p, kernels__kernel_status *st)
{
	kernels__log(cfg, KERNELS_LOG_WARNING, "'%s' has moved to '%s' (revision %s, says its kernel-status.toml); "
		     "the lock pins %s@%.12s itself, as kernels 0.17.2 does: to follow the move, depend on '%s' "
		     "and lock again", p->repo.id, st->destination, st->revision, p->repo.id,
		     kernels_revision_commit(p->rev), st->destination);
	kernels__kernel_status_clear(st);
	return 0;
}

/* One repo of the chain: its revision resolved (or *first taken, when
 * the caller resolved it already), its kind and cache folder settled, the
 * trust verdict with kernel-status.toml and the listing asked beside it.
 * 1 when kernel-status.toml moves it elsewhere (*st says where), 0 when it
 * is the one, or the refusal. */
static int plan_repo(const kernels__config *cfg, const char *id, const char *revision, kernels_revision **first,
		     plan *p, kernels__kernel_status *st)
{
	kernels__prefetch pf;
	kernels__repo_type type;
	int rc;

	if ((rc = kernels__repo_parse(&p->repo, id)) < 0)
		return rc;
	/* Existence before trust: a misspelled repo is "not found", not
	 * "untrusted" (listing refs runs no code). */
	if (*first) {
		p->rev = *first;
		*first = NULL;
	} else if ((rc = kernels__revision_resolve(cfg, p->repo.id, revision, &p->rev)) < 0) {
		return rc;
	}
	/* Kernel repo or model repo: decided here, once; every later stage
	 * takes p->repo.type as it is. */
	if ((rc = kernels__repo_locate_revision(cfg, p->rev, &type)) < 0)
		return rc;
	kernels__repo_set_type(&p->repo, type);
	/* Its cache folder checked once for planted links, before the
	 * trust check reads its record and the prefetch writes in it. */
	p->guarded = 0;
	if ((rc = kernels__cache_guard(cfg, p->repo.type, p->repo.id)) < 0)
		return rc;
	p->guarded = 1;
	kernels__cache_seen_clear(&p->seen);
	/* A get that will download: the CDN's connection opens now, during
	 * the trust check and the listings, not after the first redirect.
	 * With some variant of the commit in the cache beyond its
	 * metadata.json, the get may well load it from there (a warm get,
	 * a cached commit pin): nothing is sent for the CDN. */
	if (p->fetch && !cfg->offline &&
	    !kernels__cache_commit_fetched(cfg, p->repo.type, p->repo.id, kernels_revision_commit(p->rev), &p->seen))
		kernels__hub_cdn_warm(cfg);
	/* kernel-status.toml and the build/ listing are asked for beside the
	 * trust check (prefetch.h): one round trip instead of three. The
	 * verdict still comes first: nothing read is used before it. */
	kernels__prefetch_start(&pf, cfg, p->repo.type, p->repo.id, kernels_revision_commit(p->rev));
	rc = kernels__trust_check(cfg, p->repo.type, p->repo.id, p->records_later ? &p->records : NULL);
	kernels__prefetch_join(&pf);
	if (rc == 0 && kernels__deadline_left_ms(cfg) <= 0)
		rc = kernels__prefetch_failure(&pf); /* what the time went on */
	return rc < 0 ? rc : read_status(cfg, p, st);
}

/* `first` (may be NULL; taken over) is the revision of the first hop
 * when the caller resolved it already. */
int kernels__plan_revision(const kernels__config *cfg, const char *repo_id, const char *revision,
			   kernels_revision *first, plan *p)
{
	const char *id = repo_id;
	char *rev_owned = NULL, *id_owned = NULL;
	int hops, rc;

	for (hops = 0;; hops++) {
		kernels__kernel_status st = { 0 };

		if ((rc = plan_repo(cfg, id, rev_owned ? rev_owned : revision, &first, p, &st)) <= 0)
			break;
		if (p->pinned) {
			rc = warn_moved(cfg, p, &st);
			break;
		}
		if (hops == MAX_MOVES) {
			kernels__kernel_status_clear(&st);
			rc = kernels__error(KERNELS_EINVAL, "'%s' redirects more than %d times (a loop?); ask its "
					    "publisher to fix kernel-status.toml, or pin the destination repo",
					    repo_id, MAX_MOVES);
			break;
		}
		kernels__log(cfg, KERNELS_LOG_WARNING, "'%s' redirected to '%s' (revision %s)", p->repo.id,
			     st.destination, st.revision);
		free(id_owned);
		free(rev_owned);
		id = id_owned = st.destination;
		rev_owned = st.revision;
		st.destination = st.revision = NULL;
		kernels_revision_free(p->rev);
		p->rev = NULL;
	}
	free(id_owned);
	free(rev_owned);
	kernels_revision_free(first);
	if (rc == 0 && !(p->what = kernels__sprintf("%s@%.7s", p->repo.id, kernels_revision_commit(p->rev))))
		rc = KERNELS_ENOMEM;
	return rc;
}

/* ---- variant selection --------------------------------------------------- */

/* The GPU arch check needs backend.archs, which only metadata.json has:
 * the selection asks for it for the candidates it checks (a few hundred
 * bytes each). */
typedef struct {
	const kernels__config *cfg;
	plan *p;
} archs_source;

static int read_archs(void *ctx, const char *variant, kernels_metadata **m)
{
	archs_source *a = ctx;
	char *path = kernels__sprintf("build/%s/metadata.json", variant), *local = NULL, *slash;
	int rc;

	*m = NULL;
	if (!path)
		return KERNELS_ENOMEM;
	rc = kernels__download_file(a->cfg, a->p->repo.type, a->p->repo.id, kernels_revision_commit(a->p->rev), path,
				    &local, kernels__plan_guarded(a->p));
	free(path);
	if (rc == KERNELS_ENOTFOUND || rc == KERNELS_EOFFLINE) {
		kernels_error_clear();
		return 0; /* unknown archs: the variant stays a candidate */
	}
	if (rc == 0 && (slash = strrchr(local, '/'))) {
		*slash = '\0';
		rc = kernels_metadata_read(m, local);
		if (rc < 0) {
			kernels__log(a->cfg, KERNELS_LOG_WARNING, "%s: %s", a->p->what, kernels_error_last());
			kernels_error_clear();
			rc = 0;
		}
	}
	free(local);
	return rc;
}

/* 1 when the names came from the cache's record of the listing. */
static int select_from(const kernels__config *cfg, plan *p, int ask)
{
	archs_source a = { cfg, p };
	char **names = NULL;
	size_t count = 0;
	int rc, from;

	rc = from = kernels__variants_list_from(cfg, p->repo.type, p->repo.id, kernels_revision_commit(p->rev), ask,
						&names, &count);
	if (rc >= 0)
		rc = system_for(cfg, &p->sys);
	if (rc == 0)
		rc = kernels__variant_select(cfg, p->what, names, count, read_archs, &a, p->sys, &p->trace);
	kernels__strings_free(names, count);
	return rc < 0 ? rc : from;
}

/* A record of the listing (which only saves a request) may be well formed
 * but lack a variant: before none is said to fit, the Hub is asked. */
static int select_variant(const kernels__config *cfg, plan *p)
{
	int rc = select_from(cfg, p, 0);

	if (rc == 1 && !kernels_variant_trace_chosen(p->trace)) {
		kernels__log(cfg, KERNELS_LOG_DEBUG, "%s: no variant of the cache's record of the listing fits; asking "
			     "the Hub for the listing", p->what);
		kernels_variant_trace_free(p->trace);
		p->trace = NULL;
		rc = select_from(cfg, p, 1);
	}
	return rc < 0 ? rc : 0;
}

/* ---- the pipeline ---------------------------------------------------------- */

int kernels__plan_remote_from(const kernels__config *cfg, const char *repo_id, const char *revision,
			    kernels_revision *first, plan *p, kernels_get_stats *stats)
{
	double t0 = kernels__now_ms_precise();
	int rc = kernels__plan_revision(cfg, repo_id, revision, first, p);

	stats->resolve_ms = kernels__now_ms_precise() - t0;
	if (rc < 0)
		return rc;
	t0 = kernels__now_ms_precise();
	rc = select_variant(cfg, p);
	stats->select_ms = kernels__now_ms_precise() - t0;
	snprintf(stats->commit, sizeof(stats->commit), "%s", kernels_revision_commit(p->rev));
	snprintf(stats->repo_id, sizeof(stats->repo_id), "%s", p->repo.id);
	return rc;
}

int kernels__plan_remote(const kernels__config *cfg, const char *repo_id, const char *revision, plan *p,
			 kernels_get_stats *stats)
{
	return kernels__plan_remote_from(cfg, repo_id, revision, NULL, p, stats);
}

/* kernels__plan_fetch with the download stage's `flags` besides the
 * plan's own (download.h). */
static int fetch(const kernels__config *cfg, plan *p, const char *variant, unsigned int flags,
		 kernels_get_stats *stats, char **folder)
{
	char *snapshot = NULL;
	double t0 = kernels__now_ms_precise();
	int rc;

	*folder = NULL;
	rc = kernels__download(cfg, p->repo.type, p->repo.id, kernels_revision_commit(p->rev), &variant, 1, &snapshot,
			       &stats->download, kernels__plan_guarded(p) | flags);
	stats->download_ms = kernels__now_ms_precise() - t0;
	stats->from_cache = stats->download.blobs_downloaded == 0;
	/* Offline, a variant of which a lock or the arch check cached only
	 * metadata.json was refused by the stage's walk (or, verified next,
	 * is by the loader's). */
	if (rc == 0 && !(*folder = kernels__sprintf("%s/build/%s", snapshot, variant)))
		rc = KERNELS_ENOMEM;
	free(snapshot);
	return rc;
}

int kernels__plan_fetch(const kernels__config *cfg, plan *p, const char *variant, int recheck,
			kernels_get_stats *stats, char **folder)
{
	return fetch(cfg, p, variant, recheck ? KERNELS__DOWNLOAD_RECHECK : 0, stats, folder);
}

void kernels__plan_refused(const kernels__config *cfg, plan *p, int rc)
{
	if (rc == KERNELS_EINTEGRITY && !cfg->offline)
		kernels__listing_forget(cfg, p->repo.type, p->repo.id, kernels_revision_commit(p->rev));
}

int kernels__plan_load(const kernels__config *cfg, plan *p, const char *folder, kernels__deps_fn deps,
		       kernels_get_stats *stats, kernels_kernel **out)
{
	const char *variant = strrchr(folder, '/') + 1;
	char *root = kernels__cache_repo_dir(cfg, p->repo.type, p->repo.id);
	double t0 = kernels__now_ms_precise();
	int rc;

	rc = !root ? KERNELS_ENOMEM : p->guarded ? 0 : kernels__cache_guard(cfg, p->repo.type, p->repo.id);
	if (rc == 0)
		rc = kernels__loader_open(cfg, deps, p->repo.id, kernels_revision_commit(p->rev), variant, folder, root,
					  out);
	stats->load_ms = kernels__now_ms_precise() - t0;
	free(root);
	return rc;
}

/* A commit's files never change, so a variant already in the snapshot needs
 * no listing from the Hub: its metadata digest, checked before dlopen,
 * proves it complete and intact. Returns 0 when loaded from the cache, 1
 * when the variant must be fetched (absent or incomplete), or an error.
 * Whether its folder holds more than metadata.json is what the warm-up's
 * look at build/ read (p->seen), where it got that far. Verification lists
 * the folder again, on purpose: the digest covers every file there, so it
 * must see the folder as it is when it checks, not as it was before the
 * trust check (a file planted since would go unseen). */
static int load_cached(const kernels__config *cfg, plan *p, const char *variant, kernels__deps_fn deps,
		       kernels_get_stats *stats,
		       kernels_kernel **out)
{
	char *dir = kernels__cache_repo_dir(cfg, p->repo.type, p->repo.id), *folder, *meta;
	int rc = 1;

	folder = dir ? kernels__sprintf("%s/snapshots/%s/build/%s", dir, kernels_revision_commit(p->rev), variant)
		     : NULL;
	meta = folder ? kernels__sprintf("%s/metadata.json", folder) : NULL;
	if (!meta) {
		rc = KERNELS_ENOMEM;
	} else if (!cfg->offline && kernels__cache_seen_fetched(&p->seen, variant, folder) && access(meta, F_OK) == 0) {
		rc = kernels__plan_load(cfg, p, folder, deps, stats, out);
		if (rc == KERNELS_EINTEGRITY || rc == KERNELS_ENOTFOUND) {
			/* Incomplete (an interrupted run): let the download stage repair it. */
			kernels_error_clear();
			rc = 1;
		}
		stats->from_cache = rc == 0;
	}
	free(meta);
	free(folder);
	free(dir);
	return rc;
}

int kernels__plan_fetch_and_load(const kernels__config *cfg, plan *p, kernels__deps_fn deps, kernels_get_stats *stats,
				 kernels_kernel **out)
{
	const char *variant = kernels_variant_trace_chosen(p->trace);
	char *folder = NULL;
	int rc;

	if (!variant) /* with 0.17's hint when the newest version has a build that fits */
		return kernels__no_match_hint(cfg, p->repo.id, p->sys,
					      kernels__variant_no_match(p->trace, p->what, p->sys));
	if ((rc = load_cached(cfg, p, variant, deps, stats, out)) <= 0)
		return rc;
	/* verified next: offline, that walk is the one that says what the cache lacks */
	rc = fetch(cfg, p, variant, KERNELS__DOWNLOAD_VERIFIED, stats, &folder);
	if (rc == 0 && (rc = kernels__plan_load(cfg, p, folder, deps, stats, out)) == KERNELS_EINTEGRITY &&
	    !cfg->offline) {
		/* The fetch reuses a cached blob by its size: one damaged in
		 * place fails the load every time until it is fetched again. */
		kernels__log(cfg, KERNELS_LOG_DEBUG, "%s; checking its cached blobs against their names",
			     kernels_error_last());
		free(folder);
		rc = fetch(cfg, p, variant, KERNELS__DOWNLOAD_VERIFIED | KERNELS__DOWNLOAD_RECHECK, stats, &folder);
		if (rc == 0)
			rc = kernels__plan_load(cfg, p, folder, deps, stats, out);
		kernels__plan_refused(cfg, p, rc);
	}
	free(folder);
	return rc;
}
