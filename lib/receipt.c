/* Verification receipts: see receipt.h for what they vouch for and why
 * they weaken nothing. Stored in the repo's cache folder as
 * .libkernels/receipts/{commit}/{path}.json, one per variant folder, and
 * .libkernels/patched/{blob}.json beside each Python-free copy, and
 * .libkernels/blobs/{sha256}.json for a large blob hashed at download. */
#include "receipt.h"
#include "cache.h"
#include "error.h"
#include "util.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RECEIPT_MAX (16 << 20)

static char *receipt_path(const char *root, const char *dir, const char *kind)
{
	size_t n = strlen(root);

	if (strncmp(dir, root, n) || strncmp(dir + n, "/snapshots/", 11))
		return NULL; /* not a cached snapshot: no receipt */
	return kernels__sprintf("%s/.libkernels/receipts/%s%s.json", root, dir + n + 11, kind);
}

/* The repo folder of a variant folder in a cached snapshot (malloc'ed). */
static char *root_of(const char *dir)
{
	size_t n = kernels__cache_repo_len(dir);
	return n ? strndup(dir, n) : NULL;
}

static json_t *identity(const struct stat *st)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I}", "dev", (json_int_t)st->st_dev, "ino", (json_int_t)st->st_ino,
			 "size", (json_int_t)st->st_size,
			 "mtime_ns", (json_int_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec,
			 "ctime_ns", (json_int_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec);
}

static int same_identity(json_t *recorded, const struct stat *st)
{
	json_t *now = identity(st);
	int same = now && recorded && json_equal(recorded, now);

	json_decref(now);
	return same;
}

static void write_doc(const kernels__config *cfg, const char *root, const char *path, json_t *doc, int ok,
		      kernels__write_later **later);

/* Whose receipts are taken. Where signatures are required, this
 * process's user's and root's only: one another user wrote (a member of a
 * shared cache's group) could vouch for a file that user swapped, and skip
 * the very checks (signature, digest) that would refuse it. Elsewhere
 * anyone's: a user who may write the cache may as well rewrite
 * metadata.json, or remove its bundle, which the other modes allow. */
static int trusted_writer(const kernels__config *cfg, const struct stat *st)
{
	return !cfg || !cfg->sig || cfg->sig->mode != KERNELS_SIGNATURE_REQUIRE || st->st_uid == geteuid() ||
	       st->st_uid == 0;
}

/* A receipt at `path` (NULL: none) of this format's version, whose string
 * `key` (NULL: none checked) equals `value`; NULL otherwise. Read whole
 * through one descriptor (no link followed, no fifo waited on), whose
 * owner is the one checked; parsed from memory (jansson's json_loadfd
 * reads a byte per system call). */
static json_t *load(const kernels__config *cfg, const char *path, const char *key, const char *value)
{
	json_t *doc = NULL;
	struct stat st;
	const char *recorded;
	char *text = NULL;
	size_t len = 0;

	if (path && kernels__read_file(path, RECEIPT_MAX - 1, KERNELS__READ_NOFOLLOW, &text, &len, &st) == 0 &&
	    trusted_writer(cfg, &st))
		doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	free(text);
	if (!doc)
		return NULL;
	if (json_integer_value(json_object_get(doc, "version")) == 1 &&
	    (!key || ((recorded = json_string_value(json_object_get(doc, key))) && !strcmp(recorded, value))))
		return doc;
	json_decref(doc);
	return NULL;
}

int kernels__receipt_matches(const kernels__config *cfg, const char *root, const char *dir, const struct stat *meta,
			     const char *const *files, const struct stat *sts, size_t n)
{
	char *path = receipt_path(root, dir, "");
	json_t *doc = load(cfg, path, NULL, NULL), *recorded;
	size_t i;
	int ok = 0;

	if (doc && same_identity(json_object_get(doc, "metadata"), meta) &&
	    json_object_size(recorded = json_object_get(doc, "files")) == n) {
		for (ok = 1, i = 0; ok && i < n; i++)
			ok = same_identity(json_object_get(recorded, files[i]), &sts[i]);
	}
	json_decref(doc);
	free(path);
	return ok;
}

void kernels__receipt_write(const kernels__config *cfg, const char *root, const char *dir, const struct stat *meta,
			    const char *const *files, const struct stat *sts, size_t n, kernels__write_later **later)
{
	char *path = receipt_path(root, dir, "");
	json_t *doc = json_pack("{s:i, s:o, s:o}", "version", 1, "metadata", identity(meta), "files", json_object());
	size_t i;
	int ok = path && doc;

	for (i = 0; ok && i < n; i++)
		ok = json_object_set_new(json_object_get(doc, "files"), files[i], identity(&sts[i])) == 0;
	write_doc(cfg, root, path, doc, ok, later);
	json_decref(doc);
	free(path);
}

/* Flushed before its rename: a receipt vouches for files that are then not
 * hashed again, so it must not outlive a crash as a name whose bytes never
 * reached the disk. Its folder is not flushed after: a rename lost in a
 * crash only means the next load hashes again (one journal commit less on
 * every first load). With `later`, the flush and the rename go on beside
 * what the caller does next (the loader maps the module meanwhile) until it
 * joins them: a receipt not in place yet only costs a reader (another
 * thread, another process) the hashing it would have saved. */
static void write_doc(const kernels__config *cfg, const char *root, const char *path, json_t *doc, int ok,
		      kernels__write_later **later)
{
	char *text = ok ? json_dumps(doc, JSON_COMPACT) : NULL;

	if (text && kernels__cache_write_later(later, root, path, text, strlen(text), KERNELS__WRITE_FLUSHED,
					       "a verification receipt") < 0)
		kernels__log(cfg, KERNELS_LOG_DEBUG, "cannot write the verification receipt %s: %s", path,
			     kernels_error_last());
	kernels_error_clear();
	free(text);
}

int kernels__receipt_copy_matches(const kernels__config *cfg, const char *path, const char *source,
				  const struct stat *copy)
{
	json_t *doc = load(cfg, path, "source", source);
	int ok = doc && same_identity(json_object_get(doc, "copy"), copy);

	json_decref(doc);
	return ok;
}

int kernels__receipt_copy_put(int dirfd, const char *name, const char *shown, const char *source,
			      const struct stat *copy)
{
	json_t *doc = json_pack("{s:i, s:s, s:o}", "version", 1, "source", source, "copy", identity(copy));
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	int rc = text ? kernels__write_atomic_at(dirfd, name, shown, text, strlen(text), -1, KERNELS__WRITE_FLUSHED)
		      : kernels__error_oom();

	free(text);
	json_decref(doc);
	return rc;
}

static char *blob_receipt_path(const char *root, const char *sha256)
{
	return kernels__sprintf("%s/.libkernels/blobs/%s.json", root, sha256);
}

void kernels__receipt_blob_write(const kernels__config *cfg, const char *root, const char *sha256,
				 const struct stat *blob, kernels__write_later **later)
{
	char *path = blob_receipt_path(root, sha256);
	json_t *doc = json_pack("{s:i, s:s, s:o}", "version", 1, "sha256", sha256, "blob", identity(blob));

	write_doc(cfg, root, path, doc, path && doc, later);
	json_decref(doc);
	free(path);
}

int kernels__receipt_blob_matches(const kernels__config *cfg, const char *root, const char *sha256,
				  const struct stat *blob)
{
	char *path = blob_receipt_path(root, sha256);
	json_t *doc = load(cfg, path, "sha256", sha256);
	int ok = doc && same_identity(json_object_get(doc, "blob"), blob);

	json_decref(doc);
	free(path);
	kernels_error_clear();
	return ok;
}

int kernels__receipt_signed(const kernels__config *cfg, const char *dir, const char *fingerprint,
			    const struct stat *meta, const struct stat *bundle)
{
	char *root = root_of(dir), *path = root ? receipt_path(root, dir, ".signature") : NULL;
	json_t *doc = load(cfg, path, "fingerprint", fingerprint);
	int ok = doc && same_identity(json_object_get(doc, "metadata"), meta) &&
		 same_identity(json_object_get(doc, "bundle"), bundle);

	json_decref(doc);
	free(path);
	free(root);
	return ok;
}

void kernels__receipt_sign(const kernels__config *cfg, const char *dir, const char *fingerprint,
			   const struct stat *meta, const struct stat *bundle)
{
	char *root = root_of(dir), *path = root ? receipt_path(root, dir, ".signature") : NULL;
	json_t *doc = json_pack("{s:i, s:s, s:o, s:o}", "version", 1, "fingerprint", fingerprint, "metadata",
				identity(meta), "bundle", identity(bundle));

	write_doc(cfg, root, path, doc, path && doc, NULL);
	json_decref(doc);
	free(path);
	free(root);
}
