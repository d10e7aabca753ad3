/* The fetch stage: a resolved commit's build variants into the cache.
 * It lists what a variant holds (or what the cache holds, offline) and
 * hands the files to the Hub client's transfer engine (hub_fetch.c), which
 * does every byte of HTTP. */
#include "download.h"
#include "cache.h"
#include "error.h"
#include "util.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- variants ---------------------------------------------------------------------- */

static int variant_name_check(const char *v)
{
	if (!v || !*v || strchr(v, '/') || kernels__repo_path_check(v) < 0)
		return kernels__error(KERNELS_EINVAL, "variant name '%.200s' is not one plain folder name; pass a "
				      "name such as \"torch27-cxx11-cu126-x86_64-linux\"", v ? v : "(null)");
	return 0;
}

static int args_check(const char *repo_id, const char *commit)
{
	int rc;

	if ((rc = kernels__repo_id_check(repo_id)) < 0)
		return rc;
	if (!kernels__is_commit(commit))
		return kernels__error(KERNELS_EINVAL, "'%.100s' is not a full 40-hex commit id (lower case); resolve the "
				      "revision first (kernels_revision_resolve)", commit ? commit : "(null)");
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int list_offline(const kernels__config *cfg, kernels__repo_type *type, const char *repo_id,
			const char *commit, char ***names, size_t *count)
{
	char *dir = NULL, *build = NULL;
	DIR *d;
	struct dirent *de;
	size_t n = 0, cap = 0;
	char **out = NULL;
	int rc;

	if ((rc = kernels__cache_find_snapshot(cfg, repo_id, commit, type)) < 0)
		return rc;
	if (!(dir = kernels__cache_repo_dir(cfg, *type, repo_id)) ||
	    !(build = kernels__sprintf("%s/snapshots/%s/build", dir, commit))) {
		free(dir);
		return KERNELS_ENOMEM;
	}
	free(dir);
	if (!(d = opendir(build))) {
		rc = kernels__error(KERNELS_EOFFLINE, "offline: %s at %s has no build/ folder in the cache (%s); "
				    "download a variant while online", repo_id, commit, build);
		free(build);
		return rc;
	}
	while ((de = readdir(d))) {
		char *p;
		struct stat st;
		int ok;
		if (de->d_name[0] == '.')
			continue;
		if (!(p = kernels__sprintf("%s/%s", build, de->d_name))) {
			rc = KERNELS_ENOMEM;
			break;
		}
		ok = stat(p, &st) == 0 && S_ISDIR(st.st_mode);
		free(p);
		if (!ok)
			continue;
		if (n == cap) {
			char **g = realloc(out, (cap = cap ? cap * 2 : 8) * sizeof(*out));
			if (!g) {
				rc = kernels__error_oom();
				break;
			}
			out = g;
		}
		if (!(out[n] = kernels__strdup(de->d_name))) {
			rc = KERNELS_ENOMEM;
			break;
		}
		n++;
	}
	closedir(d);
	free(build);
	if (rc < 0) {
		/* A short list would read as "these are all the variants". */
		kernels_variants_free(out, n);
		return rc;
	}
	if (n)
		qsort(out, n, sizeof(*out), name_cmp);
	*names = out;
	*count = n;
	return 0;
}

int kernels__variants_list(const kernels__config *cfg, kernels__repo_type *type, const char *repo_id,
			   const char *commit, char ***names, size_t *count)
{
	kernels__tree t;
	size_t i, n = 0;
	char **out;
	int rc;

	*names = NULL;
	*count = 0;
	if ((rc = args_check(repo_id, commit)) < 0)
		return rc;
	if (cfg->offline)
		return list_offline(cfg, type, repo_id, commit, names, count);
	if ((rc = kernels__hub_tree_list(cfg, type, repo_id, commit, "build", 0, &t)) < 0)
		return rc;
	if (!(out = calloc(t.n ? t.n : 1, sizeof(*out)))) {
		kernels__tree_free(&t);
		return kernels__error_oom();
	}
	for (i = 0; i < t.n; i++) {
		const char *p = t.entries[i].path + strlen("build/");
		if (!t.entries[i].is_dir || strchr(p, '/'))
			continue;
		if (!(out[n] = kernels__strdup(p))) {
			kernels_variants_free(out, n);
			kernels__tree_free(&t);
			return KERNELS_ENOMEM;
		}
		n++;
	}
	kernels__tree_free(&t);
	qsort(out, n, sizeof(*out), name_cmp);
	*names = out;
	*count = n;
	return 0;
}

/* For a missing variant: the names the commit does have. */
static void explain_missing(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			    const char *commit, const char *variant)
{
	char saved[4096], **names = NULL;
	size_t n = 0, i;
	kernels__buf b = { 0 };

	snprintf(saved, sizeof(saved), "%s", kernels_error_last());
	if (kernels__variants_list(cfg, &type, repo_id, commit, &names, &n) < 0) {
		/* Without the list there is nothing to add: keep the Hub's answer. */
		kernels__error(KERNELS_ENOTFOUND, "%s", saved);
		return;
	}
	for (i = 0; i < n; i++)
		kernels__buf_printf(&b, "%s%s", i ? ", " : "", names[i]);
	kernels_variants_free(names, n);
	kernels__error(KERNELS_ENOTFOUND, "%s at %.12s has no variant '%s'; it has: %s (pick one of these, or "
		       "another revision)", repo_id, commit, variant, b.ptr ? b.ptr : "none");
	kernels__buf_free(&b);
}

static int download_offline(const kernels__config *cfg, kernels__repo_type *type, const char *repo_id,
			    const char *commit, const char *const *variants, size_t n, char **snapshot_dir)
{
	char *dir, *snap, what[512];
	size_t i;
	int rc;

	if ((rc = kernels__cache_find_snapshot(cfg, repo_id, commit, type)) < 0)
		return rc;
	if (!(dir = kernels__cache_repo_dir(cfg, *type, repo_id)))
		return KERNELS_ENOMEM;
	snap = kernels__sprintf("%s/snapshots/%s", dir, commit);
	free(dir);
	if (!snap)
		return KERNELS_ENOMEM;
	for (i = 0; i < n && rc == 0; i++) {
		char *vdir = kernels__sprintf("%s/build/%s", snap, variants[i]);
		struct stat st;
		snprintf(what, sizeof(what), "%s variant %s at %s (kernels download)", repo_id, variants[i], commit);
		if (!vdir)
			rc = KERNELS_ENOMEM;
		else if (stat(vdir, &st) < 0 || !S_ISDIR(st.st_mode))
			rc = kernels__error(KERNELS_EOFFLINE, "offline: variant %s of %s at %s is not in the cache; "
					    "download it while online (kernels download, or unset HF_HUB_OFFLINE)",
					    variants[i], repo_id, commit);
		else
			rc = kernels__cache_check_tree(vdir, what);
		free(vdir);
	}
	if (rc == 0 && snapshot_dir)
		*snapshot_dir = snap;
	else
		free(snap);
	return rc;
}

int kernels__download(const kernels__config *cfg, kernels__repo_type *type, const char *repo_id,
		      const char *commit, const char *const *variants, size_t n_variants, char **snapshot_dir,
		      kernels_download_stats *stats)
{
	kernels__tree all = { 0 }, t;
	size_t i;
	int rc;

	if (snapshot_dir)
		*snapshot_dir = NULL;
	if (stats)
		memset(stats, 0, sizeof(*stats));
	if ((rc = args_check(repo_id, commit)) < 0)
		return rc;
	if (n_variants && !variants)
		return kernels__error(KERNELS_EINVAL, "kernels_download: variants is NULL but n_variants is %zu",
				      n_variants);
	for (i = 0; i < n_variants; i++)
		if ((rc = variant_name_check(variants[i])) < 0)
			return rc;
	if ((rc = kernels__cache_guard(cfg, *type, repo_id)) < 0)
		return rc;
	if (cfg->offline)
		return download_offline(cfg, type, repo_id, commit, variants, n_variants, snapshot_dir);

	for (i = 0; i < n_variants; i++) {
		char *path = kernels__sprintf("build/%s", variants[i]);
		kernels__tree_entry *grown;
		if (!path) {
			rc = KERNELS_ENOMEM;
			break;
		}
		rc = kernels__hub_tree_list(cfg, type, repo_id, commit, path, 1, &t);
		free(path);
		if (rc == KERNELS_ENOTFOUND && kernels__repo_id_check(repo_id) == 0 &&
		    strstr(kernels_error_last(), "EntryNotFound"))
			explain_missing(cfg, *type, repo_id, commit, variants[i]);
		if (rc < 0)
			break;
		grown = realloc(all.entries, (all.n + t.n + 1) * sizeof(*grown));
		if (!grown) {
			kernels__tree_free(&t);
			rc = kernels__error_oom();
			break;
		}
		all.entries = grown;
		memcpy(all.entries + all.n, t.entries, t.n * sizeof(*t.entries));
		all.n += t.n;
		free(t.entries);
	}
	if (rc == 0)
		rc = kernels__hub_fetch_tree(cfg, *type, repo_id, commit, &all, stats);
	kernels__tree_free(&all);
	if (rc == 0 && snapshot_dir) {
		char *dir = kernels__cache_repo_dir(cfg, *type, repo_id);
		/* Not created here: an empty snapshot folder would pass for a cached commit. */
		if (!dir || !(*snapshot_dir = kernels__sprintf("%s/snapshots/%s", dir, commit)))
			rc = KERNELS_ENOMEM;
		free(dir);
	}
	return rc;
}

/* ---- one file --------------------------------------------------------------------- */

/* What the cache already knows about `path` at a full commit, with no
 * network: 1 and *local_path when the snapshot link resolves to a blob,
 * KERNELS_ENOTFOUND when huggingface_hub's ".no_exist" marker says the file
 * is absent from that commit, 0 when the cache cannot tell. */
static int cached_file(const kernels__config *cfg, kernels__repo_type *type, const char *repo_id,
		       const char *commit, const char *path, char **local_path)
{
	kernels__repo_type t;
	struct stat st;

	for (t = KERNELS__REPO_KERNEL; t <= KERNELS__REPO_MODEL; t++) {
		char *dir = kernels__cache_repo_dir(cfg, t, repo_id), *snap, *marker;
		int found = 0;
		if (!dir)
			return KERNELS_ENOMEM;
		snap = kernels__sprintf("%s/snapshots/%s/%s", dir, commit, path);
		marker = kernels__sprintf("%s/.no_exist/%s/%s", dir, commit, path);
		free(dir);
		if (!snap || !marker) {
			free(snap);
			free(marker);
			return KERNELS_ENOMEM;
		}
		if (stat(snap, &st) == 0 && S_ISREG(st.st_mode)) {
			*type = t;
			*local_path = snap;
			found = 1;
		} else if (stat(marker, &st) == 0 && S_ISREG(st.st_mode)) {
			*type = t;
			found = kernels__error(KERNELS_ENOTFOUND, "%s has no file %s at commit %s (answer cached in %s)",
					       repo_id, path, commit, marker);
		}
		if (found != 1)
			free(snap);
		free(marker);
		if (found)
			return found;
	}
	return 0;
}

/* Remembers, as huggingface_hub does, that `path` does not exist at `commit`. */
static void mark_no_exist(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			  const char *commit, const char *path)
{
	char *dir = kernels__cache_repo_dir(cfg, type, repo_id);
	char *marker = dir ? kernels__sprintf("%s/.no_exist/%s/%s", dir, commit, path) : NULL;
	char *slash = marker ? strrchr(marker, '/') : NULL;
	char saved[4096];
	int code = kernels_error_last_code(), fd;

	snprintf(saved, sizeof(saved), "%s", kernels_error_last());
	if (slash) {
		*slash = '\0';
		if (kernels__mkdir_p(marker, 0777) == 0) {
			*slash = '/';
			if ((fd = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0666)) >= 0)
				close(fd);
		}
	}
	kernels__error(code, "%s", saved);   /* the caller's error stands */
	free(dir);
	free(marker);
}

int kernels__download_file(const kernels__config *cfg, kernels__repo_type *type, const char *repo_id,
			   const char *commit, const char *path, char **local_path)
{
	kernels__hub_response r;
	kernels__tree t = { 0 };
	kernels__tree_entry e;
	char *rev = NULL, *epath = NULL, *url = NULL, *dir = NULL, what[600];
	int rc;

	*local_path = NULL;
	if ((rc = args_check(repo_id, commit)) < 0)
		return rc;
	if ((rc = kernels__repo_path_check(path)) < 0 || (rc = kernels__cache_guard(cfg, *type, repo_id)) < 0)
		return rc;
	/* A commit's files never change: what the cache knows is the answer. */
	if ((rc = cached_file(cfg, type, repo_id, commit, path, local_path)) != 0)
		return rc < 0 ? rc : 0;
	if (cfg->offline)
		return kernels__error(KERNELS_EOFFLINE, "offline: %s of %s at %s is not in the cache; download it "
				      "while online (unset HF_HUB_OFFLINE)", path, repo_id, commit);
	memset(&e, 0, sizeof(e));
	memset(&r, 0, sizeof(r));
	/* HEAD for the identity (ETag, size), then the usual verified fetch. */
	for (;;) {
		if (!(rev = kernels__url_escape(commit, 0)) || !(epath = kernels__url_escape(path, 1)) ||
		    !(url = kernels__sprintf("/%s%s/resolve/%s/%s", kernels__repo_url_prefix(*type), repo_id, rev, epath))) {
			rc = KERNELS_ENOMEM;
			goto out;
		}
		if ((rc = kernels__hub_request(cfg, url, 1, &r)) < 0)
			goto out;
		if (r.status == 404 && *type == KERNELS__REPO_KERNEL && (!r.error_code || !strcmp(r.error_code, "RepoNotFound"))) {
			kernels__hub_response_free(&r);
			free(rev), free(epath), free(url);
			rev = epath = url = NULL;
			*type = KERNELS__REPO_MODEL;
			continue;
		}
		break;
	}
	snprintf(what, sizeof(what), "%s of %s at %.12s", path, repo_id, commit);
	if (r.status < 200 || r.status >= 400) {
		rc = kernels__hub_status_error(&r, what);
		if (r.status == 404 && r.error_code && !strcmp(r.error_code, "EntryNotFound"))
			mark_no_exist(cfg, *type, repo_id, commit, path);
	} else if (!r.etag || !kernels__is_etag(r.etag) || r.size < 0) {
		rc = kernels__error(KERNELS_EHTTP, "%s: the Hub gave no usable ETag or size; check HF_ENDPOINT", what);
	} else {
		e.path = (char *)path;
		e.size = r.size;
		if (strlen(r.etag) == 64)
			e.lfs_sha256 = r.etag;
		else
			memcpy(e.oid, r.etag, 41);
		t.entries = &e;
		t.n = 1;
		rc = kernels__hub_fetch_tree(cfg, *type, repo_id, commit, &t, NULL);
		if (rc == 0) {
			if (!(dir = kernels__cache_repo_dir(cfg, *type, repo_id)) ||
			    !(*local_path = kernels__sprintf("%s/snapshots/%s/%s", dir, commit, path)))
				rc = KERNELS_ENOMEM;
		}
	}
	kernels__hub_response_free(&r);
out:
	free(rev);
	free(epath);
	free(url);
	free(dir);
	return rc;
}

/* ---- public API -------------------------------------------------------------------- */

struct kernels_snapshot {
	char *path;
	char *commit;
	int kernel_repo;
	kernels_download_stats stats;
};

/* Where to start asking: a repo the cache only knows as a model repo (as
 * resolved through a mirror that serves kernels as models) is one. */
static kernels__repo_type type_from_cache(const kernels__config *cfg, const char *repo_id)
{
	char *k, *m;
	struct stat st;
	kernels__repo_type t = KERNELS__REPO_KERNEL;

	if (!repo_id || kernels__repo_id_check(repo_id) < 0) {
		kernels_error_clear();   /* kernels__download says what is wrong with it */
		return t;
	}
	k = kernels__cache_repo_dir(cfg, KERNELS__REPO_KERNEL, repo_id);
	m = kernels__cache_repo_dir(cfg, KERNELS__REPO_MODEL, repo_id);

	if (k && m && stat(k, &st) < 0 && stat(m, &st) == 0 && S_ISDIR(st.st_mode))
		t = KERNELS__REPO_MODEL;
	free(k);
	free(m);
	kernels_error_clear();
	return t;
}

int kernels_download(kernels_snapshot **out, const char *repo_id, const char *commit,
		     const char *const *variants, size_t n_variants, const kernels_options *opts)
{
	kernels__config cfg;
	kernels__repo_type type = KERNELS__REPO_KERNEL;
	kernels_snapshot *s;
	int rc;

	if (!out)
		return kernels__error(KERNELS_EINVAL, "kernels_download: out is NULL");
	*out = NULL;
	if (!(s = calloc(1, sizeof(*s))))
		return kernels__error_oom();
	if ((rc = kernels__config_load(&cfg, opts)) < 0) {
		free(s);
		return rc;
	}
	type = type_from_cache(&cfg, repo_id);
	rc = kernels__download(&cfg, &type, repo_id, commit, variants, n_variants, &s->path, &s->stats);
	kernels__config_free(&cfg);
	if (rc == 0 && !(s->commit = kernels__strdup(commit)))
		rc = KERNELS_ENOMEM;
	if (rc < 0) {
		kernels_snapshot_free(s);
		return rc;
	}
	s->kernel_repo = type == KERNELS__REPO_KERNEL;
	*out = s;
	return 0;
}

const char *kernels_snapshot_path(const kernels_snapshot *snapshot)
{
	return snapshot ? snapshot->path : NULL;
}

const char *kernels_snapshot_commit(const kernels_snapshot *snapshot)
{
	return snapshot ? snapshot->commit : NULL;
}

int kernels_snapshot_is_kernel_repo(const kernels_snapshot *snapshot)
{
	return snapshot ? snapshot->kernel_repo : 0;
}

void kernels_snapshot_stats(const kernels_snapshot *snapshot, kernels_download_stats *stats)
{
	if (snapshot && stats)
		*stats = snapshot->stats;
}

void kernels_snapshot_free(kernels_snapshot *snapshot)
{
	if (!snapshot)
		return;
	free(snapshot->path);
	free(snapshot->commit);
	free(snapshot);
}

int kernels_variants_list(char ***names, size_t *count, const char *repo_id, const char *commit,
			  const kernels_options *opts)
{
	kernels__config cfg;
	kernels__repo_type type = KERNELS__REPO_KERNEL;
	int rc;

	if (!names || !count)
		return kernels__error(KERNELS_EINVAL, "kernels_variants_list: names or count is NULL");
	*names = NULL;
	*count = 0;
	if ((rc = kernels__config_load(&cfg, opts)) < 0)
		return rc;
	rc = kernels__variants_list(&cfg, &type, repo_id, commit, names, count);
	kernels__config_free(&cfg);
	return rc;
}

void kernels_variants_free(char **names, size_t count)
{
	size_t i;

	if (!names)
		return;
	for (i = 0; i < count; i++)
		free(names[i]);
	free(names);
}
