/* Internal: variant resolution for the pipeline (kernels_get joins it). */
#ifndef KERNELS_LIB_VARIANT_H
#define KERNELS_LIB_VARIANT_H

#include "kernels/kernel.h"
#include "kernels/variant.h"
#include "config.h"

/* Resolves candidates against `sys` (never NULL here: the caller detected
 * it with kernels__system_detect). Warnings for unknown names go through
 * kernels__log(cfg); `what` ("org/x (revision: v1)", may be NULL) names the
 * repo in them. */
int kernels__variant_resolve(const kernels__config *cfg, const char *what,
			     const kernels_variant_candidate *candidates, size_t count,
			     const kernels_system *sys, kernels_variant_trace **out);

/* Where a variant's metadata.json comes from, for its backend.archs: the
 * Hub's copy at a commit (plan.c) or a local tree's (loader.c). 0 with *m
 * NULL when there is none that reads (the variant stays a candidate, archs
 * unknown); <0 only for what must stop the call (out of memory, the Hub
 * failing). */
typedef int (*kernels__variant_metadata_fn)(void *ctx, const char *name, kernels_metadata **m);

/* The one variant selection, for the Hub and for local trees: `names` (a
 * commit's build/ listing, a tree's folders), the metadata of the
 * candidates the arch check will look at (the system's backend, with GPUs
 * and an arch check: the rest are never read; `metadata` may be NULL) and
 * kernels__variant_resolve. */
int kernels__variant_select(const kernels__config *cfg, const char *what, char *const *names, size_t count,
			    kernels__variant_metadata_fn metadata, void *ctx, const kernels_system *sys,
			    kernels_variant_trace **out);

/* Raises KERNELS_ENOMATCH: "no build variant of <what> fits this system
 * (<system>); <trace>" and returns it. For kernels_get when chosen is NULL. */
int kernels__variant_no_match(const kernels_variant_trace *trace, const char *what, const kernels_system *sys);

#endif
