/* A reader for the few parts of an ELF shared object the loader decides on:
 * DT_NEEDED and the run path (to find torch's libraries where the host was
 * linked without them), the bind-now flags, and the undefined Python C-API
 * symbols that kernel-builder's PyInit_<name> references. It reads through
 * section headers only; a module without them is reported, not guessed at. */
#include "native.h"
#include "error.h"
#include "util.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Symbol tables of real modules are a few MB; anything far larger is not
 * a table this reader should trust its allocation to. */
#define MAX_TABLE ((uint64_t)512 << 20)

typedef struct {
	int fd;
	uint64_t size;
	const char *what;
} source;

static int bad(const source *s, const char *why)
{
	return kernels__error(KERNELS_ELOAD, "%s is not a shared object libkernels can inspect: %s", s->what, why);
}

static int read_at(const source *s, void *buf, uint64_t len, uint64_t off)
{
	uint64_t done = 0;

	if (off > s->size || len > s->size - off)
		return bad(s, "a table points past the end of the file");
	while (done < len) {
		ssize_t n = pread(s->fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return kernels__error(KERNELS_EIO, "reading %s: %s", s->what, n < 0 ? strerror(errno) : "short read");
		done += (uint64_t)n;
	}
	return 0;
}

static int read_table(const source *s, const Elf64_Shdr *sh, void **out)
{
	int rc;

	*out = NULL;
	if (sh->sh_size > MAX_TABLE)
		return bad(s, "a section is implausibly large");
	if (!(*out = malloc(sh->sh_size + 1)))
		return kernels__error_oom();
	if ((rc = read_at(s, *out, sh->sh_size, sh->sh_offset)) < 0) {
		free(*out);
		*out = NULL;
		return rc;
	}
	((char *)*out)[sh->sh_size] = 0; /* string tables end in NUL even if the file lies */
	return 0;
}

static const char *str_at(const char *tab, uint64_t size, uint64_t off)
{
	return off < size ? tab + off : NULL;
}

int kernels__elf_is_python_symbol(const char *name)
{
	if (name[0] == '_')
		name++;
	return name[0] == 'P' && name[1] == 'y' && (name[2] == '_' || (name[2] >= 'A' && name[2] <= 'Z'));
}

static int add_name(char ***list, size_t *count, const char *name)
{
	char **v = realloc(*list, (*count + 1) * sizeof(*v));
	if (!v)
		return kernels__error_oom();
	*list = v;
	if (!(v[*count] = kernels__strdup(name)))
		return KERNELS_ENOMEM;
	(*count)++;
	return 0;
}

static int add_needed(kernels__elf *e, const char *name)
{
	return add_name(&e->needed, &e->needed_count, name);
}

/* A table of `entsize` entries and the string table its names point into;
 * the count of entries in *n. Both freed by the caller. */
static int read_with_strings(const source *s, const Elf64_Shdr *sh, const Elf64_Shdr *strsh, size_t entsize,
			     const char *what, void **tab, char **str, size_t *n)
{
	int rc;

	*tab = NULL;
	*str = NULL;
	if (sh->sh_entsize != entsize)
		return bad(s, what);
	if ((rc = read_table(s, sh, tab)) < 0 || (rc = read_table(s, strsh, (void **)str)) < 0)
		return rc;
	*n = sh->sh_size / entsize;
	return 0;
}

static int read_dynamic(const source *s, const Elf64_Shdr *sh, const Elf64_Shdr *strsh, kernels__elf *e)
{
	Elf64_Dyn *dyn;
	char *str;
	size_t i, n = 0;
	int rc;

	if ((rc = read_with_strings(s, sh, strsh, sizeof(*dyn), "the dynamic section has an unexpected entry size",
				    (void **)&dyn, &str, &n)) < 0)
		goto done;
	for (i = 0; i < n && dyn[i].d_tag != DT_NULL && rc == 0; i++) {
		const char *v = str_at(str, strsh->sh_size, dyn[i].d_un.d_val);
		switch (dyn[i].d_tag) {
		case DT_NEEDED:
			rc = v ? add_needed(e, v) : bad(s, "a DT_NEEDED name is outside the string table");
			break;
		case DT_RUNPATH:
		case DT_RPATH:
			/* DT_RUNPATH wins over DT_RPATH, as in the dynamic linker. */
			if (v && (dyn[i].d_tag == DT_RUNPATH || !e->runpath)) {
				free(e->runpath);
				if (!(e->runpath = kernels__strdup(v)))
					rc = KERNELS_ENOMEM;
			}
			break;
		case DT_FLAGS:
			e->bind_now |= (dyn[i].d_un.d_val & DF_BIND_NOW) != 0;
			break;
		case DT_FLAGS_1:
			e->bind_now |= (dyn[i].d_un.d_val & DF_1_NOW) != 0;
			break;
		case DT_BIND_NOW:
			e->bind_now = 1;
			break;
		}
	}
done:
	free(dyn);
	free(str);
	return rc;
}

static int add_python(kernels__elf *e, const char *name, uint64_t offset, unsigned char info)
{
	kernels__elf_symbol *v = realloc(e->python, (e->python_count + 1) * sizeof(*v));
	if (!v)
		return kernels__error_oom();
	e->python = v;
	v[e->python_count].info_offset = offset;
	v[e->python_count].info = info;
	if (!(v[e->python_count].name = kernels__strdup(name)))
		return KERNELS_ENOMEM;
	e->python_count++;
	return 0;
}

static int read_symbols(const source *s, const Elf64_Shdr *sh, const Elf64_Shdr *strsh, kernels__elf *e)
{
	Elf64_Sym *sym;
	char *str;
	size_t i, n = 0;
	int rc;

	if ((rc = read_with_strings(s, sh, strsh, sizeof(*sym), "the dynamic symbol table has an unexpected entry size",
				    (void **)&sym, &str, &n)) < 0)
		goto done;
	for (i = 1; i < n && rc == 0; i++) {
		const char *name = str_at(str, strsh->sh_size, sym[i].st_name);
		if (sym[i].st_shndx != SHN_UNDEF || ELF64_ST_BIND(sym[i].st_info) != STB_GLOBAL || !name || !*name)
			continue;
		if (!kernels__elf_is_python_symbol(name)) {
			rc = add_name(&e->undefined, &e->undefined_count, name);
			continue;
		}
		rc = add_python(e, name, sh->sh_offset + i * sizeof(Elf64_Sym) + offsetof(Elf64_Sym, st_info),
				sym[i].st_info);
	}
done:
	free(sym);
	free(str);
	return rc;
}

static int read_sections(const source *s, const Elf64_Ehdr *eh, kernels__elf *e)
{
	Elf64_Shdr *sh = NULL;
	Elf64_Shdr shdr_table = { 0 };
	size_t i;
	int rc, seen_dynamic = 0;

	if (eh->e_shnum == 0 || eh->e_shentsize != sizeof(Elf64_Shdr))
		return bad(s, "it has no section headers");
	shdr_table.sh_offset = eh->e_shoff;
	shdr_table.sh_size = (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr);
	if ((rc = read_table(s, &shdr_table, (void **)&sh)) < 0)
		return rc;
	for (i = 0; i < eh->e_shnum && rc == 0; i++) {
		if (sh[i].sh_type != SHT_DYNAMIC && sh[i].sh_type != SHT_DYNSYM)
			continue;
		if (sh[i].sh_link >= eh->e_shnum || sh[sh[i].sh_link].sh_type != SHT_STRTAB) {
			rc = bad(s, "a table links to no string table");
			break;
		}
		if (sh[i].sh_type == SHT_DYNAMIC) {
			seen_dynamic = 1;
			rc = read_dynamic(s, &sh[i], &sh[sh[i].sh_link], e);
		} else {
			rc = read_symbols(s, &sh[i], &sh[sh[i].sh_link], e);
		}
	}
	free(sh);
	if (rc == 0 && !seen_dynamic)
		rc = bad(s, "it has no dynamic section");
	return rc;
}

int kernels__elf_read(int fd, const char *what, kernels__elf *out)
{
	Elf64_Ehdr eh;
	struct stat st;
	source s = { fd, 0, what };
	int rc;

	memset(out, 0, sizeof(*out));
	if (fstat(fd, &st) < 0)
		return kernels__error(KERNELS_EIO, "reading %s: %s", what, strerror(errno));
	s.size = (uint64_t)st.st_size;
	if ((rc = read_at(&s, &eh, sizeof(eh), 0)) < 0)
		return rc;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG))
		return bad(&s, "no ELF header");
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return bad(&s, "not a 64-bit little-endian ELF file");
	if (eh.e_type != ET_DYN)
		return bad(&s, "not a shared object (ET_DYN)");
	if ((rc = read_sections(&s, &eh, out)) < 0)
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
