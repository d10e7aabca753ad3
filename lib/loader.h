/* Internal: the loader behind kernels_get and kernels_load_local. */
#ifndef KERNELS_LIB_LOADER_H
#define KERNELS_LIB_LOADER_H

#include "kernels/kernel.h"
#include "config.h"
#include "kernels/system.h"
#include "kernels/variant.h"

/* Loads the kernel-depends of a verified variant before its module is
 * mapped, *deps receiving a reference on each (deps.c's kernels__deps_load:
 * the loader sits below the stages that resolve and fetch, so its caller
 * hands it down). NULL: a variant that has kernel-depends is refused. */
typedef int (*kernels__deps_fn)(const kernels__config *cfg, const char *self, const char *commit,
				const kernels_metadata *meta, const char *what, kernels_kernel ***deps, size_t *n);

/* Verifies `folder` (links must stay inside `root`, the repo cache folder
 * kernels--org--name; NULL: inside `folder`) and loads its native module,
 * or returns the handle already loaded from the same real path with one
 * more reference. repo_id/commit may be NULL (local loads); variant_name
 * NULL means the folder's base name. */
int kernels__loader_open(const kernels__config *cfg, kernels__deps_fn deps, const char *repo_id, const char *commit,
			 const char *variant_name, const char *folder, const char *root, kernels_kernel **out);

/* kernels_load_local behind the API (`deps` as above): `path` is a variant
 * folder or a build tree (resolved against `sys`, NULL: detected from cfg). `repo_id` (may
 * be NULL) is what kernels_kernel_repo() says, e.g. for LOCAL_KERNELS. */
int kernels__loader_open_local(const kernels__config *cfg, kernels__deps_fn deps, const char *repo_id,
			       const char *path, const kernels_system *sys, kernels_kernel **out);

/* The variant folders of a local build tree: the names of the folders in
 * `build` that are not hidden, sorted (malloc'ed; kernels__strings_free).
 * KERNELS_ENOTFOUND / KERNELS_EIO naming `build` when it cannot be listed. */
int kernels__local_variants(const char *build, char ***names, size_t *count);

/* The decisions for the local tree at `path` (a variant folder, a build/
 * folder or a checkout holding one), as kernels__loader_open_local would
 * make them, for LOCAL_KERNELS in kernels_get_variants. */
int kernels__local_trace(const kernels__config *cfg, const char *path, const kernels_system *sys,
			 kernels_variant_trace **trace);

#endif
