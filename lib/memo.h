/* Internal: kernels_get's in-process memo.
 *
 * A second kernels_get of a variant the process already holds loaded
 * should cost next to nothing: for a full commit id no request and no
 * system call (the answer cannot change: a commit is immutable, and so is
 * the variant chosen for it under the same settings); for a branch, tag,
 * vN or specifier one refs request, to see whether the name moved (none
 * while kernels_options.revision_ttl_s says a name resolved earlier may be
 * taken as it was).
 *
 * The memo maps the settings that decide the answer (endpoints, cache
 * folder, offline, trust, system overrides, every HF_* and KERNELS_*
 * variable of the environment and the others that decide one, as
 * XDG_CACHE_HOME: see memo.c's env_counts), the repo and
 * the commit to the handle kernels_get returned. It holds no reference:
 * a hit takes one through the loader's registry, and an entry whose
 * handle was closed (gone from the registry) is dropped and the call takes
 * the whole path again. An entry also goes stale when the process loads or
 * unloads a shared object (the system a variant is chosen for, torch or
 * tvm-ffi, may have changed): dl_iterate_phdr's counters are part of it.
 * A redirected repo (kernel-status.toml) is never memoised. Process-wide,
 * mutex-protected. */
#ifndef KERNELS_LIB_MEMO_H
#define KERNELS_LIB_MEMO_H

#include "kernels/kernel.h"
#include "kernels/options.h"
#include "util.h"

/* The settings part of the key, from `opts` (NULL: defaults) and the
 * environment; never the token. -1 when opts cannot be memoised (a wrong
 * version: the call itself says what is wrong; out of memory: never a key
 * short of a field), else 0. */
int kernels__memo_settings(const kernels_options *opts, kernels__buf *out);

/* 1 and *out (one more reference) when the memo holds a live handle for
 * (settings, repo_id, commit); 0 otherwise. `commit`: 40 lower-case hex. */
int kernels__memo_take(const char *settings, const char *repo_id, const char *commit, kernels_kernel **out);

/* Records what kernels_get answered (k must be the handle it returns). */
void kernels__memo_put(const char *settings, const char *repo_id, const char *commit, const kernels_kernel *k);

/* Names: 1 and `commit` when (settings, repo_id, revision) was resolved
 * to a commit by a kernels_get of this process less than ttl_ms ago. */
int kernels__memo_name(const char *settings, const char *repo_id, const char *revision, long long ttl_ms,
		       char commit[41]);
void kernels__memo_name_put(const char *settings, const char *repo_id, const char *revision, const char *commit);

#ifdef KERNELS_TESTING
/* The test build only: forgets everything ("a fresh process"). */
void kernels__memo_clear(void);
/* The test build only: how many entries each list holds now. */
void kernels__memo_counts(size_t *n_handles, size_t *n_names);
#endif

#endif
