/*
 * libkernels: build variants (the folders under build/ of a kernel repo)
 * and their resolution against a system description.
 *
 * The rules and the preference order are those of the Python `kernels`
 * package (0.17): a variant is accepted or rejected with a human reason,
 * and the accepted ones are ordered by preference.
 *
 * The arch check (0.17's check_arch): a variant of any kind (arch,
 * stable-ABI, tvm-ffi, noarch) whose metadata.json says backend CUDA or
 * ROCm (the system's backend) and whose `backend.archs` do not support the
 * device the kernel will run on is rejected: the process's current device
 * (kernels_system.current_device) or kernels_options.device; CUDA
 * capabilities with 0.17's rules ("9.0a", "10.0f", "9.0+PTX"), ROCm gfx
 * names exactly (feature flags dropped). Unknown archs, an unknown arch
 * format or no GPU: accepted. kernels_options.skip_arch_check turns it
 * off. Unlike 0.17, which raises after choosing, the check takes part in
 * the choice, so another variant that fits may be chosen.
 *
 * Ties: 0.17 sorts by a key under which a tvm-ffi variant without a
 * backend minor (tvm-ffi01-cpu-...) and a noarch one are equal, so its
 * pick between them follows the order of a Python set (hash seeds).
 * libkernels puts tvm-ffi before noarch, as 0.17's docstring orders them,
 * and keeps the input order for other equal keys (kernels_get passes the
 * variant names sorted bytewise), so its choice never varies.
 *
 * Every function here is part of libkernels since 1.0 and may be called
 * from any thread unless its comment says otherwise (docs/threading.md).
 */
#ifndef KERNELS_VARIANT_H
#define KERNELS_VARIANT_H

#include "common.h"
#include "system.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kernels_options;

typedef enum {
	KERNELS_VARIANT_TORCH = 0,        /**< torch{M}{m}[-cxx11|-cxx98]-{backend}-{cpu}-{os} */
	KERNELS_VARIANT_TORCH_STABLE_ABI, /**< torch-stable-abi{M}{m}-{backend}-{cpu}-{os} */
	KERNELS_VARIANT_TVM_FFI,          /**< tvm-ffi{M}{m}-{backend}-{cpu}-{os} */
	KERNELS_VARIANT_NOARCH            /**< torch-{backend name}, torch-universal */
} kernels_variant_kind;

#define KERNELS_VARIANT_FIELD_MAX 256

/** A variant name taken apart. */
typedef struct kernels_variant_info {
	kernels_variant_kind kind;
	int framework_major;  /**< torch / stable ABI / tvm-ffi version; 0 for noarch */
	int framework_minor;
	int cxx11_abi;        /**< torch only: 1 "-cxx11", 0 "-cxx98", -1 no tag */
	/** Arch variants: "cuda", "rocm", "xpu", "cann", "cpu", "metal",
	 *  "neuron", "tpu". Noarch: the name after "torch-" ("cuda", "cpu",
	 *  "npu", "universal", ...). */
	char backend[KERNELS_VARIANT_FIELD_MAX];
	int backend_major;    /**< cu126 -> 12, 6 (the last digit is the minor); -1: unversioned */
	int backend_minor;
	char cpu[KERNELS_VARIANT_FIELD_MAX]; /**< "x86_64"; "" for noarch */
	char os[KERNELS_VARIANT_FIELD_MAX];  /**< "linux"; "" for noarch */
} kernels_variant_info;

/**
 * Parses a variant name. Returns 0, or KERNELS_EINVAL with a message saying
 * which part is not understood (an unknown or malformed name: callers skip
 * it with a warning).
 */
KERNELS_EXTERN(int) kernels_variant_parse(kernels_variant_info *out, const char *name);

/** A variant to resolve, with what its metadata.json says when known. */
typedef struct kernels_variant_candidate {
	const char *name;          /**< the folder name under build/ */
	const char *const *archs;  /**< backend.archs, NULL-terminated; NULL: unknown */
	/** backend.type ("cuda", "rocm", ...): which GPUs the archs are
	 *  compared with; NULL: the backend the name says ("torch-cuda": cuda;
	 *  "torch-universal": none, so its archs are not compared). */
	const char *backend;
} kernels_variant_candidate;

/** The decisions of one resolution; opaque, immutable, thread-safe to read. */
typedef struct kernels_variant_trace kernels_variant_trace;

/**
 * Resolves `count` variant names against `system` (NULL: kernels_system_detect
 * with `opts`; otherwise used as is: NULL backend means cpu, a 0 version
 * means absent). Unknown names are kept in the trace as rejected and
 * reported as warnings through opts' log callback. `*out` is owned by the
 * caller: kernels_variant_trace_free(). Having no variant fit is not an
 * error: kernels_variant_trace_chosen() is NULL then. Returns 0,
 * KERNELS_EINVAL (NULL out, NULL names with count > 0) or KERNELS_ENOMEM.
 */
KERNELS_EXTERN(int) kernels_variant_resolve(kernels_variant_trace **out, const char *const *names, size_t count,
					    const kernels_system *system, const struct kernels_options *opts);

/** Like kernels_variant_resolve(), with the archs of each variant's metadata. */
KERNELS_EXTERN(int) kernels_variant_resolve_candidates(kernels_variant_trace **out,
						       const kernels_variant_candidate *candidates, size_t count,
						       const kernels_system *system,
						       const struct kernels_options *opts);

/**
 * 1 when some variant of `names` fits the system, 0 when none does, or a
 * negative error code (as kernels_variant_resolve()).
 */
KERNELS_EXTERN(int) kernels_variant_fits(const char *const *names, size_t count, const kernels_system *system,
					 const struct kernels_options *opts);

/**
 * Entries are in preference order: the accepted variants first, best first,
 * then the rejected ones, then names that are not variants at all.
 */
KERNELS_EXTERN(size_t) kernels_variant_trace_count(const kernels_variant_trace *trace);
/** The variant name of entry `i` (owned by the trace); NULL when out of range. */
KERNELS_EXTERN(const char *) kernels_variant_trace_name_at(const kernels_variant_trace *trace, size_t i);
/** 1 accepted, 0 rejected, KERNELS_EINVAL when out of range. */
KERNELS_EXTERN(int) kernels_variant_trace_accepted_at(const kernels_variant_trace *trace, size_t i);
/** 1 when the name parsed as a variant, 0 for an unknown name. */
KERNELS_EXTERN(int) kernels_variant_trace_valid_at(const kernels_variant_trace *trace, size_t i);
/**
 * The arch check of entry `i`, GPU by GPU, for a CUDA or ROCm variant whose
 * metadata.json lists backend.archs ("GPU 0 (9.0): supported [the device
 * checked]; GPU 1 (8.6): not supported; build archs: 9.0"), or that the
 * check was off; NULL when it did not apply (other backends, no archs, no
 * GPU). Owned by the trace.
 */
KERNELS_EXTERN(const char *) kernels_variant_trace_devices_at(const kernels_variant_trace *trace, size_t i);
/** Why entry `i` was rejected (owned by the trace); NULL when accepted. */
KERNELS_EXTERN(const char *) kernels_variant_trace_reason_at(const kernels_variant_trace *trace, size_t i);
/** Preference rank among the accepted (0 = chosen); -1 when rejected. */
KERNELS_EXTERN(int) kernels_variant_trace_rank_at(const kernels_variant_trace *trace, size_t i);
/** The chosen (most preferred accepted) variant name; NULL when none fits. */
KERNELS_EXTERN(const char *) kernels_variant_trace_chosen(const kernels_variant_trace *trace);
/** The whole trace, one line per variant, as the Python client prints it. */
KERNELS_EXTERN(const char *) kernels_variant_trace_string(const kernels_variant_trace *trace);
/**
 * When no variant fits (kernels_variant_trace_chosen() is NULL): the
 * nearest changes of the system that would make one of the listed variants
 * fit, computed from those variants and the system the trace was resolved
 * for, one per line, each starting "\n- " (no GPU and a cpu variant: the
 * cpu backend; torch variants and no torch: KERNELS_FIND_TORCH=1 or a
 * torch folder; tvm-ffi variants and no libtvm_ffi: link it). The same
 * text is in the KERNELS_ENOMATCH message of kernels_get() and friends.
 * Owned by the trace; NULL when a variant fits or no such change is known.
 * Thread-safe for concurrent readers of one trace. Since 1.0.
 */
KERNELS_EXTERN(const char *) kernels_variant_trace_hint(const kernels_variant_trace *trace);
/** Frees a trace; NULL is fine. */
KERNELS_EXTERN(void) kernels_variant_trace_free(kernels_variant_trace *trace);

#ifdef __cplusplus
}
#endif

#endif
