/* Internal: bundles (include/kernels/bundle.h). bundle.c reads them: the
 * manifest (its model, parser and writer) and the archive, entry by entry,
 * checked against the manifest; bundle_write.c makes one from a project and
 * the cache; bundle_import.c stages, verifies and publishes one into the
 * cache. */
#ifndef KERNELS_LIB_BUNDLE_H
#define KERNELS_LIB_BUNDLE_H

#include <jansson.h>
#include <stddef.h>

#include "kernels/bundle.h"
#include "repo.h"

struct archive;

#define KERNELS__BUNDLE_FORMAT "libkernels-bundle"
#define KERNELS__BUNDLE_MANIFEST "manifest.json"
#define KERNELS__BUNDLE_LOCK "kernels.lock"
/* The manifest is read whole: a cap keeps a hostile one from taking memory. */
#define KERNELS__BUNDLE_MANIFEST_MAX (64u << 20)
#define KERNELS__BUNDLE_FILES_MAX 1000000u
#define KERNELS__BUNDLE_FILE_SIZE_MAX (64ull << 30)

/* One archive entry the manifest expects: a variant's file or the lock. */
typedef struct {
	kernels_bundle_file f;   /* the public view (strings point into the manifest's JSON) */
	char *entry;             /* its archive path */
	size_t variant;          /* index into variants; (size_t)-1 for the lock */
} kernels__bundle_entry;

/* One variant: files[first .. first + n) of the bundle. */
typedef struct {
	const char *repo_id, *commit, *name;
	kernels__repo_type type;
	size_t first, n;
} kernels__bundle_variant;

struct kernels_bundle {
	json_t *root;                     /* owns every string below */
	kernels__bundle_entry *files;     /* variant files, in manifest order */
	size_t nfiles, capfiles;
	kernels__bundle_entry lock;       /* kernels.lock */
	kernels__bundle_variant *variants;
	size_t nvariants, capvariants;
	kernels_bundle_ref *refs;
	size_t nrefs, caprefs;
	kernels__bundle_entry **index;    /* every entry (lock included), sorted by archive path */
	size_t nindex;
	unsigned long long total;         /* bytes of every entry */
	unsigned long long manifest_size; /* bytes of manifest.json in the archive */
};

/* The archive path of a variant file: {cache name}/{commit}/build/{variant}/{path} (malloc'ed). */
char *kernels__bundle_entry_name(kernels__repo_type type, const char *repo_id, const char *commit,
				 const char *variant, const char *path);

/* Parses and checks a manifest (`len` bytes, `name` in messages) into a new
 * bundle. KERNELS_EPARSE (not JSON, a key missing or of the wrong type,
 * duplicates), KERNELS_EUNSAFE (a path with "..", absolute, ...),
 * KERNELS_ENOMEM. */
int kernels__bundle_parse(const char *buf, size_t len, const char *name, kernels_bundle **out);

/* The entry named `path`, or NULL when the manifest lists none. */
kernels__bundle_entry *kernels__bundle_find(const kernels_bundle *b, const char *path);

/* A bundle being read: `raw` undoes the compression (zstd, gzip, xz or
 * none; no external programs), `tar` reads the tar stream from it through
 * a counter, so that no more than `limit` uncompressed bytes are ever read
 * whatever the headers say (a bomb hidden in headers libarchive skips on
 * its own is stopped too). */
typedef struct {
	struct archive *raw, *tar;
	const char *name;               /* the bundle in messages */
	unsigned long long got, limit;  /* uncompressed bytes read, and allowed */
	int over;                       /* the limit was hit */
} kernels__bundle_reader;

/* Opens the file `path`, or with path NULL the `len` bytes at `mem`
 * (`name` in messages). KERNELS_ENOTFOUND, KERNELS_EPARSE (not an archive
 * we read), KERNELS_EIO, KERNELS_ENOMEM. Close with
 * kernels__bundle_reader_close, also after a failure. */
int kernels__bundle_reader_open(kernels__bundle_reader *r, const char *path, const void *mem, size_t len,
				const char *name);
void kernels__bundle_reader_close(kernels__bundle_reader *r);

/* Reads the first entry, which must be manifest.json, and parses it; the
 * reader's limit becomes what the manifest accounts for. */
int kernels__bundle_read_manifest(kernels__bundle_reader *r, kernels_bundle **out);

/* What the import does with each entry once its header is checked: `begin`
 * (0 to go on; it may keep state in payload), `data` for each block of
 * bytes, `end` once all bytes are read and match size, sha256 and blob
 * name; `abort` after a failure that began. Any may be NULL. */
typedef struct {
	int (*begin)(void *payload, const kernels__bundle_entry *e);
	int (*data)(void *payload, const void *buf, size_t n);
	int (*end)(void *payload, const kernels__bundle_entry *e);
	void (*abort)(void *payload, const kernels__bundle_entry *e);
	void *payload;
} kernels__bundle_sink;

/* Reads every entry after the manifest to the end of the archive, refusing
 * what the manifest does not account for (KERNELS_EUNSAFE: a path with ".."
 * or absolute, not a regular file, listed twice or not at all, larger than
 * listed, more archive than the manifest's sizes explain), a file whose
 * bytes differ (KERNELS_EINTEGRITY), an archive that ends early or lacks a
 * listed entry (KERNELS_EPARSE). Nothing is kept in memory but one block.
 * *bytes (may be NULL): the file bytes read. */
int kernels__bundle_scan(kernels__bundle_reader *r, kernels_bundle *b, const kernels__bundle_sink *sink,
			 unsigned long long *bytes);

#endif
