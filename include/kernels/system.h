/*
 * libkernels: the description of the running system that variant
 * resolution matches build variants against.
 *
 * since 1.0; every function here may be called from any thread; a
 * description is immutable once returned.
 */
#ifndef KERNELS_SYSTEM_H
#define KERNELS_SYSTEM_H

#include "common.h"

struct kernels_options;

#ifdef __cplusplus
extern "C" {
#endif

#define KERNELS_MAX_GPUS 16

/** The layout of kernels_system this header describes (the `version` field). */
#define KERNELS_SYSTEM_VERSION 2

/**
 * A system description. Used two ways: as an override in kernels_options
 * (a field left 0/NULL is detected, a set field wins) and as the answer of
 * kernels_system_detect(). Version numbers are major*100+minor (2.11 ->
 * 211, CUDA 13.0 -> 1300); 0 means "absent". Strings are borrowed in
 * overrides and owned by the library in detected descriptions.
 *
 * The struct is versioned: `version` says which layout the caller was
 * built with, and the library reads an override only as far as that
 * version's fields reach (version 1 ended at torch_source; 2, the layout
 * of 1.0, added gpu_arch_names and current_device). An override may leave
 * it 0 (zero-initialised, or KERNELS_SYSTEM_INIT): read as version 2, the
 * 1.0 layout, for good; set KERNELS_SYSTEM_VERSION to use fields a later
 * release adds. A version newer than the library is KERNELS_EINVAL.
 * Detected descriptions carry the library's KERNELS_SYSTEM_VERSION.
 */
/** An override that detects everything: set only the fields to impose. */
#if !defined(__cplusplus) || __cplusplus >= 202002L
#define KERNELS_SYSTEM_INIT { .version = KERNELS_SYSTEM_VERSION }
#else
#define KERNELS_SYSTEM_INIT { KERNELS_SYSTEM_VERSION }
#endif

typedef struct kernels_system {
	unsigned int version;      /**< KERNELS_SYSTEM_VERSION (0 in an override: the current one) */
	int torch_version;         /**< e.g. 211; 0: no torch */
	int torch_cxx11_abi;       /**< 1: cxx11 ABI, 0: old ABI, -1: unknown */
	int tvm_ffi_version;       /**< e.g. 12 for 0.12; 0: none */
	const char *backend;       /**< "cuda", "rocm", "cpu", ...; NULL: detect */
	int backend_version;       /**< CUDA/ROCm/XPU/CANN version, e.g. 1300; 0: none */
	int gpu_count;             /**< number of GPUs (entries of gpu_archs and gpu_arch_names) */
	int gpu_archs[KERNELS_MAX_GPUS]; /**< CUDA compute capability major*10+minor, e.g. 90; 0 for other backends */
	const char *cpu;           /**< "x86_64", "aarch64"; NULL: detect */
	const char *os;            /**< "linux", "darwin"; NULL: detect */
	int no_gpu;                /**< 1 in an override: behave as a cpu-only machine */

	/* Added by the detection stage; 0/NULL in an override means "detect".
	 * Read-only facts shown by kernels_system_format(). */
	int macos_version;         /**< macOS major*100+minor (Metal needs 26.0); 0: not macOS */
	int cuda_runtime_version;  /**< libcudart's version, e.g. 1208, read from the file (never loaded for this); 0: none found */
	int cuda_driver_version;   /**< highest CUDA the driver supports, e.g. 1300; 0: no driver */
	const char *glibc;         /**< "2.39"; NULL: not glibc */
	const char *torch_version_string; /**< e.g. "2.11.0+cu130", as the torch files say */
	const char *torch_path;    /**< folder holding the detected torch's libc10/libtorch (torch/lib) */
	const char *tvm_ffi_path;  /**< folder of the loaded libtvm_ffi */
	const char *backend_source;/**< where backend came from: "options", "environment",
				        "torch", "cudart", "driver" or "default" */
	const char *torch_source;  /**< where the torch of torch_path was found: "process" (loaded),
				        "option" (kernels_options.torch_dir), "environment"
				        ($KERNELS_TORCH_DIR), "virtualenv" or "python3"; NULL: none */

	/* Version 2. */
	/** Each GPU's architecture as its backend names it: "9.0" (a CUDA
	 *  compute capability), "gfx90a" (a ROCm arch, feature flags such as
	 *  ":sramecc+" dropped). In an override with gpu_count > 0, an entry left
	 *  NULL is taken from gpu_archs. What the arch check compares with a
	 *  build's metadata.json backend.archs. */
	const char *gpu_arch_names[KERNELS_MAX_GPUS];
	/** The GPU this process runs kernels on, an index into the GPUs: CUDA's
	 *  current device when the process has a CUDA runtime loaded (as
	 *  torch.cuda.current_device()), else 0; -1 with no GPU. Overrides:
	 *  kernels_options.device. */
	int current_device;
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
 *   KERNELS_GPU_ARCHS       "9.0,8.6" compute capabilities, "gfx90a,gfx942" ROCm
 *                           archs (mixed lists are refused); "none": no GPU
 *   KERNELS_CPU, KERNELS_OS "x86_64", "linux"
 *   KERNELS_TORCH_DIR       an installed torch (kernels_options.torch_dir)
 *   KERNELS_FIND_TORCH      "1": look for an installed torch (find_torch)
 *
 * Detection of torch, in this order:
 *  1. a libtorch/libc10 loaded in the process (dl_iterate_phdr): torch_source
 *     "process";
 *  2. kernels_options.torch_dir, else $KERNELS_TORCH_DIR: "option" /
 *     "environment" (a folder without a torch is KERNELS_EINVAL);
 *  3. only with kernels_options.find_torch (or $KERNELS_FIND_TORCH=1; off
 *     by default): $VIRTUAL_ENV/lib/python3.N/site-packages/torch
 *     ("virtualenv"), else the torch the first python3 on PATH imports
 *     ("python3"): a venv's pyvenv.cfg (and its home when it includes the
 *     system site-packages), a pyenv shim's selected version
 *     ($PYENV_VERSION, .python-version, $PYENV_ROOT/version), else the
 *     realpath of the executable; then, in Python's order, the user site
 *     (~/.local/lib/python3.N/site-packages, $PYTHONUSERBASE), and the
 *     prefix's local/lib/python3.N/dist-packages, lib/python3.N/site-packages,
 *     lib/python3/dist-packages, lib/python3.N/dist-packages.
 * Nothing is loaded and Python is never run: the version and backend come
 * from torch/version.py (or libtorch's build-version), the C++ ABI from
 * libc10's exported symbols (dlsym for a loaded one, the file's ELF .dynsym
 * otherwise). torch_path is then the torch lib/ folder; a loader or host
 * that wants torch variants to load preloads libc10, libtorch_cpu and
 * libtorch from it. KERNELS_TORCH_VERSION (or options.system->torch_version)
 * skips steps 2 and 3.
 *
 * tvm-ffi: from a loaded libtvm_ffi (tvm_ffi/lib/libtvm_ffi.so), its version
 * from the package's __init__.py, _version.py or version.py as the
 * apache-tvm-ffi wheel writes it (`__version__ = version = '0.1.15.post2'`);
 * major.minor is matched, as Python kernels does (0.1 <-> tvm-ffi01).
 *
 * The backend: from the torch found (version.py's cuda/hip/xpu, as
 * torch.version.cuda etc.), else (when the CUDA driver sees a GPU)
 * libcudart's runtime version or else the driver's version, else cpu; cpu/os
 * from uname. GPUs: from the backend's row of the backend table
 * (lib/backend.c): CUDA through NVML, or through the driver when the host
 * already initialised it (CUDA_VISIBLE_DEVICES honoured when it lists
 * indices); detection never initialises the driver nor loads or calls a
 * CUDA runtime (lib/cuda_facts.c says how), except on a machine whose NVML
 * cannot answer (Jetson), where cuInit is the only way to see its GPUs. ROCm through the amdgpu driver's KFD
 * topology in sysfs (/sys/class/kfd/kfd/topology, gfx_target_version), no
 * ROCm library needed; XPU, Metal, CANN, Neuron and TPU have no detection
 * yet: name their devices in KERNELS_GPU_ARCHS.
 *
 * Differences from Python kernels 0.17.2 (backends.py, variants.py):
 *  - With torch, both take the CUDA version from torch (torch.version.cuda),
 *    GPU or not: a CUDA build of torch on a machine without a GPU resolves
 *    cuXY variants (whose ops also carry the CPU kernel), exactly like
 *    Python. Python never looks at the driver or at the GPUs' compute
 *    capabilities; libkernels also rejects a CUDA variant whose
 *    metadata.json archs match none of the GPUs the driver reports.
 *  - Without torch, Python takes libcudart's version whenever one loads,
 *    even with no driver or GPU; libkernels requires a GPU the driver sees,
 *    reads the version of the libcudart the loader would pick (its file
 *    name, the toolkit's version.json or the wheel's dist-info; one found
 *    only through an RPATH counts once the host loads it), and falls back
 *    to the driver's version when none tells.
 *  - Python only knows the torch it imports; libkernels finds one outside
 *    the process only as listed above (and reads, never imports, it).
 *  - Torch backends Python asks the imported torch about (TPU, Neuron, MPS,
 *    CANN through torch_npu) cannot be read from files: name them with
 *    KERNELS_BACKEND.
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
 * One-line human description ("torch 2.11 (cxx11 ABI) from python3 at
 * /usr/lib/python3.11/site-packages/torch/lib, backend cuda 13.0 (from
 * torch), GPUs 9.0, x86_64-linux, glibc 2.39") into `buf` (always
 * NUL-terminated when size > 0). Returns the length the whole text needs,
 * like snprintf.
 */
KERNELS_EXTERN(size_t) kernels_system_format(char *buf, size_t size, const kernels_system *sys);

#ifdef __cplusplus
}
#endif

#endif
