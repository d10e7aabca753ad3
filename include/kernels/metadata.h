/*
 * libkernels: a variant's metadata.json (what it is, what it needs, where
 * it was built from) and the verification of a variant folder against it.
 *
 * A kernels_metadata is opaque and immutable: it may be read from several
 * threads at once. Strings read from it belong to it.
 *
 * Every function here is part of libkernels since 1.0 and may be called
 * from any thread unless its comment says otherwise (docs/threading.md).
 */
#ifndef KERNELS_METADATA_H
#define KERNELS_METADATA_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kernels_options;

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
KERNELS_EXTERN(size_t) kernels_metadata_arch_count(const kernels_metadata *m);
/** backend.archs[i] ("9.0+PTX"); NULL when out of range. */
KERNELS_EXTERN(const char *) kernels_metadata_arch_at(const kernels_metadata *m, size_t i);
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

/** `upstream`, the repository the kernel was ported from, normalised as Python kernels 0.17.2 returns it
 *  ("git@github.com:org/repo" -> "ssh://git@github.com/org/repo", "HTTPS://GitHub.com" ->
 *  "https://github.com/"); NULL when absent. */
KERNELS_EXTERN(const char *) kernels_metadata_upstream(const kernels_metadata *m);
/** `source`, kernel-builder's source repository of the kernel, normalised as `upstream`; NULL when absent. */
KERNELS_EXTERN(const char *) kernels_metadata_source(const kernels_metadata *m);
/** `kernels-minver` normalised ("0.17.0"): the oldest Python kernels (and so
 *  the KERNELS_COMPAT_KERNELS_VERSION) that may load the variant; NULL when absent. */
KERNELS_EXTERN(const char *) kernels_metadata_kernels_minver(const kernels_metadata *m);
/** Number of `python-depends` entries ("einops", "tvm-ffi", ...). */
KERNELS_EXTERN(size_t) kernels_metadata_python_depend_count(const kernels_metadata *m);
/** `python-depends`[i]; NULL when out of range. */
KERNELS_EXTERN(const char *) kernels_metadata_python_depend_at(const kernels_metadata *m, size_t i);

/** One `kernel-depends` entry: another Hub kernel this one needs loaded
 *  first. Strings belong to the metadata. */
typedef struct kernels_kernel_dependency {
	const char *repo_id;   /**< "org/name" as written */
	long long version;     /**< "version": N (the branch vN); -1 when given by revision */
	const char *revision;  /**< "revision": branch, tag or commit; NULL when given by version */
} kernels_kernel_dependency;

/** Number of `kernel-depends` entries (0 when the key is absent). */
KERNELS_EXTERN(size_t) kernels_metadata_kernel_depend_count(const kernels_metadata *m);
/** Fills `out` with entry `i`. Returns 0, or KERNELS_EINVAL when out of range. */
KERNELS_EXTERN(int) kernels_metadata_kernel_depend_at(kernels_kernel_dependency *out,
						      const kernels_metadata *m, size_t i);

/** The kernels_provenance layout this header describes. */
#define KERNELS_PROVENANCE_VERSION 1
/** A kernels_provenance ready for kernels_metadata_provenance(). */
#define KERNELS_PROVENANCE_INIT { KERNELS_PROVENANCE_VERSION, NULL, NULL, -1, NULL, -1 }

/**
 * `provenance`: the git state the variant was built from. The caller
 * allocates it and sets `version` (KERNELS_PROVENANCE_INIT); the library
 * writes only the fields that version has (docs/api-stability.md).
 */
typedef struct kernels_provenance {
	unsigned int version;         /**< KERNELS_PROVENANCE_VERSION, set by the caller */
	const char *builder_version;  /**< kernel-builder's version */
	const char *builder_commit;   /**< kernel-builder's commit (lower-case hex); NULL when unknown */
	int builder_dirty;            /**< 1 uncommitted changes, 0 clean, -1 unknown */
	const char *kernel_commit;    /**< the kernel source's commit; NULL when not built from git */
	int kernel_dirty;             /**< 1, 0, or -1 unknown */
} kernels_provenance;

/**
 * Fills `out` with the metadata's provenance; its strings belong to `m`.
 *
 * @param out  the caller's struct, its `version` set (KERNELS_PROVENANCE_INIT).
 * @param m    the metadata; NULL reads as "no provenance".
 * @return 1 when the metadata has a provenance, 0 when not (`out` then has
 *         NULLs and -1s), KERNELS_EINVAL for a NULL `out` or a version this
 *         library does not know.
 */
KERNELS_EXTERN(int) kernels_metadata_provenance(kernels_provenance *out, const kernels_metadata *m);

#ifdef __cplusplus
}
#endif

#endif
