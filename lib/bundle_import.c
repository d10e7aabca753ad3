/* Importing a bundle: every byte is checked against the manifest as it is
 * read, into a staging folder inside each repo's cache folder
 * ({repo}/.libkernels/import.tmp-{pid}-{n}/, laid out as a repo folder:
 * blobs/, snapshots/{commit}/build/{variant}/ with the cache's own relative
 * links). Only when the whole archive has been read and every staged variant
 * verifies (signature mode, metadata digest) is anything published: blobs
 * renamed into blobs/, then each variant folder renamed into
 * snapshots/{commit}/build/ whole (its links keep their depth, so they
 * resolve the same there), then refs. A kill leaves a staging folder, which
 * no reader looks into and the next import removes. */
#include "bundle.h"
#include "layout.h"

#include <archive.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cache.h"
#include "config.h"
#include "error.h"
#include "hash.h"
#include "receipt.h"
#include "refs.h"
#include "signature.h"
#include "specifier.h"
#include "util.h"
#include "verify.h"

#define STAGE_PREFIX "import.tmp-"

typedef struct {
	kernels__repo_type type;
	const char *repo_id;
	char *dir, *stage; /* the repo folder; the staging folder, as messages name it */
	char *stage_at;    /* the staging folder as later steps reach it by path (stage_path) */
	const char *stage_name; /* the staging folder's name in .libkernels/ (in `stage`) */
	int lib_fd; /* {repo}/.libkernels/ as the cache walk opened it; or -1 */
	int stage_fd; /* the staging folder, locked while this import runs; or -1 */
	int stage_blobs; /* its blobs/, where blobs are staged relative to it; or -1 */
	kernels__cache_lock lock;
	int made_dir; /* this import created the repo folder */
} imp_repo;

typedef struct {
	const kernels__config *cfg;
	kernels_bundle *b;
	const char *name;
	imp_repo *repos;
	size_t nrepos, caprepos;
	size_t *repo_of;          /* per variant */
	unsigned char *present;   /* per variant: already whole in the cache */
	int fd;                   /* the blob being staged, or -1 */
	char *inc, *blob;
	kernels_bundle_import_stats st;
} importer;

/* ---- staging folders -------------------------------------------------------- */

/* Staging folders of imports that are over (killed, crashed). A live
 * import holds a lock on its folder for as long as it runs; the lock, not
 * the pid in the name, says so, since a process of another PID namespace
 * (a container sharing the cache) has a pid this one cannot see. */
static void remove_stale(int lib_fd)
{
	int dfd = openat(lib_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd;
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *de;

	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, STAGE_PREFIX, strlen(STAGE_PREFIX)))
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
			kernels__remove_tree_at(dirfd(d), de->d_name);
		if (fd >= 0)
			close(fd);
	}
	closedir(d);
}

/* Later steps reach the staging folder by path (links made in it, the
 * variant verified in it): through the walked descriptor of .libkernels/
 * in /proc/self/fd, a path no folder swapped for a link since the walk can
 * redirect. Where /proc is not mounted, the plain path, which must at
 * least still lead to the folder made here. */
static int stage_path(imp_repo *r)
{
	struct stat by_fd, by_path;

	r->stage_at = access("/proc/self/fd", X_OK) == 0
			      ? kernels__sprintf("/proc/self/fd/%d/%s", r->lib_fd, r->stage_name)
			      : kernels__strdup(r->stage);
	if (!r->stage_at)
		return KERNELS_ENOMEM;
	if (fstat(r->stage_fd, &by_fd) == 0 && stat(r->stage_at, &by_path) == 0 && by_fd.st_dev == by_path.st_dev &&
	    by_fd.st_ino == by_path.st_ino)
		return 0;
	return kernels__error(KERNELS_EUNSAFE, "%s/.libkernels was replaced (by a link?) while this import "
			      "created its staging folder in it: nothing was imported, and nothing was written "
			      "through it; check what else writes the cache, restore the folder, and import again",
			      r->dir);
}

/* The staging folder is made, locked and renamed through the descriptor
 * of .libkernels/ the cache walk opened (a folder swapped for a link after
 * the walk is not followed), under a name the reaper above does not look
 * at, then renamed to its own: never seen unlocked. */
static int stage_make(imp_repo *r, const char *libdir)
{
	char *base = kernels__sprintf("%s/import", libdir), *fresh = NULL;
	int rc = 0;

	if (!base || !(r->stage = kernels__tmp_name(base)) ||
	    !(fresh = kernels__sprintf("%s.new", r->stage_name = strrchr(r->stage, '/') + 1))) {
		free(base);
		return KERNELS_ENOMEM;
	}
	if (mkdirat(r->lib_fd, fresh, 0777) < 0 ||
	    (r->stage_fd = openat(r->lib_fd, fresh, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    flock(r->stage_fd, LOCK_EX | LOCK_NB) < 0 || renameat(r->lib_fd, fresh, r->lib_fd, r->stage_name) < 0)
		rc = kernels__error(KERNELS_EIO, "cannot create %s: %s; %s", r->stage, strerror(errno),
				    kernels__write_advice(errno, 1, "check that the cache is writable"));
	if (rc < 0)
		unlinkat(r->lib_fd, fresh, AT_REMOVEDIR);
	else
		rc = stage_path(r);
	free(fresh);
	free(base);
	return rc;
}

static int repo_begin(importer *im, imp_repo *r)
{
	char *libdir = NULL, *base = NULL;
	struct stat st;
	int rc = kernels__cache_guard(im->cfg, r->type, r->repo_id);

	r->made_dir = rc == 0 && lstat(r->dir, &st) < 0;
	if (rc == 0 && (rc = kernels__cache_repo_lock(im->cfg, r->type, r->repo_id, LOCK_SH, &r->lock)) == 2)
		rc = 0; /* no lock file can be made: the writes below say why */
	if (rc == 0 && !(libdir = kernels__sprintf("%s/.libkernels", r->dir)))
		rc = KERNELS_ENOMEM;
	if (rc == 0 && (r->lib_fd = kernels__cache_repo_dir_open(r->dir, ".libkernels", 1)) < 0)
		rc = r->lib_fd;
	if (rc == 0) {
		remove_stale(r->lib_fd);
		rc = stage_make(r, libdir); /* {libdir}/import.tmp-{pid}-{n} */
	}
	/* Blobs are staged relative to descriptors of the stage and its
	 * blobs/, not by path: a folder swapped for a link meanwhile is not
	 * followed. */
	if (rc == 0 && !(base = kernels__sprintf("%s/blobs", r->stage)))
		rc = KERNELS_ENOMEM;
	if (rc == 0 && (mkdirat(r->stage_fd, "blobs", 0777) < 0 ||
			(r->stage_blobs = openat(r->stage_fd, "blobs", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0))
		rc = kernels__error(KERNELS_EIO, "cannot create %s: %s; %s", base, strerror(errno),
				    kernels__write_advice(errno, 1, "check that the cache is writable"));
	free(base);
	free(libdir);
	return rc;
}

/* The staging folder goes; so do the folders this import made for nothing. */
static void repo_end(imp_repo *r)
{
	char *p;

	if (r->stage_name && r->lib_fd >= 0)
		kernels__remove_tree_at(r->lib_fd, r->stage_name);
	if (r->lib_fd >= 0)
		close(r->lib_fd);
	if (r->stage_blobs >= 0)
		close(r->stage_blobs);
	if (r->stage_fd >= 0)
		close(r->stage_fd);
	if (r->made_dir && (p = kernels__sprintf("%s/.libkernels", r->dir))) {
		rmdir(p);
		rmdir(r->dir);
		free(p);
	}
	kernels__cache_unlock(&r->lock);
	free(r->dir);
	free(r->stage);
	free(r->stage_at);
}

static int repo_add(importer *im, const kernels__bundle_variant *v, size_t *at)
{
	size_t i;

	for (i = 0; i < im->nrepos; i++)
		if (im->repos[i].type == v->type && !strcmp(im->repos[i].repo_id, v->repo_id)) {
			*at = i;
			return 0;
		}
	if (KERNELS__ARRAY_GROW(im->repos, im->caprepos, im->nrepos) < 0)
		return KERNELS_ENOMEM;
	memset(&im->repos[i], 0, sizeof(im->repos[i]));
	im->repos[i].lib_fd = im->repos[i].stage_fd = im->repos[i].stage_blobs = -1;
	im->repos[i].type = v->type;
	im->repos[i].repo_id = v->repo_id;
	im->repos[i].lock.fd = -1;
	if (!(im->repos[i].dir = kernels__cache_repo_dir(im->cfg, v->type, v->repo_id)))
		return KERNELS_ENOMEM;
	im->nrepos++;
	*at = i;
	return repo_begin(im, &im->repos[i]);
}

/* Whole in the cache already: every file linked as a download links it. */
static int variant_present(const imp_repo *r, const kernels_bundle *b, const kernels__bundle_variant *v)
{
	size_t i;

	for (i = 0; i < v->n; i++) {
		const kernels__bundle_entry *e = &b->files[v->first + i];
		char *rel = kernels__sprintf("build/%s/%s", v->name, e->f.path);
		int ok = rel && kernels__cache_link_ok(r->dir, v->commit, rel, e->f.etag, (long long)e->f.size);
		free(rel);
		if (!ok)
			return 0;
	}
	return 1;
}

static int plan(importer *im)
{
	size_t i, n = im->b->nvariants;
	int rc = 0;

	im->repo_of = calloc(n + 1, sizeof(*im->repo_of));
	im->present = calloc(n + 1, 1);
	if (!im->repo_of || !im->present)
		return kernels__error_oom();
	for (i = 0; rc == 0 && i < n; i++)
		if ((rc = repo_add(im, &im->b->variants[i], &im->repo_of[i])) == 0)
			im->present[i] = variant_present(&im->repos[im->repo_of[i]], im->b, &im->b->variants[i]);
	if (rc == 0) /* a probe's miss is no error; a failure keeps its reason */
		kernels_error_clear();
	return rc;
}

/* ---- room ------------------------------------------------------------------------ */

/* A blob to stage: the repo it goes to, and its entry. */
typedef struct {
	size_t repo;
	const kernels__bundle_entry *e;
} staged;

static int staged_order(const void *a, const void *b)
{
	const staged *x = a, *y = b;

	if (x->repo != y->repo)
		return x->repo < y->repo ? -1 : 1;
	return strcmp(x->e->f.etag, y->e->f.etag);
}

/* The bytes the staging folders take: each blob of a variant to import,
 * once per repo (staged from the bundle even where the cache has it). */
static int staged_bytes(const importer *im, unsigned long long *need)
{
	staged *s = malloc((im->b->nfiles + 1) * sizeof(*s));
	size_t i, j, n = 0;

	if (!s)
		return kernels__error_oom();
	for (i = 0; i < im->b->nvariants; i++)
		for (j = 0; !im->present[i] && j < im->b->variants[i].n; j++)
			s[n++] = (staged){ im->repo_of[i], &im->b->files[im->b->variants[i].first + j] };
	qsort(s, n, sizeof(*s), staged_order);
	for (*need = 0, i = 0; i < n; i++)
		if (!i || staged_order(&s[i - 1], &s[i]))
			*need += s[i].e->f.size;
	free(s);
	return 0;
}

/* Refused before a byte is staged where the cache's file system lacks the
 * room, as a download is (hub_fetch.c's disk check): staging would fill it,
 * for every process on it, and then fail anyway. */
static int room_check(const importer *im)
{
	unsigned long long need = 0, avail;
	struct statvfs vs;
	int rc;

	if (!im->nrepos || (rc = staged_bytes(im, &need)) < 0)
		return im->nrepos ? rc : 0;
	if (fstatvfs(im->repos[0].stage_fd, &vs) < 0)
		return 0; /* cannot tell: the writes say what they meet */
	avail = (unsigned long long)vs.f_bavail * vs.f_frsize;
	if (need <= avail)
		return 0;
	return kernels__error(KERNELS_EIO, "bundle %s needs %llu bytes in the cache %s but only %llu are free there; "
			      "nothing was imported: free some space there, or point HF_HUB_CACHE (KERNELS_CACHE) at "
			      "a larger disk", im->name, need, im->cfg->cache_dir, avail);
}

/* ---- entries into the staging folder ------------------------------------------ */

static int on_begin(void *payload, const kernels__bundle_entry *e)
{
	importer *im = payload;
	const imp_repo *r;
	struct stat st;

	im->fd = -1;
	if (e->variant == (size_t)-1 || im->present[e->variant])
		return 0; /* the lock is checked, not imported; a cached variant stays as it is */
	r = &im->repos[im->repo_of[e->variant]];
	free(im->blob);
	if (!(im->blob = kernels__sprintf("%s/blobs/%s", r->stage, e->f.etag)))
		return KERNELS_ENOMEM;
	if (fstatat(r->stage_blobs, e->f.etag, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return 0; /* the same bytes, staged for another file */
	/* A blob the cache has already is staged from the bundle too, never
	 * hard-linked from blobs/: a link changes the cached blob's change
	 * time, the identity its verification receipts record (receipt.h),
	 * and the next load would hash it again. publish_blob leaves it be. */
	free(im->inc);
	if (!(im->inc = kernels__sprintf("%s.incomplete", im->blob)))
		return KERNELS_ENOMEM;
	if ((im->fd = openat(r->stage_blobs, strrchr(im->inc, '/') + 1,
			     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666)) < 0)
		return kernels__error(KERNELS_EIO, "cannot create %s: %s; %s", im->inc, strerror(errno),
				      kernels__write_advice(errno, 1, "check that the cache is writable and has room"));
	return 0;
}

static int on_data(void *payload, const void *buf, size_t n)
{
	importer *im = payload;
	const char *p = buf;

	while (im->fd >= 0 && n) {
		ssize_t w = write(im->fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return kernels__error(KERNELS_EIO, "cannot write %s: %s; %s", im->inc, strerror(errno),
					      kernels__write_advice(errno, 1, "check free space"));
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The staged blob made whole (fsync'ed, renamed from .incomplete). Its
 * bytes were just hashed to its sha256 name: a download receipt in the
 * staging folder lets the variant's digest check take it, as it does for
 * a blob a download hashed, instead of reading it all again. */
static int on_end(void *payload, const kernels__bundle_entry *e)
{
	importer *im = payload;
	const imp_repo *r;
	char real[PATH_MAX];
	struct stat st;
	int fd = im->fd, rc;

	im->fd = -1;
	if (fd < 0)
		return 0;
	r = &im->repos[im->repo_of[e->variant]];
	rc = kernels__cache_publish_at(fd, r->stage_blobs, strrchr(im->inc, '/') + 1, e->f.etag, im->blob, &st, 0);
	if (rc == 0 && strlen(e->f.etag) == 64 && e->f.size >= KERNELS__BLOB_RECEIPT_MIN &&
	    kernels__realpath(r->stage_at, real, NULL))
		kernels__receipt_blob_write(im->cfg, real, e->f.etag, &st, NULL);
	return rc;
}

static void on_abort(void *payload, const kernels__bundle_entry *e)
{
	importer *im = payload;

	(void)e;
	if (im->fd >= 0) {
		close(im->fd);
		unlinkat(im->repos[im->repo_of[e->variant]].stage_blobs, strrchr(im->inc, '/') + 1, 0);
	}
	im->fd = -1;
}

/* ---- verification of the staged variants ----------------------------------------- */

/* A failure in the staging folder, reached through /proc/self/fd
 * (stage_path), names it as the user finds it: below the repo folder. */
static void name_the_stage(const imp_repo *r)
{
	char fd_path[64], *lib = kernels__sprintf("%s/.libkernels", r->dir);

	snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%d", r->lib_fd);
	if (lib)
		kernels__error_path_rename(fd_path, lib);
	free(lib);
}

/* The variant's links made in the staging folder, then the variant
 * verified there as a load would verify it in the cache. */
static int stage_variant(importer *im, size_t vi)
{
	const kernels__bundle_variant *v = &im->b->variants[vi];
	const imp_repo *r = &im->repos[im->repo_of[vi]];
	char *what = kernels__sprintf("%s@%.7s variant %s (bundle %s)", v->repo_id, v->commit, v->name, im->name);
	char real[PATH_MAX], *dir = NULL;
	struct stat signed_meta;
	size_t i;
	int rc = what ? 0 : KERNELS_ENOMEM;

	for (i = 0; rc == 0 && i < v->n; i++) {
		const kernels__bundle_entry *e = &im->b->files[v->first + i];
		char *rel = kernels__sprintf("build/%s/%s", v->name, e->f.path);
		rc = rel ? kernels__cache_link(r->stage_at, v->commit, rel, e->f.etag) : KERNELS_ENOMEM;
		free(rel);
	}
	if (rc < 0)
		name_the_stage(r);
	/* verified under the staging folder's real path, which messages can name */
	if (rc == 0 && !kernels__realpath(r->stage_at, real, NULL))
		rc = kernels__error(KERNELS_EIO, "cannot resolve %s: %s", r->stage, strerror(errno));
	if (rc == 0 && !(dir = kernels__sprintf("%s/snapshots/%s/build/%s", real, v->commit, v->name)))
		rc = KERNELS_ENOMEM;
	if (rc == 0 && (rc = kernels__signature_check(im->cfg, dir, what, &signed_meta)) == 0)
		rc = kernels__verify_variant(im->cfg, dir, real, what, NULL);
	if (rc < 0)
		kernels__error_prefix("nothing was imported");
	free(dir);
	free(what);
	return rc;
}

/* ---- publishing ------------------------------------------------------------------ */

/* Moves `from` (below the folder `from_dfd`) into the folder {repo}/{sub},
 * opened from the cache root without following a link (the cache stage's
 * containment), as `name`: 0, 1 with errno when the rename fails, or the
 * error opening the folder. */
static int move_into(const imp_repo *r, int from_dfd, const char *from, const char *sub, const char *name)
{
	int dfd = kernels__cache_repo_dir_open(r->dir, sub, 1), rc, err;

	if (dfd < 0)
		return dfd;
	rc = renameat(from_dfd, from, dfd, name) < 0;
	err = errno;
	close(dfd);
	errno = err;
	return rc;
}

/* A blob the cache holds already is kept, untouched (its identity is what
 * the verification receipts record), when its bytes are what its name
 * says: a download receipt vouching for this identity, or hashed now
 * (reading changes no identity). One that is not (a damaged cache) is
 * replaced by the staged copy, which the import verified. */
static int cached_blob_sound(const kernels__config *cfg, const imp_repo *r, const kernels__bundle_entry *e)
{
	int git = strlen(e->f.etag) == 40, sound;
	char real[PATH_MAX], hex[65], *path;
	struct stat st;

	if (!kernels__cache_blob_ok(r->dir, e->f.etag, (long long)e->f.size))
		return 0;
	if (!kernels__realpath(r->dir, real, NULL) || !(path = kernels__cache_blob_path(real, e->f.etag)))
		return 1; /* cannot tell: left as it is; every load verifies it anyway */
	sound = stat(path, &st) == 0 && ((!git && kernels__receipt_blob_matches(cfg, real, e->f.etag, &st)) ||
		(kernels__hash_blob(path, git ? KERNELS__BLOB_GIT_SHA1 : KERNELS__BLOB_SHA256, hex, NULL) == 0 &&
		 !strcmp(hex, e->f.etag)));
	free(path);
	kernels_error_clear(); /* a blob that cannot be read is replaced, not an error */
	return sound;
}

static int publish_blob(importer *im, const imp_repo *r, const kernels__bundle_entry *e)
{
	char *from = kernels__sprintf("%s/blobs/%s", r->stage, e->f.etag), real[PATH_MAX];
	struct stat st;
	int rc = 0;

	if (!from)
		return KERNELS_ENOMEM;
	if (fstatat(r->stage_blobs, e->f.etag, &st, AT_SYMLINK_NOFOLLOW) < 0 || cached_blob_sound(im->cfg, r, e)) {
		free(from); /* published for an earlier file, or cached already: left as it is */
		return 0;
	}
	if (kernels__cache_blob_ok(r->dir, e->f.etag, (long long)e->f.size))
		kernels__log(im->cfg, KERNELS_LOG_WARNING, "%s/blobs/%s does not hold the bytes its name says (a "
			     "damaged cache); replaced by the copy in bundle %s, which verified", r->dir, e->f.etag,
			     im->name);
	if ((rc = move_into(r, r->stage_blobs, e->f.etag, "blobs", e->f.etag)) == 1)
		rc = kernels__error(KERNELS_EIO, "cannot move %s into %s/blobs: %s; %s", from, r->dir, strerror(errno),
				    kernels__write_advice(errno, 1, "check that the cache is writable"));
	free(from);
	from = NULL;
	if (rc < 0)
		return rc;
	im->st.blobs_added++;
	/* a download receipt: the first load need not hash again what was just verified */
	if (strlen(e->f.etag) == 64 && kernels__realpath(r->dir, real, NULL) && (from = kernels__sprintf("%s/blobs/%s",
			real, e->f.etag)) && stat(from, &st) == 0)
		kernels__receipt_blob_write(im->cfg, real, e->f.etag, &st, NULL);
	free(from);
	return 0;
}

/* The variant's links one by one, as a download adds them: for a variant
 * folder the cache already has in part. */
static int link_each(importer *im, const imp_repo *r, const kernels__bundle_variant *v)
{
	size_t i;
	int rc = 0;

	for (i = 0; rc == 0 && i < v->n; i++) {
		const kernels__bundle_entry *e = &im->b->files[v->first + i];
		char *rel = kernels__sprintf("build/%s/%s", v->name, e->f.path);
		rc = rel ? kernels__cache_link(r->dir, v->commit, rel, e->f.etag) : KERNELS_ENOMEM;
		free(rel);
	}
	return rc;
}

/* One rename makes the variant appear whole, into snapshots/{commit}/build
 * walked from the cache root (a planted link on the way is refused). */
static int publish_variant(importer *im, size_t vi)
{
	const kernels__bundle_variant *v = &im->b->variants[vi];
	const imp_repo *r = &im->repos[im->repo_of[vi]];
	char *build = kernels__sprintf("snapshots/%s/build", v->commit);
	char *from = kernels__sprintf("%s/snapshots/%s/build/%s", r->stage, v->commit, v->name);
	char *rel = kernels__sprintf("snapshots/%s/build/%s", v->commit, v->name);
	int rc = build && from && rel ? move_into(r, r->stage_fd, rel, build, v->name) : KERNELS_ENOMEM;

	if (rc == 1 && (errno == ENOTEMPTY || errno == EEXIST))
		rc = link_each(im, r, v);
	else if (rc == 1)
		rc = kernels__error(KERNELS_EIO, "cannot move %s into %s/%s: %s; %s", from, r->dir, build,
				    strerror(errno), kernels__write_advice(errno, 1, "check that the cache is writable"));
	if (rc == 0) {
		kernels__cache_sync_folder(r->dir, build);
		im->st.variants_added++;
	}
	free(build);
	free(from);
	free(rel);
	return rc;
}

/* The highest version a version tag ("v1.2.0") naming `commit` carries,
 * among the cache's refs (`have`) and the bundle's for the repo, with
 * `*tag` that tag's name; NULL when none does. Major-version branches
 * ("v1") move, so only names with a dot count. */
static kernels__version *newest_tag(const kernels__ref *have, size_t n, const kernels_bundle *b,
				    const char *repo_id, const char *commit, const char **tag)
{
	kernels__version *best = NULL, *v;
	size_t i;

	for (i = 0; i < n + b->nrefs; i++) {
		const char *name = i < n ? have[i].name : b->refs[i - n].name;
		const char *at = i < n ? have[i].commit : b->refs[i - n].commit;
		if ((i >= n && strcmp(b->refs[i - n].repo_id, repo_id)) || strcmp(at, commit) || name[0] != 'v' ||
		    !strchr(name, '.') || !(v = kernels__version_try_parse(name + 1)))
			continue;
		if (best && kernels__version_compare(v, best) <= 0) {
			kernels__version_free(v);
		} else {
			kernels__version_free(best);
			best = v;
			*tag = name;
		}
	}
	return best;
}

/* Whether the bundle's `ref` may replace the cache's `old`: as git fetch
 * moves a branch only forward, so does an import, and an older bundle
 * never takes a cache back. The cache keeps no commit graph; version tags
 * are what order two commits, and without them the cache's ref stays,
 * with a warning saying how to take the bundle's. */
static int ref_moves_forward(importer *im, const imp_repo *r, const kernels__ref *have, size_t n,
			     const kernels__ref *old, const kernels_bundle_ref *ref)
{
	const char *was_tag = "", *now_tag = "";
	kernels__version *was = newest_tag(have, n, im->b, ref->repo_id, old->commit, &was_tag);
	kernels__version *now = newest_tag(have, n, im->b, ref->repo_id, ref->commit, &now_tag);
	int forward = was && now && kernels__version_compare(now, was) > 0;

	if (forward)
		kernels__log(im->cfg, KERNELS_LOG_INFO, "%s: refs/%s moved forward from %.12s (%s) to %.12s (%s), "
			     "bundle %s", ref->repo_id, ref->name, old->commit, was_tag, ref->commit, now_tag, im->name);
	else
		kernels__log(im->cfg, KERNELS_LOG_WARNING, "%s: refs/%s kept at %.12s%s%s%s: bundle %s names %.12s%s%s%s, "
			     "and an import never moves a ref back; %s. To take the bundle's, remove %s/refs/%s and "
			     "import again", ref->repo_id, ref->name, old->commit, was ? " (" : "", was_tag,
			     was ? ")" : "", im->name, ref->commit, now ? " (" : "", now_tag, now ? ")" : "",
			     was && now ? "the cache's is as new or newer" : "no version tag tells which of the two "
			     "commits is newer (the cache keeps no commit history)", r->dir, ref->name);
	kernels__version_free(was);
	kernels__version_free(now);
	return forward;
}

/* One ref of the bundle: written when the cache has no ref of that name,
 * moved when it names an older commit (ref_moves_forward), else kept. */
static int publish_ref(importer *im, const imp_repo *r, const kernels_bundle_ref *ref)
{
	kernels__ref *have = NULL;
	size_t n = 0, at = 0;
	int rc = kernels__refs_list(r->dir, &have, &n);

	if (rc < 0)
		return rc;
	while (at < n && strcmp(have[at].name, ref->name))
		at++;
	if (at == n || (strcmp(have[at].commit, ref->commit) && ref_moves_forward(im, r, have, n, &have[at], ref))) {
		rc = kernels__refs_write(r->dir, ref->name, ref->commit);
		im->st.refs_written += rc == 0;
	}
	kernels__refs_free(have, n);
	return rc;
}

static int publish_refs(importer *im)
{
	size_t i, j;
	int rc = 0;

	for (i = 0; rc == 0 && i < im->b->nrefs; i++) {
		const kernels_bundle_ref *ref = &im->b->refs[i];
		for (j = 0; j < im->nrepos && strcmp(im->repos[j].repo_id, ref->repo_id); j++)
			;
		if (j < im->nrepos) /* else a repo with no variant in the bundle: nothing to name */
			rc = publish_ref(im, &im->repos[j], ref);
	}
	return rc;
}

static int publish(importer *im)
{
	size_t i, j;
	int rc = 0;

	for (i = 0; rc == 0 && i < im->b->nvariants; i++)
		for (j = 0; rc == 0 && !im->present[i] && j < im->b->variants[i].n; j++)
			rc = publish_blob(im, &im->repos[im->repo_of[i]], &im->b->files[im->b->variants[i].first + j]);
	for (i = 0; rc == 0 && i < im->nrepos; i++)
		kernels__cache_sync_folder(im->repos[i].dir, "blobs");
	for (i = 0; rc == 0 && i < im->b->nvariants; i++)
		if (!im->present[i])
			rc = publish_variant(im, i);
	if (rc < 0 && im->st.variants_added)
		kernels__error_prefix("imported in part (%zu of the bundle's %zu variants are in the cache, each whole; "
				      "the rest and the refs are not): fix what follows and import again",
				      (size_t)im->st.variants_added, im->b->nvariants);
	else if (rc < 0)
		kernels__error_prefix("no variant was imported");
	return rc == 0 ? publish_refs(im) : rc;
}

/* ---- the call ----------------------------------------------------------------------- */

static int import(importer *im, kernels__bundle_reader *r)
{
	kernels__bundle_sink sink = { on_begin, on_data, on_end, on_abort, im };
	size_t i;
	int rc = kernels__bundle_read_manifest(r, &im->b);

	if (rc == 0)
		rc = plan(im);
	if (rc == 0)
		rc = room_check(im);
	if (rc == 0)
		rc = kernels__bundle_scan(r, im->b, &sink, &im->st.bytes);
	for (i = 0; rc == 0 && i < im->b->nvariants; i++)
		if (!im->present[i])
			rc = stage_variant(im, i);
	if (rc == 0)
		rc = publish(im);
	if (im->b) {
		im->st.files = im->b->nfiles;
		im->st.variants = im->b->nvariants;
	}
	return rc;
}

/* Where each version of kernels_bundle_import_stats ends (docs/api-stability.md). */
static const size_t import_stats_sizes[] = { 0, KERNELS__END(kernels_bundle_import_stats, bytes) };
static const kernels__layout import_stats_layout = { "kernels_bundle_import_stats",
						     "KERNELS_BUNDLE_IMPORT_STATS_VERSION", import_stats_sizes,
						     KERNELS_BUNDLE_IMPORT_STATS_VERSION };
_Static_assert(sizeof(import_stats_sizes) / sizeof(import_stats_sizes[0]) == KERNELS_BUNDLE_IMPORT_STATS_VERSION + 1,
	       "a new kernels_bundle_import_stats version needs its size in import_stats_sizes");

int kernels_bundle_import(kernels_bundle_import_stats *stats, const char *path, const kernels_options *opts)
{
	kernels__config cfg;
	kernels__bundle_reader r;
	importer im;
	size_t i;
	int rc;

	if (stats && (rc = kernels__layout_check(&import_stats_layout, stats)) < 0)
		return rc;
	if (!path)
		return kernels__error(KERNELS_EINVAL, "kernels_bundle_import: path is NULL");
	if ((rc = kernels__config_load(&cfg, opts)) < 0)
		return rc;
	memset(&im, 0, sizeof(im));
	im.cfg = &cfg;
	im.name = path;
	im.fd = -1;
	if ((rc = kernels__bundle_reader_open(&r, path, NULL, 0, path)) == 0)
		rc = import(&im, &r);
	on_abort(&im, NULL);
	for (i = 0; i < im.nrepos; i++)
		repo_end(&im.repos[i]);
	if (stats)
		kernels__layout_write(&import_stats_layout, stats, &im.st);
	kernels__bundle_reader_close(&r);
	kernels_bundle_free(im.b);
	free(im.repos);
	free(im.repo_of);
	free(im.present);
	free(im.inc);
	free(im.blob);
	kernels__config_free(&cfg);
	return rc;
}
