/* Files: folders made with their parents, whole-file reads with a size
 * cap, and writes that replace a file whole or not at all. */
#ifndef KERNELS_LIB_UTIL_FS_H
#define KERNELS_LIB_UTIL_FS_H

#include <stddef.h>
#include <sys/stat.h>

/* Creates `path` and its parents with `mode` (umask applies); existing
 * folders are fine. Sets the error and returns KERNELS_EIO on failure. */
int kernels__mkdir_p(const char *path, unsigned int mode);

/* What to do about a write that failed with `err`: a full file system or
 * a spent quota (ENOSPC, EDQUOT) wants room, a read-only one (EROFS)
 * another place, a failing disk (EIO) a look at it: advice about rights
 * would only mislead there; any other errno gets `otherwise`, the
 * caller's own advice. `cache` 1: the write
 * was into the cache, whose other place is HF_HUB_CACHE. A static string. */
const char *kernels__write_advice(int err, int cache, const char *otherwise);

/* realpath(3) into `out` (PATH_MAX bytes), and the file's stat into *st
 * (may be NULL), in four system calls where /proc is mounted: the kernel
 * resolves the path once, where glibc's realpath reads the link of every
 * component (a dozen calls for a cached file). NULL with errno as
 * realpath. */
char *kernels__realpath(const char *path, char *out, struct stat *st);

/* A name beside `path` no other thread or process of this host picks:
 * "{path}.tmp-{pid}-{n}" (malloc'ed; NULL with the error set). */
char *kernels__tmp_name(const char *path);

/* Flushes the folder holding `path` to disk, so a rename into it survives
 * a crash. Best effort: a folder that cannot be opened is left as it is. */
void kernels__fsync_parent(const char *path);

/* fsync(2) of `n` descriptors side by side, one thread each (a few at a
 * time), the calling thread taking one: a journaling file system commits
 * the flushes that arrive together at once (ext4 joins them in one journal
 * commit), where one after the other each waits for its own. errs[i]
 * receives 0 or the errno of fds[i]'s fsync. Where a thread cannot be
 * made, its descriptor is flushed in the calling thread. */
void kernels__fsync_many(const int *fds, size_t n, int *errs);

/* fsync(2) of `fd` begun on a thread of its own, for a caller with other
 * work to overlap it with (a large download's flush beside the transfers
 * still running); kernels__fsync_wait collects it, and `fd` stays open
 * until then. NULL: no thread or memory could be had and nothing was
 * begun: the caller flushes `fd` itself. */
typedef struct kernels__fsync_pending kernels__fsync_pending;
kernels__fsync_pending *kernels__fsync_begin(int fd);

/* Waits for the flush kernels__fsync_begin began and frees it: 0, or the
 * errno its fsync met. */
int kernels__fsync_wait(kernels__fsync_pending *p);

/* `size` bytes from the start of `from` into `to` at its offset: in the
 * kernel, which may share extents (a reflink) where the file system can;
 * else sendfile. 0, or -1 with errno (ENODATA: `from` ended before
 * `size` bytes). */
int kernels__copy_fd(int from, int to, off_t size);

/* Removes `name` under the folder `dfd` and, when it is a folder, all it
 * holds, never following a link. Best effort: what cannot be removed
 * stays, and so does a tree deeper than 64 folders (no one makes one; a
 * hostile one must not exhaust the stack). */
void kernels__remove_tree_at(int dfd, const char *name);

/* What a walk's visitor returns for an entry: 0 to go on, DESCEND to walk
 * into it as a folder, or an error code (< 0) to stop the walk with it. */
#define KERNELS__WALK_DESCEND 1

/* Visits every entry under `dir` depth first, in the order readdir gives
 * (not sorted): `path` is dir/rel, `rel` its path below `dir`, `depth` 0
 * for the entries of `dir` itself, and `lst` its lstat (a link is given as
 * the link; the visitor decides whether to follow it). Deeper than
 * `max_depth`: KERNELS_EUNSAFE (a link loop, or a tree nobody builds). A
 * folder that cannot be read: KERNELS_ENOTFOUND or KERNELS_EIO. */
typedef int (*kernels__walk_fn)(const char *path, const char *rel, int depth, const struct stat *lst,
				void *payload);
int kernels__walk(const char *dir, int max_depth, kernels__walk_fn visit, void *payload);

enum {
	KERNELS__READ_NOFOLLOW = 1, /* refuse a symbolic link (ELOOP) */
	KERNELS__READ_PREFIX = 2,   /* a file over `max` reads as its first `max` bytes */
};

/* Reads the regular file `path` whole into *out, NUL-terminated (the
 * caller frees it), and its length into *len; `st` (may be NULL) receives
 * its fstat, also when it is then refused. A file over `max` bytes is refused before it is read (files
 * whose stat says 0 bytes, as /proc's, are read to their end, up to `max`).
 * Sets no error, so that each caller names the file in its own words:
 * returns 0, or -1 with errno ENOENT, ELOOP, EISDIR or EINVAL (not a regular
 * file), EFBIG (over `max`), ESTALE (its size changed while it was read),
 * ENOMEM, or what open(2) or read(2) said. */
int kernels__read_file(const char *path, size_t max, unsigned int flags, char **out, size_t *len,
		       struct stat *st);

enum {
	KERNELS__WRITE_MKDIR = 1,   /* create the parent folders first */
	KERNELS__WRITE_DURABLE = 2, /* fsync the file before the rename, and its folder after */
	KERNELS__WRITE_FLUSHED = 4, /* fsync the file before the rename only: the name never holds bytes
				       that did not reach the disk, though a crash may lose the rename (a
				       record whose loss costs only redoing what it records) */
};

/* Replaces `path` with `len` bytes of `data`, whole or not at all: they go
 * to a temporary file beside it (kernels__tmp_name), which is renamed over
 * `path` once complete; a failure removes it. `mode` < 0: a new file's
 * usual mode (0666 less the umask); otherwise exactly `mode`. 0, or
 * KERNELS_EIO / KERNELS_ENOMEM with the error set. */
int kernels__write_atomic(const char *path, const void *data, size_t len, int mode, unsigned int flags);

/* The same for the file `name` of the folder `dirfd` (an O_PATH descriptor
 * will do: every step is an *at call relative to it, so a folder swapped
 * for a link after the caller opened it is not followed); `shown` names it
 * in messages. KERNELS__WRITE_MKDIR is not looked at. */
int kernels__write_atomic_at(int dirfd, const char *name, const char *shown, const void *data, size_t len, int mode,
			     unsigned int flags);

/* A kernels__write_atomic_at that finishes on a thread of its own, so its
 * flush and rename overlap what the caller does next (a record nothing in
 * the call reads again: a receipt, a "trusted" verdict). The caller owns
 * the list the write is pushed on, and joins it (kernels__write_later_join)
 * before the call that started it returns: no write outlives its call. */
typedef struct kernels__write_later kernels__write_later;

/* Starts writing `len` bytes of `data` (copied) as `name` in `dirfd`,
 * exactly as kernels__write_atomic_at does (same flags: a flushed record is
 * flushed before its rename), and pushes it on *list; `what` ("the
 * verification receipt") names it for the join. `dirfd` is taken over:
 * closed once the write is done. Where no thread or memory can be had, it
 * is written before this returns. 0, or that write's error. */
int kernels__write_atomic_later(kernels__write_later **list, int dirfd, const char *name, const char *shown,
				const void *data, size_t len, int mode, unsigned int flags, const char *what);

/* Runs `run(arg)` on a helper thread pushed on *list beside the writes
 * above and joined with them, for a step nothing in the call reads again
 * (a finished file's flush and name). `run` returns 0 or an error code with
 * the error set, in its own thread: the join reports it under `what`.
 * `release` (may be NULL) frees `arg` on the helper once `run` returned,
 * so its descriptors close then. 0: begun, `arg` is the helper's. -1:
 * `list` is NULL, or no thread or memory could be had: nothing was begun,
 * `arg` is still the caller's, who runs the step in line. */
typedef int (*kernels__task_fn)(void *arg);
int kernels__run_later(kernels__write_later **list, kernels__task_fn run, void *arg, void (*release)(void *arg),
		       const char *what);

/* Waits for every write and task of *list, which it empties. `failed` (may be NULL)
 * is called, in the joining thread, for each that failed, with its `what`
 * and the error it met (kernels_error_last() of its thread). */
typedef void (*kernels__write_failed_fn)(void *payload, const char *what, const char *message);
void kernels__write_later_join(kernels__write_later **list, kernels__write_failed_fn failed, void *payload);

/* The first 64 KiB of a small text file (a version file, pyvenv.cfg),
 * NUL-terminated and malloc'ed; NULL when it is absent or unreadable (no
 * error set: a missing one only means the fact it would give is unknown). */
char *kernels__read_small_file(const char *path);

#endif
