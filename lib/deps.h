/* Internal: kernel-to-kernel dependencies (metadata.json `kernel-depends`),
 * resolved and loaded before the kernel that needs them (lib/deps.c). */
#ifndef KERNELS_LIB_DEPS_H
#define KERNELS_LIB_DEPS_H

#include "kernels/kernel.h"
#include "kernels/lock.h"
#include "config.h"

/* Loads the kernel-depends of `meta`, the metadata of variant `what` of
 * `self` (a repo id, or the real path of a local tree) at `commit` (NULL
 * for local trees): each is resolved (LOCAL_KERNELS, else the Hub or the
 * cache; a locked scope's lock when one is open), fetched and loaded with
 * its own dependencies first. *deps receives a reference on each (a
 * malloc'ed array of *n); with no dependencies nothing happens and *deps
 * is NULL. Errors: a cycle (KERNELS_EINVAL), two commits of one repo in
 * the process (KERNELS_ENOMATCH, naming who needs which), a dependency
 * missing from the lock (KERNELS_ENOTFOUND), and every error of kernels_get
 * for the dependency, prefixed with the chain that needed it. */
int kernels__deps_load(const kernels__config *cfg, const char *self, const char *commit,
		       const kernels_metadata *meta, const char *what, struct kernels_kernel ***deps, size_t *n);

/* Kernel dependencies nest at most this deep: each level is a whole
 * resolution on the thread's stack, and a chain of repos as long as its
 * publisher likes would exhaust it (real kernels nest a few levels). */
#define KERNELS__DEPS_DEPTH_MAX 16

/* The chain of kernel-depends a walk is in, innermost first (`up` to the
 * kernel that needs it): what every walk checks a dependency against. */
typedef struct kernels__dep_chain {
	const struct kernels__dep_chain *up;
	const char *repo_id;
} kernels__dep_chain;

/* 0 when `repo_id` may be walked below `up` (NULL: at the top);
 * KERNELS_EINVAL when it is on the chain already (a cycle) or the chain is
 * KERNELS__DEPS_DEPTH_MAX long, naming the chain. */
int kernels__dep_chain_check(const kernels__dep_chain *up, const char *repo_id);

/* Drops the references of kernels__deps_load and frees the array. */
void kernels__deps_close(struct kernels_kernel **deps, size_t n);

/* A locked load (project.c): while the scope is open in this thread, every
 * dependency is loaded at the commit `lock` pins for it (the entry of the
 * same repo id and version or revision), never resolved again, never
 * redirected; LOCAL_KERNELS does not apply. */
typedef struct kernels__deps_scope {
	void *saved;
	void *ctx;
} kernels__deps_scope;
int kernels__deps_lock_begin(kernels__deps_scope *scope, const kernels_lock *lock);
void kernels__deps_lock_end(kernels__deps_scope *scope);

/* The entry of `lock` for a dependency (repo id + version N or revision),
 * as Python kernels keys its locks; for a VARIANTS-format lock the repo's
 * entry. NULL when not locked. */
const kernels_lock_entry *kernels__deps_lock_find(const kernels_lock *lock, const kernels_kernel_dependency *d);

/* $LOCAL_KERNELS ("org/a=/path/a:org/b=/path/b", as Python kernels 0.17
 * parses it): 1 and the path (malloc'ed) when `repo_id` is listed, 0 when
 * not, KERNELS_EINVAL naming the entry when an entry has no '='. */
int kernels__local_kernels_lookup(const kernels__config *cfg, const char *repo_id, char **path);

/* kernels_has_kernel as Python kernels 0.17's has_kernel: 1 when `repo_id`
 * at `revision` has a variant for this system and so do all of its
 * kernel-depends (transitively; LOCAL_KERNELS applies), 0 when one lacks
 * it (a missing dependency repo or version counts as lacking), <0 on an
 * error (a cycle: KERNELS_EINVAL). Downloads only the chosen variants'
 * metadata.json. */
int kernels__deps_has_kernel(const kernels__config *cfg, const char *repo_id, const char *revision);

#endif
