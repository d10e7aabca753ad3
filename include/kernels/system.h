/*
 * libkernels: the description of the running system that variant
 * resolution matches build variants against.
 */
#ifndef KERNELS_SYSTEM_H
#define KERNELS_SYSTEM_H

#include "common.h"

struct kernels_options;

#ifdef __cplusplus
extern "C" {
#endif

#define KERNELS_MAX_GPUS 16

/**
 * A system description. Used two ways: as an override in kernels_options
 * (a field left 0/NULL is detected, a set field wins) and as the answer of
 * kernels_system_detect(). Version numbers are major*100+minor (2.11 ->
 * 211, CUDA 13.0 -> 1300); 0 means "absent". Strings are borrowed in
 * overrides and owned by the library in detected descriptions.
 */
typedef struct kernels_system {
	int torch_version;         /**< e.g. 211; 0: no torch */
	int torch_cxx11_abi;       /**< 1: cxx11 ABI, 0: old ABI, -1: unknown */
	int tvm_ffi_version;       /**< e.g. 12 for 0.12; 0: none */
	const char *backend;       /**< "cuda", "rocm", "cpu", ...; NULL: detect */
	int backend_version;       /**< CUDA/ROCm version, e.g. 1300; 0: none */
	int gpu_count;             /**< number of entries in gpu_archs */
	int gpu_archs[KERNELS_MAX_GPUS]; /**< compute capability major*10+minor, e.g. 90 */
	const char *cpu;           /**< "x86_64", "aarch64"; NULL: detect */
	const char *os;            /**< "linux", "darwin"; NULL: detect */
	int no_gpu;                /**< 1 in an override: behave as a cpu-only machine */

	/* Added by the detection stage; 0/NULL in an override means "detect".
	 * Read-only facts shown by kernels_system_format(). */
	int macos_version;         /**< macOS major*100+minor (Metal needs 26.0); 0: not macOS */
	int cuda_runtime_version;  /**< libcudart's version, e.g. 1208; 0: none loadable */
	int cuda_driver_version;   /**< highest CUDA the driver supports, e.g. 1300; 0: no driver */
	const char *glibc;         /**< "2.39"; NULL: not glibc */
	const char *torch_version_string; /**< e.g. "2.11.0+cu130", as the torch files say */
	const char *torch_path;    /**< folder of the loaded libtorch/libc10 */
	const char *tvm_ffi_path;  /**< folder of the loaded libtvm_ffi */
	const char *backend_source;/**< where backend came from: "options", "environment",
				        "torch", "cudart", "driver" or "default" */
} kernels_system;

/*
 * Override semantics (kernels_options.system and environment variables):
 *  - torch_version > 0 describes the torch wholesale: torch_cxx11_abi is then
 *    taken as given (1, 0 or -1); torch_version < 0 means "no torch";
 *    tvm_ffi_version < 0 means "no tvm-ffi".
 *  - backend set: backend_version taken as given ("cpu" forces a cpu-only
 *    resolution, like no_gpu = 1).
 *  - gpu_count > 0: gpu_archs taken as given; gpu_count < 0: no GPU.
 *
 * Environment (read after the options, before detection):
 *   KERNELS_TORCH_VERSION   "2.11" (or "2.11.0+cu130"); "none": no torch
 *   KERNELS_CXX11_ABI       "1"/"0" (with or without KERNELS_TORCH_VERSION)
 *   KERNELS_TVM_FFI_VERSION "0.12"; "none": no tvm-ffi
 *   KERNELS_BACKEND         "cpu" forces cpu; "cuda", "rocm", "xpu", "metal",
 *                           "cann", "neuron", "tpu" set the backend
 *   KERNELS_BACKEND_VERSION "12.8" (the backend's version)
 *   KERNELS_CUDA_VERSION    "12.8": backend cuda with that version
 *   KERNELS_GPU_ARCHS       "9.0,8.6" compute capabilities; "none": no GPU
 *   KERNELS_CPU, KERNELS_OS "x86_64", "linux"
 *
 * Detection: torch from a loaded libtorch/libc10 (dl_iterate_phdr; version
 * from torch/version.py or libtorch's build-version next to it; C++ ABI from
 * its exported symbols), tvm-ffi from a loaded libtvm_ffi, the backend from
 * torch, else (when the CUDA driver sees a GPU) libcudart's runtime version
 * or else the driver's version, else cpu; GPUs from the driver; cpu/os from
 * uname. Unlike the Python client, a CUDA runtime on a machine without a
 * driver or GPU does not make it a CUDA machine.
 */

/**
 * Describes the running system: `opts->system` fields that are set win,
 * then the environment, then detection. Never fails for lack of a GPU,
 * driver or torch (that is a cpu machine). `*out` is owned by the caller:
 * free with kernels_system_free(). Returns 0, KERNELS_EINVAL (NULL out,
 * bad options or a malformed KERNELS_* variable) or KERNELS_ENOMEM.
 */
KERNELS_EXTERN(int) kernels_system_detect(kernels_system **out, const struct kernels_options *opts);

/** Frees a description returned by kernels_system_detect(); NULL is fine. */
KERNELS_EXTERN(void) kernels_system_free(kernels_system *sys);

/**
 * One-line human description ("torch 2.11 cxx11, cuda 13.0, GPUs sm_90,
 * x86_64-linux, glibc 2.39") into `buf` (always NUL-terminated when size >
 * 0). Returns the length the whole text needs, like snprintf.
 */
KERNELS_EXTERN(size_t) kernels_system_format(const kernels_system *sys, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif
