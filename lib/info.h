/* Internal: lib/info.c's helpers for the pipeline. */
#ifndef KERNELS_LIB_INFO_H
#define KERNELS_LIB_INFO_H

#include "kernels/info.h"
#include "kernels/system.h"
#include "config.h"

/* kernels_info_get with a loaded configuration (get.c adds the fallback to
 * the cache when the Hub cannot be reached). */
int kernels__info_get(const kernels__config *cfg, kernels_info **out, const char *kernel, const char *revision);

/* When no variant of `repo_id` fits: Python kernels 0.17's hint, appended to
 * the current error message, that its newest version (the highest vN
 * branch) has a build that fits `sys`, naming it. Best effort: never a
 * different error (offline: no hint). Returns `rc`. */
int kernels__no_match_hint(const kernels__config *cfg, const char *repo_id, const kernels_system *sys, int rc);

#endif
