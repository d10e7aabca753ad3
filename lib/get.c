/* The main call: joins the stages into kernels_get. Data flows one way:
 * revision -> trust -> redirect -> variant selection -> download -> verify
 * and load. Each stage lives in its own file; this one only sequences them
 * and keeps the timings. */
#include "kernels/get.h"

#include <dirent.h>
#include <errno.h>
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

/* kernel-status.toml moves a repo elsewhere; a chain of moves longer than
 * this is a loop or a mistake. */
#define MAX_MOVES 4
#define STATUS_MAX (1 << 20)

typedef kernels__plan plan;

void kernels__plan_free(plan *p)
{
	free(p->repo_id);
	kernels_revision_free(p->rev);
	kernels_system_free(p->sys);
	kernels_variant_trace_free(p->trace);
	free(p->what);
	memset(p, 0, sizeof(*p));
}

/* Detects the system once per call, and lets the Hub see what runs the
 * kernels in the User-Agent, as the Python client does (telemetry on). */
static int system_for(const kernels__config *cfg, kernels_system **sys)
{
	const kernels_system *s;
	kernels__buf ua = { 0 };
	char bstr[64] = "";
	int rc;

	if (*sys)
		return 0;
	if ((rc = kernels__system_detect(cfg, sys)) < 0)
		return rc;
	/* The User-Agent of the rest of this call (hub.c): the backend as
	 * variant names spell it (Python kernels' backend/cu130), then torch,
	 * tvm-ffi and glibc. */
	s = *sys;
	kernels__system_backend_str(s, bstr, sizeof(bstr));
	kernels__buf_printf(&ua, "backend/%s", bstr);
	if (s->torch_version_string)
		kernels__buf_printf(&ua, "; torch/%s", s->torch_version_string);
	if (s->tvm_ffi_version > 0)
		kernels__buf_printf(&ua, "; tvm-ffi/%d.%d", s->tvm_ffi_version / 100, s->tvm_ffi_version % 100);
	if (s->glibc)
		kernels__buf_printf(&ua, "; glibc/%s", s->glibc);
	if (ua.ptr && cfg->ua_system)
		snprintf(cfg->ua_system, KERNELS__UA_SYSTEM_MAX, "%s", ua.ptr);
	kernels__buf_free(&ua);
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

	rc = kernels__download_file(cfg, p->type, p->repo_id, kernels_revision_commit(p->rev),
				    "kernel-status.toml", &local);
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
		return kernels__error(KERNELS_EIO, "cannot read kernel-status.toml of %s from the cache", p->repo_id);
	rc = kernels__kernel_status_parse(data, len, "kernel-status.toml", st);
	free(data);
	return rc < 0 ? kernels__error_prefix("%s", p->repo_id) : 1;
}

/* `first` (may be NULL; taken over) is the revision of the first hop
 * when the caller resolved it already. */
static int resolve(const kernels__config *cfg, const char *repo_id, const char *revision, kernels_revision *first,
		   plan *p)
{
	char *rev_owned = NULL;
	int hops, rc;

	if (!(p->repo_id = kernels__strdup(repo_id))) {
		kernels_revision_free(first);
		return KERNELS_ENOMEM;
	}
	for (hops = 0;; hops++) {
		kernels__kernel_status st = { 0 };
		kernels__prefetch pf;

		if ((rc = kernels__repo_id_check(p->repo_id)) < 0)
			break;
		/* Existence before trust: a misspelled repo is "not found", not
		 * "untrusted" (listing refs runs no code). */
		if (first) {
			p->rev = first;
			first = NULL;
		} else if ((rc = kernels__revision_resolve(cfg, p->repo_id, rev_owned ? rev_owned : revision, &p->rev)) < 0) {
			break;
		}
		/* Kernel repo or model repo: decided here, once; every later stage
		 * takes p->type as it is. */
		if ((rc = kernels__repo_locate_revision(cfg, p->rev, &p->type)) < 0)
			break;
		/* kernel-status.toml and the build/ listing are asked for beside the
		 * trust check (prefetch.h): one round trip instead of three. The
		 * verdict still comes first: nothing read is used before it. */
		kernels__prefetch_start(&pf, cfg, p->type, p->repo_id, kernels_revision_commit(p->rev));
		rc = kernels__trust_check(cfg, p->type, p->repo_id);
		kernels__prefetch_join(&pf);
		if (rc == 0 && kernels__deadline_left_ms(cfg) <= 0)
			rc = kernels__prefetch_failure(&pf); /* what the time went on */
		if (rc < 0 || (rc = read_status(cfg, p, &st)) <= 0)
			break;
		if (hops == MAX_MOVES) {
			kernels__kernel_status_clear(&st);
			rc = kernels__error(KERNELS_EINVAL, "'%s' redirects more than %d times (a loop?); ask its "
					    "publisher to fix kernel-status.toml, or pin the destination repo",
					    repo_id, MAX_MOVES);
			break;
		}
		kernels__log(cfg, KERNELS_LOG_WARNING, "'%s' redirected to '%s' (revision %s)", p->repo_id,
			     st.destination, st.revision);
		free(p->repo_id);
		free(rev_owned);
		p->repo_id = st.destination;
		rev_owned = st.revision;
		st.destination = st.revision = NULL;
		kernels_revision_free(p->rev);
		p->rev = NULL;
	}
	free(rev_owned);
	kernels_revision_free(first);
	if (rc == 0 && !(p->what = kernels__sprintf("%s@%.7s", p->repo_id, kernels_revision_commit(p->rev))))
		rc = KERNELS_ENOMEM;
	return rc;
}

/* ---- variant selection --------------------------------------------------- */

static int is_cuda_variant(const char *name)
{
	kernels_variant_info info;
	return kernels_variant_parse(name, &info) == 0 && !strcmp(info.backend, "cuda");
}

/* The GPU arch check needs backend.archs, which only metadata.json has:
 * fetch it for the CUDA variants (a few hundred bytes each). */
static int read_archs(const kernels__config *cfg, plan *p, const char *variant, kernels_metadata **m)
{
	char *path = kernels__sprintf("build/%s/metadata.json", variant), *local = NULL, *slash;
	int rc;

	*m = NULL;
	if (!path)
		return KERNELS_ENOMEM;
	rc = kernels__download_file(cfg, p->type, p->repo_id, kernels_revision_commit(p->rev), path, &local);
	free(path);
	if (rc == KERNELS_ENOTFOUND || rc == KERNELS_EOFFLINE) {
		kernels_error_clear();
		return 0; /* unknown archs: the variant stays a candidate */
	}
	if (rc == 0 && (slash = strrchr(local, '/'))) {
		*slash = '\0';
		rc = kernels_metadata_read(m, local);
		if (rc < 0) {
			kernels__log(cfg, KERNELS_LOG_WARNING, "%s: %s", p->what, kernels_error_last());
			kernels_error_clear();
			rc = 0;
		}
	}
	free(local);
	return rc;
}

static int select_variant(const kernels__config *cfg, plan *p)
{
	char **names = NULL;
	size_t count = 0, i;
	kernels_variant_candidate *cands = NULL;
	kernels_metadata **metas = NULL;
	int rc;

	rc = kernels__variants_list(cfg, p->type, p->repo_id, kernels_revision_commit(p->rev), &names, &count);
	if (rc == 0)
		rc = system_for(cfg, &p->sys);
	if (rc == 0 && (!(cands = calloc(count + 1, sizeof(*cands))) || !(metas = calloc(count + 1, sizeof(*metas)))))
		rc = kernels__error_oom();
	for (i = 0; rc == 0 && i < count; i++) {
		cands[i].name = names[i];
		if (p->sys->gpu_count > 0 && is_cuda_variant(names[i]) &&
		    (rc = read_archs(cfg, p, names[i], &metas[i])) == 0 && metas[i])
			cands[i].archs = kernels_metadata_archs(metas[i]);
	}
	if (rc == 0)
		rc = kernels__variant_resolve(cfg, p->what, cands, count, p->sys, &p->trace);
	for (i = 0; metas && i < count; i++)
		kernels_metadata_free(metas[i]);
	free(metas);
	free(cands);
	kernels_strings_free(names, count);
	return rc;
}

/* ---- the pipeline ---------------------------------------------------------- */

static int plan_remote_from(const kernels__config *cfg, const char *repo_id, const char *revision,
			    kernels_revision *first, plan *p, kernels_get_stats *stats)
{
	double t0 = kernels__now_ms_precise();
	int rc = resolve(cfg, repo_id, revision, first, p);

	stats->resolve_ms = kernels__now_ms_precise() - t0;
	if (rc < 0)
		return rc;
	t0 = kernels__now_ms_precise();
	rc = select_variant(cfg, p);
	stats->select_ms = kernels__now_ms_precise() - t0;
	snprintf(stats->commit, sizeof(stats->commit), "%s", kernels_revision_commit(p->rev));
	snprintf(stats->repo_id, sizeof(stats->repo_id), "%s", p->repo_id);
	return rc;
}

int kernels__plan_remote(const kernels__config *cfg, const char *repo_id, const char *revision, plan *p,
			 kernels_get_stats *stats)
{
	return plan_remote_from(cfg, repo_id, revision, NULL, p, stats);
}

static int metadata_only(const char *folder);

int kernels__plan_fetch(const kernels__config *cfg, plan *p, const char *variant, kernels_get_stats *stats,
			char **folder)
{
	char *snapshot = NULL;
	double t0 = kernels__now_ms_precise();
	int rc;

	*folder = NULL;
	rc = kernels__download(cfg, p->type, p->repo_id, kernels_revision_commit(p->rev), &variant, 1, &snapshot,
			       &stats->download);
	stats->download_ms = kernels__now_ms_precise() - t0;
	stats->from_cache = stats->download.blobs_downloaded == 0;
	if (rc == 0 && !(*folder = kernels__sprintf("%s/build/%s", snapshot, variant)))
		rc = KERNELS_ENOMEM;
	/* offline, a variant of which a lock or the arch check cached only
	 * metadata.json (as Python kernels' lock does) is not in the cache */
	if (rc == 0 && cfg->offline && metadata_only(*folder)) {
		rc = kernels__error(KERNELS_EOFFLINE, "offline: variant %s of %s is not in the cache (only its "
				    "metadata.json); download it while online (libkernels download, or unset "
				    "HF_HUB_OFFLINE)", variant, p->what);
		free(*folder);
		*folder = NULL;
	}
	free(snapshot);
	return rc;
}

int kernels__plan_load(const kernels__config *cfg, plan *p, const char *folder, kernels_get_stats *stats,
		       kernels_kernel **out)
{
	const char *variant = strrchr(folder, '/') + 1;
	char *root = kernels__cache_repo_dir(cfg, p->type, p->repo_id);
	double t0 = kernels__now_ms_precise();
	int rc;

	rc = !root ? KERNELS_ENOMEM : kernels__cache_guard(cfg, p->type, p->repo_id);
	if (rc == 0)
		rc = kernels__loader_open(cfg, p->repo_id, kernels_revision_commit(p->rev), variant, folder, root, out);
	stats->load_ms = kernels__now_ms_precise() - t0;
	free(root);
	return rc;
}

/* 1 when `folder` holds nothing but metadata.json: what the arch check
 * (read_archs) leaves of a variant it did not download. */
static int metadata_only(const char *folder)
{
	DIR *d = opendir(folder);
	struct dirent *e;
	int others = 0;

	while (d && !others && (e = readdir(d)))
		others = strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "metadata.json");
	if (d)
		closedir(d);
	return !others;
}

/* A commit's files never change, so a variant already in the snapshot needs
 * no listing from the Hub: its metadata digest, checked before dlopen,
 * proves it complete and intact. Returns 0 when loaded from the cache, 1
 * when the variant must be fetched (absent or incomplete), or an error. */
static int load_cached(const kernels__config *cfg, plan *p, const char *variant, kernels_get_stats *stats,
		       kernels_kernel **out)
{
	char *dir = kernels__cache_repo_dir(cfg, p->type, p->repo_id), *folder, *meta;
	int rc = 1;

	folder = dir ? kernels__sprintf("%s/snapshots/%s/build/%s", dir, kernels_revision_commit(p->rev), variant) : NULL;
	meta = folder ? kernels__sprintf("%s/metadata.json", folder) : NULL;
	if (!meta) {
		rc = KERNELS_ENOMEM;
	} else if (!cfg->offline && access(meta, F_OK) == 0 && !metadata_only(folder)) {
		rc = kernels__plan_load(cfg, p, folder, stats, out);
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

static int fetch_and_load(const kernels__config *cfg, plan *p, kernels_get_stats *stats, kernels_kernel **out)
{
	const char *variant = kernels_variant_trace_chosen(p->trace);
	char *folder = NULL;
	int rc;

	if (!variant) /* with 0.17's hint when the newest version has a build that fits */
		return kernels__no_match_hint(cfg, p->repo_id, p->sys,
					      kernels__variant_no_match(p->trace, p->what, p->sys));
	if ((rc = load_cached(cfg, p, variant, stats, out)) <= 0)
		return rc;
	rc = kernels__plan_fetch(cfg, p, variant, stats, &folder);
	if (rc == 0)
		rc = kernels__plan_load(cfg, p, folder, stats, out);
	free(folder);
	return rc;
}

int kernels__plan_fetch_and_load(const kernels__config *cfg, plan *p, kernels_get_stats *stats, kernels_kernel **out)
{
	return fetch_and_load(cfg, p, stats, out);
}

/* ---- the Hub cannot be reached --------------------------------------------- */

/* The one place that decides the cache answers when the Hub cannot be
 * reached: the stages only report KERNELS_ENETWORK (the current error says
 * why). What the cache holds was verified, and its publisher trusted, when
 * it was downloaded, so it may answer, exactly as offline; nothing new is
 * fetched, so nothing unverified can arrive. The run from the cache says
 * KERNELS_ENETWORK, with both halves, for what the cache lacks. */
typedef struct {
	kernels__config cfg;  /* shallow copy of the call's: strings stay owned by it */
	char reason[2048];    /* the network error */
	char why[2600];       /* "the Hub at X cannot be reached (reason)" */
} fallback;

/* 1 with `f` set up for the run from the cache, 0 when `rc` stands. */
static int fallback_begin(const kernels__config *cfg, int rc, fallback *f)
{
	if (rc != KERNELS_ENETWORK || cfg->offline)
		return 0;
	snprintf(f->reason, sizeof(f->reason), "%s", kernels_error_last());
	snprintf(f->why, sizeof(f->why), "the Hub at %s cannot be reached (%s)", cfg->endpoint, f->reason);
	f->cfg = *cfg;
	f->cfg.offline = 1;
	f->cfg.offline_why = f->why;
	return 1;
}

/* After the run from the cache: a warning when it answered; a miss that a
 * stage reported as offline becomes the Hub's being down. */
static int fallback_end(const kernels__config *cfg, int rc, const fallback *f, const char *what)
{
	char inner[2048];

	if (rc == 0)
		kernels__log(cfg, KERNELS_LOG_WARNING, "%s; using the cached answer for %s", f->why, what);
	if (rc != KERNELS_EOFFLINE)
		return rc;
	snprintf(inner, sizeof(inner), "%s", kernels_error_last());
	return kernels__error(KERNELS_ENETWORK, "%s, and the cache at %s cannot answer for %s (%s); try again when "
			      "the Hub answers", f->why, cfg->cache_dir, what, inner);
}

/* What the cache lacks for kernels_get, said plainly: the Hub being down is
 * the reason given once, the cache's gap the other half, and nothing about
 * "offline" (the caller did not ask for that). `p` tells how far the plan
 * got. */
static int cache_lacks(const kernels__config *cfg, const char *repo_id, const char *revision, const plan *p,
		       const char *reason)
{
	const char *variant = p->trace ? kernels_variant_trace_chosen(p->trace) : NULL;
	char lacks[512];

	if (!p->rev)
		snprintf(lacks, sizeof(lacks), "no record of revision '%s' of %s", revision ? revision : "", repo_id);
	else if (!variant)
		snprintf(lacks, sizeof(lacks), "no variant list for %s at commit %s", p->repo_id ? p->repo_id : repo_id,
			 kernels_revision_commit(p->rev));
	else
		snprintf(lacks, sizeof(lacks), "no copy of variant %s of %s at commit %s", variant, p->repo_id,
			 kernels_revision_commit(p->rev));
	return kernels__error(KERNELS_ENETWORK, "the Hub is down or not answering (%s), and the cache at %s lacks what "
			      "was asked: %s; try again when the Hub answers, or ask for a revision the cache holds",
			      reason, cfg->cache_dir, lacks);
}

/* What locking needs (project.c): the revision, its redirects and the
 * publisher's trust, from the cache when the Hub is down. */
int kernels__plan_resolve(const kernels__config *cfg, const char *repo_id, const char *revision, plan *p)
{
	fallback f;
	int rc = resolve(cfg, repo_id, revision, NULL, p);

	if (fallback_begin(cfg, rc, &f)) {
		kernels__plan_free(p);
		rc = resolve(&f.cfg, repo_id, revision, NULL, p);
		if (rc == KERNELS_EOFFLINE)
			rc = cache_lacks(cfg, repo_id, revision, p, f.reason);
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
	rc = plan_remote_from(cfg, repo_id, revision, first, p, stats);
	stats->resolve_ms += first_ms; /* the revision, asked before the plan */
	if (rc == 0)
		rc = fetch_and_load(cfg, p, stats, out);
	/* A redirect's destination may move under the same commit: never memoised. */
	if (rc == 0 && memo && !strcmp(p->repo_id, repo_id)) {
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
	fallback f;
	char *local = NULL, tried[2048] = "";
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
		rc = kernels__loader_open_local(cfg, repo_id, local, NULL, out);
		stats->load_ms = kernels__now_ms_precise() - t0;
		if (rc < 0)
			kernels__error_prefix("loading %s from LOCAL_KERNELS path '%s'", repo_id, local);
		free(local);
		return rc;
	}
	/* The endpoints in turn (a mirror, then the Hub), under one deadline. */
	rc = KERNELS_ERROR;
	for (i = 0; i < cfg->n_endpoints; i++) {
		kernels__config_at_endpoint(cfg, i, &at);
		kernels__plan_free(&p);
		rc = get_at(&at, repo_id, revision, &p, stats, out, memo);
		if (rc == 0 || cfg->offline || !kernels__endpoint_failover(rc) || i + 1 == cfg->n_endpoints)
			break;
		kernels__log(cfg, KERNELS_LOG_INFO, "%s failed (%s); trying %s", at.endpoint, kernels_error_last(),
			     cfg->endpoints[i + 1]);
		snprintf(tried + strlen(tried), sizeof(tried) - strlen(tried), "%s%s: %.300s", *tried ? "; " : "",
			 at.endpoint, kernels_error_last());
	}
	/* No memo for the run from the cache: it chooses among the variants
	 * the cache holds, which a call with the Hub up should not inherit. */
	if (fallback_begin(cfg, rc, &f)) {
		kernels__plan_free(&p);
		rc = get_at(&f.cfg, repo_id, revision, &p, stats, out, NULL);
		if (rc == KERNELS_EOFFLINE)
			rc = cache_lacks(cfg, repo_id, revision, &p, f.reason);
		rc = fallback_end(cfg, rc, &f, repo_id);
	}
	if (rc < 0 && *tried)
		kernels__error_prefix("tried %s first", tried);
	kernels__plan_free(&p);
	return rc;
}

int kernels_get_ext(kernels_kernel **out, const char *repo_id, const char *revision, const kernels_options *opts,
		    kernels_get_stats *stats)
{
	kernels__config cfg;
	kernels_get_stats scratch;
	kernels__buf memo = { 0 };
	char commit[41];
	double t0 = kernels__now_ms_precise();
	int rc, pinned = 0;

	if (!out)
		return kernels__error(KERNELS_EINVAL, "kernels_get: out is NULL; pass the address of a kernels_kernel *");
	*out = NULL;
	if (!stats)
		stats = &scratch;
	memset(stats, 0, sizeof(*stats));
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
	return kernels_get_ext(out, repo_id, revision, opts, NULL);
}

/* The variant decisions for `repo_id`: LOCAL_KERNELS' tree, else the plan
 * at the endpoints in turn. *out (the caller's) is the trace. */
static int decide_variants(const kernels__config *cfg, const char *repo_id, const char *revision, plan *p,
			   kernels_variant_trace **out)
{
	kernels_get_stats stats;
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
		kernels__config_at_endpoint(cfg, i, &at);
		kernels__plan_free(p);
		rc = kernels__plan_remote(&at, repo_id, revision, p, &stats);
		if (rc == 0 || cfg->offline || !kernels__endpoint_failover(rc))
			break;
	}
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
			rc = cache_lacks(cfg, repo_id, revision, &p, f.reason);
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
	int rc;

	if (!out)
		return kernels__error(KERNELS_EINVAL, "kernels_get_variants: out is NULL");
	*out = NULL;
	if ((rc = kernels__config_load(&cfg, opts)) < 0)
		return rc;
	rc = variants_with_fallback(&cfg, repo_id, revision, out, NULL);
	kernels__config_free(&cfg);
	return rc;
}

int kernels_has_kernel(const char *repo_id, const char *revision, const kernels_options *opts)
{
	kernels_variant_trace *trace = NULL;
	kernels__config cfg;
	int rc, has = 0;

	if ((rc = kernels__config_load(&cfg, opts)) < 0)
		return rc;
	rc = variants_with_fallback(&cfg, repo_id, revision, &trace, &has);
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
	return rc;
}

int kernels_info_get(kernels_info **out, const char *kernel, const char *revision, const kernels_options *opts)
{
	kernels__config cfg;
	fallback f;
	int rc;

	if (!out || !kernel || !*kernel)
		return kernels__error(KERNELS_EINVAL, "kernels_info_get: out and kernel (a repo id or a folder) must be given");
	*out = NULL;
	if ((rc = kernels__config_load(&cfg, opts)) < 0)
		return rc;
	rc = kernels__info_get(&cfg, out, kernel, revision);
	if (fallback_begin(&cfg, rc, &f))
		rc = fallback_end(&cfg, kernels__info_get(&f.cfg, out, kernel, revision), &f, kernel);
	kernels__config_free(&cfg);
	return rc;
}
