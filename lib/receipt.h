/* Internal: verification receipts. Once every file of a cached variant has
 * been hashed against its digest, a receipt records what was verified: the
 * identity (device, inode, size, modification and change times in
 * nanoseconds) of metadata.json and of each file. A later process that
 * finds exactly those identities skips the hashing; any difference means a
 * full re-hash. It weakens nothing: whoever can write a receipt that is
 * read could as well write the blobs and metadata.json it vouches for
 * (where signatures are required, only receipts this user or root wrote
 * are read: another user of a shared cache, who could swap a file, cannot
 * vouch for it); and no file can change content without changing its
 * change time. Every reader below takes the call's configuration for that. */
#ifndef KERNELS_LIB_RECEIPT_H
#define KERNELS_LIB_RECEIPT_H

#include <stddef.h>
#include <sys/stat.h>

#include "config.h"
#include "fs.h"

/* `dir` is a variant folder {root}/snapshots/{commit}/{path}, `root` the
 * repo's cache folder (both real paths); files[i] are its files relative to
 * it, sts[i] their identities now. 1 when the receipt vouches for exactly
 * this set; 0 when there is none or anything differs. */
int kernels__receipt_matches(const kernels__config *cfg, const char *root, const char *dir, const struct stat *meta,
			     const char *const *files, const struct stat *sts, size_t n);

/* Records a receipt for what was just verified (the identities of the
 * descriptors the files were hashed through). Best effort: a cache this
 * process may not write only means the next one hashes again. `later`
 * (may be NULL): flushed and renamed on a helper thread pushed there, which
 * the caller joins (kernels__cache_settle) before its call returns. */
void kernels__receipt_write(const kernels__config *cfg, const char *root, const char *dir, const struct stat *meta,
			    const char *const *files, const struct stat *sts, size_t n, kernels__write_later **later);

/* Copy receipts ({root}/.libkernels/patched/{blob}.json, beside the copy,
 * lib/pyfree.c): a copy of a verified module made for hosts without
 * libpython, with `source` the verified digest of the bytes it came from
 * ("sha256:<base64>", or "blob:<name>" for a build without digests) and
 * the copy's identity once written, synced and renamed into place. 1 when
 * the receipt at `path` records exactly `source` and `copy`. */
int kernels__receipt_copy_matches(const kernels__config *cfg, const char *path, const char *source,
				  const struct stat *copy);
/* Writes that receipt as `name` in the folder `dirfd` (the copy's, as
 * walked from the cache root), flushed before its rename as every receipt;
 * `shown` names it in messages. 0, or an error code with the error set:
 * logging it is the caller's, which may be a helper thread. */
int kernels__receipt_copy_put(int dirfd, const char *name, const char *shown, const char *source,
			      const struct stat *copy);

/* Download receipts ({root}/.libkernels/blobs/{sha256}.json): an LFS blob
 * of at least KERNELS__BLOB_RECEIPT_MIN bytes whose bytes hashed to its
 * sha256 at download (lib/hub_fetch.c, before it was published), with the
 * blob's identity once published. Verification (lib/verify.c) takes it for
 * the file's sha256 while the identity is the same, so the first load does
 * not hash again what the download just hashed. Smaller blobs hash faster
 * than a receipt reads. `later` as kernels__receipt_write's: the download
 * joins it before it returns, so the load that reads the receipt finds it. */
#define KERNELS__BLOB_RECEIPT_MIN (256 << 10)
void kernels__receipt_blob_write(const kernels__config *cfg, const char *root, const char *sha256,
				 const struct stat *blob, kernels__write_later **later);
int kernels__receipt_blob_matches(const kernels__config *cfg, const char *root, const char *sha256,
				  const struct stat *blob);

/* Signature receipts, beside the file receipts: once a variant's
 * metadata.json.sigstore verified over its metadata.json under a trust root
 * and policies (`fingerprint`: a hash of both), the identities of the two
 * files. A later process with the same fingerprint finding exactly those
 * skips the signature check. `dir` is a variant folder in a cached
 * snapshot (real path); anywhere else there are no receipts. */
int kernels__receipt_signed(const kernels__config *cfg, const char *dir, const char *fingerprint,
			    const struct stat *meta, const struct stat *bundle);
void kernels__receipt_sign(const kernels__config *cfg, const char *dir, const char *fingerprint,
			   const struct stat *meta, const struct stat *bundle);

#endif
