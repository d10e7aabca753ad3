/*
 * libkernels: the one options struct every entry point takes.
 *
 * Initialise with KERNELS_OPTIONS_INIT or kernels_options_init() and set
 * only what you need; a NULL options pointer anywhere means "all
 * defaults". Every string is borrowed: the caller keeps ownership and must
 * keep it alive for the call.
 *
 * Versioned: `version` says which layout the caller was built with. The
 * library accepts every version from 1 to the KERNELS_OPTIONS_VERSION it
 * was built with, reads only the fields that version had (the others keep
 * their defaults), and refuses a version it does not know with
 * KERNELS_EINVAL. A field is only ever added at the end, with a new
 * version (docs/api-stability.md). Version 1 is the layout of 1.0.
 *
 * since 1.0; kernels_options_init() may be called from any thread, and a
 * filled struct may be shared by calls on several threads (it is only
 * read).
 */
#ifndef KERNELS_OPTIONS_H
#define KERNELS_OPTIONS_H

#include "common.h"
#include "system.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KERNELS_OPTIONS_VERSION 2

/**
 * The defaults a 0 (or negative) field of kernels_options stands for when
 * the environment names none, so tools can show the true values (since 1.0):
 * timeout_ms (huggingface_hub's 10 s for both kinds of request),
 * max_retries, max_parallel and deadline_ms.
 */
#define KERNELS_DEFAULT_TIMEOUT_MS 10000
#define KERNELS_DEFAULT_MAX_RETRIES 5
#define KERNELS_DEFAULT_MAX_PARALLEL 8
#define KERNELS_DEFAULT_DEADLINE_MS 10000

/** Tri-state switches: follow the environment, or force off/on. */
#define KERNELS_FROM_ENV (-1)

/**
 * A kernels_options of the current version holding the defaults, for
 * static or automatic initialisation: `kernels_options o = KERNELS_OPTIONS_INIT;`.
 * The same values kernels_options_init(&o, KERNELS_OPTIONS_VERSION) writes.
 */
#if !defined(__cplusplus) || __cplusplus >= 202002L
#define KERNELS_OPTIONS_INIT                                                                        \
	{ .version = KERNELS_OPTIONS_VERSION, .offline = KERNELS_FROM_ENV, .max_retries = -1,      \
	  .find_torch = KERNELS_FROM_ENV }
#else /* C++ before 20: no designated initialisers */
#define KERNELS_OPTIONS_INIT                                                                         \
	{ KERNELS_OPTIONS_VERSION, NULL, NULL, NULL, KERNELS_FROM_ENV, 0, -1, 0, 0, NULL, NULL, NULL, NULL, \
	  NULL, NULL, NULL, KERNELS_FROM_ENV }
#endif

/**
 * Progress of a download: `path` is the file being fetched (relative to the
 * repo), `file_done/file_total` its bytes, `all_done/all_total` the bytes of
 * the whole request (totals known up front from the tree listing).
 * Return non-zero to abort the download (KERNELS_ERROR, "cancelled").
 */
typedef int (*kernels_progress_cb)(const char *path, size_t file_done, size_t file_total,
				   size_t all_done, size_t all_total, void *payload);

struct kernels_signature_policy;

typedef struct kernels_options {
	unsigned int version;        /**< KERNELS_OPTIONS_VERSION */

	const char *endpoint;        /**< Hub URL; NULL: $HF_ENDPOINT, else https://huggingface.co */
	const char *cache_dir;       /**< NULL: $KERNELS_CACHE, $HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub */
	const char *token;           /**< NULL: $HF_TOKEN, else the file $HF_TOKEN_PATH ($HF_HOME/token); none with $HF_HUB_DISABLE_IMPLICIT_TOKEN; "": none */
	int offline;                 /**< KERNELS_FROM_ENV ($HF_HUB_OFFLINE, else $TRANSFORMERS_OFFLINE), 0 or 1 */

	long timeout_ms;             /**< per-request connect/stall timeout; 0: $HF_HUB_ETAG_TIMEOUT s for metadata requests and $HF_HUB_DOWNLOAD_TIMEOUT s for file transfers, each else 10 s; more than a day counts as a day */
	int max_retries;             /**< retries on 5xx, 429 (Retry-After honoured), resets and stalls; never for a refused connection or a failed DNS lookup; <0: 5 */
	int max_parallel;            /**< concurrent transfers; 0: 8 */

	int trust_remote_code;       /**< 1: load repos whose publisher is not trusted */
	const char *trusted_orgs;    /**< comma-separated orgs ("acme") or repo ids ("acme/relu") trusted without the Hub's say */

	const kernels_system *system;/**< NULL: detect; else overrides detection field by field */

	kernels_log_cb log_cb;       /**< NULL: warnings to stderr */
	void *log_payload;
	kernels_progress_cb progress_cb; /**< NULL: no progress reports */
	void *progress_payload;

	/**
	 * An installed torch to resolve torch variants for when the process has
	 * not loaded libtorch: the torch package folder (site-packages/torch),
	 * its lib/ folder, or an unpacked libtorch archive. Read from its files
	 * only (version.py or build-version, libc10's symbol table); nothing is
	 * loaded. A folder without a torch is KERNELS_EINVAL. NULL:
	 * $KERNELS_TORCH_DIR. A torch loaded in the process always wins.
	 */
	const char *torch_dir;
	/**
	 * KERNELS_FROM_ENV ($KERNELS_FIND_TORCH: 1/on/yes/true), 0 or 1. When
	 * on, and no torch is loaded or named by torch_dir, the torch of the
	 * active virtualenv ($VIRTUAL_ENV), else of the python3 first on PATH
	 * (its site-packages, read without running Python), is used. Off unless
	 * asked for: a library should not describe a process by some other
	 * interpreter's packages by default. See kernels/system.h.
	 */
	int find_torch;

	/**
	 * The whole call's budget for talking to the Hub, in milliseconds: ref
	 * listing, the trust check, tree listings, file metadata and the start
	 * of every file transfer share it (a transfer whose bytes keep arriving
	 * is bounded by timeout_ms, the stall timeout, instead, so a large
	 * kernel on a slow link still arrives). When it runs out the call
	 * answers from the cache with a warning if the cache holds the answer,
	 * else fails with KERNELS_ENETWORK naming what was tried (KERNELS_EHTTP
	 * when the Hub answered only a 5xx or 429 until then).
	 * 0: $KERNELS_DEADLINE_MS, else 10000. Negative: no deadline.
	 */
	long deadline_ms;
	/**
	 * Hub endpoints tried in turn under the one deadline, e.g. a mirror
	 * first and the Hub second: "http://mirror:8090,https://huggingface.co"
	 * (comma- or blank-separated http(s) URLs). The next one is tried when
	 * one cannot be reached, fails (5xx), or lacks the repo or revision.
	 * The token goes to each of them, as it goes to HF_ENDPOINT.
	 * NULL: $KERNELS_ENDPOINTS, else `endpoint` alone.
	 */
	const char *endpoints;
	/**
	 * What the default log sink (stderr, when log_cb is NULL) prints:
	 * "error" (nothing: errors are returned, never logged), "warn"
	 * (warnings), "info" (also retries and endpoints tried) or "debug"
	 * (also the variant chosen and the system it was chosen for, what the
	 * loader left unbound). NULL: $KERNELS_LOG, else "warn" (a $KERNELS_LOG
	 * that is none of these is ignored); another value here is
	 * KERNELS_EINVAL. A log_cb gets every level and filters for itself.
	 * Either way each warning is given once per call, however many stages
	 * notice it.
	 */
	const char *log_level;

	/* Signatures (kernels/signature.h). */
	/**
	 * A kernels_signature_mode: KERNELS_SIGNATURE_DEFAULT (0:
	 * $KERNELS_SIGNATURE, else if-present), _OFF, _IF_PRESENT (a variant
	 * with metadata.json.sigstore loads only when it is valid) or _REQUIRE
	 * (nothing loads without a valid signature; KERNELS_ESIGNATURE).
	 */
	int signature;
	/** A sigstore trusted_root.json to verify against; NULL:
	 *  $KERNELS_SIGSTORE_TRUSTED_ROOT, else sigstore's public-good root built
	 *  into the library. */
	const char *sigstore_trusted_root;
	/** Signers accepted besides the default policy (Python kernels 0.17's
	 *  DEFAULT_POLICIES); borrowed, `signature_policy_count` of them. */
	const struct kernels_signature_policy *signature_policies;
	size_t signature_policy_count;

	/**
	 * Seconds a branch, tag, vN or version specifier that a kernels_get of
	 * this process resolved stays resolved: within that time a kernels_get
	 * of the same repo and revision, with the same settings, sends no
	 * request at all (the refs listing included) and returns the handle it
	 * returned before while that is not closed; a moved tag or branch is
	 * then seen only after it. 0 (default): every kernels_get of a name
	 * asks for the refs (one request; none more when the variant is already
	 * cached or loaded), as huggingface_hub asks again once
	 * HF_HUB_ETAG_TIMEOUT has passed. A full commit id never needs asking.
	 */
	long revision_ttl_s;

	/**
	 * 1: skip the arch check (Python kernels 0.17's check_arch=False): a
	 * variant whose metadata.json backend.archs do not support the device
	 * stays a candidate (archs can be incomplete, e.g. with a Triton
	 * fallback; such a kernel may then fail or crash at run time). 0 (the
	 * default): $KERNELS_SKIP_ARCH_CHECK (1/on/yes/true), else the check runs.
	 */
	int skip_arch_check;
	/**
	 * The device the kernel will run on, whose arch the check uses: a GPU
	 * index ("1", or "cuda:1"/"rocm:1"). NULL: $KERNELS_DEVICE, else the
	 * process's current device (kernels_system.current_device). The trace
	 * (kernels_variant_trace_devices_at) shows every GPU's result.
	 */
	const char *device;
	/**
	 * The calling application for the User-Agent ("myapp/1.2", or several
	 * "name/version" joined with "; "), sent first in this call's requests
	 * while telemetry is on (Python kernels' user_agent); per call, never
	 * process-wide. NULL: none.
	 */
	const char *user_agent;
	/* ---- version 2 ---- */
	/**
	 * How long, in milliseconds, one file's transfer may go without a byte,
	 * summed over its retries, before the call gives up on it (the bytes it
	 * got stay, unpublished, and the next call resumes after them). Each
	 * attempt still stalls out after timeout_ms; this bounds them all
	 * together, so a server that sends part of a file and then nothing
	 * costs this long, not retries times the timeout. 0:
	 * $KERNELS_STALL_BUDGET_MS, else 30000. Negative: only max_retries
	 * bounds it. @since 1.0 (KERNELS_OPTIONS_VERSION 2)
	 */
	long stall_budget_ms;
} kernels_options;

/**
 * Fills `opts` with the defaults of layout `version`: only the fields that
 * version has are written (a caller built against an older header passes
 * its own KERNELS_OPTIONS_VERSION, and its struct may end there).
 *
 * @param opts     the caller's struct; nothing past `version`'s fields is touched.
 * @param version  KERNELS_OPTIONS_VERSION of the header the caller builds with (1 or later).
 * @return 0, or KERNELS_EINVAL for a NULL `opts` or a version this library
 *         does not know (0, or newer than the library: the message names both).
 */
KERNELS_EXTERN(int) kernels_options_init(kernels_options *opts, unsigned int version);

#ifdef __cplusplus
}
#endif

#endif
