/* The fetch stage: a resolved commit's build variants into the cache.
 * It lists what a variant holds (or what the cache holds, offline) and
 * hands the files to the Hub client's transfer engine (hub_fetch.c), which
 * does every byte of HTTP. */
#include "download.h"
#include "cache.h"
#include "error.h"
#include "hash.h"
#include "layout.h"
#include "listing.h"
#include "util.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The most files a variant may have: the loader's verification refuses
 * more (lib/verify.c), so a listing with more is refused before anything
 * is planned or fetched. */
#define VARIANT_FILES_MAX 100000

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
	if (!kernels__is_commit(commit, KERNELS__HEX_LOWER))
		return kernels__error(KERNELS_EINVAL,
				      "'%.100s' is not a full 40-hex commit id (lower case); resolve the "
				      "revision first (kernels_revision_resolve)", commit ? commit : "(null)");
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int list_offline(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			const char *commit, char ***names, size_t *count)
{
	char *dir = NULL, *build = NULL;
	DIR *d;
	struct dirent *de;
	size_t n = 0, cap = 0;
	char **out = NULL;
	int rc;

	if ((rc = kernels__cache_find_snapshot(cfg, type, repo_id, commit)) < 0)
		return rc;
	if (!(dir = kernels__cache_repo_dir(cfg, type, repo_id)) ||
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
		if ((rc = KERNELS__ARRAY_GROW(out, cap, n)) < 0)
			break;
		if (!(out[n] = kernels__strdup(de->d_name))) {
			rc = KERNELS_ENOMEM;
			break;
		}
		n++;
	}
	closedir(d);
	/* The Hub's build/ never is empty (git keeps no empty folder): one in
	 * the cache is a download that stopped before its first variant's
	 * folder, not a repo without variants. */
	if (rc == 0 && n == 0)
		rc = kernels__error(KERNELS_EOFFLINE, "offline: %s at %s has no variant in the cache (%s is empty: a "
				    "download of it did not finish); download a variant while online (libkernels "
				    "download, or %s)", repo_id, commit, build, kernels__config_online_hint(cfg));
	free(build);
	if (rc < 0) {
		/* A short list would read as "these are all the variants". */
		kernels__strings_free(out, n);
		return rc;
	}
	if (n)
		qsort(out, n, sizeof(*out), name_cmp);
	*names = out;
	*count = n;
	return 0;
}

/* The variant names of a build/ listing: the folders right under build/
 * (sorted, each once). */
static int names_of(const kernels__tree *t, char ***names, size_t *count)
{
	size_t i, n = 0, k;
	char **out = calloc(t->n ? t->n : 1, sizeof(*out));

	if (!out)
		return kernels__error_oom();
	for (i = 0; i < t->n; i++) {
		const char *p = t->entries[i].path + strlen("build/"), *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);
		if (!slash && !t->entries[i].is_dir)
			continue; /* a file right in build/ is no variant */
		if (n && strlen(out[n - 1]) == len && !strncmp(out[n - 1], p, len))
			continue;
		if (!(out[n] = strndup(p, len))) {
			kernels__strings_free(out, n);
			return kernels__error_oom();
		}
		n++;
	}
	/* Sorted paths keep a folder's entries together, except where a name
	 * extends another ("a" < "a-b/x" < "a/x"): sort and drop repeats. */
	qsort(out, n, sizeof(*out), name_cmp);
	for (i = k = 0; i < n; i++) {
		if (k && !strcmp(out[k - 1], out[i]))
			free(out[i]);
		else
			out[k++] = out[i];
	}
	*names = out;
	*count = k;
	return 0;
}

int kernels__variants_list_from(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
				const char *commit, int ask, char ***names, size_t *count)
{
	kernels__tree t;
	int rc, from;

	*names = NULL;
	*count = 0;
	if ((rc = args_check(repo_id, commit)) < 0)
		return rc;
	if (cfg->offline)
		return list_offline(cfg, type, repo_id, commit, names, count);
	if ((rc = from = kernels__listing_get(cfg, type, repo_id, commit, ask, &t)) < 0)
		return rc;
	rc = names_of(&t, names, count);
	kernels__tree_free(&t);
	return rc < 0 ? rc : from;
}

int kernels__variants_list(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			   const char *commit, char ***names, size_t *count)
{
	int rc = kernels__variants_list_from(cfg, type, repo_id, commit, 0, names, count);

	return rc < 0 ? rc : 0;
}

/* A variant the listing lacks: KERNELS_ENOTFOUND naming those it has. */
static int missing_variant(const kernels__tree *t, const char *repo_id, const char *commit, const char *variant)
{
	char **names = NULL;
	size_t n = 0, i;
	kernels__buf b = { 0 };
	int rc;

	if ((rc = names_of(t, &names, &n)) < 0)
		return rc;
	for (i = 0; i < n; i++)
		kernels__buf_printf(&b, "%s%s", i ? ", " : "", names[i]);
	kernels__strings_free(names, n);
	rc = kernels__error(KERNELS_ENOTFOUND, "%s at %.12s has no variant '%s'; it has: %s (pick one of these, or "
			    "another revision)", repo_id, commit, variant, b.ptr ? b.ptr : "none");
	kernels__buf_free(&b);
	return rc;
}

/* The entries of the variants asked for, as a tree that borrows the
 * listing's entries (free only view->entries). */
static int variants_view(const kernels__tree *all, const char *repo_id, const char *commit,
			 const char *const *variants, size_t n_variants, kernels__tree *view)
{
	size_t i, first, count, total = 0;
	char folder[300];

	memset(view, 0, sizeof(*view));
	for (i = 0; i < n_variants; i++) {
		snprintf(folder, sizeof(folder), "build/%s", variants[i]);
		kernels__tree_range(all, folder, &first, &count);
		if (!count)
			return missing_variant(all, repo_id, commit, variants[i]);
		if (count > VARIANT_FILES_MAX)
			return kernels__error(KERNELS_EINVAL,
					      "variant %s of %s at %.12s lists %zu files, more than the "
					      "%d a variant may have; refusing it before fetching anything",
					      variants[i], repo_id, commit, count, VARIANT_FILES_MAX);
		total += count;
	}
	if (!(view->entries = malloc((total ? total : 1) * sizeof(*view->entries))))
		return kernels__error_oom();
	for (i = 0; i < n_variants; i++) {
		snprintf(folder, sizeof(folder), "build/%s", variants[i]);
		kernels__tree_range(all, folder, &first, &count);
		memcpy(view->entries + view->n, all->entries + first, count * sizeof(*view->entries));
		view->n += count;
	}
	return 0;
}

static int download_offline(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			    const char *commit, const char *const *variants, size_t n, char **snapshot_dir,
			    unsigned int flags)
{
	char *dir, *snap, what[512];
	size_t i;
	int rc;

	if ((rc = kernels__cache_find_snapshot(cfg, type, repo_id, commit)) < 0)
		return rc;
	if (!(dir = kernels__cache_repo_dir(cfg, type, repo_id)))
		return KERNELS_ENOMEM;
	snap = kernels__sprintf("%s/snapshots/%s", dir, commit);
	free(dir);
	if (!snap)
		return KERNELS_ENOMEM;
	for (i = 0; i < n && rc == 0; i++) {
		char *vdir = kernels__sprintf("%s/build/%s", snap, variants[i]);
		struct stat st;
		int only_metadata = 0;
		snprintf(what, sizeof(what), "%s variant %s at %s (libkernels download, or %s)", repo_id, variants[i],
			 commit, kernels__config_online_hint(cfg));
		if (!vdir)
			rc = KERNELS_ENOMEM;
		else if (stat(vdir, &st) < 0 || !S_ISDIR(st.st_mode))
			rc = kernels__error(KERNELS_EOFFLINE, "offline: variant %s of %s at %s is not in the cache; "
					    "download it while online (libkernels download, or %s)", variants[i],
					    repo_id, commit, kernels__config_online_hint(cfg));
		else if (!(flags & KERNELS__DOWNLOAD_VERIFIED) &&
			 (rc = kernels__cache_check_tree(vdir, what, &only_metadata)) == 0 && only_metadata)
			/* what a lock or the arch check cached (as Python kernels' lock does) */
			rc = kernels__error(KERNELS_EOFFLINE, "offline: variant %s of %s at %s is not in the cache (only "
					    "its metadata.json); download it while online (libkernels download, or "
					    "%s)", variants[i], repo_id, commit, kernels__config_online_hint(cfg));
		free(vdir);
	}
	if (rc == 0 && snapshot_dir)
		*snapshot_dir = snap;
	else
		free(snap);
	return rc;
}

/* Whether the Hub's answers belie the cache's record of the listing
 * (`from_record`), which only saves a request: a file's hash or size
 * other than the record says, a file or variant it lacks. Then the
 * listing is asked of the Hub again (listing.h), once. */
static int belied(const kernels__config *cfg, int from_record, int rc, const char *repo_id, const char *commit)
{
	if (from_record != 1 || (rc != KERNELS_EINTEGRITY && rc != KERNELS_ENOTFOUND))
		return 0;
	kernels__log(cfg, KERNELS_LOG_DEBUG, "the cache's record of the listing of %s at %.12s is not what the Hub "
		     "answers (%s); asking the Hub for the listing again", repo_id, commit, kernels_error_last());
	kernels_error_clear();
	return 1;
}

/* The Hub's answers for the files of the listing it gave this call
 * (`from_record` 0) contradict it: it is not kept, so the next call asks
 * again rather than failing on the record (a record belied is asked again
 * at once: belied()). */
static void drop_belied(const kernels__config *cfg, kernels__repo_type type, int from_record, int rc,
			const char *repo_id, const char *commit)
{
	if (from_record == 0 && (rc == KERNELS_EINTEGRITY || rc == KERNELS_ENOTFOUND))
		kernels__listing_forget(cfg, type, repo_id, commit);
}

/* The blobs `view`'s files name that the cache holds whole but that do not
 * hash to their names (the Hub's hashes): damaged in place, so wrong for
 * every link to them. Removed, so that the fetch gets them again (it
 * reuses a blob by its size). */
static void drop_damaged(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			 const kernels__tree *view)
{
	char *dir = kernels__cache_repo_dir(cfg, type, repo_id), *blob, hex[65];
	int bfd = dir ? kernels__cache_repo_dir_open(dir, "blobs", 0) : -1;
	size_t i;

	for (i = 0; bfd >= 0 && i < view->n; i++) {
		const kernels__tree_entry *e = &view->entries[i];
		const char *etag = kernels__tree_entry_blob(e);

		if (e->is_dir || !kernels__cache_blob_ok(dir, etag, e->size) ||
		    !(blob = kernels__cache_blob_path(dir, etag)))
			continue;
		if (kernels__hash_blob(blob, e->lfs_sha256 ? KERNELS__BLOB_SHA256 : KERNELS__BLOB_GIT_SHA1, hex,
				       NULL) == 0 && strcmp(hex, etag)) {
			kernels__log(cfg, KERNELS_LOG_WARNING, "%s does not hold the bytes its name says (damaged in "
				     "the cache); fetching it again", blob);
			unlinkat(bfd, etag, 0);
		}
		free(blob);
	}
	if (bfd >= 0)
		close(bfd);
	free(dir);
	kernels_error_clear();
}

/* One listing of build/ per commit, recorded: the variants' files are
 * ranges of it. 1 when a record was belied (`ask` 0 only), else as
 * kernels__download. */
static int fetch_listed(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			const char *commit, const char *const *variants, size_t n_variants,
			kernels_download_stats *stats, int ask, unsigned int flags)
{
	kernels__tree all = { 0 }, view = { 0 };
	int from = 0, rc = 0;

	/* A variant that failed verification may have been fetched as a
	 * record of the listing gives it, wrong but well formed: not trusted. */
	ask |= !!(flags & KERNELS__DOWNLOAD_RECHECK);
	if (n_variants && (rc = from = kernels__listing_get(cfg, type, repo_id, commit, ask, &all)) >= 0)
		rc = variants_view(&all, repo_id, commit, variants, n_variants, &view);
	if (rc == 0 && (flags & KERNELS__DOWNLOAD_RECHECK))
		drop_damaged(cfg, type, repo_id, &view);
	if (rc == 0 && (rc = kernels__hub_fetch_tree(cfg, type, repo_id, commit, &view, stats)) < 0)
		drop_belied(cfg, type, from, rc, repo_id, commit);
	free(view.entries);
	kernels__tree_free(&all);
	return belied(cfg, from, rc, repo_id, commit) ? 1 : rc;
}

int kernels__download(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
		      const char *commit, const char *const *variants, size_t n_variants, char **snapshot_dir,
		      kernels_download_stats *stats, unsigned int flags)
{
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
	if (!(flags & KERNELS__DOWNLOAD_GUARDED) && (rc = kernels__cache_guard(cfg, type, repo_id)) < 0)
		return rc;
	if (cfg->offline)
		return download_offline(cfg, type, repo_id, commit, variants, n_variants, snapshot_dir, flags);
	if ((flags & KERNELS__DOWNLOAD_WARM) &&
	    !kernels__cache_variants_fetched(cfg, type, repo_id, commit, variants, n_variants))
		kernels__hub_cdn_warm(cfg);

	if ((rc = fetch_listed(cfg, type, repo_id, commit, variants, n_variants, stats, 0, flags)) == 1)
		rc = fetch_listed(cfg, type, repo_id, commit, variants, n_variants, stats, 1, flags);
	if (rc == 0 && snapshot_dir) {
		char *dir = kernels__cache_repo_dir(cfg, type, repo_id);
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
static int cached_file(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
		       const char *commit, const char *path, char **local_path)
{
	char *dir = kernels__cache_repo_dir(cfg, type, repo_id), *snap, *marker;
	struct stat st;
	int found = 0;

	if (!dir)
		return KERNELS_ENOMEM;
	snap = kernels__sprintf("%s/snapshots/%s/%s", dir, commit, path);
	marker = kernels__sprintf("%s/.no_exist/%s/%s", dir, commit, path);
	free(dir);
	if (!snap || !marker)
		found = KERNELS_ENOMEM;
	else if (stat(snap, &st) == 0 && S_ISREG(st.st_mode))
		found = 1;
	else if (stat(marker, &st) == 0 && S_ISREG(st.st_mode))
		found = kernels__error(KERNELS_ENOTFOUND, "%s has no file %s at commit %s (answer cached in %s)",
				       repo_id, path, commit, marker);
	if (found == 1)
		*local_path = snap;
	else
		free(snap);
	free(marker);
	return found;
}

int kernels__download_file_known(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
				 const char *commit, const char *path)
{
	char *local = NULL;
	int rc = cached_file(cfg, type, repo_id, commit, path, &local);

	free(local);
	kernels_error_clear();
	return rc != 0;
}

/* Remembers, as huggingface_hub does, that `path` does not exist at `commit`. */
static void mark_no_exist(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			  const char *commit, const char *path)
{
	char *dir = kernels__cache_repo_dir(cfg, type, repo_id);
	char *marker = dir ? kernels__sprintf("%s/.no_exist/%s/%s", dir, commit, path) : NULL;
	char *slash = marker ? strrchr(marker, '/') : NULL;
	char saved[4096];
	int code = kernels_error_last_code(), fd, dfd;

	snprintf(saved, sizeof(saved), "%s", kernels_error_last());
	/* Its folders walked from the cache root without following links, the
	 * marker made relative to the last one. */
	if (slash) {
		*slash = '\0';
		if ((dfd = kernels__cache_repo_dir_open(dir, marker + strlen(dir) + 1, 1)) >= 0) {
			if ((fd = openat(dfd, slash + 1, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666)) >= 0)
				close(fd);
			close(dfd);
		}
	}
	kernels__error(code, "%s", saved);   /* the caller's error stands */
	free(dir);
	free(marker);
}

void kernels__download_mark_absent(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
				   const char *commit, const char *path)
{
	if (kernels__repo_path_check(path) == 0 && kernels__is_commit(commit, KERNELS__HEX_LOWER) &&
	    kernels__repo_id_check(repo_id) == 0 &&
	    kernels__cache_guard(cfg, type, repo_id) == 0)
		mark_no_exist(cfg, type, repo_id, commit, path);
	kernels_error_clear();
}

/* A file under build/: the commit's listing (recorded after its first
 * request) already holds its hash and size, so one GET fetches it. 1 when
 * the record was belied (`ask` 0 only), else 0 or an error. */
static int listed_once(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
		       const char *commit, const char *path, int ask, char **local_path)
{
	kernels__tree all, one = { 0 };
	const kernels__tree_entry *e;
	kernels__tree_entry copy;
	char *dir = NULL;
	int rc, from;

	if ((rc = from = kernels__listing_get(cfg, type, repo_id, commit, ask, &all)) < 0)
		return rc;
	e = kernels__tree_find(&all, path);
	if (!e || e->is_dir) {
		rc = kernels__error(KERNELS_ENOTFOUND, "%s has no file %s at commit %s (its listing says so)", repo_id,
				    path, commit);
		if (!from) /* the Hub's word, not the record's */
			mark_no_exist(cfg, type, repo_id, commit, path);
	} else {
		copy = *e;
		one.entries = &copy;
		one.n = 1;
		if ((rc = kernels__hub_fetch_tree(cfg, type, repo_id, commit, &one, NULL)) < 0)
			drop_belied(cfg, type, from, rc, repo_id, commit);
		if (rc == 0 && (!(dir = kernels__cache_repo_dir(cfg, type, repo_id)) ||
				!(*local_path = kernels__sprintf("%s/snapshots/%s/%s", dir, commit, path))))
			rc = KERNELS_ENOMEM;
		free(dir);
	}
	kernels__tree_free(&all);
	return belied(cfg, from, rc, repo_id, commit) ? 1 : rc;
}

static int listed_file(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
		       const char *commit, const char *path, char **local_path)
{
	int rc = listed_once(cfg, type, repo_id, commit, path, 0, local_path);

	return rc == 1 ? listed_once(cfg, type, repo_id, commit, path, 1, local_path) : rc;
}

int kernels__download_file(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			   const char *commit, const char *path, char **local_path, unsigned int flags)
{
	kernels__hub_response r;
	kernels__tree t = { 0 };
	kernels__tree_entry e;
	char *rev = NULL, *epath = NULL, *url = NULL, *dir = NULL, what[600];
	int rc;

	*local_path = NULL;
	if ((rc = args_check(repo_id, commit)) < 0)
		return rc;
	if ((rc = kernels__repo_path_check(path)) < 0 ||
	    (!(flags & KERNELS__DOWNLOAD_GUARDED) && (rc = kernels__cache_guard(cfg, type, repo_id)) < 0))
		return rc;
	/* A commit's files never change: what the cache knows is the answer. */
	if ((rc = cached_file(cfg, type, repo_id, commit, path, local_path)) != 0)
		return rc < 0 ? rc : 0;
	if (cfg->offline)
		return kernels__error(KERNELS_EOFFLINE, "offline: %s of %s at %s is not in the cache; download it "
				      "while online (%s)", path, repo_id, commit, kernels__config_online_hint(cfg));
	if (!strncmp(path, "build/", 6))
		return listed_file(cfg, type, repo_id, commit, path, local_path);
	memset(&e, 0, sizeof(e));
	memset(&r, 0, sizeof(r));
	/* HEAD for the identity (ETag, size), then the usual verified fetch. */
	if (!(rev = kernels__url_escape(commit, 0)) || !(epath = kernels__url_escape(path, 1)) ||
	    !(url = kernels__sprintf("/%s%s/resolve/%s/%s", kernels__repo_url_prefix(type), repo_id, rev, epath))) {
		rc = KERNELS_ENOMEM;
		goto out;
	}
	if ((rc = kernels__hub_request(cfg, url, 1, &r)) < 0)
		goto out;
	snprintf(what, sizeof(what), "%s of %s at %.12s", path, repo_id, commit);
	if (r.status < 200 || r.status >= 400) {
		rc = kernels__hub_status_error(&r, what);
		if (r.status == 404 && r.error_code && !strcmp(r.error_code, "EntryNotFound"))
			mark_no_exist(cfg, type, repo_id, commit, path);
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
		rc = kernels__hub_fetch_tree(cfg, type, repo_id, commit, &t, NULL);
		if (rc == 0) {
			if (!(dir = kernels__cache_repo_dir(cfg, type, repo_id)) ||
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

int kernels__repo_locate(const kernels__config *cfg, const char *repo_id, const char *commit,
			 kernels__repo_type *type)
{
	int rc = kernels__cache_repo_type(cfg, repo_id, type);

	if (rc != 0 || cfg->offline)
		return rc < 0 ? rc : 0;
	return kernels__hub_repo_type(cfg, repo_id, commit, type);
}

int kernels__repo_locate_revision(const kernels__config *cfg, const kernels_revision *rev, kernels__repo_type *type)
{
	/* The refs listing found the repo under one form: that is the answer. */
	if (!rev->from_cache && rev->kind != KERNELS_REVISION_COMMIT) {
		*type = rev->type;
		return 0;
	}
	return kernels__repo_locate(cfg, rev->repo_id, rev->commit, type);
}

/* One public call's work at one endpoint, the repo's type located there. */
typedef int (*endpoint_work)(const kernels__config *at, kernels__repo_type type, const char *repo_id,
			     const char *commit, void *arg);

/* The endpoints in turn (a mirror, then the Hub), under the call's one
 * deadline, each but the last with its share for a first answer, as
 * kernels_get walks them: a dead or silent mirror hands over to the next,
 * and every endpoint's failure is reported once, in order. */
static int at_each_endpoint(const kernels__config *cfg, const char *repo_id, const char *commit,
			    endpoint_work work, void *arg, kernels__repo_type *type)
{
	kernels__endpoint_failures failed = { .n = 0 };
	kernels__endpoint_try t;
	kernels__config at;
	size_t i;
	int rc = KERNELS_ERROR;

	for (i = 0; i < cfg->n_endpoints; i++) {
		kernels__endpoint_try_begin(cfg, i, &at, &t);
		if ((rc = kernels__repo_locate(&at, repo_id, commit, type)) == 0)
			rc = work(&at, *type, repo_id, commit, arg);
		if (!kernels__endpoint_next(cfg, i, &at, rc, &failed))
			break;
	}
	return rc < 0 ? kernels__endpoint_failures_raise(&failed, rc) : rc;
}

typedef struct {
	const char *const *variants;
	size_t n;
	kernels_snapshot *s;
} download_args;

static int download_at(const kernels__config *at, kernels__repo_type type, const char *repo_id, const char *commit,
		       void *arg)
{
	download_args *a = arg;

	free(a->s->path);
	a->s->path = NULL;
	return kernels__download(at, type, repo_id, commit, a->variants, a->n, &a->s->path, &a->s->stats,
				 KERNELS__DOWNLOAD_WARM);
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
	if ((rc = args_check(repo_id, commit)) == 0) {
		download_args a = { variants, n_variants, s };
		rc = at_each_endpoint(&cfg, repo_id, commit, download_at, &a, &type);
	}
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

/* Where each version of kernels_download_stats ends (docs/api-stability.md). */
static const size_t download_stats_sizes[] = { 0, KERNELS__END(kernels_download_stats, retries) };
static const kernels__layout download_stats_layout = { "kernels_download_stats", "KERNELS_DOWNLOAD_STATS_VERSION",
						       download_stats_sizes, KERNELS_DOWNLOAD_STATS_VERSION };
_Static_assert(sizeof(download_stats_sizes) / sizeof(download_stats_sizes[0]) == KERNELS_DOWNLOAD_STATS_VERSION + 1,
	       "a new kernels_download_stats version needs its size in download_stats_sizes");

int kernels_snapshot_stats(kernels_download_stats *stats, const kernels_snapshot *snapshot)
{
	if (!snapshot || !stats)
		return kernels__error(KERNELS_EINVAL, "kernels_snapshot_stats: %s is NULL",
				      stats ? "snapshot" : "stats");
	return kernels__layout_write(&download_stats_layout, stats, &snapshot->stats);
}

void kernels_snapshot_free(kernels_snapshot *snapshot)
{
	if (!snapshot)
		return;
	free(snapshot->path);
	free(snapshot->commit);
	free(snapshot);
}

typedef struct {
	char ***names;
	size_t *count;
} list_args;

static int list_at(const kernels__config *at, kernels__repo_type type, const char *repo_id, const char *commit,
		   void *arg)
{
	list_args *a = arg;

	return kernels__variants_list(at, type, repo_id, commit, a->names, a->count);
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
	if ((rc = args_check(repo_id, commit)) == 0) {
		list_args a = { names, count };
		rc = at_each_endpoint(&cfg, repo_id, commit, list_at, &a, &type);
	}
	kernels__config_free(&cfg);
	if (rc == 0 && (rc = kernels__strings_pack(names, *count)) < 0)
		*count = 0;
	return rc;
}
