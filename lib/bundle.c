/* Reading bundles: the manifest, checked as a whole before anything else is
 * read, and the archive after it, entry by entry against the manifest. A
 * bundle comes from elsewhere (a USB stick, an image layer): every name,
 * type and size in it is hostile until the manifest accounts for it. */
#include "bundle.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "cache.h"
#include "hash.h"
#include "tree.h"
#include "refs.h"
#include "util.h"

char *kernels__bundle_entry_name(kernels__repo_type type, const char *repo_id, const char *commit,
				 const char *variant, const char *path)
{
	char *repo = kernels__repo_cache_name(type, repo_id), *s;

	s = repo ? kernels__sprintf("%s/%s/build/%s/%s", repo, commit, variant, path) : NULL;
	free(repo);
	return s;
}

/* ---- the manifest -------------------------------------------------------- */

static int bad(const char *name, const char *where, const char *what)
{
	return kernels__error(KERNELS_EPARSE, "%s: manifest.json: %s %s; the bundle is damaged or was not made by "
			      "'libkernels bundle': make it again", name, where, what);
}

static const char *str_of(json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

static int is_sha256(const char *s)
{
	return s && kernels__is_hex(s, 64, KERNELS__HEX_LOWER);
}

/* A size as JSON gives it: an integer in [0, max]. */
static int size_of(json_t *obj, const char *key, unsigned long long max, unsigned long long *out)
{
	json_t *v = json_object_get(obj, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0 || (unsigned long long)json_integer_value(v) > max)
		return -1;
	*out = (unsigned long long)json_integer_value(v);
	return 0;
}

static int add_total(kernels_bundle *b, unsigned long long n, const char *name)
{
	if (b->total + n < b->total || b->total + n > KERNELS__BUNDLE_FILE_SIZE_MAX * 16)
		return bad(name, "files", "add up to more than a bundle may hold");
	b->total += n;
	return 0;
}

static int parse_file(kernels_bundle *b, json_t *jf, const kernels__bundle_variant *v, const char *name)
{
	kernels__bundle_entry *e;
	const char *path = str_of(jf, "path"), *sha = str_of(jf, "sha256"), *etag = str_of(jf, "etag");
	unsigned long long size;
	int rc;

	if (!path || !is_sha256(sha) || !etag || !kernels__is_etag(etag) || size_of(jf, "size",
	    KERNELS__BUNDLE_FILE_SIZE_MAX, &size) < 0)
		return bad(name, v->name, "has a file without a path, a size, a lower-case hex sha256 or etag");
	if ((rc = kernels__repo_path_check(path)) < 0)
		return kernels__error_prefix("%s: manifest.json, variant %s", name, v->name);
	if (strlen(etag) == 64 && strcmp(etag, sha))
		return bad(name, path, "has an LFS blob name (etag) that is not its sha256");
	if (b->nfiles >= KERNELS__BUNDLE_FILES_MAX)
		return bad(name, "files", "are more than a bundle may hold (a million)");
	if (KERNELS__ARRAY_GROW(b->files, b->capfiles, b->nfiles) < 0)
		return KERNELS_ENOMEM;
	e = &b->files[b->nfiles];
	memset(e, 0, sizeof(*e));
	e->f = (kernels_bundle_file){ v->repo_id, v->commit, v->name, path, sha, etag, size,
				      v->type == KERNELS__REPO_KERNEL };
	e->variant = b->nvariants;
	if (!(e->entry = kernels__bundle_entry_name(v->type, v->repo_id, v->commit, v->name, path)))
		return KERNELS_ENOMEM;
	b->nfiles++;
	return add_total(b, size, name);
}

static int parse_variant(kernels_bundle *b, json_t *jv, const kernels__bundle_variant *repo, const char *name)
{
	kernels__bundle_variant v = *repo;
	json_t *files = json_object_get(jv, "files"), *jf;
	size_t i;
	int rc = 0;

	v.name = str_of(jv, "name");
	if (!v.name || !json_is_array(files))
		return bad(name, repo->repo_id, "has a variant without a name or files");
	if (kernels__repo_path_check(v.name) < 0 || strchr(v.name, '/'))
		return kernels__error(KERNELS_EUNSAFE, "%s: manifest.json: variant name '%s' of %s is not one folder "
				      "name; refusing the bundle", name, v.name, repo->repo_id);
	v.first = b->nfiles;
	json_array_foreach(files, i, jf)
		if ((rc = parse_file(b, jf, &v, name)) < 0)
			return rc;
	v.n = b->nfiles - v.first;
	if (KERNELS__ARRAY_GROW(b->variants, b->capvariants, b->nvariants) < 0)
		return KERNELS_ENOMEM;
	b->variants[b->nvariants++] = v;
	return 0;
}

static int parse_refs(kernels_bundle *b, json_t *refs, const kernels__bundle_variant *repo, const char *name)
{
	const char *key;
	json_t *v;

	if (!refs)
		return 0;
	if (!json_is_object(refs))
		return bad(name, repo->repo_id, "has refs that are not an object");
	json_object_foreach(refs, key, v) {
		if (kernels__ref_name_check(key) < 0)
			return kernels__error(KERNELS_EUNSAFE, "%s: manifest.json: ref '%s' of %s is not a ref name; "
					      "refusing the bundle", name, key, repo->repo_id);
		if (!json_is_string(v) || strcmp(json_string_value(v), repo->commit))
			return bad(name, key, "names another commit than the one the bundle holds");
		if (KERNELS__ARRAY_GROW(b->refs, b->caprefs, b->nrefs) < 0)
			return KERNELS_ENOMEM;
		b->refs[b->nrefs++] = (kernels_bundle_ref){ repo->repo_id, key, repo->commit };
	}
	return 0;
}

static int parse_repo(kernels_bundle *b, json_t *jr, const char *name)
{
	kernels__bundle_variant repo = { 0 };
	const char *type = str_of(jr, "type");
	json_t *variants = json_object_get(jr, "variants"), *jv;
	size_t i;
	int rc;

	repo.repo_id = str_of(jr, "repo_id");
	repo.commit = str_of(jr, "commit");
	if (!repo.repo_id || !repo.commit || !type || !json_is_array(variants))
		return bad(name, "a repo", "lacks repo_id, type, commit or variants");
	if ((rc = kernels__repo_id_check(repo.repo_id)) < 0)
		return kernels__error(KERNELS_EUNSAFE, "%s: manifest.json: %s; refusing the bundle", name,
				      kernels_error_last());
	if (!kernels__is_hex(repo.commit, 40, KERNELS__HEX_LOWER))
		return bad(name, repo.repo_id, "has a commit that is not 40 lower-case hex digits");
	if (strcmp(type, "kernel") && strcmp(type, "model"))
		return bad(name, repo.repo_id, "has a type other than \"kernel\" or \"model\"");
	repo.type = strcmp(type, "kernel") ? KERNELS__REPO_MODEL : KERNELS__REPO_KERNEL;
	json_array_foreach(variants, i, jv)
		if ((rc = parse_variant(b, jv, &repo, name)) < 0)
			return rc;
	return parse_refs(b, json_object_get(jr, "refs"), &repo, name);
}

static int entry_cmp(const void *x, const void *y)
{
	return strcmp((*(kernels__bundle_entry *const *)x)->entry, (*(kernels__bundle_entry *const *)y)->entry);
}

static int variant_cmp(const void *x, const void *y)
{
	const kernels__bundle_variant *a = *(kernels__bundle_variant *const *)x, *c = *(kernels__bundle_variant *const *)y;
	int r = strcmp(a->repo_id, c->repo_id);

	if (!r)
		r = (int)a->type - (int)c->type;
	if (!r)
		r = strcmp(a->commit, c->commit);
	return r ? r : strcmp(a->name, c->name);
}

/* One variant folder is published by one rename: it may be listed once. */
static int variants_unique(const kernels_bundle *b, const char *name)
{
	const kernels__bundle_variant **v = calloc(b->nvariants + 1, sizeof(*v));
	size_t i;
	int rc = 0;

	if (!v)
		return kernels__error_oom();
	for (i = 0; i < b->nvariants; i++)
		v[i] = &b->variants[i];
	qsort(v, b->nvariants, sizeof(*v), variant_cmp);
	for (i = 1; rc == 0 && i < b->nvariants; i++)
		if (!variant_cmp(&v[i - 1], &v[i]))
			rc = kernels__error(KERNELS_EUNSAFE, "%s: manifest.json lists variant %s of %s@%s twice; "
					    "refusing the bundle", name, v[i]->name, v[i]->repo_id, v[i]->commit);
	free(v);
	return rc;
}

static int ref_cmp(const void *x, const void *y)
{
	const kernels_bundle_ref *a = x, *c = y;
	int r = strcmp(a->repo_id, c->repo_id);
	return r ? r : strcmp(a->name, c->name);
}

/* Every entry once, and no file where another needs a folder ("a" and
 * "a/b" cannot both be written). */
static int index_entries(kernels_bundle *b, const char *name)
{
	size_t i, n;

	if (!(b->index = calloc(b->nfiles + 1, sizeof(*b->index))))
		return kernels__error_oom();
	b->index[0] = &b->lock;
	for (i = 0; i < b->nfiles; i++)
		b->index[i + 1] = &b->files[i];
	b->nindex = b->nfiles + 1;
	qsort(b->index, b->nindex, sizeof(*b->index), entry_cmp);
	for (i = 1; i < b->nindex; i++) {
		const char *prev = b->index[i - 1]->entry, *cur = b->index[i]->entry;
		n = strlen(prev);
		if (!strcmp(prev, cur))
			return kernels__error(KERNELS_EUNSAFE, "%s: manifest.json lists %s twice; refusing the bundle",
					      name, cur);
		if (!strncmp(prev, cur, n) && cur[n] == '/')
			return kernels__error(KERNELS_EUNSAFE, "%s: manifest.json lists %s both as a file and as a "
					      "folder; refusing the bundle", name, prev);
	}
	for (i = 1; i < b->nrefs; i++)
		if (!ref_cmp(&b->refs[i - 1], &b->refs[i]))
			return bad(name, b->refs[i].name, "is given twice for one repo");
	return variants_unique(b, name);
}

static int parse_root(kernels_bundle *b, const char *name)
{
	json_t *lock = json_object_get(b->root, "lock"), *repos = json_object_get(b->root, "repos"), *jr;
	const char *format = str_of(b->root, "format");
	size_t i;
	int rc;

	if (!format || strcmp(format, KERNELS__BUNDLE_FORMAT))
		return bad(name, "\"format\"", "is not \"" KERNELS__BUNDLE_FORMAT "\"");
	if (json_integer_value(json_object_get(b->root, "version")) != 1)
		return kernels__error(KERNELS_EPARSE, "%s: bundle format version %lld is not one this libkernels "
				      "reads (1); import it with the libkernels that made it, or make it again",
				      name, (long long)json_integer_value(json_object_get(b->root, "version")));
	if (!json_is_array(repos) || !is_sha256(str_of(lock, "sha256")) ||
	    size_of(lock, "size", KERNELS__BUNDLE_MANIFEST_MAX, &b->lock.f.size) < 0)
		return bad(name, "the top level", "lacks \"repos\" or a \"lock\" with size and sha256");
	b->lock.f.path = KERNELS__BUNDLE_LOCK;
	b->lock.f.sha256 = str_of(lock, "sha256");
	b->lock.variant = (size_t)-1;
	if (!(b->lock.entry = kernels__strdup(KERNELS__BUNDLE_LOCK)) || add_total(b, b->lock.f.size, name) < 0)
		return KERNELS_ENOMEM;
	json_array_foreach(repos, i, jr)
		if ((rc = parse_repo(b, jr, name)) < 0)
			return rc;
	if (b->nrefs)
		qsort(b->refs, b->nrefs, sizeof(*b->refs), ref_cmp);
	return index_entries(b, name);
}

int kernels__bundle_parse(const char *buf, size_t len, const char *name, kernels_bundle **out)
{
	kernels_bundle *b = calloc(1, sizeof(*b));
	json_error_t jerr;
	int rc;

	*out = NULL;
	if (!b)
		return kernels__error_oom();
	if (!(b->root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr)) || !json_is_object(b->root))
		rc = kernels__error(KERNELS_EPARSE, "%s: manifest.json is not a JSON object (%s, line %d); the bundle "
				    "is damaged or is not a bundle", name, b->root ? "an array or value" : jerr.text,
				    jerr.line);
	else
		rc = parse_root(b, name);
	if (rc < 0)
		kernels_bundle_free(b);
	else
		*out = b;
	return rc;
}

kernels__bundle_entry *kernels__bundle_find(const kernels_bundle *b, const char *path)
{
	kernels__bundle_entry probe, *pp = &probe, **hit;

	probe.entry = (char *)path;
	hit = b->nindex ? bsearch(&pp, b->index, b->nindex, sizeof(*b->index), entry_cmp) : NULL;
	return hit ? *hit : NULL;
}

/* ---- the archive ---------------------------------------------------------- */

/* Hands the tar reader the next uncompressed block, counting. */
static la_ssize_t guarded_read(struct archive *tar, void *payload, const void **buf)
{
	kernels__bundle_reader *r = payload;
	size_t n = 0;
	la_int64_t off;
	int rc = archive_read_data_block(r->raw, buf, &n, &off);

	if (rc == ARCHIVE_EOF)
		return 0;
	if (rc != ARCHIVE_OK) {
		archive_set_error(tar, EIO, "%s", archive_error_string(r->raw));
		return -1;
	}
	if ((r->got += n) > r->limit) {
		r->over = 1;
		archive_set_error(tar, EFBIG, "more bytes than the manifest accounts for");
		return -1;
	}
	return (la_ssize_t)n;
}

static int open_raw(kernels__bundle_reader *r, const char *path, const void *mem, size_t len)
{
	struct archive_entry *ae;
	struct stat st;

	if (path && stat(path, &st) < 0)
		return kernels__error(errno == ENOENT ? KERNELS_ENOTFOUND : KERNELS_EIO, "cannot open the bundle %s: %s",
				      path, strerror(errno));
	if (path && S_ISDIR(st.st_mode))
		return kernels__error(KERNELS_EINVAL, "%s is a folder, not a bundle", path);
	archive_read_support_format_raw(r->raw);
	/* Only decompressors libarchive has built in: where it lacks one it
	 * would run an external program on the bundle's bytes. */
	if (archive_libzstd_version())
		archive_read_support_filter_zstd(r->raw);
	if (archive_zlib_version())
		archive_read_support_filter_gzip(r->raw);
	if (archive_liblzma_version())
		archive_read_support_filter_xz(r->raw);
	if ((path ? archive_read_open_filename(r->raw, path, 1 << 20) : archive_read_open_memory(r->raw, mem, len)) !=
	    ARCHIVE_OK || archive_read_next_header(r->raw, &ae) != ARCHIVE_OK)
		return kernels__error(KERNELS_EPARSE, "%s is not a bundle (%s); make one with 'libkernels bundle'",
				      r->name, archive_error_string(r->raw));
	return 0;
}

int kernels__bundle_reader_open(kernels__bundle_reader *r, const char *path, const void *mem, size_t len,
				const char *name)
{
	int rc;

	memset(r, 0, sizeof(*r));
	r->name = name;
	r->limit = KERNELS__BUNDLE_MANIFEST_MAX + (1u << 20); /* until the manifest says more */
	if (!(r->raw = archive_read_new()) || !(r->tar = archive_read_new()))
		return kernels__error_oom();
	if ((rc = open_raw(r, path, mem, len)) < 0)
		return rc;
	archive_read_support_format_tar(r->tar);
	if (archive_read_open(r->tar, r, NULL, guarded_read, NULL) != ARCHIVE_OK)
		return kernels__error(KERNELS_EPARSE, "%s is not a bundle: not a tar archive (%s); make one with "
				      "'libkernels bundle'", name, archive_error_string(r->tar));
	return 0;
}

void kernels__bundle_reader_close(kernels__bundle_reader *r)
{
	if (r->tar)
		archive_read_free(r->tar);
	if (r->raw)
		archive_read_free(r->raw);
	r->tar = r->raw = NULL;
}

/* A name no honest bundle has, said plainly. */
static int hostile_path(const char *pathname, const char *name)
{
	const char *p;

	if (!pathname || !*pathname)
		return kernels__error(KERNELS_EUNSAFE, "%s: an entry has no name; refusing the bundle", name);
	if (pathname[0] == '/')
		return kernels__error(KERNELS_EUNSAFE, "%s: entry '%s' is an absolute path; refusing the bundle "
				      "(nothing was imported)", name, pathname);
	for (p = pathname; p; p = strchr(p, '/') ? strchr(p, '/') + 1 : NULL)
		if (!strncmp(p, "..", 2) && (p[2] == '/' || p[2] == '\0'))
			return kernels__error(KERNELS_EUNSAFE, "%s: entry '%s' climbs out with '..'; refusing the "
					      "bundle (nothing was imported)", name, pathname);
	return 0;
}

static int header_check(struct archive_entry *ae, const char *name)
{
	const char *path = archive_entry_pathname(ae);
	int rc;

	if ((rc = hostile_path(path, name)) < 0)
		return rc;
	if (archive_entry_hardlink(ae) || archive_entry_symlink(ae) || archive_entry_filetype(ae) != AE_IFREG)
		return kernels__error(KERNELS_EUNSAFE, "%s: entry '%s' is %s, not a regular file; a bundle holds "
				      "files only: refusing it (nothing was imported)", name, path,
				      archive_entry_hardlink(ae) ? "a hard link" :
				      archive_entry_symlink(ae) ? "a symbolic link" :
				      archive_entry_filetype(ae) == AE_IFDIR ? "a folder" : "a device or special file");
	if (archive_entry_sparse_count(ae) > 0 || !archive_entry_size_is_set(ae))
		return kernels__error(KERNELS_EUNSAFE, "%s: entry '%s' is sparse or has no size; refusing the "
				      "bundle", name, path);
	return 0;
}

static unsigned long long overhead_max(const kernels_bundle *b);

int kernels__bundle_read_manifest(kernels__bundle_reader *r, kernels_bundle **out)
{
	struct archive *a = r->tar;
	const char *name = r->name;
	struct archive_entry *ae;
	char *buf = NULL;
	la_int64_t size;
	la_ssize_t n;
	int rr, rc;

	*out = NULL;
	if ((rr = archive_read_next_header(a, &ae)) != ARCHIVE_OK)
		return kernels__error(KERNELS_EPARSE, "%s is not a bundle (%s); make one with 'libkernels bundle'",
				      name, rr == ARCHIVE_EOF ? "an empty archive" : archive_error_string(a));
	if ((rc = header_check(ae, name)) < 0)
		return rc;
	if (strcmp(archive_entry_pathname(ae), KERNELS__BUNDLE_MANIFEST))
		return kernels__error(KERNELS_EPARSE, "%s: the first entry is '%s', not manifest.json: not a bundle",
				      name, archive_entry_pathname(ae));
	size = archive_entry_size(ae);
	if (size < 0 || size > (la_int64_t)KERNELS__BUNDLE_MANIFEST_MAX)
		return kernels__error(KERNELS_EUNSAFE, "%s: manifest.json is %lld bytes, over the %u MiB a manifest "
				      "may have; refusing the bundle", name, (long long)size,
				      KERNELS__BUNDLE_MANIFEST_MAX >> 20);
	if (!(buf = malloc((size_t)size + 1)))
		return kernels__error_oom();
	n = size ? archive_read_data(a, buf, (size_t)size) : 0;
	if (n != size)
		rc = kernels__error(KERNELS_EPARSE, "%s: manifest.json is cut short (%s)", name,
				    n < 0 ? archive_error_string(a) : "the archive ends early");
	else
		rc = kernels__bundle_parse(buf, (size_t)size, name, out);
	if (rc == 0) {
		(*out)->manifest_size = (unsigned long long)size;
		r->limit = (*out)->total + overhead_max(*out);
	}
	free(buf);
	return rc;
}

/* ---- entries ---------------------------------------------------------------- */

typedef struct {
	EVP_MD_CTX *sha256, *sha1; /* sha1: git's blob hash, when the blob is named by one */
	unsigned long long got;
} entry_hash;

static int hash_begin(entry_hash *h, const kernels__bundle_entry *e)
{
	h->got = 0;
	if (!kernels__blob_digest_begin(h->sha256, KERNELS__BLOB_SHA256, 0))
		return kernels__error_oom();
	if (!e->f.etag || strlen(e->f.etag) != 40)
		return 0;
	if (!kernels__blob_digest_begin(h->sha1, KERNELS__BLOB_GIT_SHA1, (long long)e->f.size))
		return kernels__error_oom();
	return 0;
}

static int hash_end(entry_hash *h, const kernels__bundle_entry *e, const char *name)
{
	unsigned char d[EVP_MAX_MD_SIZE];
	char hex[2 * EVP_MAX_MD_SIZE + 1];
	unsigned int n;

	if (h->got != e->f.size)
		return kernels__error(KERNELS_EPARSE, "%s: entry '%s' has %llu bytes, the manifest says %llu; the "
				      "bundle is damaged", name, e->entry, h->got, e->f.size);
	EVP_DigestFinal_ex(h->sha256, d, &n);
	kernels__hex(d, n, hex);
	if (strcmp(hex, e->f.sha256))
		return kernels__error(KERNELS_EINTEGRITY, "%s: entry '%s' does not match the manifest (sha256 %s, "
				      "listed %s); the bundle is damaged or was tampered with: nothing was imported",
				      name, e->entry, hex, e->f.sha256);
	if (e->f.etag && strlen(e->f.etag) == 40) {
		EVP_DigestFinal_ex(h->sha1, d, &n);
		kernels__hex(d, n, hex);
		if (strcmp(hex, e->f.etag))
			return kernels__error(KERNELS_EINTEGRITY, "%s: entry '%s' does not match its blob name (git "
					      "blob %s, listed %s); nothing was imported", name, e->entry, hex,
					      e->f.etag);
	}
	return 0;
}

/* Archive bytes an honest bundle spends besides file bytes: headers (pax
 * records included) and padding per entry, the end blocks and blocking. */
static unsigned long long overhead_max(const kernels_bundle *b)
{
	return (unsigned long long)(b->nindex + 2) * 8192 + (1u << 20) + b->manifest_size;
}

/* Where `seen` keeps an entry: 0 the lock, 1 + i files[i]. */
static size_t slot(const kernels_bundle *b, const kernels__bundle_entry *e)
{
	return e == &b->lock ? 0 : (size_t)(e - b->files) + 1;
}

static int bomb(const kernels__bundle_reader *r, const kernels_bundle *b)
{
	return kernels__error(KERNELS_EUNSAFE, "%s: the archive holds far more than its manifest lists (%llu bytes "
			      "of files); refusing it as an archive bomb (nothing was imported)", r->name, b->total);
}

static int next_entry(kernels__bundle_reader *r, kernels_bundle *b, unsigned char *seen, kernels__bundle_entry **out)
{
	struct archive *a = r->tar;
	const char *name = r->name;
	struct archive_entry *ae;
	kernels__bundle_entry *e;
	int rr = archive_read_next_header(a, &ae), rc;

	*out = NULL;
	if (r->over)
		return bomb(r, b);
	if (rr == ARCHIVE_EOF)
		return 1;
	if (rr != ARCHIVE_OK && rr != ARCHIVE_WARN)
		return kernels__error(KERNELS_EPARSE, "%s: the archive is damaged or cut short (%s); nothing was "
				      "imported", name, archive_error_string(a));
	if ((rc = header_check(ae, name)) < 0)
		return rc;
	if (!(e = kernels__bundle_find(b, archive_entry_pathname(ae))))
		return kernels__error(KERNELS_EUNSAFE, "%s: entry '%s' is not in the manifest; refusing the bundle "
				      "(nothing was imported)", name, archive_entry_pathname(ae));
	if (seen[slot(b, e)])
		return kernels__error(KERNELS_EUNSAFE, "%s: entry '%s' is in the archive twice; refusing the bundle "
				      "(nothing was imported)", name, e->entry);
	if ((unsigned long long)archive_entry_size(ae) != e->f.size)
		return kernels__error(KERNELS_EUNSAFE, "%s: entry '%s' is %lld bytes, the manifest lists %llu; "
				      "refusing the bundle (nothing was imported)", name, e->entry,
				      (long long)archive_entry_size(ae), e->f.size);
	seen[slot(b, e)] = 1;
	*out = e;
	return 0;
}

static int read_entry(kernels__bundle_reader *rd, const kernels_bundle *b, const kernels__bundle_entry *e,
		      entry_hash *h, const kernels__bundle_sink *sink)
{
	struct archive *a = rd->tar;
	const char *name = rd->name;
	const void *buf;
	size_t n;
	la_int64_t off;
	int r, rc = 0;

	while (rc == 0 && (r = archive_read_data_block(a, &buf, &n, &off)) == ARCHIVE_OK) {
		if ((unsigned long long)off != h->got || h->got + n > e->f.size)
			return kernels__error(KERNELS_EUNSAFE, "%s: entry '%s' holds more or other bytes than its "
					      "%llu listed; refusing the bundle", name, e->entry, e->f.size);
		h->got += n;
		if (!EVP_DigestUpdate(h->sha256, buf, n) ||
		    (e->f.etag && strlen(e->f.etag) == 40 && !EVP_DigestUpdate(h->sha1, buf, n)))
			return kernels__error_oom();
		if (sink->data)
			rc = sink->data(sink->payload, buf, n);
	}
	if (rc == 0 && rd->over)
		rc = bomb(rd, b);
	if (rc == 0 && r != ARCHIVE_EOF)
		rc = kernels__error(KERNELS_EPARSE, "%s: entry '%s' is damaged or cut short (%s); nothing was "
				    "imported", name, e->entry, archive_error_string(a));
	return rc < 0 ? rc : hash_end(h, e, name);
}

static int scan(kernels__bundle_reader *r, kernels_bundle *b, const kernels__bundle_sink *sink, unsigned char *seen,
		entry_hash *h, unsigned long long *bytes)
{
	const char *name = r->name;
	kernels__bundle_entry *e;
	size_t i;
	int rc;

	while ((rc = next_entry(r, b, seen, &e)) == 0) {
		if ((rc = hash_begin(h, e)) < 0 || (sink->begin && (rc = sink->begin(sink->payload, e)) < 0))
			return rc;
		rc = read_entry(r, b, e, h, sink);
		if (rc == 0 && sink->end)
			rc = sink->end(sink->payload, e);
		if (rc < 0) {
			if (sink->abort)
				sink->abort(sink->payload, e);
			return rc;
		}
		*bytes += e->f.size;
	}
	if (rc < 0)
		return rc;
	for (i = 0; i < b->nindex; i++)
		if (!seen[i])
			return kernels__error(KERNELS_EPARSE, "%s: %s is listed in the manifest but not in the "
					      "archive; the bundle is incomplete: nothing was imported", name,
					      i ? b->files[i - 1].entry : b->lock.entry);
	return 0;
}

int kernels__bundle_scan(kernels__bundle_reader *r, kernels_bundle *b, const kernels__bundle_sink *sink,
			 unsigned long long *bytes)
{
	static const kernels__bundle_sink none = { 0 };
	unsigned char *seen = calloc(b->nindex + 1, 1);
	entry_hash h = { EVP_MD_CTX_new(), EVP_MD_CTX_new(), 0 };
	unsigned long long got = 0;
	int rc;

	if (!seen || !h.sha256 || !h.sha1)
		rc = kernels__error_oom();
	else
		rc = scan(r, b, sink ? sink : &none, seen, &h, &got);
	if (bytes)
		*bytes = got;
	EVP_MD_CTX_free(h.sha256);
	EVP_MD_CTX_free(h.sha1);
	free(seen);
	return rc;
}

/* ---- the public listing ------------------------------------------------------ */

int kernels_bundle_open(kernels_bundle **out, const char *path)
{
	kernels__bundle_reader r;
	int rc;

	if (!out || !path)
		return kernels__error(KERNELS_EINVAL, "kernels_bundle_open: out and path must be given");
	*out = NULL;
	if ((rc = kernels__bundle_reader_open(&r, path, NULL, 0, path)) == 0)
		rc = kernels__bundle_read_manifest(&r, out);
	kernels__bundle_reader_close(&r);
	return rc;
}

size_t kernels_bundle_file_count(const kernels_bundle *bundle)
{
	return bundle ? bundle->nfiles : 0;
}

const kernels_bundle_file *kernels_bundle_file_at(const kernels_bundle *bundle, size_t i)
{
	return bundle && i < bundle->nfiles ? &bundle->files[i].f : NULL;
}

size_t kernels_bundle_ref_count(const kernels_bundle *bundle)
{
	return bundle ? bundle->nrefs : 0;
}

const kernels_bundle_ref *kernels_bundle_ref_at(const kernels_bundle *bundle, size_t i)
{
	return bundle && i < bundle->nrefs ? &bundle->refs[i] : NULL;
}

void kernels_bundle_free(kernels_bundle *bundle)
{
	size_t i;

	if (!bundle)
		return;
	for (i = 0; i < bundle->nfiles; i++)
		free(bundle->files[i].entry);
	free(bundle->lock.entry);
	free(bundle->files);
	free(bundle->variants);
	free(bundle->refs);
	free(bundle->index);
	json_decref(bundle->root);
	free(bundle);
}
