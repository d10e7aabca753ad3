/*
 * libkernels: bundles, one verified file that carries a project's locked
 * kernels to machines that never see the Hub (air-gapped clusters,
 * container images built once and started many times).
 *
 * A bundle is a tar archive (zstd-compressed when libarchive has zstd, else
 * plain tar), readable with `tar` itself. Its first entry is manifest.json:
 *
 *     {"format": "libkernels-bundle", "version": 1,
 *      "lock": {"size": N, "sha256": "<hex>"},
 *      "repos": [{"repo_id": "org/name", "type": "kernel", "commit": "<40 hex>",
 *                 "refs": {"v1": "<commit>", "v1.2.0": "<commit>"},
 *                 "variants": [{"name": "torch211-cxx11-cpu-x86_64-linux",
 *                               "files": [{"path": "metadata.json", "size": N,
 *                                          "sha256": "<hex>", "etag": "<blob name>"}]}]}]}
 *
 * then kernels.lock, then every file of every variant as the Hub serves it,
 * at {kernels|models}--{org}--{name}/{commit}/build/{variant}/{path}.
 * "etag" is the name the Hub gives the file (git blob sha1, or the LFS
 * sha256), the name of its blob in the cache.
 *
 * Every function here is part of libkernels since 1.0 and may be called
 * from any thread unless its comment says otherwise (docs/threading.md).
 */
#ifndef KERNELS_BUNDLE_H
#define KERNELS_BUNDLE_H

#include "common.h"
#include "options.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KERNELS_BUNDLE_OPTIONS_VERSION 1

/** A kernels_bundle_options with its version set: every variant. */
#define KERNELS_BUNDLE_OPTIONS_INIT { KERNELS_BUNDLE_OPTIONS_VERSION, NULL, 0 }

/** What kernels_bundle_write() puts in (KERNELS_BUNDLE_OPTIONS_INIT, then
 *  set what you need). Versioned: read only as far as `version`'s fields
 *  reach, every version from 1 to the current accepted (docs/api-stability.md). */
typedef struct kernels_bundle_options {
	unsigned int version;          /**< KERNELS_BUNDLE_OPTIONS_VERSION */
	const char *const *variants;   /**< only these variant names (of any locked kernel); NULL: every variant */
	size_t n_variants;             /**< entries in `variants` */
} kernels_bundle_options;

/**
 * Writes the bundle of the project `project_dir` (a folder holding
 * kernels.lock) to `path`: every kernel the lock pins (its locked
 * dependencies are entries of the lock too), each with every build variant
 * of its locked commit, or only those named in `bopts->variants`; the refs
 * (branches, tags) that name the locked commits, in the cache or on the
 * Hub; the lock itself; a manifest with each file's size and sha256.
 *
 * Files come from the cache; a missing one is downloaded first into the
 * cache (the same transfer engine and checks as kernels_download), never
 * from anywhere else. `path` is written whole or not at all (a temporary
 * file beside it, renamed when complete).
 *
 * Parameters: `path` the bundle to write (replaced when it exists);
 * `project_dir` the project folder; `bopts` may be NULL (every variant);
 * `opts` may be NULL (defaults; cache_dir, offline, endpoint as for every
 * call). Nothing is returned that the caller owns.
 *
 * Returns 0, or KERNELS_EINVAL (NULL path or folder, bad options version,
 * a --variant name no locked kernel has), KERNELS_ENOTFOUND (no
 * kernels.lock), KERNELS_EPARSE, the errors of kernels_download() for a
 * missing file (KERNELS_EOFFLINE offline), KERNELS_EINTEGRITY (a cached
 * file differs from its blob name), KERNELS_EIO.
 *
 * Thread-safety: safe from any thread; concurrent calls may share a cache.
 * Since 1.0.
 */
KERNELS_EXTERN(int) kernels_bundle_write(const char *path, const char *project_dir,
					 const kernels_bundle_options *bopts, const kernels_options *opts);

#define KERNELS_BUNDLE_IMPORT_STATS_VERSION 1
/** A kernels_bundle_import_stats ready for kernels_bundle_import(). */
#define KERNELS_BUNDLE_IMPORT_STATS_INIT { KERNELS_BUNDLE_IMPORT_STATS_VERSION, 0, 0, 0, 0, 0, 0 }

/** What one kernels_bundle_import() call did. The caller sets `version`
 *  (KERNELS_BUNDLE_IMPORT_STATS_INIT); the library writes only the fields
 *  that version has. */
typedef struct kernels_bundle_import_stats {
	unsigned int version;       /**< KERNELS_BUNDLE_IMPORT_STATS_VERSION, set by the caller */
	size_t files;               /**< files the bundle holds */
	size_t variants;            /**< variants the bundle holds */
	size_t variants_added;      /**< variants this call published into the cache */
	size_t blobs_added;         /**< blobs this call published (the rest were cached already) */
	size_t refs_written;        /**< refs/ files created, or moved forward (never back) */
	unsigned long long bytes;   /**< file bytes read from the bundle (all verified) */
} kernels_bundle_import_stats;

/**
 * Imports the bundle at `path` into the cache (opts->cache_dir, else the
 * environment's), with no network call.
 *
 * Nothing is published before all of it is verified: every entry against
 * the manifest (listed once, a regular file, its size, its sha256 and its
 * blob name), every variant against its metadata.json digest, and the
 * signature mode as at load (kernels_options.signature: `require` refuses an
 * unsigned variant). A hostile archive is refused whole (KERNELS_EUNSAFE):
 * a path with "..", an absolute path, a link, a device or other non-file, an
 * entry listed twice or not at all, a size beyond the manifest's, more
 * archive than the manifest accounts for (a bomb). Files are staged inside
 * the repo's cache folder (.libkernels/), then blobs are renamed into
 * blobs/ and each variant folder into snapshots/{commit}/build/ in one
 * rename: a crash or a kill leaves no half variant visible, and the next
 * import completes. Variants already cached are left as they are (importing
 * twice is a no-op that succeeds); a cache holding part of the bundle gets
 * the rest, its blobs untouched (not linked, not rewritten: the
 * verification records of variants using them stay valid, and offline
 * loads do not hash them again) unless one's bytes no longer match its
 * name: that one is replaced by the bundle's verified copy, with a
 * warning. Refs are written last, and never moved
 * back (as git fetch refuses a non-fast-forward): a branch or tag the
 * cache lacks is written; one the cache has at another commit is moved
 * only when version tags ("v1.2.0", in the cache or the bundle) show the
 * bundle's commit to be the newer. Otherwise the cache's ref stays (an
 * older bundle does not take a cache back) and a KERNELS_LOG_WARNING names
 * it and how to take the bundle's: remove {repo folder}/refs/{name}, then
 * import again.
 *
 * Parameters: `stats` (may be NULL; its `version` set) receives what was
 * done; `path` the bundle; `opts` may be NULL.
 *
 * Returns 0, or KERNELS_EINVAL (NULL path, a stats version this library
 * does not know), KERNELS_ENOTFOUND (no such
 * file), KERNELS_EPARSE (not a bundle, a malformed manifest, a truncated
 * archive), KERNELS_EUNSAFE (a hostile entry, named), KERNELS_EINTEGRITY (a
 * file differs from the manifest or its metadata digest),
 * KERNELS_ESIGNATURE, KERNELS_EIO (the cache is not writable, or its file
 * system lacks the room for the files to stage: then refused before any).
 *
 * Thread-safety: safe from any thread; holds each repo's cache lock shared,
 * as downloads do, so `cache rm` waits.
 * Since 1.0.
 */
KERNELS_EXTERN(int) kernels_bundle_import(kernels_bundle_import_stats *stats, const char *path,
					  const kernels_options *opts);

/** A bundle's manifest, read without importing. Opaque. */
typedef struct kernels_bundle kernels_bundle;

/** One file of a bundle. Strings belong to the kernels_bundle. */
typedef struct kernels_bundle_file {
	const char *repo_id;        /**< "org/name" */
	const char *commit;         /**< 40 hex */
	const char *variant;        /**< the build variant folder */
	const char *path;           /**< relative to build/{variant}/ */
	const char *sha256;         /**< 64 hex */
	const char *etag;           /**< its blob name (40 or 64 hex) */
	unsigned long long size;
	int is_kernel_repo;         /**< 1: kernels--, 0: models-- */
} kernels_bundle_file;

/** One ref of a bundle: `name` (branch or tag) names `commit` of `repo_id`. */
typedef struct kernels_bundle_ref {
	const char *repo_id;
	const char *name;
	const char *commit;
} kernels_bundle_ref;

/**
 * Reads the manifest of the bundle at `path` (its first entry only; the
 * rest is not read) into `*out`, owned by the caller (kernels_bundle_free).
 * Returns 0, or KERNELS_EINVAL (NULL argument), KERNELS_ENOTFOUND,
 * KERNELS_EPARSE (not a bundle, or a malformed manifest: the message names
 * the key), KERNELS_EUNSAFE (a manifest path with "..", absolute, ...),
 * KERNELS_EIO. Thread-safety: any thread; a kernels_bundle may be read from
 * several threads at once. Since 1.0.
 */
KERNELS_EXTERN(int) kernels_bundle_open(kernels_bundle **out, const char *path);

/** Files of the bundle, in archive order. Since 1.0. */
KERNELS_EXTERN(size_t) kernels_bundle_file_count(const kernels_bundle *bundle);

/** The i-th file, or NULL past the end; owned by the bundle. Since 1.0. */
KERNELS_EXTERN(const kernels_bundle_file *) kernels_bundle_file_at(const kernels_bundle *bundle, size_t i);

/** Refs of the bundle, sorted by repo, then name. Since 1.0. */
KERNELS_EXTERN(size_t) kernels_bundle_ref_count(const kernels_bundle *bundle);

/** The i-th ref, or NULL past the end; owned by the bundle. Since 1.0. */
KERNELS_EXTERN(const kernels_bundle_ref *) kernels_bundle_ref_at(const kernels_bundle *bundle, size_t i);

/** Frees a bundle read by kernels_bundle_open(); NULL is fine. Since 1.0. */
KERNELS_EXTERN(void) kernels_bundle_free(kernels_bundle *bundle);

#ifdef __cplusplus
}
#endif

#endif
