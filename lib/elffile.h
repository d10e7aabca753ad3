/* Internal: the one ELF reader. Bounds-checked preads of the few tables of
 * a 64-bit little-endian ELF file that libkernels decides on: the dynamic
 * section (native.c: what a module needs and how it binds) and the dynamic
 * symbol table (native.c: its undefined symbols; system.c: the C++ ABI a
 * torch's libc10 exports; tvm_ffi.c: a module's tvm-ffi functions). It
 * reads through section headers only and never maps or loads the file.
 * (Named so that <elf.h> still means the system's.) */
#ifndef KERNELS_LIB_ELFFILE_H
#define KERNELS_LIB_ELFFILE_H

#include <elf.h>
#include <stdint.h>

typedef struct {
	int fd;            /* borrowed: never closed here */
	uint64_t size;
	const char *what;  /* names the file in errors */
	Elf64_Ehdr eh;
	Elf64_Shdr *sh;    /* eh.e_shnum section headers */
} kernels__elf_file;

/* Reads the header and section headers of the file open on `fd`. 0, or
 * KERNELS_ELOAD (not a 64-bit little-endian ELF file with section
 * headers), KERNELS_EIO or KERNELS_ENOMEM, with the error set. Free with
 * kernels__elf_close. */
int kernels__elf_open(kernels__elf_file *f, int fd, const char *what);
void kernels__elf_close(kernels__elf_file *f);

/* Called for each entry of the dynamic section up to DT_NULL; `str` is the
 * string its d_val names in the linked string table, NULL when out of it.
 * Return 0 to go on, anything else to stop with that value. */
typedef int (*kernels__elf_dyn_cb)(const Elf64_Dyn *d, const char *str, void *payload);

/* Walks the dynamic section(s): 0, the callback's stop value, or
 * KERNELS_ELOAD when there is none or it is malformed. */
int kernels__elf_dynamic(const kernels__elf_file *f, kernels__elf_dyn_cb cb, void *payload);

/* Called for each entry of the dynamic symbol table but the null one;
 * `name` is "" when outside the string table, `offset` is the entry's
 * offset in the file. Return 0 to go on, anything else to stop with it. */
typedef int (*kernels__elf_sym_cb)(const Elf64_Sym *sym, const char *name, uint64_t offset, void *payload);

/* Walks the dynamic symbol table(s): 0 (none is 0 too), the callback's stop
 * value, or KERNELS_ELOAD/EIO/ENOMEM. */
int kernels__elf_symbols(const kernels__elf_file *f, kernels__elf_sym_cb cb, void *payload);

#endif
