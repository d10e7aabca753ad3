/* Internal: the refs a revision is matched against, a repo's branches and
 * tags with their commits: listed by the Hub (git smart HTTP through
 * gitls.c, or the REST listing a mirror serves instead), endpoint after
 * endpoint, or read from the cache's refs/ (refs.c). revision.c matches a
 * revision against them; versions.c lists the versions they name. */
#ifndef KERNELS_LIB_REFLIST_H
#define KERNELS_LIB_REFLIST_H

#include "kernels/revision.h"
#include "config.h"
#include "repo.h"

typedef struct {
	char *name;                 /* "main", "v1.1.2"; the full name for other refs ("refs/pr/1") */
	char *full;                 /* "refs/heads/main"; NULL for cache entries */
	char commit[41];
	kernels_revision_kind_t kind; /* BRANCH or TAG */
} kernels__ref_entry;

/* A zeroed struct is empty; free with kernels__reflist_free. */
typedef struct {
	kernels__ref_entry *v;
	size_t n, cap;
	kernels__repo_type type;    /* the repo type the refs were found under */
	int from_cache;             /* listed from the cache's refs/ */
	char *repo_dir;             /* the repo's cache folder (cache lists) */
} kernels__reflist;

void kernels__reflist_free(kernels__reflist *t);

/* The refs of repo_id from each endpoint in turn (a mirror, then the Hub),
 * under the call's one deadline: the kernel repo, else the model repo.
 * KERNELS_ENETWORK only when none could be reached, the error saying why
 * (get.c decides whether the cache answers instead); KERNELS_ENOTFOUND or
 * KERNELS_EAUTH when the repo is not there to read. */
int kernels__reflist_remote(const kernels__config *cfg, const char *repo_id, kernels__reflist *t);

/* The repo's folder in the cache (kernels__cache_repo_type): 1 with
 * t->repo_dir and t->type set when there is one, 0 when not. */
int kernels__reflist_cache_pick(const kernels__config *cfg, const char *repo_id, kernels__reflist *t);

/* The refs the cache recorded for repo_id (offline): 1 with `t` filled, 0
 * when the repo is not in the cache. */
int kernels__reflist_cached(const kernels__config *cfg, const char *repo_id, kernels__reflist *t);

/* Looks a name up among the refs of one kind; NULL when absent. */
const kernels__ref_entry *kernels__reflist_find(const kernels__reflist *t, const char *name,
						kernels_revision_kind_t kind);

/* Why a call answers from the cache, for messages, and the code a miss
 * becomes: KERNELS_EOFFLINE when the caller asked for offline,
 * KERNELS_ENETWORK when get.c runs it offline because the Hub cannot be
 * reached, KERNELS_EHTTP when because it is not serving (a 5xx or 429). */
int kernels__reflist_offline_why(const kernels__config *cfg, const char **why);

#endif
