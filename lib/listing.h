/* Internal: a commit's build/ listing, asked of the Hub once and then read
 * from the cache's record of it.
 *
 * A commit never changes, so neither does its tree: the recursive listing
 * of build/ (every variant's files with their hashes and sizes) is kept in
 * the repo's cache folder as
 *
 *   {repo}/.libkernels/trees/{commit}/build.tsv
 *
 * and every later call (variant names, a variant's files, a CUDA
 * candidate's metadata.json) reads it instead of asking. huggingface_hub
 * (1.x) keeps no tree listings and the Hub's cache layout documents none
 * (refs/, blobs/, snapshots/, .no_exist/), so the record is libkernels'
 * own, under its .libkernels/ folder; Python clients ignore it.
 *
 * The record is text, one entry a line, checked on every read exactly as
 * the Hub's answer is (paths, hashes, sizes, order, no file used as a
 * folder); a record that fails a check, or is cut short (its last line
 * counts the entries), is ignored and the Hub asked again. It weakens
 * nothing: whoever can write it can already write the blobs and snapshot
 * links it describes, and every byte is still verified against the hash
 * it names before it enters the cache, and before it is loaded. */
#ifndef KERNELS_LIB_LISTING_H
#define KERNELS_LIB_LISTING_H

#include "config.h"
#include "tree.h"
#include "repo.h"

/* The most entries a build/ listing may have: twice what one variant may
 * have (lib/verify.c: 100,000 files), and a thousand times what the
 * largest kernel repos list. A listing with more is refused as soon as a
 * page takes it past this, so a hostile one costs no more than this many. */
#define KERNELS__LISTING_MAX 200000

/* The recursive listing of build/ at `commit`, sorted by path: the
 * record when the cache has a sound one (no request), else the Hub's
 * (recorded for next time), of the repo of that `type`. Online only:
 * offline, callers read the snapshot. Free with kernels__tree_free. */
int kernels__listing_build(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			   const char *commit, kernels__tree *out);

/* The same, telling where it came from: 1 from the record, 0 from the
 * Hub. `ask`: the Hub's even where there is a record, which its answer
 * replaces; for a caller the Hub's answers showed the record wrong (a
 * file's hash or size, a file it lacks): a record only saves a request and
 * is never trusted past that. */
int kernels__listing_get(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			 const char *commit, int ask, kernels__tree *out);

/* Reads the record only: 1 with *out filled, 0 when there is none (or it
 * is not sound), <0 on an error (out of memory). */
int kernels__listing_read(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			  const char *commit, kernels__tree *out);

/* The same for the repo's cache folder `repo_dir` (a real path or not). */
int kernels__listing_read_at(const kernels__config *cfg, const char *repo_dir, const char *commit,
			     kernels__tree *out);

/* Drops the record of `commit`, best effort, keeping the caller's error:
 * the Hub's answers for the files contradicted the listing it just gave
 * (another hash, another size, no such file), which is not kept. */
void kernels__listing_forget(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			     const char *commit);

/* 1 when the cache holds a record for `commit`: no listing request will be
 * needed (unless the record is unsound). */
int kernels__listing_recorded(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			      const char *commit);

#endif
