/* Internal: the steps of kernels_get, for the locked workflow (project.c)
 * that runs them with a pinned commit and checks lock hashes between
 * fetching and loading. */
#ifndef KERNELS_LIB_GET_H
#define KERNELS_LIB_GET_H

#include "kernels/get.h"
#include "kernels/revision.h"
#include "config.h"
#include "repo.h"

/* What the remote part of the pipeline settled on. */
typedef struct {
	char *repo_id;               /* after redirects */
	kernels_revision *rev;
	kernels__repo_type type;
	kernels_system *sys;
	kernels_variant_trace *trace;
	char *what;                  /* "org/x@abc1234", for messages */
} kernels__plan;

/* Trust check, revision resolution and redirects only: what locking needs;
 * from the cache (with a warning) when the Hub cannot be reached. */
int kernels__plan_resolve(const kernels__config *cfg, const char *repo_id, const char *revision,
			  kernels__plan *p);
/* Trust check, revision resolution, redirects, variant listing and
 * resolution. `stats` receives resolve/select timings. */
int kernels__plan_remote(const kernels__config *cfg, const char *repo_id, const char *revision,
			 kernels__plan *p, kernels_get_stats *stats);
/* Downloads build/{variant} of the plan's commit; *folder (malloc'ed) is
 * the variant's snapshot folder. */
int kernels__plan_fetch(const kernels__config *cfg, kernels__plan *p, const char *variant,
			kernels_get_stats *stats, char **folder);
/* The variant the plan chose: from the cache when complete there, else
 * fetched; then verified and loaded (kernels_get's last steps). */
int kernels__plan_fetch_and_load(const kernels__config *cfg, kernels__plan *p, kernels_get_stats *stats,
				 kernels_kernel **out);
/* Verifies and loads a fetched variant folder. */
int kernels__plan_load(const kernels__config *cfg, kernels__plan *p, const char *folder,
		       kernels_get_stats *stats, kernels_kernel **out);
void kernels__plan_free(kernels__plan *p);

#endif
