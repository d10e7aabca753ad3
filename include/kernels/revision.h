/*
 * libkernels: turning what a caller asked for ("main", "v1.1.2", "1",
 * ">=1.1.2,<2", "4148918", a full commit id) into one 40-hex commit id of
 * a Hub repository, and listing the versions a repository offers.
 *
 * Resolution order for kernels_revision_resolve (first match wins):
 *
 *   1. NULL or "" is refused (KERNELS_EINVAL): pin a branch, tag, commit
 *      or version.
 *   2. A full commit id (40 hex digits, either case) is used as is; no
 *      request is made.
 *   3. A branch, then a tag, with exactly that name ("main", "v1",
 *      "v1.1.2", "feature/x"); a full ref name ("refs/pr/1") also works.
 *   4. A bare major version N (1 to 6 digits): the branch "vN". A warning
 *      goes to the log callback when a higher "vM" branch exists. A ref
 *      named "N" itself wins (step 3), with a warning: Python kernels reads
 *      revision="1" as that ref, so both agree whenever it exists, and
 *      "1" means the branch v1 only where Python would find nothing.
 *   5. A short commit id, 7 to 39 hex digits: a branch or tag pointing at
 *      a commit with that prefix, else the Hub's revision API expands it.
 *      Unknown or ambiguous ids are errors.
 *   6. A PEP 440 specifier set (">=1.1.2,<2", "~=1.1", "==1.*",
 *      "!=1.1.0"): the highest "vX.Y.Z" tag whose version satisfies it
 *      (tags whose text after "v" is not a version are ignored;
 *      pre-releases only when the spec names one or nothing else fits).
 *   7. Anything else: KERNELS_ENOTFOUND naming the nearest branch and tag
 *      names.
 *
 * Where: the refs come from the repo's git remote,
 * {endpoint}/kernels/{org}/{name} (a kernel-type repo), falling back to
 * {endpoint}/{org}/{name} (model type) when the Hub does not know the
 * kernel-type repo. The token (HF_TOKEN or the token file) goes along as
 * "Authorization: Bearer" and never follows a redirect. Proxies come from
 * https_proxy / HTTPS_PROXY and no_proxy / NO_PROXY (libgit2 1.5 contacts
 * plain-http endpoints directly). The listing is retried like every Hub
 * request (connection errors, 5xx, 429; kernels_options.max_retries) and
 * bounded by twice kernels_options.timeout_ms per attempt.
 *
 * The cache: a resolved name is recorded under the repo's refs/ folder in
 * the Hugging Face cache (refs/main, refs/v1, refs/v1.1.2 for a spec that
 * chose that tag), exactly as huggingface_hub does, so that offline
 * (HF_HUB_OFFLINE=1 or kernels_options.offline) the same request resolves
 * without any network access: names through refs/, major versions through
 * refs/vN, specifier sets over the recorded "v*" names, short ids through
 * the recorded commits and snapshots. When the Hub cannot be reached
 * online (connection refused, DNS failure, timeout), or is not serving (a
 * 5xx or 429 on every retry), the cached answer is used with a warning.
 * Errors never write to the cache.
 *
 * Every function here is part of libkernels since 1.0 and may be called
 * from any thread unless its comment says otherwise (docs/threading.md).
 */
#ifndef KERNELS_REVISION_H
#define KERNELS_REVISION_H

#include "common.h"
#include "options.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Which form of revision matched (see the resolution order above). */
typedef enum {
	KERNELS_REVISION_COMMIT = 0,        /**< a full 40-hex commit id */
	KERNELS_REVISION_BRANCH = 1,        /**< a branch name ("main") */
	KERNELS_REVISION_TAG = 2,           /**< a tag name ("v1.1.2") */
	KERNELS_REVISION_SHORT_COMMIT = 3,  /**< a short commit id ("4148918") */
	KERNELS_REVISION_VERSION_SPEC = 4,  /**< a PEP 440 specifier set over vX.Y.Z tags */
	KERNELS_REVISION_MAJOR = 5          /**< a bare major version N: branch vN */
} kernels_revision_kind_t;

/** One resolved revision. Opaque; free with kernels_revision_free. */
typedef struct kernels_revision kernels_revision;

/**
 * Resolves `revision` of the Hub repository `repo_id` ("org/name") to one
 * commit, following the order described at the top of this header.
 *
 * `opts` may be NULL (defaults and the environment). On success `*out` is
 * a new object owned by the caller (kernels_revision_free); on failure
 * `*out` is NULL and kernels_error_last() says what failed and what to do.
 *
 * Returns 0, or:
 *  - KERNELS_EINVAL: NULL/empty revision, a revision with control
 *    characters, "..", or longer than 255 bytes, or a bad repo id;
 *  - KERNELS_EPARSE: a specifier set that does not parse (the message says
 *    where);
 *  - KERNELS_ENOTFOUND: unknown repo (neither a kernel nor a model repo),
 *    or unknown branch/tag/major/short id (the message lists the nearest
 *    names or the versions that exist);
 *  - KERNELS_EAMBIGUOUS: a short commit id that matches several commits;
 *  - KERNELS_ENOMATCH: no version satisfies the specifier set (the message
 *    names it and lists the versions that exist);
 *  - KERNELS_EAUTH: the repo is private or gated and no token was given,
 *    or the token was refused (set HF_TOKEN);
 *  - KERNELS_ENETWORK: the Hub could not be reached and the cache holds no
 *    answer;
 *  - KERNELS_EOFFLINE: offline and the cache holds no answer;
 *  - KERNELS_EHTTP: the Hub answered with an unexpected status;
 *  - KERNELS_ENOMEM.
 */
KERNELS_EXTERN(int) kernels_revision_resolve(kernels_revision **out, const char *repo_id,
					     const char *revision, const kernels_options *opts);

/** The resolved 40-hex lower-case commit id. Owned by `r`. */
KERNELS_EXTERN(const char *) kernels_revision_commit(const kernels_revision *r);

/** The repo id the revision belongs to ("org/name"). Owned by `r`. */
KERNELS_EXTERN(const char *) kernels_revision_repo_id(const kernels_revision *r);

/**
 * 1 when the repo was found as a model-type repo ({endpoint}/{org}/{name},
 * cache folder models--org--name) because no kernel-type repo of that
 * name exists, 0 for a kernel-type repo. For a full commit id (no request
 * made) or an offline answer this reflects the cache folder that holds
 * the repo (kernel unless only a models-- folder exists).
 */
KERNELS_EXTERN(int) kernels_revision_is_model_repo(const kernels_revision *r);

/**
 * Which form matched. Offline, the cache does not record whether a name
 * was a branch or a tag: "v" + a dotted version ("v1.1.2") is reported
 * as a tag and any other name as a branch.
 */
KERNELS_EXTERN(kernels_revision_kind_t) kernels_revision_kind(const kernels_revision *r);

/**
 * The branch or tag name the revision resolved through ("main", "v1",
 * "v1.1.2" for a spec that chose that tag), or NULL for full and short
 * commit ids. Owned by `r`.
 */
KERNELS_EXTERN(const char *) kernels_revision_ref(const kernels_revision *r);

/** Frees `r`; NULL is fine. */
KERNELS_EXTERN(void) kernels_revision_free(kernels_revision *r);

/**
 * Lists the versions `repo_id` offers: the names of its "v" + version
 * refs, both the current scheme's major-version branches ("v1", "v2") and
 * the seed era's tags ("v1.1.2"; tags whose text after "v" is not a PEP
 * 440 version are left out), sorted by version ascending (equal versions
 * by name), each name once. Every name can be passed back as a revision.
 *
 * Offline, or online when the Hub cannot be reached or is not serving (a
 * 5xx or 429 on every retry; with a warning), the names recorded in the
 * cache's refs/ folder are listed instead.
 *
 * On success `*versions` is an array of `*count` strings, the caller's:
 * one kernels_free(*versions) releases the array and its strings; it is
 * NULL when `*count` is 0. Returns 0, or KERNELS_EINVAL (bad repo id or NULL
 * pointers), KERNELS_ENOTFOUND, KERNELS_EAUTH, KERNELS_ENETWORK,
 * KERNELS_EOFFLINE (offline and nothing cached), KERNELS_EHTTP,
 * KERNELS_ENOMEM.
 */
KERNELS_EXTERN(int) kernels_versions_list(char ***versions, size_t *count, const char *repo_id,
					  const kernels_options *opts);

#ifdef __cplusplus
}
#endif

#endif
