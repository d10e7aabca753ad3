/* Internal: metadata.json and digest verification of a variant folder. */
#ifndef KERNELS_LIB_VERIFY_H
#define KERNELS_LIB_VERIFY_H

#include "kernels/kernel.h"
#include "config.h"
#include "fs.h"

/* Parses and verifies `variant_dir`. Links are resolved but must stay
 * inside `root` (the repo's cache folder kernels--org--name, whose
 * snapshots link into blobs/); NULL root: the variant folder itself.
 * `what` names the variant in messages ("org/x@abc1234 variant v"), may be
 * NULL. `*out` (may be NULL) receives the metadata on success. */
int kernels__verify_variant(const kernels__config *cfg, const char *variant_dir, const char *root,
			    const char *what, kernels_metadata **out);
/* The same for folders the caller resolved with kernels__realpath (the
 * loader): they are taken as they are, not resolved again. A receipt it
 * writes is flushed and renamed on a helper thread pushed on *later (may
 * be NULL: in line), which the caller joins (kernels__cache_settle). */
int kernels__verify_resolved(const kernels__config *cfg, const char *dir_real, const char *root_real,
			     const char *what, kernels_metadata **out, kernels__write_later **later);

/* Parses the `len` bytes of a metadata.json at `buf` (need not be
 * NUL-terminated); `path` names it in messages. kernels_metadata_read reads
 * the file and calls this, so there is one parser. `*out` is the caller's
 * (kernels_metadata_free); it has no verified files. Errors as
 * kernels_metadata_read: KERNELS_EPARSE (not JSON, a key missing or of the
 * wrong type, over the 1 MiB cap), KERNELS_ENOMEM. */
int kernels__metadata_parse(const char *buf, size_t len, const char *path, kernels_metadata **out);

/* The verified regular files, relative to the variant, sorted; valid as
 * long as `m`. The loader picks the native module from these. */
size_t kernels__metadata_file_count(const kernels_metadata *m);
const char *kernels__metadata_file(const kernels_metadata *m, size_t i);
/* The i-th file as it was verified: fstat of the descriptor its bytes were
 * hashed through (device, inode, size, modification and change times). */
struct stat;
const struct stat *kernels__metadata_file_stat(const kernels_metadata *m, size_t i);
/* The path the i-th file resolved to when it was verified (links
 * followed); what the loader opens, then checks against the stat above. */
const char *kernels__metadata_file_real(const kernels_metadata *m, size_t i);
/* The digest metadata.json gives for the file `rel` (base64) and its
 * algorithm ("sha256" or "sha512"); NULL when it gives none (a build from
 * before digests). Valid as long as `m`. */
const char *kernels__metadata_file_digest(const kernels_metadata *m, const char *rel, const char **algorithm);

/* metadata.json as it was read and parsed (fstat of that descriptor). */
const struct stat *kernels__metadata_stat(const kernels_metadata *m);

#endif
