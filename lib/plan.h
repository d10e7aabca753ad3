/* Internal: the plan of one kernel (lib/plan.c), the steps kernels_get
 * (get.c), a dependency (deps.c) and a locked load (project.c) share. */
#ifndef KERNELS_LIB_PLAN_H
#define KERNELS_LIB_PLAN_H

#include "kernels/get.h"
#include "kernels/revision.h"
#include "config.h"
#include "cache.h"
#include "loader.h"
#include "repo.h"
#include "fs.h"

/* What the remote part of the pipeline settled on. */
typedef struct {
	kernels__repo repo;          /* after redirects; its type decided once (download.c: kernels__repo_locate) */
	kernels_revision *rev;
	kernels_system *sys;
	kernels_variant_trace *trace;
	char *what;                  /* "org/x@abc1234", for messages */
	/* Set by the caller before planning: a lock's pin (locking, a locked
	 * load). kernel-status.toml's redirect is then only warned about: the
	 * commit of the repo named is what is locked and loaded, as kernels
	 * 0.17.2 does. Survives kernels__plan_resolve's retry. */
	int pinned;
	/* kernels__cache_guard passed for `repo` (its folders are real ones or
	 * absent): run once, when the repo and its type are settled, before
	 * anything of it is read or written; the stages after are told so
	 * (kernels__plan_guarded) instead of looking again. */
	int guarded;
	/* Set by the caller before planning: the plan ends in a download when
	 * the cache lacks the commit's variant (kernels_get, a dependency, a
	 * locked load), so the CDN's connection may open early (hub_warm.c). */
	int fetch;
	/* What deciding that read of the commit's build/ in the cache, which
	 * the load from the cache asks before listing a folder again. */
	kernels__cache_seen seen;
	/* Set by the caller before planning: records nothing later in the call
	 * reads (the "trusted" verdict's) are flushed and renamed on helper
	 * threads, `records`, which the caller joins with kernels__plan_settle
	 * before it returns. Unset, they are written in line. */
	int records_later;
	kernels__write_later *records;
} kernels__plan;

/* The download stage's flags (download.h) for the plan's repo. */
unsigned int kernels__plan_guarded(const kernels__plan *p);

/* Revision resolution (`first`, may be NULL and is taken over, when the
 * caller resolved it already), kernel repo or model repo, the publisher's
 * trust and kernel-status.toml's redirects. No fallback to the cache when
 * the Hub is down: KERNELS_ENETWORK (get.c decides). */
int kernels__plan_revision(const kernels__config *cfg, const char *repo_id, const char *revision,
			   kernels_revision *first, kernels__plan *p);
/* kernels__plan_revision, then the variant listing and resolution.
 * `stats` receives resolve/select timings. */
int kernels__plan_remote_from(const kernels__config *cfg, const char *repo_id, const char *revision,
			      kernels_revision *first, kernels__plan *p, kernels_get_stats *stats);
int kernels__plan_remote(const kernels__config *cfg, const char *repo_id, const char *revision,
			 kernels__plan *p, kernels_get_stats *stats);
/* Downloads build/{variant} of the plan's commit; *folder (malloc'ed) is
 * the variant's snapshot folder. `recheck`: the variant failed a check
 * after such a fetch, so its cached blobs are hashed against their names
 * first (KERNELS__DOWNLOAD_RECHECK). */
int kernels__plan_fetch(const kernels__config *cfg, kernels__plan *p, const char *variant, int recheck,
			kernels_get_stats *stats, char **folder);
/* The variant the plan chose: from the cache when complete there, else
 * fetched; then verified and loaded, `deps` loading its kernel-depends
 * first (kernels_get's last steps). */
int kernels__plan_fetch_and_load(const kernels__config *cfg, kernels__plan *p, kernels__deps_fn deps,
				 kernels_get_stats *stats, kernels_kernel **out);
/* After the last fetch of a variant: `rc` KERNELS_EINTEGRITY (online), it
 * was fetched as listed, every blob as its name says, and still refused by
 * its checks. The listing may be what put a file there, so it is not kept
 * to put it there again once the folder is deleted, as the message says. */
void kernels__plan_refused(const kernels__config *cfg, kernels__plan *p, int rc);
/* Verifies and loads a fetched variant folder (`deps` as above). */
int kernels__plan_load(const kernels__config *cfg, kernels__plan *p, const char *folder, kernels__deps_fn deps,
		       kernels_get_stats *stats, kernels_kernel **out);
/* Joins the plan's records (records_later), logging a failed one as
 * their in-line writes do; the plan stays as it is otherwise. */
void kernels__plan_settle(const kernels__config *cfg, kernels__plan *p);
/* Frees the plan; records still unjoined are joined (unlogged). */
void kernels__plan_free(kernels__plan *p);

#endif
