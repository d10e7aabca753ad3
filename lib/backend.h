/* Internal: the compute backends in one table (lib/backend.c). A row says
 * how the backend is spelled in variant names, whether it carries a
 * version, how its GPUs are found and how a build's archs are checked
 * against one of them; adding a backend's detection is adding its row. */
#ifndef KERNELS_LIB_BACKEND_H
#define KERNELS_LIB_BACKEND_H

#include "kernels/system.h"

/* The GPUs a backend's detection found, in its device order. */
typedef struct {
	int count;
	char arch[KERNELS_MAX_GPUS][32]; /* "9.0", "gfx90a" */
} kernels__gpu_list;

typedef struct kernels__backend {
	const char *name;        /* "cuda": kernels_system.backend, metadata.json backend.type */
	const char *prefix;      /* in arch variant names: "cu" (cu130), "rocm" (rocm63), "cpu" */
	const char *label;       /* in messages: "CUDA" */
	int versioned;           /* the variant name carries major and minor (cu130 -> 13.0) */
	const char *noarch;      /* its noarch variant name: "cuda"; "npu" for cann */
	const char *device_word; /* "CUDA capability", "ROCm arch": how an arch is named in reasons */
	/* Fills `out` with the GPUs this backend sees in the machine; NULL: no
	 * detection yet (name the GPUs with KERNELS_GPU_ARCHS). */
	void (*detect)(kernels__gpu_list *out);
	/* 1 when one of `archs` (backend.archs) runs on a device of arch
	 * `device`, 0 when none does, -1 when no arch string is in a format the
	 * row knows (compatibility unknown: accepted); NULL: no check. */
	int (*archs_support)(const char *const *archs, const char *device);
} kernels__backend;

/* The row of backend `name` ("cuda"), or NULL. */
const kernels__backend *kernels__backend_find(const char *name);
/* 0 when `name` is a backend of the table; else KERNELS_EINVAL (`then`
 * ends its message) naming
 * `from` (where the name came from: "KERNELS_BACKEND"), the nearest backend
 * ("CUDA" -> cuda, "cup" -> cpu) and every backend: guessing would resolve
 * for a backend no build has, so an unknown one is an error. */
int kernels__backend_check(const char *name, const char *from, const char *then);
/* The row whose variant prefix starts `s` ("cu130", "rocm63", "cpu"); NULL when none. */
const kernels__backend *kernels__backend_by_prefix(const char *s);
#ifdef KERNELS_TESTING
/* The test build only: all rows, NULL-terminated. */
const kernels__backend *const *kernels__backends(void);
/* The test build only: where the XPU, TPU, Neuron and CANN rows look for
 * sys/ and dev/ (NULL: the machine's). */
void kernels__backend_set_root(const char *root);
#endif

/* The CUDA rule of Python kernels 0.17 (archs.py) for one compute
 * capability "M.m": "9.0a" exactly, "10.0f" same major and minor >=,
 * "9.0+PTX" any capability >= 9.0, "8.0" same major, minor >=. */
int kernels__cuda_archs_support_str(const char *const *archs, const char *device);
/* ROCm, as 0.17: the device's gfx name (feature flags after ':' dropped)
 * is one of the archs. */
int kernels__rocm_archs_support(const char *const *archs, const char *device);

/* The gfx name of a KFD gfx_target_version (90010 -> "gfx90a"). */
void kernels__gfx_name(unsigned long target_version, char *out, size_t size);

#endif
