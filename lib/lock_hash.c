/* git_lfs_concat, the variant hash of kernels.lock (kernels/lock.h): the
 * sha256 over every file of a variant, in path order, of its path and the
 * hash the Hub lists it by (git's blob sha1, or the LFS sha256). From a
 * list of files, a folder on disk or in the cache (the walk verify.c's
 * is), or a Hub tree listing. */
#include "lock.h"
#include "error.h"
#include "hash.h"
#include "listing.h"
#include "cache.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int skipped_path(const char *path)
{
	size_t n = strlen(path);
	const char *p = path;

	if (n >= 4 && strcmp(path + n - 4, ".pyc") == 0)
		return 1;
	while ((p = strstr(p, "__pycache__")) != NULL) {
		if ((p == path || p[-1] == '/') && (p[11] == '/' || p[11] == '\0'))
			return 1;
		p += 11;
	}
	return 0;
}

static int file_ptr_cmp(const void *a, const void *b)
{
	return strcmp((*(const kernels_lock_file *const *)a)->path, (*(const kernels_lock_file *const *)b)->path);
}

static int unhex(const char *s, unsigned char *out, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned hi, lo;
		if (sscanf(s + 2 * i, "%1x%1x", &hi, &lo) != 2)
			return -1;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

/* keep_bytecode: kernels 0.9 to 0.15 hash every file of the variant,
 * committed *.pyc and __pycache__/ included; kernels 0.16 and later leave
 * them out. */
static int variant_hash(const kernels_lock_file *files, size_t count, int keep_bytecode,
			char out[KERNELS_LOCK_HASH_SIZE])
{
	const kernels_lock_file **sorted;
	EVP_MD_CTX *ctx;
	unsigned char digest[32];
	size_t i, n = 0;
	int rc = 0;

	if ((!files && count) || !out)
		return kernels__error(KERNELS_EINVAL, "kernels_lock_variant_hash: `files` and `out` are required");
	for (i = 0; i < count; i++) {
		size_t want = files[i].is_lfs ? 64 : 40;
		if (!files[i].path || !*files[i].path)
			return kernels__error(KERNELS_EINVAL, "file %zu of the variant has no path", i + 1);
		if (!kernels__is_hex(files[i].hash, want, KERNELS__HEX_ANY_CASE))
			return kernels__error(KERNELS_EINVAL,
					      "hash '%s' of '%s' is malformed; expected %zu hex digits (%s)",
					      files[i].hash ? files[i].hash : "(null)", files[i].path, want,
					      files[i].is_lfs ? "the LFS sha256" : "the git blob sha1");
	}
	if (!(sorted = malloc((count ? count : 1) * sizeof(*sorted))))
		return kernels__error_oom();
	for (i = 0; i < count; i++)
		if (keep_bytecode || !skipped_path(files[i].path))
			sorted[n++] = &files[i];
	qsort(sorted, n, sizeof(*sorted), file_ptr_cmp);
	for (i = 1; i < n; i++)
		if (strcmp(sorted[i - 1]->path, sorted[i]->path) == 0) {
			const char *dup = sorted[i]->path;
			free(sorted);
			return kernels__error(KERNELS_EINVAL, "'%s' is listed twice in the variant", dup);
		}
	if (!(ctx = EVP_MD_CTX_new()) || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
		rc = kernels__error(KERNELS_ERROR, "cannot start a sha256 digest (OpenSSL)");
		goto out;
	}
	for (i = 0; i < n; i++) {
		unsigned char raw[32];
		size_t len = sorted[i]->is_lfs ? 32 : 20;
		unhex(sorted[i]->hash, raw, len);
		if (EVP_DigestUpdate(ctx, sorted[i]->path, strlen(sorted[i]->path)) != 1 ||
		    EVP_DigestUpdate(ctx, raw, len) != 1) {
			rc = kernels__error(KERNELS_ERROR, "sha256 digest failed (OpenSSL)");
			goto out;
		}
	}
	if (EVP_DigestFinal_ex(ctx, digest, NULL) != 1) {
		rc = kernels__error(KERNELS_ERROR, "sha256 digest failed (OpenSSL)");
		goto out;
	}
	memcpy(out, "sha256-", 7);
	kernels__hex(digest, 32, out + 7);
out:
	EVP_MD_CTX_free(ctx);
	free(sorted);
	return rc;
}

int kernels_lock_variant_hash(char out[KERNELS_LOCK_HASH_SIZE], const kernels_lock_file *files, size_t count)
{
	return variant_hash(files, count, 0, out);
}

typedef struct {
	kernels_lock_file *files;
	char **owned;         /* path and hash strings to free */
	size_t n, cap, nowned, capowned;
	const char *const *lfs_paths;
	int keep_bytecode;
	int plain;            /* a cache snapshot holds a committed file as a regular file */
} walk_state;

static int own(walk_state *s, char *p)
{
	if (!p)
		return KERNELS_ENOMEM;
	if (KERNELS__ARRAY_GROW(s->owned, s->capowned, s->nowned) < 0) {
		free(p);
		return KERNELS_ENOMEM;
	}
	s->owned[s->nowned++] = p;
	return 0;
}

static int add_file(walk_state *s, const char *full, const char *rel, int lfs)
{
	char hex[65], *path, *hash;
	int rc;

	if ((rc = kernels__hash_blob(full, lfs ? KERNELS__BLOB_SHA256 : KERNELS__BLOB_GIT_SHA1, hex, NULL)) < 0)
		return rc;
	path = kernels__strdup(rel);
	if ((rc = own(s, path)) < 0)
		return rc;
	hash = kernels__strdup(hex);
	if ((rc = own(s, hash)) < 0)
		return rc;
	if (KERNELS__ARRAY_GROW(s->files, s->cap, s->n) < 0)
		return KERNELS_ENOMEM;
	s->files[s->n].path = path;
	s->files[s->n].hash = hash;
	s->files[s->n].is_lfs = lfs;
	s->n++;
	return 0;
}

static int listed(const char *const *list, const char *rel)
{
	for (; list && *list; list++)
		if (strcmp(*list, rel) == 0)
			return 1;
	return 0;
}

/* A folder on disk (`lfs_paths`: which files the Hub keeps in LFS) or a
 * cache snapshot, whose links name the blob each file was hashed by. */
static int visit(const char *full, const char *rel, int depth, const struct stat *lst, void *payload)
{
	walk_state *s = payload;
	char *target = NULL;
	const char *base;
	size_t blen;
	struct stat st;
	int rc;

	(void)depth;
	if (S_ISDIR(lst->st_mode))
		return KERNELS__WALK_DESCEND;
	if (!s->keep_bytecode && skipped_path(rel))
		return 0; /* Python's byte-code caches are not part of a variant */
	if (s->lfs_paths && !S_ISLNK(lst->st_mode))
		return S_ISREG(lst->st_mode) ? add_file(s, full, rel, listed(s->lfs_paths, rel)) : 0;
	if (s->lfs_paths) {
		/* A link to a file counts as the file (hashed where it points). */
		if (stat(full, &st) < 0 || !S_ISREG(st.st_mode) || !(target = realpath(full, NULL)))
			return kernels__error(KERNELS_EIO, "'%s' is a dangling link", full);
		rc = add_file(s, target, rel, listed(s->lfs_paths, rel));
		free(target);
		return rc;
	}
	if (!S_ISLNK(lst->st_mode)) {
		/* Python's byte-code, or huggingface_hub's files without links. */
		s->plain |= S_ISREG(lst->st_mode) && !skipped_path(rel);
		return 0;
	}
	/* A cache snapshot: the blob's name says how it was hashed. */
	if (!(target = realpath(full, NULL)))
		return kernels__error(KERNELS_EIO,
				      "cannot resolve '%s': %s; the cache entry is damaged, download it again", full,
				      strerror(errno));
	base = strrchr(target, '/');
	blen = strlen(base + 1);
	if (blen == 40 || blen == 64)
		rc = add_file(s, target, rel, blen == 64);
	else
		rc = kernels__error(KERNELS_EINVAL, "'%s' points to blob '%s' whose name is neither a git sha1 nor a "
				    "sha256; the cache entry is damaged", full, base + 1);
	free(target);
	return rc;
}

static void walk_free(walk_state *s)
{
	size_t i;

	for (i = 0; i < s->nowned; i++)
		free(s->owned[i]);
	free(s->owned);
	free(s->files);
}

/* The listed file `rel` of the variant, hashed where it is (links followed
 * no further than the repo folder `repo`, or its cache's shared store). */
static int add_listed(walk_state *s, const char *variant_dir, const char *repo, const char *rel, int lfs)
{
	char *full = kernels__sprintf("%s/%s", variant_dir, rel), real[PATH_MAX];
	size_t n = strlen(repo);
	int rc;

	if (!full)
		return KERNELS_ENOMEM;
	if (!realpath(full, real))
		rc = kernels__error(KERNELS_EIO, "%s: %s; download the variant again", full, strerror(errno));
	else if ((strncmp(real, repo, n) || real[n] != '/') && !kernels__cache_shared_blob(repo, real))
		rc = kernels__error(KERNELS_EINVAL, "%s leads out of its repo folder, to %s; the cache entry is "
				    "damaged, download it again", full, real);
	else
		rc = add_file(s, real, rel, lfs);
	free(full);
	return rc;
}

static int no_listing(const char *variant_dir)
{
	return kernels__error(KERNELS_ENOTFOUND, "%s holds plain files (a cache huggingface_hub wrote without "
			      "symlinks): which are the commit's, and which are LFS files, only the Hub's listing of "
			      "the commit says, and the cache has no record of it; fetch the variant once online "
			      "with libkernels (that records it)", variant_dir);
}

/* A snapshot huggingface_hub wrote without links (HF_HUB_DISABLE_SYMLINKS)
 * cannot tell a committed file from one Python wrote, nor a git file from
 * an LFS one: the commit's build/ listing, recorded in the cache when it
 * was fetched (listing.h), says both. Each file is hashed as it is. 0,
 * 1 when the cache has no record, or an error. */
static int hash_listed(const char *variant_dir, int keep_bytecode, char out[KERNELS_LOCK_HASH_SIZE])
{
	char real[PATH_MAX], commit[41];
	const char *folder;
	walk_state s = { 0 };
	kernels__tree t = { 0 };
	size_t first = 0, count = 0, i, len, at = 0;
	int rc;

	/* <repo>/snapshots/<commit>/build/<variant>, read from the end: `at`
	 * where "/snapshots/" begins. */
	if (realpath(variant_dir, real) && (len = strlen(real)) > 57 + strlen(strrchr(real, '/')))
		at = len - 57 - strlen(strrchr(real, '/'));
	if (!at || strncmp(real + at, "/snapshots/", 11) || strspn(real + at + 11, "0123456789abcdef") != 40 ||
	    strncmp(real + at + 51, "/build/", 7))
		return 1; /* not <repo>/snapshots/<commit>/build/<variant>: no record to read */
	folder = real + at + 52;
	memcpy(commit, real + at + 11, 40);
	commit[40] = '\0';
	real[at] = '\0'; /* the repo folder */
	if ((rc = kernels__listing_read_at(NULL, real, commit, &t)) == 0)
		return 1;
	kernels__tree_range(&t, folder, &first, &count);
	for (i = first; rc > 0 && i < first + count; i++)
		if (!t.entries[i].is_dir && (rc = add_listed(&s, variant_dir, real, t.entries[i].path + strlen(folder) + 1,
							     t.entries[i].lfs_sha256 != NULL)) == 0)
			rc = 1;
	if (rc > 0)
		rc = variant_hash(s.files, s.n, keep_bytecode, out);
	walk_free(&s);
	kernels__tree_free(&t);
	return rc < 0 ? rc : 0;
}

int kernels__lock_variant_hash_dir_as(const char *variant_dir, const char *const *lfs_paths, int keep_bytecode,
				      char out[KERNELS_LOCK_HASH_SIZE])
{
	walk_state s = { .lfs_paths = lfs_paths, .keep_bytecode = keep_bytecode };
	int rc;

	if (!variant_dir || !out)
		return kernels__error(KERNELS_EINVAL,
				      "kernels_lock_variant_hash_dir: `variant_dir` and `out` are required");
	rc = kernels__walk(variant_dir, 64, visit, &s);
	/* Plain files beside links are strays (nothing lists them) or the
	 * commit's own: only the listing can tell. Without one, the links
	 * decide, as in a snapshot Python wrote beside. */
	if (rc == 0 && s.plain)
		rc = hash_listed(variant_dir, keep_bytecode, out);
	if (rc == 1 && !s.n)
		rc = no_listing(variant_dir);
	if (rc == 1 || (rc == 0 && !s.plain))
		rc = variant_hash(s.files, s.n, keep_bytecode, out);
	walk_free(&s);
	return rc;
}

/* A cache snapshot holds links for committed files only (Python writes its
 * byte-code next to them as plain files), so committed byte-code counts
 * there, as in kernels 0.9's validate_kernel; a build folder on disk may
 * hold the interpreter's, so it does not. */
int kernels_lock_variant_hash_dir(char out[KERNELS_LOCK_HASH_SIZE], const char *variant_dir, const char *const *lfs_paths)
{
	return kernels__lock_variant_hash_dir_as(variant_dir, lfs_paths, lfs_paths == NULL, out);
}

/* ---- from a tree listing ---- */

#ifdef KERNELS_TESTING
int kernels__lock_add_tree_variants(kernels_lock *lock, const char *repo_id, const kernels__tree *tree)
{
	return kernels__lock_add_tree_variants_as(lock, repo_id, tree, 0);
}
#endif

int kernels__lock_add_tree_variants_as(kernels_lock *lock, const char *repo_id, const kernels__tree *tree,
				       int keep_bytecode)
{
	static const char prefix[] = "build/torch";
	kernels_lock_file *files = NULL;
	char **names = NULL, hash[KERNELS_LOCK_HASH_SIZE];
	size_t nnames = 0, i, j, nfiles;
	int rc = 0;

	if (!tree || (tree->n && !tree->entries))
		return kernels__error(KERNELS_EINVAL, "no tree listing given for %s", repo_id ? repo_id : "(null)");
	if (tree->n && (!(names = calloc(tree->n, sizeof(*names))) || !(files = calloc(tree->n, sizeof(*files))))) {
		free(names);
		return kernels__error_oom();
	}
	/* variant names in order of first appearance */
	for (i = 0; i < tree->n && rc == 0; i++) {
		const kernels__tree_entry *e = &tree->entries[i];
		const char *v, *slash;
		if (e->is_dir || strncmp(e->path, prefix, sizeof(prefix) - 1) != 0)
			continue;
		v = e->path + 6;
		if (!(slash = strchr(v, '/')))
			continue;
		for (j = 0; j < nnames; j++)
			if (strlen(names[j]) == (size_t)(slash - v) && strncmp(names[j], v, (size_t)(slash - v)) == 0)
				break;
		if (j == nnames && !(names[nnames++] = strndup(v, (size_t)(slash - v))))
			rc = kernels__error_oom();
	}
	for (j = 0; j < nnames && rc == 0; j++) {
		size_t vlen = strlen(names[j]);
		nfiles = 0;
		for (i = 0; i < tree->n; i++) {
			const kernels__tree_entry *e = &tree->entries[i];
			if (e->is_dir || strncmp(e->path, "build/", 6) != 0 ||
			    strncmp(e->path + 6, names[j], vlen) != 0 ||
			    e->path[6 + vlen] != '/' || !e->path[7 + vlen])
				continue;
			files[nfiles].path = e->path + 7 + vlen;
			files[nfiles].is_lfs = e->lfs_sha256 != NULL;
			files[nfiles].hash = e->lfs_sha256 ? e->lfs_sha256 : e->oid;
			nfiles++;
		}
		rc = variant_hash(files, nfiles, keep_bytecode, hash);
		if (rc == 0)
			rc = kernels_lock_add_variant(lock, repo_id, names[j], hash);
		if (rc < 0)
			kernels__error_prefix("variant %s of %s", names[j], repo_id);
	}
	for (j = 0; j < nnames; j++)
		free(names[j]);
	free(names);
	free(files);
	return rc;
}
