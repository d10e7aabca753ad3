/*
 * libkernels: the main call. kernels_get() runs the whole pipeline:
 * revision resolution, the publisher trust check, a kernel-status.toml
 * redirect, variant resolution for this process, download into the shared
 * cache, verification, and dlopen.
 */
#ifndef KERNELS_GET_H
#define KERNELS_GET_H

#include "common.h"
#include "options.h"
#include "variant.h"
#include "kernel.h"
#include "download.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Where the time of one kernels_get_ext() call went, and what it did. */
typedef struct kernels_get_stats {
	double resolve_ms;       /**< revision, trust check, redirect */
	double select_ms;        /**< variant listing, system detection, resolution */
	double download_ms;      /**< fetching (or finding) the variant's files */
	double load_ms;          /**< digest verification and dlopen */
	int from_cache;          /**< 1 when nothing was downloaded */
	int local;               /**< 1 when loaded from LOCAL_KERNELS / a local tree */
	char commit[41];         /**< the resolved commit ("" for local loads) */
	char repo_id[128];       /**< the repo actually loaded (after a redirect) */
	kernels_download_stats download;
} kernels_get_stats;

/**
 * Fetches and loads the kernel `repo_id` ("org/name") at `revision`:
 * a branch or tag ("main", "v1.1.2"), a full or short (7+ hex) commit id,
 * a PEP 440 specifier set over vX.Y.Z tags (">=1.1.2,<2"), or a major
 * version "N" meaning the branch vN. NULL or "" is refused.
 *
 * The variant that fits this process best (see kernels_get_variants) is
 * downloaded into the cache shared with Python's huggingface_hub (once;
 * later calls make no download), its metadata.json digest is verified, and
 * only then its native module is dlopen'ed. A repo named in $LOCAL_KERNELS
 * is loaded from that local tree instead, with no network.
 *
 * `*out` is owned by the caller: kernels_kernel_close(). Loading the same
 * variant twice returns the same handle with one more reference.
 * Returns 0 or: KERNELS_EINVAL (malformed repo id or revision),
 * KERNELS_ENOTFOUND, KERNELS_ENOMATCH (no version satisfies the spec, or
 * no variant fits: the message carries the whole decision trace),
 * KERNELS_EUNTRUSTED, KERNELS_EAUTH, KERNELS_ENETWORK, KERNELS_EOFFLINE,
 * KERNELS_EINTEGRITY, KERNELS_ELOAD, KERNELS_EIO, KERNELS_ENOMEM.
 */
KERNELS_EXTERN(int) kernels_get(kernels_kernel **out, const char *repo_id, const char *revision,
				const kernels_options *opts);

/** kernels_get() that also fills `stats` (may be NULL) with timings. */
KERNELS_EXTERN(int) kernels_get_ext(kernels_kernel **out, const char *repo_id, const char *revision,
				    const kernels_options *opts, kernels_get_stats *stats);

/**
 * The decision trace of variant resolution for `repo_id` at `revision`
 * on this system (or opts->system): every variant under build/ with
 * accepted or the reason it was rejected, and the chosen one. Downloads
 * nothing but the metadata.json of CUDA candidates (for the GPU arch
 * check). `*out` is owned by the caller: kernels_variant_trace_free().
 * Errors as kernels_get() up to the download.
 */
KERNELS_EXTERN(int) kernels_get_variants(kernels_variant_trace **out, const char *repo_id,
					 const char *revision, const kernels_options *opts);

/** 1 when `repo_id` at `revision` has a variant for this system, 0 when it
 * has none, or a negative error code (as kernels_get_variants()). */
KERNELS_EXTERN(int) kernels_has_kernel(const char *repo_id, const char *revision, const kernels_options *opts);

/**
 * Loads a kernel from a local tree, with the same resolution and
 * verification as kernels_get() and no network: `path` may be a repo
 * checkout (its build/ folder is searched), a build/ folder, or one
 * variant folder (holding metadata.json). `*out` as kernels_get().
 */
KERNELS_EXTERN(int) kernels_get_local(kernels_kernel **out, const char *path, const kernels_options *opts);

#ifdef __cplusplus
}
#endif

#endif
