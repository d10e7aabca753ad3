/*
 * libkernels: the main call. kernels_get() runs the whole pipeline:
 * revision resolution, the publisher trust check, a kernel-status.toml
 * redirect, variant resolution for this process, download into the shared
 * cache, verification, and dlopen.
 *
 * Every function here is part of libkernels since 1.0 and may be called
 * from any thread unless its comment says otherwise (docs/threading.md).
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

/** The kernels_get_stats layout this header describes. */
#define KERNELS_GET_STATS_VERSION 1
/** A kernels_get_stats ready for kernels_get_ext(). */
#define KERNELS_GET_STATS_INIT { KERNELS_GET_STATS_VERSION, 0, 0, 0, 0, 0, 0, "", "", KERNELS_DOWNLOAD_STATS_INIT }

/**
 * Where the time of one kernels_get_ext() call went, and what it did. The
 * caller allocates it with `version` set (KERNELS_GET_STATS_INIT); the
 * library writes only the fields that version has.
 */
typedef struct kernels_get_stats {
	unsigned int version;    /**< KERNELS_GET_STATS_VERSION, set by the caller */
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
 * is loaded from that local tree instead, with no network ($LOCAL_KERNELS
 * is "org/a=/path/a:org/b=/path/b"; an entry without '=' is KERNELS_EINVAL,
 * as in Python kernels 0.17; it applies to dependencies,
 * kernels_get_variants() and kernels_has_kernel() too).
 *
 * Kernel dependencies: the kernels a variant's metadata.json lists under
 * `kernel-depends` (repo id and major version N, the branch vN, or a
 * revision) are loaded first, as Python kernels 0.17 loads them: each
 * resolved for this system by the same rules (LOCAL_KERNELS, then the Hub,
 * or the cache offline), fetched, verified and loaded with its own
 * dependencies before it (kernels_kernel_dependency_at()). A dependency
 * is loaded once and shared (a diamond loads its base once). Stricter
 * than 0.17: one repo is loaded at one commit per process, so two kernels
 * needing different commits of one repo fail with KERNELS_ENOMATCH naming
 * both (their modules would define the same symbols and torch ops); a
 * cycle, or a chain more than 16 levels deep, is KERNELS_EINVAL. A
 * dependent whose native module uses symbols of a dependency without
 * linking it (DT_NEEDED by its SONAME) gets that dependency promoted to
 * RTLD_GLOBAL before it is mapped; any other stays RTLD_LOCAL. A locked
 * load (kernels/project.h) takes each dependency's commit from the lock.
 *
 * `*out` is owned by the caller: kernels_kernel_close(). Loading the same
 * variant twice returns the same handle with one more reference, once the
 * second call's own signature settings pass: a call that checks
 * signatures is never handed what another call loaded without a check
 * (KERNELS_ESIGNATURE when the signature fails).
 * When the Hub cannot be reached (connection refused, DNS failure, the
 * deadline out), or is not serving (it answered a 5xx or 429 on every
 * retry), the cache answers what it holds, with a warning naming why, and
 * the Hub is remembered so for 30 s (docs/fleets-and-mirrors.md; of the
 * statuses, an outage's 502, 503 and 504 only). What the
 * cache lacks then fails with KERNELS_ENETWORK (unreachable) or
 * KERNELS_EHTTP (not serving), the message saying both halves. Any other
 * answer (401, 403, 404) never falls back.
 * Returns 0 or: KERNELS_EINVAL (malformed repo id or revision),
 * KERNELS_ENOTFOUND, KERNELS_ENOMATCH (no version satisfies the spec, or
 * no variant fits: the message carries the whole decision trace),
 * KERNELS_EUNTRUSTED, KERNELS_EAUTH, KERNELS_ENETWORK, KERNELS_EHTTP,
 * KERNELS_EOFFLINE, KERNELS_EINTEGRITY, KERNELS_ELOAD, KERNELS_EIO,
 * KERNELS_ENOMEM.
 */
KERNELS_EXTERN(int) kernels_get(kernels_kernel **out, const char *repo_id, const char *revision,
				const kernels_options *opts);

/**
 * kernels_get() that also says where the time went and what was done.
 *
 * @param out    as kernels_get().
 * @param stats  NULL, or the caller's struct with `version` set
 *               (KERNELS_GET_STATS_INIT): filled on success and on failure,
 *               no further than its version's fields.
 * @return as kernels_get(), and KERNELS_EINVAL for a stats version this
 *         library does not know (nothing is fetched then).
 */
KERNELS_EXTERN(int) kernels_get_ext(kernels_kernel **out, kernels_get_stats *stats, const char *repo_id,
				    const char *revision, const kernels_options *opts);

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

#ifdef __cplusplus
}
#endif

#endif
