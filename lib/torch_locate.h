/* Internal: where torch is, for system detection (system.c). In this
 * process (dl_iterate_phdr: a loaded libc10 or libtorch), or, when none is
 * loaded and the caller allows it, in a folder the caller names
 * (kernels_options.torch_dir, KERNELS_TORCH_DIR), the active virtualenv,
 * or the site folders of the python3 first on PATH (pyvenv.cfg, pyenv's
 * shims, the user site) in the order Python searches them. The version,
 * backend and C++ ABI come from the package's files (version.py,
 * build-version) and libc10's symbols, never by loading or running it. */
#ifndef KERNELS_LIB_TORCH_LOCATE_H
#define KERNELS_LIB_TORCH_LOCATE_H

#include "config.h"

/* The libraries of interest already loaded in this process: paths as the
 * loader names them, malloc'ed, NULL when not loaded. */
typedef struct {
	char *c10;     /* path of libc10 */
	char *torch;   /* path of libtorch / libtorch_cpu */
	char *tvm_ffi; /* path of libtvm_ffi */
} kernels__loaded_libs;

typedef struct {
	int version;           /* major*100+minor; 0 none */
	int cxx11_abi;
	char *version_string;
	char *path;            /* the lib/ folder */
	const char *source;    /* static: "process", "option", ... */
	char *backend;         /* NULL: unknown */
	int backend_version;
} kernels__torch_info; /* free with kernels__torch_info_free */

/* Fills `l` from the process's loaded objects (absent ones NULL). */
void kernels__loaded_libs_find(kernels__loaded_libs *l);
void kernels__loaded_libs_free(kernels__loaded_libs *l);

/* The package folder of a library: the folder above the one holding `lib`
 * (torch/lib/libc10.so -> torch), resolved; malloc'ed, NULL when `lib`
 * cannot be resolved. */
char *kernels__package_root(const char *lib);

/* *out: the python3 whose torch the search reads when it looks outside
 * the process (the first executable python3 on the call's PATH, a pyenv
 * shim resolved to the interpreter pyenv chooses), malloc'ed; NULL when
 * PATH has none. The one walk of PATH, so that whatever names "the
 * python3 on PATH" (the variant stage's hint) names the one asked.
 * 0 or KERNELS_ENOMEM. */
int kernels__path_python3(const kernels__config *cfg, char **out);

/* Fills `t` with the torch of the process (from `l`), else, when
 * `outside`, the caller's torch folder or an installed one (as the header
 * says). t->version 0: none found. 0, or an error: KERNELS_EINVAL when a
 * named folder holds no torch, KERNELS_ENOMEM. Free `t` with
 * kernels__torch_info_free in both cases. */
int kernels__torch_locate(const kernels__config *cfg, const kernels__loaded_libs *l, int outside,
			  kernels__torch_info *t);
void kernels__torch_info_free(kernels__torch_info *t);

#endif
