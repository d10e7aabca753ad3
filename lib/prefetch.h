/* Internal: a commit's first requests, asked side by side.
 *
 * Once the revision is a commit, three answers are needed before a variant
 * can be chosen, and none depends on another: the publisher's trust, the
 * commit's kernel-status.toml (a redirect, or none) and its build/ listing.
 * Asked one after the other they cost three round trips; the trust check
 * runs in the calling thread while up to two helper threads ask for the
 * other two, which land in the cache (the snapshot file or
 * huggingface_hub's .no_exist marker; the listing record, lib/listing.h).
 * The stages then read them from there exactly as before, so nothing else
 * changes: a prefetch that failed is asked again, with its error, by the
 * stage that needs it. Nothing starts offline, or when the cache already
 * answers; the threads log nothing and report no progress (the stages do),
 * and are joined before the call goes on: none outlives it. */
#ifndef KERNELS_LIB_PREFETCH_H
#define KERNELS_LIB_PREFETCH_H

#include <pthread.h>

#include "config.h"
#include "repo.h"

typedef struct {
	kernels__config cfg;      /* the call's, silenced (no log, no progress) */
	kernels__repo_type type;
	const char *repo_id, *commit;
	pthread_t status, listing;
	int status_started, listing_started;
} kernels__prefetch;

/* Starts what the cache lacks; `repo_id` and `commit` must outlive the join. */
void kernels__prefetch_start(kernels__prefetch *pf, const kernels__config *cfg, kernels__repo_type type,
			     const char *repo_id, const char *commit);
/* Waits for the helper threads (none: returns at once). */
void kernels__prefetch_join(kernels__prefetch *pf);

#endif
