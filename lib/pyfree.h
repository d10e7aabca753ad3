/* Internal: Python-free copies of native modules, for hosts without
 * libpython (lib/pyfree.c). */
#ifndef KERNELS_LIB_PYFREE_H
#define KERNELS_LIB_PYFREE_H

#include <sys/stat.h>

#include "config.h"
#include "fs.h"
#include "native.h"

/* A descriptor naming a copy of the verified module open on `fd` (`st`
 * its identity) whose Python C-API references are weak, for dlopen
 * through /proc/self/fd. A module in the cache (`root`, the repo's cache
 * folder, may be NULL; `source`, the verified digest of the module as
 * "sha256:<base64>"; NULL: it was verified against its blob's name) gets a copy on disk
 * under {root}/.libkernels/patched/ (root: the repo folder as
 * kernels__realpath gives it), written once and reused by later
 * processes while its receipt matches; anything else, or a cache this
 * process cannot write, an in-memory sealed copy. *out is the caller's for
 * good once mapped: a new copy's descriptor reads its complete bytes
 * before they are flushed. Its flush, its name (it has none until
 * flushed) and its receipt go on a helper thread pushed on *later (may be
 * NULL: in line), which the caller joins; a failure there removes the
 * temporary name, is reported by the join (in line: logged at debug), and
 * leaves the mapping as it is. Errors: KERNELS_EIO
 * (the in-memory copy failed), KERNELS_ENOMEM. */
int kernels__pyfree_open(const kernels__config *cfg, const char *root, const char *source, int fd,
			 const struct stat *st, const kernels__elf *e, const char *what, int *out,
			 kernels__write_later **later);

#endif
