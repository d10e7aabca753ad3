/* metadata.json of a variant, and its digest checked against the files on
 * disk: the gate in front of every dlopen. The digest covers every regular
 * file except metadata.json and metadata.json.sigstore at the top, any
 * __pycache__/ folder and *.pyc file, as kernel-builder writes it and the
 * Python client checks it. */
#include "verify.h"
#include "metadata.h"
#include "receipt.h"
#include "cache.h"
#include "error.h"
#include "util.h"
#include "hash.h"
#include "listing.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 32
#define MAX_FILES 100000
#define KERNELS_METADATA_MAX (1 << 20)

static const char *const backend_types[] = { "cann", "cpu", "cuda", "metal", "neuron", "rocm", "tpu", "xpu" };

void kernels_metadata_free(kernels_metadata *m)
{
	size_t i;
	if (!m)
		return;
	for (i = 0; i < m->nwalked; i++) {
		free(m->walked[i]);
		free(m->walked_real[i]);
	}
	free(m->walked);
	free(m->walked_real);
	free(m->walked_st);
	free(m->archs);
	kernels__metafields_free(m->fields);
	json_decref(m->json);
	free(m);
}

/* ---- parsing ------------------------------------------------------------- */

static int bad_key(const char *path, const char *key, const char *want)
{
	return kernels__error(KERNELS_EPARSE,
			      "%s: key '%s' %s; the variant's metadata.json is not what kernel-builder writes "
			      "(rebuild or re-upload the variant)", path, key, want);
}

static int get_string(json_t *obj, const char *path, const char *key, const char *label, const char **out)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return bad_key(path, label, "is missing");
	if (!json_is_string(v) || !json_string_length(v))
		return bad_key(path, label, "must be a non-empty string");
	*out = json_string_value(v);
	return 0;
}

static int parse_backend(kernels_metadata *m, const char *path)
{
	json_t *b = json_object_get(m->json, "backend"), *archs, *a;
	size_t i, ok = 0;
	int rc;

	if (!b)
		return bad_key(path, "backend", "is missing");
	if (!json_is_object(b))
		return bad_key(path, "backend", "must be an object like {\"type\": \"cuda\", \"archs\": [...]}");
	if ((rc = get_string(b, path, "type", "backend.type", &m->backend)) < 0)
		return rc;
	for (i = 0; i < sizeof(backend_types) / sizeof(backend_types[0]); i++)
		ok |= !strcmp(m->backend, backend_types[i]);
	if (!ok)
		return bad_key(path, "backend.type",
			       "is not one of cann, cpu, cuda, metal, neuron, rocm, tpu, xpu");
	archs = json_object_get(b, "archs");
	if (!archs || json_is_null(archs))
		return 0;
	if (!json_is_array(archs))
		return bad_key(path, "backend.archs", "must be a list of strings");
	m->narchs = json_array_size(archs);
	if (!(m->archs = calloc(m->narchs + 1, sizeof(*m->archs))))
		return kernels__error_oom();
	json_array_foreach(archs, i, a) {
		if (!json_is_string(a))
			return bad_key(path, "backend.archs", "must be a list of strings");
		m->archs[i] = json_string_value(a);
	}
	if (!m->narchs) {
		free(m->archs);
		m->archs = NULL;
	}
	return 0;
}

static int parse_digest(kernels_metadata *m, const char *path)
{
	json_t *d = json_object_get(m->json, "digest"), *v;
	const char *key;
	int rc;

	if (!d)
		return 0; /* a build from before digests: verified against its blobs' names */
	if (!json_is_object(d))
		return bad_key(path, "digest", "must be an object {\"algorithm\": ..., \"files\": {...}}");
	if ((rc = get_string(d, path, "algorithm", "digest.algorithm", &m->algorithm)) < 0)
		return rc;
	if (strcasecmp(m->algorithm, "sha256") && strcasecmp(m->algorithm, "sha512"))
		return bad_key(path, "digest.algorithm", "must be sha256 or sha512");
	m->files = json_object_get(d, "files");
	if (!json_is_object(m->files))
		return bad_key(path, "digest.files", m->files ? "must be an object of path: hash" : "is missing");
	json_object_foreach(m->files, key, v)
		if (!json_is_string(v))
			return bad_key(path, "digest.files", "must map every path to a base64 string");
	return 0;
}

static int git_dirty(json_t *git)
{
	return json_is_object(git) && json_is_true(json_object_get(git, "dirty"));
}

static void parse_provenance(kernels_metadata *m)
{
	json_t *p = json_object_get(m->json, "provenance"), *kb;
	int kernel, builder;

	if (!json_is_object(p))
		return;
	kb = json_object_get(p, "kernel-builder");
	kernel = git_dirty(json_object_get(p, "kernel"));
	/* kernels 0.17 writes kernel-builder's commit and dirty next to its version */
	builder = git_dirty(kb);
	m->dirty = kernel || builder;
	snprintf(m->dirty_sources, sizeof(m->dirty_sources), "%s%s%s", kernel ? "kernel source" : "",
		 kernel && builder ? ", " : "", builder ? "kernel-builder" : "");
}

static int too_big(const char *path, long long size)
{
	return kernels__error(KERNELS_EPARSE, "%s is %lld bytes, more than the %d a metadata.json may have; "
			      "the variant is broken or hostile: do not load it", path, size, KERNELS_METADATA_MAX);
}

/* Reads metadata.json through one descriptor, refusing more than the cap
 * before anything is read: real ones are a few kilobytes (a digest line
 * per file), and parsing costs about a hundred times the size. */
static int read_metadata(const char *path, char **buf, size_t *len, struct stat *st_out)
{
	struct stat st;

	if (kernels__read_file(path, KERNELS_METADATA_MAX, 0, buf, len, &st) == 0) {
		*st_out = st;
		return 0;
	}
	if (errno == EFBIG)
		return too_big(path, (long long)st.st_size);
	if (errno == ENOMEM)
		return kernels__error_oom();
	if (errno == ESTALE)
		return kernels__error(KERNELS_EIO, "%s: its size changed while it was read; re-download the variant",
				      path);
	return kernels__error(errno == ENOENT ? KERNELS_ENOTFOUND : KERNELS_EIO,
			      "%s: %s; a variant folder must hold the metadata.json kernel-builder writes", path,
			      strerror(errno));
}

int kernels__metadata_parse(const char *buf, size_t len, const char *path, kernels_metadata **out)
{
	kernels_metadata *m;
	json_error_t jerr;
	json_t *version;
	int rc;

	*out = NULL;
	if (len > KERNELS_METADATA_MAX)
		return too_big(path, (long long)len);
	if (!(m = calloc(1, sizeof(*m))))
		return kernels__error_oom();
	if (!(m->json = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr))) {
		rc = kernels__error(KERNELS_EPARSE, "%s: not valid JSON (line %d: %s); re-download the variant",
				    path, jerr.line, jerr.text);
		goto fail;
	}
	if (!json_is_object(m->json)) {
		rc = kernels__error(KERNELS_EPARSE, "%s: must hold a JSON object", path);
		goto fail;
	}
	if ((rc = get_string(m->json, path, "id", "id", &m->id)) < 0 ||
	    (rc = get_string(m->json, path, "name", "name", &m->name)) < 0)
		goto fail;
	version = json_object_get(m->json, "version");
	if (!version) {
		rc = bad_key(path, "version", "is missing");
		goto fail;
	}
	if (!json_is_integer(version) || json_integer_value(version) < 0 || json_integer_value(version) > INT_MAX) {
		rc = bad_key(path, "version", "must be a non-negative integer (the kernel's major version)");
		goto fail;
	}
	m->version = (int)json_integer_value(version);
	if ((rc = get_string(m->json, path, "license", "license", &m->license)) < 0 ||
	    (rc = parse_backend(m, path)) < 0 || (rc = parse_digest(m, path)) < 0 ||
	    (rc = kernels__metafields_parse(m->json, path, &m->fields)) < 0)
		goto fail;
	parse_provenance(m);
	*out = m;
	return 0;
fail:
	kernels_metadata_free(m);
	return rc;
}

int kernels_metadata_read(kernels_metadata **out, const char *variant_dir)
{
	struct stat st;
	char *path, *buf;
	size_t len;
	int rc;

	if (!out || !variant_dir)
		return kernels__error(KERNELS_EINVAL, "kernels_metadata_read: out and variant_dir must be given");
	*out = NULL;
	if (!(path = kernels__sprintf("%s/metadata.json", variant_dir)))
		return KERNELS_ENOMEM;
	if ((rc = read_metadata(path, &buf, &len, &st)) == 0) {
		if ((rc = kernels__metadata_parse(buf, len, path, out)) == 0)
			(*out)->meta_st = st;
		free(buf);
	}
	free(path);
	return rc;
}

/* ---- walking the folder -------------------------------------------------- */

typedef struct {
	char *rel;
	char *real;
	struct stat st; /* of the descriptor it was hashed through */
} file_ent;

typedef struct {
	const char *root;     /* real path links must stay in */
	int repo_root;        /* `root` is a repo folder of a cache: its shared blob store counts too */
	file_ent *v;
	size_t n, cap;
	/* The library's own load of a cached variant, offline: a missing
	 * blob is one never downloaded, said so (download.h: the fetch stage
	 * leaves this walk to say what the cache lacks). */
	int offline;
	const char *online;   /* offline: how to go online (kernels__config_online_hint) */
} walk_state;

static int inside(const char *root, const char *path)
{
	size_t n = strlen(root);
	return !strncmp(root, path, n) && (path[n] == '/' || path[n] == '\0' || (n == 1 && root[0] == '/'));
}

/* Where a link of the variant may lead: inside `w->root`, or for a cached
 * repo its cache's shared blob store. */
static int allowed(const walk_state *w, const char *real)
{
	return inside(w->root, real) || (w->repo_root && kernels__cache_shared_blob(w->root, real));
}

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && !strcmp(s + a - b, suffix);
}

static int push(walk_state *w, const char *rel, const char *real, const struct stat *st)
{
	if (KERNELS__ARRAY_GROW(w->v, w->cap, w->n) < 0)
		return kernels__error_oom();
	if (w->n >= MAX_FILES)
		return kernels__error(KERNELS_EINVAL, "more than %d files in the variant folder", MAX_FILES);
	w->v[w->n].rel = kernels__strdup(rel);
	w->v[w->n].real = kernels__strdup(real);
	w->v[w->n].st = *st;
	if (!w->v[w->n].rel || !w->v[w->n].real) {
		free(w->v[w->n].rel);
		free(w->v[w->n].real);
		return kernels__error_oom();
	}
	w->n++;
	return 0;
}

/* Offline, what the library's own load of a cached variant finds missing
 * was never downloaded: said so, with what to do. */
static int not_downloaded(const walk_state *w, const char *what, const char *why)
{
	return kernels__error(KERNELS_EOFFLINE, "offline: %s is not in the cache (%s); download the variant while "
			      "online (libkernels download, or %s)", what, why, w->online);
}

/* Every file of the variant but its metadata and Python's byte-code, by the
 * path a link resolves to, which must stay inside the root. */
static int visit(const char *path, const char *rel, int depth, const struct stat *lst, void *payload)
{
	walk_state *w = payload;
	const char *name = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
	char real[PATH_MAX];
	struct stat st;

	(void)lst;
	if (depth == 0 && (!strcmp(name, "metadata.json") || !strcmp(name, "metadata.json.sigstore")))
		return 0;
	if (!kernels__realpath(path, real, &st)) {
		if (w->offline && errno == ENOENT)
			return not_downloaded(w, path, "its link points at a missing blob");
		return kernels__error(KERNELS_EINTEGRITY, "%s: %s (a broken link?); re-download the variant", path,
				      strerror(errno));
	}
	if (!allowed(w, real))
		return kernels__error(KERNELS_EUNSAFE,
				      "%s is a link to %s, outside %s; refusing to follow it (the folder was "
				      "tampered with or built wrongly)", path, real, w->root);
	if (S_ISDIR(st.st_mode))
		return strcmp(name, "__pycache__") ? KERNELS__WALK_DESCEND : 0;
	if (S_ISREG(st.st_mode))
		return ends_with(name, ".pyc") ? 0 : push(w, rel, real, &st);
	return kernels__error(KERNELS_EUNSAFE, "%s is neither a file nor a folder; remove it", path);
}

static int ent_cmp(const void *a, const void *b)
{
	return strcmp(((const file_ent *)a)->rel, ((const file_ent *)b)->rel);
}

/* ---- hashing -------------------------------------------------------------- */

/* Standard base64 with padding of the file's digest. */
static int hash_file(file_ent *f, const EVP_MD *md, char *out, size_t out_size)
{
	unsigned char digest[EVP_MAX_MD_SIZE];
	unsigned int dlen = 0;
	int rc;

	if ((rc = kernels__hash_path(f->real, md, NULL, 0, digest, &dlen, &f->st)) < 0)
		return rc;
	if (out_size < 4 * ((dlen + 2) / 3) + 1)
		return kernels__error(KERNELS_ERROR, "digest buffer too small");
	EVP_EncodeBlock((unsigned char *)out, digest, (int)dlen);
	return 0;
}

/* ---- verification --------------------------------------------------------- */

static int unhex(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A large blob hashed at download (lib/hub_fetch.c) and unchanged since
 * (`root`: the repo's cache folder; NULL: no receipts):
 * its sha256 (base64, as in metadata.json) is the name it was published
 * under, with no need to hash it again. */
static int hashed_at_download(const kernels__config *cfg, const char *root, const file_ent *f, char *out,
			      size_t out_size)
{
	unsigned char digest[32];
	const char *name;
	size_t n, i;

	if (!root || out_size < 45)
		return 0;
	n = strlen(root);
	if (strncmp(f->real, root, n) || strncmp(f->real + n, "/blobs/", 7))
		return 0;
	name = f->real + n + 7;
	if (strlen(name) != 64 || strspn(name, "0123456789abcdef") != 64 || f->st.st_size < KERNELS__BLOB_RECEIPT_MIN ||
	    !kernels__receipt_blob_matches(cfg, root, name, &f->st))
		return 0;
	for (i = 0; i < 32; i++)
		digest[i] = (unsigned char)(unhex(name[2 * i]) << 4 | unhex(name[2 * i + 1]));
	EVP_EncodeBlock((unsigned char *)out, digest, 32);
	return 1;
}

/* Offline, a cached variant that lacks files its digest lists, and has
 * every other one as listed: a download that stopped between its links
 * (the disk filled, the process was killed), not a corrupt one. */
static int not_finished(const walk_state *w, const char *dir, const char *missing)
{
	return kernels__error(KERNELS_EOFFLINE, "offline: %s is not all in the cache (a download of it did not "
			      "finish: the disk filled, or it was stopped); download the variant again while online "
			      "(libkernels download, or %s)%s", dir, w->online, missing ? missing : "");
}

static int check_digest(kernels_metadata *m, walk_state *w, const char *root, const char *dir, const char *what,
			const kernels__config *cfg)
{
	const EVP_MD *md = strcasecmp(m->algorithm, "sha512") ? EVP_sha256() : EVP_sha512();
	kernels__buf msg = { 0 };
	const char *key;
	json_t *v;
	size_t i, violations = 0, missing;
	int rc = 0;

	json_object_foreach(m->files, key, v) {
		file_ent probe = { .rel = (char *)key };
		if (!w->n || !bsearch(&probe, w->v, w->n, sizeof(*w->v), ent_cmp)) {
			kernels__buf_printf(&msg, "\n  missing file: %s", key);
			violations++;
		}
	}
	missing = violations;
	for (i = 0; i < w->n && rc == 0; i++) {
		char got[EVP_MAX_MD_SIZE * 2];
		const char *want;

		if (!(v = json_object_get(m->files, w->v[i].rel))) {
			kernels__buf_printf(&msg, "\n  unknown file: %s", w->v[i].rel);
			violations++;
			continue;
		}
		if (!strcasecmp(m->algorithm, "sha256") && hashed_at_download(cfg, root, &w->v[i], got, sizeof(got)))
			kernels__log(cfg, KERNELS_LOG_DEBUG, "%s: %s hashed at download, unchanged since (receipt)",
				     what ? what : dir, w->v[i].rel);
		else if ((rc = hash_file(&w->v[i], md, got, sizeof(got))) < 0)
			break;
		want = json_string_value(v);
		if (strcmp(want, got)) {
			kernels__buf_printf(&msg, "\n  hash mismatch: %s (expected %s, got %s)", w->v[i].rel, want,
					    got);
			violations++;
		}
	}
	if (rc == 0 && violations && violations == missing && w->offline)
		rc = not_finished(w, dir, msg.ptr);
	else if (rc == 0 && violations)
		rc = kernels__error(KERNELS_EINTEGRITY,
				    "%s%s%s: %zu file%s do%s not match metadata.json's digest; the download is "
				    "corrupt or was tampered with: delete the folder and fetch it again%s",
				    what ? what : "", what ? " in " : "", dir, violations, violations == 1 ? "" : "s",
				    violations == 1 ? "es" : "", msg.ptr ? msg.ptr : "");
	kernels__buf_free(&msg);
	return rc;
}

/* Without a digest, a cached file is proven by its blob: the blob's name
 * is the hash the Hub listed for it when it was downloaded (git's blob
 * sha1 or the LFS sha256), so its content must hash to that name. */
static int hash_blob(file_ent *f, int git, char *hex)
{
	/* A blob that changes size while it is read fails its name like any
	 * other change. */
	return kernels__hash_blob(f->real, git ? KERNELS__BLOB_GIT_SHA1 : KERNELS__BLOB_SHA256, hex, &f->st);
}

static int unverifiable(const char *what, const char *dir, const char *rel)
{
	return kernels__error(KERNELS_EINTEGRITY, "%s%s%s: %s has no digest in metadata.json and is not a cached blob "
			      "named by its hash, so it cannot be verified; delete the folder and fetch it again",
			      what ? what : "", what ? " in " : "", dir, rel);
}

static int mismatch(const char *what, const char *dir, const char *rel, const char *name, const char *hex)
{
	return kernels__error(KERNELS_EINTEGRITY, "%s%s%s: %s does not match the hash it was downloaded under "
			      "(blob %s, content %s); the cache is corrupt or was tampered with: delete the folder "
			      "and fetch it again", what ? what : "", what ? " in " : "", dir, rel, name, hex);
}

/* The Hub's listing of the commit whose snapshot holds `dir` (a real path
 * under root/snapshots/), as the cache recorded it when the variant was
 * last fetched online; *path (malloc'ed) the file's path in the repo.
 * 1, 0 when there is no record, <0 on an error. */
static int listing_of(const kernels__config *cfg, const char *root, const char *dir, const char *rel,
		      kernels__tree *t, int *read, char **path)
{
	size_t n = strlen(root);
	const char *commit = dir + n + strlen("/snapshots/");
	char c[41];

	if (strncmp(dir, root, n) || strncmp(dir + n, "/snapshots/", 11) || strspn(commit, "0123456789abcdef") != 40 ||
	    commit[40] != '/')
		return 0;
	if (!(*path = kernels__sprintf("%s/%s", commit + 41, rel)))
		return KERNELS_ENOMEM;
	memcpy(c, commit, 40);
	c[40] = '\0';
	if (*read < 0)
		*read = kernels__listing_read_at(cfg, root, c, t);
	return *read;
}

/* A file huggingface_hub left in the snapshot itself (it makes no links
 * with HF_HUB_DISABLE_SYMLINKS, or on a filesystem without them), or in
 * its shared blob store (named by its Xet hash, which is not the hash of
 * its bytes): proven by the hash the Hub listed for its path, as a blob
 * by its name. Without
 * a recorded listing (a cache only huggingface_hub filled) that takes one
 * online load, which records it. */
static int check_plain(const kernels__config *cfg, walk_state *w, file_ent *f, const char *root, const char *dir,
		       const char *what, kernels__tree *t, int *read)
{
	char *path = NULL, *here = kernels__sprintf("%s/%s", dir, f->rel), hex[2 * EVP_MAX_MD_SIZE + 1];
	const kernels__tree_entry *e;
	int in_place = here && (!strcmp(here, f->real) || (w->repo_root && kernels__cache_shared_blob(root, f->real)));
	int rc = in_place ? listing_of(cfg, root, dir, f->rel, t, read, &path) : 0;

	if (rc == 0 && path)
		rc = kernels__error(w->offline ? KERNELS_EOFFLINE : KERNELS_EINTEGRITY, "%s%s%s: %s has no digest "
				    "in metadata.json and is not a blob named by its hash (huggingface_hub wrote it "
				    "without symlinks, or in its shared blob store), so only the Hub's listing of the "
				    "commit can verify it, and the cache "
				    "has no record of it; load the kernel once online (that records it)",
				    what ? what : "", what ? " in " : "", dir, f->rel);
	else if (rc == 0)
		rc = here ? unverifiable(what, dir, f->rel) : KERNELS_ENOMEM;
	else if (rc == 1 && (!(e = kernels__tree_find(t, path)) || e->is_dir))
		rc = kernels__error(KERNELS_EINTEGRITY, "%s%s%s: %s is not in the Hub's listing of that commit; "
				    "delete the folder and fetch it again", what ? what : "", what ? " in " : "", dir,
				    f->rel);
	else if (rc == 1 && (rc = hash_blob(f, !e->lfs_sha256, hex)) == 0 && strcmp(hex, kernels__tree_entry_blob(e)))
		rc = mismatch(what, dir, f->rel, kernels__tree_entry_blob(e), hex);
	free(path);
	free(here);
	return rc;
}

static int check_blobs(const kernels__config *cfg, walk_state *w, const char *root, const char *dir,
		       const char *what)
{
	char *blobs = kernels__sprintf("%s/blobs/", root);
	size_t i, n = blobs ? strlen(blobs) : 0;
	int rc = blobs ? 0 : KERNELS_ENOMEM, read = -1;
	kernels__tree listing = { 0 };

	for (i = 0; i < w->n && rc == 0; i++) {
		const char *real = w->v[i].real, *name = real + n;
		size_t len = strlen(name);
		char hex[2 * EVP_MAX_MD_SIZE + 1];

		if (strncmp(real, blobs, n) || (len != 40 && len != 64) || strspn(name, "0123456789abcdef") != len)
			rc = check_plain(cfg, w, &w->v[i], root, dir, what, &listing, &read);
		else if ((rc = hash_blob(&w->v[i], len == 40, hex)) == 0 && strcmp(hex, name))
			rc = mismatch(what, dir, w->v[i].rel, name, hex);
	}
	kernels__tree_free(&listing);
	free(blobs);
	return rc;
}

/* A variant with a digest is checked against it; one without (built
 * before kernel-builder wrote digests, as the Python client loads them)
 * against its blobs when it lies in the cache, and not at all as a local
 * build tree, with a warning. `receipts`: download receipts may stand in
 * for hashing a blob. */
static int check_files(const kernels__config *cfg, kernels_metadata *m, walk_state *w, const char *root,
		       const char *dir, const char *what, int receipts)
{
	if (m->files)
		return check_digest(m, w, receipts ? root : NULL, dir, what, cfg);
	if (root)
		return check_blobs(cfg, w, root, dir, what);
	kernels__log(cfg, KERNELS_LOG_WARNING,
		     "%s (%s) has no digest in metadata.json: its files are loaded unverified (a local build "
		     "tree; run `kernel-builder hash` or rebuild to add one)", what ? what : "variant", dir);
	return 0;
}

/* A cached variant whose receipt vouches for every file as it is now needs
 * no hashing; otherwise it is hashed whole and a receipt written. */
static int check_cached(const kernels__config *cfg, kernels_metadata *m, walk_state *w, const char *root,
			const char *dir, const char *what, kernels__write_later **later)
{
	const char **files = calloc(w->n + 1, sizeof(*files));
	struct stat *sts = calloc(w->n + 1, sizeof(*sts));
	size_t i;
	int rc = 0;

	if (!files || !sts) {
		rc = kernels__error_oom();
		goto done;
	}
	for (i = 0; i < w->n; i++) {
		files[i] = w->v[i].rel;
		sts[i] = w->v[i].st;
	}
	if (kernels__receipt_matches(cfg, root, dir, &m->meta_st, files, sts, w->n)) {
		kernels__log(cfg, KERNELS_LOG_DEBUG, "%s: verified before, unchanged since (receipt)",
			     what ? what : dir);
		goto done;
	}
	if ((rc = check_files(cfg, m, w, root, dir, what, 1)) == 0) {
		for (i = 0; i < w->n; i++)
			sts[i] = w->v[i].st;
		kernels__receipt_write(cfg, root, dir, &m->meta_st, files, sts, w->n, later);
	}
done:
	free(files);
	free(sts);
	return rc;
}

/* The shared core: `dir_real` and `root_real` are real paths already
 * (kernels__realpath's answers); NULL root_real: links must stay inside
 * the variant folder, and no receipt is used. `use_receipts`: the
 * library's own check of a variant it is about to use (a load, a bundle),
 * not kernels_verify_variant's: receipts may stand in for hashing, and
 * offline, what a cached variant lacks is said to be not downloaded (the
 * fetch stage leaves that walk to this one: download.h). */
static int verify_real_folder(const kernels__config *cfg, const char *dir_real, const char *root_real,
			      const char *what, int use_receipts, kernels_metadata **out,
			      kernels__write_later **later)
{
	const char *fence = root_real ? root_real : dir_real;
	walk_state w = { .root = fence, .repo_root = root_real != NULL,
			 .offline = use_receipts && root_real && cfg && cfg->offline,
			 .online = cfg ? kernels__config_online_hint(cfg) : NULL };
	kernels_metadata *m = NULL;
	size_t i;
	int rc;

	if (!inside(fence, dir_real))
		return kernels__error(KERNELS_EUNSAFE, "variant folder %s lies outside %s; refusing it", dir_real,
				      fence);
	{
		char meta[PATH_MAX + 16], meta_real[PATH_MAX];
		snprintf(meta, sizeof(meta), "%s/metadata.json", dir_real);
		if (kernels__realpath(meta, meta_real, NULL) && !allowed(&w, meta_real))
			return kernels__error(KERNELS_EUNSAFE, "%s is a link to %s, outside %s; refusing it", meta,
					      meta_real, fence);
	}
	if ((rc = kernels_metadata_read(&m, dir_real)) < 0)
		return w.offline && rc == KERNELS_ENOTFOUND ? not_downloaded(&w, dir_real, "no metadata.json")
		       : what ? kernels__error_prefix("%s", what) : rc;
	w.root = fence;
	if ((rc = kernels__walk(dir_real, MAX_DEPTH, visit, &w)) == 0 && w.offline && !w.n) {
		/* what a lock or the arch check leaves of a variant (as Python kernels' lock does) */
		rc = not_downloaded(&w, what ? what : dir_real, "only its metadata.json");
	} else if (rc == 0) {
		if (w.n)
			qsort(w.v, w.n, sizeof(*w.v), ent_cmp);
		rc = root_real && use_receipts ? check_cached(cfg, m, &w, root_real, dir_real, what, later)
					       : check_files(cfg, m, &w, root_real, dir_real, what, 0);
	}
	if (rc == 0 && m->dirty)
		kernels__log(cfg, KERNELS_LOG_WARNING,
			     "Kernel '%s' variant '%s' was built from a dirty git tree (%s had uncommitted changes). "
			     "Its recorded git revision does not fully identify the sources it was built from, so the "
			     "build may not be reproducible.", m->name, what ? what : dir_real, m->dirty_sources);
	if (rc == 0 && (m->walked = calloc(w.n ? w.n : 1, sizeof(char *))) &&
	    (m->walked_real = calloc(w.n ? w.n : 1, sizeof(char *))) &&
	    (m->walked_st = calloc(w.n ? w.n : 1, sizeof(struct stat)))) {
		for (i = 0; i < w.n; i++) {
			m->walked[i] = w.v[i].rel;
			m->walked_real[i] = w.v[i].real;
			m->walked_st[i] = w.v[i].st;
			w.v[i].rel = w.v[i].real = NULL;
		}
		m->nwalked = w.n;
	} else if (rc == 0) {
		rc = kernels__error_oom();
	}
	for (i = 0; i < w.n; i++) {
		free(w.v[i].rel);
		free(w.v[i].real);
	}
	free(w.v);
	if (rc < 0 || !out)
		kernels_metadata_free(m);
	else
		*out = m;
	return rc;
}

/* Resolves the folders as given (links followed), then verifies. */
static int resolve_and_verify(const kernels__config *cfg, const char *variant_dir, const char *root,
			      const char *what, int use_receipts, kernels_metadata **out)
{
	char dir_real[PATH_MAX], root_real[PATH_MAX];

	if (out)
		*out = NULL;
	if (!variant_dir)
		return kernels__error(KERNELS_EINVAL, "verify: no variant folder given");
	if (!kernels__realpath(variant_dir, dir_real, NULL))
		return kernels__error(errno == ENOENT ? KERNELS_ENOTFOUND : KERNELS_EIO, "variant folder %s: %s",
				      variant_dir, strerror(errno));
	if (root && !kernels__realpath(root, root_real, NULL))
		return kernels__error(KERNELS_EIO, "folder %s: %s", root, strerror(errno));
	return verify_real_folder(cfg, dir_real, root ? root_real : NULL, what, use_receipts, out, NULL);
}

int kernels__verify_variant(const kernels__config *cfg, const char *variant_dir, const char *root,
			    const char *what, kernels_metadata **out)
{
	return resolve_and_verify(cfg, variant_dir, root, what, 1, out);
}

int kernels__verify_resolved(const kernels__config *cfg, const char *dir_real, const char *root_real,
			     const char *what, kernels_metadata **out, kernels__write_later **later)
{
	if (out)
		*out = NULL;
	if (!dir_real)
		return kernels__error(KERNELS_EINVAL, "verify: no variant folder given");
	if (strlen(dir_real) >= PATH_MAX || (root_real && strlen(root_real) >= PATH_MAX))
		return kernels__error(KERNELS_EINVAL, "verify: a folder path longer than PATH_MAX");
	return verify_real_folder(cfg, dir_real, root_real, what, 1, out, later);
}

int kernels_verify_variant(kernels_metadata **out, const char *variant_dir, const kernels_options *opts)
{
	kernels__config cfg;
	char *root;
	int rc;

	if (out)
		*out = NULL;
	if (!variant_dir)
		return kernels__error(KERNELS_EINVAL, "kernels_verify_variant: variant_dir is NULL");
	if ((rc = kernels__config_load(&cfg, opts)) < 0)
		return rc;
	/* The layout is the cache's to know: a variant in a snapshot may link
	 * anywhere in its repo folder (its blobs/). */
	root = kernels__cache_repo_of(variant_dir);
	rc = resolve_and_verify(&cfg, variant_dir, root, NULL, 0, out); /* asked to verify: hash, whatever a receipt says */
	free(root);
	kernels__config_free(&cfg);
	return rc;
}

KERNELS__GETTER(size_t, kernels__metadata_file_count, kernels_metadata, nwalked, 0)
KERNELS__GETTER_AT(const char *, kernels__metadata_file, kernels_metadata, walked, nwalked)

const char *kernels__metadata_file_digest(const kernels_metadata *m, const char *rel, const char **algorithm)
{
	json_t *v = m && m->files && rel ? json_object_get(m->files, rel) : NULL;

	if (algorithm)
		*algorithm = v ? m->algorithm : NULL;
	return v ? json_string_value(v) : NULL;
}

const struct stat *kernels__metadata_stat(const kernels_metadata *m)
{
	return m ? &m->meta_st : NULL;
}

const struct stat *kernels__metadata_file_stat(const kernels_metadata *m, size_t i)
{
	return m && i < m->nwalked && m->walked_st ? &m->walked_st[i] : NULL;
}

const char *kernels__metadata_file_real(const kernels_metadata *m, size_t i)
{
	return m && i < m->nwalked && m->walked_real ? m->walked_real[i] : NULL;
}

KERNELS__GETTER(const char *, kernels_metadata_id, kernels_metadata, id, NULL)
KERNELS__GETTER(const char *, kernels_metadata_name, kernels_metadata, name, NULL)
KERNELS__GETTER(int, kernels_metadata_version, kernels_metadata, version, -1)
KERNELS__GETTER(const char *, kernels_metadata_license, kernels_metadata, license, NULL)
KERNELS__GETTER(const char *, kernels_metadata_backend, kernels_metadata, backend, NULL)
KERNELS__GETTER(size_t, kernels_metadata_arch_count, kernels_metadata, narchs, 0)
KERNELS__GETTER_AT(const char *, kernels_metadata_arch_at, kernels_metadata, archs, narchs)

const char *const *kernels_metadata_archs(const kernels_metadata *m)
{
	return m ? (const char *const *)m->archs : NULL;
}

KERNELS__GETTER(int, kernels_metadata_dirty, kernels_metadata, dirty, 0)
