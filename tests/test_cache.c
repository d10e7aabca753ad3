/* The cache root is the only trusted path (lib/cache.c): a symbolic link
 * planted at the repo folder, blobs/, snapshots/ (and every folder below
 * it), refs/, .no_exist/, .libkernels/ or .locks/ is refused by name,
 * nothing is written outside the root (byte for byte), and no
 * code from behind the link runs (the variant's constructor leaves a
 * marker when it runs). And the cache API (kernels/cache.h): a scan says
 * what the files on disk say; a removal during a download refuses, or
 * waits for it, and never takes files from under it. */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "kernels.h"
#include "hub.h"
#include "memo.h"
#include "swap_walk.h"
#include "symlink_fail.h"
#include "test_world.h"
#include "testutil.h"
#include "../tests/data/variants/fixture.h"

#define VARIANT "torch211-cxx11-cpu-x86_64-linux"

static test_world W;
static char *marker;
static const char *commit; /* W.commit[0]: acme/guard's one commit */
static const kernels_system sys_cpu = TEST_SYS_CPU;

static int setup(void **state)
{
	(void)state;
	if (test_world_start(&W, "cache-guard"))
		return -1;
	assert_true(asprintf(&marker, "%s/constructor.ran", W.tmp) > 0);
	if (fx_publish_answer(W.hub, W.tmp, "acme/guard", "guard", 1, marker, "--trusted") != 0)
		return -1;
	commit = W.commit[0];
	return test_world_keep_last(&W, 0);
}

static int teardown(void **state)
{
	(void)state;
	test_world_stop(&W);
	free(marker);
	return 0;
}

static void options(kernels_options *o, const char *cache)
{
	test_hub_options(o, W.hub, cache, &sys_cpu);
}

/* A complete, self-consistent cache of acme/guard at `cache`. */
static void fill(const char *cache)
{
	kernels_options o;
	kernels_kernel *k = NULL;

	options(&o, cache);
	if (kernels_get(&k, "acme/guard", "v1.0.0", &o) < 0)
		fail_msg("filling %s: %s", cache, kernels_error_last());
	kernels_kernel_close(k);
}

static void refused(const char *cache, int offline, const char *link)
{
	kernels_options o;
	kernels_kernel *k = NULL;

	remove(marker);
	options(&o, cache);
	o.offline = offline;
	assert_int_equal(kernels_get(&k, "acme/guard", "v1.0.0", &o), KERNELS_EUNSAFE);
	assert_null(k);
	if (!strstr(kernels_error_last(), link) || !strstr(kernels_error_last(), "symbolic link"))
		fail_msg("the message does not name %s: %s", link, kernels_error_last());
	assert_int_not_equal(access(marker, F_OK), 0);
}

static char *make_cache(const char *name)
{
	char *cache;
	assert_true(asprintf(&cache, "%s/%s", W.tmp, name) > 0);
	test_system("rm -rf '%s' && mkdir -p '%s'", cache, cache);
	return cache;
}

/* A repo folder that is a link to a complete cache elsewhere: loading it
 * would run code from outside the cache. */
static void test_planted_repo_folder(void **state)
{
	char *elsewhere = make_cache("elsewhere"), *cache = make_cache("repo-link"), *link;
	(void)state;

	fill(elsewhere);
	assert_true(asprintf(&link, "%s/kernels--acme--guard", cache) > 0);
	assert_int_equal(test_system("ln -s '%s/kernels--acme--guard' '%s'", elsewhere, link), 0);
	refused(cache, 1, link);
	refused(cache, 0, link);
	free(link);
	free(cache);
	free(elsewhere);
}

/* blobs/, snapshots/, refs/, .libkernels/ linked outside an empty cache:
 * a download would write there. */
static void test_planted_subfolders(void **state)
{
	static const char *const subs[] = { "blobs", "snapshots", "refs", ".libkernels" };
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		char *cache = make_cache("sub-link"), *outside = make_cache("outside"), *link;
		assert_true(asprintf(&link, "%s/kernels--acme--guard/%s", cache, subs[i]) > 0);
		assert_int_equal(test_system("mkdir -p '%s/kernels--acme--guard' && ln -s '%s' '%s'", cache, outside, link), 0);
		refused(cache, 0, link);
		assert_int_equal(test_system("[ -z \"$(ls -A '%s')\" ]", outside), 0); /* nothing written there */
		free(link);
		free(outside);
		free(cache);
	}
}

static void test_planted_locks(void **state)
{
	char *cache = make_cache("locks-link"), *outside = make_cache("outside-locks"), *link;
	(void)state;

	assert_true(asprintf(&link, "%s/.locks", cache) > 0);
	assert_int_equal(test_system("ln -s '%s' '%s'", outside, link), 0);
	refused(cache, 0, link);
	assert_int_equal(test_system("[ -z \"$(ls -A '%s')\" ]", outside), 0);
	free(link);
	assert_true(asprintf(&link, "%s/.locks/kernels--acme--guard", cache) > 0);
	assert_int_equal(test_system("rm '%s/.locks' && mkdir '%s/.locks' && ln -s '%s' '%s'", cache, cache, outside, link), 0);
	refused(cache, 0, link);
	assert_int_equal(test_system("[ -z \"$(ls -A '%s')\" ]", outside), 0);
	free(link);
	free(outside);
	free(cache);
}

/* huggingface_hub 2.4's shared blob store: with Xet, a repo's blobs/<etag>
 * is a relative link to <cache>/blobs/<2 hex>/<xet hash>, a regular file
 * shared by every repo that has those bytes. A cache laid out so (here
 * made from one libkernels filled, each blob moved into the store) loads
 * offline, and gets again online with no file downloaded. */
static void test_shared_blob_store(void **state)
{
	char *cache = make_cache("shared-blobs");
	kernels_options o;
	kernels_kernel *k = NULL;
	kernels_get_stats st = KERNELS_GET_STATS_INIT;
	(void)state;

	fill(cache);
	assert_int_equal(test_share_blobs(cache, "kernels--acme--guard"), 0);
	kernels__memo_clear();
	options(&o, cache);
	o.offline = 1;
	if (kernels_get(&k, "acme/guard", "v1.0.0", &o) < 0)
		fail_msg("offline, from the shared store: %s", kernels_error_last());
	kernels_kernel_close(k);
	kernels__memo_clear();
	o.offline = 0;
	if (kernels_get_ext(&k, &st, "acme/guard", "v1.0.0", &o) < 0)
		fail_msg("online, from the shared store: %s", kernels_error_last());
	assert_int_equal(st.download.blobs_downloaded, 0);
	kernels_kernel_close(k);
	/* Without huggingface_hub's marker, blobs/ at the root is no store. */
	assert_int_equal(test_system("cd '%s/blobs' && mv .huggingface-shared-blobs m && echo 2 > "
				     ".huggingface-shared-blobs", cache), 0);
	kernels__memo_clear();
	o.offline = 1;
	assert_int_equal(kernels_get(&k, "acme/guard", "v1.0.0", &o), KERNELS_EUNSAFE);
	assert_int_equal(test_system("mv '%s/blobs/m' '%s/blobs/.huggingface-shared-blobs'", cache, cache), 0);
	/* Only the store's own shape counts: a blob linked elsewhere in the
	 * cache root (here a store path whose folder is not its prefix) is
	 * refused. */
	assert_int_equal(test_system("cd '%s' && for b in kernels--acme--guard/blobs/*; do t=$(readlink -f \"$b\"); "
				     "h=$(basename \"$t\"); mkdir -p blobs/zz && cp \"$t\" blobs/zz/$h && "
				     "ln -sfn ../../blobs/zz/$h \"$b\"; done", cache), 0);
	kernels__memo_clear();
	o.offline = 1;
	assert_int_equal(kernels_get(&k, "acme/guard", "v1.0.0", &o), KERNELS_EUNSAFE);
	assert_non_null(strstr(kernels_error_last(), "/blobs/zz/"));
	free(cache);
}

/* Every file of the variant's snapshot folder is a regular file (1). */
static int all_plain(const char *cache)
{
	return test_system("cd '%s/kernels--acme--guard/snapshots/%s/build/%s' && test -n \"$(find . -type f)\" && "
			   "test -z \"$(find . ! -type f ! -type d)\"", cache, commit, VARIANT) == 0;
}

/* On a filesystem that refuses links, a download puts copies of its blobs
 * in the snapshot, as huggingface_hub does, and they load offline. */
static void test_filesystem_without_links(void **state)
{
	char *cache = make_cache("no-links");
	kernels_options o;
	kernels_kernel *k = NULL;
	int rc, refusals;
	(void)state;

	options(&o, cache);
	symlink_fail_refuse(1);
	rc = kernels_get(&k, "acme/guard", "v1.0.0", &o);
	refusals = symlink_fail_refused();
	symlink_fail_refuse(0);
	if (rc < 0)
		fail_msg("filling %s with links refused: %s", cache, kernels_error_last());
	kernels_kernel_close(k);
	assert_true(refusals > 0);
	assert_true(all_plain(cache));
	kernels__memo_clear();
	o.offline = 1;
	if (kernels_get(&k, "acme/guard", "v1.0.0", &o) < 0)
		fail_msg("offline, from the copies: %s", kernels_error_last());
	kernels_kernel_close(k);
	free(cache);
}

static char *read_line(const char *path);

/* Everything under `dir`, names, kinds, link targets and bytes, as one
 * line of sha256 (malloc'ed): equal before and after means nothing there
 * changed. */
static char *digest(const char *dir)
{
	char *out, *line;

	assert_true(asprintf(&out, "%s.digest", dir) > 0);
	assert_int_equal(test_system("cd '%s' && { find . -printf '%%p %%y %%s %%m %%l\\n' | LC_ALL=C sort; "
				     "find . -type f | LC_ALL=C sort | xargs -r cat; } | sha256sum > '%s'",
				     dir, out), 0);
	line = read_line(out);
	remove(out);
	free(out);
	return line;
}

/* After a call that had a link into `outside` within its reach: the folder
 * outside the cache is byte for byte as `before` (its digest) says, so the
 * call wrote nothing through the link. Both scratch folders are removed;
 * `cache`, `outside` and `before` are freed. */
static void check_outside_unchanged(const char *level, char *cache, char *outside, char *before)
{
	char *after = digest(outside);

	if (strcmp(before, after))
		fail_msg("%s: the folder outside the cache changed", level);
	test_system("rm -rf '%s' '%s'", cache, outside);
	free(before);
	free(after);
	free(outside);
	free(cache);
}

/* A link planted at any folder libkernels writes below the root, pointing
 * at a folder outside the cache that already holds something: an online
 * load from a cold cache writes nothing there (byte for byte) and loads
 * nothing. Levels a load needs are refused naming the link; the records
 * kept only to save work (.libkernels/trees/, .libkernels/receipts/) are
 * skipped and the load goes on inside the cache. */
static void test_planted_links_write_nothing(void **state)
{
	static const struct {
		const char *rel; /* below the cache root; C: the commit, V: the variant */
		int must_refuse;
	} levels[] = {
		{ "kernels--acme--guard", 1 },
		{ "kernels--acme--guard/refs", 1 },
		{ "kernels--acme--guard/blobs", 1 },
		{ "kernels--acme--guard/snapshots", 1 },
		{ "kernels--acme--guard/snapshots/C", 1 },
		{ "kernels--acme--guard/snapshots/C/build", 1 },
		{ "kernels--acme--guard/snapshots/C/build/V", 1 },
		{ "kernels--acme--guard/.no_exist", 1 },
		{ "kernels--acme--guard/.no_exist/C", 0 },
		{ "kernels--acme--guard/.libkernels", 1 },
		{ "kernels--acme--guard/.libkernels/trees", 0 },
		{ "kernels--acme--guard/.libkernels/trees/C", 0 },
		{ "kernels--acme--guard/.libkernels/receipts", 0 },
		{ "kernels--acme--guard/.libkernels/receipts/C", 0 },
		{ ".locks", 1 },
		{ ".locks/kernels--acme--guard", 1 },
	};
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		char *cache = make_cache("level-link"), *outside = make_cache("level-outside"), *rel, *link, *before, *p;
		kernels_options o;
		kernels_kernel *k = NULL;
		int rc;

		assert_non_null(rel = strdup(levels[i].rel));
		if ((p = strstr(rel, "/C")) && (p[2] == '/' || !p[2])) {
			char *full;
			*p = '\0';
			assert_true(asprintf(&full, "%s/%s%s", rel, commit, p + 2) > 0);
			free(rel);
			rel = full;
		}
		if ((p = strstr(rel, "/V")) && !p[2]) {
			char *full;
			*p = '\0';
			assert_true(asprintf(&full, "%s/%s", rel, VARIANT) > 0);
			free(rel);
			rel = full;
		}
		assert_true(asprintf(&link, "%s/%s", cache, rel) > 0);
		assert_int_equal(test_system("mkdir -p '%s/sub' && printf keep > '%s/sub/keep.txt' && ln -s keep.txt "
					     "'%s/sub/keep.lnk' && mkdir -p \"$(dirname '%s')\" && ln -s '%s' '%s'",
					     outside, outside, outside, link, outside, link), 0);
		before = digest(outside);
		remove(marker);
		options(&o, cache);
		rc = kernels_get(&k, "acme/guard", "v1.0.0", &o);
		if (levels[i].must_refuse && (rc != KERNELS_EUNSAFE || !strstr(kernels_error_last(), link) ||
					      !strstr(kernels_error_last(), "symbolic link")))
			fail_msg("%s: %d, not a refusal naming the link: %s", rel, rc, kernels_error_last());
		if (!levels[i].must_refuse && rc != 0)
			fail_msg("%s: %d: %s", rel, rc, kernels_error_last());
		if (levels[i].must_refuse)
			assert_int_not_equal(access(marker, F_OK), 0);
		kernels_kernel_close(k);
		check_outside_unchanged(rel, cache, outside, before);
		free(link);
		free(rel);
	}
}

/* A folder swapped for a link after the walk that opened it, and before
 * the write (a race in a shared cache, made certain by the test hook):
 * the write goes through the walked folder's descriptor, never through
 * the link, so the folder outside stays byte for byte as it was, whatever
 * the call then answers. */
static void test_swap_after_walk_writes_nothing(void **state)
{
	static const char *const levels[] = {
		"kernels--acme--guard/blobs",
		"kernels--acme--guard/refs",
		"kernels--acme--guard/.libkernels",
		"kernels--acme--guard/snapshots/C/build/V",
	};
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		char *cache = make_cache("swap-cache"), *outside = make_cache("swap-outside"), *level, *before;
		kernels_options o;
		kernels_kernel *k = NULL;

		assert_true(asprintf(&level, "%s", levels[i]) > 0);
		if (strstr(level, "/C/build/V")) {
			free(level);
			assert_true(asprintf(&level, "kernels--acme--guard/snapshots/%s/build/%s", commit, VARIANT) > 0);
		}
		assert_int_equal(test_system("mkdir -p '%s/sub' && printf keep > '%s/sub/keep.txt'", outside, outside), 0);
		before = digest(outside);
		test_swap_arm(level, outside);
		options(&o, cache);
		if (kernels_get(&k, "acme/guard", "v1.0.0", &o) == 0)
			kernels_kernel_close(k);
		if (!test_swap_disarm())
			fail_msg("%s: no walk reached it", level);
		check_outside_unchanged(level, cache, outside, before);
		free(level);
	}
}

/* A lock folder this process may not write (an immutable folder: EPERM
 * even for root) reports that errno and the advice, not the ENOENT of the
 * read-only retry. Skipped (not passed) where the file system has no
 * immutable attribute. */
static void test_lock_folder_errno(void **state)
{
	char *cache = make_cache("locks-eperm"), *locks;
	kernels_options o;
	kernels_kernel *k = NULL;
	(void)state;

	assert_true(asprintf(&locks, "%s/.locks/kernels--acme--guard", cache) > 0);
	assert_int_equal(test_system("mkdir -p '%s'", locks), 0);
	if (test_system("chattr +i '%s' 2>/dev/null", locks) != 0) {
		free(locks);
		free(cache);
		skip();
	}
	options(&o, cache);
	assert_int_equal(kernels_get(&k, "acme/guard", "v1.0.0", &o), KERNELS_EIO);
	test_system("chattr -i '%s'", locks);
	if (!strstr(kernels_error_last(), "Operation not permitted") || !strstr(kernels_error_last(), locks) ||
	    !strstr(kernels_error_last(), "writable"))
		fail_msg("the lock error lost its errno, path or advice: %s", kernels_error_last());
	free(locks);
	free(cache);
}

/* The cache root itself may be a link (a cache moved to a bigger disk):
 * that is the caller's choice, and it works. */
static void test_root_may_be_a_link(void **state)
{
	char *real = make_cache("real-root"), *link;
	kernels_options o;
	kernels_kernel *k = NULL;
	(void)state;

	assert_true(asprintf(&link, "%s/root-link", W.tmp) > 0);
	assert_int_equal(test_system("rm -f '%s' && ln -s '%s' '%s'", link, real, link), 0);
	options(&o, link);
	assert_int_equal(kernels_get(&k, "acme/guard", "v1.0.0", &o), 0);
	kernels_kernel_close(k);
	free(link);
	free(real);
}

/* ---- the cache API -------------------------------------------------------------- */

/* What find(1) says of `dir`: the number of regular files and their bytes
 * (-L: links followed, as a variant's files are). */
static unsigned long long find_sum(const char *flags, const char *dir, size_t *files)
{
	char *cmd, line[64];
	unsigned long long total = 0;
	FILE *f;

	*files = 0;
	assert_true(asprintf(&cmd, "find %s '%s' -type f -printf '%%s\\n'", flags, dir) > 0);
	assert_non_null(f = popen(cmd, "r"));
	while (fgets(line, sizeof(line), f)) {
		total += strtoull(line, NULL, 10);
		(*files)++;
	}
	pclose(f);
	free(cmd);
	return total;
}

static char *read_line(const char *path)
{
	char buf[128] = { 0 };
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return strdup(buf);
}

static void test_scan_agrees_with_disk(void **state)
{
	char *cache = make_cache("scan"), *repo, *path, *ref;
	const kernels_cache_revision *rev;
	const kernels_cache_repo *r;
	kernels_cache_info *info = NULL;
	kernels_options o;
	size_t files, i;
	unsigned long long bytes;
	(void)state;

	fill(cache);
	/* An ordinary model (no build variants) is not a kernel: left out. */
	assert_int_equal(test_system("mkdir -p '%s/models--acme--plain/blobs' '%s/models--acme--plain/snapshots/%s' && "
				     "echo hi > '%s/models--acme--plain/blobs/x'", cache, cache, commit, cache), 0);
	options(&o, cache);
	assert_int_equal(kernels_cache_scan(&info, NULL, &o), 0);
	assert_string_equal(info->cache_dir, cache);
	assert_int_equal(info->repos_count, 1);
	r = &info->repos[0];
	assert_true(asprintf(&repo, "%s/kernels--acme--guard", cache) > 0);
	assert_string_equal(r->repo_id, "acme/guard");
	assert_int_equal(r->is_model, 0);
	assert_string_equal(r->path, repo);

	assert_true(asprintf(&path, "%s/blobs", repo) > 0);
	find_sum("", path, &files);
	free(path);
	assert_true(files > 0);
	assert_int_equal(r->blobs, files);
	/* The size is every file the folder holds (links not followed), what
	 * libkernels writes beside the blobs too (the Python-free copies): the
	 * bytes `cache rm` frees. */
	bytes = find_sum("", repo, &files);
	assert_int_equal(r->size, bytes);
	assert_int_equal(info->size, bytes);
	kernels_cache_info_free(info);
	info = NULL;
	assert_int_equal(test_system("mkdir -p '%s/.libkernels/patched' && head -c 1000 /dev/zero > "
				     "'%s/.libkernels/patched/copy.so'", repo, repo), 0);
	assert_int_equal(kernels_cache_scan(&info, NULL, &o), 0);
	r = &info->repos[0];
	assert_int_equal(r->size, bytes + 1000);
	{
		kernels_cache_removal *rm = NULL;
		assert_int_equal(kernels_cache_remove(&rm, "acme/guard", NULL, KERNELS_CACHE_DRY_RUN, &o), 0);
		assert_int_equal(rm->freed, r->size);
		kernels_cache_removal_free(rm);
	}
	assert_int_equal(test_system("rm -r '%s/.libkernels/patched/copy.so'", repo), 0);

	/* refs/: v1.0.0 (the revision asked for) holds the commit, as its file says */
	assert_true(asprintf(&path, "%s/refs", repo) > 0);
	find_sum("", path, &files);
	free(path);
	assert_int_equal(r->refs_count, files);
	assert_true(asprintf(&path, "%s/refs/v1.0.0", repo) > 0);
	ref = read_line(path);
	free(path);
	for (i = 0; i < r->refs_count && strcmp(r->ref_names[i], "v1.0.0"); i++)
		;
	assert_true(i < r->refs_count);
	assert_string_equal(r->ref_commits[i], ref);
	assert_string_equal(ref, commit);
	free(ref);

	/* snapshots/: the one commit, its variant, and the variant's files */
	assert_int_equal(r->revisions_count, 1);
	rev = &r->revisions[0];
	assert_string_equal(rev->commit, commit);
	assert_true(rev->refs_count >= 1);
	for (i = 0; i < rev->refs_count && strcmp(rev->refs[i], "v1.0.0"); i++)
		;
	assert_true(i < rev->refs_count);
	assert_int_equal(rev->variants_count, 1);
	assert_string_equal(rev->variants[0].name, VARIANT);
	assert_true(asprintf(&path, "%s/snapshots/%s/build/%s", repo, commit, VARIANT) > 0);
	bytes = find_sum("-L", path, &files);
	free(path);
	assert_true(files >= 2);
	assert_int_equal(rev->variants[0].files, files);
	assert_int_equal(rev->variants[0].size, bytes);
	kernels_cache_info_free(info);

	/* One repo, or one that is not there, or a cache that does not exist. */
	assert_int_equal(kernels_cache_scan(&info, "acme/guard", &o), 0);
	assert_int_equal(info->repos_count, 1);
	kernels_cache_info_free(info);
	assert_int_equal(kernels_cache_scan(&info, "acme/none", &o), 0);
	assert_int_equal(info->repos_count, 0);
	assert_int_equal(info->size, 0);
	kernels_cache_info_free(info);
	assert_int_equal(kernels_cache_scan(&info, "acme--x/y", &o), KERNELS_EINVAL);
	assert_null(info);
	assert_true(asprintf(&path, "%s/nothing-here", cache) > 0);
	o.cache_dir = path;
	assert_int_equal(kernels_cache_scan(&info, NULL, &o), 0);
	assert_int_equal(info->repos_count, 0);
	kernels_cache_info_free(info);
	free(path);
	free(repo);
	free(cache);
}

typedef struct {
	const char *cache;
	int rc;
	char msg[512];
} download_arg;

static void *download_thread(void *p)
{
	download_arg *a = p;
	const char *vs[] = { VARIANT };
	kernels_snapshot *s = NULL;
	kernels_options o;

	options(&o, a->cache);
	a->rc = kernels_download(&s, "acme/guard", commit, vs, 1, &o);
	snprintf(a->msg, sizeof(a->msg), "%s", a->rc ? kernels_error_last() : "");
	kernels_snapshot_free(s);
	return NULL;
}

/* A removal while a download writes the repo: refused with nothing removed;
 * with KERNELS_CACHE_WAIT, done once the download is, which finished whole. */
static void test_remove_during_download(void **state)
{
	char *cache = make_cache("busy"), *repo;
	kernels_cache_removal *r = NULL;
	download_arg a = { .cache = cache };
	kernels_options o;
	pthread_t t;
	int i;
	(void)state;

	assert_true(asprintf(&repo, "%s/kernels--acme--guard", cache) > 0);
	/* The first file of the variant stalls after its first byte. */
	assert_int_equal(test_hub_fault(W.hub, "{\"path\": \"/build/" VARIANT "/\", \"mode\": \"slow\", "
					"\"after_bytes\": 1, \"delay\": 8, \"count\": 1}"), 0);
	assert_int_equal(pthread_create(&t, NULL, download_thread, &a), 0);
	for (i = 0; i < 6000 && test_system("ls '%s'/blobs/*.incomplete >/dev/null 2>&1", repo) != 0; i++)
		usleep(10000);
	assert_true(i < 6000); /* the download is under way (60 s: a hang guard) */

	options(&o, cache);
	assert_int_equal(kernels_cache_remove(&r, "acme/guard", NULL, 0, &o), KERNELS_EBUSY);
	assert_null(r);
	/* refused by the repo lock the download holds (not only by the file lock
	 * of the blob in flight) */
	if (!strstr(kernels_error_last(), "acme/guard is being downloaded (by this process or another)"))
		fail_msg("the refusal is not the repo lock's: %s", kernels_error_last());
	assert_int_equal(test_system("[ -d '%s/blobs' ] && [ -d '%s/.locks/kernels--acme--guard' ]", repo, cache),
			 0); /* nothing removed */
	/* A dry run takes no lock: it only reports. */
	assert_int_equal(kernels_cache_remove(&r, "acme/guard", NULL, KERNELS_CACHE_DRY_RUN, &o), 0);
	assert_true(r->dry_run && r->removed_count >= 1);
	assert_string_equal(r->removed[0], repo);
	kernels_cache_removal_free(r);

	/* It waits for the stalled download: had it not, the download would
	 * have lost its files under it and failed. */
	assert_int_equal(kernels_cache_remove(&r, "acme/guard", NULL, KERNELS_CACHE_WAIT, &o), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	if (a.rc != 0)
		fail_msg("the download was disturbed by the removal: %s", a.msg);
	assert_false(r->dry_run);
	assert_null(r->commit);
	assert_true(r->freed > 0);
	assert_int_equal(test_system("[ ! -e '%s' ] && [ ! -e '%s/.locks/kernels--acme--guard' ]", repo, cache), 0);
	kernels_cache_removal_free(r);
	test_hub_faults_clear(W.hub);
	free(repo);
	free(cache);
}

/* huggingface_hub writing a blob holds its per-file lock (flock, as
 * filelock takes it): a removal refuses until it is released. */
static void test_remove_respects_file_locks(void **state)
{
	char *cache = make_cache("hf-lock"), *lock;
	kernels_cache_removal *r = NULL;
	kernels_options o;
	int fd;
	(void)state;

	fill(cache);
	assert_true(asprintf(&lock, "%s/.locks/kernels--acme--guard/%040d.lock", cache, 0) > 0);
	assert_true((fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0666)) >= 0);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	options(&o, cache);
	assert_int_equal(kernels_cache_remove(&r, "acme/guard", commit, 0, &o), KERNELS_EBUSY);
	assert_non_null(strstr(kernels_error_last(), lock));
	assert_int_equal(test_system("[ -d '%s/kernels--acme--guard/snapshots/%s' ]", cache, commit), 0);
	close(fd);
	/* By a commit prefix; its last snapshot, so the whole repo goes. */
	assert_int_equal(kernels_cache_remove(&r, "acme/guard", "v1.0.0", 0, &o), 0);
	assert_string_equal(r->commit, commit);
	assert_int_equal(test_system("[ ! -e '%s/kernels--acme--guard' ]", cache), 0);
	kernels_cache_removal_free(r);
	assert_int_equal(kernels_cache_remove(&r, "acme/guard", NULL, 0, &o), KERNELS_ENOTFOUND);
	assert_null(r);
	assert_int_equal(kernels_cache_remove(NULL, "acme/guard", "", 0, &o), KERNELS_EINVAL);
	assert_int_equal(kernels_cache_remove(NULL, "acme/guard", NULL, 4, &o), KERNELS_EINVAL);
	free(lock);
	free(cache);
}

/* Removing a revision removes the blobs no other snapshot links; where
 * another snapshot cannot be read whole (here its links lie deeper than
 * any walk goes), none is removed: a blob it links may look unused. The
 * call says so, and the blob is still there. */
static void test_remove_keeps_blobs_it_cannot_rule_out(void **state)
{
	char *cache = make_cache("unread"), *repo;
	kernels_cache_removal *r = NULL;
	kernels_options o;
	(void)state;

	fill(cache);
	assert_true(asprintf(&repo, "%s/kernels--acme--guard", cache) > 0);
	/* Another snapshot whose one link, 70 folders down, names the module's blob. */
	assert_int_equal(test_system("cd '%s/snapshots' && b=$(basename \"$(readlink -f %s/build/*/_guard_1.abi3.so)\") && "
				     "d=%040d && mkdir -p $d && cd $d && for i in $(seq 70); do mkdir x && cd x; done && "
				     "ln -s ../blobs/$b deep.so", repo, commit, 1), 0);
	options(&o, cache);
	assert_int_equal(kernels_cache_remove(&r, "acme/guard", commit, 0, &o), KERNELS_EIO);
	assert_null(r);
	assert_non_null(strstr(kernels_error_last(), "snapshots"));
	assert_int_equal(test_system("test $(ls '%s/blobs' | wc -l) -gt 0 && "
				     "b=$(basename \"$(find '%s/snapshots' -name deep.so -exec readlink {} \\;)\") && "
				     "test -f '%s/blobs/'$b", repo, repo, repo), 0);
	free(repo);
	free(cache);
}

/* A repo's kind (kernel or model repo) is known from the cache only by
 * what was fetched of it: a folder that a refused call left with a record
 * in it (the trust verdict, written as soon as the Hub gives it) names no
 * kind. Here the Hub lies once that acme/guard, pinned by its commit, is
 * no kernel repo, and the model API answers 500: the call fails, and the
 * next one, against the honest Hub, loads the kernel. */
static void test_refused_call_leaves_no_kind(void **state)
{
	char *cache = make_cache("kind");
	kernels_options o;
	kernels_kernel *k = NULL;
	(void)state;

	options(&o, cache);
	o.max_retries = 0;
	assert_int_equal(test_hub_fault(W.hub, "{\"path\": \"/api/kernels/acme/guard/revision/\", \"mode\": \"404\"}"),
			 0);
	assert_int_equal(test_hub_fault(W.hub, "{\"path\": \"/api/models/acme/guard\", \"mode\": \"500\", "
					"\"count\": -1}"), 0);
	assert_true(kernels_get(&k, "acme/guard", commit, &o) < 0);
	assert_null(k);
	test_hub_faults_clear(W.hub);
	kernels__hub_down_forget_all(); /* the 500 left the Hub remembered as not serving */
	if (kernels_get(&k, "acme/guard", commit, &o) < 0)
		fail_msg("after a refused call, the honest Hub's: %s", kernels_error_last());
	assert_int_equal(test_kernel_answer(k), 1);
	kernels_kernel_close(k);
	free(cache);
}

/* refs/ files are written without a flush (as huggingface_hub does), so
 * a crash can leave one empty: the scan leaves its name out and says which
 * file and what to do; an online get of that name rewrites it with the
 * commit the Hub names. */
static void test_scan_names_a_damaged_ref(void **state)
{
	char *cache = make_cache("damaged-ref"), *ref, *text;
	const kernels_cache_repo *r;
	kernels_cache_info *info = NULL;
	kernels_kernel *k = NULL;
	kernels_options o;
	(void)state;

	fill(cache);
	assert_true(asprintf(&ref, "%s/kernels--acme--guard/refs/main", cache) > 0);
	assert_int_equal(test_write_file(ref, "", 0), 0);
	options(&o, cache);
	o.log_cb = test_log_warnings;
	test_logged_clear();
	assert_int_equal(kernels_cache_scan(&info, "acme/guard", &o), 0);
	assert_int_equal(info->repos_count, 1);
	r = &info->repos[0];
	assert_int_equal(r->refs_count, 1);
	assert_string_equal(r->ref_names[0], "v1.0.0");
	if (!strstr(test_logged, ref) || !strstr(test_logged, "online"))
		fail_msg("no warning naming %s: '%s'", ref, test_logged);
	kernels_cache_info_free(info);

	if (kernels_get(&k, "acme/guard", "main", &o) < 0)
		fail_msg("online get of main: %s", kernels_error_last());
	assert_int_equal(test_kernel_answer(k), 1);
	kernels_kernel_close(k);
	text = test_read_file(ref, NULL);
	assert_string_equal(text, commit);
	test_logged_clear();
	assert_int_equal(kernels_cache_scan(&info, "acme/guard", &o), 0);
	assert_int_equal(info->repos[0].refs_count, 2);
	assert_string_equal(test_logged, "");
	kernels_cache_info_free(info);
	free(text);
	free(ref);
	free(cache);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scan_agrees_with_disk),
		cmocka_unit_test(test_scan_names_a_damaged_ref),
		cmocka_unit_test(test_remove_during_download),
		cmocka_unit_test(test_remove_respects_file_locks),
		cmocka_unit_test(test_remove_keeps_blobs_it_cannot_rule_out),
		cmocka_unit_test(test_refused_call_leaves_no_kind),
		cmocka_unit_test(test_planted_repo_folder),
		cmocka_unit_test(test_planted_subfolders),
		cmocka_unit_test(test_planted_locks),
		cmocka_unit_test(test_shared_blob_store),
		cmocka_unit_test(test_filesystem_without_links),
		cmocka_unit_test(test_planted_links_write_nothing),
		cmocka_unit_test(test_swap_after_walk_writes_nothing),
		cmocka_unit_test(test_lock_folder_errno),
		cmocka_unit_test(test_root_may_be_a_link),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
