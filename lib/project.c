/* The locked workflow: pyproject.toml -> kernels.lock -> pinned loads.
 * It reuses the steps of kernels_get (get.h) with the commit the lock pins,
 * and checks a variant's files against the lock hash between fetching and
 * loading, so a variant that differs from what was locked never runs. */
#include "kernels/project.h"
#include "kernels/lock.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "deps.h"
#include "download.h"
#include "error.h"
#include "get.h"
#include "hub.h"
#include "lock.h"
#include "variant.h"
#include "util.h"

static char *lock_path_of(const char *project_dir)
{
	return kernels__sprintf("%s/kernels.lock", project_dir);
}

/* ---- lock --------------------------------------------------------------- */

/* The Python clients write two lock formats, and only one each accepts:
 * kernels 0.17 locks integer majors (dependency + commit), kernels 0.9
 * locked specifier sets (commit + git_lfs_concat hash of every torch
 * variant). A manifest gets the format of the client that reads it. */
static int lock_format_of(const kernels_manifest *m, kernels_lock_format_t *format)
{
	size_t i, specs = 0, n = kernels_manifest_dependency_count(m);

	for (i = 0; i < n; i++)
		specs += kernels_manifest_dependency_at(m, i)->kind == KERNELS_DEPENDENCY_SPECIFIER;
	if (specs && specs != n)
		return kernels__error(KERNELS_EINVAL, "%s mixes major versions (integers) and version specifiers "
				      "(strings) under [tool.kernels.dependencies]; no kernels.lock format holds "
				      "both: use one form for every kernel", kernels_manifest_path(m));
	*format = specs ? KERNELS_LOCK_FORMAT_VARIANTS : KERNELS_LOCK_FORMAT_DEPENDENCY;
	return 0;
}

static int lock_variant_hashes(const kernels__config *cfg, kernels__plan *p, kernels_lock *lock)
{
	kernels__tree tree = { 0 };
	int rc = kernels_lock_add_entry(lock, p->repo.id, kernels_revision_commit(p->rev));

	if (rc == 0)
		rc = kernels__hub_tree_list(cfg, p->repo.type, p->repo.id, kernels_revision_commit(p->rev), "build", 1,
					    &tree);
	if (rc == 0)
		rc = kernels__lock_add_tree_variants_as(lock, p->repo.id, &tree, 1);
	kernels__tree_free(&tree);
	return rc;
}

/* The kernels one locked commit needs, transitively, as Python kernels 0.17
 * locks them (locking.py): every variant's metadata.json is read, not only
 * the one for this machine, so the lock serves every machine. `up` is
 * the chain being locked, for cycles and depth. */
static int lock_kernel(const kernels__config *cfg, const kernels_kernel_dependency *d, kernels_lock *lock,
		       const kernels__dep_chain *up);

static int lock_variant_deps(const kernels__config *cfg, kernels__plan *p, const char *variant, kernels_lock *lock,
			     const kernels__dep_chain *chain)
{
	char *path = kernels__sprintf("build/%s/metadata.json", variant), *local = NULL, *slash;
	kernels_metadata *m = NULL;
	size_t i;
	int rc;

	if (!path)
		return KERNELS_ENOMEM;
	rc = kernels__download_file(cfg, p->repo.type, p->repo.id, kernels_revision_commit(p->rev), path, &local,
				   kernels__plan_guarded(p));
	free(path);
	if (rc == KERNELS_ENOTFOUND) { /* a folder without metadata.json is no variant */
		kernels_error_clear();
		return 0;
	}
	if (rc == 0 && (slash = strrchr(local, '/'))) {
		*slash = '\0';
		rc = kernels_metadata_read(&m, local);
	}
	for (i = 0; rc == 0 && i < kernels_metadata_kernel_depend_count(m); i++) {
		kernels_kernel_dependency d;
		if ((rc = kernels_metadata_kernel_depend_at(&d, m, i)) == 0)
			rc = lock_kernel(cfg, &d, lock, chain);
	}
	kernels_metadata_free(m);
	free(local);
	return rc;
}

static int lock_kernel(const kernels__config *cfg, const kernels_kernel_dependency *d, kernels_lock *lock,
		       const kernels__dep_chain *up)
{
	kernels__dep_chain here = { up, d->repo_id };
	kernels__plan p = { 0 };
	char major[32], **names = NULL;
	size_t i, count = 0;
	int rc;

	if (kernels__deps_lock_find(lock, d)) /* locked already, with what it needs */
		return 0;
	if ((rc = kernels__dep_chain_check(up, d->repo_id)) < 0)
		return rc;
	snprintf(major, sizeof(major), "%lld", d->version);
	p.pinned = 1; /* a moved repo is locked where it is, with a warning */
	rc = kernels__plan_resolve(cfg, d->repo_id, d->revision ? d->revision : major, &p);
	if (rc == 0)
		rc = kernels__variants_list(cfg, p.repo.type, p.repo.id, kernels_revision_commit(p.rev), &names,
					    &count);
	for (i = 0; rc == 0 && i < count; i++)
		rc = lock_variant_deps(cfg, &p, names[i], lock, &here);
	/* The dependency as written, at the commit it resolved to. */
	if (rc == 0 && d->revision)
		rc = kernels_lock_add_revision(lock, d->repo_id, d->revision, kernels_revision_commit(p.rev));
	else if (rc == 0)
		rc = kernels_lock_add_version(lock, d->repo_id, (unsigned long long)d->version,
					      kernels_revision_commit(p.rev));
	kernels__strings_free(names, count);
	kernels__plan_free(&p);
	if (rc < 0 && up)
		kernels__error_prefix("dependency %s of %s", d->repo_id, up->repo_id);
	return rc;
}

static int lock_dependency(const kernels__config *cfg, const kernels_dependency *dep, kernels_lock *lock)
{
	kernels__plan p = { 0 };
	int rc;

	if (dep->kind == KERNELS_DEPENDENCY_VERSION) {
		kernels_kernel_dependency d = { dep->repo_id, (long long)dep->version, NULL };
		rc = lock_kernel(cfg, &d, lock, NULL);
		return rc < 0 ? kernels__error_prefix("locking %s", dep->repo_id) : 0;
	}
	/* A lock pins the commit; which variant fits this machine does not matter. */
	p.pinned = 1;
	rc = kernels__plan_resolve(cfg, dep->repo_id, dep->specifier, &p);
	if (rc == 0)
		rc = lock_variant_hashes(cfg, &p, lock);
	kernels__plan_free(&p);
	return rc < 0 ? kernels__error_prefix("locking %s", dep->repo_id) : 0;
}

int kernels_project_lock(const char *project_dir, const kernels_options *opts)
{
	kernels__config cfg;
	kernels_manifest *manifest = NULL;
	kernels_lock *lock = NULL;
	kernels_lock_format_t format = KERNELS_LOCK_FORMAT_DEPENDENCY;
	char *path = NULL;
	size_t i;
	int rc;

	if (!project_dir)
		return kernels__error(KERNELS_EINVAL, "kernels_project_lock: project_dir is NULL");
	if ((rc = kernels__config_load(&cfg, opts)) < 0)
		return rc;
	rc = kernels_manifest_load(&manifest, project_dir);
	if (rc == 0 && kernels_manifest_dependency_count(manifest) == 0)
		rc = kernels__error(KERNELS_ENOTFOUND, "%s lists no kernels under [tool.kernels.dependencies]; "
				    "add one, e.g. \"kernels-community/activation\" = 1",
				    kernels_manifest_path(manifest));
	if (rc == 0)
		rc = lock_format_of(manifest, &format);
	if (rc == 0)
		rc = kernels_lock_new(&lock, format);
	/* Each kernel gets the call's whole budget (kernels_options.deadline_ms). */
	for (i = 0; rc == 0 && i < kernels_manifest_dependency_count(manifest); i++) {
		kernels__config_deadline_restart(&cfg);
		rc = lock_dependency(&cfg, kernels_manifest_dependency_at(manifest, i), lock);
	}
	if (rc == 0 && !(path = lock_path_of(project_dir)))
		rc = KERNELS_ENOMEM;
	if (rc == 0)
		rc = kernels_lock_save(lock, path);
	free(path);
	kernels_lock_free(lock);
	kernels_manifest_free(manifest);
	kernels__config_free(&cfg);
	return rc;
}

/* ---- pinned loads ------------------------------------------------------- */

/* A VARIANTS-format lock carries git_lfs_concat hashes: the fetched files
 * must hash to what was locked. A DEPENDENCY-format lock pins the commit
 * only; the metadata digest, checked at load, covers the files. */
static int check_lock_hash(const kernels_lock_entry *entry, const char *variant, const char *folder)
{
	char actual[KERNELS_LOCK_HASH_SIZE], alt[KERNELS_LOCK_HASH_SIZE] = "";
	const char *expected;
	int rc;

	if (entry->variant_count == 0)
		return 0;
	if (!(expected = kernels_lock_entry_variant_hash(entry, variant)))
		return kernels__error(KERNELS_EINTEGRITY, "%s@%.7s: variant %s is not in the lock file; "
				      "lock the project again on this system, or pick a locked variant",
				      entry->repo_id, entry->commit, variant);
	if ((rc = kernels_lock_variant_hash_dir(actual, folder, NULL)) < 0)
		return rc;
	/* kernels 0.16 wrote its hashes without committed byte-code */
	if (strcmp(actual, expected) && (rc = kernels__lock_variant_hash_dir_as(folder, NULL, 0, alt)) < 0)
		return rc;
	if (strcmp(actual, expected) && strcmp(alt, expected))
		return kernels__error(KERNELS_EINTEGRITY, "%s@%.7s variant %s does not match the lock file: "
				      "locked %s, files hash to %s; the cache or the Hub content changed, so the "
				      "variant was not loaded (remove it with 'libkernels cache rm %s' and download "
				      "again)", entry->repo_id, entry->commit, variant, expected, actual,
				      entry->repo_id);
	return 0;
}

static int find_entry(const char *lock_path, const char *repo_id, kernels_lock **lock,
		      const kernels_lock_entry **entry)
{
	int rc = kernels_lock_load(lock, lock_path);

	if (rc < 0)
		return rc;
	if (!(*entry = kernels_lock_find(*lock, repo_id)))
		return kernels__error(KERNELS_ENOTFOUND, "kernel '%s' is not in %s; add it to pyproject.toml and run "
				      "'libkernels lock <project>'", repo_id, lock_path);
	return 0;
}

/* The variant fetched, checked against the lock and, with `out`, loaded.
 * A check failed after an online fetch may be a blob damaged in place,
 * which the fetch reuses by its size: the variant is fetched once more,
 * its cached blobs hashed against their names first (as kernels_get's). */
static int fetch_checked(const kernels__config *cfg, kernels__plan *p, const kernels_lock_entry *entry,
			 const char *variant, kernels_get_stats *stats, kernels_kernel **out)
{
	char *folder = NULL;
	int rc, recheck;

	for (recheck = 0; recheck < 2; recheck++) {
		if (recheck)
			kernels__log(cfg, KERNELS_LOG_DEBUG, "%s; checking its cached blobs against their names",
				     kernels_error_last());
		rc = kernels__plan_fetch(cfg, p, variant, recheck, stats, &folder);
		if (rc == 0)
			rc = check_lock_hash(entry, variant, folder);
		if (rc == 0 && out)
			rc = kernels__plan_load(cfg, p, folder, kernels__deps_load, stats, out);
		free(folder);
		folder = NULL;
		if (rc != KERNELS_EINTEGRITY || cfg->offline)
			break;
	}
	kernels__plan_refused(cfg, p, rc);
	return rc;
}

static int get_pinned(const kernels__config *cfg, const kernels_lock_entry *entry, kernels_kernel **out)
{
	kernels_get_stats stats;
	kernels__plan p = { 0 };
	const char *variant;
	int rc;

	memset(&stats, 0, sizeof(stats));
	p.pinned = 1; /* exactly the locked commit of the locked repo, moved or not */
	p.fetch = 1;
	rc = kernels__plan_remote(cfg, entry->repo_id, entry->commit, &p, &stats);
	if (rc == 0 && !(variant = kernels_variant_trace_chosen(p.trace)))
		rc = kernels__variant_no_match(p.trace, p.what, p.sys);
	if (rc == 0)
		rc = fetch_checked(cfg, &p, entry, variant, &stats, out);
	kernels__plan_free(&p);
	return rc;
}

/* No lock_path: $KERNELS_LOCK, else ./kernels.lock (a project run from
 * its folder), as a caller without a package to read one from expects. */
static int default_lock(const char **lock_path)
{
	const char *env = getenv("KERNELS_LOCK");

	if (env && *env) {
		*lock_path = env;
		return 0;
	}
	if (access("kernels.lock", F_OK) == 0) {
		*lock_path = "kernels.lock";
		return 0;
	}
	return kernels__error(KERNELS_ENOTFOUND, "no lock file given, KERNELS_LOCK is not set and there is no "
			      "kernels.lock in the current folder; pass its path, set KERNELS_LOCK, or run "
			      "'libkernels lock <project>' in the project folder");
}

static int locked(kernels_kernel **out, const char *repo_id, const char *lock_path, const kernels_options *opts,
		  int offline)
{
	kernels__config cfg;
	kernels_lock *lock = NULL;
	const kernels_lock_entry *entry = NULL;
	kernels__deps_scope scope = { 0 };
	int rc;

	if (!out || !repo_id)
		return kernels__error(KERNELS_EINVAL, "out and repo_id must be given");
	*out = NULL;
	if (!lock_path && (rc = default_lock(&lock_path)) < 0)
		return rc;
	if ((rc = kernels__config_load(&cfg, opts)) < 0)
		return rc;
	if (offline && !cfg.offline)
		cfg.offline_by = KERNELS__OFFLINE_LOAD_LOCKED;
	cfg.offline |= offline;
	rc = find_entry(lock_path, repo_id, &lock, &entry);
	/* the kernels it depends on are loaded at the commits the lock pins (deps.c) */
	if (rc == 0 && (rc = kernels__deps_lock_begin(&scope, lock)) == 0) {
		rc = get_pinned(&cfg, entry, out);
		kernels__deps_lock_end(&scope);
	}
	if (rc == KERNELS_EOFFLINE && offline && entry)
		kernels__error_prefix("%s@%.7s is locked but not in the cache; run 'libkernels download <project "
				      "folder of %s>' first", repo_id, entry->commit, lock_path);
	kernels_lock_free(lock);
	kernels__config_free(&cfg);
	return rc;
}

int kernels_get_locked(kernels_kernel **out, const char *repo_id, const char *lock_path, const kernels_options *opts)
{
	return locked(out, repo_id, lock_path, opts, 0);
}

int kernels_load_locked(kernels_kernel **out, const char *repo_id, const char *lock_path, const kernels_options *opts)
{
	return locked(out, repo_id, lock_path, opts, 1);
}

/* ---- download ----------------------------------------------------------- */

static int download_entry(const kernels__config *cfg, const kernels_lock_entry *entry, int all_variants)
{
	kernels_get_stats stats;
	kernels__plan p = { 0 };
	size_t i, n;
	int rc;

	memset(&stats, 0, sizeof(stats));
	p.pinned = 1;
	p.fetch = 1;
	rc = kernels__plan_remote(cfg, entry->repo_id, entry->commit, &p, &stats);
	n = rc == 0 ? kernels_variant_trace_count(p.trace) : 0;
	if (rc == 0 && !all_variants && !kernels_variant_trace_chosen(p.trace))
		rc = kernels__variant_no_match(p.trace, p.what, p.sys);
	for (i = 0; rc == 0 && i < n; i++) {
		const char *variant = kernels_variant_trace_name_at(p.trace, i);

		if (all_variants ? !kernels_variant_trace_valid_at(p.trace, i)
				 : strcmp(variant, kernels_variant_trace_chosen(p.trace)))
			continue;
		rc = fetch_checked(cfg, &p, entry, variant, &stats, NULL);
	}
	kernels__plan_free(&p);
	return rc < 0 ? kernels__error_prefix("downloading %s", entry->repo_id) : 0;
}

int kernels_project_download(const char *project_dir, int all_variants, const kernels_options *opts)
{
	kernels__config cfg;
	kernels_lock *lock = NULL;
	char *path;
	size_t i;
	int rc;

	if (!project_dir)
		return kernels__error(KERNELS_EINVAL, "kernels_project_download: project_dir is NULL");
	if (!(path = lock_path_of(project_dir)))
		return KERNELS_ENOMEM;
	if ((rc = kernels__config_load(&cfg, opts)) < 0) {
		free(path);
		return rc;
	}
	rc = kernels_lock_load(&lock, path);
	for (i = 0; rc == 0 && i < kernels_lock_entry_count(lock); i++) {
		kernels__config_deadline_restart(&cfg);
		rc = download_entry(&cfg, kernels_lock_entry_at(lock, i), all_variants);
	}
	kernels_lock_free(lock);
	kernels__config_free(&cfg);
	free(path);
	return rc;
}
