/* Internal, of lock_hash.c: building a seed-era (VARIANTS format) lock
 * entry straight from a Hub tree listing, as kernels 0.9's `kernels lock`
 * did from the repo's file list, and variant hashes with the byte-code rule
 * chosen. Public lock API: include/kernels/lock.h. */
#ifndef KERNELS_LIB_LOCK_H
#define KERNELS_LIB_LOCK_H

#include "kernels/lock.h"
#include "tree.h"

/* Adds to the VARIANTS-format entry of `repo_id` (kernels_lock_add_entry
 * first) one git_lfs_concat hash per variant found in `tree`, a recursive
 * listing that covers build/ (repo-relative paths). As kernels 0.9 does:
 * only files under "build/torch*" count; a variant is the folder right
 * under build/; each file is hashed by its LFS sha256 when it has one, else
 * its git blob sha1; variants are added in the order they first appear in
 * the listing. Errors: as kernels_lock_add_variant and
 * kernels_lock_variant_hash (KERNELS_EINVAL), KERNELS_ENOMEM. The test
 * build only: the library calls the _as form below. */
#ifdef KERNELS_TESTING
int kernels__lock_add_tree_variants(kernels_lock *lock, const char *repo_id, const kernels__tree *tree);
#endif

/* The same with the byte-code rule chosen: keep_bytecode 1 hashes committed
 * *.pyc and __pycache__/ files too, as every kernels release that locks
 * specifier manifests (0.9 to 0.13) does; 0 leaves them out (kernels 0.16
 * and later), which is what kernels__lock_add_tree_variants does. */
int kernels__lock_add_tree_variants_as(kernels_lock *lock, const char *repo_id, const kernels__tree *tree,
				       int keep_bytecode);

/* kernels_lock_variant_hash_dir with the byte-code rule chosen (the public
 * function keeps byte-code links of a cache snapshot, and leaves byte-code
 * out of a folder read with `lfs_paths`). */
int kernels__lock_variant_hash_dir_as(const char *variant_dir, const char *const *lfs_paths, int keep_bytecode,
				      char out[KERNELS_LOCK_HASH_SIZE]);

#endif
