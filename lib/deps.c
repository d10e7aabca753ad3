/* Kernel-to-kernel dependencies: a variant's metadata.json lists, under
 * `kernel-depends`, other Hub kernels by repo id and major version (the
 * branch vN) or revision. As Python kernels 0.17 does (deps.py,
 * resolver.py), each is resolved for this system (LOCAL_KERNELS first,
 * then the Hub, or the cache offline; a locked load takes the lock's
 * commit), fetched, verified and loaded before the kernel needing it, its
 * own dependencies before it; a cycle is an error.
 *
 * Stricter than 0.17, which loads whatever each branch of the tree asks
 * for: one repo is loaded at one commit per process. A dependency is
 * shared by every kernel needing it (a diamond loads its base once), and
 * two kernels asking for different commits of one repo are refused with
 * both named, since their modules would define the same symbols and
 * register the same torch ops. The loader makes a dependency's symbols
 * global only when the dependent's module needs them (loader.c).
 *
 * The state of one resolution lives in a per-thread context: the loader
 * calls back into this file, through the kernels__deps_fn its caller hands
 * it, for each dependency (deps -> plan -> loader -> kernels__deps_load
 * ...), all on the calling thread. */
#include "deps.h"
#include "error.h"
#include "fork.h"
#include "plan.h"
#include "loader.h"
#include "util.h"
#include "download.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A repo settled at a commit, and who first needed it. */
typedef struct {
	char *repo, *commit, *by;
} settled;

typedef struct {
	const kernels_lock *lock;  /* a locked load: commits come from here */
	const char **stack;        /* the kernels whose dependencies are being loaded, outermost first */
	size_t depth, cap;
	settled *done;
	size_t ndone, done_cap;
} ctx;

/* The calling thread's resolution, only while it runs (one call's state;
 * no other call or thread sees it). */
static __thread ctx *current;

/* Every repo loaded as a dependency in this process, and its commit: a
 * fact of the process (its modules stay mapped, loader.c), not a setting,
 * so it is process-wide on purpose, behind loaded_lock. */
static pthread_mutex_t loaded_lock = PTHREAD_MUTEX_INITIALIZER;
static settled *loaded;
static size_t nloaded, loaded_cap;

void kernels__deps_fork(kernels__fork_phase phase)
{
	kernels__fork_mutex(&loaded_lock, phase);
}

static void ctx_free(ctx *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->ndone; i++) {
		free(c->done[i].repo);
		free(c->done[i].commit);
		free(c->done[i].by);
	}
	free(c->done);
	free(c->stack);
	free(c);
}

static int add_settled(settled **v, size_t *n, size_t *cap, const char *repo, const char *commit, const char *by)
{
	settled *w;

	if (KERNELS__ARRAY_GROW(*v, *cap, *n) < 0)
		return KERNELS_ENOMEM;
	w = *v;
	w[*n].repo = kernels__strdup(repo);
	w[*n].commit = kernels__strdup(commit);
	w[*n].by = kernels__strdup(by);
	if (!w[*n].repo || !w[*n].commit || !w[*n].by) {
		free(w[*n].repo);
		free(w[*n].commit);
		free(w[*n].by);
		return KERNELS_ENOMEM;
	}
	(*n)++;
	return 0;
}

static const settled *find_settled(const settled *v, size_t n, const char *repo)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(v[i].repo, repo))
			return &v[i];
	return NULL;
}

/* "a/top -> a/left -> a/base" */
static char *chain(const ctx *c, const char *last)
{
	kernels__buf b = { 0 };
	size_t i;

	for (i = 0; i < c->depth; i++)
		kernels__buf_printf(&b, "%s -> ", c->stack[i]);
	kernels__buf_puts(&b, last);
	return kernels__buf_detach(&b);
}

static int too_deep(const char *path)
{
	return kernels__error(KERNELS_EINVAL, "kernel dependencies nest deeper than %d levels: %s; no kernel needs "
			      "that many: check what these repos' metadata.json name in kernel-depends",
			      KERNELS__DEPS_DEPTH_MAX, path);
}

static int push(ctx *c, const char *self)
{
	char *path;
	int rc;

	if (c->depth >= KERNELS__DEPS_DEPTH_MAX) {
		path = chain(c, self);
		rc = too_deep(path ? path : self);
		free(path);
		return rc;
	}
	if (KERNELS__ARRAY_GROW(c->stack, c->cap, c->depth) < 0)
		return KERNELS_ENOMEM;
	c->stack[c->depth++] = self;
	return 0;
}

int kernels__dep_chain_check(const kernels__dep_chain *up, const char *repo_id)
{
	const kernels__dep_chain *c;
	kernels__buf b = { 0 };
	size_t depth = 0;
	int rc;

	for (c = up; c; c = c->up, depth++)
		if (!strcmp(c->repo_id, repo_id))
			return kernels__error(KERNELS_EINVAL, "cyclic kernel dependency detected: %s needs itself "
					      "(through %s)", repo_id, up->repo_id);
	if (depth <= KERNELS__DEPS_DEPTH_MAX) /* as deep as a load goes (push) */
		return 0;
	kernels__buf_puts(&b, repo_id);
	for (c = up; c; c = c->up)
		kernels__buf_printf(&b, " <- %s", c->repo_id);
	rc = too_deep(b.ptr ? b.ptr : repo_id);
	kernels__buf_free(&b);
	return rc;
}

static void describe(const kernels_kernel_dependency *d, char *buf, size_t size)
{
	if (d->revision)
		snprintf(buf, size, "%s (revision %s)", d->repo_id, d->revision);
	else
		snprintf(buf, size, "%s (version %lld)", d->repo_id, d->version);
}

/* ---- LOCAL_KERNELS --------------------------------------------------------- */

int kernels__local_kernels_lookup(const kernels__config *cfg, const char *repo_id, char **path)
{
	const char *s = cfg->local_kernels;
	int found = 0;

	*path = NULL;
	if (!s)
		return 0;
	/* Every entry is checked, so a typo is an error whichever repo is asked. */
	for (;;) {
		const char *end = strchr(s, ':'), *eq;
		size_t len = end ? (size_t)(end - s) : strlen(s);

		eq = memchr(s, '=', len);
		if (!eq) {
			free(*path);
			*path = NULL;
			return kernels__error(KERNELS_EINVAL, "invalid LOCAL_KERNELS entry '%.*s'; expected "
					      "repo_id_1=path_1:repo_id_2=path_2", (int)len, s);
		}
		/* The last entry for a repo wins, as in Python's dict. */
		if ((size_t)(eq - s) == strlen(repo_id) && !strncmp(s, repo_id, (size_t)(eq - s))) {
			free(*path);
			if (!(*path = strndup(eq + 1, len - (size_t)(eq - s) - 1)))
				return kernels__error_oom();
			found = 1;
		}
		if (!end)
			break;
		s = end + 1;
	}
	return found;
}

/* ---- locks ------------------------------------------------------------------ */

const kernels_lock_entry *kernels__deps_lock_find(const kernels_lock *lock, const kernels_kernel_dependency *d)
{
	size_t i;

	for (i = 0; i < kernels_lock_entry_count(lock); i++) {
		const kernels_lock_entry *e = kernels_lock_entry_at(lock, i);
		if (strcmp(e->repo_id, d->repo_id))
			continue;
		if (e->request == KERNELS_LOCK_REQUEST_NONE ||
		    (e->request == KERNELS_LOCK_REQUEST_VERSION && !d->revision &&
		     (long long)e->version == d->version) ||
		    (e->request == KERNELS_LOCK_REQUEST_REVISION && d->revision && !strcmp(e->revision, d->revision)))
			return e;
	}
	return NULL;
}

int kernels__deps_lock_begin(kernels__deps_scope *scope, const kernels_lock *lock)
{
	ctx *c = calloc(1, sizeof(*c));

	if (!c)
		return kernels__error_oom();
	c->lock = lock;
	scope->saved = current;
	scope->ctx = c;
	current = c;
	return 0;
}

void kernels__deps_lock_end(kernels__deps_scope *scope)
{
	if (!scope->ctx)
		return;
	current = scope->saved;
	ctx_free(scope->ctx);
	scope->ctx = NULL;
}

/* ---- one dependency --------------------------------------------------------- */

static int conflict(const char *repo, const char *commit, const char *by, const settled *s, const char *where)
{
	return kernels__error(KERNELS_ENOMATCH, "dependency conflict: %s needs %s at %.12s, but %s %s it at %.12s; "
			      "libkernels loads one commit of a repo per process: make both kernels depend on the "
			      "same version of %s", by, repo, commit, s->by, where, s->commit, repo);
}

/* Settles `repo` at `commit` for this resolution, or refuses a second commit. */
static int settle(ctx *c, const char *repo, const char *commit, const char *by)
{
	const settled *s;
	int rc = 0;

	if ((s = find_settled(c->done, c->ndone, repo)))
		return strcmp(s->commit, commit) ? conflict(repo, commit, by, s, "needs") : 0;
	pthread_mutex_lock(&loaded_lock);
	if ((s = find_settled(loaded, nloaded, repo)) && strcmp(s->commit, commit))
		rc = conflict(repo, commit, by, s, "already loaded in this process (needed by it)");
	pthread_mutex_unlock(&loaded_lock);
	return rc < 0 ? rc : add_settled(&c->done, &c->ndone, &c->done_cap, repo, commit, by);
}

static void remember_loaded(const char *repo, const char *commit, const char *by)
{
	pthread_mutex_lock(&loaded_lock);
	if (!find_settled(loaded, nloaded, repo) && add_settled(&loaded, &nloaded, &loaded_cap, repo, commit, by) < 0)
		kernels_error_clear(); /* only the conflict check on a later load is weaker */
	pthread_mutex_unlock(&loaded_lock);
}

static int from_hub(const kernels__config *cfg, ctx *c, const char *self, const kernels_kernel_dependency *d,
		    kernels_kernel **out)
{
	kernels_get_stats stats;
	kernels__plan p = { 0 };
	const kernels_lock_entry *entry = NULL;
	char major[32];
	const char *revision = d->revision;
	int rc;

	if (c->lock) {
		if (!(entry = kernels__deps_lock_find(c->lock, d))) {
			char what[300];
			describe(d, what, sizeof(what));
			return kernels__error(KERNELS_ENOTFOUND,
					      "dependency %s of %s is not in the lock file; lock the "
					      "project again ('libkernels lock <project>') so it records every kernel "
					      "the locked ones need", what, self);
		}
		revision = entry->commit;
	} else if (!revision) {
		snprintf(major, sizeof(major), "%lld", d->version);
		revision = major;
	}
	memset(&stats, 0, sizeof(stats));
	p.pinned = c->lock != NULL; /* a locked commit is loaded, moved or not */
	p.fetch = 1;
	rc = kernels__plan_remote(cfg, d->repo_id, revision, &p, &stats);
	if (rc == 0)
		rc = settle(c, p.repo.id, kernels_revision_commit(p.rev), self);
	if (rc == 0)
		rc = kernels__plan_fetch_and_load(cfg, &p, kernels__deps_load, &stats, out);
	if (rc == 0)
		remember_loaded(p.repo.id, kernels_revision_commit(p.rev), self);
	kernels__plan_free(&p);
	return rc;
}

static int load_one(const kernels__config *cfg, ctx *c, const char *self, const kernels_kernel_dependency *d,
		    kernels_kernel **out)
{
	char *local = NULL;
	int rc = 0;

	/* LOCAL_KERNELS serves dependencies too, except in a locked load. */
	if (!c->lock && (rc = kernels__local_kernels_lookup(cfg, d->repo_id, &local)) < 0)
		return rc;
	if (rc == 1) {
		rc = settle(c, d->repo_id, local, self);
		if (rc == 0 &&
		    (rc = kernels__loader_open_local(cfg, kernels__deps_load, d->repo_id, local, NULL, out)) < 0)
			kernels__error_prefix("loading %s from LOCAL_KERNELS path '%s'", d->repo_id, local);
		free(local);
		return rc;
	}
	return from_hub(cfg, c, self, d, out);
}

/* ---- the dependencies of one kernel ----------------------------------------- */

void kernels__deps_close(struct kernels_kernel **deps, size_t n)
{
	size_t i;

	for (i = 0; deps && i < n; i++)
		kernels_kernel_close(deps[i]);
	free(deps);
}

static int on_stack(const ctx *c, const char *repo)
{
	size_t i;

	for (i = 0; i < c->depth; i++)
		if (!strcmp(c->stack[i], repo))
			return 1;
	return 0;
}

static int load_all(const kernels__config *cfg, ctx *c, const char *self, const kernels_metadata *meta,
		    const char *what, kernels_kernel **v, size_t n)
{
	size_t i;
	int rc = push(c, self);

	if (rc < 0)
		return rc; /* nothing pushed */
	for (i = 0; rc == 0 && i < n; i++) {
		kernels_kernel_dependency d;
		char *path;

		if ((rc = kernels_metadata_kernel_depend_at(&d, meta, i)) < 0)
			break;
		if (on_stack(c, d.repo_id) || !strcmp(d.repo_id, self)) {
			path = chain(c, d.repo_id);
			rc = kernels__error(KERNELS_EINVAL,
					    "cyclic kernel dependency: %s; a kernel cannot need itself, "
					    "directly or through others", path ? path : d.repo_id);
			free(path);
			break;
		}
		kernels__log(cfg, KERNELS_LOG_DEBUG, "%s: loading dependency %s first", what, d.repo_id);
		if ((rc = load_one(cfg, c, self, &d, &v[i])) < 0) {
			char desc[300];
			describe(&d, desc, sizeof(desc));
			kernels__error_prefix("dependency %s of %s", desc, what);
		}
	}
	c->depth--;
	return rc;
}

int kernels__deps_load(const kernels__config *cfg, const char *self, const char *commit,
		       const kernels_metadata *meta, const char *what, struct kernels_kernel ***deps, size_t *n)
{
	size_t count = kernels_metadata_kernel_depend_count(meta);
	kernels_kernel **v;
	ctx *c = current;
	int rc, created = !c;

	*deps = NULL;
	*n = 0;
	if (count == 0)
		return 0;
	if (!(v = calloc(count, sizeof(*v))))
		return kernels__error_oom();
	if (created && !(c = current = calloc(1, sizeof(*c)))) {
		free(v);
		return kernels__error_oom();
	}
	/* The kernel itself is settled at its commit: a dependency on another
	 * commit of it is a cycle, reported as one below. */
	rc = commit && !find_settled(c->done, c->ndone, self)
		     ? add_settled(&c->done, &c->ndone, &c->done_cap, self, commit, self) : 0;
	if (rc == 0)
		rc = load_all(cfg, c, self, meta, what, v, count);
	if (created) {
		current = NULL;
		ctx_free(c);
	}
	if (rc < 0) {
		kernels__deps_close(v, count);
		return rc;
	}
	*deps = v;
	*n = count;
	return 0;
}

/* ---- has_kernel with dependencies ----------------------------------------------- */

static int has_deps(const kernels__config *cfg, const kernels_metadata *m, const kernels__dep_chain *up);

/* 1 when `repo_id` at `revision` has a variant for this system and so do
 * its dependencies, 0 when one lacks it, <0 on an error (as 0.17's
 * has_kernel, which resolves the whole tree). */
static int has_one(const kernels__config *cfg, const char *repo_id, const char *revision,
		   const kernels__dep_chain *up)
{
	kernels__dep_chain here = { up, repo_id };
	kernels_get_stats stats;
	kernels__plan p = { 0 };
	kernels_variant_trace *t = NULL;
	kernels_metadata *m = NULL;
	char *local = NULL, *path = NULL, *file = NULL, *slash;
	const char *chosen;
	int rc;

	if ((rc = kernels__dep_chain_check(up, repo_id)) < 0 ||
	    (rc = kernels__local_kernels_lookup(cfg, repo_id, &local)) < 0)
		return rc;
	if (rc == 1) { /* a local tree: its decisions and the chosen folder's metadata */
		if ((rc = kernels__local_trace(cfg, local, NULL, &t)) == 0 &&
		    (chosen = kernels_variant_trace_chosen(t))) {
			char *dir = kernels__sprintf("%s/build/%s", local, chosen);
			if (dir && access(dir, F_OK) != 0) {
				free(dir);
				dir = kernels__sprintf("%s/%s", local, chosen);
			}
			if (!dir || kernels_metadata_read(&m, dir) < 0)
				/* a variant folder itself, or no metadata: no dependencies known */
				kernels_error_clear();
			free(dir);
		}
		rc = rc < 0 ? rc : kernels_variant_trace_chosen(t) != NULL;
		kernels_variant_trace_free(t);
		free(local);
	} else {
		memset(&stats, 0, sizeof(stats));
		if ((rc = kernels__plan_remote(cfg, repo_id, revision, &p, &stats)) == 0 &&
		    (chosen = kernels_variant_trace_chosen(p.trace)) &&
		    (path = kernels__sprintf("build/%s/metadata.json", chosen)) &&
		    kernels__download_file(cfg, p.repo.type, p.repo.id, kernels_revision_commit(p.rev), path,
					   &file, kernels__plan_guarded(&p)) == 0 &&
		    (slash = strrchr(file, '/'))) {
			*slash = '\0';
			if (kernels_metadata_read(&m, file) < 0)
				kernels_error_clear();
		}
		rc = rc < 0 ? rc : kernels_variant_trace_chosen(p.trace) != NULL;
		kernels__plan_free(&p);
		free(path);
		free(file);
	}
	if (rc == 1 && m)
		rc = has_deps(cfg, m, &here);
	kernels_metadata_free(m);
	return rc;
}

static int has_deps(const kernels__config *cfg, const kernels_metadata *m, const kernels__dep_chain *up)
{
	size_t i;
	int rc = 1;

	for (i = 0; rc == 1 && i < kernels_metadata_kernel_depend_count(m); i++) {
		kernels_kernel_dependency d;
		char major[32];

		if ((rc = kernels_metadata_kernel_depend_at(&d, m, i)) < 0)
			break;
		snprintf(major, sizeof(major), "%lld", d.version);
		rc = has_one(cfg, d.repo_id, d.revision ? d.revision : major, up);
		/* a dependency that does not exist is "no kernel", as 0.17's FileNotFoundError */
		if (rc == KERNELS_ENOTFOUND || rc == KERNELS_ENOMATCH) {
			kernels_error_clear();
			rc = 0;
		}
	}
	return rc;
}

int kernels__deps_has_kernel(const kernels__config *cfg, const char *repo_id, const char *revision)
{
	return has_one(cfg, repo_id, revision, NULL);
}
