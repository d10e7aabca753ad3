/* The cache layout shared with huggingface_hub. Every change a reader could
 * observe is a rename: blobs from .incomplete, links from a temporary name,
 * refs from a temporary file, so a concurrent reader sees old or new, never
 * half of either. */
#include "cache.h"
#include "kernels/download.h"
#include "error.h"
#include "hub.h"
#include "util.h"
#include "hash.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Only makes temp names unique within the process; no call reads what
 * another set. */

char *kernels__cache_repo_dir(const kernels__config *cfg, kernels__repo_type type, const char *repo_id)
{
	char *name = kernels__repo_cache_name(type, repo_id), *dir;

	if (!name)
		return NULL;
	dir = kernels__sprintf("%s/%s", cfg->cache_dir, name);
	free(name);
	return dir;
}

/* ---- containment ------------------------------------------------------------------ */

/* The refusal of `shown` (the path of `name` in `dirfd`), saying what is
 * there: the walk stops at it, before anything is made below it. */
static int refuse_at(int dirfd, const char *name, const char *shown)
{
	char target[PATH_MAX];
	struct stat st;
	ssize_t n;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode) &&
	    (n = readlinkat(dirfd, name, target, sizeof(target) - 1)) >= 0) {
		target[n] = '\0';
		return kernels__error(KERNELS_EUNSAFE,
				      "%s is a symbolic link (to %s), not a folder: libkernels wrote nothing through "
				      "it and loads nothing through it (a planted link could send downloads, or "
				      "load code, from outside the cache); remove it, or point the cache "
				      "(HF_HUB_CACHE/KERNELS_CACHE) at a folder of your own", shown, target);
	}
	return kernels__error(KERNELS_EUNSAFE,
			      "%s is a file, not a folder: libkernels wrote nothing through it and loads nothing "
			      "through it; remove it, or point the cache (HF_HUB_CACHE/KERNELS_CACHE) at a folder "
			      "of your own", shown);
}

/* One step of the walk: the folder `part` of `fd`, made first when
 * `create` and missing. Closes fd; the new descriptor, or an error. */
static int step(int fd, const char *part, const char *root, const char *rel, size_t upto, int create)
{
	char *shown = NULL;
	int next, err, rc;

	if (strcmp(part, ".") && strcmp(part, "..")) {
		next = openat(fd, part, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT && create &&
		    (mkdirat(fd, part, 0777) == 0 || errno == EEXIST))
			next = openat(fd, part, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next >= 0) {
			close(fd);
			return next;
		}
	} else {
		errno = ELOOP; /* never walked: every caller builds its names */
	}
	err = errno;
	if (!(shown = kernels__sprintf("%s/%.*s", root, (int)upto, rel)))
		rc = KERNELS_ENOMEM;
	else if (err == ENOTDIR || err == ELOOP)
		rc = refuse_at(fd, part, shown);
	else if (err == ENOENT)
		rc = kernels__error(KERNELS_ENOTFOUND, "%s does not exist", shown);
	else
		rc = kernels__error(KERNELS_EIO, "cannot %s folder %s: %s; %s", create ? "create" : "open", shown,
				    strerror(err), kernels__write_advice(err, 1, "check that the cache is writable for this "
				    "user (shared caches: group-writable) or use a cache of your own (KERNELS_CACHE)"));
	free(shown);
	close(fd);
	errno = err;
	return rc;
}

#ifdef KERNELS_TESTING
/* Tests swap a folder for a link here, after the walk and before the
 * caller writes through its descriptor (tests/test_cache.c defines it);
 * the release library has no such hook. */
extern void kernels__test_after_walk(const char *root, const char *rel) __attribute__((weak));
#define AFTER_WALK(root, rel) (kernels__test_after_walk ? kernels__test_after_walk(root, rel) : (void)0)
#else
#define AFTER_WALK(root, rel) ((void)0)
#endif

int kernels__cache_dir_open(const char *root, const char *rel, int create)
{
	char part[NAME_MAX + 1];
	size_t at = 0, len;
	int fd, err;

	/* The root itself is trusted as it is (a link, a mount). */
	if ((fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 && errno == ENOENT && create &&
	    kernels__mkdir_p(root, 0777) == 0)
		fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		fd = kernels__error(err == ENOENT ? KERNELS_ENOTFOUND : KERNELS_EIO,
				    "cannot open the cache %s (for %s/%s): %s; %s", root, root, rel, strerror(err),
				    kernels__write_advice(err, 1, "check the cache setting (HF_HUB_CACHE/KERNELS_CACHE) "
							  "and its permissions"));
		errno = err;
		return fd;
	}
	while (rel[at]) {
		len = strcspn(rel + at, "/");
		if (len > NAME_MAX) {
			close(fd);
			return kernels__error(KERNELS_EINVAL, "a folder name in %s/%s is too long", root, rel);
		}
		if (len) {
			memcpy(part, rel + at, len);
			part[len] = '\0';
			if ((fd = step(fd, part, root, rel, at + len, create)) < 0)
				return fd;
		}
		at += len + (rel[at + len] == '/');
	}
	AFTER_WALK(root, rel);
	return fd;
}

/* The cache root of a repo folder, and the repo folder's name below it. */
static int split_repo(const char *repo_dir, char **root, const char **name)
{
	const char *slash = strrchr(repo_dir, '/');

	*name = slash ? slash + 1 : repo_dir;
	*root = slash ? strndup(repo_dir, slash == repo_dir ? 1 : (size_t)(slash - repo_dir))
		      : strdup(".");
	return *root ? 0 : kernels__error_oom();
}

/* huggingface_hub 2.x tags the cache root on every download so that
 * backup tools (tar --exclude-caches, borg, restic) skip what can be
 * fetched again: the same here. Best effort, as there: a cache that
 * cannot take it still takes the download. */
void kernels__cache_tag(const kernels__config *cfg)
{
	static const char tag[] = "Signature: 8a477f597d28d172789f06886806bc55\n"
				  "# This file is a cache directory tag created by libkernels.\n"
				  "# For information about cache directory tags, see:\n"
				  "#\thttps://bford.info/cachedir/\n";
	int dfd = open(cfg->cache_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return;
	if (faccessat(dfd, "CACHEDIR.TAG", F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
		kernels__write_atomic_at(dfd, "CACHEDIR.TAG", "CACHEDIR.TAG", tag, sizeof(tag) - 1, -1, 0);
	close(dfd);
	kernels_error_clear();
}

int kernels__cache_repo_dir_open(const char *repo_dir, const char *sub, int create)
{
	const char *name;
	char *root, *rel;
	int fd;

	if (split_repo(repo_dir, &root, &name) < 0)
		return KERNELS_ENOMEM;
	rel = sub && *sub ? kernels__sprintf("%s/%s", name, sub) : kernels__strdup(name);
	fd = rel ? kernels__cache_dir_open(root, rel, create) : KERNELS_ENOMEM;
	free(root);
	free(rel);
	return fd;
}

int kernels__cache_mkdirs(const char *repo_dir, const char *sub)
{
	int fd = kernels__cache_repo_dir_open(repo_dir, sub, 1);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/* The folder of `path` below `repo_dir`, walked and made without following
 * links; *leaf points at the file's name in `path`. */
static int write_dir_open(const char *repo_dir, const char *path, const char **leaf)
{
	size_t n = strlen(repo_dir);
	const char *slash = strrchr(path, '/');
	char *sub;
	int fd;

	if (strncmp(path, repo_dir, n) || path[n] != '/' || !slash || slash < path + n)
		return kernels__error(KERNELS_EINVAL, "%s is not in the repo folder %s", path, repo_dir);
	if (!(sub = strndup(path + n + 1, slash > path + n ? (size_t)(slash - path - n - 1) : 0)))
		return KERNELS_ENOMEM;
	fd = kernels__cache_repo_dir_open(repo_dir, sub, 1);
	free(sub);
	*leaf = slash + 1;
	return fd;
}

int kernels__cache_write(const char *repo_dir, const char *path, const void *data, size_t len, unsigned int flags)
{
	const char *leaf;
	int fd, rc;

	/* Written through the walked folder's descriptor, not by path: a
	 * folder swapped for a link after the walk is not followed. */
	if ((fd = write_dir_open(repo_dir, path, &leaf)) < 0)
		return fd;
	rc = kernels__write_atomic_at(fd, leaf, path, data, len, -1, flags);
	close(fd);
	return rc;
}

int kernels__cache_write_later(kernels__write_later **later, const char *repo_dir, const char *path,
			       const void *data, size_t len, unsigned int flags, const char *what)
{
	const char *leaf;
	int fd;

	if (!later)
		return kernels__cache_write(repo_dir, path, data, len, flags);
	if ((fd = write_dir_open(repo_dir, path, &leaf)) < 0)
		return fd;
	return kernels__write_atomic_later(later, fd, leaf, path, data, len, -1, flags, what);
}

/* The debug line a record written later leaves when it could not be. */
static void settle_failed(void *payload, const char *what, const char *message)
{
	kernels__log(payload, KERNELS_LOG_DEBUG, "cannot write %s: %s", what, message);
}

void kernels__cache_settle(const kernels__config *cfg, kernels__write_later **later)
{
	kernels__write_later_join(later, settle_failed, (void *)cfg);
}

/* The folders of a repo the guard looks at before any write or load;
 * deeper ones (snapshots/{commit}/..., .no_exist/{commit}/...) are walked
 * by each write (kernels__cache_dir_open). */
int kernels__cache_guard(const kernels__config *cfg, kernels__repo_type type, const char *repo_id)
{
	static const char *const subs[] = { "blobs", "snapshots", "refs", ".libkernels", ".no_exist" };
	char *name = kernels__repo_cache_name(type, repo_id), *rel = NULL, *shown;
	struct stat st;
	size_t i;
	int fd, rc = 0;

	if (!name)
		return KERNELS_ENOMEM;
	if ((fd = kernels__cache_dir_open(cfg->cache_dir, name, 0)) >= 0) {
		for (i = 0; rc == 0 && i < sizeof(subs) / sizeof(subs[0]); i++) {
			if (fstatat(fd, subs[i], &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISDIR(st.st_mode))
				continue;
			shown = kernels__sprintf("%s/%s/%s", cfg->cache_dir, name, subs[i]);
			rc = shown ? refuse_at(fd, subs[i], shown) : KERNELS_ENOMEM;
			free(shown);
		}
		close(fd);
	} else if (fd != KERNELS_ENOTFOUND) {
		rc = fd;
	}
	if (rc == 0 && !(rel = kernels__sprintf(".locks/%s", name)))
		rc = KERNELS_ENOMEM;
	if (rc == 0 && (fd = kernels__cache_dir_open(cfg->cache_dir, rel, 0)) >= 0)
		close(fd);
	else if (rc == 0 && fd != KERNELS_ENOTFOUND)
		rc = fd;
	if (rc == 0)
		kernels_error_clear();
	free(rel);
	free(name);
	return rc;
}

/* Whether the repo folder `dir` (a real folder) holds what resolving or
 * fetching the repo under its form leaves: refs/ or snapshots/. A record
 * alone (the trust verdict, written as soon as the Hub gives it, before
 * anything of the repo is fetched) proves no form: a call refused after
 * it, on a Hub that lied about the form, would have named it for good. */
static int holds_repo(const char *dir)
{
	char *refs = kernels__sprintf("%s/refs", dir), *snaps = kernels__sprintf("%s/snapshots", dir);
	struct stat st;
	int yes = (refs && lstat(refs, &st) == 0 && S_ISDIR(st.st_mode)) ||
		  (snaps && lstat(snaps, &st) == 0 && S_ISDIR(st.st_mode));

	free(refs);
	free(snaps);
	return yes;
}

int kernels__cache_repo_type(const kernels__config *cfg, const char *repo_id, kernels__repo_type *type)
{
	char *k = kernels__cache_repo_dir(cfg, KERNELS__REPO_KERNEL, repo_id);
	char *m = kernels__cache_repo_dir(cfg, KERNELS__REPO_MODEL, repo_id);
	struct stat st;
	int rc = 0;

	*type = KERNELS__REPO_KERNEL;
	if (!k || !m)
		rc = kernels__error_oom();
	else if (lstat(k, &st) == 0 && (!S_ISDIR(st.st_mode) || holds_repo(k)))
		rc = 1; /* not a folder: the cache guard refuses it */
	else if (lstat(m, &st) == 0 && S_ISDIR(st.st_mode) && holds_repo(m))
		rc = 1, *type = KERNELS__REPO_MODEL;
	free(k);
	free(m);
	return rc;
}

int kernels_cache_path(char **out, const char *repo_id, const kernels_options *opts)
{
	kernels__config cfg;
	int rc;

	if (!out)
		return kernels__error(KERNELS_EINVAL, "kernels_cache_path: out is NULL");
	*out = NULL;
	if (repo_id && (rc = kernels__repo_id_check(repo_id)) < 0)
		return rc;
	if ((rc = kernels__config_load(&cfg, opts)) < 0)
		return rc;
	if (!repo_id) {
		*out = kernels__strdup(cfg.cache_dir);
	} else {
		kernels__repo_type type;
		if (kernels__cache_repo_type(&cfg, repo_id, &type) >= 0)
			*out = kernels__cache_repo_dir(&cfg, type, repo_id);
	}
	kernels__config_free(&cfg);
	return *out ? 0 : KERNELS_ENOMEM;
}

int kernels__is_etag(const char *s)
{
	return kernels__is_hex(s, 40, KERNELS__HEX_LOWER) || kernels__is_hex(s, 64, KERNELS__HEX_LOWER);
}

char *kernels__cache_link_target(const char *path, const char *etag)
{
	kernels__buf b = { 0 };
	const char *p;
	int rc = kernels__buf_puts(&b, "../../");   /* out of {commit}/ and snapshots/ */

	for (p = path; rc == 0 && (p = strchr(p, '/')); p++)
		rc = kernels__buf_puts(&b, "../");
	if (rc == 0)
		rc = kernels__buf_printf(&b, "blobs/%s", etag);
	if (rc < 0) {
		kernels__buf_free(&b);
		return NULL;
	}
	return kernels__buf_detach(&b);
}

static int is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int kernels__cache_find_snapshot(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
				 const char *commit)
{
	char *dir = kernels__cache_repo_dir(cfg, type, repo_id);
	char *snap = dir ? kernels__sprintf("%s/snapshots/%s", dir, commit) : NULL;
	int found = snap && is_dir(snap);

	free(dir);
	free(snap);
	if (found)
		return 0;
	return kernels__error(KERNELS_EOFFLINE,
			      "offline: %s at commit %s is not in the cache %s; download it while online "
			      "(libkernels download, or %s) or point KERNELS_CACHE at a cache that has it", repo_id,
			      commit, cfg->cache_dir, kernels__config_online_hint(cfg));
}

int kernels__cache_variant_fetched(const char *folder)
{
	DIR *d = opendir(folder);
	struct dirent *e;
	int others = 0;

	while (d && !others && (e = readdir(d)))
		others = strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "metadata.json");
	if (d)
		closedir(d);
	return others;
}

/* {repo}/snapshots/{commit}/build (malloc'ed; NULL: out of memory). */
static char *build_dir(const kernels__config *cfg, kernels__repo_type type, const char *repo_id, const char *commit)
{
	char *dir = kernels__cache_repo_dir(cfg, type, repo_id);
	char *build = dir ? kernels__sprintf("%s/snapshots/%s/build", dir, commit) : NULL;

	free(dir);
	return build;
}

/* Keeps what was read of folder `name`; out of memory it is not kept, and
 * so not known. */
static void seen_add(kernels__cache_seen *s, const char *name, int fetched)
{
	if (fetched)
		s->first = kernels__strdup(name);
	else if (KERNELS__ARRAY_GROW(s->bare, s->cap_bare, s->n_bare) == 0 && (s->bare[s->n_bare] = kernels__strdup(name)))
		s->n_bare++;
}

int kernels__cache_commit_fetched(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
				  const char *commit, kernels__cache_seen *seen)
{
	char *build = build_dir(cfg, type, repo_id, commit), *v;
	struct dirent *e;
	DIR *d = NULL;
	int fetched = 0, skipped = 0;

	if (build && !(d = opendir(build)))
		fetched = errno != ENOENT; /* unreadable: do not guess */
	while (d && !fetched && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (!(v = kernels__sprintf("%s/%s", build, e->d_name))) {
			skipped = 1;
			continue;
		}
		fetched = kernels__cache_variant_fetched(v);
		free(v);
		seen_add(seen, e->d_name, fetched);
	}
	seen->whole = build && !fetched && !skipped;
	if (d)
		closedir(d);
	free(build);
	return fetched || !build;
}

/* A variant's name never starts with '.' (kernels__variant_resolve chooses
 * none such), which kernels__cache_commit_fetched passes over. */
int kernels__cache_seen_fetched(const kernels__cache_seen *seen, const char *variant, const char *folder)
{
	size_t i;

	if (seen->first && !strcmp(seen->first, variant))
		return 1;
	for (i = 0; i < seen->n_bare; i++)
		if (!strcmp(seen->bare[i], variant))
			return 0;
	return !seen->whole && kernels__cache_variant_fetched(folder);
}

void kernels__cache_seen_clear(kernels__cache_seen *seen)
{
	free(seen->first);
	kernels__strings_free(seen->bare, seen->n_bare);
	memset(seen, 0, sizeof(*seen));
}

int kernels__cache_variants_fetched(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
				    const char *commit, const char *const *variants, size_t n)
{
	char *build = build_dir(cfg, type, repo_id, commit), *v;
	size_t i;
	int fetched = 1;

	for (i = 0; build && fetched && i < n; i++) {
		if (!(v = kernels__sprintf("%s/%s", build, variants[i])))
			break;
		fetched = kernels__cache_variant_fetched(v);
		free(v);
	}
	free(build);
	return fetched;
}

/* 1 when `path` up to `end` ends in a repo folder's name,
 * {kernels|models}--{org}--{name}. */
static int repo_folder_before(const char *path, const char *end)
{
	static const kernels__repo_type types[] = { KERNELS__REPO_KERNEL, KERNELS__REPO_MODEL };
	const char *base = end;
	size_t i, n;

	while (base > path && base[-1] != '/')
		base--;
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		n = strlen(kernels__repo_api_name(types[i]));
		if (end - base > (ptrdiff_t)n + 2 && !strncmp(base, kernels__repo_api_name(types[i]), n) &&
		    !strncmp(base + n, "--", 2))
			return 1;
	}
	return 0;
}

size_t kernels__cache_repo_len(const char *path)
{
	const char *at;

	for (at = path; (at = strstr(at, "/snapshots/")); at++)
		if (at > path && at[11] && at[11] != '/' && strchr(at + 11, '/') && repo_folder_before(path, at))
			return (size_t)(at - path);
	return 0;
}

char *kernels__cache_repo_of(const char *variant_dir)
{
	char *real = realpath(variant_dir, NULL);
	size_t n = real ? kernels__cache_repo_len(real) : 0;

	if (!n) {
		free(real);
		return NULL;
	}
	real[n] = '\0';
	return real;
}

/* ---- locks ---------------------------------------------------------------------- */

/* The folder of a lock file, {root}/.locks/{repo folder}/{file}, walked
 * from the cache root without following links and made where missing;
 * *leaf points at {file}. */
static int lock_dir_open(const char *lock_path, const char **leaf)
{
	const char *end = lock_path + strlen(lock_path), *s[3];
	char *root, *rel;
	int i, fd;

	for (i = 0; i < 3; i++) {
		s[i] = memrchr(lock_path, '/', (size_t)(end - lock_path));
		if (!s[i])
			return kernels__error(KERNELS_EINVAL, "%s is not a lock file of the cache", lock_path);
		end = s[i];
	}
	*leaf = s[0] + 1;
	root = strndup(lock_path, s[2] == lock_path ? 1 : (size_t)(s[2] - lock_path));
	rel = strndup(s[2] + 1, (size_t)(s[0] - s[2] - 1));
	fd = root && rel ? kernels__cache_dir_open(root, rel, 1) : kernels__error_oom();
	free(root);
	free(rel);
	return fd;
}

/* A lock file is a regular file. Anything else planted there is refused
 * before a lock is taken on it: a fifo would hold a read-only open until
 * a writer came (hence O_NONBLOCK on every open, which flock ignores). */
static int lock_file_check(int fd, const char *lock_path)
{
	struct stat st;

	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		return fd;
	close(fd);
	return kernels__error(KERNELS_EUNSAFE, "the lock file %s is not a regular file: libkernels took no lock "
			      "on it; remove it", lock_path);
}

/* Opens (creating it and its folder) a lock file: the descriptor, or an
 * error. *unwritable is set when neither could be made for lack of rights
 * or a read-only file system. A link planted at the lock file is not
 * followed (O_NOFOLLOW): nothing is created where it points. */
static int lock_open(const char *lock_path, int *unwritable)
{
	const int flags = O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
	const char *leaf = NULL;
	int dfd, fd = -1, err;

	*unwritable = 0;
	if ((dfd = lock_dir_open(lock_path, &leaf)) < 0)
		return dfd; /* the folder could not be made, or is a link: that message says why */
	fd = openat(dfd, leaf, O_RDWR | O_CREAT | flags, 0666);
	err = errno;
	/* A lock file another user made is opened read-only; when there is
	 * none, the first failure is the one to report. */
	if (fd < 0 && (err == EACCES || err == EPERM || err == EROFS) &&
	    (fd = openat(dfd, leaf, O_RDONLY | flags)) < 0 && errno != ENOENT)
		err = errno;
	close(dfd);
	if (fd >= 0)
		return lock_file_check(fd, lock_path);
	*unwritable = err == EACCES || err == EPERM || err == EROFS;
	if (err == ELOOP)
		return kernels__error(KERNELS_EUNSAFE, "the lock file %s is a symbolic link: libkernels wrote "
				      "nothing through it; remove it", lock_path);
	return kernels__error(KERNELS_EIO, "cannot open the lock file %s: %s; %s", lock_path, strerror(err),
			      kernels__write_advice(err, 1, "make the cache's .locks folder writable for this user "
						    "(shared caches: group-writable) or use a cache of your own "
						    "(KERNELS_CACHE)"));
}

int kernels__cache_lock_try(const char *lock_path, kernels__cache_lock *lock)
{
	int fd, unwritable;

	lock->fd = -1;
	if ((fd = lock_open(lock_path, &unwritable)) < 0)
		return fd;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		close(fd);
		if (e == EWOULDBLOCK || e == EINTR)
			return 1;
		return kernels__error(KERNELS_EIO, "cannot lock %s: %s", lock_path, strerror(e));
	}
	lock->fd = fd;
	return 0;
}

/* A removal deletes the repo lock's file with the lock folder, while
 * holding it: a lock taken on a file that is no longer at its path guards
 * nothing, so it is given up and taken again on the file there now. */
int kernels__cache_repo_lock(const kernels__config *cfg, kernels__repo_type type, const char *repo_id, int op,
			     kernels__cache_lock *lock)
{
	char *name = kernels__repo_cache_name(type, repo_id), *path;
	int fd, rc = 0, unwritable;

	lock->fd = -1;
	path = name ? kernels__sprintf("%s/.locks/%s/" KERNELS__REPO_LOCK, cfg->cache_dir, name) : NULL;
	free(name);
	if (!path)
		return KERNELS_ENOMEM;
	for (;;) {
		struct stat held, there;
		if ((fd = lock_open(path, &unwritable)) < 0) {
			rc = unwritable ? 2 : fd;
			break;
		}
		if (flock(fd, op) < 0) {
			int e = errno;
			close(fd);
			if (e == EINTR)
				continue;
			rc = e == EWOULDBLOCK ? 1 : kernels__error(KERNELS_EIO, "cannot lock %s: %s", path,
								   strerror(e));
			break;
		}
		if (fstat(fd, &held) == 0 && stat(path, &there) == 0 && held.st_dev == there.st_dev &&
		    held.st_ino == there.st_ino) {
			lock->fd = fd;
			break;
		}
		close(fd);
	}
	free(path);
	return rc;
}

void kernels__cache_unlock(kernels__cache_lock *lock)
{
	if (lock->fd >= 0) {
		flock(lock->fd, LOCK_UN);
		close(lock->fd);
	}
	lock->fd = -1;
}

/* ---- blobs and links ---------------------------------------------------------- */

/* huggingface_hub marks its store with a file holding the layout's
 * version; without it `blobs/` at the cache root is nobody's store. */
static int shared_store_marked(const char *root, size_t n)
{
	char *marker = kernels__sprintf("%.*s/blobs/.huggingface-shared-blobs", (int)n, root), *text = NULL;
	size_t len = 0;
	int ok = marker && kernels__read_file(marker, 16, KERNELS__READ_NOFOLLOW, &text, &len, NULL) == 0 &&
		 len == 2 && !memcmp(text, "1\n", 2);

	free(text);
	free(marker);
	return ok;
}

int kernels__cache_shared_blob(const char *repo, const char *path)
{
	static const char hex[] = "0123456789abcdef";
	const char *slash = strrchr(repo, '/'), *p;
	size_t n = slash ? (size_t)(slash - repo) : 0;

	if (!slash || strncmp(path, repo, n) || strncmp(path + n, "/blobs/", 7))
		return 0;
	p = path + n + 7;
	return strlen(p) == 67 && strspn(p, hex) == 2 && p[2] == '/' && strspn(p + 3, hex) == 64 &&
	       !strncmp(p, p + 3, 2) && shared_store_marked(repo, n);
}

char *kernels__cache_blob_path(const char *repo_dir, const char *etag)
{
	char *blob = kernels__sprintf("%s/blobs/%s", repo_dir, etag), real[PATH_MAX], repo[PATH_MAX];
	struct stat st;

	if (!blob || lstat(blob, &st) < 0 || !S_ISLNK(st.st_mode) || !kernels__realpath(blob, real, NULL) ||
	    !kernels__realpath(repo_dir, repo, NULL) || !kernels__cache_shared_blob(repo, real))
		return blob;
	free(blob);
	return kernels__strdup(real);
}

int kernels__cache_blob_ok(const char *repo_dir, const char *etag, long long size)
{
	char *blob = kernels__sprintf("%s/blobs/%s", repo_dir, etag);
	struct stat st;
	int ok;

	if (!blob)
		return 0;
	ok = stat(blob, &st) == 0 && S_ISREG(st.st_mode) && (size < 0 || st.st_size == size);
	free(blob);
	return ok;
}

int kernels__cache_link_ok(const char *repo_dir, const char *commit, const char *path, const char *etag,
			   long long size)
{
	char *snap = kernels__sprintf("%s/snapshots/%s/%s", repo_dir, commit, path);
	char *target = kernels__cache_link_target(path, etag), buf[PATH_MAX];
	ssize_t n;
	int ok = 0;

	if (snap && target && (n = readlink(snap, buf, sizeof(buf) - 1)) > 0) {
		buf[n] = '\0';
		ok = !strcmp(buf, target) && kernels__cache_blob_ok(repo_dir, etag, size);
	}
	free(snap);
	free(target);
	return ok;
}

int kernels__cache_snapshot_open(const char *repo_dir, const char *commit, const char *path, long long size,
			      struct stat *st)
{
	const char *leaf = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	char *sub = kernels__sprintf("snapshots/%s/%.*s", commit, (int)(leaf - path), path);
	int dfd = sub ? kernels__cache_repo_dir_open(repo_dir, sub, 0) : -1, fd = -1;

	free(sub);
	if (dfd >= 0)
		fd = openat(dfd, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (dfd >= 0)
		close(dfd);
	if (fd >= 0 && (fstat(fd, st) < 0 || !S_ISREG(st->st_mode) || st->st_size != size)) {
		close(fd);
		fd = -1;
	}
	kernels_error_clear();
	return fd;
}

int kernels__cache_file_ok(const char *repo_dir, const char *commit, const char *path, const char *etag,
			   long long size)
{
	struct stat st;
	char hex[65];
	int fd = kernels__cache_snapshot_open(repo_dir, commit, path, size, &st), ok;

	if (fd < 0)
		return 0;
	ok = kernels__hash_blob_fd(fd, strlen(etag) == 64 ? KERNELS__BLOB_SHA256 : KERNELS__BLOB_GIT_SHA1, hex,
				   &st) == 0 && !strcmp(hex, etag);
	close(fd);
	kernels_error_clear();
	return ok;
}

/* blobs/{etag} copied whole into the temporary `tmp` beside it. */
static int copy_blob(const char *repo_dir, int bfd, const char *etag, const char *tmp)
{
	char *blob = kernels__cache_blob_path(repo_dir, etag);
	int src = blob ? open(blob, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1, dst = -1, rc = 0;
	struct stat st;

	if (blob && src < 0 && errno == ENOENT)
		rc = kernels__error(KERNELS_EIO, "%s is gone: another process writing this cache without symlinks "
				    "(HF_HUB_DISABLE_SYMLINKS) moved it into its own snapshot; call again to download "
				    "it", blob);
	else if (src < 0 || fstat(src, &st) < 0 || !S_ISREG(st.st_mode) ||
		 (dst = openat(bfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666)) < 0 ||
		 kernels__copy_fd(src, dst, st.st_size) < 0 || fsync(dst) < 0)
		rc = blob ? kernels__error(KERNELS_EIO, "cannot copy %s into the snapshot: %s; %s", blob,
					   strerror(errno), kernels__write_advice(errno, 1, "check that the cache is "
					   "writable and has room")) : KERNELS_ENOMEM;
	if (src >= 0)
		close(src);
	if (dst >= 0)
		close(dst);
	if (rc < 0 && dst >= 0)
		unlinkat(bfd, tmp, 0);
	free(blob);
	return rc;
}

int kernels__cache_place(const char *repo_dir, const char *commit, const char *path, const char *etag, int move)
{
	const char *leaf = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	char *sub = kernels__sprintf("snapshots/%s/%.*s", commit, (int)(leaf - path), path), *base = NULL, *tmp = NULL;
	int sfd = -1, bfd = -1, rc = sub && (base = kernels__sprintf("%s.file", etag)) && (tmp = kernels__tmp_name(base))
					 ? 0 : KERNELS_ENOMEM;

	/* Folders walked from the cache root without following links, as for a link. */
	if (rc == 0 && ((sfd = rc = kernels__cache_repo_dir_open(repo_dir, sub, 1)) >= 0 &&
			(bfd = rc = kernels__cache_repo_dir_open(repo_dir, "blobs", 1)) >= 0))
		rc = move ? 0 : copy_blob(repo_dir, bfd, etag, tmp);
	if (rc >= 0 && renameat(bfd, move ? etag : tmp, sfd, leaf) < 0) {
		rc = kernels__error(KERNELS_EIO, "cannot put blobs/%s at snapshots/%s/%s in %s: %s; %s", etag, commit,
				    path, repo_dir, strerror(errno),
				    kernels__write_advice(errno, 1, "check that the cache is writable"));
		if (!move)
			unlinkat(bfd, tmp, 0);
	}
	if (sfd >= 0)
		close(sfd);
	if (bfd >= 0)
		close(bfd);
	free(sub);
	free(base);
	free(tmp);
	return rc < 0 ? rc : 0;
}

static int link_failed(const char *snap, const char *target)
{
	return kernels__error(KERNELS_EIO, "cannot link %s to %s: %s; %s", snap, target, strerror(errno),
			      kernels__write_advice(errno, 1, "check that the cache is writable"));
}

int kernels__cache_link(const char *repo_dir, const char *commit, const char *path, const char *etag)
{
	char *snap = kernels__sprintf("%s/snapshots/%s/%s", repo_dir, commit, path);
	char *target = kernels__cache_link_target(path, etag), *sub = NULL, *base = NULL, *tmp = NULL;
	const char *leaf = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	char buf[PATH_MAX];
	int sfd = -1, bfd = -1, rc = 0;
	ssize_t n;

	/* The temporary link lives in blobs/, not beside the final one: a
	 * reader walking the variant folder meanwhile (another thread verifying
	 * it) must never see a stray name there. */
	if (!snap || !target || !(sub = kernels__sprintf("snapshots/%s/%.*s", commit, (int)(leaf - path), path)) ||
	    !(base = kernels__sprintf("%s.link", etag)) || !(tmp = kernels__tmp_name(base))) {
		rc = KERNELS_ENOMEM;
		goto out;
	}
	if ((n = readlink(snap, buf, sizeof(buf) - 1)) > 0 && (buf[n] = '\0', !strcmp(buf, target)))
		goto out; /* already there, as another caller linked it */
	/* Every folder from the cache root down to the link's, and blobs/,
	 * opened without following links: a link planted in a shared cache
	 * must not redirect where links are written. huggingface_hub never
	 * puts folder links in a snapshot, so nothing valid is refused. */
	if ((sfd = rc = kernels__cache_repo_dir_open(repo_dir, sub, 1)) < 0 ||
	    (bfd = rc = kernels__cache_repo_dir_open(repo_dir, "blobs", 1)) < 0)
		goto out;
	rc = 0;
	if (symlinkat(target, bfd, tmp) < 0) {
		/* A filesystem without links: a copy, as huggingface_hub makes. */
		rc = errno == EPERM || errno == EOPNOTSUPP || errno == ENOSYS
			     ? kernels__cache_place(repo_dir, commit, path, etag, 0) : link_failed(snap, target);
	} else if (renameat(bfd, tmp, sfd, leaf) < 0) {
		rc = link_failed(snap, target);
		unlinkat(bfd, tmp, 0);
	}
out:
	if (sfd >= 0)
		close(sfd);
	if (bfd >= 0)
		close(bfd);
	free(snap);
	free(target);
	free(sub);
	free(base);
	free(tmp);
	return rc;
}

void kernels__cache_sync_folder(const char *dir, const char *sub)
{
	char *path = sub ? kernels__sprintf("%s/%s", dir, sub) : kernels__strdup(dir);
	int dfd;

	if (path && (dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		fsync(dfd);
		close(dfd);
	}
	free(path);
	kernels_error_clear();
}

int kernels__cache_publish_at(int fd, int dirfd, const char *from, const char *to, const char *shown,
			      struct stat *st, int sync_folder)
{
	int err, dfd;

	if (!(sync_folder & KERNELS__PUBLISH_SYNCED) && fsync(fd) < 0) {
		err = errno;
		close(fd);
		return kernels__error(KERNELS_EIO, "cannot flush %s (%s) to disk: %s; %s", shown, from, strerror(err),
				      kernels__write_advice(err, 1, "check free space"));
	}
	if (renameat(dirfd, from, dirfd, to) < 0) {
		err = errno;
		close(fd);
		return kernels__error(KERNELS_EIO, "cannot move %s to %s: %s; %s", from, shown, strerror(err),
				      kernels__write_advice(err, 1, "check that the cache is writable"));
	}
	/* The identity after the rename, which moves the change time. */
	if (st && fstat(fd, st) < 0)
		memset(st, 0, sizeof(*st));
	/* close() releases the descriptor even when it fails: never close twice. */
	if (close(fd) < 0)
		return kernels__error(KERNELS_EIO, "cannot flush %s to disk: %s; %s", shown, strerror(errno),
				      kernels__write_advice(errno, 1, "check free space"));
	/* The rename itself must survive a crash, or the link may point at nothing. */
	sync_folder &= KERNELS__PUBLISH_SYNC_FOLDER;
	if (sync_folder && dirfd == AT_FDCWD) {
		kernels__fsync_parent(to);
	} else if (sync_folder && (dfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

int kernels__cache_publish(int fd, const char *from, const char *to, struct stat *st, int sync_folder)
{
	return kernels__cache_publish_at(fd, AT_FDCWD, from, to, to, st, sync_folder);
}

/* ---- offline checks ------------------------------------------------------------ */

/* `others`: counts the entries besides metadata.json. */
static int check_dir(const char *dir, const char *top, const char *what, size_t *others)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int rc = 0;

	if (!d)
		return kernels__error(KERNELS_EOFFLINE, "offline: cannot read %s (%s); download %s while online",
				      dir, strerror(errno), what);
	while (rc == 0 && (de = readdir(d))) {
		char *p;
		struct stat lst, st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		*others += strcmp(de->d_name, "metadata.json") != 0;
		if (!(p = kernels__sprintf("%s/%s", dir, de->d_name))) {
			rc = KERNELS_ENOMEM;
			break;
		}
		if (lstat(p, &lst) < 0)
			rc = kernels__error(KERNELS_EOFFLINE, "offline: %s vanished; download %s while online", p,
					    what);
		else if (S_ISDIR(lst.st_mode))
			rc = check_dir(p, top, what, others);
		else if (stat(p, &st) < 0 || !S_ISREG(st.st_mode))
			rc = kernels__error(KERNELS_EOFFLINE,
					    "offline: %s is not in the cache (its link points at a missing blob); "
					    "download %s while online",
					    p + strlen(top) + 1, what);
		free(p);
	}
	closedir(d);
	return rc;
}

int kernels__cache_check_tree(const char *dir, const char *what, int *only_metadata)
{
	size_t others = 0;
	int rc = check_dir(dir, dir, what, &others);

	*only_metadata = others == 0;
	return rc;
}
