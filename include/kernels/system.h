/*
 * libkernels: the description of the running system that variant
 * resolution matches build variants against.
 */
#ifndef KERNELS_SYSTEM_H
#define KERNELS_SYSTEM_H

#include "common.h"

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
} kernels_system;

#ifdef __cplusplus
}
#endif

#endif
