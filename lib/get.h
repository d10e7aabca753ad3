/* Internal: what get.c offers the locked workflow (project.c) beyond the
 * plan (plan.h): locking's resolution, with get.c's fallback to the cache. */
#ifndef KERNELS_LIB_GET_H
#define KERNELS_LIB_GET_H

#include "plan.h"

/* Trust check, revision resolution and redirects only: what locking needs;
 * from the cache (with a warning) when the Hub cannot be reached. */
int kernels__plan_resolve(const kernels__config *cfg, const char *repo_id, const char *revision,
			  kernels__plan *p);

#endif
