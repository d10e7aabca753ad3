/* Internal: a Hub tree listing as data (tree.c). The entries of a
 * listing, their strings, and the checks that make a listing safe to act
 * on: every path (kernels__repo_path_check), every hash and size, no path
 * twice, no file used as a folder. The Hub client (hub.c) fills one from
 * the Hub's JSON pages; listing.c from the cache's record; bundles and lock
 * hashes build theirs by hand. Nothing here makes a request. */
#ifndef KERNELS_LIB_TREE_H
#define KERNELS_LIB_TREE_H

#include <jansson.h>
#include <stddef.h>

/* One entry of a tree listing, every field checked. Lock-file hashes
 * (git_lfs_concat) use `path`, `lfs_sha256` or else `oid`. */
typedef struct {
	char *path;             /* repo-relative path, validated (no "..", no absolute, ...) */
	int is_dir;             /* 1 for "directory" entries */
	char oid[41];           /* git object id (lower-case hex): the blob sha1 for files */
	long long size;         /* bytes of the file's content (LFS: the real size) */
	char *lfs_sha256;       /* 64 lower-case hex when the file is in LFS, else NULL */
} kernels__tree_entry;

/* A listing: the entries and, in `chunks`, the strings they point to
 * (owned by the tree; a tree built by hand may leave it NULL). */
typedef struct {
	kernels__tree_entry *entries;
	size_t n;
	size_t cap;                          /* entries allocated */
	struct kernels__tree_chunk *chunks;  /* the strings of entries added by kernels__tree_push */
} kernels__tree;

/* Frees the entries and their strings (not strings a hand-built tree's
 * entries point to elsewhere). */
void kernels__tree_free(kernels__tree *t);
/* A new zeroed entry at the end (NULL: out of memory, error set). */
kernels__tree_entry *kernels__tree_push(kernels__tree *t);
/* Copies s[0..n) plus a NUL into the tree's own storage (NULL: out of memory). */
char *kernels__tree_strdup(kernels__tree *t, const char *s, size_t n);
/* Checks one entry as a listing's entries are checked: the path
 * (kernels__repo_path_check, under `prefix` unless it is ""), a lower-case
 * 40-hex oid for files, a lower-case 64-hex LFS hash, a size within the
 * cap. `where` prefixes the message. */
int kernels__tree_entry_check(const kernels__tree_entry *e, const char *prefix, const char *where);
/* Sorts the entries by path (strcmp) and refuses a path listed twice, a
 * file that another entry uses as a folder, or files of one blob that
 * differ in size. O(n log n). */
int kernels__tree_check(kernels__tree *t, const char *where);
/* The blob a file's bytes are kept under in the cache: its LFS sha256,
 * else its git oid (owned by the entry). */
const char *kernels__tree_entry_blob(const kernels__tree_entry *e);
/* The entry with exactly this path in a sorted tree, or NULL. */
const kernels__tree_entry *kernels__tree_find(const kernels__tree *t, const char *path);
/* The entries under `folder`/ of a sorted tree: [*first, *first + *count). */
void kernels__tree_range(const kernels__tree *t, const char *folder, size_t *first, size_t *count);

/* Appends one page of the Hub's JSON listing (an array of {"type",
 * "path", "oid", "size", "lfs"}) to `t`, every entry checked as
 * kernels__tree_entry_check does (under `prefix`); refuses the page
 * (KERNELS_EPARSE) when it would take `t` past max_entries. `where`
 * prefixes the messages. Leaves sorting to kernels__tree_check. */
int kernels__tree_append_json(json_t *list, const char *prefix, const char *where, size_t max_entries,
			      kernels__tree *t);

/* Checks a repo-relative path from the Hub: non-empty, relative, '/'-
 * separated components that are not empty, "." or "..", without backslash,
 * control characters or bytes >= 0x80 that are not valid UTF-8, at most 4096 bytes.
 * Sets a message naming `path` and returns KERNELS_EUNSAFE when it is not. */
int kernels__repo_path_check(const char *path);

#endif
