/* The cache looked into and pruned (kernels/cache.h): what the repo
 * folders hold, and their removal. A removal never leaves the cache root
 * and never follows a link: folders are opened with O_NOFOLLOW relative to
 * their parent's descriptor, and links are unlinked as links. It holds the
 * repo lock exclusively (cache.c), so no download of ours writes meanwhile,
 * and the per-file locks of the repo's lock folder, so no huggingface_hub
 * download does either. */
#include "kernels/cache.h"
#include "cache.h"
#include "error.h"
#include "refs.h"
#include "repo.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define DEPTH_MAX 64
#define LOCK_POLL_MS 50

static const char *const prefixes[] = { "kernels--", "models--" };

/* ---- small growable arrays -------------------------------------------------- */

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	void *nv;
	size_t c = *cap ? *cap * 2 : 8;

	if (n < *cap)
		return 0;
	if (!(nv = realloc(*v, c * size)))
		return kernels__error_oom();
	*v = nv;
	*cap = c;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in `dir` (real folders only with dirs_only: no links), sorted. */
static int list_dir(const char *dir, int dirs_only, char ***out, size_t *count)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t cap = 0;
	int rc = 0;

	*out = NULL;
	*count = 0;
	if (!d)
		return 0; /* absent or unreadable: nothing to list */
	while (rc == 0 && (de = readdir(d))) {
		struct stat st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (dirs_only && (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode)))
			continue;
		if ((rc = grow((void **)out, &cap, *count, sizeof(char *))) == 0 &&
		    !((*out)[*count] = kernels__strdup(de->d_name)))
			rc = KERNELS_ENOMEM;
		if (rc == 0)
			(*count)++;
	}
	closedir(d);
	if (*count)
		qsort(*out, *count, sizeof(char *), cmp_str);
	return rc;
}

static void strings_free(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Bytes and regular files under `dir`; links to files count with follow. */
static unsigned long long tree_size(const char *dir, size_t *files, int follow, int depth)
{
	unsigned long long total = 0;
	struct dirent *de;
	DIR *d;

	if (depth > DEPTH_MAX || !(d = opendir(dir)))
		return 0;
	while ((de = readdir(d))) {
		struct stat st;
		char *p;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !(p = kernels__sprintf("%s/%s", dir, de->d_name)))
			continue;
		if (!lstat(p, &st)) {
			if (S_ISDIR(st.st_mode))
				total += tree_size(p, files, follow, depth + 1);
			else if (S_ISREG(st.st_mode) ||
				 (S_ISLNK(st.st_mode) && follow && !stat(p, &st) && S_ISREG(st.st_mode))) {
				total += (unsigned long long)st.st_size;
				(*files)++;
			}
		}
		free(p);
	}
	closedir(d);
	return total;
}

/* "kernels--org--name" -> "org/name" (malloc'ed); NULL for other names. */
static char *repo_of_folder(const char *folder, int *is_model)
{
	size_t i;

	for (i = 0; i < 2; i++) {
		size_t n = strlen(prefixes[i]);
		const char *sep;
		if (strncmp(folder, prefixes[i], n))
			continue;
		if (!(sep = strstr(folder + n, "--")) || sep == folder + n || !sep[2])
			return NULL;
		*is_model = (int)i;
		return kernels__sprintf("%.*s/%s", (int)(sep - folder - n), folder + n, sep + 2);
	}
	return NULL;
}

/* ---- scan ------------------------------------------------------------------------ */

static void revision_free(kernels_cache_revision *r)
{
	size_t i;

	for (i = 0; i < r->variants_count; i++)
		free((char *)r->variants[i].name);
	free((void *)r->variants);
	free((void *)r->refs); /* the names are the repo's */
	free((char *)r->commit);
}

static void repo_free(kernels_cache_repo *r)
{
	size_t i;

	for (i = 0; i < r->revisions_count; i++)
		revision_free((kernels_cache_revision *)&r->revisions[i]);
	free((void *)r->revisions);
	for (i = 0; i < r->refs_count; i++) {
		free((char *)r->ref_names[i]);
		free((char *)r->ref_commits[i]);
	}
	free((void *)r->ref_names);
	free((void *)r->ref_commits);
	free((char *)r->repo_id);
	free((char *)r->path);
}

void kernels_cache_info_free(kernels_cache_info *info)
{
	size_t i;

	if (!info)
		return;
	for (i = 0; i < info->repos_count; i++)
		repo_free((kernels_cache_repo *)&info->repos[i]);
	free((void *)info->repos);
	free((char *)info->cache_dir);
	free(info);
}

static int scan_refs(kernels_cache_repo *r)
{
	kernels__ref *refs = NULL;
	size_t n = 0, i;
	const char **names, **commits;
	int rc = kernels__refs_list(r->path, &refs, &n);

	if (rc < 0)
		return rc;
	names = calloc(n ? n : 1, sizeof(char *));
	commits = calloc(n ? n : 1, sizeof(char *));
	r->ref_names = names;
	r->ref_commits = commits;
	for (i = 0; rc == 0 && names && commits && i < n; i++) {
		if (!(names[i] = kernels__strdup(refs[i].name)) || !(commits[i] = kernels__strdup(refs[i].commit)))
			rc = KERNELS_ENOMEM;
		r->refs_count = i + 1;
	}
	kernels__refs_free(refs, n);
	return !names || !commits ? kernels__error_oom() : rc;
}

static int scan_revision(const kernels_cache_repo *repo, const char *snapshots, const char *commit,
			 kernels_cache_revision *r)
{
	kernels_cache_variant *vs;
	char *build, **names = NULL;
	const char **refs;
	size_t n = 0, i;
	int rc;

	if (!(r->commit = kernels__strdup(commit)) || !(build = kernels__sprintf("%s/%s/build", snapshots, commit)))
		return KERNELS_ENOMEM;
	rc = list_dir(build, 1, &names, &n);
	r->variants = vs = calloc(n ? n : 1, sizeof(*vs));
	for (i = 0; rc == 0 && vs && i < n; i++) {
		char *vd = kernels__sprintf("%s/%s", build, names[i]);
		if (!vd) {
			rc = KERNELS_ENOMEM;
			break;
		}
		vs[i].name = names[i];
		names[i] = NULL;
		vs[i].size = tree_size(vd, &vs[i].files, 1, 0);
		r->variants_count = i + 1;
		free(vd);
	}
	strings_free(names, n);
	free(build);
	if (!vs)
		return kernels__error_oom();
	r->refs = refs = calloc(repo->refs_count ? repo->refs_count : 1, sizeof(char *));
	if (!refs)
		return kernels__error_oom();
	for (i = 0; i < repo->refs_count; i++)
		if (!strcmp(repo->ref_commits[i], commit))
			refs[r->refs_count++] = repo->ref_names[i];
	return rc;
}

static int scan_repo(const char *root, const char *folder, char *repo_id, int is_model, kernels_cache_repo *r)
{
	kernels_cache_revision *revs;
	char *sub, **commits = NULL;
	size_t n = 0, i, files = 0;
	int rc;

	r->repo_id = repo_id;
	r->is_model = is_model;
	if (!(r->path = kernels__sprintf("%s/%s", root, folder)))
		return KERNELS_ENOMEM;
	if ((rc = scan_refs(r)) < 0)
		return rc;
	if (!(sub = kernels__sprintf("%s/blobs", r->path)))
		return KERNELS_ENOMEM;
	tree_size(sub, &r->blobs, 0, 0);
	free(sub);
	/* Every file libkernels (and huggingface_hub) wrote in the folder, the
	 * Python-free copies under .libkernels/ too: what `cache rm` frees. */
	r->size = tree_size(r->path, &files, 0, 0);
	if (!(sub = kernels__sprintf("%s/snapshots", r->path)))
		return KERNELS_ENOMEM;
	rc = list_dir(sub, 1, &commits, &n);
	r->revisions = revs = calloc(n ? n : 1, sizeof(*revs));
	for (i = 0; rc == 0 && revs && i < n; i++) {
		rc = scan_revision(r, sub, commits[i], &revs[i]);
		r->revisions_count = i + 1;
	}
	strings_free(commits, n);
	free(sub);
	return revs ? rc : kernels__error_oom();
}

static int has_variants(const kernels_cache_repo *r)
{
	size_t i;

	for (i = 0; i < r->revisions_count; i++)
		if (r->revisions[i].variants_count)
			return 1;
	return 0;
}

/* A ref file holding no commit id is left out of the scan: said once per
 * file, so that `cache ls` does not just drop the name. */
static void warn_damaged_refs(const kernels__config *cfg, const kernels_cache_repo *r)
{
	kernels__ref *refs = NULL;
	size_t n = 0, i;

	if (kernels__refs_list_damaged(r->path, &refs, &n) < 0)
		kernels_error_clear();
	for (i = 0; i < n; i++)
		kernels__log(cfg, KERNELS_LOG_WARNING, "ref file '%s/refs/%s' holds no 40-hex commit id (a crash "
			     "while it was written can leave it empty), so '%s' is not listed; an online get of "
			     "%s at '%s' rewrites it, or delete the file", r->path, refs[i].name, refs[i].name,
			     r->repo_id, refs[i].name);
	kernels__refs_free(refs, n);
}

static int scan(const kernels__config *cfg, kernels_cache_info *info, const char *only)
{
	kernels_cache_repo *repos = NULL;
	char **folders = NULL;
	size_t n = 0, i, cap = 0;
	int rc = list_dir(info->cache_dir, 1, &folders, &n);

	for (i = 0; rc == 0 && i < n; i++) {
		int is_model = 0;
		char *id = repo_of_folder(folders[i], &is_model);
		if (!id || (only && strcmp(only, id))) {
			free(id);
			continue;
		}
		if ((rc = grow((void **)&repos, &cap, info->repos_count, sizeof(*repos))) < 0) {
			free(id);
			break;
		}
		memset(&repos[info->repos_count], 0, sizeof(*repos));
		info->repos = repos;
		rc = scan_repo(info->cache_dir, folders[i], id, is_model, &repos[info->repos_count]);
		if (rc == 0 && is_model && !has_variants(&repos[info->repos_count])) {
			repo_free(&repos[info->repos_count]); /* an ordinary model, not a kernel */
		} else {
			if (rc == 0)
				warn_damaged_refs(cfg, &repos[info->repos_count]);
			info->size += repos[info->repos_count++].size;
		}
	}
	info->repos = repos;
	strings_free(folders, n);
	return rc;
}

int kernels_cache_scan(kernels_cache_info **out, const char *repo_id, const kernels_options *opts)
{
	kernels_cache_info *info;
	kernels__config cfg;
	int rc;

	if (!out)
		return kernels__error(KERNELS_EINVAL, "kernels_cache_scan: out is NULL");
	*out = NULL;
	if (repo_id && (rc = kernels__repo_id_check(repo_id)) < 0)
		return rc;
	if ((rc = kernels__config_load(&cfg, opts)) < 0)
		return rc;
	if (!(info = calloc(1, sizeof(*info))) || !(info->cache_dir = kernels__strdup(cfg.cache_dir)))
		rc = kernels__error_oom();
	else
		rc = scan(&cfg, info, repo_id);
	kernels__config_free(&cfg);
	if (rc < 0) {
		kernels_cache_info_free(info);
		return rc;
	}
	*out = info;
	return 0;
}

/* ---- removal ------------------------------------------------------------------------ */

typedef struct {
	int dry_run, wait;
	char **removed;
	size_t n, cap;
	unsigned long long freed;
	int rc; /* the first failure; its message is the one kept */
	kernels__cache_lock *locks;
	size_t n_locks, cap_locks;
} rm_state;

static void rm_fail(rm_state *s, int code, const char *fmt, const char *path, int err)
{
	if (s->rc == 0)
		s->rc = code == KERNELS_ENOMEM ? kernels__error_oom() : kernels__error(code, fmt, path, strerror(err));
}

static void record(rm_state *s, const char *shown)
{
	char *copy;

	if (grow((void **)&s->removed, &s->cap, s->n, sizeof(char *)) < 0 || !(copy = kernels__strdup(shown)))
		rm_fail(s, KERNELS_ENOMEM, NULL, NULL, 0);
	else
		s->removed[s->n++] = copy;
}

/* Removes `name` inside the open folder `pfd` (path `shown` in messages):
 * a link or file as itself, a folder with everything under it. */
static void remove_at(rm_state *s, int pfd, const char *name, const char *shown, int depth)
{
	struct stat st;
	DIR *d;
	struct dirent *de;
	int fd;

	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
		if (errno != ENOENT)
			rm_fail(s, KERNELS_EIO, "cannot inspect %s: %s", shown, errno);
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		if (S_ISREG(st.st_mode))
			s->freed += (unsigned long long)st.st_size;
		if (!s->dry_run && unlinkat(pfd, name, 0) && errno != ENOENT)
			rm_fail(s, KERNELS_EIO, "cannot remove %s: %s", shown, errno);
		return;
	}
	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || depth > DEPTH_MAX || !(d = fdopendir(fd))) {
		rm_fail(s, KERNELS_EIO, "cannot open %s: %s", shown, depth > DEPTH_MAX ? ELOOP : errno);
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		char *sub;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!(sub = kernels__sprintf("%s/%s", shown, de->d_name))) {
			rm_fail(s, KERNELS_ENOMEM, NULL, NULL, 0);
			continue;
		}
		remove_at(s, dirfd(d), de->d_name, sub, depth + 1);
		free(sub);
	}
	closedir(d);
	if (!s->dry_run && unlinkat(pfd, name, AT_REMOVEDIR) && errno != ENOENT)
		rm_fail(s, KERNELS_EIO, "cannot remove %s: %s", shown, errno);
}

/* Removes `name` in `pfd`, when it is there, and records `shown`. */
static void remove_top(rm_state *s, int pfd, const char *name, const char *shown)
{
	struct stat st;

	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return;
	remove_at(s, pfd, name, shown, 0);
	record(s, shown);
}

static int open_dir_at(int pfd, const char *name)
{
	return openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Adds to `used` the blob names the links under `pfd` point at: 0, 1
 * when some of it could not be read (*err says why), or <0. */
static int linked_blobs(int pfd, char ***used, size_t *n, size_t *cap, int depth, int *err)
{
	int fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;
	struct dirent *de;
	DIR *d;

	if (fd < 0 || depth > DEPTH_MAX || !(d = fdopendir(fd))) {
		*err = depth > DEPTH_MAX ? ELOOP : errno;
		if (fd >= 0)
			close(fd);
		return 1;
	}
	while (rc == 0 && (de = readdir(d))) {
		struct stat st;
		char target[4096];
		ssize_t len;
		int sub;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW)) {
			if (errno != ENOENT) /* gone meanwhile: it links nothing */
				*err = errno, rc = 1;
			continue;
		}
		if (S_ISLNK(st.st_mode) && (len = readlinkat(dirfd(d), de->d_name, target, sizeof(target) - 1)) > 0) {
			const char *base;
			target[len] = '\0';
			base = strrchr(target, '/');
			if ((rc = grow((void **)used, cap, *n, sizeof(char *))) == 0 &&
			    !((*used)[*n] = kernels__strdup(base ? base + 1 : target)))
				rc = KERNELS_ENOMEM;
			if (rc == 0)
				(*n)++;
		} else if (S_ISDIR(st.st_mode)) {
			if ((sub = open_dir_at(dirfd(d), de->d_name)) < 0) {
				*err = errno, rc = 1;
				continue;
			}
			rc = linked_blobs(sub, used, n, cap, depth + 1, err);
			close(sub);
		}
	}
	closedir(d);
	return rc;
}

/* What libkernels keeps beside a blob goes with it: its download receipt
 * and, for a module loaded without libpython, its Python-free copy and
 * that copy's receipt (lib/receipt.h, lib/pyfree.c). */
static void remove_blob_records(rm_state *s, int repofd, const char *repo_path, const char *key)
{
	static const char *const where[][2] = { { "patched", ".so" }, { "patched", ".json" }, { "blobs", ".json" } };
	int own = open_dir_at(repofd, ".libkernels"), fd;
	size_t i;

	for (i = 0; own >= 0 && i < sizeof(where) / sizeof(where[0]); i++) {
		char *name, *shown;
		if ((fd = open_dir_at(own, where[i][0])) < 0)
			continue;
		name = kernels__sprintf("%s%s", key, where[i][1]);
		shown = name ? kernels__sprintf("%s/.libkernels/%s/%s", repo_path, where[i][0], name) : NULL;
		if (shown)
			remove_top(s, fd, name, shown);
		else
			rm_fail(s, KERNELS_ENOMEM, NULL, NULL, 0);
		free(name);
		free(shown);
		close(fd);
	}
	if (own >= 0)
		close(own);
}

/* What libkernels keeps for a revision goes with its snapshot: its
 * variants' verification receipts and its file listing (lib/receipt.h,
 * lib/listing.h), which nothing else reads and would only be left behind. */
static void remove_revision_records(rm_state *s, int repofd, const char *repo_path, const char *commit)
{
	static const char *const where[] = { "receipts", "trees" };
	int own = open_dir_at(repofd, ".libkernels"), fd;
	size_t i;
	char *shown;

	for (i = 0; own >= 0 && i < sizeof(where) / sizeof(where[0]); i++) {
		if ((fd = open_dir_at(own, where[i])) < 0)
			continue;
		if ((shown = kernels__sprintf("%s/.libkernels/%s/%s", repo_path, where[i], commit)))
			remove_top(s, fd, commit, shown);
		else
			rm_fail(s, KERNELS_ENOMEM, NULL, NULL, 0);
		free(shown);
		close(fd);
	}
	if (own >= 0)
		close(own);
}

/* Removes the blobs no snapshot but `gone` links to (complete ones only: a
 * blob being written is a download's). Returns the snapshots left, or an
 * error (nothing removed then). */
static int gc_blobs(rm_state *s, int repofd, const char *repo_path, const char *gone)
{
	int snapfd = open_dir_at(repofd, "snapshots"), blobfd, left = 0, rc = 0, err = errno;
	char **used = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	if (snapfd < 0 && err != ENOENT)
		rc = 1;
	if (snapfd >= 0 && (d = fdopendir(snapfd))) {
		while (rc == 0 && (de = readdir(d))) {
			int fd;
			if (de->d_name[0] == '.' || !strcmp(de->d_name, gone))
				continue;
			left++;
			if ((fd = open_dir_at(dirfd(d), de->d_name)) >= 0) {
				rc = linked_blobs(fd, &used, &n, &cap, 0, &err);
				close(fd);
			} else if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP) {
				err = errno, rc = 1; /* not a stray file or link: a snapshot unread */
			}
		}
		closedir(d);
	} else if (snapfd >= 0) {
		err = errno, rc = 1;
		close(snapfd);
	}
	if (rc == 1)
		rc = kernels__error(KERNELS_EIO, "cannot read all of %s/snapshots (%s): no blob was removed, as the "
				    "snapshots not read may link any of them; make them readable and remove again",
				    repo_path, strerror(err));
	if (n)
		qsort(used, n, sizeof(char *), cmp_str);
	if (rc == 0 && (blobfd = open_dir_at(repofd, "blobs")) >= 0) {
		if ((d = fdopendir(blobfd))) {
			while ((de = readdir(d))) {
				const char *key = de->d_name;
				size_t len = strlen(key);
				char *shown;
				if (key[0] == '.' || (len > 11 && !strcmp(key + len - 11, ".incomplete")) ||
				    (n && bsearch(&key, used, n, sizeof(char *), cmp_str)))
					continue;
				if (!(shown = kernels__sprintf("%s/blobs/%s", repo_path, key))) {
					rm_fail(s, KERNELS_ENOMEM, NULL, NULL, 0);
					continue;
				}
				remove_top(s, dirfd(d), key, shown);
				free(shown);
				remove_blob_records(s, repofd, repo_path, key);
			}
			closedir(d);
		} else {
			close(blobfd);
		}
	}
	strings_free(used, n);
	return rc < 0 ? rc : left;
}

/* The snapshot `rev` names: a commit, or a prefix of 4 hex digits or more
 * of one, or a name under refs/ whose snapshot is here. */
static int find_commit(int repofd, const char *repo_path, const char *repo_id, const char *rev, char **commit)
{
	size_t len = strlen(rev), n = 0, i;
	int snapfd, rc = 0, hex = len >= 4 && strspn(rev, "0123456789abcdef") == len;
	kernels__ref *refs = NULL;
	struct dirent *de;
	struct stat st;
	DIR *d;

	*commit = NULL;
	if (hex && (snapfd = open_dir_at(repofd, "snapshots")) >= 0 && (d = fdopendir(snapfd))) {
		while (rc == 0 && (de = readdir(d)))
			if (strlen(de->d_name) >= 40 && !strncmp(de->d_name, rev, len)) {
				if (*commit)
					rc = kernels__error(KERNELS_EAMBIGUOUS, "%s has more than one cached snapshot "
							    "starting with '%s'; give more digits", repo_id, rev);
				else if (!(*commit = kernels__strdup(de->d_name)))
					rc = KERNELS_ENOMEM;
			}
		closedir(d);
		if (rc < 0 || *commit)
			return rc;
	}
	if ((rc = kernels__refs_list(repo_path, &refs, &n)) < 0)
		return rc;
	for (i = 0; i < n && !*commit; i++) {
		char *snap = kernels__sprintf("snapshots/%s", refs[i].commit);
		if (!strcmp(refs[i].name, rev) && snap && !fstatat(repofd, snap, &st, AT_SYMLINK_NOFOLLOW) &&
		    S_ISDIR(st.st_mode) && !(*commit = kernels__strdup(refs[i].commit)))
			rc = KERNELS_ENOMEM;
		free(snap);
	}
	kernels__refs_free(refs, n);
	if (rc == 0 && !*commit)
		rc = kernels__error(KERNELS_ENOTFOUND, "%s has no cached snapshot for '%s'; "
				    "kernels_cache_scan (libkernels cache ls) lists the ones there are", repo_id, rev);
	return rc;
}

/* refs/ files (nested) holding `commit`, removed. */
static void remove_refs(rm_state *s, const char *repo_path, int repofd, const char *commit)
{
	kernels__ref *refs = NULL;
	size_t n = 0, i;

	int rc = kernels__refs_list(repo_path, &refs, &n);

	if (rc < 0) {
		if (s->rc == 0)
			s->rc = rc; /* its message stands */
		return;
	}
	for (i = 0; i < n; i++) {
		char *rel = kernels__sprintf("refs/%s", refs[i].name), *shown = NULL, *slash;
		int pfd;
		if (strcmp(refs[i].commit, commit)) {
			free(rel);
			continue;
		}
		if (!rel || !(shown = kernels__sprintf("%s/%s", repo_path, rel))) {
			rm_fail(s, KERNELS_ENOMEM, NULL, NULL, 0);
		} else {
			/* kernels__refs_list walked these folders without following a link */
			slash = strrchr(rel, '/');
			*slash = '\0';
			if ((pfd = open_dir_at(repofd, rel)) >= 0) {
				remove_top(s, pfd, slash + 1, shown);
				close(pfd);
			}
		}
		free(rel);
		free(shown);
	}
	kernels__refs_free(refs, n);
}

/* No lock file could be made: a read-only file system (an image's cache,
 * a fleet's shared one) is not a matter of this user's rights. */
static int unwritable(const kernels__config *cfg, const char *repo_id)
{
	struct statvfs vs;

	if (statvfs(cfg->cache_dir, &vs) == 0 && (vs.f_flag & ST_RDONLY))
		return kernels__error(KERNELS_EIO, "cannot remove %s from %s: the cache is on a read-only file "
				      "system, so nothing was removed; remove it where the cache is mounted writable",
				      repo_id, cfg->cache_dir);
	return kernels__error(KERNELS_EIO, "cannot remove %s from %s: this user may not write the cache (its .locks "
			      "folder)", repo_id, cfg->cache_dir);
}

/* The repo lock's file could not be made: on a full file system (no block
 * or no inode left) that is what to free first, by other means: a removal
 * without its lock could take files from under a download starting as
 * soon as it frees room. */
static int no_room_for_lock(const kernels__config *cfg, const char *repo_id, int rc)
{
	struct statvfs vs;

	if (statvfs(cfg->cache_dir, &vs) < 0 || (vs.f_bavail && vs.f_favail))
		return rc;
	return kernels__error_prefix("cannot remove %s: the file system of the cache is full, so its lock file "
				     "cannot be made and nothing was removed; free a few KiB and a file's room on "
				     "it by other means, then run it again", repo_id);
}

/* The repo lock, exclusive, then every per-file lock of the repo's lock
 * folder (huggingface_hub's, and ours): all held until the removal ends. */
static int lock_repo(rm_state *s, const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
		     const char *folder)
{
	int wait = s->wait;
	kernels__cache_lock lock;
	char *dir, **names = NULL;
	size_t n = 0, i;
	int rc;

	rc = kernels__cache_repo_lock(cfg, type, repo_id, LOCK_EX | (wait ? 0 : LOCK_NB), &lock);
	if (rc == 1)
		return kernels__error(KERNELS_EBUSY, "%s is being downloaded (by this process or another); nothing "
				      "was removed: try again when the download is done", repo_id);
	if (rc == 2)
		return unwritable(cfg, repo_id);
	if (rc < 0)
		return no_room_for_lock(cfg, repo_id, rc);
	if (rc < 0 || (rc = grow((void **)&s->locks, &s->cap_locks, s->n_locks, sizeof(lock))) < 0) {
		kernels__cache_unlock(&lock);
		return rc;
	}
	s->locks[s->n_locks++] = lock;
	if (!(dir = kernels__sprintf("%s/.locks/%s", cfg->cache_dir, folder)) ||
	    (rc = list_dir(dir, 0, &names, &n)) < 0) {
		free(dir);
		return dir ? rc : KERNELS_ENOMEM;
	}
	for (i = 0; rc == 0 && i < n; i++) {
		size_t len = strlen(names[i]);
		char *path;
		if (!strcmp(names[i], KERNELS__REPO_LOCK) || len < 6 || strcmp(names[i] + len - 5, ".lock"))
			continue;
		if (!(path = kernels__sprintf("%s/%s", dir, names[i]))) {
			rc = KERNELS_ENOMEM;
			break;
		}
		while ((rc = kernels__cache_lock_try(path, &lock)) == 1 && wait)
			nanosleep(&(struct timespec){ 0, LOCK_POLL_MS * 1000000L }, NULL);
		if (rc == 1)
			rc = kernels__error(KERNELS_EBUSY, "a file of %s is being downloaded (its lock %s is held, by "
					    "huggingface_hub or another client); nothing was removed: try again when "
					    "the download is done", repo_id, path);
		else if (rc == 0 && (rc = grow((void **)&s->locks, &s->cap_locks, s->n_locks, sizeof(lock))) < 0)
			kernels__cache_unlock(&lock);
		else if (rc == 0)
			s->locks[s->n_locks++] = lock;
		free(path);
	}
	strings_free(names, n);
	free(dir);
	return rc;
}

/* One repo folder (kernels-- or models--): the revision, or all of it. */
static int remove_folder(rm_state *s, const kernels__config *cfg, int rootfd, kernels__repo_type type,
			 const char *repo_id, const char *rev, char **commit)
{
	char *folder = kernels__repo_cache_name(type, repo_id);
	char *shown = folder ? kernels__sprintf("%s/%s", cfg->cache_dir, folder) : NULL, *p = NULL;
	int repofd = -1, fd, rc = 0;

	if (!shown) {
		rc = KERNELS_ENOMEM;
		goto out;
	}
	if (!s->dry_run && (rc = lock_repo(s, cfg, type, repo_id, folder)) < 0)
		goto out;
	if (rev) {
		if ((repofd = open_dir_at(rootfd, folder)) < 0) {
			rc = kernels__error(KERNELS_EIO, "cannot open %s: %s", shown, strerror(errno));
			goto out;
		}
		if ((rc = find_commit(repofd, shown, repo_id, rev, commit)) < 0)
			goto out;
		if ((fd = open_dir_at(repofd, "snapshots")) >= 0) {
			if ((p = kernels__sprintf("%s/snapshots/%s", shown, *commit)))
				remove_top(s, fd, *commit, p);
			close(fd);
		}
		remove_refs(s, shown, repofd, *commit);
		remove_revision_records(s, repofd, shown, *commit);
		if ((rc = gc_blobs(s, repofd, shown, *commit)) != 0)
			goto out; /* other snapshots stay, and so does the repo */
	}
	/* The whole repo (or its last snapshot went): the folder, then its
	 * locks, ours last, so no download starts before the folder is gone. */
	remove_top(s, rootfd, folder, shown);
	if ((fd = open_dir_at(rootfd, ".locks")) >= 0) {
		free(p);
		if ((p = kernels__sprintf("%s/.locks/%s", cfg->cache_dir, folder)))
			remove_top(s, fd, folder, p);
		close(fd);
	}
out:
	if (repofd >= 0)
		close(repofd);
	free(p);
	free(shown);
	free(folder);
	return rc < 0 ? rc : 0;
}

void kernels_cache_removal_free(kernels_cache_removal *removal)
{
	size_t i;

	if (!removal)
		return;
	for (i = 0; i < removal->removed_count; i++)
		free((char *)removal->removed[i]);
	free((void *)removal->removed);
	free((char *)removal->repo_id);
	free((char *)removal->commit);
	free(removal);
}

static int report(rm_state *s, const char *repo_id, char *commit, kernels_cache_removal **out)
{
	kernels_cache_removal *r = calloc(1, sizeof(*r));

	if (!r || !(r->repo_id = kernels__strdup(repo_id))) {
		free(r);
		free(commit);
		return kernels__error_oom();
	}
	r->commit = commit;
	r->removed = (const char *const *)s->removed;
	r->removed_count = s->n;
	r->freed = s->freed;
	r->dry_run = s->dry_run;
	s->removed = NULL;
	s->n = 0;
	*out = r;
	return 0;
}

static int args_check(const char *repo_id, const char *revision, unsigned int flags)
{
	int rc = kernels__repo_id_check(repo_id);

	if (rc < 0)
		return rc;
	if (revision && !*revision)
		return kernels__error(KERNELS_EINVAL, "the revision to remove is empty; give a commit (or a prefix of "
				      "4 hex digits or more) or a name under refs/, or none for the whole repo");
	if (flags & ~(KERNELS_CACHE_DRY_RUN | KERNELS_CACHE_WAIT))
		return kernels__error(KERNELS_EINVAL, "kernels_cache_remove: unknown flags 0x%x", flags);
	return 0;
}

int kernels_cache_remove(kernels_cache_removal **out, const char *repo_id, const char *revision,
			 unsigned int flags, const kernels_options *opts)
{
	rm_state s = { .dry_run = !!(flags & KERNELS_CACHE_DRY_RUN), .wait = !!(flags & KERNELS_CACHE_WAIT) };
	kernels__repo_type t;
	kernels__config cfg;
	char *commit = NULL;
	int rootfd, found = 0, rc;
	size_t i;

	if (out)
		*out = NULL;
	if ((rc = args_check(repo_id, revision, flags)) < 0 || (rc = kernels__config_load(&cfg, opts)) < 0)
		return rc;
	if ((rootfd = open(cfg.cache_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		rc = kernels__error(KERNELS_ENOTFOUND, "%s is not in the cache %s: there is no such folder (%s)",
				    repo_id, cfg.cache_dir, strerror(errno));
		kernels__config_free(&cfg);
		return rc;
	}
	for (t = KERNELS__REPO_KERNEL; rc == 0 && t <= KERNELS__REPO_MODEL && !(revision && found); t++) {
		char *folder = kernels__repo_cache_name(t, repo_id);
		struct stat st;
		if (!folder) {
			rc = KERNELS_ENOMEM;
			break;
		}
		/* a folder that is a link is not the repo's: never followed */
		if (!fstatat(rootfd, folder, &st, AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode)) {
			found = 1;
			rc = remove_folder(&s, &cfg, rootfd, t, repo_id, revision, &commit);
		}
		free(folder);
	}
	close(rootfd);
	for (i = 0; i < s.n_locks; i++)
		kernels__cache_unlock(&s.locks[i]);
	free(s.locks);
	if (rc == 0 && !found)
		rc = kernels__error(KERNELS_ENOTFOUND,
				    "%s is not in the cache %s; kernels_cache_scan (libkernels cache "
				    "ls) lists what is there", repo_id, cfg.cache_dir);
	if (rc == 0)
		rc = s.rc;
	if ((rc == 0 || (rc == s.rc && s.n)) && out) {
		int e = report(&s, repo_id, commit, out);
		commit = NULL;
		if (rc == 0)
			rc = e;
	}
	strings_free(s.removed, s.n);
	free(commit);
	kernels__config_free(&cfg);
	return rc;
}
