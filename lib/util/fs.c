#include "fs.h"
#include "error.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <unistd.h>

char *kernels__realpath(const char *path, char *out, struct stat *st)
{
	char link[64];
	ssize_t n = -1;
	int fd = open(path, O_PATH | O_CLOEXEC), ok;

	if (fd < 0)
		return NULL;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ok = (n = readlink(link, out, PATH_MAX - 1)) > 0 && n < PATH_MAX - 1 && out[0] == '/' &&
	     (!st || fstat(fd, st) == 0);
	close(fd);
	if (ok) {
		out[n] = '\0';
		return out;
	}
	/* No /proc: the slow way. */
	if (!realpath(path, out) || (st && stat(out, st) != 0))
		return NULL;
	return out;
}

#define FULL "the file system is full (or this user's disk quota is spent): free space on it"
#define DISK_ERROR                                                                               \
	"the disk reported a failure to store it: check the disk (the kernel log, its health and its " \
	"connection)"
#define RO_CACHE                                                                                        \
	"the cache is on a read-only file system: what it holds loads as it is, but what it lacks needs a " \
	"writable cache: point HF_HUB_CACHE (KERNELS_CACHE) at one, or fill this one where it is writable"

const char *kernels__write_advice(int err, int cache, const char *otherwise)
{
	if (err == ENOSPC || err == EDQUOT)
		return cache ? FULL ", or point HF_HUB_CACHE (KERNELS_CACHE) at a folder on a larger disk" : FULL;
	if (err == EROFS)
		return cache ? RO_CACHE : "the file system is read-only: pick a folder on a writable one";
	if (err == EIO)
		return cache ? DISK_ERROR ", or point HF_HUB_CACHE (KERNELS_CACHE) at a folder on another disk"
			     : DISK_ERROR;
	return otherwise;
}

int kernels__mkdir_p(const char *path, unsigned int mode)
{
	char *p = kernels__strdup(path), *q;
	int rc = 0;

	if (!p)
		return KERNELS_ENOMEM;
	for (q = p + 1; ; q++) {
		char c = *q;
		if (c != '/' && c != '\0')
			continue;
		*q = '\0';
		if (mkdir(p, (mode_t)mode) < 0 && errno != EEXIST) {
			rc = kernels__error(KERNELS_EIO, "cannot create folder '%s': %s; %s", p, strerror(errno),
					    kernels__write_advice(errno, 0, "check that its parent is writable"));
			break;
		}
		*q = c;
		if (c == '\0')
			break;
	}
	free(p);
	return rc;
}

char *kernels__tmp_name(const char *path)
{
	static atomic_uint counter;

	return kernels__sprintf("%s.tmp-%ld-%u", path, (long)getpid(), atomic_fetch_add(&counter, 1));
}

void kernels__fsync_parent(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
	int fd;

	if (dir && (fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		fsync(fd);
		close(fd);
	}
	free(dir);
}

#define FSYNC_THREADS_MAX 16

typedef struct {
	int fd, err;
} fsync_one;

static void *fsync_thread(void *arg)
{
	fsync_one *o = arg;

	o->err = fsync(o->fd) < 0 ? errno : 0;
	return NULL;
}

void kernels__fsync_many(const int *fds, size_t n, int *errs)
{
	fsync_one one[FSYNC_THREADS_MAX];
	pthread_t th[FSYNC_THREADS_MAX];
	int started[FSYNC_THREADS_MAX];
	size_t base, i, k;

	for (base = 0; base < n; base += k) {
		k = n - base < FSYNC_THREADS_MAX ? n - base : FSYNC_THREADS_MAX;
		for (i = 0; i < k; i++) {
			one[i].fd = fds[base + i];
			/* the last of the batch runs here, as one that gets no thread */
			started[i] = i + 1 < k && pthread_create(&th[i], NULL, fsync_thread, &one[i]) == 0;
		}
		for (i = 0; i < k; i++)
			if (!started[i])
				fsync_thread(&one[i]);
		for (i = 0; i < k; i++) {
			if (started[i])
				pthread_join(th[i], NULL);
			errs[base + i] = one[i].err;
		}
	}
}

struct kernels__fsync_pending {
	pthread_t thread;
	fsync_one one;
};

kernels__fsync_pending *kernels__fsync_begin(int fd)
{
	kernels__fsync_pending *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->one.fd = fd;
	if (pthread_create(&p->thread, NULL, fsync_thread, &p->one) != 0) {
		free(p);
		return NULL;
	}
	return p;
}

int kernels__fsync_wait(kernels__fsync_pending *p)
{
	int err;

	pthread_join(p->thread, NULL);
	err = p->one.err;
	free(p);
	return err;
}

/* Flushes the folder a rename into `dirfd` went to: `dirfd` itself (an
 * O_PATH descriptor cannot be synced: the folder is opened through it),
 * or, for AT_FDCWD, the folder holding `name`. */
static void fsync_dirfd(int dirfd, const char *name)
{
	int fd;

	if (dirfd == AT_FDCWD) {
		kernels__fsync_parent(name);
	} else if ((fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		fsync(fd);
		close(fd);
	}
}

static int walk_in(const char *dir, const char *rel, int depth, int max_depth, kernels__walk_fn visit,
		   void *payload)
{
	struct dirent *de;
	DIR *d;
	int rc = 0;

	if (depth > max_depth)
		return kernels__error(KERNELS_EUNSAFE, "%s: folders nested deeper than %d (a link loop?)", dir,
				      max_depth);
	if (!(d = opendir(dir)))
		return kernels__error(errno == ENOENT ? KERNELS_ENOTFOUND : KERNELS_EIO, "cannot read folder %s: %s",
				      dir, strerror(errno));
	while (rc == 0 && (de = readdir(d))) {
		char *path, *sub;
		struct stat lst;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		path = kernels__sprintf("%s/%s", dir, de->d_name);
		sub = *rel ? kernels__sprintf("%s/%s", rel, de->d_name) : kernels__strdup(de->d_name);
		if (!path || !sub)
			rc = KERNELS_ENOMEM;
		else if (lstat(path, &lst) < 0)
			rc = kernels__error(KERNELS_EIO, "cannot stat %s: %s", path, strerror(errno));
		else if ((rc = visit(path, sub, depth, &lst, payload)) == KERNELS__WALK_DESCEND)
			rc = walk_in(path, sub, depth + 1, max_depth, visit, payload);
		free(path);
		free(sub);
	}
	closedir(d);
	return rc;
}

static void remove_in(int dfd, const char *name, int depth)
{
	int fd;
	DIR *d;
	struct dirent *de;

	if (unlinkat(dfd, name, 0) == 0 || (errno != EISDIR && errno != EPERM) || depth > 64)
		return;
	if ((fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return;
	if (!(d = fdopendir(fd))) {
		close(fd);
		return;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			remove_in(dirfd(d), de->d_name, depth + 1);
	closedir(d);
	unlinkat(dfd, name, AT_REMOVEDIR);
}

void kernels__remove_tree_at(int dfd, const char *name)
{
	remove_in(dfd, name, 0);
}

int kernels__walk(const char *dir, int max_depth, kernels__walk_fn visit, void *payload)
{
	return walk_in(dir, "", 0, max_depth, visit, payload);
}

/* Reads fd to its end, or one byte past `max`: that byte tells a file over
 * `max` from one of exactly that size. `hint`: the size stat gave. */
static int read_all(int fd, size_t hint, size_t max, unsigned int flags, char **out, size_t *len)
{
	size_t limit = max < SIZE_MAX - 1 ? max + 1 : max, room = hint < 4095 ? 4096 : hint + 1, got = 0;
	char *buf, *p;
	ssize_t n;

	if (room > limit)
		room = limit;
	if (!(buf = malloc(room + 1)))
		return errno = ENOMEM, -1;
	while (got < limit) {
		if (got == room) {
			room = room < limit / 2 ? 2 * room : limit;
			if (!(p = realloc(buf, room + 1))) {
				free(buf);
				return errno = ENOMEM, -1;
			}
			buf = p;
		}
		if ((n = read(fd, buf + got, room - got)) < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			free(buf);
			return errno = e, -1;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	if (got > max && !(flags & KERNELS__READ_PREFIX)) {
		free(buf);
		return errno = EFBIG, -1;
	}
	if (got > max)
		got = max;
	buf[got] = '\0';
	*out = buf;
	*len = got;
	return 0;
}

int kernels__read_file(const char *path, size_t max, unsigned int flags, char **out, size_t *len,
		       struct stat *st)
{
	int oflags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (flags & KERNELS__READ_NOFOLLOW ? O_NOFOLLOW : 0);
	int fd = open(path, oflags), e = 0;
	struct stat sb;

	*out = NULL;
	*len = 0;
	if (fd < 0)
		return -1;
	if (fstat(fd, &sb) < 0) {
		e = errno;
		goto out;
	}
	if (st)
		*st = sb;
	if (!S_ISREG(sb.st_mode))
		e = S_ISDIR(sb.st_mode) ? EISDIR : EINVAL;
	else if ((size_t)sb.st_size > max && !(flags & KERNELS__READ_PREFIX))
		e = EFBIG;
	else if (read_all(fd, (size_t)sb.st_size, max, flags, out, len) < 0)
		e = errno;
	else if (sb.st_size > 0 && (size_t)sb.st_size <= max && *len != (size_t)sb.st_size) {
		free(*out);
		*out = NULL;
		*len = 0;
		e = ESTALE;
	}
out:
	close(fd);
	errno = e;
	return e ? -1 : 0;
}

static int write_fd(int fd, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

static int make_parent(const char *path)
{
	char *dir = kernels__strdup(path), *slash;
	int rc;

	if (!dir)
		return KERNELS_ENOMEM;
	slash = strrchr(dir, '/');
	rc = slash && slash != dir ? (*slash = '\0', kernels__mkdir_p(dir, 0777)) : 0;
	free(dir);
	return rc;
}

int kernels__write_atomic_at(int dirfd, const char *name, const char *shown, const void *data, size_t len, int mode,
			     unsigned int flags)
{
	char *tmp = NULL;
	int fd = -1, rc;

	if (!(tmp = kernels__tmp_name(name)))
		return KERNELS_ENOMEM;
	if ((fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666)) < 0) {
		rc = kernels__error(KERNELS_EIO, "cannot create a temporary file next to '%s': %s; %s", shown,
				    strerror(errno),
				    kernels__write_advice(errno, 0, "check that its folder exists and is writable"));
		free(tmp);
		return rc;
	}
	if (write_fd(fd, data, len) < 0 || (mode >= 0 && fchmod(fd, (mode_t)mode) < 0) ||
	    ((flags & (KERNELS__WRITE_DURABLE | KERNELS__WRITE_FLUSHED)) && fsync(fd) < 0)) {
		rc = kernels__error(KERNELS_EIO, "cannot write '%s': %s; %s", shown, strerror(errno),
				    kernels__write_advice(errno, 0, "check free space and permissions"));
		close(fd);
		goto fail;
	}
	/* close() releases the descriptor even when it fails: never close twice. */
	if (close(fd) < 0) {
		rc = kernels__error(KERNELS_EIO, "cannot write '%s': %s; %s", shown, strerror(errno),
				    kernels__write_advice(errno, 0, "check free space"));
		goto fail;
	}
	if (renameat(dirfd, tmp, dirfd, name) < 0) {
		rc = kernels__error(KERNELS_EIO, "cannot replace '%s': %s; %s", shown, strerror(errno),
				    kernels__write_advice(errno, 0, "check the folder's permissions"));
		goto fail;
	}
	if (flags & KERNELS__WRITE_DURABLE)
		fsync_dirfd(dirfd, name);
	free(tmp);
	return 0;
fail:
	unlinkat(dirfd, tmp, 0);
	free(tmp);
	return rc;
}

struct kernels__write_later {
	pthread_t thread;
	kernels__task_fn run;
	void (*release)(void *arg);
	void *arg;
	int rc;
	char *what;
	char message[1024]; /* the error the helper met: its thread's own */
	kernels__write_later *next;
};

static void *later_thread(void *arg)
{
	kernels__write_later *w = arg;

	w->rc = w->run(w->arg);
	if (w->rc < 0)
		snprintf(w->message, sizeof(w->message), "%s", kernels_error_last());
	kernels_error_clear();
	/* Released here, not at the join: its descriptors close as soon as it is done. */
	if (w->release)
		w->release(w->arg);
	return NULL;
}

int kernels__run_later(kernels__write_later **list, kernels__task_fn run, void *arg, void (*release)(void *arg),
		       const char *what)
{
	kernels__write_later *w = list ? calloc(1, sizeof(*w)) : NULL;

	if (!w || !(w->what = strdup(what))) {
		free(w);
		return -1;
	}
	w->run = run;
	w->release = release;
	w->arg = arg;
	if (pthread_create(&w->thread, NULL, later_thread, w) != 0) {
		free(w->what);
		free(w);
		return -1;
	}
	w->next = *list;
	*list = w;
	return 0;
}

typedef struct {
	int dirfd, mode;
	unsigned int flags;
	char *name, *shown, *data;
	size_t len;
} atomic_job;

static int atomic_job_run(void *arg)
{
	atomic_job *j = arg;

	return kernels__write_atomic_at(j->dirfd, j->name, j->shown, j->data, j->len, j->mode, j->flags);
}

static void atomic_job_free(void *arg)
{
	atomic_job *j = arg;

	close(j->dirfd);
	free(j->name);
	free(j->shown);
	free(j->data);
	free(j);
}

int kernels__write_atomic_later(kernels__write_later **list, int dirfd, const char *name, const char *shown,
				const void *data, size_t len, int mode, unsigned int flags, const char *what)
{
	atomic_job *j = calloc(1, sizeof(*j));
	int rc;

	if (j) {
		j->dirfd = dirfd;
		if ((j->name = strdup(name)) && (j->shown = strdup(shown)) && (j->data = malloc(len ? len : 1))) {
			memcpy(j->data, data, len);
			j->len = len;
			j->mode = mode;
			j->flags = flags;
			if (kernels__run_later(list, atomic_job_run, j, atomic_job_free, what) == 0)
				return 0;
		}
	}
	/* No helper: written here, as kernels__write_atomic_at would be. */
	rc = kernels__write_atomic_at(dirfd, name, shown, data, len, mode, flags);
	if (j)
		atomic_job_free(j); /* closes dirfd */
	else
		close(dirfd);
	return rc;
}

void kernels__write_later_join(kernels__write_later **list, kernels__write_failed_fn failed, void *payload)
{
	kernels__write_later *w;

	while ((w = *list)) {
		*list = w->next;
		pthread_join(w->thread, NULL);
		if (w->rc < 0 && failed)
			failed(payload, w->what, w->message);
		free(w->what);
		free(w);
	}
}

/* The first 64 KiB of a version or configuration file; NULL when absent. */
char *kernels__read_small_file(const char *path)
{
	char *text;
	size_t len;

	return kernels__read_file(path, 65536, KERNELS__READ_PREFIX, &text, &len, NULL) == 0 ? text : NULL;
}

int kernels__write_atomic(const char *path, const void *data, size_t len, int mode, unsigned int flags)
{
	int rc;

	if ((flags & KERNELS__WRITE_MKDIR) && (rc = make_parent(path)) < 0)
		return rc;
	return kernels__write_atomic_at(AT_FDCWD, path, path, data, len, mode, flags);
}

int kernels__copy_fd(int from, int to, off_t size)
{
	off_t off = 0;
	ssize_t n;

	while (off < size) {
		n = copy_file_range(from, &off, to, NULL, (size_t)(size - off), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* EXDEV, EINVAL, ENOSYS...: the plain way from here */
	}
	while (off < size) {
		n = sendfile(to, from, &off, (size_t)(size - off));
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			errno = ENODATA; /* the source ended early: say so, not what an earlier call left */
		if (n <= 0)
			return -1;
	}
	return 0;
}
