/* Internal: the revision stage of the pipeline (include/kernels/revision.h
 * documents the behaviour), for callers that already hold a config. */
#ifndef KERNELS_LIB_REVISION_H
#define KERNELS_LIB_REVISION_H

#include "kernels/revision.h"
#include "config.h"
#include "repo.h"

struct kernels_revision {
	char *repo_id;
	char commit[41];             /* lower-case 40-hex */
	char *ref;                   /* branch/tag name resolved through, or NULL */
	kernels_revision_kind_t kind;
	kernels__repo_type type;     /* where the repo was found (or guessed from the cache) */
	int from_cache;              /* 1 when answered from refs/ (offline or Hub unreachable) */
};

/* kernels_revision_resolve with an already-loaded configuration. `*out` is
 * owned by the caller (kernels_revision_free). Same errors. */
int kernels__revision_resolve(const kernels__config *cfg, const char *repo_id, const char *revision,
			      kernels_revision **out);

/* kernels_versions_list with an already-loaded configuration. */
int kernels__versions_list(const kernels__config *cfg, const char *repo_id, char ***versions, size_t *count);

/* Checks a revision string before anything else looks at it: non-empty,
 * at most 255 bytes, no control characters, no "..". KERNELS_EINVAL with a
 * message otherwise (NULL/empty: "pin a branch, tag, commit or version"). */
int kernels__revision_check(const char *revision);

/* Levenshtein distance of two strings (bytes), capped at `cap`. */
size_t kernels__edit_distance(const char *a, const char *b, size_t cap);

#endif
