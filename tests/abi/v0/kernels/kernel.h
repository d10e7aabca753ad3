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
 * Required keys: id, name, version (integer), license, python-depends,
 * backend {type, archs (optional list)}; optional: digest {algorithm,
 * files} and the keys described below the accessors. `*out` is owned by the
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
KERNELS_EXTERN(int) kernels_verify_variant(kernels_metadata **out, const char *variant_dir,
					   const struct kernels_options *opts);

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

/*
 * What metadata.json says about the kernel itself, read with the rules of
 * Python kernels 0.17.2's parser (a variant it refuses, libkernels refuses
 * with KERNELS_EPARSE naming the key): `name` matches
 * ^[a-z][-a-z0-9]*[a-z0-9]$; `python-depends` is required (a list of
 * strings); `kernel-depends` is optional; `kernels-minver` is "X.Y.Z";
 * `upstream` and `source` are git URLs (https, http, git, ssh, git+ssh,
 * git+https, git+http, or user@host:path); `provenance` needs
 * `kernel-builder.version`, and a commit (40 or 64 hex; "sha" is its old
 * name) only together with `dirty`. Unknown keys are ignored. Unlike 0.17,
 * an empty `id` or `license` is refused (the loader names modules by id).
 */

/** The Python kernels version libkernels implements the rules of; a variant
 *  whose kernels-minver is newer is refused (KERNELS_ELOAD, naming both). */
#define KERNELS_COMPAT_KERNELS_VERSION "0.17.2"

/** `upstream`, the repository the kernel was ported from, as written; NULL when absent. */
KERNELS_EXTERN(const char *) kernels_metadata_upstream(const kernels_metadata *m);
/** `source`, kernel-builder's source repository of the kernel, as written; NULL when absent. */
KERNELS_EXTERN(const char *) kernels_metadata_source(const kernels_metadata *m);
/** `kernels-minver` normalised ("0.17.0"): the oldest Python kernels (and so
 *  the KERNELS_COMPAT_KERNELS_VERSION) that may load the variant; NULL when absent. */
KERNELS_EXTERN(const char *) kernels_metadata_kernels_minver(const kernels_metadata *m);
/** Number of `python-depends` entries ("einops", "tvm-ffi", ...). */
KERNELS_EXTERN(size_t) kernels_metadata_python_depends_count(const kernels_metadata *m);
/** `python-depends`[i]; NULL when out of range. */
KERNELS_EXTERN(const char *) kernels_metadata_python_depend(const kernels_metadata *m, size_t i);

/** One `kernel-depends` entry: another Hub kernel this one needs loaded
 *  first. Strings belong to the metadata. */
typedef struct kernels_kernel_dependency {
	const char *repo_id;   /**< "org/name" as written */
	long long version;     /**< "version": N (the branch vN); -1 when given by revision */
	const char *revision;  /**< "revision": branch, tag or commit; NULL when given by version */
} kernels_kernel_dependency;

/** Number of `kernel-depends` entries (0 when the key is absent). */
KERNELS_EXTERN(size_t) kernels_metadata_kernel_depends_count(const kernels_metadata *m);
/** Fills `out` with entry `i`. Returns 0, or KERNELS_EINVAL when out of range. */
KERNELS_EXTERN(int) kernels_metadata_kernel_depend(const kernels_metadata *m, size_t i,
						   kernels_kernel_dependency *out);

/** `provenance`: the git state the variant was built from. */
typedef struct kernels_metadata_provenance {
	const char *builder_version;  /**< kernel-builder's version */
	const char *builder_commit;   /**< kernel-builder's commit (lower-case hex); NULL when unknown */
	int builder_dirty;            /**< 1 uncommitted changes, 0 clean, -1 unknown */
	const char *kernel_commit;    /**< the kernel source's commit; NULL when not built from git */
	int kernel_dirty;             /**< 1, 0, or -1 unknown */
} kernels_metadata_provenance;

/** Fills `out` (strings owned by the metadata). Returns 1 when the metadata
 *  has a provenance, 0 when not (`out` then has NULLs and -1s), or
 *  KERNELS_EINVAL for a NULL `out`. */
KERNELS_EXTERN(int) kernels_metadata_provenance_get(const kernels_metadata *m, kernels_metadata_provenance *out);

/* ---- loaded kernels ------------------------------------------------------ */

/**
 * A loaded kernel variant; opaque, reference counted, thread-safe. Loading
 * the same variant folder (same real path) again returns the same handle
 * with one more reference; every successful load needs one
 * kernels_kernel_close().
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
KERNELS_EXTERN(const kernels_metadata *) kernels_kernel_metadata(const kernels_kernel *k);
/**
 * The kernels this one's `kernel-depends` named, loaded before it, in the
 * metadata's order (each with their own dependencies loaded first). The
 * kernel holds a reference on each until its last close. NULL when out of
 * range. See kernels/get.h for how dependencies are resolved.
 */
KERNELS_EXTERN(size_t) kernels_kernel_dependencies_count(const kernels_kernel *k);
KERNELS_EXTERN(const kernels_kernel *) kernels_kernel_dependency_at(const kernels_kernel *k, size_t i);
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
