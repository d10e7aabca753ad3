/* A reader for the few parts of an ELF shared object the loader decides on:
 * DT_NEEDED and the run path (to find torch's libraries where the host was
 * linked without them), the bind-now flags, and the undefined Python C-API
 * symbols that kernel-builder's PyInit_<name> references, read by
 * elffile.c through section headers only: a module without them is
 * reported, not guessed at. */
#include "native.h"
#include "elffile.h"
#include "error.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

int kernels__elf_is_python_symbol(const char *name)
{
	if (name[0] == '_')
		name++;
	return name[0] == 'P' && name[1] == 'y' && (name[2] == '_' || (name[2] >= 'A' && name[2] <= 'Z'));
}

static int add_name(char ***list, size_t *count, size_t *cap, const char *name)
{
	if (KERNELS__ARRAY_GROW(*list, *cap, *count) < 0)
		return KERNELS_ENOMEM;
	if (!((*list)[*count] = kernels__strdup(name)))
		return KERNELS_ENOMEM;
	(*count)++;
	return 0;
}

static int add_needed(kernels__elf *e, const char *name)
{
	return add_name(&e->needed, &e->needed_count, &e->needed_cap, name);
}

typedef struct {
	kernels__elf *e;
	const char *what;
} reading;

static int on_dynamic(const Elf64_Dyn *d, const char *v, void *payload)
{
	kernels__elf *e = ((reading *)payload)->e;

	switch (d->d_tag) {
	case DT_NEEDED:
		if (!v)
			return kernels__error(KERNELS_ELOAD, "%s is not a shared object libkernels can inspect: "
					      "a DT_NEEDED name is outside the string table",
					      ((reading *)payload)->what);
		return add_needed(e, v);
	case DT_RUNPATH:
	case DT_RPATH:
		/* DT_RUNPATH wins over DT_RPATH, as in the dynamic linker. */
		if (v && (d->d_tag == DT_RUNPATH || !e->runpath)) {
			free(e->runpath);
			if (!(e->runpath = kernels__strdup(v)))
				return KERNELS_ENOMEM;
		}
		return 0;
	case DT_FLAGS:
		e->bind_now |= (d->d_un.d_val & DF_BIND_NOW) != 0;
		return 0;
	case DT_FLAGS_1:
		e->bind_now |= (d->d_un.d_val & DF_1_NOW) != 0;
		return 0;
	case DT_BIND_NOW:
		e->bind_now = 1;
		return 0;
	}
	return 0;
}

static int add_python(kernels__elf *e, const char *name, uint64_t offset, unsigned char info)
{
	kernels__elf_symbol *v;

	if (KERNELS__ARRAY_GROW(e->python, e->python_cap, e->python_count) < 0)
		return KERNELS_ENOMEM;
	v = e->python;
	v[e->python_count].info_offset = offset;
	v[e->python_count].info = info;
	if (!(v[e->python_count].name = kernels__strdup(name)))
		return KERNELS_ENOMEM;
	e->python_count++;
	return 0;
}

/* The undefined, non-weak symbols: Python's apart. */
static int on_symbol(const Elf64_Sym *sym, const char *name, uint64_t offset, void *payload)
{
	kernels__elf *e = ((reading *)payload)->e;

	if (sym->st_shndx != SHN_UNDEF || ELF64_ST_BIND(sym->st_info) != STB_GLOBAL || !*name)
		return 0;
	if (!kernels__elf_is_python_symbol(name))
		return add_name(&e->undefined, &e->undefined_count, &e->undefined_cap, name);
	return add_python(e, name, offset + offsetof(Elf64_Sym, st_info), sym->st_info);
}

int kernels__elf_read(int fd, const char *what, kernels__elf *out)
{
	kernels__elf_file f;
	reading r = { out, what };
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = kernels__elf_open(&f, fd, what)) == 0) {
		if (f.eh.e_type != ET_DYN)
			rc = kernels__error(KERNELS_ELOAD, "%s is not a shared object libkernels can inspect: "
					    "not a shared object (ET_DYN)", what);
		else if ((rc = kernels__elf_dynamic(&f, on_dynamic, &r)) == 0)
			rc = kernels__elf_symbols(&f, on_symbol, &r);
	}
	kernels__elf_close(&f);
	if (rc < 0)
		kernels__elf_free(out);
	return rc;
}

void kernels__elf_free(kernels__elf *e)
{
	size_t i;

	if (!e)
		return;
	for (i = 0; i < e->needed_count; i++)
		free(e->needed[i]);
	for (i = 0; i < e->python_count; i++)
		free(e->python[i].name);
	for (i = 0; i < e->undefined_count; i++)
		free(e->undefined[i]);
	free(e->undefined);
	free(e->needed);
	free(e->python);
	free(e->runpath);
	memset(e, 0, sizeof(*e));
}
