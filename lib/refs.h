/* Internal: the cache's refs/ files, as Python's huggingface_hub lays them
 * out and shares them: {repo_dir}/refs/{name} holds the 40-hex commit id that
 * the branch or tag `name` pointed at when it was last resolved online. A
 * name with '/' is nested folders. Every access goes through validated
 * names and never follows a symlink below refs/, so nothing read or written
 * here can escape the refs folder; writes are atomic (temp file + rename),
 * so a concurrent reader sees the old id or the new one, never half. */
#ifndef KERNELS_LIB_REFS_H
#define KERNELS_LIB_REFS_H

#include <stddef.h>

#include "repo.h"

/* Longest name stored under refs/ (bytes). */
#define KERNELS__REF_NAME_MAX 255

typedef struct {
	char *name;         /* "main", "v1.1.2", "refs/pr/1" (malloc'ed) */
	char commit[41];    /* lower-case 40-hex */
} kernels__ref;

/* 0 when `name` can live under refs/: 1..255 bytes, printable ASCII
 * without space, '\\', '~', '^', ':', '?', '*', '[', no "..", no "@{",
 * '/'-separated parts that are non-empty, do not start with '.' and do not
 * end with ".lock" (git's own rules, so any Hub branch or tag name passes).
 * Otherwise KERNELS_EINVAL with a message saying what is wrong. */
int kernels__ref_name_check(const char *name);

/* Reads refs/{name} of `repo_dir` into `commit` (lower-case, NUL-ended).
 * Returns 0; KERNELS_ENOTFOUND (no such file: not an error message worth
 * showing, but one is set); KERNELS_EINVAL (bad name); KERNELS_EPARSE (the
 * file does not hold a commit id: empty or cut short by a crash, say; the
 * message names the file and how to mend it); KERNELS_EUNSAFE (a symlink
 * below refs/); KERNELS_EIO. */
int kernels__refs_read(const char *repo_dir, const char *name, char commit[41]);

/* Records refs/{name} = `commit` (40-hex), creating refs/ and nested
 * folders, atomically. Returns 0, KERNELS_EINVAL (bad name or commit),
 * KERNELS_EUNSAFE (a symlink in the way), KERNELS_EIO. */
int kernels__refs_write(const char *repo_dir, const char *name, const char *commit);

/* Every valid ref under refs/ (nested names joined with '/'), sorted by
 * name. Files whose name or content is not valid, temp files and symlinks
 * are skipped. A missing refs/ folder gives an empty list. `*refs` is
 * owned by the caller: kernels__refs_free. Returns 0, KERNELS_ENOMEM,
 * KERNELS_EIO. */
int kernels__refs_list(const char *repo_dir, kernels__ref **refs, size_t *count);
void kernels__refs_free(kernels__ref *refs, size_t count);

/* The files kernels__refs_list skips for their content: valid names that
 * hold no commit id (left empty or cut short by a crash: refs/ files are
 * written without a flush, as huggingface_hub writes them). `commit` is
 * "" in each. Same ownership and returns as kernels__refs_list. */
int kernels__refs_list_damaged(const char *repo_dir, kernels__ref **refs, size_t *count);

#endif
