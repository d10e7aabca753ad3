/* The functions of tvm-ffi variants for C hosts: TVM_FFI_DLL_EXPORT_TYPED_FUNC
 * exports each as the symbol __tvm_ffi_<name>, looked up through the loaded
 * module. libkernels never links libtvm_ffi: calling is the host's part.
 *
 * When a name is missing, the module file's dynamic symbol table is read to
 * say what it does export: a few bounds-checked preads of a 64-bit
 * little-endian ELF file, only on that error path (native.c reads what the
 * loader needs, which are not the defined symbols); for any other file the
 * listing is left out. */
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

static uint64_t get(const unsigned char *p, int bytes)
{
	uint64_t v = 0;
	while (bytes--)
		v = v << 8 | p[bytes];
	return v;
}

/* `size` bytes at `off` of the file, or NULL (out of the file, or no memory). */
static unsigned char *read_at(int fd, uint64_t file_size, uint64_t off, uint64_t size)
{
	unsigned char *p;

	if (off > file_size || size > file_size - off || size > (uint64_t)64 << 20)
		return NULL;
	if (!(p = malloc(size ? size : 1)))
		return NULL;
	if (pread(fd, p, size, (off_t)off) != (ssize_t)size) {
		free(p);
		return NULL;
	}
	return p;
}

/* Appends ", name" for every function the module exports as __tvm_ffi_<name>
 * (defined, global or weak, default or protected visibility; tvm-ffi's own
 * __tvm_ffi__* entries left out). Returns how many, -1 when the file cannot
 * be read as a 64-bit little-endian ELF, KERNELS_ENOMEM. */
static int list_exports(const char *path, kernels__buf *list)
{
	unsigned char eh[64], *sh = NULL, *syms = NULL, *strs = NULL;
	uint64_t shoff, shnum, i, symoff = 0, symsize = 0, stroff = 0, strsize = 0;
	struct stat st;
	int fd, count = -1;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	if (fstat(fd, &st) < 0 || pread(fd, eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh, "\177ELF", 4) || eh[4] != 2 /* 64-bit */ || eh[5] != 1 /* little-endian */ ||
	    get(eh + 58, 2) != 64 /* e_shentsize */)
		goto done;
	shoff = get(eh + 40, 8);
	shnum = get(eh + 60, 2);
	if (!(sh = read_at(fd, (uint64_t)st.st_size, shoff, shnum * 64)))
		goto done;
	for (i = 0; i < shnum && !symsize; i++) {
		const unsigned char *s = sh + i * 64;
		uint64_t link = get(s + 40, 4);
		if (get(s + 4, 4) != 11 /* SHT_DYNSYM */ || get(s + 56, 8) != 24 || link >= shnum)
			continue;
		symoff = get(s + 24, 8);
		symsize = get(s + 32, 8);
		stroff = get(sh + link * 64 + 24, 8);
		strsize = get(sh + link * 64 + 32, 8);
	}
	if (!symsize || !strsize || !(syms = read_at(fd, (uint64_t)st.st_size, symoff, symsize)) ||
	    !(strs = read_at(fd, (uint64_t)st.st_size, stroff, strsize)))
		goto done;
	strs[strsize - 1] = '\0';
	for (count = 0, i = 0; i + 24 <= symsize; i += 24) {
		const unsigned char *y = syms + i;
		uint64_t name = get(y, 4);
		int bind = y[4] >> 4, type = y[4] & 0xf, vis = y[5] & 3;
		const char *n = name < strsize ? (const char *)strs + name : "";
		if (get(y + 6, 2) == 0 /* undefined */ || type != 2 /* STT_FUNC */ || (bind != 1 && bind != 2) ||
		    (vis != 0 && vis != 3) || strncmp(n, PREFIX, strlen(PREFIX)) || !n[strlen(PREFIX)] ||
		    n[strlen(PREFIX)] == '_')
			continue;
		if (kernels__buf_printf(list, "%s%s", count ? ", " : "", n + strlen(PREFIX)) < 0) {
			count = KERNELS_ENOMEM;
			break;
		}
		count++;
	}
done:
	free(sh);
	free(syms);
	free(strs);
	close(fd);
	return count;
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
		return kernels__error(KERNELS_EINVAL, "kernels_tvm_ffi_function: out, kernel and name must not be NULL");
	if (!export_name(name))
		return kernels__error(KERNELS_EINVAL,
				      "kernels_tvm_ffi_function: '%s' is not a tvm-ffi export name; pass the name given "
				      "to TVM_FFI_DLL_EXPORT_TYPED_FUNC (letters, digits, '_'), without the "
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
