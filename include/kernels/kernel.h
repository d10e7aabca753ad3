/*
 * libkernels: a variant's metadata.json, its verification, and loaded
 * kernels.
 *
 * Native code from the internet runs in this process when a kernel is
 * loaded: nothing is dlopen()ed before its metadata.json parsed and every
 * file of the variant matched the metadata's digest.
 */
#ifndef KERNELS_KERNEL_H
#define KERNELS_KERNEL_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kernels_options;

/* ---- metadata.json ------------------------------------------------------ */

/** A parsed metadata.json; opaque and immutable. */
typedef struct kernels_metadata kernels_metadata;

/**
 * Parses `{variant_dir}/metadata.json` without checking the files.
 * Required keys: id, name, version (integer), license, backend {type,
 * archs (optional list)}, digest {algorithm, files}. `*out` is owned by the
 * caller (kernels_metadata_free). Returns 0, KERNELS_ENOTFOUND (no
 * metadata.json), KERNELS_EPARSE (malformed JSON, a key missing or of the
 * wrong type: the message names the key), KERNELS_EIO or KERNELS_ENOMEM.
 */
KERNELS_EXTERN(int) kernels_metadata_read(kernels_metadata **out, const char *variant_dir);

/**
 * Parses the metadata and checks its digest against the files under
 * `variant_dir` (every regular file except metadata.json,
 * metadata.json.sigstore, __pycache__/ and *.pyc). Symbolic links are
 * followed only when they stay inside `variant_dir`, or, for a variant in a
 * hub cache snapshot ({cache}/kernels--org--name/snapshots/{commit}/build/
 * {variant}), inside that repo's cache folder (its blobs/). A build from a dirty
 * git tree gives a warning through opts' log callback. `out` may be NULL;
 * otherwise the metadata is returned there (caller frees). Returns 0, the
 * errors of kernels_metadata_read(), KERNELS_EINTEGRITY (the message lists
 * every missing, unknown and mismatching file) or KERNELS_EUNSAFE (a link
 * leaving the folder).
 */
KERNELS_EXTERN(int) kernels_verify_variant(const char *variant_dir, const struct kernels_options *opts,
					   kernels_metadata **out);

/** Frees metadata; NULL is fine. */
KERNELS_EXTERN(void) kernels_metadata_free(kernels_metadata *m);

/* Accessors: strings are owned by the metadata and live as long as it. */
KERNELS_EXTERN(const char *) kernels_metadata_id(const kernels_metadata *m);      /**< "_img2gray_cuda_7a4e5a7" */
KERNELS_EXTERN(const char *) kernels_metadata_name(const kernels_metadata *m);    /**< "img2gray" */
KERNELS_EXTERN(int) kernels_metadata_version(const kernels_metadata *m);          /**< major version, e.g. 1 */
KERNELS_EXTERN(const char *) kernels_metadata_license(const kernels_metadata *m); /**< "Apache-2.0" */
/** "cuda", "rocm", "cpu", "metal", "xpu", "cann", "neuron" or "tpu". */
KERNELS_EXTERN(const char *) kernels_metadata_backend(const kernels_metadata *m);
/** Number of backend.archs entries (0 when the metadata lists none). */
KERNELS_EXTERN(size_t) kernels_metadata_archs_count(const kernels_metadata *m);
/** backend.archs[i] ("9.0+PTX"); NULL when out of range. */
KERNELS_EXTERN(const char *) kernels_metadata_arch(const kernels_metadata *m, size_t i);
/** The archs as a NULL-terminated array (for kernels_variant_candidate.archs); NULL when none listed. */
KERNELS_EXTERN(const char *const *) kernels_metadata_archs(const kernels_metadata *m);
/** 1 when provenance says the kernel or kernel-builder tree was dirty. */
KERNELS_EXTERN(int) kernels_metadata_dirty(const kernels_metadata *m);

/* ---- loaded kernels ------------------------------------------------------ */

/**
 * A loaded kernel variant; opaque, reference counted, thread-safe. Loading
 * the same variant folder (same real path) again returns the same handle
 * with one more reference; every successful load needs one
 * kernels_kernel_close().
 */
typedef struct kernels_kernel kernels_kernel;

/**
 * Verifies and loads a kernel from disk. `path` is a variant folder (it
 * holds metadata.json), or a build tree: a repo checkout with build/, or
 * the build/ folder itself, whose variant folders are resolved against the
 * system (kernels_variant_resolve with opts, each variant's metadata.json
 * archs included) and the chosen one loaded.
 *
 * The native module is the single top-level *.so of the variant; when
 * there are several, the one named after metadata id (`{id}.so`,
 * `{id}.abi3.so`, `{id}.*.so`); when there is none at the top, the same
 * rule in the `{name}/` package folder (name with '-' -> '_'); when there
 * is none at all, the variant is noarch (no native code). It is dlopen()ed
 * with RTLD_NOW | RTLD_LOCAL only after verification passed. Returns 0,
 * the errors of kernels_verify_variant(), KERNELS_ENOMATCH (no variant of a
 * build tree fits: the message has the whole decision trace), or
 * KERNELS_ELOAD (the message has the variant, the file and dlerror(),
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
KERNELS_EXTERN(const kernels_metadata *) kernels_kernel_metadata(const kernels_kernel *k);
/** Current number of references (for diagnostics). */
KERNELS_EXTERN(int) kernels_kernel_refcount(const kernels_kernel *k);

/**
 * The kernels loaded now, each with a reference added: close each one and
 * free the array with free() (stdlib). `*count` may be 0 (`*out` NULL).
 */
KERNELS_EXTERN(int) kernels_kernel_list(kernels_kernel ***out, size_t *count);

/** Drops a reference; at zero the module is dlclose()d. NULL is fine. */
KERNELS_EXTERN(void) kernels_kernel_close(kernels_kernel *k);

#ifdef __cplusplus
}
#endif

#endif
