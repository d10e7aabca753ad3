/*
 * libkernels: lock files (kernels.lock), read and written exactly as the
 * Python `kernels` package does, so a project can be locked by either and
 * used by both. The manifest they lock is kernels/manifest.h's.
 *
 * The lock file exists in two formats, both JSON arrays:
 *
 * KERNELS_LOCK_FORMAT_DEPENDENCY, what `kernels lock` writes today
 * (kernels 0.17): one entry per dependency, what was asked and the commit
 * it resolved to; entries sorted by repo id, then version (numerically)
 * before revision (by text):
 *
 *     [
 *       {
 *         "dependency": {
 *           "repo-id": "kernels-community/activation",
 *           "version": 1
 *         },
 *         "lock": {
 *           "commit": "<40 or 64 lower-case hex>"
 *         }
 *       }
 *     ]
 *
 * KERNELS_LOCK_FORMAT_VARIANTS, the seed-era format (kernels 0.9, version
 * specifiers): the commit and a git_lfs_concat hash of every build variant;
 * entries in the order they were added (manifest order), variants too:
 *
 *     [
 *       {
 *         "repo_id": "drbh/img2gray",
 *         "sha": "<40 lower-case hex>",
 *         "variants": {
 *           "torch27-cxx11-cu126-x86_64-linux": {
 *             "hash": "sha256-<64 hex>",
 *             "hash_type": "git_lfs_concat"
 *           }
 *         }
 *       }
 *     ]
 *
 * Both are written with two-space indentation and no newline at the end,
 * byte for byte as the Python package writes them (serde_json's pretty
 * printer for the first, json.dump(indent=2) with ASCII escapes for the
 * second). Reading is strict: a file that is not exactly one of the two
 * formats (unknown or missing keys, wrong types, bad commit ids, bad
 * hashes, unknown hash types, duplicates, invalid repo ids, trailing
 * garbage) is refused with KERNELS_EPARSE and a message naming the file,
 * the entry and the key.
 *
 * Ownership: every kernels_lock is freed by the caller
 * with its _free function; pointers read out of one (entries, strings)
 * belong to it and stay valid until it is freed or, for a lock, until the
 * next kernels_lock_add_* call on it. A lock may be read from several
 * threads at once; modifying one needs the caller's own lock.
 *
 * Every function here is part of libkernels since 1.0 and may be called
 * from any thread unless its comment says otherwise (docs/threading.md).
 */
#ifndef KERNELS_LOCK_H
#define KERNELS_LOCK_H

#include "common.h"
#include "manifest.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the lock file ---- */

typedef struct kernels_lock kernels_lock;

typedef enum {
	KERNELS_LOCK_FORMAT_DEPENDENCY = 0,  /**< kernels 0.17: dependency + commit */
	KERNELS_LOCK_FORMAT_VARIANTS = 1     /**< kernels 0.9: commit + variant hashes */
} kernels_lock_format_t;

/** What a DEPENDENCY-format entry asked for. */
typedef enum {
	KERNELS_LOCK_REQUEST_NONE = 0,      /**< VARIANTS format: not recorded */
	KERNELS_LOCK_REQUEST_VERSION = 1,   /**< "version": N */
	KERNELS_LOCK_REQUEST_REVISION = 2   /**< "revision": "..." */
} kernels_lock_request;

/** One variant hash of a VARIANTS-format entry. */
typedef struct {
	const char *name;       /**< "torch27-cxx11-cu126-x86_64-linux" */
	const char *hash;       /**< "sha256-<64 hex>" */
	const char *hash_type;  /**< "git_lfs_concat" (the only type there is) */
} kernels_lock_variant;

/** One locked kernel. Everything belongs to the lock. */
typedef struct {
	const char *repo_id;
	const char *commit;                   /**< lower-case hex, 40 (or 64 in DEPENDENCY format) */
	kernels_lock_request request;
	unsigned long long version;           /**< REQUEST_VERSION */
	const char *revision;                 /**< REQUEST_REVISION, else NULL */
	size_t variant_count;                 /**< VARIANTS format */
	const kernels_lock_variant *variants;
} kernels_lock_entry;

/** An empty lock of `format`. */
KERNELS_EXTERN(int) kernels_lock_new(kernels_lock **out, kernels_lock_format_t format);

/**
 * Reads a lock file (either format; an empty array "[]" reads as
 * DEPENDENCY). Errors: KERNELS_ENOTFOUND (no such file: run the lock
 * command), KERNELS_EPARSE (malformed; the message names the entry, the
 * key and what was expected), KERNELS_EIO, KERNELS_ENOMEM.
 */
KERNELS_EXTERN(int) kernels_lock_load(kernels_lock **out, const char *path);

/** The same for JSON text in memory; `name` is used in messages. */
KERNELS_EXTERN(int) kernels_lock_load_string(kernels_lock **out, const char *json, size_t len, const char *name);

/** The lock's format. */
KERNELS_EXTERN(kernels_lock_format_t) kernels_lock_format(const kernels_lock *lock);

/** Number of entries, in file order (sorted for DEPENDENCY, see above). */
KERNELS_EXTERN(size_t) kernels_lock_entry_count(const kernels_lock *lock);

/** The i-th entry, or NULL past the end. */
KERNELS_EXTERN(const kernels_lock_entry *) kernels_lock_entry_at(const kernels_lock *lock, size_t i);

/** The first entry for `repo_id` (as the Python package picks it), or NULL. */
KERNELS_EXTERN(const kernels_lock_entry *) kernels_lock_find(const kernels_lock *lock, const char *repo_id);

/** The hash of `variant` in `entry`, or NULL when the entry has none. */
KERNELS_EXTERN(const char *) kernels_lock_entry_variant_hash(const kernels_lock_entry *entry, const char *variant);

/**
 * Adds a DEPENDENCY-format entry: `repo_id` asked as major `version`
 * (kernels_lock_add_version) or as `revision` (kernels_lock_add_revision)
 * resolved to `commit` (40 or 64 hex, either case; stored lower-case).
 * Errors: KERNELS_EINVAL (wrong format for this lock, invalid repo id or
 * commit, the same dependency twice), KERNELS_ENOMEM.
 */
KERNELS_EXTERN(int) kernels_lock_add_version(kernels_lock *lock, const char *repo_id, unsigned long long version,
					     const char *commit);
KERNELS_EXTERN(int) kernels_lock_add_revision(kernels_lock *lock, const char *repo_id, const char *revision,
					      const char *commit);

/**
 * Adds a VARIANTS-format entry for `repo_id` at `commit` (40 hex), with no
 * variants yet. Errors: KERNELS_EINVAL (wrong format, invalid repo id or
 * commit, repo id already present), KERNELS_ENOMEM.
 */
KERNELS_EXTERN(int) kernels_lock_add_entry(kernels_lock *lock, const char *repo_id, const char *commit);

/**
 * Adds variant `name` with `hash` ("sha256-<64 hex>", e.g. from
 * kernels_lock_variant_hash) to the VARIANTS-format entry of `repo_id`.
 * Errors: KERNELS_EINVAL (no such entry, variant already there, bad name or
 * hash), KERNELS_ENOMEM.
 */
KERNELS_EXTERN(int) kernels_lock_add_variant(kernels_lock *lock, const char *repo_id, const char *name,
					     const char *hash);

/**
 * The lock as the Python package would write it. `*out` is NUL-terminated
 * and the caller's: release it with kernels_free(). Returns 0,
 * KERNELS_EINVAL (NULL out or lock) or KERNELS_ENOMEM.
 */
KERNELS_EXTERN(int) kernels_lock_to_string(char **out, const kernels_lock *lock);

/**
 * Writes the lock to `path` atomically (a temporary file in the same
 * folder, then rename), keeping the mode of a file it replaces (0644 for a
 * new one). Errors: KERNELS_EIO (the message names the path), KERNELS_ENOMEM.
 */
KERNELS_EXTERN(int) kernels_lock_save(const kernels_lock *lock, const char *path);

/** Frees a lock; NULL is fine. */
KERNELS_EXTERN(void) kernels_lock_free(kernels_lock *lock);

/* ---- git_lfs_concat variant hashes ---- */

/** One file of a build variant, as a Hub tree listing describes it. */
typedef struct {
	const char *path;      /**< relative to build/{variant}/, '/'-separated, UTF-8 */
	const char *hash;      /**< LFS files: the sha256 (64 hex); others: the git blob sha1 (40 hex) */
	int is_lfs;
} kernels_lock_file;

/** Bytes a variant hash needs: "sha256-", 64 hex digits and a NUL (and room). */
#define KERNELS_LOCK_HASH_SIZE 72

/**
 * The git_lfs_concat hash of a variant: files under __pycache__/ and *.pyc
 * are skipped; the others are sorted bytewise by path, and sha256 runs
 * over path1 hash1 path2 hash2 ... with each hash as raw bytes. Writes
 * "sha256-<64 hex>" and a NUL into `out`. Errors: KERNELS_EINVAL (a hash
 * of the wrong length or not hex, an empty or duplicate path).
 */
KERNELS_EXTERN(int) kernels_lock_variant_hash(char out[KERNELS_LOCK_HASH_SIZE], const kernels_lock_file *files,
					      size_t count);

/**
 * The same hash computed from a variant folder on disk
 * (snapshots/{commit}/build/{variant} in the cache, or any folder with the
 * variant's files). With `lfs_paths` NULL it reads a cache snapshot as the
 * Python package does: only symbolic links count (files Python writes next
 * to them, such as __pycache__, do not), and the blob a link points to
 * decides: a name of 64 hex digits is an LFS file (sha256 of the content),
 * 40 a git blob (git blob sha1 of the content), anything else is an error.
 * Byte-code committed to the repo (*.pyc, __pycache__/ links) counts, as
 * in the kernels 0.9-0.13 writers of this format; kernels 0.16 skipped it,
 * which kernels_get_locked() also accepts. A snapshot huggingface_hub
 * wrote without links (plain files) is hashed over the files the commit's
 * build/ listing names, as libkernels recorded it in the cache when it
 * fetched the commit (without one, the links alone count; with no link
 * either, KERNELS_ENOTFOUND), each
 * hashed as it is on disk. With `lfs_paths` (a NULL-terminated list of variant-relative paths), every
 * regular file counts, links followed, and those listed are LFS files.
 * Errors: KERNELS_ENOTFOUND (no such folder), KERNELS_EIO, KERNELS_EINVAL.
 */
KERNELS_EXTERN(int) kernels_lock_variant_hash_dir(char out[KERNELS_LOCK_HASH_SIZE], const char *variant_dir,
						  const char *const *lfs_paths);

#ifdef __cplusplus
}
#endif

#endif
