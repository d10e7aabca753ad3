/* Internal: a commit's first requests, asked side by side.
 *
 * Once the revision is a commit, three answers are needed before a variant
 * can be chosen, and none depends on another: the publisher's trust, the
 * commit's kernel-status.toml (a redirect, or none) and its build/ listing.
 * Asked one after the other they cost three round trips; the trust check
 * runs in the calling thread while up to two helper threads list the
 * commit's top folder (an API request, as the trust check is: no file is
 * fetched before the verdict) and its build/ folder, which land in the
 * cache (huggingface_hub's .no_exist marker when the top folder has no
 * kernel-status.toml; the listing record, lib/listing.h).
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
	int status_rc, listing_rc;          /* what each helper met */
	char status_msg[1024], listing_msg[1024];
} kernels__prefetch;

/* Starts what the cache lacks; `repo_id` and `commit` must outlive the join. */
void kernels__prefetch_start(kernels__prefetch *pf, const kernels__config *cfg, kernels__repo_type type,
			     const char *repo_id, const char *commit);
/* Waits for the helper threads (none: returns at once). */
void kernels__prefetch_join(kernels__prefetch *pf);
/* After the join: KERNELS_ENETWORK, with its message as the current error,
 * when a helper could not reach the Hub (it hung past the deadline, say),
 * else 0. When the call's deadline is gone, that is the reason to give:
 * what the call waited for, not the request it had no time left to send. */
int kernels__prefetch_failure(const kernels__prefetch *pf);

#endif
