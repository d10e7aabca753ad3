/*
 * libkernels: fetching a kernel's build variants into the local cache.
 *
 * The cache is the one Python's huggingface_hub uses (same folder, same
 * layout), so a kernel fetched by either is usable by the other:
 *
 *   {cache}/kernels--{org}--{name}/blobs/{etag}        file contents
 *   {cache}/kernels--{org}--{name}/snapshots/{commit}/build/{variant}/...
 *                                                      relative links to blobs/
 *   {cache}/.locks/kernels--{org}--{name}/{etag}.lock  per-blob locks
 *   {cache}/.locks/kernels--{org}--{name}/libkernels-repo.lock
 *                                                      held shared by every download
 *                                                      (kernels/cache.h: removal)
 *
 * ({cache} is kernels_options.cache_dir, else $KERNELS_CACHE, $HF_HUB_CACHE,
 * $HF_HOME/hub, ~/.cache/huggingface/hub; model-type repos use models--.)
 *
 * What a download guarantees:
 *  - Only files under build/{variant}/ of the listed variants are fetched.
 *    The Hub's tree listing is checked as a whole before anything is
 *    written: a path with "..", an absolute path, a backslash or control
 *    character, an entry that is neither file nor folder, a file listed as
 *    a folder too, or a size beyond 64 GiB refuses the download
 *    (KERNELS_EUNSAFE / KERNELS_EPARSE) and nothing is written.
 *  - Every file is verified before it enters blobs/: the git blob sha1
 *    (plain files) or sha256 (LFS files) of the bytes must equal the tree
 *    listing's hash and the Hub's ETag. A mismatch deletes the bytes and is
 *    retried once from scratch, then is KERNELS_EINTEGRITY naming the file
 *    and both hashes.
 *  - A blob appears complete or not at all (written as blobs/{etag}.incomplete,
 *    fsync'ed, renamed), so a reader never sees half a file. Processes
 *    fetching the same kernel at once take a per-blob lock (flock, the lock
 *    huggingface_hub takes too): each blob is downloaded once.
 *  - The snapshot links of a call are made only after every blob of the
 *    call is in place, so a failed download adds no links.
 *  - Interrupted downloads (error, crash, kill) resume with an HTTP Range
 *    request from the .incomplete file at the next attempt.
 *  - Connection errors, 5xx and 429 answers (Retry-After honoured, capped
 *    at 60 s) are retried with exponential backoff, kernels_options
 *    .max_retries times; a transfer that moves no byte for timeout_ms is
 *    stalled and retried the same way.
 *  - Up to kernels_options.max_parallel transfers run at once over one
 *    shared connection pool (HTTP/2 when the Hub offers it).
 *  - The token goes only to the Hub's own host, never to the CDN an LFS
 *    file redirects to.
 *  - A download with a variant not yet in the cache, in a cache that
 *    followed this endpoint's redirect to a CDN before, sends one HEAD to
 *    that CDN first (as kernels_get does), so that the file's request
 *    finds its connection open; a warm-up that fails changes nothing.
 *  - Offline (HF_HUB_OFFLINE=1 or kernels_options.offline = 1) no network
 *    call is made: the snapshot's variant folders must be in the cache with
 *    every file present, else KERNELS_EOFFLINE says what to download.
 *  - kernels_options.progress_cb is called as bytes arrive: `all_total` is
 *    the size of every file that must be downloaded (known up front from
 *    the listing; files already cached are not counted).
 *
 * Every function here is part of libkernels since 1.0 and may be called
 * from any thread unless its comment says otherwise (docs/threading.md).
 */
#ifndef KERNELS_DOWNLOAD_H
#define KERNELS_DOWNLOAD_H

#include "common.h"
#include "options.h"
#include "cache.h" /* kernels_cache_path */

#ifdef __cplusplus
extern "C" {
#endif

/** A snapshot of a repo at one commit, present in the cache. Opaque. */
typedef struct kernels_snapshot kernels_snapshot;

/** The kernels_download_stats layout this header describes. */
#define KERNELS_DOWNLOAD_STATS_VERSION 1
/** A kernels_download_stats ready for kernels_snapshot_stats(). */
#define KERNELS_DOWNLOAD_STATS_INIT { KERNELS_DOWNLOAD_STATS_VERSION, 0, 0, 0, 0, 0, 0, 0, 0 }

/**
 * What a kernels_download call did (for progress summaries and
 * benchmarks). The caller allocates it with `version` set; the library
 * writes only the fields that version has. Embedded in kernels_get_stats
 * it never grows (a new field goes to the end of the outer struct).
 */
typedef struct kernels_download_stats {
	unsigned int version;      /**< KERNELS_DOWNLOAD_STATS_VERSION, set by the caller */
	size_t files;              /**< files of the requested variants */
	size_t files_cached;       /**< already linked or whose blob was already in the cache */
	size_t blobs_downloaded;   /**< blobs this call transferred (identical files share a blob) */
	size_t blobs_waited;       /**< blobs another process downloaded while this call waited */
	unsigned long long bytes_downloaded; /**< body bytes received (including retried ones) */
	unsigned long long bytes_total;      /**< bytes of all requested files */
	unsigned int max_parallel; /**< the most transfers that ran at once */
	unsigned int retries;      /**< transfer attempts repeated after a transient failure */
} kernels_download_stats;

/**
 * Makes build/{variant}/ of `repo_id` at `commit` present in the cache for
 * each of the `n_variants` names in `variants` (e.g.
 * "torch27-cxx11-cu126-x86_64-linux"), downloading only what is missing.
 *
 * `commit` must be a full 40-hex commit id (kernels_revision_resolve gives
 * one); `n_variants` may be 0 (nothing is fetched or created and no request
 * is made; the snapshot then names where the commit's folder lives, for a
 * kernel-type repo online). The repo is looked up as a kernel repo, then as
 * a model repo. `opts` may be NULL.
 *
 * On success `*out` is a new snapshot owned by the caller
 * (kernels_snapshot_free). On failure `*out` is NULL.
 *
 * Returns 0, or:
 *  - KERNELS_EINVAL: bad repo id, commit not 40 hex digits, a variant name
 *    that is not one plain folder name, NULL pointers;
 *  - KERNELS_ENOTFOUND: unknown repo or commit, or a variant that the
 *    commit does not have (the message lists those it has);
 *  - KERNELS_EAUTH: private or gated repo without a suitable token;
 *  - KERNELS_ENETWORK / KERNELS_EHTTP: the Hub unreachable or failing
 *    after the retries;
 *  - KERNELS_EOFFLINE: offline and the variant is not (fully) cached;
 *  - KERNELS_EUNSAFE / KERNELS_EPARSE: a hostile or malformed listing;
 *  - KERNELS_EINTEGRITY: a file's bytes do not match their hash;
 *  - KERNELS_EIO: the cache is not writable or the disk is too small;
 *  - KERNELS_ERROR: the progress callback cancelled the download.
 */
KERNELS_EXTERN(int) kernels_download(kernels_snapshot **out, const char *repo_id, const char *commit,
				     const char *const *variants, size_t n_variants, const kernels_options *opts);

/**
 * The snapshot's folder, {cache}/{kernels|models}--{org}--{name}/snapshots/{commit};
 * a variant lives in its build/{variant} subfolder. Owned by the snapshot.
 */
KERNELS_EXTERN(const char *) kernels_snapshot_path(const kernels_snapshot *snapshot);

/** The 40-hex commit id of the snapshot. Owned by the snapshot. */
KERNELS_EXTERN(const char *) kernels_snapshot_commit(const kernels_snapshot *snapshot);

/** 1 when the repo is a kernel-type repo, 0 for a model-type repo. */
KERNELS_EXTERN(int) kernels_snapshot_is_kernel_repo(const kernels_snapshot *snapshot);

/**
 * Copies the statistics of the download that made `snapshot` into `*stats`.
 *
 * @param stats     the caller's struct, its `version` set (KERNELS_DOWNLOAD_STATS_INIT).
 * @param snapshot  from kernels_download().
 * @return 0, or KERNELS_EINVAL (NULL pointer, or a version this library
 *         does not know).
 */
KERNELS_EXTERN(int) kernels_snapshot_stats(kernels_download_stats *stats, const kernels_snapshot *snapshot);

/** Frees a snapshot (the cache is untouched). NULL is a no-op. */
KERNELS_EXTERN(void) kernels_snapshot_free(kernels_snapshot *snapshot);

/**
 * Lists the variant names (folders under build/) of `repo_id` at `commit`
 * (40 hex digits): online from the Hub's tree listing, offline from the
 * cached snapshot's build/ folder. `*names` is a new array of `*count`
 * strings, sorted, the caller's: one kernels_free(*names) releases the
 * array and its strings (NULL when `*count` is 0).
 *
 * Returns 0, KERNELS_EINVAL, KERNELS_ENOTFOUND (no repo, commit or build/
 * folder), KERNELS_EAUTH, KERNELS_ENETWORK, KERNELS_EHTTP, KERNELS_EPARSE,
 * KERNELS_EUNSAFE, or KERNELS_EOFFLINE (offline and not cached).
 */
KERNELS_EXTERN(int) kernels_variants_list(char ***names, size_t *count, const char *repo_id, const char *commit,
					  const kernels_options *opts);

#ifdef __cplusplus
}
#endif

#endif
