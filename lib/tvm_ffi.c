/* The functions of tvm-ffi variants for C hosts: TVM_FFI_DLL_EXPORT_TYPED_FUNC
 * exports each as the symbol __tvm_ffi_<name>, looked up through the loaded
 * module. libkernels never links libtvm_ffi: calling is the host's part.
 *
 * When a name is missing, the module file's dynamic symbol table is read to
 * say what it does export (elffile.c), only on that error path; for a file
 * that is not a 64-bit little-endian ELF the listing is left out. */
#include "elffile.h"
#include "error.h"
#include "util.h"
#include "kernels/tvm_ffi.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PREFIX "__tvm_ffi_"

typedef struct {
	kernels__buf *list;
	int count;
} exports;

/* A defined function, global or weak, of default or protected visibility,
 * named __tvm_ffi_<name> (tvm-ffi's own __tvm_ffi__* entries left out). */
static int on_symbol(const Elf64_Sym *sym, const char *n, uint64_t offset, void *payload)
{
	exports *x = payload;
	int bind = ELF64_ST_BIND(sym->st_info), vis = ELF64_ST_VISIBILITY(sym->st_other);

	(void)offset;
	if (sym->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(sym->st_info) != STT_FUNC ||
	    (bind != STB_GLOBAL && bind != STB_WEAK) || (vis != STV_DEFAULT && vis != STV_PROTECTED) ||
	    strncmp(n, PREFIX, strlen(PREFIX)) || !n[strlen(PREFIX)] || n[strlen(PREFIX)] == '_')
		return 0;
	if (kernels__buf_printf(x->list, "%s%s", x->count ? ", " : "", n + strlen(PREFIX)) < 0)
		return KERNELS_ENOMEM;
	x->count++;
	return 0;
}

/* Appends ", name" for every function the module exports as
 * __tvm_ffi_<name>. Returns how many, -1 when the file cannot be read as a
 * 64-bit little-endian ELF, KERNELS_ENOMEM. */
static int list_exports(const char *path, kernels__buf *list)
{
	kernels__elf_file f;
	exports x = { list, 0 };
	int fd, rc;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	if ((rc = kernels__elf_open(&f, fd, path)) == 0)
		rc = kernels__elf_symbols(&f, on_symbol, &x);
	kernels__elf_close(&f);
	close(fd);
	if (rc == KERNELS_ENOMEM)
		return rc;
	return rc < 0 ? -1 : x.count;
}

static int export_name(const char *s)
{
	size_t i;
	for (i = 0; s[i]; i++)
		if (!(s[i] == '_' || (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z')))
			return 0;
	return i > 0 && i <= 200;
}

int kernels_tvm_ffi_function(void **out, const kernels_kernel *k, const char *name)
{
	const char *variant, *library, *repo;
	char symbol[sizeof(PREFIX) + 200], *what;
	kernels__buf list = { 0 };
	int n, rc;

	if (out)
		*out = NULL;
	if (!out || !k || !name)
		return kernels__error(KERNELS_EINVAL,
				      "kernels_tvm_ffi_function: out, kernel and name must not be NULL");
	if (!export_name(name))
		return kernels__error(KERNELS_EINVAL,
				      "kernels_tvm_ffi_function: '%s' is not a tvm-ffi export name; pass the name "
				      "given to TVM_FFI_DLL_EXPORT_TYPED_FUNC (letters, digits, '_'), without the "
				      "'" PREFIX "' prefix", name);
	variant = kernels_kernel_variant(k) ? kernels_kernel_variant(k) : "?";
	library = kernels_kernel_library(k);
	repo = kernels_kernel_repo(k);
	what = repo ? kernels__sprintf("variant '%s' of %s", variant, repo)
		    : kernels__sprintf("variant '%s' (%s)", variant, kernels_kernel_path(k));
	if (!what)
		return KERNELS_ENOMEM;
	if (!library) {
		rc = kernels__error(KERNELS_EINVAL,
				    "%s is not a tvm-ffi variant: it has no native module (noarch), so no tvm-ffi "
				    "function '%s'; get a tvm-ffi{Mm}-* variant (link libtvm_ffi into this process, "
				    "or set KERNELS_TVM_FFI_VERSION)", what, name);
		goto done;
	}
	snprintf(symbol, sizeof(symbol), PREFIX "%s", name);
	if ((*out = kernels_symbol(k, symbol))) {
		rc = 0;
		goto done;
	}
	n = list_exports(library, &list);
	if (n == KERNELS_ENOMEM)
		rc = KERNELS_ENOMEM;
	else if (n > 0)
		rc = kernels__error(KERNELS_ENOTFOUND,
				    "%s has no tvm-ffi function '%s' (symbol %s in %s); its functions are: %s",
				    what, name, symbol, library, list.ptr);
	else if (!strncmp(variant, "tvm-ffi", 7))
		rc = kernels__error(KERNELS_ENOTFOUND, "%s has no tvm-ffi function '%s' (symbol %s in %s)%s", what,
				    name, symbol, library, n == 0 ? "; it exports none" : "");
	else
		rc = kernels__error(KERNELS_EINVAL,
				    "%s is not a tvm-ffi variant: %s %s%s, so no tvm-ffi function '%s'; get a "
				    "tvm-ffi{Mm}-* variant (link libtvm_ffi into this process, or set "
				    "KERNELS_TVM_FFI_VERSION), or call its C symbols with kernels_symbol()",
				    what, library, n == 0 ? "exports no " PREFIX "* function" : "has no symbol ",
				    n == 0 ? "" : symbol, name);
done:
	kernels__buf_free(&list);
	free(what);
	return rc;
}
