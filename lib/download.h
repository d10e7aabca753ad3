/* Internal: the fetch stage. Takes a resolved commit and the files of some
 * build variants, and makes them present and verified in the cache
 * (lib/cache.h) with the Hub client's transfer engine
 * (kernels__hub_fetch_tree, lib/hub.h). */
#ifndef KERNELS_LIB_DOWNLOAD_H
#define KERNELS_LIB_DOWNLOAD_H

#include "kernels/download.h"
#include "config.h"
#include "hub.h"
#include "repo.h"
#include "revision.h"

/* Kernel repo or model repo: the one place it is decided, once per call,
 * and then passed by value to every stage (none changes it). The cache
 * first (kernels__cache_repo_type: a folder it has for the repo); offline,
 * with none, a kernel repo; online, with none, the Hub's answer
 * (kernels__hub_repo_type, one request: a cold commit pin). KERNELS_ENOTFOUND
 * when neither form exists. */
int kernels__repo_locate(const kernels__config *cfg, const char *repo_id, const char *commit,
			 kernels__repo_type *type);
/* The same for a resolved revision: when the Hub's refs listing found the
 * repo under one form, that form, with no request. */
int kernels__repo_locate_revision(const kernels__config *cfg, const kernels_revision *rev, kernels__repo_type *type);

/* What a caller already knows of the repo's cache folder, for `flags`
 * below: KERNELS__DOWNLOAD_GUARDED when kernels__cache_guard passed for the
 * repo (of that type) earlier in the same call (a plan runs it once, first:
 * plan.h), so the stage does not look again. 0: the stage runs the guard. */
#define KERNELS__DOWNLOAD_GUARDED 1u
/* The caller verifies the variants next, every file (the loader: plan.c),
 * so offline the stage does not walk them first: that walk says, in
 * offline terms, what the cache lacks (verify.c). Without it, offline,
 * each variant is walked here: every link must reach a blob, and a
 * folder with only metadata.json is not a downloaded variant. */
#define KERNELS__DOWNLOAD_VERIFIED 2u
/* No plan opened the CDN's connection early for this call (kernels_download:
 * plan.c does for a get): online, when a variant asked for is not in the
 * cache beyond its metadata.json, the stage does (kernels__hub_cdn_warm),
 * before the build/ listing, so that it is open when the first redirect
 * comes. */
#define KERNELS__DOWNLOAD_WARM 4u
/* The variant failed its verification after a download that reused blobs
 * by their size (plan.c): each blob its files name is hashed against its
 * name first, and one that does not match (damaged in place) is fetched
 * again; the listing is the Hub's, not the cache's record of it. Reads
 * every blob: for that repair only. */
#define KERNELS__DOWNLOAD_RECHECK 8u

/* Everything under build/{variant}/ of each variant, of the repo of that
 * `type`. On success *snapshot_dir (malloc'ed, may be NULL to skip) is the
 * snapshot folder. */
int kernels__download(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
		      const char *commit, const char *const *variants, size_t n_variants, char **snapshot_dir,
		      kernels_download_stats *stats, unsigned int flags);

/* Variant names under build/ (sorted, malloc'ed array of malloc'ed strings). */
int kernels__variants_list(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			   const char *commit, char ***names, size_t *count);
/* The same, telling where they came from (kernels__listing_get): 1 from
 * the cache's record of the listing, else 0; `ask`: from the Hub, even
 * where there is a record. */
int kernels__variants_list_from(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
				const char *commit, int ask, char ***names, size_t *count);

/* One repo file by path (e.g. "kernel-status.toml"), verified against the
 * Hub's ETag and X-Linked-Size, cached and linked; *local_path (malloc'ed)
 * is its snapshot path. No request at all when the snapshot already has the
 * file, or when huggingface_hub's marker .no_exist/{commit}/{path} says the
 * commit has no such file (KERNELS_ENOTFOUND; the marker is written when the
 * Hub answers EntryNotFound). Offline and not cached: KERNELS_EOFFLINE. */
int kernels__download_file(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			   const char *commit, const char *path, char **local_path, unsigned int flags);

/* Records, as huggingface_hub does (.no_exist/{commit}/{path}), that a
 * listing of `commit` shows no `path`. Best effort: errors are dropped. */
void kernels__download_mark_absent(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
				   const char *commit, const char *path);

/* 1 when the cache alone answers for `path` at `commit` (the snapshot has
 * it, or huggingface_hub's .no_exist marker says it is absent): asking the
 * Hub would add nothing. */
int kernels__download_file_known(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
				 const char *commit, const char *path);

#endif
