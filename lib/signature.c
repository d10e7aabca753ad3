/* Signatures of kernel variants: the trusted root (built in, or a file),
 * and the checks the loader and kernels_signature_verify_variant make, with
 * the options config.c resolved (config.h: kernels__sigconf). The verifier
 * itself is lib/sigstore/. */
#include "signature.h"
#include "receipt.h"
#include "config.h"
#include "error.h"
#include "fork.h"
#include "util.h"
#include "sigstore/sigstore.h"

#include "kernels/kernel.h"
#include "kernels/signature.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BUNDLE_FILE "metadata.json.sigstore"
#define METADATA_MAX (1 << 20)  /* as lib/verify.c */
#define BUNDLE_MAX (1 << 20)    /* real ones are a few kilobytes */
#define ROOT_FILE_MAX (16 << 20)

/* ---- files ------------------------------------------------------------------ */

/* Reads `path` whole through one descriptor, refusing more than `max`
 * bytes before reading them. KERNELS_ENOTFOUND when it does not exist. */
static int read_capped(const char *path, size_t max, const char *what, char **out, size_t *size, struct stat *st_out)
{
	struct stat st;

	if (kernels__read_file(path, max, 0, out, size, &st) == 0) {
		if (st_out)
			*st_out = st;
		return 0;
	}
	switch (errno) {
	case ENOENT:
		return KERNELS_ENOTFOUND;
	case ENOMEM:
		return kernels__error_oom();
	case EISDIR:
	case EINVAL:
		return kernels__error(KERNELS_ESIGNATURE, "%s is not a regular file", path);
	case EFBIG:
		return kernels__error(KERNELS_ESIGNATURE, "%s is %lld bytes, more than the %zu %s may have", path,
				      (long long)st.st_size, max, what);
	case ESTALE:
		return kernels__error(KERNELS_EIO, "%s: its size changed while it was read", path);
	default:
		return kernels__error(KERNELS_EIO, "%s: %s", path, strerror(errno));
	}
}

/* ---- the trusted root, parsed once per content ------------------------------ */

/* A parsed root shared by the verifications that use it: keyed by the
 * SHA-256 of its bytes (two names of one content share a parse, and
 * nothing is trusted by name), held until a key or CA it left out starts.
 * Entries are immutable once listed; a verification holds a reference, so
 * one dropped from the list meanwhile lives until it is done. */
typedef struct root_entry {
	unsigned char sha[32];
	ks_trustroot t;
	int refs; /* the cache's own, while listed, and one per verification using it */
	int permanent; /* the built-in root: never freed, never counted */
	struct root_entry *next;
} root_entry;

/* A root file as it was when last read: while stat() still shows this
 * identity, the file holds the bytes hashed then and is not read again.
 * Only a settled file is remembered (see settled()). */
typedef struct root_file {
	char *path;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
	unsigned char sha[32];
	struct root_file *next;
} root_file;

#define ROOTS_MAX 4 /* a few files (the built-in root is kept apart) */
#define FILES_MAX 4
/* How far a file's timestamps must lie behind the clock when it is read
 * for its identity to vouch for its bytes: a write in the same tick of the
 * file system's clock (FAT counts 2 s) could otherwise keep every field
 * of the identity, as git's racy-clean rule has it. */
#define SETTLE_NS (2 * 1000000000LL)

static pthread_mutex_t roots_mu = PTHREAD_MUTEX_INITIALIZER;
static root_entry *roots; /* most recently used first; under roots_mu */
static root_file *root_files; /* most recently used first; under roots_mu */
static size_t root_parses, root_reads; /* under roots_mu; what the test build reads */
static long long settle_ns = SETTLE_NS; /* under roots_mu; the test build may lower it */
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;
static root_entry *builtin; /* set once by builtin_parse, never freed */

void kernels__signature_fork(kernels__fork_phase phase)
{
	kernels__fork_mutex(&roots_mu, phase);
}

#ifdef KERNELS_TESTING
static size_t counter(const size_t *n)
{
	size_t v;

	pthread_mutex_lock(&roots_mu);
	v = *n;
	pthread_mutex_unlock(&roots_mu);
	return v;
}

size_t kernels__signature_root_parses(void)
{
	return counter(&root_parses);
}

size_t kernels__signature_root_reads(void)
{
	return counter(&root_reads);
}

void kernels__signature_root_settle_ns(long long ns)
{
	pthread_mutex_lock(&roots_mu);
	settle_ns = ns < 0 ? SETTLE_NS : ns;
	pthread_mutex_unlock(&roots_mu);
}
#endif

/* Drops one reference; under roots_mu. */
static void root_unref(root_entry *e)
{
	if (--e->refs == 0) {
		ks_trustroot_free(&e->t);
		free(e);
	}
}

static void root_release(root_entry *e)
{
	if (!e || e->permanent)
		return;
	pthread_mutex_lock(&roots_mu);
	root_unref(e);
	pthread_mutex_unlock(&roots_mu);
}

/* The listed entry for `sha` still good at `now`, with a reference for the
 * caller, moved to the front; a stale one is unlisted. NULL when none;
 * under roots_mu. */
static root_entry *roots_take(const unsigned char sha[32], int64_t now)
{
	root_entry **p, *e;

	for (p = &roots; (e = *p); p = &e->next) {
		if (memcmp(e->sha, sha, 32))
			continue;
		*p = e->next;
		if (now >= e->t.next_start) {
			root_unref(e);
			return NULL;
		}
		e->next = roots;
		roots = e;
		e->refs++;
		return e;
	}
	return NULL;
}

/* Lists `e` (refs 1, the caller's), unless another thread listed the same
 * root meanwhile: then that one, and `e` is freed. Trims to ROOTS_MAX. */
static root_entry *roots_put(root_entry *e, int64_t now)
{
	root_entry *have, **p;
	int n = 0;

	pthread_mutex_lock(&roots_mu);
	root_parses++;
	if ((have = roots_take(e->sha, now))) {
		root_unref(e);
		e = have;
	} else {
		e->refs++;
		e->next = roots;
		roots = e;
	}
	for (p = &roots; *p; n++) {
		root_entry *old = *p;
		if (n < ROOTS_MAX) {
			p = &old->next;
			continue;
		}
		*p = old->next;
		root_unref(old);
	}
	pthread_mutex_unlock(&roots_mu);
	return e;
}

/* A new entry for the root in `data`, parsed (outside any lock: a parse
 * takes milliseconds), with one reference. */
static int root_new(const unsigned char sha[32], const void *data, size_t size, const char *what, int64_t now,
		    root_entry **out)
{
	root_entry *e = calloc(1, sizeof(*e));
	int rc;

	*out = NULL;
	if (!e)
		return kernels__error_oom();
	if ((rc = ks_trustroot_parse(&e->t, data, size, what, now)) < 0) {
		free(e);
		return rc;
	}
	memcpy(e->sha, sha, 32);
	e->refs = 1;
	*out = e;
	return 0;
}

/* The parsed root of `data` (whose SHA-256 is `sha`): the shared one, or
 * parsed now and shared from then on. */
static int root_parsed(const unsigned char sha[32], const void *data, size_t size, const char *what, int64_t now,
		       root_entry **out)
{
	root_entry *e;
	int rc;

	pthread_mutex_lock(&roots_mu);
	*out = roots_take(sha, now);
	pthread_mutex_unlock(&roots_mu);
	if (*out)
		return 0;
	if ((rc = root_new(sha, data, size, what, now, &e)) < 0)
		return rc;
	*out = roots_put(e, now);
	return 0;
}

static int sha256(const void *data, size_t size, const char *what, unsigned char sha[32])
{
	if (!EVP_Digest(data, size, sha, NULL, EVP_sha256(), NULL))
		return kernels__error(KERNELS_ESIGNATURE, "trusted root %s: SHA-256 failed (OpenSSL)", what);
	return 0;
}

/* ---- the built-in root: parsed once per process ----------------------------- */

static void builtin_parse(void)
{
	int64_t now = (int64_t)time(NULL) * 1000000;
	unsigned char sha[32];
	root_entry *e;

	if (sha256(ks_public_good_root, ks_public_good_root_size, "(built-in public-good)", sha) < 0 ||
	    root_new(sha, ks_public_good_root, ks_public_good_root_size, "(built-in public-good)", now, &e) < 0)
		return; /* every call then parses it as any other root, and says what fails */
	e->permanent = 1;
	pthread_mutex_lock(&roots_mu);
	root_parses++;
	pthread_mutex_unlock(&roots_mu);
	builtin = e;
}

/* The built-in root: its parse of the first call, unless a key it left out
 * has started since (then parsed for now, as a file would be). */
static int builtin_root(int64_t now, root_entry **out)
{
	unsigned char sha[32];
	int rc;

	pthread_once(&builtin_once, builtin_parse);
	if (builtin && now < builtin->t.next_start) {
		*out = builtin;
		return 0;
	}
	if ((rc = sha256(ks_public_good_root, ks_public_good_root_size, "(built-in public-good)", sha)) < 0)
		return rc;
	return root_parsed(sha, ks_public_good_root, ks_public_good_root_size, "(built-in public-good)", now, out);
}

/* ---- root files: read again only when their identity changes ---------------- */

static int same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

static int same_identity(const root_file *f, const struct stat *st)
{
	return f->dev == st->st_dev && f->ino == st->st_ino && f->size == st->st_size && same_time(&f->mtime, &st->st_mtim) &&
	       same_time(&f->ctime, &st->st_ctim);
}

static long long ns_of(const struct timespec *t)
{
	return (long long)t->tv_sec * 1000000000LL + t->tv_nsec;
}

/* Whether `st` (taken when the read began at `read_ns`) vouches for the
 * bytes read: its last change lies far enough behind the clock that any
 * later write shows another ctime. Under roots_mu. */
static int settled(const struct stat *st, long long read_ns)
{
	long long changed = ns_of(&st->st_ctim) > ns_of(&st->st_mtim) ? ns_of(&st->st_ctim) : ns_of(&st->st_mtim);

	return changed + settle_ns < read_ns;
}

/* The SHA-256 of the root file at `path` as last read, while it keeps that
 * identity; under roots_mu. */
static const root_file *file_known(const char *path, const struct stat *st)
{
	root_file *f;

	for (f = root_files; f; f = f->next)
		if (!strcmp(f->path, path))
			return same_identity(f, st) ? f : NULL;
	return NULL;
}

static void file_free(root_file *f)
{
	if (f)
		free(f->path);
	free(f);
}

/* Keeps the FILES_MAX most recently used; under roots_mu. */
static void files_trim(void)
{
	root_file **p, *f;
	int n = 0;

	for (p = &root_files; *p; n++) {
		if (n < FILES_MAX) {
			p = &(*p)->next;
			continue;
		}
		f = *p;
		*p = f->next;
		file_free(f);
	}
}

/* Remembers what `path` held when read (identity `st`, read from
 * `read_ns`), or forgets it when the file was not settled. */
static void file_note(const char *path, const struct stat *st, long long read_ns, const unsigned char sha[32])
{
	root_file **p, *f = NULL;

	pthread_mutex_lock(&roots_mu);
	root_reads++;
	for (p = &root_files; *p; p = &(*p)->next)
		if (!strcmp((*p)->path, path)) {
			f = *p;
			*p = f->next;
			break;
		}
	if (settled(st, read_ns) && (f || ((f = calloc(1, sizeof(*f))) && (f->path = kernels__strdup(path))))) {
		f->dev = st->st_dev;
		f->ino = st->st_ino;
		f->size = st->st_size;
		f->mtime = st->st_mtim;
		f->ctime = st->st_ctim;
		memcpy(f->sha, sha, 32);
		f->next = root_files;
		root_files = f;
		f = NULL;
	}
	file_free(f);
	files_trim();
	pthread_mutex_unlock(&roots_mu);
}

/* The parse of the root file whose identity is `st`, when the file was read
 * before with that identity and its parse is still kept; else NULL. */
static root_entry *file_parsed(const char *path, const struct stat *st, int64_t now)
{
	const root_file *f;
	root_entry *e = NULL;

	pthread_mutex_lock(&roots_mu);
	if ((f = file_known(path, st)))
		e = roots_take(f->sha, now);
	pthread_mutex_unlock(&roots_mu);
	return e;
}

/* Reads the root file and parses it (or finds the parse of its bytes). A
 * root that does not parse is the caller's mistake, not the variant's:
 * KERNELS_EINVAL naming where the setting came from. */
static int file_read(const struct kernels__sigconf *c, int64_t now, root_entry **out)
{
	const char *path = c->root_path;
	struct timespec t0;
	struct stat st;
	unsigned char sha[32];
	char *data;
	size_t size;
	int rc;

	clock_gettime(CLOCK_REALTIME, &t0);
	rc = read_capped(path, ROOT_FILE_MAX, "a trusted root", &data, &size, &st);
	if (rc == KERNELS_ENOTFOUND)
		return kernels__error(KERNELS_EINVAL, "%s names %s, which does not exist", c->root_source, path);
	if (rc < 0)
		return rc;
	if ((rc = sha256(data, size, path, sha)) == 0)
		rc = root_parsed(sha, data, size, path, now, out);
	free(data);
	if (rc == 0) {
		file_note(path, &st, ns_of(&t0), sha);
	} else {
		char *why = kernels__strdup(kernels_error_last());
		rc = kernels__error(KERNELS_EINVAL, "%s (from %s); fix or remove it", why ? why : "unreadable",
				    c->root_source);
		free(why);
	}
	return rc;
}

static int trustroot_load(const struct kernels__sigconf *c, root_entry **out)
{
	int64_t now = (int64_t)time(NULL) * 1000000;
	struct stat st;

	*out = NULL;
	if (!c->root_path)
		return builtin_root(now, out);
	if (stat(c->root_path, &st) == 0 && (*out = file_parsed(c->root_path, &st, now)))
		return 0;
	return file_read(c, now, out);
}

/* Bundle and metadata bytes verified against the configured root. */
static int verify_bytes(const struct kernels__sigconf *c, const void *artifact, size_t size, const void *bundle,
			size_t bundle_size, const kernels_signature_policy *policies, size_t n, int *bundle_invalid)
{
	root_entry *root;
	ks_bundle b;
	int rc;

	if (bundle_invalid)
		*bundle_invalid = 0;
	if ((rc = ks_bundle_parse(&b, bundle, bundle_size)) < 0) {
		if (bundle_invalid)
			*bundle_invalid = 1;
		return rc;
	}
	if ((rc = trustroot_load(c, &root)) < 0) {
		ks_bundle_free(&b);
		return rc;
	}
	rc = ks_verify(&root->t, &b, artifact, size, policies ? policies : c->policies, policies ? n : c->npolicies);
	root_release(root);
	ks_bundle_free(&b);
	return rc;
}

/* 1 when the (already verified) metadata bytes carry a digest object. */
static int signed_digest(const char *meta, size_t size, int *parses)
{
	json_t *root = json_loadb(meta, size, JSON_REJECT_DUPLICATES, NULL);
	json_t *d = json_object_get(root, "digest");
	int yes = json_is_object(d) && json_is_object(json_object_get(d, "files"));

	*parses = root != NULL && json_is_object(root);
	json_decref(root);
	return yes;
}

/* ---- the loader's check ----------------------------------------------------- */

/* What a signature receipt is bound to: the trust root (its path, or the
 * built-in one) and every field of every policy, hashed. 0 and the hex in
 * fp[65]; fp[0] is '\0' when it cannot be computed (no receipt then). */
static int fingerprint(const struct kernels__sigconf *c, char fp[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	size_t i, k;
	int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);

#define FEED(str) (ok = ok && EVP_DigestUpdate(ctx, (str) ? (str) : "", (str) ? strlen(str) + 1 : 1))
	FEED(c->root_path ? c->root_path : "built-in public-good root");
	for (i = 0; i < c->npolicies; i++) {
		FEED("policy");
		FEED(c->policies[i].issuer);
		FEED(c->policies[i].identity);
		FEED(c->policies[i].repository);
		for (k = 0; k < c->policies[i].signer_uri_count; k++)
			FEED(c->policies[i].signer_uris[k]);
	}
#undef FEED
	ok = ok && EVP_DigestFinal_ex(ctx, md, &n) && n == 32;
	EVP_MD_CTX_free(ctx);
	fp[0] = '\0';
	if (ok)
		kernels__hex(md, n, fp);
	return ok ? 0 : -1;
}

/* The variant's bundle and the metadata.json it signs, each read within
 * its cap (*bundle_st, *meta_st their identities): 0, 1 when there is no
 * bundle and none is required, or the refusal. */
static int read_signed(const struct kernels__sigconf *c, const char *dir, const char *w, char **bundle,
		       size_t *bsize, struct stat *bundle_st, char **meta, size_t *msize, struct stat *meta_st)
{
	char *bpath = kernels__sprintf("%s/%s", dir, BUNDLE_FILE), *mpath = kernels__sprintf("%s/metadata.json", dir);
	int rc;

	if (!bpath || !mpath) {
		rc = KERNELS_ENOMEM;
		goto out;
	}
	rc = read_capped(bpath, BUNDLE_MAX, "a signature bundle", bundle, bsize, bundle_st);
	if (rc == KERNELS_ENOTFOUND) {
		rc = c->mode != KERNELS_SIGNATURE_REQUIRE ? 1 :
		     kernels__error(KERNELS_ESIGNATURE, "%s has no signature (%s) and signatures are required "
				    "(kernels_options.signature or KERNELS_SIGNATURE=require); it was not loaded. Use "
				    "a signed build of the kernel, or stop requiring signatures for it", w,
				    BUNDLE_FILE);
		goto out;
	}
	if (rc == 0 && (rc = read_capped(mpath, METADATA_MAX, "a metadata.json", meta, msize, meta_st)) ==
			       KERNELS_ENOTFOUND) {
		rc = kernels__error(KERNELS_ESIGNATURE, "%s has a signature but no metadata.json for it to sign", w);
		goto out;
	}
	if (rc < 0)
		rc = kernels__error_prefix("checking the signature of %s", w);
out:
	free(bpath);
	free(mpath);
	return rc;
}

/* The signature checked over metadata.json's bytes before any parser sees
 * them, then the digest in it that extends the signature to the files. */
static int verify_signed(const struct kernels__sigconf *c, const char *w, const char *meta, size_t msize,
			 const char *bundle, size_t bsize)
{
	int rc, parses, bundle_invalid;

	if ((rc = verify_bytes(c, meta, msize, bundle, bsize, NULL, 0, &bundle_invalid)) < 0) {
		char *why = rc == KERNELS_ESIGNATURE ? kernels__strdup(kernels_error_last()) : NULL;
		if (why)
			rc = kernels__error(KERNELS_ESIGNATURE, "%s: its signature (%s) is %s: %s. Nothing of it was "
					    "loaded; it is not what its signer published (or the bundle is broken): "
					    "fetch it again, and if this stays, do not use it", w, BUNDLE_FILE,
					    bundle_invalid ? "unreadable" : "not valid", why);
		free(why);
		return rc;
	}
	if (!signed_digest(meta, msize, &parses))
		return kernels__error(KERNELS_ESIGNATURE, "%s: metadata.json is signed but %s, so the signature does "
				      "not cover the variant's files; it was not loaded", w,
				      parses ? "has no digest" : "is not a JSON object");
	return 0;
}

int kernels__signature_check(const kernels__config *cfg, const char *dir, const char *what, struct stat *signed_meta)
{
	const struct kernels__sigconf *c = cfg->sig;
	struct stat bundle_st;
	char fp[65] = "", *bundle = NULL, *meta = NULL;
	size_t bsize = 0, msize = 0;
	const char *w = what ? what : dir;
	int rc;

	memset(signed_meta, 0, sizeof(*signed_meta));
	if (!c || c->mode == KERNELS_SIGNATURE_OFF)
		return 0;
	if ((rc = read_signed(c, dir, w, &bundle, &bsize, &bundle_st, &meta, &msize, signed_meta)) != 0) {
		rc = rc > 0 ? 0 : rc;
	} else if (fingerprint(c, fp) == 0 && kernels__receipt_signed(cfg, dir, fp, signed_meta, &bundle_st)) {
		/* Verified before under this root and these policies, both files unchanged since. */
		kernels__log(cfg, KERNELS_LOG_DEBUG, "%s: signature verified before, unchanged since (receipt)", w);
	} else if ((rc = verify_signed(c, w, meta, msize, bundle, bsize)) == 0) {
		kernels__log(cfg, KERNELS_LOG_DEBUG, "%s: signature verified (metadata.json signed, digest next)", w);
		if (*fp)
			kernels__receipt_sign(cfg, dir, fp, signed_meta, &bundle_st);
	}
	free(bundle);
	free(meta);
	return rc;
}

/* ---- public API ------------------------------------------------------------- */

int kernels_signature_verify_bundle(const void *artifact, size_t artifact_size, const void *bundle,
				    size_t bundle_size, const kernels_signature_policy *policies, size_t count,
				    const kernels_options *opts)
{
	kernels__config cfg;
	kernels_signature_policy *given = NULL;
	int rc;

	if ((!artifact && artifact_size) || !bundle)
		return kernels__error(KERNELS_EINVAL,
				      "kernels_signature_verify_bundle: artifact and bundle must be given");
	if (policies && !count)
		return kernels__error(KERNELS_EINVAL, "kernels_signature_verify_bundle: policies given but count is 0");
	if ((rc = kernels__signature_policies_read(&given, policies, count)) < 0)
		return rc;
	if ((rc = kernels__config_load(&cfg, opts)) == 0) {
		rc = verify_bytes(cfg.sig, artifact ? artifact : "", artifact_size, bundle, bundle_size, given,
				  given ? count : 0, NULL);
		kernels__config_free(&cfg);
	}
	free(given);
	return rc;
}

static int set_status(kernels_signature_status *status, kernels_signature_status s, int rc)
{
	if (status)
		*status = s;
	return rc;
}

/* For kernels_signature_verify_variant: the bundle of `dir` (parsed once,
 * to tell an unreadable one from an invalid signature) and its
 * metadata.json: 0, or the refusal with *st saying which file failed how. */
static int read_variant_signed(const char *dir, char **bundle, size_t *bsize, char **meta, size_t *msize,
			       kernels_signature_status *st)
{
	char *bpath = kernels__sprintf("%s/%s", dir, BUNDLE_FILE), *mpath = kernels__sprintf("%s/metadata.json", dir);
	ks_bundle b;
	int rc;

	if (!bpath || !mpath) {
		rc = KERNELS_ENOMEM;
		goto out;
	}
	rc = read_capped(bpath, BUNDLE_MAX, "a signature bundle", bundle, bsize, NULL);
	if (rc == KERNELS_ENOTFOUND) {
		*st = KERNELS_SIGNATURE_BUNDLE_MISSING;
		rc = kernels__error(KERNELS_ESIGNATURE, "%s: signature not found (no %s)", dir, BUNDLE_FILE);
		goto out;
	}
	if (rc < 0 || (rc = ks_bundle_parse(&b, *bundle, *bsize)) < 0) {
		*st = KERNELS_SIGNATURE_BUNDLE_INVALID;
		goto out;
	}
	ks_bundle_free(&b);
	rc = read_capped(mpath, METADATA_MAX, "a metadata.json", meta, msize, NULL);
	if (rc == KERNELS_ENOTFOUND) {
		*st = KERNELS_SIGNATURE_METADATA_MISSING;
		rc = kernels__error(KERNELS_ESIGNATURE, "%s: no metadata.json", dir);
	} else if (rc < 0) {
		*st = KERNELS_SIGNATURE_METADATA_INVALID;
	}
out:
	free(bpath);
	free(mpath);
	return rc;
}

int kernels_signature_verify_variant(kernels_signature_status *status, const char *variant_dir, const kernels_options *opts)
{
	kernels__config cfg;
	char *bundle = NULL, *meta = NULL;
	size_t bsize = 0, msize = 0;
	int rc, invalid, parses;
	kernels_signature_status st = KERNELS_SIGNATURE_FAILED;

	if (!variant_dir)
		return kernels__error(KERNELS_EINVAL, "kernels_signature_verify_variant: variant_dir is NULL");
	if ((rc = kernels__config_load(&cfg, opts)) < 0)
		return rc;
	if ((rc = read_variant_signed(variant_dir, &bundle, &bsize, &meta, &msize, &st)) < 0)
		goto out;
	if ((rc = verify_bytes(cfg.sig, meta, msize, bundle, bsize, NULL, 0, &invalid)) < 0) {
		st = invalid ? KERNELS_SIGNATURE_BUNDLE_INVALID : KERNELS_SIGNATURE_FAILED;
		goto out;
	}
	if (!signed_digest(meta, msize, &parses)) {
		st = parses ? KERNELS_SIGNATURE_DIGEST_MISSING : KERNELS_SIGNATURE_METADATA_INVALID;
		rc = kernels__error(KERNELS_ESIGNATURE, "%s: metadata.json is signed but %s", variant_dir,
				    parses ? "has no digest" : "is not a JSON object");
		goto out;
	}
	rc = kernels_verify_variant(NULL, variant_dir, opts);
	if (rc == KERNELS_EINTEGRITY)
		st = KERNELS_SIGNATURE_DIGEST_MISMATCH;
	else
		st = rc < 0 ? KERNELS_SIGNATURE_METADATA_INVALID : KERNELS_SIGNATURE_VALID;
out:
	free(bundle);
	free(meta);
	kernels__config_free(&cfg);
	return set_status(status, st, rc);
}
