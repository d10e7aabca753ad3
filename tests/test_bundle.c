/* Bundles (lib/bundle*.c) against the local Hub: a locked project bundled
 * from one cache, imported into a fresh one with no request, loaded offline
 * by version, tag, branch and lock; re-import a no-op; a partial cache
 * completed; hostile archives refused whole with nothing published; a kill
 * in the middle of an import leaves nothing visible and a rerun completes.
 * The variants are a few KiB: the big one is bench/bundle's. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <jansson.h>
#include <openssl/sha.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "kernels.h"
#include "bundle.h"
#include "swap_walk.h"
#include "symlink_fail.h"
#include "test_world.h"
#include "testutil.h"
#include "../tests/data/variants/fixture.h"

static const char *const VARIANTS[] = { "torch211-cxx11-cpu-x86_64-linux", "torch29-cxx11-cpu-x86_64-linux" };

/* commit[0]: acme/bundled v1.0.0 */
static test_world W;
/* Under W.tmp, owned here: the cache the bundle is written from, the
 * locked app, the bundle. */
static struct {
	char *src_cache, *bundle;
	test_app app;
} B;

/* 0 from a library call, else the failure with its message. */
#define assert_ok(call)                                                                                    \
	do {                                                                                               \
		int rc_ = (call);                                                                          \
		if (rc_ != 0)                                                                              \
			fail_msg("%s: %d: %s", #call, rc_, kernels_error_last());                          \
	} while (0)

static void options(kernels_options *o, kernels_system *s, const char *cache)
{
	memset(s, 0, sizeof(*s));
	test_hub_options(o, W.hub, cache, s);
	s->torch_version = 211;
	s->torch_cxx11_abi = 1;
	s->backend = "cpu";
	s->no_gpu = 1;
	o->system = s;
	o->trusted_orgs = "acme"; /* an air-gapped machine cannot ask the Hub about its publisher */
}

static char *path_in(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *path_in(const char *fmt, ...)
{
	char *rel, *p;
	va_list ap;

	va_start(ap, fmt);
	assert_true(vasprintf(&rel, fmt, ap) > 0);
	va_end(ap);
	assert_true(asprintf(&p, "%s/%s", W.tmp, rel) > 0);
	free(rel);
	return p;
}

static int setup(void **state)
{
	kernels_options o;
	kernels_system s;
	char *src;
	size_t i;
	(void)state;

	assert_int_equal(test_world_start(&W, "bundle"), 0);
	src = path_in("src");
	for (i = 0; i < 2; i++)
		assert_int_equal(fx_answer_variant(src, VARIANTS[i], "bundled", 100 + (int)i, "cpu", NULL, 1), 0);
	assert_int_equal(test_world_publish(&W, 0, "--repo acme/bundled --dir '%s' --branch main --branch v1 "
					    "--tag v1.0.0 --trusted", src), 0);
	assert_int_equal(test_app_make(&B.app, W.tmp, "app", "[project]\nname = \"app\"\n\n"
					 "[tool.kernels.dependencies]\n\"acme/bundled\" = 1\n"), 0);
	B.bundle = path_in("kernels.bundle");
	B.src_cache = path_in("src-cache");
	options(&o, &s, B.src_cache);
	assert_ok(kernels_project_lock(B.app.dir, &o));
	assert_ok(kernels_bundle_write(B.bundle, B.app.dir, NULL, &o));
	free(src);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	test_world_stop(&W);
	test_app_free(&B.app);
	free(B.bundle);
	free(B.src_cache);
	return 0;
}

static void assert_log_empty(void)
{
	char *log = test_hub_log(W.hub);
	assert_string_equal(log, "[]");
	free(log);
}

/* Nothing of the bundle visible in `cache`: no snapshot, ref or blob, and
 * no staging folder left behind. */
static void assert_nothing_published(const char *cache)
{
	assert_int_equal(test_system("test -z \"$(find '%s' -path '*/snapshots/*' -o -path '*/refs/*' -o -path "
				     "'*/blobs/*' -o -name 'import.tmp-*')\"", cache), 0);
}

static void test_ls_lists_variants_and_refs(void **state)
{
	kernels_bundle *b = NULL;
	size_t i, metadata = 0, have_v1 = 0, have_tag = 0;
	(void)state;

	assert_ok(kernels_bundle_open(&b, B.bundle));
	for (i = 0; i < kernels_bundle_file_count(b); i++) {
		const kernels_bundle_file *f = kernels_bundle_file_at(b, i);
		assert_string_equal(f->repo_id, "acme/bundled");
		assert_string_equal(f->commit, W.commit[0]);
		assert_int_equal(strlen(f->sha256), 64);
		metadata += !strcmp(f->path, "metadata.json");
	}
	assert_int_equal(metadata, 2); /* both variants */
	assert_null(kernels_bundle_file_at(b, i));
	for (i = 0; i < kernels_bundle_ref_count(b); i++) {
		const kernels_bundle_ref *r = kernels_bundle_ref_at(b, i);
		assert_string_equal(r->commit, W.commit[0]);
		have_v1 += !strcmp(r->name, "v1");
		have_tag += !strcmp(r->name, "v1.0.0");
	}
	assert_int_equal(have_v1, 1);
	assert_int_equal(have_tag, 1);
	kernels_bundle_free(b);
	assert_int_equal(kernels_bundle_open(&b, "/nonexistent/bundle"), KERNELS_ENOTFOUND);
	assert_int_equal(kernels_bundle_open(&b, B.app.lock), KERNELS_EPARSE);
}

static void test_variant_filter(void **state)
{
	kernels_options o;
	kernels_system s;
	kernels_bundle_options bo = { KERNELS_BUNDLE_OPTIONS_VERSION, NULL, 1 };
	kernels_bundle *b = NULL;
	const char *one[] = { VARIANTS[1] }, *none[] = { "torch11-cxx11-cpu-x86_64-linux" };
	char *out = path_in("one.bundle");
	size_t i;
	(void)state;

	options(&o, &s, B.src_cache);
	bo.variants = one;
	assert_ok(kernels_bundle_write(out, B.app.dir, &bo, &o));
	assert_ok(kernels_bundle_open(&b, out));
	assert_true(kernels_bundle_file_count(b) > 0);
	for (i = 0; i < kernels_bundle_file_count(b); i++)
		assert_string_equal(kernels_bundle_file_at(b, i)->variant, VARIANTS[1]);
	kernels_bundle_free(b);
	bo.variants = none;
	assert_int_equal(kernels_bundle_write(out, B.app.dir, &bo, &o), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), none[0]));
	bo.version = 99;
	assert_int_equal(kernels_bundle_write(out, B.app.dir, &bo, &o), KERNELS_EINVAL);
	free(out);
}

/* Offline loads from an imported cache: by major version, tag, branch and
 * lock, with not one request. */
static void load_offline_all_ways(const char *cache)
{
	static const char *const revs[] = { "1", "v1.0.0", "v1" };
	kernels_options o;
	kernels_system s;
	kernels_kernel *k = NULL;
	size_t i;

	options(&o, &s, cache);
	o.offline = 1;
	for (i = 0; i < 3; i++) {
		assert_ok(kernels_get(&k, "acme/bundled", revs[i], &o));
		assert_int_equal(test_kernel_answer(k), 100);
		assert_string_equal(kernels_kernel_commit(k), W.commit[0]);
		kernels_kernel_close(k);
	}
	assert_ok(kernels_load_locked(&k, "acme/bundled", B.app.lock, &o));
	assert_int_equal(test_kernel_answer(k), 100);
	kernels_kernel_close(k);
}

static void test_import_then_offline_loads(void **state)
{
	kernels_options o;
	kernels_system s;
	kernels_bundle_import_stats st = KERNELS_BUNDLE_IMPORT_STATS_INIT;
	char *cache = path_in("cache-import");
	(void)state;

	options(&o, &s, cache);
	o.offline = 1;
	test_hub_log_clear(W.hub);
	assert_ok(kernels_bundle_import(&st, B.bundle, &o));
	assert_int_equal(st.variants, 2);
	assert_int_equal(st.variants_added, 2);
	assert_true(st.blobs_added >= 3);
	assert_true(st.refs_written >= 2);
	load_offline_all_ways(cache);
	assert_log_empty();

	/* Again: nothing to add, nothing written. */
	assert_ok(kernels_bundle_import(&st, B.bundle, &o));
	assert_int_equal(st.variants_added, 0);
	assert_int_equal(st.blobs_added, 0);
	assert_int_equal(st.refs_written, 0);
	assert_int_equal(test_system("test -z \"$(find '%s' -name 'import.tmp-*')\"", cache), 0);
	assert_log_empty();
	test_rmtree(cache);
	free(cache);
}

static void test_partial_cache_gets_the_rest(void **state)
{
	kernels_options o;
	kernels_system s;
	kernels_bundle_import_stats st = KERNELS_BUNDLE_IMPORT_STATS_INIT;
	char *cache = path_in("cache-partial");
	(void)state;

	options(&o, &s, cache);
	o.offline = 1;
	assert_ok(kernels_bundle_import(&st, B.bundle, &o));
	/* one variant, its module's blob and the refs gone */
	assert_int_equal(test_system("cd '%s/kernels--acme--bundled' && rm -f \"$(readlink -f "
				     "snapshots/%s/build/%s/_bundled_100.abi3.so)\" && rm -rf snapshots/%s/build/%s refs",
				     cache, W.commit[0], VARIANTS[0], W.commit[0], VARIANTS[0]), 0);
	assert_ok(kernels_bundle_import(&st, B.bundle, &o));
	assert_int_equal(st.variants_added, 1);
	assert_int_equal(st.blobs_added, 1);
	assert_true(st.refs_written >= 2);
	load_offline_all_ways(cache);
	test_rmtree(cache);
	free(cache);
}

/* A failure while publishing (here the last variant's folder name taken
 * by a file) leaves the variants published before it, each whole, and
 * says so: the message does not read as if nothing had changed. */
static void test_failure_while_publishing_says_what_went_in(void **state)
{
	kernels_options o;
	kernels_system s;
	kernels_bundle_import_stats st = KERNELS_BUNDLE_IMPORT_STATS_INIT;
	kernels_bundle *b = NULL;
	char *cache = path_in("cache-part"), *last;
	(void)state;

	assert_ok(kernels_bundle_open(&b, B.bundle));
	assert_int_equal(b->nvariants, 2);
	last = strdup(b->variants[1].name);
	kernels_bundle_free(b);
	options(&o, &s, cache);
	o.offline = 1;
	assert_int_equal(test_system("mkdir -p '%s/kernels--acme--bundled/snapshots/%s/build' && "
				     "echo taken > '%s/kernels--acme--bundled/snapshots/%s/build/%s'", cache,
				     W.commit[0], cache, W.commit[0], last), 0);
	assert_int_equal(kernels_bundle_import(&st, B.bundle, &o), KERNELS_EIO);
	if (!strstr(kernels_error_last(), "imported in part (1 of the bundle's 2 variants"))
		fail_msg("the failure does not say what went in: %s", kernels_error_last());
	assert_int_equal(st.variants_added, 1);
	assert_int_equal(test_system("test -f '%s/kernels--acme--bundled/snapshots/%s/build/%s/metadata.json'", cache,
				     W.commit[0], strcmp(last, VARIANTS[0]) ? VARIANTS[0] : VARIANTS[1]), 0);
	free(last);
	test_rmtree(cache);
	free(cache);
}

/* A failure in the staging folder (here its links refused, as a full or
 * failing disk refuses them) names the folder where the cache has it, not
 * the /proc/self/fd path the import reaches it by: the user must be able
 * to find it. Nothing is published. */
static void test_staging_failure_names_the_cache(void **state)
{
	kernels_options o;
	kernels_system s;
	char *cache = path_in("cache-nolink"), *stage = NULL;
	int rc;
	(void)state;

	options(&o, &s, cache);
	o.offline = 1;
	symlink_fail_with(ENOSPC);
	rc = kernels_bundle_import(NULL, B.bundle, &o);
	symlink_fail_with(0);
	assert_int_equal(rc, KERNELS_EIO);
	assert_true(asprintf(&stage, "%s/kernels--acme--bundled/.libkernels/import.tmp-", cache) > 0);
	if (strstr(kernels_error_last(), "/proc/self/fd") || !strstr(kernels_error_last(), stage) ||
	    !strstr(kernels_error_last(), strerror(ENOSPC)))
		fail_msg("the error does not name the staging folder in the cache: %s", kernels_error_last());
	assert_nothing_published(cache);
	free(stage);
	test_rmtree(cache);
	free(cache);
}

/* A bundle made from a cache huggingface_hub 2.4 laid out (blobs/<etag>
 * links into the cache's shared store, test_share_blobs) holds the bytes
 * the links lead to, and imports and loads elsewhere. */
static void test_bundle_from_a_shared_blob_store(void **state)
{
	kernels_options o;
	kernels_system s;
	char *cache = path_in("cache-shared"), *dest = path_in("cache-shared-dest"), *out = path_in("shared.bundle");
	(void)state;

	assert_int_equal(test_system("rm -rf '%s' && cp -a '%s' '%s'", cache, B.src_cache, cache), 0);
	assert_int_equal(test_share_blobs(cache, "kernels--acme--bundled"), 0);
	options(&o, &s, cache);
	assert_ok(kernels_bundle_write(out, B.app.dir, NULL, &o));
	options(&o, &s, dest);
	o.offline = 1;
	assert_ok(kernels_bundle_import(NULL, out, &o));
	load_offline_all_ways(dest);
	test_rmtree(cache);
	test_rmtree(dest);
	free(cache);
	free(dest);
	free(out);
}

static int receipt_used;

static void count_receipts(kernels_log_level level, const char *msg, void *payload)
{
	(void)payload;
	if (level == KERNELS_LOG_DEBUG && strstr(msg, "unchanged since (receipt)"))
		receipt_used++;
}

/* An offline load by branch; 1 when a verification receipt spared the hashing. */
static int load_by_receipt(const char *cache)
{
	kernels_options o;
	kernels_system s;
	kernels_kernel *k = NULL;

	options(&o, &s, cache);
	o.offline = 1;
	o.log_cb = count_receipts;
	receipt_used = 0;
	assert_ok(kernels_get(&k, "acme/bundled", "v1", &o));
	kernels_kernel_close(k);
	return receipt_used > 0;
}

/* A cache that holds the bundle's blobs already, verified (a receipt
 * records their identities), and lost the variant folder: the import
 * stages the variant again and publishes it without touching the cached
 * blobs (a hard link would change their change time), so the receipt
 * still vouches for them and the next offline load hashes nothing. */
static void test_import_keeps_receipts(void **state)
{
	kernels_options o;
	kernels_system s;
	kernels_bundle_import_stats st = KERNELS_BUNDLE_IMPORT_STATS_INIT;
	char *cache = path_in("cache-receipts"), *module;
	struct stat before, after;
	(void)state;

	options(&o, &s, cache);
	o.offline = 1;
	assert_ok(kernels_bundle_import(NULL, B.bundle, &o));
	assert_int_equal(load_by_receipt(cache), 0); /* hashed, receipt written */
	assert_int_equal(load_by_receipt(cache), 1);
	assert_true(asprintf(&module, "%s/kernels--acme--bundled/snapshots/%s/build/%s/_bundled_100.abi3.so", cache,
			     W.commit[0], VARIANTS[0]) > 0);
	assert_int_equal(stat(module, &before), 0);
	assert_int_equal(test_system("rm -rf '%s/kernels--acme--bundled/snapshots/%s/build/%s'", cache, W.commit[0],
				     VARIANTS[0]), 0);
	assert_ok(kernels_bundle_import(&st, B.bundle, &o));
	assert_int_equal(st.variants_added, 1);
	assert_int_equal(st.blobs_added, 0);
	assert_int_equal(load_by_receipt(cache), 1);
	assert_int_equal(stat(module, &after), 0);
	assert_int_equal(after.st_ino, before.st_ino);
	assert_int_equal(after.st_nlink, before.st_nlink);
	assert_true(after.st_ctim.tv_sec == before.st_ctim.tv_sec && after.st_ctim.tv_nsec == before.st_ctim.tv_nsec);
	free(module);
	test_rmtree(cache);
	free(cache);
}

/* A cached blob whose bytes no longer match its name (same size: a
 * damaged disk, a stray write), in a cache that lost the variant folder
 * using it: the import replaces it with the bundle's verified copy, says
 * so, and the variant loads offline. */
static void test_import_repairs_a_damaged_blob(void **state)
{
	kernels_options o;
	kernels_system s;
	kernels_bundle_import_stats st = KERNELS_BUNDLE_IMPORT_STATS_INIT;
	char *cache = path_in("cache-damaged"), *module;
	kernels_kernel *k = NULL;
	(void)state;

	options(&o, &s, cache);
	o.offline = 1;
	assert_ok(kernels_bundle_import(NULL, B.bundle, &o));
	assert_true(asprintf(&module, "%s/kernels--acme--bundled/snapshots/%s/build/%s/_bundled_100.abi3.so", cache,
			     W.commit[0], VARIANTS[0]) > 0);
	assert_int_equal(test_system("printf X | dd of=\"$(readlink -f '%s')\" bs=1 seek=100 conv=notrunc "
				     "2>/dev/null && rm -rf '%s/kernels--acme--bundled/snapshots/%s/build/%s'", module,
				     cache, W.commit[0], VARIANTS[0]), 0);
	assert_ok(kernels_bundle_import(&st, B.bundle, &o));
	assert_int_equal(st.variants_added, 1);
	assert_int_equal(st.blobs_added, 1);
	assert_ok(kernels_get(&k, "acme/bundled", "v1", &o));
	assert_int_equal(test_kernel_answer(k), 100);
	kernels_kernel_close(k);
	free(module);
	test_rmtree(cache);
	free(cache);
}

/* ---- hostile archives ------------------------------------------------------------- */

typedef struct {
	char *name;
	char *data;
	size_t size;
} ent;

static ent E[64];
static size_t NE;

static void read_bundle(void)
{
	struct archive *a = archive_read_new();
	struct archive_entry *ae;

	archive_read_support_format_tar(a);
	archive_read_support_filter_all(a);
	assert_int_equal(archive_read_open_filename(a, B.bundle, 1 << 16), ARCHIVE_OK);
	for (NE = 0; archive_read_next_header(a, &ae) == ARCHIVE_OK; NE++) {
		assert_true(NE < 64);
		E[NE].name = strdup(archive_entry_pathname(ae));
		E[NE].size = (size_t)archive_entry_size(ae);
		E[NE].data = malloc(E[NE].size + 1);
		assert_int_equal(archive_read_data(a, E[NE].data, E[NE].size), (la_ssize_t)E[NE].size);
		E[NE].data[E[NE].size] = '\0';
	}
	archive_read_free(a);
}

static void free_entries(void)
{
	size_t i;

	for (i = 0; i < NE; i++) {
		free(E[i].name);
		free(E[i].data);
	}
	NE = 0;
}

/* The entry of the first variant's module. */
static size_t module_entry(void)
{
	size_t i;

	for (i = 0; i < NE; i++)
		if (strstr(E[i].name, ".abi3.so"))
			return i;
	fail();
	return 0;
}

static void put(struct archive *a, const char *name, int type, const char *data, size_t size, size_t header_size,
		const char *link)
{
	struct archive_entry *ae = archive_entry_new();

	archive_entry_set_pathname(ae, name);
	archive_entry_set_filetype(ae, (unsigned)type);
	archive_entry_set_perm(ae, 0644);
	archive_entry_set_size(ae, (la_int64_t)header_size);
	if (type == AE_IFLNK)
		archive_entry_set_symlink(ae, link);
	if (type == AE_IFCHR)
		archive_entry_set_rdev(ae, 0x0103);
	if (link && type == AE_IFREG)
		archive_entry_set_hardlink(ae, link);
	assert_int_equal(archive_write_header(a, ae), ARCHIVE_OK);
	if (size)
		assert_int_equal(archive_write_data(a, data, size), (la_ssize_t)size);
	archive_entry_free(ae);
}

enum kind { PLAIN, DOTDOT, ABSOLUTE, SYMLINK, HARDLINK, DEVICE, DUPLICATE, UNLISTED, BIGGER, BOMB, TAMPERED, DIGEST,
	    MISSING, NOT_FIRST, NKINDS };

/* The good bundle's manifest with the module's sha256 and blob name made
 * those of `data` (an attacker who rewrites the manifest to match). */
static char *manifest_for(const char *module, const char *data, size_t size)
{
	json_t *root = json_loadb(E[0].data, E[0].size, 0, NULL), *repo = json_array_get(json_object_get(root, "repos"), 0);
	json_t *variants = json_object_get(repo, "variants"), *v, *f;
	unsigned char d[32];
	char hex[65], *out;
	size_t i, j;

	SHA256((const unsigned char *)data, size, d);
	for (i = 0; i < 32; i++)
		sprintf(hex + 2 * i, "%02x", d[i]);
	json_array_foreach(variants, i, v)
		json_array_foreach(json_object_get(v, "files"), j, f)
			if (strstr(module, json_string_value(json_object_get(f, "path"))) &&
			    strstr(module, json_string_value(json_object_get(v, "name")))) {
				json_object_set_new(f, "sha256", json_string(hex));
				json_object_set_new(f, "etag", json_string(hex));
			}
	out = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	return out;
}

static void write_hostile(const char *out, enum kind kind)
{
	struct archive *a = archive_write_new();
	size_t i, m = module_entry();
	char *abs_path = path_in("absolute-escape"), *manifest = NULL, *evil = NULL;

	archive_write_set_format_pax_restricted(a);
	if (kind != PLAIN && kind != BOMB)
		archive_write_add_filter_zstd(a);
	archive_write_set_bytes_in_last_block(a, 1);
	assert_int_equal(archive_write_open_filename(a, out), ARCHIVE_OK);
	if (kind == NOT_FIRST)
		put(a, E[1].name, AE_IFREG, E[1].data, E[1].size, E[1].size, NULL);
	for (i = 0; i < NE; i++) {
		const ent *e = &E[i];
		if ((kind == NOT_FIRST && i == 1) || (kind == MISSING && i == m))
			continue;
		if (i == 0 && kind == DIGEST) {
			evil = malloc(E[m].size);
			memcpy(evil, E[m].data, E[m].size);
			evil[E[m].size - 1] ^= 1;
			manifest = manifest_for(E[m].name, evil, E[m].size);
			put(a, e->name, AE_IFREG, manifest, strlen(manifest), strlen(manifest), NULL);
		} else if (i == m && kind == SYMLINK) {
			put(a, e->name, AE_IFLNK, NULL, 0, 0, "/etc/passwd");
		} else if (i == m && kind == HARDLINK) {
			put(a, e->name, AE_IFREG, NULL, 0, 0, E[0].name);
		} else if (i == m && kind == DEVICE) {
			put(a, e->name, AE_IFCHR, NULL, 0, 0, NULL);
		} else if (i == m && kind == BIGGER) {
			char *more = calloc(1, e->size + 1);
			memcpy(more, e->data, e->size);
			put(a, e->name, AE_IFREG, more, e->size + 1, e->size + 1, NULL);
			free(more);
		} else if (i == m && (kind == TAMPERED || kind == DIGEST)) {
			char *bad = evil ? evil : malloc(e->size);
			if (!evil)
				memcpy(bad, e->data, e->size), bad[e->size - 1] ^= 1;
			put(a, e->name, AE_IFREG, bad, e->size, e->size, NULL);
			if (!evil)
				free(bad);
		} else {
			put(a, e->name, AE_IFREG, e->data, e->size, e->size, NULL);
		}
		if (i == m && kind == DUPLICATE)
			put(a, e->name, AE_IFREG, e->data, e->size, e->size, NULL);
	}
	if (kind == DOTDOT)
		put(a, "kernels--acme--bundled/../../dotdot-escape", AE_IFREG, "x", 1, 1, NULL);
	if (kind == ABSOLUTE)
		put(a, abs_path, AE_IFREG, "x", 1, 1, NULL);
	if (kind == UNLISTED) {
		char *extra;
		assert_true(asprintf(&extra, "kernels--acme--bundled/%s/build/%s/extra.so", W.commit[0], VARIANTS[0]) > 0);
		put(a, extra, AE_IFREG, "x", 1, 1, NULL);
		free(extra);
	}
	assert_int_equal(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	free(abs_path);
	free(manifest);
	free(evil);
}

/* A pax global header ('g') of `n` bytes of records, which tar readers
 * consume inside one header read: the way to hide a bomb from a check made
 * between entries. */
static void global_header(FILE *f, size_t n)
{
	char block[512], *body = malloc(n + 1);
	size_t k, len = n, sum = 0, i;

	memset(block, 0, sizeof(block));
	strcpy(block, "pax_global_header");
	strcpy(block + 100, "0000644");
	strcpy(block + 108, "0000000");
	strcpy(block + 116, "0000000");
	snprintf(block + 124, 12, "%011zo", n);
	strcpy(block + 136, "00000000000");
	memset(block + 148, ' ', 8);
	block[156] = 'g';
	memcpy(block + 257, "ustar", 6);
	memcpy(block + 263, "00", 2);
	for (i = 0; i < 512; i++)
		sum += (unsigned char)block[i];
	snprintf(block + 148, 8, "%06zo", sum);
	fwrite(block, 1, 512, f);
	/* one record "{len} comment=xxx...\n" of exactly n bytes */
	k = (size_t)snprintf(body, n + 1, "%zu comment=", len);
	memset(body + k, 'x', n - k - 1);
	body[n - 1] = '\n';
	fwrite(body, 1, n, f);
	memset(block, 0, sizeof(block));
	fwrite(block, 1, (512 - n % 512) % 512, f);
	free(body);
}

/* The plain bundle with 16 MiB of global headers after the manifest. */
static void write_bomb(const char *out)
{
	char *plain = path_in("bomb-plain.bundle"), *data;
	size_t len, head;
	FILE *f;
	int i;

	write_hostile(plain, BOMB);
	data = test_read_file(plain, &len);
	head = 512 + (E[0].size + 511) / 512 * 512; /* the manifest entry */
	f = fopen(out, "wb");
	assert_non_null(f);
	fwrite(data, 1, head, f);
	for (i = 0; i < 16; i++)
		global_header(f, (1 << 20) - 4096);
	fwrite(data + head, 1, len - head, f);
	fclose(f);
	free(data);
	free(plain);
}

static void test_hostile_archives_refused_whole(void **state)
{
	static const struct {
		int code;
		const char *says;
	} want[NKINDS] = {
		[DOTDOT] = { KERNELS_EUNSAFE, "'..'" },
		[ABSOLUTE] = { KERNELS_EUNSAFE, "absolute path" },
		[SYMLINK] = { KERNELS_EUNSAFE, "symbolic link" },
		[HARDLINK] = { KERNELS_EUNSAFE, "hard link" },
		[DEVICE] = { KERNELS_EUNSAFE, "device" },
		[DUPLICATE] = { KERNELS_EUNSAFE, "twice" },
		[UNLISTED] = { KERNELS_EUNSAFE, "not in the manifest" },
		[BIGGER] = { KERNELS_EUNSAFE, "the manifest lists" },
		[BOMB] = { KERNELS_EUNSAFE, "bomb" },
		[TAMPERED] = { KERNELS_EINTEGRITY, "does not match the manifest" },
		[DIGEST] = { KERNELS_EINTEGRITY, "metadata.json's digest" },
		[MISSING] = { KERNELS_EPARSE, "not in the archive" },
		[NOT_FIRST] = { KERNELS_EPARSE, "not manifest.json" },
	};
	kernels_options o;
	kernels_system s;
	char *cache = path_in("cache-hostile"), *out = path_in("hostile.bundle");
	char *outside = path_in("dotdot-escape"), *abs_path = path_in("absolute-escape");
	int kind;
	(void)state;

	read_bundle();
	options(&o, &s, cache);
	o.offline = 1;
	for (kind = DOTDOT; kind < NKINDS; kind++) {
		if (kind == BOMB)
			write_bomb(out);
		else
			write_hostile(out, (enum kind)kind);
		kernels_bundle_import(NULL, out, &o);
		if (kernels_error_last_code() != want[kind].code || !strstr(kernels_error_last(), want[kind].says))
			fail_msg("kind %d: '%s' not in: %s", kind, want[kind].says, kernels_error_last());
		assert_nothing_published(cache);
		assert_false(test_exists(outside));
		assert_false(test_exists(abs_path));
	}
	/* The good bundle still imports into the same cache afterwards. */
	assert_ok(kernels_bundle_import(NULL, B.bundle, &o));
	free_entries();
	test_rmtree(cache);
	free(cache);
	free(out);
	free(outside);
	free(abs_path);
}

static void test_signature_required_refuses_unsigned(void **state)
{
	kernels_options o;
	kernels_system s;
	char *cache = path_in("cache-signed");
	(void)state;

	options(&o, &s, cache);
	o.offline = 1;
	o.signature = KERNELS_SIGNATURE_REQUIRE;
	assert_int_equal(kernels_bundle_import(NULL, B.bundle, &o), KERNELS_ESIGNATURE);
	assert_non_null(strstr(kernels_error_last(), "nothing was imported"));
	assert_nothing_published(cache);
	test_rmtree(cache);
	free(cache);
}

/* A process killed mid-import (here: blocked reading a FIFO that has all
 * but the tail of the bundle) leaves nothing visible; the next import
 * completes and removes its staging folder. */
static void test_kill_mid_import(void **state)
{
	kernels_options o;
	kernels_system s;
	kernels_bundle_import_stats st = KERNELS_BUNDLE_IMPORT_STATS_INIT;
	char *cache = path_in("cache-kill"), *fifo = path_in("bundle.fifo"), *plain = path_in("plain.bundle"), *data;
	size_t len, tries;
	pid_t pid;
	FILE *f;
	(void)state;

	options(&o, &s, cache);
	o.offline = 1;
	/* uncompressed, so that the bytes before the end marker are every entry whole */
	read_bundle();
	write_hostile(plain, PLAIN);
	free_entries();
	data = test_read_file(plain, &len);
	assert_non_null(data);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(kernels_bundle_import(NULL, fifo, &o) == 0 ? 0 : 1);
	f = fopen(fifo, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len - 1024, f), len - 1024);
	fflush(f);
	/* staged blobs appear while the tail is withheld; 100 s is a hang guard only */
	for (tries = 0; tries < 1000; tries++) {
		if (test_system("test -n \"$(find '%s' -path '*import.tmp-*/blobs/*' -type f)\"", cache) == 0)
			break;
		usleep(100000);
	}
	assert_true(tries < 1000);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	fclose(f);
	assert_int_equal(test_system("test -z \"$(find '%s' -path '*/snapshots/*' -o -path '*/refs/*' -o -path "
				     "'*/kernels--acme--bundled/blobs/*')\"", cache), 0);

	assert_ok(kernels_bundle_import(&st, B.bundle, &o));
	assert_int_equal(st.variants_added, 2);
	assert_int_equal(test_system("test -z \"$(find '%s' -name 'import.tmp-*')\"", cache), 0);
	load_offline_all_ways(cache);
	free(data);
	free(fifo);
	free(plain);
	test_rmtree(cache);
	free(cache);
}

/* An import running in another PID namespace (a container sharing the
 * cache) has a pid this process cannot see: its staging folder, locked,
 * stays while another import runs; once the lock is gone, the next import
 * removes it. */
static void test_live_import_elsewhere_is_left_alone(void **state)
{
	kernels_options o;
	kernels_system s;
	char *cache = path_in("cache-elsewhere"), *stage = NULL;
	int fd;
	(void)state;

	options(&o, &s, cache);
	o.offline = 1;
	assert_ok(kernels_bundle_import(NULL, B.bundle, &o));
	/* no process has pid 999999999 (above the kernel's pid_max) */
	assert_true(asprintf(&stage, "%s/kernels--acme--bundled/.libkernels/import.tmp-999999999-0", cache) > 0);
	assert_int_equal(test_system("mkdir -p '%s'", stage), 0);
	fd = open(stage, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	assert_ok(kernels_bundle_import(NULL, B.bundle, &o));
	assert_int_equal(access(stage, F_OK), 0);
	close(fd);
	assert_ok(kernels_bundle_import(NULL, B.bundle, &o));
	assert_int_equal(access(stage, F_OK), -1);
	free(stage);
	test_rmtree(cache);
	free(cache);
}

/* ---- a folder swapped for a link after the walk ------------------------------------ */

/* Each folder an import writes into, swapped for a link to a folder
 * outside the cache right after a walk reaches it (a race in a shared
 * cache, made certain by the hook): nothing is made in that folder, not
 * even for a moment (its change time stays), and nothing in it changes,
 * whatever the import answers. .libkernels/ is swapped twice over: before
 * the staging folder is made in it (its first walk), and while files are
 * being linked in the staging folder (its second). */
static void test_swap_after_walk_writes_nothing(void **state)
{
	static const struct {
		const char *level;
		int skip;
	} cases[] = { { ".libkernels", 0 }, { ".libkernels", 1 }, { "blobs", 0 }, { "refs", 0 },
		      { "snapshots/%s/build", 0 } };
	kernels_options o;
	kernels_system s;
	struct stat before, after;
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *cache = path_in("swap-cache"), *outside = path_in("swap-outside"), *sub, *level;
		int rc;

		assert_true(asprintf(&sub, cases[i].level, W.commit[0]) > 0);
		assert_true(asprintf(&level, "kernels--acme--bundled/%s", sub) > 0);
		assert_int_equal(test_system("mkdir -p '%s/sub' && printf keep > '%s/sub/keep.txt'", outside, outside), 0);
		assert_int_equal(stat(outside, &before), 0);
		test_swap_arm_nth(level, outside, cases[i].skip);
		options(&o, &s, cache);
		o.offline = 1;
		rc = kernels_bundle_import(NULL, B.bundle, &o);
		if (!test_swap_disarm())
			fail_msg("%s (walk %d): no walk reached it", sub, cases[i].skip + 1);
		assert_int_equal(stat(outside, &after), 0);
		if (before.st_ctim.tv_sec != after.st_ctim.tv_sec || before.st_ctim.tv_nsec != after.st_ctim.tv_nsec ||
		    test_system("test \"$(cd '%s' && find . | LC_ALL=C sort | tr '\\n' ' ')$(cat '%s/sub/keep.txt')\" = "
				"'. ./sub ./sub/keep.txt keep'", outside, outside) != 0)
			fail_msg("%s swapped for a link after walk %d: the folder outside the cache changed", sub,
				 cases[i].skip + 1);
		if (rc != 0 && strstr(kernels_error_last(), "nothing was imported"))
			assert_nothing_published(cache);
		test_rmtree(cache);
		test_rmtree(outside);
		free(cache);
		free(outside);
		free(sub);
		free(level);
	}
}

/* ---- refs --------------------------------------------------------------------------- */

static size_t kept_warnings;

static void count_kept(kernels_log_level level, const char *msg, void *payload)
{
	(void)payload;
	kept_warnings += level == KERNELS_LOG_WARNING && strstr(msg, "kept at") && strstr(msg, "remove ");
}

/* An import of `bundle` into `cache`: its stats, the kept-ref warnings counted. */
static kernels_bundle_import_stats import_counting(const char *cache, const char *bundle)
{
	kernels_options o;
	kernels_system s;
	kernels_bundle_import_stats st = KERNELS_BUNDLE_IMPORT_STATS_INIT;

	options(&o, &s, cache);
	o.offline = 1;
	o.log_cb = count_kept;
	kept_warnings = 0;
	assert_ok(kernels_bundle_import(&st, bundle, &o));
	return st;
}

static void assert_ref(const char *cache, const char *name, const char *commit)
{
	char *path, *text;

	assert_true(asprintf(&path, "%s/kernels--acme--bundled/refs/%s", cache, name) > 0);
	text = test_read_file(path, NULL);
	assert_non_null(text);
	if (strncmp(text, commit, 40))
		fail_msg("refs/%s holds %.40s, not %s", name, text, commit);
	free(text);
	free(path);
}

/* A bundle of a newer release (v1.1.0, main and v1 moved to it). */
static char *newer_bundle(void)
{
	kernels_options o;
	kernels_system s;
	test_app app;
	char *src = path_in("src-new"), *src_cache = path_in("src-cache-new"), *out = path_in("new.bundle");
	size_t i;

	for (i = 0; i < 2; i++)
		assert_int_equal(fx_answer_variant(src, VARIANTS[i], "bundled", 110 + (int)i, "cpu", NULL, 1), 0);
	assert_int_equal(test_world_publish(&W, 1, "--repo acme/bundled --dir '%s' --branch main --branch v1 "
					    "--tag v1.1.0 --trusted", src), 0);
	assert_int_equal(test_app_make(&app, W.tmp, "app-new", "[project]\nname = \"app\"\n\n"
				       "[tool.kernels.dependencies]\n\"acme/bundled\" = 1\n"), 0);
	options(&o, &s, src_cache);
	assert_ok(kernels_project_lock(app.dir, &o));
	assert_ok(kernels_bundle_write(out, app.dir, NULL, &o));
	test_app_free(&app);
	free(src);
	free(src_cache);
	return out;
}

/* As git fetch refuses a non-fast-forward, an import never moves a ref
 * back: an older bundle after a newer one keeps the cache's branches (a
 * warning says how to take the bundle's) and adds only the names the
 * cache lacks; a newer one after an older moves them forward (version
 * tags order the commits); with no version tag to order them the cache's
 * ref stays until it is removed, as the warning says. */
static void test_refs_never_move_back(void **state)
{
	char *newer = newer_bundle(), *cache = path_in("cache-refs"), *forward = path_in("cache-refs-forward");
	kernels_bundle_import_stats st;
	kernels_options o;
	kernels_system s;
	kernels_kernel *k = NULL;
	(void)state;

	import_counting(cache, newer);
	st = import_counting(cache, B.bundle);
	assert_int_equal(st.refs_written, 1); /* v1.0.0, new to the cache */
	assert_int_equal(kept_warnings, 2);   /* main, v1 */
	assert_ref(cache, "main", W.commit[1]);
	assert_ref(cache, "v1", W.commit[1]);
	assert_ref(cache, "v1.0.0", W.commit[0]);
	options(&o, &s, cache);
	o.offline = 1;
	assert_ok(kernels_get(&k, "acme/bundled", "main", &o));
	assert_int_equal(test_kernel_answer(k), 110);
	kernels_kernel_close(k);

	import_counting(forward, B.bundle);
	st = import_counting(forward, newer);
	assert_int_equal(kept_warnings, 0);
	assert_int_equal(st.refs_written, 3); /* main and v1 moved forward, v1.1.0 new */
	assert_ref(forward, "main", W.commit[1]);
	assert_ref(forward, "v1", W.commit[1]);

	assert_int_equal(test_system("printf %s > '%s/kernels--acme--bundled/refs/main'",
				     "0123456789012345678901234567890123456789", forward), 0);
	st = import_counting(forward, newer);
	assert_int_equal(kept_warnings, 1);
	assert_int_equal(st.refs_written, 0);
	assert_ref(forward, "main", "0123456789012345678901234567890123456789");
	assert_int_equal(test_system("rm '%s/kernels--acme--bundled/refs/main'", forward), 0);
	st = import_counting(forward, newer);
	assert_int_equal(st.refs_written, 1);
	assert_ref(forward, "main", W.commit[1]);
	test_rmtree(cache);
	test_rmtree(forward);
	free(cache);
	free(forward);
	free(newer);
}

/* Last: with the Hub gone and HF_HUB_OFFLINE=1, an import and the loads. */
static void test_hub_stopped(void **state)
{
	kernels_options o;
	kernels_system s;
	char *cache = path_in("cache-nohub");
	(void)state;

	test_hub_stop(W.hub);
	W.hub = NULL;
	setenv("HF_HUB_OFFLINE", "1", 1);
	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	o.cache_dir = cache;
	assert_ok(kernels_bundle_import(NULL, B.bundle, &o));
	{
		kernels_kernel *k = NULL;
		memset(&s, 0, sizeof(s));
		s.torch_version = 211;
		s.torch_cxx11_abi = 1;
		s.backend = "cpu";
		s.no_gpu = 1;
		o.system = &s;
		o.trust_remote_code = 1;
		assert_ok(kernels_get(&k, "acme/bundled", "v1", &o));
		assert_int_equal(test_kernel_answer(k), 100);
		kernels_kernel_close(k);
		assert_ok(kernels_load_locked(&k, "acme/bundled", B.app.lock, &o));
		kernels_kernel_close(k);
	}
	unsetenv("HF_HUB_OFFLINE");
	test_rmtree(cache);
	free(cache);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ls_lists_variants_and_refs),
		cmocka_unit_test(test_variant_filter),
		cmocka_unit_test(test_import_then_offline_loads),
		cmocka_unit_test(test_partial_cache_gets_the_rest),
		cmocka_unit_test(test_bundle_from_a_shared_blob_store),
		cmocka_unit_test(test_failure_while_publishing_says_what_went_in),
		cmocka_unit_test(test_staging_failure_names_the_cache),
		cmocka_unit_test(test_import_keeps_receipts),
		cmocka_unit_test(test_import_repairs_a_damaged_blob),
		cmocka_unit_test(test_hostile_archives_refused_whole),
		cmocka_unit_test(test_signature_required_refuses_unsigned),
		cmocka_unit_test(test_kill_mid_import),
		cmocka_unit_test(test_live_import_elsewhere_is_left_alone),
		cmocka_unit_test(test_swap_after_walk_writes_nothing),
		cmocka_unit_test(test_refs_never_move_back),
		cmocka_unit_test(test_hub_stopped),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
