/*
 * libkernels: the locked workflow of a project. A project folder holds
 * pyproject.toml ([tool.kernels.dependencies]) and, once locked,
 * kernels.lock: the commit and per-variant hashes of every dependency.
 * Production loads go through the lock, and can run with no network.
 *
 * Every function here is part of libkernels since 1.0 and may be called
 * from any thread unless its comment says otherwise (docs/threading.md).
 */
#ifndef KERNELS_PROJECT_H
#define KERNELS_PROJECT_H

#include "common.h"
#include "options.h"
#include "kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Resolves every dependency of `project_dir`/pyproject.toml on the Hub and
 * writes `project_dir`/kernels.lock (atomically), byte-identical to what
 * the Python `kernels lock` writes for the same manifest and Hub state:
 * with the kernels they depend on, transitively (every variant's
 * metadata.json `kernel-depends`, each entry keyed by the dependency as
 * written). A repo whose locked commit is a kernel-status.toml redirect is
 * refused (KERNELS_EINVAL naming the destination to depend on instead): a
 * lock pins one commit of the repo it names, and a locked load loads
 * exactly that commit of that repo, never a redirect's destination.
 * Returns 0 or the errors of kernels_manifest_load(), revision resolution
 * and the Hub client; on error the old kernels.lock is left as it was.
 */
KERNELS_EXTERN(int) kernels_project_lock(const char *project_dir, const kernels_options *opts);

/**
 * Downloads the locked commit of every dependency in
 * `project_dir`/kernels.lock into the cache: the variant that fits this
 * system, or every variant with `all_variants`. Each downloaded variant is
 * checked against its lock hash. Errors as kernels_get_locked().
 */
KERNELS_EXTERN(int) kernels_project_download(const char *project_dir, int all_variants,
					     const kernels_options *opts);

/**
 * Loads `repo_id` at the commit `lock_path` (a kernels.lock file) pins,
 * downloading it if needed (`lock_path` NULL: $KERNELS_LOCK when set and
 * not empty, else kernels.lock in the current folder; KERNELS_ENOTFOUND
 * when neither is there), after checking the variant's files against
 * the lock hash. Its kernel dependencies are loaded at the commits the
 * lock pins for them (KERNELS_ENOTFOUND when one is missing: lock again). `*out` as kernels_get(). Errors: those of kernels_get(),
 * KERNELS_ENOTFOUND (the repo is not in the lock file), KERNELS_EPARSE (a
 * malformed lock file), KERNELS_EINTEGRITY (files differ from the lock:
 * the message names the variant and both hashes).
 */
KERNELS_EXTERN(int) kernels_get_locked(kernels_kernel **out, const char *repo_id, const char *lock_path,
				       const kernels_options *opts);

/**
 * Like kernels_get_locked() but from the cache only: never a network call.
 * When the locked variant is not cached, KERNELS_EOFFLINE with a message
 * naming the `libkernels download` command to run.
 */
KERNELS_EXTERN(int) kernels_load_locked(kernels_kernel **out, const char *repo_id, const char *lock_path,
					const kernels_options *opts);

#ifdef __cplusplus
}
#endif

#endif
