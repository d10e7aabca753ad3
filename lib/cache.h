/* Internal: the on-disk cache shared with huggingface_hub (its file_download.py
 * and constants.py define the layout).
 *
 *   {root}/{kernels|models}--{org}--{name}/blobs/{etag}[.incomplete]
 *                                        /snapshots/{commit}/{path} -> ../../(..)/blobs/{etag}
 *                                        /refs/{revision}
 *   {root}/.locks/{kernels|models}--{org}--{name}/{etag}.lock
 *
 * A blob only ever appears complete and verified (written as .incomplete,
 * fsync'ed, renamed); snapshot links are replaced atomically. Locks are
 * flock(2) locks, the ones Python's filelock takes, so libkernels and
 * huggingface_hub processes exclude each other per blob. */
#ifndef KERNELS_LIB_CACHE_H
#define KERNELS_LIB_CACHE_H

#include "config.h"
#include "repo.h"
#include "fs.h"

/* {root}/{type}s--{org}--{name} (malloc'ed). */
char *kernels__cache_repo_dir(const kernels__config *cfg, kernels__repo_type type, const char *repo_id);

/* The cache root is the only path trusted as it is (it may be a link, or a
 * mount): below it, the repo folder, its blobs/, snapshots/, refs/,
 * .libkernels/ and .no_exist/, and .locks/ with the repo's lock folder
 * must be real folders or absent. KERNELS_EUNSAFE naming the planted link
 * otherwise: checked before anything is written or loaded, nothing is
 * written or loaded through one. */
int kernels__cache_guard(const kernels__config *cfg, kernels__repo_type type, const char *repo_id);

/* Containment of every write: opens the folder `rel` ('/'-separated)
 * below the cache root `root`, each component with O_NOFOLLOW from the
 * descriptor of the one above, made (mkdirat) where missing when
 * `create`. Returns an O_PATH descriptor of the folder (for the *at calls
 * that write in it), or KERNELS_EUNSAFE naming the first component that is
 * a link or a file (nothing is made below it), KERNELS_ENOTFOUND (missing,
 * without create), KERNELS_EIO with errno kept. */
int kernels__cache_dir_open(const char *root, const char *rel, int create);

/* Writes {cache}/CACHEDIR.TAG where there is none, as huggingface_hub
 * does before a download; sets no error. */
void kernels__cache_tag(const kernels__config *cfg);

/* The same for {repo_dir}/{sub} (sub may be NULL or ""), the cache root
 * being repo_dir's parent. */
int kernels__cache_repo_dir_open(const char *repo_dir, const char *sub, int create);

/* Makes {repo_dir}/{sub} as kernels__cache_repo_dir_open does: 0 or an error. */
int kernels__cache_mkdirs(const char *repo_dir, const char *sub);

/* kernels__write_atomic of `path`, a file below `repo_dir`, after its
 * folders are walked and made without following links. `flags`: the
 * KERNELS__WRITE_* of util/fs.h (MKDIR is implied). */
int kernels__cache_write(const char *repo_dir, const char *path, const void *data, size_t len, unsigned int flags);

/* The same on a helper thread (kernels__write_atomic_later, util/fs.h):
 * the folders are walked and made here, the file written, flushed and
 * renamed there, overlapping what the caller does next. For records no
 * later step of the call reads (a missing one only costs redoing what it
 * records). `later` NULL: kernels__cache_write, here and now. `what`
 * names the record in the debug line a failure leaves. */
int kernels__cache_write_later(kernels__write_later **later, const char *repo_dir, const char *path,
			       const void *data, size_t len, unsigned int flags, const char *what);

/* Joins the writes of *later (empties it), each failure logged at debug
 * level as kernels__cache_write's callers log theirs: a record is best
 * effort. Called before the call that started them returns. */
void kernels__cache_settle(const kernels__config *cfg, kernels__write_later **later);

/* The relative link target of snapshots/{commit}/{path}: "../" for every
 * folder between the link and the repo folder, then "blobs/{etag}". */
char *kernels__cache_link_target(const char *path, const char *etag);

/* 1 when `s` can name a blob: 40 or 64 hex digits (lower case). */
int kernels__is_etag(const char *s);

/* Kernel repo or model repo as the cache knows it: the kernel type unless
 * only the model type's folder is there. 1 when the cache has a folder for
 * the repo that holds refs/ or snapshots/ (a record alone names no form),
 * 0 when none (*type: kernel), <0 out of memory. The cache's half of the
 * one decision (download.c: kernels__repo_locate). */
int kernels__cache_repo_type(const kernels__config *cfg, const char *repo_id, kernels__repo_type *type);

/* 0 when the `type` folder of the repo holds `commit` (offline);
 * KERNELS_EOFFLINE (message naming what to download) when not. */
int kernels__cache_find_snapshot(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
				 const char *commit);

/* The repo folder ({cache}/{kernels|models}--{org}--{name}, real path,
 * malloc'ed) of a variant folder inside one of its snapshots, in any cache
 * of this layout; NULL for a folder that is not in one. Verification lets
 * a snapshot's links reach the repo's blobs/, and no further. */
char *kernels__cache_repo_of(const char *variant_dir);

/* The length of the repo folder that begins `path` (a real path) when the
 * path lies in one of its snapshots ({repo}/snapshots/{commit}/...), else
 * 0. The first snapshots/{commit}/ below a repo folder's name is the one:
 * a folder above the cache may be named "snapshots" (/srv/snapshots/hf),
 * and whatever lies below that one is the repo's own. */
size_t kernels__cache_repo_len(const char *path);

/* A per-blob lock: .locks/{repo folder}/{etag}.lock. */
typedef struct {
	int fd;
} kernels__cache_lock;

/* Tries to take the lock without waiting: 0 taken, 1 busy (another process
 * or handle holds it), <0 error (cannot create or open the lock file). A
 * lock file we may not write (shared cache, created by another user) is
 * opened read-only: flock works on any descriptor. */
int kernels__cache_lock_try(const char *lock_path, kernels__cache_lock *lock);
void kernels__cache_unlock(kernels__cache_lock *lock);

/* The repo lock, .locks/{repo folder}/libkernels-repo.lock: every transfer
 * into the repo's folder holds it shared (LOCK_SH) from looking at what is
 * cached to its last link, and a removal holds it exclusively (LOCK_EX), so
 * neither takes the other's files away. `op` is LOCK_SH or LOCK_EX, with
 * LOCK_NB not to wait. Returns 0 (held), 1 (busy, with LOCK_NB), 2 (the
 * lock file cannot be made: no write access to the cache, so nothing can
 * be written or removed there either; not held), or an error. */
#define KERNELS__REPO_LOCK "libkernels-repo.lock"
int kernels__cache_repo_lock(const kernels__config *cfg, kernels__repo_type type, const char *repo_id, int op,
			     kernels__cache_lock *lock);

/* Links snapshots/{commit}/{path} to blobs/{etag} (relative), atomically
 * replacing what is there. Refuses (KERNELS_EUNSAFE) when a folder on the
 * way from the cache root is not a real folder (e.g. a planted symlink). */
int kernels__cache_link(const char *repo_dir, const char *commit, const char *path, const char *etag);

/* Puts blobs/{etag}'s bytes at snapshots/{commit}/{path} as a plain file,
 * as huggingface_hub does where it makes no links: `move` renames the blob
 * there (one this call downloaded and nothing else uses), else a copy,
 * flushed, is renamed there. Replaces what is there atomically; folders as
 * kernels__cache_link. kernels__cache_link falls back to it (a copy) on a
 * filesystem that refuses links. */
int kernels__cache_place(const char *repo_dir, const char *commit, const char *path, const char *etag, int move);

/* 1 when snapshots/{commit}/{path} is our link to blobs/{etag} and the blob
 * exists with `size` bytes. */
int kernels__cache_link_ok(const char *repo_dir, const char *commit, const char *path, const char *etag,
			   long long size);

/* snapshots/{commit}/{path} opened for reading when it is itself a
 * regular file of `size` bytes, its folders walked without following
 * links; *st its fstat. -1 otherwise (no error set). */
struct stat;
int kernels__cache_snapshot_open(const char *repo_dir, const char *commit, const char *path, long long size,
				 struct stat *st);

/* 1 when snapshots/{commit}/{path} is itself a regular file of `size`
 * bytes whose content hashes to `etag` (git's blob sha1, or sha256 for a
 * 64-hex LFS name): huggingface_hub's layout where it makes no links
 * (HF_HUB_DISABLE_SYMLINKS, or a filesystem without them), the blob moved
 * or copied there. Its folders are not followed through links. */
int kernels__cache_file_ok(const char *repo_dir, const char *commit, const char *path, const char *etag,
			   long long size);

/* 1 when blobs/{etag} exists as a regular file of `size` bytes. */
int kernels__cache_blob_ok(const char *repo_dir, const char *etag, long long size);

/* huggingface_hub's shared blob store (2.4, for Xet files): a repo's
 * blobs/<etag> may be a link to <cache>/blobs/<2 hex>/<64 hex>, a file of
 * the cache root that every repo with those bytes shares. 1 when `path`
 * (a real path) is such a file's path beside the repo folder `repo` (a
 * real path), inside the cache as much as the repo is, and the store bears
 * huggingface_hub's marker (blobs/.huggingface-shared-blobs, "1\n"). */
int kernels__cache_shared_blob(const char *repo, const char *path);

/* The path to read blobs/<etag> at, malloc'd (NULL when out of memory):
 * where it leads when it is a link into the shared blob store, else the
 * blob itself, so that an O_NOFOLLOW open still refuses any other link. */
char *kernels__cache_blob_path(const char *repo_dir, const char *etag);

/* fsync(fd), rename `from` to `to`, fsync the folder: the blob appears
 * complete or not at all, even across a crash. Closes fd. *st (may be
 * NULL) receives the published file's identity (all zero if fstat failed).
 * sync_folder (flags): KERNELS__PUBLISH_SYNC_FOLDER syncs the folder after
 * the rename; without it the caller syncs the folder itself (once for many
 * blobs, kernels__cache_sync_folder) before anything refers to the new
 * name. KERNELS__PUBLISH_SYNCED: the caller flushed fd already (several
 * files at once, kernels__fsync_many). */
enum { KERNELS__PUBLISH_SYNC_FOLDER = 1, KERNELS__PUBLISH_SYNCED = 2 };
struct stat;
int kernels__cache_publish(int fd, const char *from, const char *to, struct stat *st, int sync_folder);

/* The same, `from` and `to` being names in the folder `dirfd` (a
 * descriptor from kernels__cache_dir_open: the rename is relative to it, so
 * a folder swapped for a link after the walk is not followed); `shown`
 * names `to` in messages. */
int kernels__cache_publish_at(int fd, int dirfd, const char *from, const char *to, const char *shown,
			      struct stat *st, int sync_folder);

/* fsync of the folder {dir}/{sub} (sub may be NULL): renames into it
 * survive a crash. Best effort, as a folder sync is. */
void kernels__cache_sync_folder(const char *dir, const char *sub);

/* What the cache holds of a commit's variants, asked of the cache alone
 * (no listing): whether a call will fetch (then the CDN's connection opens
 * early: kernels__hub_cdn_warm), whether a variant may load from it. A
 * variant folder is fetched when it holds more than metadata.json (all a
 * lock or the arch check caches of a variant), whole or not: 1, else 0
 * (absent too). */
int kernels__cache_variant_fetched(const char *folder);
/* What kernels__cache_commit_fetched read of a commit's build/, its
 * folders read in turn until one is fetched, kept so that the question
 * asked again of one of them needs no second listing
 * (kernels__cache_seen_fetched). Zeroed: nothing read. */
typedef struct {
	/* that one (malloc'ed); NULL: none was, or it is not known */
	char *first;
	/* those read before it, not fetched (malloc'ed, each too) */
	char **bare;
	size_t n_bare, cap_bare;
	/* build/ absent, or read to its end: none of its folders is fetched */
	int whole;
} kernels__cache_seen;

/* 1 when some variant of `commit` is fetched, or its build/ cannot be read
 * (no guessing), or memory ran out; 0 when none is. `seen` (zeroed or
 * cleared) receives what was read; out of memory, less is kept. */
int kernels__cache_commit_fetched(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
				  const char *commit, kernels__cache_seen *seen);
/* kernels__cache_variant_fetched of `folder`, the folder of `variant` of
 * the commit `seen` was read of: from what was read where it was, else
 * listed now. */
int kernels__cache_seen_fetched(const kernels__cache_seen *seen, const char *variant, const char *folder);
/* Frees what `seen` holds and zeroes it. */
void kernels__cache_seen_clear(kernels__cache_seen *seen);
/* 1 when each of the `n` `variants` (checked names) of `commit` is
 * fetched, or memory ran out; 0 when one is not. */
int kernels__cache_variants_fetched(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
				    const char *commit, const char *const *variants, size_t n);

/* Checks an offline snapshot folder: every link under `dir` resolves to a
 * complete blob. KERNELS_EOFFLINE naming the first broken file otherwise.
 * *only_metadata: 1 when `dir` holds nothing but metadata.json (what a lock
 * or the arch check leaves of a variant it did not download), learned on
 * the same walk. */
int kernels__cache_check_tree(const char *dir, const char *what, int *only_metadata);

#endif
