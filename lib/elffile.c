/* The one ELF reader (elffile.h). */
#include "elffile.h"
#include "error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Symbol tables of real modules are a few MB; anything far larger is not
 * a table this reader should trust its allocation to. */
#define MAX_TABLE ((uint64_t)512 << 20)

static int bad(const kernels__elf_file *f, const char *why)
{
	return kernels__error(KERNELS_ELOAD, "%s is not a shared object libkernels can inspect: %s", f->what, why);
}

static int read_at(const kernels__elf_file *f, void *buf, uint64_t len, uint64_t off)
{
	uint64_t done = 0;

	if (off > f->size || len > f->size - off)
		return bad(f, "a table points past the end of the file");
	while (done < len) {
		ssize_t n = pread(f->fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return kernels__error(KERNELS_EIO, "reading %s: %s", f->what,
					      n < 0 ? strerror(errno) : "short read");
		done += (uint64_t)n;
	}
	return 0;
}

/* `size` bytes at `off`, malloc'ed with a NUL after them: string tables
 * end in one even if the file lies. */
static int read_table(const kernels__elf_file *f, uint64_t off, uint64_t size, void **out)
{
	int rc;

	*out = NULL;
	if (size > MAX_TABLE)
		return bad(f, "a section is implausibly large");
	if (!(*out = malloc(size + 1)))
		return kernels__error_oom();
	if ((rc = read_at(f, *out, size, off)) < 0) {
		free(*out);
		*out = NULL;
		return rc;
	}
	((char *)*out)[size] = 0;
	return 0;
}

int kernels__elf_open(kernels__elf_file *f, int fd, const char *what)
{
	struct stat st;
	int rc;

	memset(f, 0, sizeof(*f));
	f->fd = fd;
	f->what = what;
	if (fstat(fd, &st) < 0)
		return kernels__error(KERNELS_EIO, "reading %s: %s", what, strerror(errno));
	f->size = (uint64_t)st.st_size;
	if ((rc = read_at(f, &f->eh, sizeof(f->eh), 0)) < 0)
		return rc;
	if (memcmp(f->eh.e_ident, ELFMAG, SELFMAG))
		return bad(f, "no ELF header");
	if (f->eh.e_ident[EI_CLASS] != ELFCLASS64 || f->eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return bad(f, "not a 64-bit little-endian ELF file");
	if (f->eh.e_shnum == 0 || f->eh.e_shentsize != sizeof(Elf64_Shdr))
		return bad(f, "it has no section headers");
	return read_table(f, f->eh.e_shoff, (uint64_t)f->eh.e_shnum * sizeof(Elf64_Shdr), (void **)&f->sh);
}

void kernels__elf_close(kernels__elf_file *f)
{
	free(f->sh);
	f->sh = NULL;
}

/* Section `sh`, of entries of `entsize` bytes, and the string table it
 * links to; both freed by the caller. */
static int read_with_strings(const kernels__elf_file *f, const Elf64_Shdr *sh, size_t entsize, const char *what,
			     void **tab, char **str, uint64_t *strsize)
{
	const Elf64_Shdr *strsh;
	int rc;

	*tab = NULL;
	*str = NULL;
	if (sh->sh_link >= f->eh.e_shnum || f->sh[sh->sh_link].sh_type != SHT_STRTAB)
		return bad(f, "a table links to no string table");
	if (sh->sh_entsize != entsize)
		return bad(f, what);
	strsh = &f->sh[sh->sh_link];
	if ((rc = read_table(f, sh->sh_offset, sh->sh_size, tab)) < 0 ||
	    (rc = read_table(f, strsh->sh_offset, strsh->sh_size, (void **)str)) < 0)
		return rc;
	*strsize = strsh->sh_size;
	return 0;
}

/* The callback of a walk: one of the two, by the section's type. */
typedef struct {
	kernels__elf_dyn_cb dyn;
	kernels__elf_sym_cb sym;
	void *payload;
} walk;

/* Hands each entry of one section, read with its strings, to the walk's
 * callback: dynamic entries up to DT_NULL, or symbols after the null one. */
static int visit_entries(const Elf64_Shdr *sh, const void *tab, const char *str, uint64_t strsize, const walk *w)
{
	const Elf64_Dyn *dyn = tab;
	const Elf64_Sym *sym = tab;
	uint64_t i;
	int rc = 0;

	if (sh->sh_type == SHT_DYNAMIC)
		for (i = 0; i < sh->sh_size / sizeof(*dyn) && dyn[i].d_tag != DT_NULL && rc == 0; i++)
			rc = w->dyn(&dyn[i], dyn[i].d_un.d_val < strsize ? str + dyn[i].d_un.d_val : NULL, w->payload);
	else
		for (i = 1; i < sh->sh_size / sizeof(*sym) && rc == 0; i++)
			rc = w->sym(&sym[i], sym[i].st_name < strsize ? str + sym[i].st_name : "",
				    sh->sh_offset + i * sizeof(*sym), w->payload);
	return rc;
}

/* Walks every section of `type` (entries of `entsize` bytes, else `what`
 * is the complaint) until a callback returns nonzero; *seen: whether the
 * file has one. */
static int walk_sections(const kernels__elf_file *f, uint32_t type, size_t entsize, const char *what, const walk *w,
			 int *seen)
{
	size_t i;
	int rc = 0;

	*seen = 0;
	for (i = 0; i < f->eh.e_shnum && rc == 0; i++) {
		void *tab;
		char *str;
		uint64_t strsize = 0;

		if (f->sh[i].sh_type != type)
			continue;
		*seen = 1;
		if ((rc = read_with_strings(f, &f->sh[i], entsize, what, &tab, &str, &strsize)) == 0)
			rc = visit_entries(&f->sh[i], tab, str, strsize, w);
		free(tab);
		free(str);
	}
	return rc;
}

int kernels__elf_dynamic(const kernels__elf_file *f, kernels__elf_dyn_cb cb, void *payload)
{
	const walk w = { cb, NULL, payload };
	int seen, rc;

	rc = walk_sections(f, SHT_DYNAMIC, sizeof(Elf64_Dyn), "the dynamic section has an unexpected entry size", &w,
			   &seen);
	return rc == 0 && !seen ? bad(f, "it has no dynamic section") : rc;
}

int kernels__elf_symbols(const kernels__elf_file *f, kernels__elf_sym_cb cb, void *payload)
{
	const walk w = { NULL, cb, payload };
	int seen;

	return walk_sections(f, SHT_DYNSYM, sizeof(Elf64_Sym), "the dynamic symbol table has an unexpected entry size",
			     &w, &seen);
}
