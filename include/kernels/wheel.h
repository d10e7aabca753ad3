/*
 * libkernels: turning one build variant into a Python wheel, so a kernel
 * can be installed with pip like any package (`kernels to-wheel`).
 *
 * Names (as the Python `kernels` package's to-wheel names
 * them; {name} is the repo name with every run of '-', '_' and '.' turned
 * into '_', {pv} the Python version without the dot, "39"):
 *
 *   torch{M}{m}[-cxx11|-cxx98]-{backend}-{cpu}-{os}
 *       {name}-{version}+torch{M}{m}cu{b}[cxx11|cxx98]-cp{pv}-abi3-{platform}.whl
 *       e.g. img2gray-0.1.0+torch27cu126cxx11-cp39-abi3-manylinux_2_28_x86_64.whl
 *       {b} is the backend part without a leading "cu", as the Python
 *       client's to-wheel writes it: cu126 -> cu126, cpu -> cucpu,
 *       rocm63 -> curocm63.  Requires-Dist: torch=={M}.{m}.*
 *   torch-stable-abi{M}{m}-{backend}-{cpu}-{os}
 *       {name}-{version}+torchstable{M}{m}{backend}-cp{pv}-abi3-{platform}.whl
 *       Requires-Dist: torch>={M}.{m}
 *   tvm-ffi{M}{m}-{backend}-{cpu}-{os}
 *       {name}-{version}+tvmffi{M}{m}{backend}-cp{pv}-abi3-{platform}.whl
 *       Requires-Dist: apache-tvm-ffi=={M}.{m}.*
 *   torch-universal, torch-{backend} (noarch)
 *       {name}-{version}-py{pv}-none-any.whl     Requires-Dist: torch
 *
 * {backend} is the variant's backend part as written ("cu126", "rocm63",
 * "cpu", "xpu20251", "metal"). {platform} is manylinux_{2_28}_{cpu} on
 * linux (as the Python client), and, where the Python client writes tags
 * pip does not accept, macosx_11_0_{arm64|x86_64} on darwin and
 * win_{amd64|arm64} on windows. The Python client converts only
 * torch-universal and ABI-tagged torch variants and takes the package from
 * `{name}/` only; the other forms and the current layout are additions.
 * Checked against kernels 0.10.4's build_variant_to_wheel: same names,
 * same package files and RECORD lines, same WHEEL (but the Generator) and
 * METADATA, except that METADATA's Version carries the local label here,
 * as the file and .dist-info names do (the Python client leaves it out).
 *
 * Contents: the variant's Python package as `{name}/` plus
 * `{dist}.dist-info/` with WHEEL, METADATA and RECORD ({dist} is the file
 * name's first two fields). The package is the variant folder itself when
 * it holds an __init__.py (current kernel-builder layout; the `{name}/`
 * compatibility shim, metadata.json.sigstore, __pycache__/ and *.pyc are
 * left out), else its `{name}/` folder (seed-era layout). RECORD lists
 * every file with `sha256=<urlsafe base64, no padding>` and its size.
 * The zip (deflate) has fixed timestamps and sorted entries: the same
 * variant gives the same bytes.
 *
 * Every function here is part of libkernels since 1.0 and may be called
 * from any thread unless its comment says otherwise (docs/threading.md).
 */
#ifndef KERNELS_WHEEL_H
#define KERNELS_WHEEL_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KERNELS_WHEEL_OPTIONS_VERSION 1

/** Tags of the wheels; a NULL pointer or NULL field means the default.
 *  Versioned: read only as far as `version`'s fields reach, every version
 *  from 1 to KERNELS_WHEEL_OPTIONS_VERSION accepted (docs/api-stability.md). */
#define KERNELS_WHEEL_OPTIONS_INIT { KERNELS_WHEEL_OPTIONS_VERSION, NULL, NULL }

typedef struct kernels_wheel_options {
	unsigned int version;          /**< KERNELS_WHEEL_OPTIONS_VERSION */
	const char *python_version;    /**< minimum Python, "3.9" (the abi3 / py tag and Requires-Python) */
	const char *manylinux_version; /**< "2.28": the glibc the variant was built against */
} kernels_wheel_options;

/**
 * The file name of the wheel of variant `variant_name` for the kernel repo
 * `repo_name` ("img2gray", or a repo id "org/img2gray": the part after the
 * last '/') at `version` ("0.1.0": a PEP 440 public version, digits first,
 * no '-', '+' or '/'). `*out` is the caller's: release it with kernels_free().
 * Returns 0, KERNELS_EINVAL (a bad name, version, Python or manylinux
 * version, or a variant name that is not a known variant form: the message
 * says which), or KERNELS_ENOMEM.
 */
KERNELS_EXTERN(int) kernels_wheel_filename(char **out, const char *repo_name, const char *version,
					   const char *variant_name, const kernels_wheel_options *wopts);

/**
 * Writes the wheel of the variant folder `variant_dir` (e.g. a cached
 * snapshots/{commit}/build/{variant_name}; files may be links, which are
 * followed when they lead to regular files) into the existing folder
 * `out_dir`, replacing a wheel of the same name atomically.
 * `variant_name` NULL means the last component of `variant_dir`.
 * `*wheel_path` (may be NULL) receives the path of the wheel,
 * released by the caller with kernels_free(). Returns 0, the errors of
 * kernels_wheel_filename(), KERNELS_ENOTFOUND (no such folder, or a
 * variant without a Python package: neither __init__.py nor `{name}/`),
 * KERNELS_EUNSAFE (a link to a folder), KERNELS_EIO (reading the variant
 * or writing the wheel failed; nothing is left in `out_dir`), KERNELS_ENOMEM.
 */
KERNELS_EXTERN(int) kernels_wheel_write(char **wheel_path, const char *variant_dir, const char *repo_name,
					const char *version, const char *variant_name, const char *out_dir,
					const kernels_wheel_options *wopts);

#ifdef __cplusplus
}
#endif

#endif
