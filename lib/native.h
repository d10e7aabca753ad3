/* Internal: what the loader needs to know about a native module before it
 * maps it: the libraries it needs, where it looks for them, and which of
 * its undefined symbols belong to the Python C API. */
#ifndef KERNELS_LIB_NATIVE_H
#define KERNELS_LIB_NATIVE_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
	char *name;
	uint64_t info_offset; /* file offset of the symbol's st_info byte */
	unsigned char info;   /* st_info as built */
} kernels__elf_symbol;

typedef struct {
	char **needed;          /* DT_NEEDED, in order */
	size_t needed_count, needed_cap;
	char *runpath;          /* DT_RUNPATH, else DT_RPATH; NULL: none */
	int bind_now;           /* DF_BIND_NOW / DF_1_NOW: lazy binding is off */
	kernels__elf_symbol *python; /* undefined, non-weak Python C-API symbols */
	size_t python_count, python_cap;
	char **undefined;       /* the other undefined, non-weak symbols (kernel dependencies may define them) */
	size_t undefined_count, undefined_cap;
} kernels__elf;

/* Reads the dynamic section and symbol table of the ELF file open on `fd`.
 * `what` names the module in errors. Returns 0 (fill *out, free with
 * kernels__elf_free), KERNELS_ELOAD for a file that is not a 64-bit
 * little-endian shared object this reader understands, KERNELS_EIO or
 * KERNELS_ENOMEM. */
int kernels__elf_read(int fd, const char *what, kernels__elf *out);
void kernels__elf_free(kernels__elf *e);

/* Py*, _Py*: names of the Python C API (functions and data). */
int kernels__elf_is_python_symbol(const char *name);

#endif
