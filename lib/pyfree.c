/* Python-free copies of native modules. kernel-builder's PyInit_<name>
 * references the Python C API (PyModule_Create2), which only an
 * interpreter defines; with bind-now linking a host without libpython
 * cannot dlopen the module as built. A copy with those references made
 * weak binds everything else exactly as built (a torch ABI mismatch still
 * fails, naming its symbol) and leaves them NULL where nothing defines
 * them; a weak reference still binds where a definition exists, so one
 * copy serves every host.
 *
 * A module in the cache gets its copy on disk, once:
 * {repo}/.libkernels/patched/{blob}.so, written from the verified bytes
 * (temporary file, fsync, rename), with a receipt {blob}.json recording
 * the verified digest it came from and the copy's identity (device,
 * inode, size, modification and change times). A later process whose
 * receipt matches the copy maps it as it is: no copy, no hash. Any
 * difference means it is made again from the verified module. This
 * weakens nothing: the copy lives in the repo's cache folder, so whoever
 * can write it or its receipt can as well write the blob and the
 * metadata.json that vouches for it. Where it cannot be written (a
 * read-only cache, a module outside the cache), a sealed in-memory copy is
 * made per process instead. */
#include "pyfree.h"
#include "cache.h"
#include "receipt.h"
#include "error.h"
#include "util.h"

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Makes the module's Python references weak; `all` 0: only those nothing
 * in this process defines (an in-memory copy for this process alone). */
static int weaken(int fd, const kernels__elf *e, int all)
{
	unsigned char weak;
	size_t i;

	for (i = 0; i < e->python_count; i++) {
		if (!all && dlsym(RTLD_DEFAULT, e->python[i].name))
			continue;
		weak = (unsigned char)ELF64_ST_INFO(STB_WEAK, ELF64_ST_TYPE(e->python[i].info));
		if (pwrite(fd, &weak, 1, (off_t)e->python[i].info_offset) != 1)
			return -1;
	}
	return 0;
}

static int memory_copy(int fd, const struct stat *st, const kernels__elf *e, const char *what, int *out)
{
	int mfd;

	*out = -1;
	if ((mfd = memfd_create("kernels-module", MFD_CLOEXEC | MFD_ALLOW_SEALING)) < 0)
		return kernels__error(KERNELS_EIO, "loading %s without Python: memfd_create: %s", what,
				      strerror(errno));
	if (kernels__copy_fd(fd, mfd, st->st_size) < 0 || weaken(mfd, e, 0) < 0 ||
	    fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
		int err = errno;
		close(mfd);
		return kernels__error(KERNELS_EIO, "loading %s without Python: copying the module: %s", what,
				      strerror(err));
	}
	*out = mfd;
	return 0;
}

/* The blob the verified descriptor reads, when it lies in {root}/blobs/
 * (root as kernels__realpath gives it): the copy is named after it. */
static int blob_of(int fd, const char *root, char *blob, size_t size)
{
	char link[64], real[PATH_MAX];
	ssize_t n;
	size_t r;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	if (!root || (n = readlink(link, real, sizeof(real) - 1)) <= 0)
		return 0;
	real[n] = '\0';
	r = strlen(root);
	if (strncmp(real, root, r) || strncmp(real + r, "/blobs/", 7) || !kernels__is_etag(real + r + 7) ||
	    strlen(real + r + 7) >= size)
		return 0;
	snprintf(blob, size, "%s", real + r + 7);
	return 1;
}

typedef struct {
	const char *root; /* the repo folder (not owned) */
	char *dir, *copy, *receipt, *tmp;
} paths;

static void paths_free(paths *p)
{
	free(p->dir);
	free(p->copy);
	free(p->receipt);
	free(p->tmp);
}

/* The copy the receipt vouches for, open read-only; -1 when there is none.
 * Opened without waiting: a FIFO in its place is no copy, not a wait for a
 * writer. */
static int reuse(const kernels__config *cfg, const paths *p, const char *source, const struct stat *st)
{
	struct stat cst;
	int cfd = open(p->copy, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (cfd < 0)
		return -1;
	if (fstat(cfd, &cst) == 0 && S_ISREG(cst.st_mode) && cst.st_size == st->st_size &&
	    kernels__receipt_copy_matches(cfg, p->receipt, source, &cst))
		return cfd;
	close(cfd);
	return -1;
}

/* The name of a file of .libkernels/patched/. */
static const char *leaf(const char *path)
{
	return strrchr(path, '/') + 1;
}

/* An unnamed file in the folder `dfd` (nothing left behind by a crash
 * before it is complete), else a named temporary one (*named). */
static int create_tmp(const paths *p, int dfd, int *named)
{
	int tfd = openat(dfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0444);

	*named = 0;
	if (tfd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return tfd;
	if ((tfd = openat(dfd, leaf(p->tmp), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444)) >= 0)
		*named = 1;
	return tfd;
}

/* A copy being named: its folder as walked from the cache root, the
 * complete temporary file, and what its receipt records. */
typedef struct {
	int dfd, tfd, named; /* named: the temporary file has a name to remove on failure */
	char *copy, *receipt, *tmp, *source;
	struct stat cst;
} naming;

static void naming_free(void *arg)
{
	naming *t = arg;

	if (t->named)
		unlinkat(t->dfd, leaf(t->tmp), 0);
	if (t->tfd >= 0)
		close(t->tfd);
	if (t->dfd >= 0)
		close(t->dfd);
	free(t->copy);
	free(t->receipt);
	free(t->tmp);
	free(t->source);
	free(t);
}

static naming *naming_new(const paths *p, const char *source)
{
	naming *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->dfd = t->tfd = -1;
	if ((t->copy = strdup(p->copy)) && (t->receipt = strdup(p->receipt)) && (t->tmp = strdup(p->tmp)) &&
	    (t->source = strdup(source)))
		return t;
	naming_free(t);
	return NULL;
}

/* Flushed before it takes its name: nothing half-written ever does, so a
 * receipt can only name whole bytes. 0, or KERNELS_EIO with the error set
 * and errno kept; the temporary name is then removed (naming_free). */
static int name_copy(naming *t)
{
	char self[64];
	int err, rc;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", t->tfd);
	if (fsync(t->tfd) < 0 || (!t->named && linkat(AT_FDCWD, self, t->dfd, leaf(t->tmp), AT_SYMLINK_FOLLOW) < 0))
		goto fail;
	t->named = 1;
	if (renameat(t->dfd, leaf(t->tmp), t->dfd, leaf(t->copy)) < 0)
		goto fail;
	t->named = 0;
	/* After the rename, which moves the change time the receipt records. */
	if (fstat(t->tfd, &t->cst) < 0) {
		err = errno;
		rc = kernels__error(KERNELS_EIO, "reading back the Python-free copy %s: %s; it gets no receipt, so the "
				    "next process writes it again", t->copy, strerror(err));
		errno = err;
		return rc;
	}
	return 0;
fail:
	err = errno;
	rc = kernels__error(KERNELS_EIO, "naming the Python-free copy %s: %s; this process maps it unnamed, and the "
			    "next one writes it again", t->copy, strerror(err));
	errno = err;
	return rc;
}

static int put_receipt(const naming *t)
{
	return kernels__receipt_copy_put(t->dfd, leaf(t->receipt), t->receipt, t->source, &t->cst);
}

/* The flush, the name and the receipt, on a helper beside the mapping. */
static int naming_run(void *arg)
{
	naming *t = arg;
	int rc = name_copy(t);

	return rc < 0 ? rc : put_receipt(t);
}

/* The same in line, where no helper could be had: the outcome is the
 * helper's (the mapping keeps the complete unnamed file), its failure the
 * debug line the join would have logged. */
static int name_in_line(const kernels__config *cfg, naming *t, int rfd)
{
	if (naming_run(t) < 0)
		kernels__log(cfg, KERNELS_LOG_DEBUG, "cannot write a Python-free copy: %s", kernels_error_last());
	kernels_error_clear();
	naming_free(t);
	return rfd;
}

/* Writes the copy and returns a read-only descriptor of it, or -1 with
 * errno. The bytes this process maps are the ones it just wrote, whole in
 * memory: only the name waits for the flush, which goes on the `later`
 * list beside the mapping (in line without a list or a helper). Every step is relative to
 * the folder as walked from the cache root, so a folder swapped for a link
 * meanwhile is not followed. */
static int write_copy(const kernels__config *cfg, const paths *p, const char *source, int fd, const struct stat *st,
		      const kernels__elf *e, kernels__write_later **later)
{
	char self[64];
	naming *t = naming_new(p, source);
	int rfd = -1, err;

	if (!t)
		return errno = ENOMEM, -1;
	if ((t->dfd = kernels__cache_repo_dir_open(p->root, ".libkernels/patched", 1)) < 0 ||
	    (t->tfd = create_tmp(p, t->dfd, &t->named)) < 0)
		goto fail;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", t->tfd);
	if (kernels__copy_fd(fd, t->tfd, st->st_size) < 0 || weaken(t->tfd, e, 1) < 0 ||
	    (rfd = open(self, O_RDONLY | O_CLOEXEC)) < 0)
		goto fail;
	if (kernels__run_later(later, naming_run, t, naming_free, "a Python-free copy") == 0)
		return rfd;
	return name_in_line(cfg, t, rfd);
fail:
	err = errno;
	naming_free(t);
	errno = err;
	return -1;
}

/* huggingface_hub's own cache cleaning (2.x: hf cache rm, prune) deletes a
 * revision's blobs and knows nothing of .libkernels/: the copies of the
 * blobs it took would keep their size for good. A load that uses this
 * folder drops them, as libkernels' cache rm does with the blobs it takes.
 * A copy whose blob is gone is never mapped again: copies are named by
 * blobs/{blob}, and made only of modules that lie there. */
static void drop_orphans(const char *root)
{
	int pfd = kernels__cache_repo_dir_open(root, ".libkernels/patched", 0);
	int bfd = pfd >= 0 ? kernels__cache_repo_dir_open(root, "blobs", 0) : -1;
	int rfd = bfd >= 0 ? openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	DIR *d = rfd >= 0 ? fdopendir(rfd) : NULL;
	struct dirent *ent;
	char blob[160];

	while (d && (ent = readdir(d))) {
		const char *dot = strrchr(ent->d_name, '.');
		size_t n = dot ? (size_t)(dot - ent->d_name) : 0;

		if (!dot || (strcmp(dot, ".so") && strcmp(dot, ".json")) || n >= sizeof(blob))
			continue;
		memcpy(blob, ent->d_name, n);
		blob[n] = '\0';
		if (kernels__is_etag(blob) && faccessat(bfd, blob, F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
			unlinkat(pfd, ent->d_name, 0);
	}
	if (d)
		closedir(d);
	else if (rfd >= 0)
		close(rfd);
	if (bfd >= 0)
		close(bfd);
	if (pfd >= 0)
		close(pfd);
	kernels_error_clear();
}

int kernels__pyfree_open(const kernels__config *cfg, const char *root, const char *source, int fd,
			 const struct stat *st, const kernels__elf *e, const char *what, int *out,
			 kernels__write_later **later)
{
	char blob[160], by_name[200];
	paths p = { 0 };
	int cfd = -1;

	*out = -1;
	if (!blob_of(fd, root, blob, sizeof(blob)))
		return memory_copy(fd, st, e, what, out);
	if (!source) { /* a build without digests: verified against its blob's name */
		snprintf(by_name, sizeof(by_name), "blob:%s", blob);
		source = by_name;
	}
	p.root = root;
	if (!(p.dir = kernels__sprintf("%s/.libkernels/patched", root)) ||
	    !(p.copy = kernels__sprintf("%s/%s.so", p.dir, blob)) ||
	    !(p.receipt = kernels__sprintf("%s/%s.json", p.dir, blob)) ||
	    !(p.tmp = kernels__tmp_name(p.copy))) {
		paths_free(&p);
		return KERNELS_ENOMEM;
	}
	if ((cfd = reuse(cfg, &p, source, st)) >= 0) {
		kernels__log(cfg, KERNELS_LOG_DEBUG, "%s: mapping its Python-free copy %s (receipt)", what, p.copy);
	} else if ((cfd = write_copy(cfg, &p, source, fd, st, e, later)) >= 0) {
		kernels__log(cfg, KERNELS_LOG_DEBUG, "%s: wrote its Python-free copy %s", what, p.copy);
	} else {
		kernels__log(cfg, KERNELS_LOG_DEBUG, "%s: cannot write a Python-free copy in %s (%s); mapping an "
			     "in-memory copy", what, p.dir, strerror(errno));
		kernels_error_clear();
	}
	paths_free(&p);
	if (cfd >= 0) {
		drop_orphans(root);
		*out = cfd;
		return 0;
	}
	return memory_copy(fd, st, e, what, out);
}
