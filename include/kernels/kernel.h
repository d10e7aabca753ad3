/*
 * libkernels: loaded kernels, the handle kernels_get() and
 * kernels_load_local() return (the metadata they were verified against is
 * in kernels/metadata.h).
 *
 * Native code from the internet runs in this process when a kernel is
 * loaded: nothing is dlopen()ed before its metadata.json parsed and every
 * file of the variant matched the metadata's digest.
 *
 * Every function here is part of libkernels since 1.0 and may be called
 * from any thread unless its comment says otherwise (docs/threading.md).
 */
#ifndef KERNELS_KERNEL_H
#define KERNELS_KERNEL_H

#include "common.h"
#include "metadata.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kernels_options;

/**
 * A loaded kernel variant; opaque, reference counted, thread-safe. Loading
 * the same variant folder (same real path) again returns the same handle
 * with one more reference (when that call's signature settings pass for
 * it); every successful load needs one kernels_kernel_close().
 */
typedef struct kernels_kernel kernels_kernel;

/**
 * Verifies and loads a kernel from disk, with no network. `path` is a
 * variant folder (it holds metadata.json), or a build tree: a repo checkout
 * with build/, or the build/ folder itself, whose variant folders are
 * resolved against the system (kernels_variant_resolve with opts, each
 * variant's metadata.json archs included) and the chosen one loaded.
 *
 * The native module is the single top-level *.so of the variant; when
 * there are several, the one named after metadata id (`{id}.so`,
 * `{id}.abi3.so`, `{id}.*.so`); when there is none at the top, the same
 * rule in the `{name}/` package folder (name with '-' -> '_'); when there
 * is none at all, the variant is noarch (no native code). It is dlopen()ed
 * with RTLD_NOW | RTLD_LOCAL only after verification passed. `*out` is
 * owned by the caller (kernels_kernel_close). Returns 0, KERNELS_EINVAL
 * (`out` or `path` NULL or empty), the errors of kernels_verify_variant(),
 * KERNELS_ENOMATCH (no variant of a build tree fits: the message has the
 * whole decision trace), or KERNELS_ELOAD (the message has the variant, the file and dlerror(),
 * which names the missing library or symbol).
 */
KERNELS_EXTERN(int) kernels_load_local(kernels_kernel **out, const char *path,
				       const struct kernels_options *opts);

/**
 * The address of `symbol` in the kernel's native module, or NULL with the
 * error set (KERNELS_ELOAD: not exported, or a noarch variant with nothing
 * to look up; the message says which).
 */
KERNELS_EXTERN(void *) kernels_symbol(const kernels_kernel *kernel, const char *symbol);

/* Accessors; strings owned by the handle, valid until its last close. */
KERNELS_EXTERN(const char *) kernels_kernel_repo(const kernels_kernel *k);    /**< "org/name"; NULL when loaded locally */
KERNELS_EXTERN(const char *) kernels_kernel_commit(const kernels_kernel *k);  /**< 40-hex; NULL when loaded locally */
KERNELS_EXTERN(const char *) kernels_kernel_variant(const kernels_kernel *k); /**< "torch211-cu130-x86_64-linux" */
KERNELS_EXTERN(const char *) kernels_kernel_path(const kernels_kernel *k);    /**< real path of the variant folder */
KERNELS_EXTERN(const char *) kernels_kernel_library(const kernels_kernel *k); /**< the .so loaded; NULL for noarch */
/** The metadata.json the variant was verified against; owned by the handle. */
KERNELS_EXTERN(const kernels_metadata *) kernels_kernel_metadata(const kernels_kernel *k);
/**
 * The kernels this one's `kernel-depends` named, loaded before it, in the
 * metadata's order (each with their own dependencies loaded first). The
 * kernel holds a reference on each until its last close. NULL when out of
 * range. See kernels/get.h for how dependencies are resolved.
 */
KERNELS_EXTERN(size_t) kernels_kernel_dependency_count(const kernels_kernel *k);
KERNELS_EXTERN(const kernels_kernel *) kernels_kernel_dependency_at(const kernels_kernel *k, size_t i);
/** Current number of references (for diagnostics). */
KERNELS_EXTERN(int) kernels_kernel_refcount(const kernels_kernel *k);

/**
 * The kernels loaded now, each with a reference added: close each one with
 * kernels_kernel_close(), then release the array with kernels_free().
 * `*count` may be 0 (`*out` NULL). Returns 0, KERNELS_EINVAL (NULL out or
 * count) or KERNELS_ENOMEM.
 */
KERNELS_EXTERN(int) kernels_kernel_list(kernels_kernel ***out, size_t *count);

/** Drops a reference; at zero the module is dlclose()d. NULL is fine. */
KERNELS_EXTERN(void) kernels_kernel_close(kernels_kernel *k);

#ifdef __cplusplus
}
#endif

#endif
