/* The cache layout shared with huggingface_hub. Every change a reader could
 * observe is a rename: blobs from .incomplete, links from a temporary name,
 * refs from a temporary file, so a concurrent reader sees old or new, never
 * half of either. */
#include "cache.h"
#include "kernels/download.h"
#include "error.h"
#include "hub.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

/* One folder the cache owns must be a real folder, or absent. */
static int guard_one(const char *path, const char *what)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 :
			kernels__error(KERNELS_EIO, "cannot inspect %s: %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return 0;
	return kernels__error(KERNELS_EUNSAFE,
			      "%s is %s, not a folder; libkernels writes and loads nothing through it (%s). Remove "
			      "it, or point the cache (HF_HUB_CACHE/KERNELS_CACHE) at a folder of your own",
			      path, S_ISLNK(st.st_mode) ? "a symbolic link" : "not a folder", what);
}

int kernels__cache_guard(const kernels__config *cfg, kernels__repo_type type, const char *repo_id)
{
	static const char *const subs[] = { "", "/blobs", "/snapshots", "/refs", "/.libkernels" };
	char *name = kernels__repo_cache_name(type, repo_id), *path = NULL;
	size_t i;
	int rc = name ? 0 : KERNELS_ENOMEM;

	for (i = 0; rc == 0 && i < sizeof(subs) / sizeof(subs[0]); i++) {
		if (!(path = kernels__sprintf("%s/%s%s", cfg->cache_dir, name, subs[i])))
			rc = KERNELS_ENOMEM;
		else
			rc = guard_one(path, "a planted link could send downloads, or load code, from outside the "
				       "cache");
		free(path);
	}
	if (rc == 0 && (path = kernels__sprintf("%s/.locks", cfg->cache_dir))) {
		rc = guard_one(path, "lock files would land outside the cache");
		free(path);
		if (rc == 0 && (path = kernels__sprintf("%s/.locks/%s", cfg->cache_dir, name))) {
			rc = guard_one(path, "lock files would land outside the cache");
			free(path);
		}
	}
	free(name);
	return rc;
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
	else if (lstat(k, &st) == 0)
		rc = 1;
	else if (lstat(m, &st) == 0 && S_ISDIR(st.st_mode))
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

void kernels_cache_path_free(char *path)
{
	free(path);
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
			      "(libkernels download, or unset HF_HUB_OFFLINE) or point KERNELS_CACHE at a cache that "
			      "has it", repo_id, commit, cfg->cache_dir);
}

char *kernels__cache_repo_of(const char *variant_dir)
{
	static const kernels__repo_type types[] = { KERNELS__REPO_KERNEL, KERNELS__REPO_MODEL };
	char *real = realpath(variant_dir, NULL), *snap;
	const char *base;
	size_t i, n;

	if (!real || !(snap = strstr(real, "/snapshots/")) || snap == real) {
		free(real);
		return NULL;
	}
	*snap = '\0';
	base = strrchr(real, '/');
	base = base ? base + 1 : real;
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		n = strlen(kernels__repo_api_name(types[i]));
		if (!strncmp(base, kernels__repo_api_name(types[i]), n) && !strncmp(base + n, "--", 2))
			return real;
	}
	free(real);
	return NULL;
}

static char *parent_of(const char *path)
{
	char *p = kernels__strdup(path), *slash;

	if (p && (slash = strrchr(p, '/')))
		*slash = '\0';
	return p;
}

/* ---- locks ---------------------------------------------------------------------- */

/* Opens (creating it and its folder) a lock file: the descriptor, or an
 * error. *unwritable is set when neither could be made for lack of rights
 * or a read-only file system. */
static int lock_open(const char *lock_path, int *unwritable)
{
	char *dir = parent_of(lock_path);
	int fd, rc, err;

	*unwritable = 0;
	if (!dir)
		return KERNELS_ENOMEM;
	rc = kernels__mkdir_p(dir, 0777);
	free(dir);
	fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	err = errno;
	/* A lock file another user made is opened read-only; when there is
	 * none, the first failure is the one to report. */
	if (fd < 0 && (err == EACCES || err == EPERM || err == EROFS) &&
	    (fd = open(lock_path, O_RDONLY | O_CLOEXEC)) < 0 && errno != ENOENT)
		err = errno;
	if (fd >= 0)
		return fd;
	*unwritable = err == EACCES || err == EPERM || err == EROFS;
	if (rc < 0)
		return rc; /* the folder could not be made: that message says why */
	return kernels__error(KERNELS_EIO,
			      "cannot open the lock file %s: %s; make the cache's .locks folder writable for "
			      "this user (shared caches: group-writable) or use a cache of your own (KERNELS_CACHE)",
			      lock_path, strerror(err));
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

/* Creates `rel` (folders under `root`, '/'-separated) one component at a
 * time and refuses any component that is not a real folder: a symlink
 * planted in a shared cache must not redirect where links are written.
 * huggingface_hub never puts folder links in a snapshot, so nothing valid
 * is refused. */
static int mkdirs_nofollow(const char *root, const char *rel)
{
	char *p = kernels__sprintf("%s/%s", root, rel), *q;
	size_t skip = strlen(root) + 1;
	struct stat st;
	int rc = 0;

	if (!p)
		return KERNELS_ENOMEM;
	for (q = p + skip;; q++) {
		char c = *q;
		if (c != '/' && c != '\0')
			continue;
		*q = '\0';
		if (mkdir(p, 0777) < 0 && errno != EEXIST)
			rc = kernels__error(KERNELS_EIO,
					    "cannot create folder '%s': %s; check that the cache is writable", p,
					    strerror(errno));
		else if (lstat(p, &st) < 0 || !S_ISDIR(st.st_mode))
			rc = kernels__error(KERNELS_EUNSAFE, "'%s' in the snapshot is not a folder (a link or a file); "
					    "refusing to write through it; remove the snapshot folder and download "
					    "again", p);
		*q = c;
		if (rc < 0 || c == '\0')
			break;
	}
	free(p);
	return rc;
}

int kernels__cache_link(const char *repo_dir, const char *commit, const char *path, const char *etag)
{
	char *root = kernels__sprintf("%s/snapshots/%s", repo_dir, commit);
	char *snap = kernels__sprintf("%s/snapshots/%s/%s", repo_dir, commit, path);
	char *target = kernels__cache_link_target(path, etag), *dir = NULL, *tmp = NULL, *blob_tmp = NULL;
	char buf[PATH_MAX];
	ssize_t n;
	int rc = 0;

	/* The temporary link lives in blobs/, not beside the final one: a
	 * reader walking the variant folder meanwhile (another thread verifying
	 * it) must never see a stray name there. */
	if (!root || !snap || !target || !(dir = parent_of(path)) ||
	    !(blob_tmp = kernels__sprintf("%s/blobs/%s.link", repo_dir, etag)) ||
	    !(tmp = kernels__tmp_name(blob_tmp))) {
		rc = KERNELS_ENOMEM;
		goto out;
	}
	if ((n = readlink(snap, buf, sizeof(buf) - 1)) > 0 && (buf[n] = '\0', !strcmp(buf, target)))
		goto out; /* already there, as another caller linked it */
	if ((rc = kernels__mkdir_p(root, 0777)) < 0)
		goto out;
	if (strchr(path, '/') && (rc = mkdirs_nofollow(root, dir)) < 0)
		goto out;
	if (symlink(target, tmp) < 0 || rename(tmp, snap) < 0) {
		rc = kernels__error(KERNELS_EIO, "cannot link %s to %s: %s; check that the cache is writable", snap,
				    target, strerror(errno));
		unlink(tmp);
	}
out:
	free(root);
	free(snap);
	free(target);
	free(dir);
	free(tmp);
	free(blob_tmp);
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

int kernels__cache_publish(int fd, const char *from, const char *to, struct stat *st, int sync_folder)
{
	int err;

	if (fsync(fd) < 0) {
		err = errno;
		close(fd);
		return kernels__error(KERNELS_EIO, "cannot flush %s to disk: %s; check free space", from,
				      strerror(err));
	}
	if (rename(from, to) < 0) {
		err = errno;
		close(fd);
		return kernels__error(KERNELS_EIO, "cannot move %s to %s: %s", from, to, strerror(err));
	}
	/* The identity after the rename, which moves the change time. */
	if (st && fstat(fd, st) < 0)
		memset(st, 0, sizeof(*st));
	/* close() releases the descriptor even when it fails: never close twice. */
	if (close(fd) < 0)
		return kernels__error(KERNELS_EIO, "cannot flush %s to disk: %s; check free space", to,
				      strerror(errno));
	/* The rename itself must survive a crash, or the link may point at nothing. */
	if (sync_folder)
		kernels__fsync_parent(to);
	return 0;
}

/* ---- offline checks ------------------------------------------------------------ */

static int check_dir(const char *dir, const char *top, const char *what)
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
		if (!(p = kernels__sprintf("%s/%s", dir, de->d_name))) {
			rc = KERNELS_ENOMEM;
			break;
		}
		if (lstat(p, &lst) < 0)
			rc = kernels__error(KERNELS_EOFFLINE, "offline: %s vanished; download %s while online", p,
					    what);
		else if (S_ISDIR(lst.st_mode))
			rc = check_dir(p, top, what);
		else if (stat(p, &st) < 0 || !S_ISREG(st.st_mode))
			rc = kernels__error(KERNELS_EOFFLINE,
					    "offline: %s is not in the cache (its link points at a missing blob); "
					    "download %s while online, or unset HF_HUB_OFFLINE",
					    p + strlen(top) + 1, what);
		free(p);
	}
	closedir(d);
	return rc;
}

int kernels__cache_check_tree(const char *dir, const char *what)
{
	return check_dir(dir, dir, what);
}
