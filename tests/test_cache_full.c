/* The cache on a full or a read-only file system, as a server meets it (a
 * small /home, a full disk, a cache mounted read-only): a small tmpfs
 * mounted over the test's cache folder, in a mount namespace of this
 * process's own (unshare: root's, else a user namespace's), is filled
 * under a get, or remounted read-only. What is checked: the error says
 * what failed, where, and what to do; nothing half-written is left to eat
 * the space again on every retry; and a get once space is freed resumes
 * and succeeds. Where no private mount namespace can be had the program
 * fails, saying so: it never passes without running. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <cmocka.h>

#include "kernels.h"
#include "test_world.h"
#include "testutil.h"
#include "../tests/data/variants/fixture.h"

#define VARIANT "torch211-cxx11-cpu-x86_64-linux"
#define BIG 600000 /* w.bin: most of the variant, a git blob */

/* commit[]: acme/full v1.0.0 (a module, metadata.json and w.bin), v2.0.0
 * (w.bin one line longer). */
static test_world W;
static const kernels_system sys_cpu = TEST_SYS_CPU;
static char *mnt, *cache, *filler;

/* ---- the file system ------------------------------------------------------------ */

static int write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
	close(fd);
	return ok ? 0 : -1;
}

/* A user namespace mapping this user to its root, with a mount namespace:
 * what an unprivileged user may have where the kernel allows it. */
static int unshare_as_user(void)
{
	char map[64];
	unsigned uid = (unsigned)geteuid(), gid = (unsigned)getegid();

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return -1;
	snprintf(map, sizeof(map), "0 %u 1", uid);
	if (write_text("/proc/self/setgroups", "deny") < 0 || write_text("/proc/self/uid_map", map) < 0)
		return -1;
	snprintf(map, sizeof(map), "0 %u 1", gid);
	return write_text("/proc/self/gid_map", map);
}

/* Mounts made from here on are this process's (and its children's) alone. */
static int private_mounts(void)
{
	if (unshare(CLONE_NEWNS) < 0 && unshare_as_user() < 0)
		return -1;
	return mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
}

/* A fresh tmpfs (mount(8) options, e.g. "size=8m") at mnt; the cache is
 * its folder "cache". */
static void mount_tmpfs(const char *opts)
{
	umount2(mnt, MNT_DETACH);
	if (mount("tmpfs", mnt, "tmpfs", 0, opts) < 0)
		fail_msg("mount -t tmpfs -o %s %s: %s", opts, mnt, strerror(errno));
}

/* mount -o remount,{opts}, with MS_RDONLY when `ro`. */
static void remount(const char *opts, int ro)
{
	if (mount("tmpfs", mnt, "tmpfs", MS_REMOUNT | (ro ? MS_RDONLY : 0), opts) < 0)
		fail_msg("mount -o remount,%s%s %s: %s", ro ? "ro," : "", opts, mnt, strerror(errno));
}

/* The last error says `errno_text`, the way out (`advice`), and
 * never that rights are missing: no chmod frees a disk. */
static void says(const char *errno_text, const char *advice)
{
	const char *m = kernels_error_last();

	if (!strstr(m, errno_text) || !strstr(m, advice) || strstr(m, "writable for this user") ||
	    strstr(m, "permissions") || strstr(m, "exists and is writable"))
		fail_msg("the error lacks '%s' or '%s', or blames rights: %s", errno_text, advice, m);
}

static unsigned long long free_bytes(void)
{
	struct statvfs vs;

	assert_int_equal(statvfs(mnt, &vs), 0);
	return (unsigned long long)vs.f_bavail * vs.f_frsize;
}

/* Takes every free byte of the file system with `filler`. */
static void fill(void)
{
	static const char page[4096];
	int fd = open(filler, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	while (write(fd, page, sizeof(page)) > 0)
		;
	assert_int_equal(errno, ENOSPC);
	close(fd);
	assert_int_equal(free_bytes(), 0);
}

/* Gives `n` bytes of the filler back. */
static void free_some(off_t n)
{
	struct stat st;

	assert_int_equal(stat(filler, &st), 0);
	assert_true(st.st_size >= n);
	assert_int_equal(truncate(filler, st.st_size - n), 0);
}

/* The number find(1) prints first, run on the cache with `args`; -1 if none. */
static long long find_number(const char *args)
{
	char *cmd, line[32];
	long long n = -1;
	FILE *p;

	assert_true(asprintf(&cmd, "find '%s' %s 2>/dev/null", cache, args) > 0);
	if ((p = popen(cmd, "r")) && fgets(line, sizeof(line), p))
		n = atoll(line);
	if (p)
		pclose(p);
	free(cmd);
	return n;
}

/* How many names under the cache match the shell pattern `glob`. */
static int count_named(const char *glob)
{
	char args[128];

	snprintf(args, sizeof(args), "-name '%s' | wc -l", glob);
	return (int)find_number(args);
}

/* ---- the world ----------------------------------------------------------------- */

static int setup(void **state)
{
	char *dir, *so;
	(void)state;

	if (test_world_start(&W, "cache-full"))
		return -1;
	assert_true(asprintf(&dir, "%s/src/build/" VARIANT, W.tmp) > 0);
	assert_true(asprintf(&mnt, "%s/mnt", W.tmp) > 0);
	assert_true(asprintf(&cache, "%s/cache", mnt) > 0);
	assert_true(asprintf(&filler, "%s/filler", mnt) > 0);
	assert_int_equal(test_system("mkdir -p '%s' '%s' && head -c %d /dev/urandom > '%s/w.bin'", dir, mnt, BIG,
				     dir), 0);
	assert_true(asprintf(&so, "%s/_full_7.abi3.so", dir) > 0);
	assert_int_equal(fx_build_so(so, 7, NULL, NULL, NULL), 0);
	assert_int_equal(fx_metadata(dir, "--name full --id _full_7 --backend cpu"), 0);
	assert_int_equal(test_world_publish(&W, 0, "--repo acme/full --dir '%s/src' --branch main --branch v1 "
					    "--tag v1.0.0 --trusted", W.tmp), 0);
	/* v2.0.0: another w.bin, so a cache holding v1.0.0 lacks a blob of it */
	assert_int_equal(test_system("echo 2 >> '%s/w.bin'", dir), 0);
	assert_int_equal(fx_metadata(dir, "--name full --id _full_7 --backend cpu"), 0);
	assert_int_equal(test_world_publish(&W, 1, "--repo acme/full --dir '%s/src' --branch main --tag v2.0.0",
					    W.tmp), 0);
	free(dir);
	free(so);
	*state = &W;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	umount2(mnt, MNT_DETACH);
	test_world_stop(&W);
	free(mnt);
	free(cache);
	free(filler);
	return 0;
}

/* The warnings go to test_logged: a full cache makes many, as it should. */
static void options(kernels_options *o)
{
	test_hub_options(o, W.hub, cache, &sys_cpu);
	o->log_cb = test_log_warnings;
}

/* A get of v1.0.0 that loads the module and checks its answer. */
static void get_ok(int offline)
{
	kernels_options o;
	kernels_kernel *k = NULL;

	options(&o);
	o.offline = offline;
	if (kernels_get(&k, "acme/full", "v1.0.0", &o) != 0)
		fail_msg("get (offline %d): %s", offline, kernels_error_last());
	assert_int_equal(test_kernel_answer(k), 7);
	kernels_kernel_close(k);
}

/* ---- a blob's write -------------------------------------------------------------- */

/* Fills the file system once w.bin is under way: its next write fails. */
static int fill_midway(const char *path, size_t done, size_t total, size_t all_done, size_t all_total,
		       void *payload)
{
	int *filled = payload;

	(void)total, (void)all_done, (void)all_total;
	if (!*filled && strstr(path, "w.bin") && done > 0) {
		fill();
		*filled = 1;
	}
	return 0;
}

/* The disk fills while w.bin is written: the get fails naming the file
 * and the lack of space, and keeps what it wrote of each blob under way
 * (one .incomplete each, nothing else); a get while the disk is still full
 * fails the same way and leaves no more; once a little more than what is
 * missing is freed (far less than w.bin) the next get resumes and loads. */
static void test_blob_write_then_resume(void **state)
{
	kernels_options o;
	kernels_kernel *k = NULL;
	long long kept;
	int filled = 0, partial;
	(void)state;

	mount_tmpfs("size=8m");
	options(&o);
	o.progress_cb = fill_midway;
	o.progress_payload = &filled;
	assert_int_equal(kernels_get(&k, "acme/full", "v1.0.0", &o), KERNELS_EIO);
	assert_true(filled);
	/* whichever blob under way met the full disk first */
	if (!strstr(kernels_error_last(), ".incomplete") || !strstr(kernels_error_last(), "fetching build/" VARIANT "/") ||
	    !strstr(kernels_error_last(), " of acme/full at "))
		fail_msg("the failed write is not named: %s", kernels_error_last());
	says("No space left on device", "HF_HUB_CACHE");
	partial = count_named("*.incomplete");
	kept = find_number("-name '*.incomplete' -printf '%s\\n' | awk '{ n += $1 } END { print n }'");
	assert_true(partial >= 1 && partial <= 3);
	assert_true(kept > 200000 && kept < BIG);
	assert_int_equal(count_named("*.tmp-*"), 0);
	assert_int_equal(count_named("w.bin"), 0);

	options(&o);
	assert_int_equal(kernels_get(&k, "acme/full", "v1.0.0", &o), KERNELS_EIO);
	assert_int_equal(count_named("*.incomplete"), partial);
	assert_int_equal(count_named("*.tmp-*"), 0);

	/* Room for what is missing (the module's 16 KiB at most, and pages'
	 * rounding), not for w.bin whole. */
	free_some((off_t)(BIG - kept) + 96 * 1024);
	assert_true(free_bytes() < BIG);
	get_ok(0);
	get_ok(1);
	assert_int_equal(count_named("*.incomplete"), 0);
}

/* ---- folders, lock files, links --------------------------------------------------- */

/* An offline load of what a failed get left: refused as not (all) in the
 * cache, never as corrupt or tampered with, nor as a repo without
 * variants; nothing of it loaded. */
static void offline_refused(void)
{
	kernels_options o;
	kernels_kernel *k = NULL;
	int rc;

	options(&o);
	o.offline = 1;
	if ((rc = kernels_get(&k, "acme/full", "v1.0.0", &o)) != KERNELS_EOFFLINE || strstr(kernels_error_last(), "tamper"))
		fail_msg("offline, what a full disk stopped: %d: %s", rc, kernels_error_last());
	assert_null(k);
}

/* A file system with `n` inodes for the cache: each get runs out at
 * another of its folders, lock files, .incomplete files or links, until
 * one is enough. Each failure says the disk is full and where to go, and
 * leaves no temporary file; what it left does not load offline, and says
 * why; the same cache with room then gets it. */
static void test_no_inode_left(void **state)
{
	kernels_options o;
	kernels_kernel *k = NULL;
	char opts[64];
	int n, rc = -1;
	(void)state;

	for (n = 1; rc != 0 && n < 80; n++) {
		snprintf(opts, sizeof(opts), "size=8m,nr_inodes=%d", n);
		mount_tmpfs(opts);
		options(&o);
		if ((rc = kernels_get(&k, "acme/full", "v1.0.0", &o)) == 0) {
			kernels_kernel_close(k);
			break;
		}
		assert_int_equal(rc, KERNELS_EIO);
		says("No space left on device", "HF_HUB_CACHE");
		assert_int_equal(count_named("*.tmp-*"), 0);
		offline_refused();
		remount("nr_inodes=1000", 0);
		get_ok(0);
	}
	assert_int_equal(rc, 0);
	assert_true(n > 10); /* the sweep went through the get's files */
}

/* ---- a read-only cache ---------------------------------------------------------- */

/* A cache mounted read-only (an air-gapped fleet's) holding v1.0.0: loads
 * offline, by commit and by tag online; a get of v2.0.0, whose w.bin and
 * metadata.json it lacks, fails naming one of them, the cache and
 * HF_HUB_CACHE, not rights. */
static void test_read_only_cache(void **state)
{
	kernels_options o;
	kernels_kernel *k = NULL;
	(void)state;

	mount_tmpfs("size=8m");
	get_ok(0);
	remount("size=8m", 1);
	get_ok(1);
	get_ok(0);
	options(&o);
	if (kernels_get(&k, "acme/full", W.commit[0], &o) != 0)
		fail_msg("get by commit: %s", kernels_error_last());
	kernels_kernel_close(k);
	assert_int_equal(kernels_get(&k, "acme/full", "v2.0.0", &o), KERNELS_EIO);
	says("Read-only file system", "HF_HUB_CACHE");
	if (!strstr(kernels_error_last(), cache) || !strstr(kernels_error_last(), "fetching build/" VARIANT "/") ||
	    !strstr(kernels_error_last(), " of acme/full at "))
		fail_msg("the error does not name the cache %s or the file it lacks: %s", cache, kernels_error_last());
}

/* `libkernels cache rm` on a read-only cache without libkernels' lock file
 * for the repo (huggingface_hub filled it: its per-file locks only):
 * refused before anything is removed,
 * saying the file system is read-only (not that this user lacks rights);
 * mounted writable, the removal goes through. */
static void test_remove_read_only(void **state)
{
	kernels_cache_removal *r = NULL;
	kernels_options o;
	(void)state;

	mount_tmpfs("size=8m");
	get_ok(0);
	assert_int_equal(test_system("rm '%s/.locks/kernels--acme--full/libkernels-repo.lock'", cache), 0);
	remount("size=8m", 1);
	options(&o);
	assert_int_equal(kernels_cache_remove(&r, "acme/full", NULL, 0, &o), KERNELS_EIO);
	assert_null(r);
	if (!strstr(kernels_error_last(), "read-only file system") || strstr(kernels_error_last(), "this user") ||
	    !strstr(kernels_error_last(), cache))
		fail_msg("the refusal does not say the cache %s is read-only: %s", cache, kernels_error_last());
	assert_int_equal(count_named("w.bin"), 1);
	remount("size=8m", 0);
	assert_int_equal(kernels_cache_remove(&r, "acme/full", NULL, 0, &o), 0);
	kernels_cache_removal_free(r);
	assert_int_equal(count_named("w.bin"), 0);
}

/* `cache rm` on a file system without an inode left, where the repo has no
 * lock file yet (.locks was cleaned): refused before anything is removed,
 * saying the disk is full and what to free first (not "point the cache at
 * a larger disk"); with a file's room freed, the removal goes through. */
static void test_remove_full(void **state)
{
	kernels_cache_removal *r = NULL;
	kernels_options o;
	(void)state;

	mount_tmpfs("size=8m,nr_inodes=200");
	get_ok(0);
	assert_int_equal(test_system("rm -rf '%s/.locks' && cd '%s' && mkdir fill && cd fill && "
				     "for i in $(seq 200); do touch $i 2>/dev/null || break; done", cache, mnt), 0);
	options(&o);
	assert_int_equal(kernels_cache_remove(&r, "acme/full", NULL, 0, &o), KERNELS_EIO);
	assert_null(r);
	if (!strstr(kernels_error_last(), "nothing was removed") || !strstr(kernels_error_last(), "free a few KiB"))
		fail_msg("the refusal does not say what to free first: %s", kernels_error_last());
	assert_int_equal(count_named("w.bin"), 1);
	assert_int_equal(test_system("rm -f '%s/fill/1' '%s/fill/2' '%s/fill/3'", mnt, mnt, mnt), 0);
	assert_int_equal(kernels_cache_remove(&r, "acme/full", NULL, 0, &o), 0);
	kernels_cache_removal_free(r);
	assert_int_equal(count_named("w.bin"), 0);
}

/* ---- a bundle, a lock file ---------------------------------------------------------- */

/* An app locked on acme/full v1 in {W.tmp}/{name}, its lock fetched into
 * a cache on the ordinary disk. */
static void make_app(test_app *app, const char *name)
{
	kernels_options o;
	char *src_cache;

	assert_int_equal(test_app_make(app, W.tmp, name, "[project]\nname = \"app\"\n\n"
				       "[tool.kernels.dependencies]\n\"acme/full\" = 1\n"), 0);
	assert_true(asprintf(&src_cache, "%s/src-cache", W.tmp) > 0);
	test_hub_options(&o, W.hub, src_cache, &sys_cpu);
	if (kernels_project_lock(app->dir, &o) != 0)
		fail_msg("locking %s: %s", app->dir, kernels_error_last());
	free(src_cache);
}

/* A bundle imported into a cache too small for it fails saying so before
 * it stages a byte (it would fill the disk, then fail), and leaves nothing
 * (no staging folder, no blob, no variant); with room, the same import
 * succeeds and the variant loads offline. */
static void test_bundle_import(void **state)
{
	kernels_bundle_import_stats st = KERNELS_BUNDLE_IMPORT_STATS_INIT;
	kernels_options o;
	kernels_kernel *k = NULL;
	test_app app;
	char *bundle, *src_cache;
	(void)state;

	make_app(&app, "bundled");
	assert_true(asprintf(&bundle, "%s/app.bundle", W.tmp) > 0);
	assert_true(asprintf(&src_cache, "%s/src-cache", W.tmp) > 0);
	test_hub_options(&o, W.hub, src_cache, &sys_cpu);
	if (kernels_bundle_write(bundle, app.dir, NULL, &o) != 0)
		fail_msg("bundle: %s", kernels_error_last());
	mount_tmpfs("size=256k");
	options(&o);
	o.offline = 1;
	o.trusted_orgs = "acme";
	assert_int_equal(kernels_bundle_import(&st, bundle, &o), KERNELS_EIO);
	says("nothing was imported", "HF_HUB_CACHE");
	if (!strstr(kernels_error_last(), "needs") || !strstr(kernels_error_last(), cache))
		fail_msg("the error does not say what the bundle needs in %s: %s", cache, kernels_error_last());
	assert_int_equal(st.bytes, 0); /* refused before reading a file of the bundle */
	assert_int_equal(count_named("import.tmp-*"), 0);
	assert_int_equal(count_named("w.bin"), 0);
	/* Bytes to spare, inodes not: staging fails part way, and goes. */
	mount_tmpfs("size=8m,nr_inodes=10");
	assert_int_equal(kernels_bundle_import(&st, bundle, &o), KERNELS_EIO);
	says("No space left on device", "HF_HUB_CACHE");
	assert_int_equal(count_named("import.tmp-*"), 0);
	assert_int_equal(count_named("w.bin"), 0);
	assert_int_equal(count_named("*.incomplete"), 0);
	remount("size=8m,nr_inodes=1000", 0);
	if (kernels_bundle_import(&st, bundle, &o) != 0)
		fail_msg("import with room: %s", kernels_error_last());
	assert_int_equal(st.variants_added, 1);
	if (kernels_get(&k, "acme/full", "v1.0.0", &o) != 0)
		fail_msg("offline load of the import: %s", kernels_error_last());
	assert_int_equal(test_kernel_answer(k), 7);
	kernels_kernel_close(k);
	test_app_free(&app);
	free(src_cache);
	free(bundle);
}

/* A bundle written onto a full disk: the error names the bundle and says
 * the disk is full (libarchive alone says "Write error"), and neither the
 * bundle nor a temporary file of it stays. */
static void test_bundle_write(void **state)
{
	kernels_options o;
	test_app app;
	char *bundle, *src_cache;
	(void)state;

	make_app(&app, "bundling");
	mount_tmpfs("size=64k");
	assert_true(asprintf(&bundle, "%s/app.bundle", mnt) > 0);
	assert_true(asprintf(&src_cache, "%s/src-cache", W.tmp) > 0);
	test_hub_options(&o, W.hub, src_cache, &sys_cpu);
	o.offline = 1;
	assert_int_equal(kernels_bundle_write(bundle, app.dir, NULL, &o), KERNELS_EIO);
	says("No space left on device", "free space");
	if (!strstr(kernels_error_last(), bundle))
		fail_msg("the error does not name the bundle %s: %s", bundle, kernels_error_last());
	assert_int_equal(test_system("test -z \"$(ls -A '%s')\"", mnt), 0);
	test_app_free(&app);
	free(src_cache);
	free(bundle);
}

/* kernels.lock written into a folder on a full disk: the error says the
 * disk is full (not that the folder may be missing or unwritable), and
 * no temporary file stays. */
static void test_lock_file(void **state)
{
	kernels_options o;
	test_app app;
	char *dir, *src_cache;
	(void)state;

	make_app(&app, "locked");
	mount_tmpfs("size=8m,nr_inodes=3"); /* the root, the app's folder, pyproject.toml */
	assert_true(asprintf(&dir, "%s/app", mnt) > 0);
	assert_int_equal(test_system("mkdir '%s' && cp '%s' '%s/'", dir, app.manifest, dir), 0);
	assert_true(asprintf(&src_cache, "%s/src-cache", W.tmp) > 0);
	test_hub_options(&o, W.hub, src_cache, &sys_cpu);
	assert_int_equal(kernels_project_lock(dir, &o), KERNELS_EIO);
	says("No space left on device", "free space");
	if (!strstr(kernels_error_last(), dir))
		fail_msg("the error does not name the folder %s: %s", dir, kernels_error_last());
	assert_int_equal(test_system("test \"$(ls -A '%s')\" = pyproject.toml", dir), 0);
	test_app_free(&app);
	free(src_cache);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_blob_write_then_resume),
		cmocka_unit_test(test_no_inode_left),
		cmocka_unit_test(test_read_only_cache),
		cmocka_unit_test(test_remove_read_only),
		cmocka_unit_test(test_remove_full),
		cmocka_unit_test(test_bundle_import),
		cmocka_unit_test(test_lock_file),
		cmocka_unit_test(test_bundle_write),
	};

	if (private_mounts() < 0) {
		fprintf(stderr, "test_cache_full: FAILED: no private mount namespace (%s): neither unshare(CLONE_NEWNS) "
			"as root nor a user namespace is allowed here, so no small file system can be mounted for "
			"the cache; run it as root or where user namespaces are enabled\n", strerror(errno));
		return 1;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
