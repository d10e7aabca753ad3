/*
 * libkernels: the cache on disk, looked into and pruned.
 *
 * The cache is huggingface_hub's (same folder, same layout), so what either
 * client fetched is listed and can be removed:
 *
 *   {cache}/kernels--{org}--{name}/blobs/{etag}        file contents
 *   {cache}/kernels--{org}--{name}/snapshots/{commit}/build/{variant}/...
 *                                                      relative links to blobs/
 *   {cache}/kernels--{org}--{name}/refs/{name}         the commit a name pointed at
 *   {cache}/.locks/kernels--{org}--{name}/             locks
 *
 * ({cache} is kernels_options.cache_dir, else $KERNELS_CACHE, $HF_HUB_CACHE,
 * $HF_HOME/hub, ~/.cache/huggingface/hub; model-type repos use models--.)
 *
 * Removal and downloads exclude each other: a download (kernels_download,
 * kernels_get, ...) holds the repo's lock shared from the moment it looks
 * at what is cached until its last link is made, and a removal holds it
 * exclusively, so a removal never takes files from under a download and a
 * download never writes into a folder being removed. A file download of
 * huggingface_hub in progress (its per-file lock held) makes a removal
 * refuse as well. Nothing here needs the network.
 *
 * Every function here is part of libkernels since 1.0 (unless its comment
 * says a later release) and may be called from any thread unless its
 * comment says otherwise (docs/threading.md).
 */
#ifndef KERNELS_CACHE_H
#define KERNELS_CACHE_H

#include "common.h"
#include "options.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The cache folder `opts` resolves to, or with `repo_id` the repo's folder
 * in it: kernels--org--name, or models--org--name when only that one
 * exists. Nothing is created or checked to exist. `*out` is the
 * caller's: release it with kernels_free(). Errors: KERNELS_EINVAL (NULL
 * out, invalid repo id, an options version this library does not know),
 * KERNELS_ENOMEM.
 */
KERNELS_EXTERN(int) kernels_cache_path(char **out, const char *repo_id, const kernels_options *opts);


/** A variant folder of a cached revision: snapshots/{commit}/build/{name}. */
typedef struct {
	const char *name;          /**< "torch211-cxx11-cpu-x86_64-linux" */
	size_t files;              /**< regular files under it, links followed */
	unsigned long long size;   /**< their bytes */
} kernels_cache_variant;

/** A cached revision: snapshots/{commit}. */
typedef struct {
	const char *commit;                    /**< the folder's name, a 40-hex commit id */
	const char *const *refs;               /**< the names under refs/ that hold this commit, sorted */
	size_t refs_count;
	const kernels_cache_variant *variants; /**< build/{variant} folders, sorted by name */
	size_t variants_count;
} kernels_cache_revision;

/** A cached repo: one kernels-- (or models--) folder. */
typedef struct {
	const char *repo_id;                     /**< "org/name" */
	int is_model;                            /**< 1: a models-- folder (a model-type repo) */
	const char *path;                        /**< the folder, {cache}/kernels--org--name */
	unsigned long long size;                 /**< bytes of every file in the folder (blobs, refs, the Python-free
						      copies and receipts under .libkernels/), links not followed: what
						      removing it frees */
	size_t blobs;                            /**< files in blobs/ */
	const char *const *ref_names;            /**< every valid name under refs/, sorted; a file that holds no
						      commit id (empty after a crash, say) is left out, with a
						      warning naming it (kernels_options.log_cb) */
	const char *const *ref_commits;          /**< the commit each of them holds */
	size_t refs_count;
	const kernels_cache_revision *revisions; /**< snapshots/ folders, sorted by commit */
	size_t revisions_count;
} kernels_cache_repo;

/** What the cache holds. Every pointer is owned by it, read-only. */
typedef struct {
	const char *cache_dir;           /**< the cache folder scanned */
	unsigned long long size;         /**< the repos' sizes added up */
	const kernels_cache_repo *repos; /**< sorted by folder name (kernels-- before models--) */
	size_t repos_count;
} kernels_cache_info;

/**
 * Scans the cache: every kernels--{org}--{name} folder, and every
 * models--{org}--{name} folder that holds build variants (an ordinary model
 * is left out), or with `repo_id` only that repo's folders. Reads the
 * folders as they are: a repo, snapshot or variant folder that is a link
 * is left out, and only a variant's size follows links (to the blobs they
 * name). Nothing is written. `*out` is the caller's:
 * kernels_cache_info_free(). A cache folder that does not exist is an
 * empty cache. Returns 0, KERNELS_EINVAL (NULL out, invalid repo id),
 * KERNELS_ENOMEM.
 */
KERNELS_EXTERN(int) kernels_cache_scan(kernels_cache_info **out, const char *repo_id, const kernels_options *opts);

/** Frees a scan; NULL is fine. */
KERNELS_EXTERN(void) kernels_cache_info_free(kernels_cache_info *info);

/** kernels_cache_remove flags. */
#define KERNELS_CACHE_DRY_RUN 1u /**< remove nothing: list what would be removed */
#define KERNELS_CACHE_WAIT 2u    /**< wait for downloads of the repo to end instead of refusing */

/** What a removal removed (or, a dry run, would remove). */
typedef struct {
	const char *repo_id;        /**< as given */
	const char *commit;         /**< the revision removed; NULL when the whole repo was */
	const char *const *removed; /**< the paths removed, in order: folders with everything under them */
	size_t removed_count;
	unsigned long long freed;   /**< bytes of the regular files among them */
	int dry_run;                /**< 1 when nothing was removed */
} kernels_cache_removal;

/**
 * Removes `repo_id` from the cache: its kernels-- and models-- folders and
 * their lock folders. With `revision` (a commit id, or a prefix of one of 4
 * hex digits or more, or a name under refs/), only that snapshot: its
 * folder, the refs/ names holding its commit, and the blobs no other
 * snapshot links to, with what libkernels keeps beside each (its download
 * receipt, a module's Python-free copy and that copy's receipt, under
 * .libkernels/) (a blob being written, *.incomplete, stays); when it
 * was the last snapshot, the whole repo goes. Links are removed as links
 * and never followed, and nothing outside the repo's folders is touched (a
 * repo folder that is a link is not the repo's: "not in the cache").
 *
 * A download of the repo in progress (this process or another) makes it
 * refuse with KERNELS_EBUSY before anything is removed, or, with
 * KERNELS_CACHE_WAIT, wait for the download to end. `out` may be NULL;
 * otherwise `*out` is the caller's (kernels_cache_removal_free), set on
 * success and on a KERNELS_EIO part way, then listing what was removed.
 *
 * Returns 0, KERNELS_EINVAL (invalid repo id, empty revision, unknown
 * flags), KERNELS_ENOTFOUND (no such repo or revision in the cache, or no
 * cache), KERNELS_EAMBIGUOUS (a commit prefix matching several snapshots),
 * KERNELS_EBUSY, KERNELS_EIO (the message names the first path that could
 * not be removed; the rest was still tried) or KERNELS_ENOMEM.
 */
KERNELS_EXTERN(int) kernels_cache_remove(kernels_cache_removal **out, const char *repo_id, const char *revision,
					 unsigned int flags, const kernels_options *opts);

/** Frees a removal's report; NULL is fine. */
KERNELS_EXTERN(void) kernels_cache_removal_free(kernels_cache_removal *removal);

/**
 * Records the Hub's publisher verdict for cached repos, so that offline
 * loads of repos another client fetched (Python kernels keeps no record of
 * its check) need no opt-in: for `repo_id`, or every repo
 * kernels_cache_scan() lists when NULL, asks the Hub whether its org is a
 * trusted kernel publisher (trustedKernelPublisher, as a load does online)
 * and writes the answer into the repo's cache folder
 * (.libkernels/trust.json). An offline load accepts a "trusted" record for
 * 30 days. `opts`: as kernels_get (NULL: defaults); trust_remote_code and
 * trusted_orgs are not consulted (the Hub is asked whatever they say).
 * Each verdict is logged at KERNELS_LOG_INFO. Thread-safe.
 *
 * Returns 0 when every repo asked about is from a trusted publisher (and
 * recorded); KERNELS_EUNTRUSTED when one is not (the message names it; the
 * others are still asked and recorded), or when no endpoint gave a verdict
 * for one (a mirror without the organization API: nothing is recorded for
 * it, and the message says so); KERNELS_EOFFLINE (offline: the
 * Hub must be asked), KERNELS_ENOTFOUND (`repo_id` not in the cache),
 * KERNELS_ENETWORK, KERNELS_EINVAL (invalid repo id) or KERNELS_ENOMEM.
 * Since 1.0.
 */
KERNELS_EXTERN(int) kernels_cache_trust(const char *repo_id, const kernels_options *opts);

/** What kernels_cache_trust_verdict() found for a repo. New values may be
 *  added at the end. */
typedef enum kernels_trust_verdict {
	KERNELS_TRUST_TRUSTED = 0,   /**< the Hub marks the publisher as trusted; recorded */
	KERNELS_TRUST_UNTRUSTED = 1, /**< the Hub answered that it is not a trusted publisher; recorded as such */
	KERNELS_TRUST_UNVERIFIED = 2 /**< no endpoint gave a verdict (a mirror without the organization API, or
					  the call failed); nothing recorded */
} kernels_trust_verdict;

/**
 * kernels_cache_trust() for one cached repo, with the outcome a program
 * can act on without reading the message: `*verdict` says whether the Hub
 * called the publisher untrusted (KERNELS_TRUST_UNTRUSTED: loads need
 * options.trust_remote_code or options.trusted_orgs) or no endpoint gave a
 * verdict (KERNELS_TRUST_UNVERIFIED: ask again through an endpoint with the
 * organization API), both of which kernels_cache_trust() returns as
 * KERNELS_EUNTRUSTED.
 *
 * Parameters: `verdict` (not NULL) receives the verdict, also on error
 * (KERNELS_TRUST_UNVERIFIED: nothing was learnt); `repo_id` one repo (not
 * NULL; kernels_cache_scan() lists them); `opts` as kernels_cache_trust().
 *
 * Returns what kernels_cache_trust(repo_id, opts) returns: 0 with
 * KERNELS_TRUST_TRUSTED; KERNELS_EUNTRUSTED with KERNELS_TRUST_UNTRUSTED or
 * KERNELS_TRUST_UNVERIFIED (the message says what to do); KERNELS_EOFFLINE,
 * KERNELS_ENOTFOUND, KERNELS_ENETWORK, KERNELS_EINVAL (NULL verdict or
 * repo_id, invalid repo id) or KERNELS_ENOMEM. Thread-safe.
 * @since 1.1
 */
KERNELS_EXTERN(int) kernels_cache_trust_verdict(kernels_trust_verdict *verdict, const char *repo_id,
						const kernels_options *opts);

#ifdef __cplusplus
}
#endif

#endif
