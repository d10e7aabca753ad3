/* Writing a bundle: the locked kernels of a project, from the cache (what
 * is missing is downloaded into it first), into one tar archive whose first
 * entry, the manifest, says what every other entry is. Big files are read
 * once: an LFS blob is named by its sha256, which the manifest needs before
 * the bytes are written, and the variant is verified against its digest
 * (a receipt spares the hashing where a download left one) before it goes
 * in; the importer hashes every byte again. */
#include "bundle.h"
#include "layout.h"
#include "util.h"
#include "kernels/lock.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "config.h"
#include "download.h"
#include "error.h"
#include "reflist.h"
#include "refs.h"
#include "util.h"
#include "hash.h"
#include "listing.h"
#include "verify.h"

/* A fixed time for every entry: the same cache gives the same bundle. */
#define BUNDLE_MTIME 1735689600 /* 2025-01-01 */
#define LOCK_MAX (16u << 20)
#define CHUNK (1u << 20)

typedef struct {
	const kernels__config *cfg;
	const kernels_bundle_options *bopts;
	unsigned char *matched; /* per bopts->variants entry: some repo has it */
	json_t *repos;
} writer;

/* ---- what goes in ------------------------------------------------------------ */

static int wanted(writer *w, const char *variant)
{
	size_t i;
	int hit = 0;

	if (!w->bopts || !w->bopts->variants)
		return 1;
	for (i = 0; i < w->bopts->n_variants; i++)
		if (w->bopts->variants[i] && !strcmp(w->bopts->variants[i], variant))
			hit = w->matched[i] = 1;
	return hit;
}

/* The sha256 of a small blob named by its git sha1 (big files are LFS
 * files, named by their sha256). */
static int blob_sha256(const char *blob, char hex[65])
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int n, i;
	struct stat st;
	int rc = kernels__hash_path(blob, EVP_sha256(), NULL, 0, d, &n, &st);

	for (i = 0; rc == 0 && i < n; i++)
		sprintf(hex + 2 * i, "%02x", d[i]);
	return rc;
}

typedef struct {
	const kernels__config *cfg;
	const char *repo_dir, *variant, *what;
	json_t *files;
	kernels__tree listing;  /* the commit's recorded build/ listing, read at the first plain file */
	int listed;             /* -1 not read yet, 1 read, 0 none recorded */
	const char *commit;
} walk_ctx;

static int add_entry(walk_ctx *c, const char *rel, long long size, const char *sha, const char *etag)
{
	if (json_array_append_new(c->files, json_pack("{s:s,s:I,s:s,s:s}", "path", rel, "size", (json_int_t)size,
						      "sha256", sha, "etag", etag)))
		return kernels__error_oom();
	return 0;
}

/* A file huggingface_hub left in the snapshot itself (no symlinks): its
 * blob name is the hash the Hub listed for its path, from the listing the
 * cache recorded (online, the download just before records it). The bytes
 * were verified a moment ago (kernels__verify_variant). */
static int add_plain(walk_ctx *c, const char *path, const char *rel, const char *in_snap)
{
	const kernels__tree_entry *e;
	struct stat st;
	char sha[65];

	if (c->listed < 0 && (c->listed = kernels__listing_read_at(c->cfg, c->repo_dir, c->commit, &c->listing)) < 0)
		return c->listed;
	if (!c->listed)
		return kernels__error(KERNELS_EOFFLINE, "%s: %s is a plain file (a cache huggingface_hub wrote "
				      "without symlinks) and the cache has no record of the Hub's listing of the "
				      "commit, which names its blob; write the bundle once online (that records it)",
				      c->what, path);
	if (!(e = kernels__tree_find(&c->listing, in_snap)) || e->is_dir || lstat(path, &st) < 0 ||
	    !S_ISREG(st.st_mode) || st.st_size != e->size)
		return kernels__error(KERNELS_EINTEGRITY, "%s: %s is not the file the Hub's listing of the commit "
				      "names; remove the snapshot ('libkernels cache rm') and download it again",
				      c->what, path);
	if (e->lfs_sha256)
		memcpy(sha, e->lfs_sha256, 65);
	else if (blob_sha256(path, sha) < 0)
		return KERNELS_EIO;
	return add_entry(c, rel, e->size, sha, kernels__tree_entry_blob(e));
}

/* Byte-code Python wrote beside a module it imported is not what the Hub
 * serves, and no digest covers it. */
static int is_bytecode(const char *rel)
{
	size_t n = strlen(rel);
	return strstr(rel, "__pycache__") || (n > 4 && !strcmp(rel + n - 4, ".pyc"));
}

static int add_file(walk_ctx *c, const char *path, const char *rel)
{
	char target[PATH_MAX], sha[65], *want = NULL, *blob = NULL, *in_snap = kernels__sprintf("build/%s/%s",
												     c->variant, rel);
	const char *etag = NULL;
	struct stat st;
	ssize_t n = readlink(path, target, sizeof(target) - 1);
	int rc = 0;

	if (!in_snap)
		return KERNELS_ENOMEM;
	if (n < 0 && errno == EINVAL) { /* not a link */
		rc = add_plain(c, path, rel, in_snap);
		free(in_snap);
		return rc;
	}
	if (n <= 0 || (target[n] = '\0', !(etag = strrchr(target, '/'))) || !kernels__is_etag(++etag) ||
	    !(want = kernels__cache_link_target(in_snap, etag)) || strcmp(want, target))
		rc = kernels__error(KERNELS_EUNSAFE, "%s: %s is not a link into the cache's blobs/ as downloads make "
				    "them; remove the snapshot ('libkernels cache rm') and download it again", c->what,
				    path);
	else if (!(blob = kernels__cache_blob_path(c->repo_dir, etag)) || stat(blob, &st) < 0 ||
		 !S_ISREG(st.st_mode))
		rc = blob ? kernels__error(KERNELS_EOFFLINE, "%s: the blob of %s is missing; download it again",
					   c->what, rel) : KERNELS_ENOMEM;
	else if (strlen(etag) == 64)
		memcpy(sha, etag, 65);
	else
		rc = blob_sha256(blob, sha);
	if (rc == 0)
		rc = add_entry(c, rel, st.st_size, sha, etag);
	free(want);
	free(blob);
	free(in_snap);
	return rc;
}

static int visit(const char *path, const char *rel, int depth, const struct stat *lst, void *payload)
{
	(void)depth;
	if (S_ISDIR(lst->st_mode))
		return strcmp(rel, "__pycache__") && !strstr(rel, "/__pycache__") ? KERNELS__WALK_DESCEND : 0;
	if (!S_ISLNK(lst->st_mode) && is_bytecode(rel))
		return 0;
	return add_file(payload, path, rel);
}

static int file_cmp(const void *x, const void *y)
{
	return strcmp(json_string_value(json_object_get(*(json_t *const *)x, "path")),
		      json_string_value(json_object_get(*(json_t *const *)y, "path")));
}

/* The variant's files in path order: the same cache gives the same bundle. */
static int sort_files(json_t *files)
{
	size_t i, n = json_array_size(files);
	json_t **v = calloc(n + 1, sizeof(*v));

	if (!v)
		return kernels__error_oom();
	for (i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(files, i));
	qsort(v, n, sizeof(*v), file_cmp);
	json_array_clear(files);
	for (i = 0; i < n; i++)
		json_array_append_new(files, v[i]);
	free(v);
	return 0;
}

/* The variant cached whole, else downloaded (the transfer engine's checks),
 * then its files listed. */
static int add_variant(writer *w, kernels__repo_type type, const char *repo_id, const char *commit,
		       const char *variant, const char *repo_dir, json_t *variants)
{
	char *dir = kernels__sprintf("%s/snapshots/%s/build/%s", repo_dir, commit, variant);
	char *what = kernels__sprintf("%s@%.7s variant %s", repo_id, commit, variant);
	walk_ctx c = { w->cfg, repo_dir, variant, what, json_array(), { 0 }, -1, commit };
	int rc = dir && what && c.files ? 0 : kernels__error_oom();

	/* Online the transfer engine fetches what the cache lacks (a lock leaves
	 * only metadata.json); offline the cache must have it all. Either way
	 * the digest proves the folder whole before it is bundled. */
	if (rc == 0 && !w->cfg->offline)
		rc = kernels__download(w->cfg, type, repo_id, commit, &variant, 1, NULL, NULL, 0);
	if (rc == 0)
		rc = kernels__verify_variant(w->cfg, dir, repo_dir, what, NULL);
	if (rc == 0)
		rc = kernels__walk(dir, 32, visit, &c);
	if (rc == 0)
		rc = sort_files(c.files);
	if (rc == 0 && json_array_append_new(variants, json_pack("{s:s,s:O}", "name", variant, "files", c.files)))
		rc = kernels__error_oom();
	json_decref(c.files);
	kernels__tree_free(&c.listing);
	free(dir);
	free(what);
	return rc;
}

/* The refs that name the locked commit: the cache's, the Hub's when it can
 * be asked, and the name the lock asked for (vN, or the revision), which
 * resolved to this commit when it was locked. */
static void refs_from(json_t *refs, const kernels__reflist *t, const char *commit)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (!strcmp(t->v[i].commit, commit) && kernels__ref_name_check(t->v[i].name) == 0)
			json_object_set_new(refs, t->v[i].name, json_string(commit));
	kernels_error_clear();
}

static json_t *refs_of(const kernels__config *cfg, const kernels_lock_entry *e)
{
	kernels__reflist t = { 0 };
	json_t *refs = json_object();
	char name[32];

	if (!refs)
		return NULL;
	if (kernels__reflist_cached(cfg, e->repo_id, &t) > 0)
		refs_from(refs, &t, e->commit);
	kernels__reflist_free(&t);
	memset(&t, 0, sizeof(t));
	if (!cfg->offline && kernels__reflist_remote(cfg, e->repo_id, &t) == 0)
		refs_from(refs, &t, e->commit);
	kernels__reflist_free(&t);
	kernels_error_clear();
	if (e->request == KERNELS_LOCK_REQUEST_VERSION) {
		snprintf(name, sizeof(name), "v%llu", e->version);
		json_object_set_new(refs, name, json_string(e->commit));
	} else if (e->request == KERNELS_LOCK_REQUEST_REVISION && kernels__ref_name_check(e->revision) == 0 &&
		   !kernels__is_hex(e->revision, strlen(e->revision), 0)) {
		json_object_set_new(refs, e->revision, json_string(e->commit));
	}
	kernels_error_clear();
	return refs;
}

static int add_repo(writer *w, const kernels_lock_entry *e)
{
	kernels__repo_type type;
	char **names = NULL, *repo_dir = NULL;
	size_t i, count = 0;
	json_t *variants = json_array(), *refs = NULL;
	int rc = variants ? 0 : kernels__error_oom();

	if (rc == 0)
		rc = kernels__repo_locate(w->cfg, e->repo_id, e->commit, &type);
	if (rc == 0 && (rc = kernels__cache_guard(w->cfg, type, e->repo_id)) == 0)
		rc = kernels__variants_list(w->cfg, type, e->repo_id, e->commit, &names, &count);
	if (rc == 0 && !(repo_dir = kernels__cache_repo_dir(w->cfg, type, e->repo_id)))
		rc = KERNELS_ENOMEM;
	for (i = 0; rc == 0 && i < count; i++)
		if (wanted(w, names[i]))
			rc = add_variant(w, type, e->repo_id, e->commit, names[i], repo_dir, variants);
	if (rc == 0 && !(refs = refs_of(w->cfg, e)))
		rc = kernels__error_oom();
	if (rc == 0 && json_array_append_new(w->repos, json_pack("{s:s,s:s,s:s,s:O,s:O}", "repo_id", e->repo_id,
			"type", type == KERNELS__REPO_KERNEL ? "kernel" : "model", "commit", e->commit, "refs", refs,
			"variants", variants)))
		rc = kernels__error_oom();
	json_decref(refs);
	json_decref(variants);
	kernels__strings_free(names, count);
	free(repo_dir);
	return rc < 0 ? kernels__error_prefix("bundling %s@%.7s", e->repo_id, e->commit) : 0;
}

/* The same repo at the same commit twice in a lock (asked as a version and
 * as a revision) goes in once. */
static int seen_before(const kernels_lock *lock, size_t i)
{
	const kernels_lock_entry *e = kernels_lock_entry_at(lock, i);
	size_t j;

	for (j = 0; j < i; j++)
		if (!strcmp(kernels_lock_entry_at(lock, j)->repo_id, e->repo_id) &&
		    !strcmp(kernels_lock_entry_at(lock, j)->commit, e->commit))
			return 1;
	return 0;
}

static int unmatched_variant(const writer *w)
{
	size_t i;

	for (i = 0; w->bopts && w->bopts->variants && i < w->bopts->n_variants; i++)
		if (!w->matched[i])
			return kernels__error(KERNELS_EINVAL, "no locked kernel has a variant named '%s'; 'libkernels "
					      "variants REPO --revision COMMIT' lists the names", w->bopts->variants[i]);
	return 0;
}

/* ---- the archive ------------------------------------------------------------ */

/* libarchive's own message can be a bare "Write error": the errno behind
 * it, and what to do about that, follow. `what`: "cannot write X into the
 * bundle" and the like. */
static int archive_failed(struct archive *a, const char *what)
{
	int err = archive_errno(a);
	char why[128] = "";

	if (err > 0)
		snprintf(why, sizeof(why), " (%s)", strerror(err));
	return kernels__error(KERNELS_EIO, "%s: %s%s; %s", what, archive_error_string(a), why,
			      kernels__write_advice(err, 0, "check the free space and rights of the bundle's folder"));
}

static int entry_failed(struct archive *a, const char *name)
{
	char what[PATH_MAX + 64];

	snprintf(what, sizeof(what), "cannot write %s into the bundle", name);
	return archive_failed(a, what);
}

static int put_header(struct archive *a, const char *name, unsigned long long size)
{
	struct archive_entry *e = archive_entry_new();
	int r;

	if (!e)
		return kernels__error_oom();
	archive_entry_set_pathname(e, name);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_size(e, (la_int64_t)size);
	archive_entry_set_mtime(e, BUNDLE_MTIME, 0);
	r = archive_write_header(a, e);
	archive_entry_free(e);
	return r == ARCHIVE_OK ? 0 : entry_failed(a, name);
}

static int put_bytes(struct archive *a, const char *name, const void *data, size_t n)
{
	if (n && archive_write_data(a, data, n) != (la_ssize_t)n)
		return entry_failed(a, name);
	return 0;
}

/* No blob: huggingface_hub without symlinks moved it into the snapshot. */
static int open_plain(const char *repo_dir, const kernels__bundle_entry *e)
{
	char *path = kernels__sprintf("build/%s/%s", e->f.variant, e->f.path);
	struct stat st;
	int fd = path ? kernels__cache_snapshot_open(repo_dir, e->f.commit, path, (long long)e->f.size, &st) : -1;

	free(path);
	errno = ENOENT;
	return fd;
}

/* The blob's bytes as they are: the variant was verified against its
 * digest just before (kernels__verify_variant), and the importer hashes
 * every byte against the manifest anyway, so hashing again here would only
 * slow the bundle down. A blob that changed size meanwhile fails it. */
static int put_file(struct archive *a, const kernels__bundle_entry *e, const char *repo_dir, unsigned char *buf)
{
	char *blob = kernels__cache_blob_path(repo_dir, e->f.etag);
	unsigned long long left = e->f.size;
	int fd = blob ? open(blob, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1, rc;

	if (fd < 0 && blob && errno == ENOENT)
		fd = open_plain(repo_dir, e);
	if (fd < 0) {
		rc = blob ? kernels__error(KERNELS_EIO, "cannot read %s: %s", blob, strerror(errno)) : KERNELS_ENOMEM;
		free(blob);
		return rc;
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	rc = put_header(a, e->entry, e->f.size);
	while (rc == 0 && left) {
		ssize_t got = read(fd, buf, left < CHUNK ? left : CHUNK);
		if (got <= 0)
			rc = kernels__error(KERNELS_EINTEGRITY, "%s changed size while it was bundled; run again", blob);
		else if ((rc = put_bytes(a, e->entry, buf, (size_t)got)) == 0)
			left -= (unsigned long long)got;
	}
	close(fd);
	free(blob);
	return rc;
}

static int put_all(struct archive *a, const writer *w, const kernels_bundle *b, const char *manifest,
		   const char *lock, size_t lock_len)
{
	unsigned char *buf = malloc(CHUNK);
	size_t i;
	int rc = buf ? 0 : kernels__error_oom();

	if (rc == 0 && (rc = put_header(a, KERNELS__BUNDLE_MANIFEST, strlen(manifest))) == 0)
		rc = put_bytes(a, KERNELS__BUNDLE_MANIFEST, manifest, strlen(manifest));
	if (rc == 0 && (rc = put_header(a, KERNELS__BUNDLE_LOCK, lock_len)) == 0)
		rc = put_bytes(a, KERNELS__BUNDLE_LOCK, lock, lock_len);
	for (i = 0; rc == 0 && i < b->nfiles; i++) {
		const kernels__bundle_entry *e = &b->files[i];
		char *dir = kernels__cache_repo_dir(w->cfg, b->variants[e->variant].type, e->f.repo_id);
		rc = dir ? put_file(a, e, dir, buf) : KERNELS_ENOMEM;
		free(dir);
	}
	free(buf);
	return rc;
}

/* Into a temporary file beside `path`, published by the cache's atomic
 * rename once whole. */
static int write_archive(const char *path, const writer *w, const kernels_bundle *b, const char *manifest,
			 const char *lock, size_t lock_len)
{
	struct archive *a = archive_write_new();
	char *tmp = kernels__tmp_name(path), what[PATH_MAX + 64];
	int rc = a && tmp ? 0 : kernels__error_oom(), fd;

	if (rc == 0 && (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
			/* zstd only when built in: never the external zstd program */
			(archive_libzstd_version() ? archive_write_add_filter_zstd(a)
						   : archive_write_add_filter_none(a)) != ARCHIVE_OK ||

			archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
			archive_write_open_filename(a, tmp) != ARCHIVE_OK)) {
		snprintf(what, sizeof(what), "cannot create the bundle %s", path);
		rc = archive_failed(a, what);
	}
	if (rc == 0 && (rc = put_all(a, w, b, manifest, lock, lock_len)) < 0)
		kernels__error_prefix("writing the bundle %s (nothing of it is left)", path);
	if (a && archive_write_close(a) != ARCHIVE_OK && rc == 0) {
		snprintf(what, sizeof(what), "cannot finish the bundle %s", path);
		rc = archive_failed(a, what);
	}
	if (rc == 0 && (fd = open(tmp, O_RDONLY | O_CLOEXEC)) < 0)
		rc = kernels__error(KERNELS_EIO, "cannot reopen %s: %s", tmp, strerror(errno));
	if (rc == 0)
		rc = kernels__cache_publish(fd, tmp, path, NULL, 1);
	if (rc < 0 && tmp)
		unlink(tmp);
	archive_write_free(a);
	free(tmp);
	return rc;
}

static char *manifest_text(writer *w, const char *lock, size_t lock_len)
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int n, i;
	char hex[65];
	json_t *root;
	char *s;

	if (!EVP_Digest(lock, lock_len, d, &n, EVP_sha256(), NULL))
		return NULL;
	for (i = 0; i < n; i++)
		sprintf(hex + 2 * i, "%02x", d[i]);
	root = json_pack("{s:s,s:i,s:s,s:{s:I,s:s},s:O}", "format", KERNELS__BUNDLE_FORMAT, "version", 1,
			 "created_by", "libkernels " KERNELS_VERSION_STRING, "lock", "size", (json_int_t)lock_len,
			 "sha256", hex, "repos", w->repos);
	s = root ? json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(root);
	return s;
}

static int bundle(const char *path, const char *project_dir, writer *w)
{
	kernels_lock *lock = NULL;
	kernels_bundle *b = NULL;
	char *lock_path = kernels__sprintf("%s/kernels.lock", project_dir), *text = NULL, *manifest = NULL;
	size_t i, len = 0;
	int rc = lock_path ? 0 : KERNELS_ENOMEM;

	if (rc == 0 && kernels__read_file(lock_path, LOCK_MAX, 0, &text, &len, NULL) < 0)
		rc = kernels__error(errno == ENOENT ? KERNELS_ENOTFOUND : KERNELS_EIO, "cannot read %s: %s; run "
				    "'libkernels lock %s' first", lock_path, strerror(errno), project_dir);
	if (rc == 0)
		rc = kernels_lock_load_string(&lock, text, len, lock_path);
	for (i = 0; rc == 0 && i < kernels_lock_entry_count(lock); i++) {
		kernels__config_deadline_restart((kernels__config *)w->cfg);
		if (!seen_before(lock, i))
			rc = add_repo(w, kernels_lock_entry_at(lock, i));
	}
	if (rc == 0)
		rc = unmatched_variant(w);
	if (rc == 0 && !(manifest = manifest_text(w, text, len)))
		rc = kernels__error_oom();
	/* The manifest read back as an importer reads it: what is written is what is listed. */
	if (rc == 0)
		rc = kernels__bundle_parse(manifest, strlen(manifest), path, &b);
	if (rc == 0)
		rc = write_archive(path, w, b, manifest, text, len);
	kernels_bundle_free(b);
	kernels_lock_free(lock);
	free(manifest);
	free(text);
	free(lock_path);
	return rc;
}

/* Where each version of kernels_bundle_options ends (docs/api-stability.md). */
static const size_t bundle_options_sizes[] = { 0, KERNELS__END(kernels_bundle_options, n_variants) };
static const kernels__layout bundle_options_layout = { "kernels_bundle_options", "KERNELS_BUNDLE_OPTIONS_VERSION",
						       bundle_options_sizes, KERNELS_BUNDLE_OPTIONS_VERSION };
_Static_assert(sizeof(bundle_options_sizes) / sizeof(bundle_options_sizes[0]) == KERNELS_BUNDLE_OPTIONS_VERSION + 1,
	       "a new kernels_bundle_options version needs its size in bundle_options_sizes");

int kernels_bundle_write(const char *path, const char *project_dir, const kernels_bundle_options *bopts,
			 const kernels_options *opts)
{
	kernels__config cfg;
	kernels_bundle_options given = KERNELS_BUNDLE_OPTIONS_INIT;
	writer w = { &cfg, NULL, NULL, NULL };
	int rc;

	if (!path || !project_dir)
		return kernels__error(KERNELS_EINVAL, "kernels_bundle_write: path and project_dir must be given");
	/* The caller's options, read no further than their version reaches. */
	if (bopts && (rc = kernels__layout_read(&bundle_options_layout, &given, bopts)) < 0)
		return rc;
	w.bopts = bopts ? &given : NULL;
	if ((rc = kernels__config_load(&cfg, opts)) < 0)
		return rc;
	w.matched = calloc(bopts && bopts->n_variants ? bopts->n_variants : 1, 1);
	w.repos = json_array();
	rc = w.matched && w.repos ? bundle(path, project_dir, &w) : kernels__error_oom();
	json_decref(w.repos);
	free(w.matched);
	kernels__config_free(&cfg);
	return rc;
}
