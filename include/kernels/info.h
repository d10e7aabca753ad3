/*
 * libkernels: what a kernel is, from its metadata and its variants, without
 * loading anything: Python kernels 0.17's `kernels info`.
 *
 * Every function here is part of libkernels since 1.0 and may be called
 * from any thread unless its comment says otherwise (docs/threading.md).
 */
#ifndef KERNELS_INFO_H
#define KERNELS_INFO_H

#include "common.h"
#include "options.h"
#include "kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A kernel described; opaque, owned by the caller (kernels_info_free). */
typedef struct kernels_info kernels_info;

/**
 * Describes `kernel`: a local folder (a kernel repo checkout holding
 * build/; `revision` must then be NULL), else a Hub repo id at `revision`
 * (branch, tag, commit, major version "N"; NULL: the highest vN branch, else
 * main, as Python kernels 0.17's `kernels info`). The variants are listed
 * (from the Hub's tree, or the cache offline) and the metadata.json of the
 * first one is read (the keys that describe the kernel are the same in
 * every variant): only that file is downloaded, nothing is loaded, no
 * publisher check is needed. Returns 0, KERNELS_EINVAL (bad arguments, a
 * revision with a path), KERNELS_ENOTFOUND (no such repo, revision or
 * folder; no variants), and the errors of kernels_variants_list().
 */
KERNELS_EXTERN(int) kernels_info_get(kernels_info **out, const char *kernel, const char *revision,
				     const kernels_options *opts);

/** The repo id; NULL for a local folder. */
KERNELS_EXTERN(const char *) kernels_info_repo_id(const kernels_info *info);
/** The folder as given; NULL for a Hub repo. */
KERNELS_EXTERN(const char *) kernels_info_path(const kernels_info *info);
/** The revision described ("v2", "main", or as given); NULL for a local folder. */
KERNELS_EXTERN(const char *) kernels_info_revision(const kernels_info *info);
/** Its commit (40 hex); NULL for a local folder. */
KERNELS_EXTERN(const char *) kernels_info_commit(const kernels_info *info);
/** The metadata read (name, version, kernels-minver, license, upstream,
 *  source, python-depends: see kernel.h); NULL when no variant had a
 *  readable metadata.json. Owned by the info. */
KERNELS_EXTERN(const kernels_metadata *) kernels_info_metadata(const kernels_info *info);
/** The backends of its variants ("cpu", "cuda", "universal", ...), sorted, each once. */
KERNELS_EXTERN(size_t) kernels_info_backend_count(const kernels_info *info);
KERNELS_EXTERN(const char *) kernels_info_backend_at(const kernels_info *info, size_t i);
/** The variant names found (sorted). */
KERNELS_EXTERN(size_t) kernels_info_variant_count(const kernels_info *info);
KERNELS_EXTERN(const char *) kernels_info_variant_at(const kernels_info *info, size_t i);
/** Frees an info; NULL is fine. */
KERNELS_EXTERN(void) kernels_info_free(kernels_info *info);

#ifdef __cplusplus
}
#endif

#endif
