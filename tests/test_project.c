/* The locked workflow against the local Hub: lock a project, download it,
 * load it offline with no request, and refuse what differs from the lock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "kernels.h"
#include "test_world.h"
#include "testutil.h"
#include "../tests/data/variants/fixture.h"

static const char *const VARIANTS[] = { "torch211-cxx11-cpu-x86_64-linux", "torch29-cxx11-cpu-x86_64-linux" };

/* commit[]: acme/pinned v1.0.0, v2.0.0; acme/moved, once published */
static test_world W;
/* The app locking acme/pinned = 1, under W.tmp; its paths owned here. */
static test_app P;

static char *make_tree(int answer)
{
	char *root;
	size_t i;

	assert_int_equal(asprintf(&root, "%s/src-%d", W.tmp, answer) > 0, 1);
	for (i = 0; i < 2; i++)
		assert_int_equal(fx_answer_variant(root, VARIANTS[i], "pinned", answer + (int)i, "cpu", NULL, 1), 0);
	return root;
}

static int setup(void **state)
{
	char *a, *b;

	assert_int_equal(test_world_start(&W, "project"), 0);
	a = make_tree(100);
	b = make_tree(200);
	assert_int_equal(test_world_publish(&W, 0, "--repo acme/pinned --dir '%s' --branch main --branch v1 "
					    "--tag v1.0.0 --trusted", a), 0);
	assert_int_equal(test_world_publish(&W, 1, "--repo acme/pinned --dir '%s' --branch main --branch v2 "
					    "--tag v2.0.0", b), 0);
	assert_int_equal(test_app_make(&P, W.tmp, "app", "[project]\nname = \"app\"\n\n[tool.kernels.dependencies]\n"
					 "\"acme/pinned\" = 1\n"), 0);
	free(a);
	free(b);
	*state = &W;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	test_world_stop(&W);
	test_app_free(&P);
	return 0;
}

static void options(kernels_options *o, kernels_system *s)
{
	memset(s, 0, sizeof(*s));
	s->torch_version = 211;
	s->torch_cxx11_abi = 1;
	s->backend = "cpu";
	s->no_gpu = 1;
	test_world_options(&W, o, s);
}

/* No lock path: $KERNELS_LOCK, else ./kernels.lock, else a message
 * naming both. */
static void default_lock_search(const kernels_options *o)
{
	kernels_kernel *k = NULL;
	char cwd[4096];

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(W.tmp), 0);
	unsetenv("KERNELS_LOCK");
	assert_int_equal(kernels_load_locked(&k, "acme/pinned", NULL, o), KERNELS_ENOTFOUND);
	assert_non_null(strstr(kernels_error_last(), "KERNELS_LOCK"));
	setenv("KERNELS_LOCK", P.lock, 1);
	assert_int_equal(kernels_load_locked(&k, "acme/pinned", NULL, o), 0);
	assert_int_equal(test_kernel_answer(k), 100);
	kernels_kernel_close(k);
	unsetenv("KERNELS_LOCK");
	assert_int_equal(chdir(P.dir), 0);
	assert_int_equal(kernels_load_locked(&k, "acme/pinned", NULL, o), 0);
	assert_int_equal(test_kernel_answer(k), 100);
	kernels_kernel_close(k);
	assert_int_equal(chdir(cwd), 0);
}

static void test_lock_download_and_load_offline(void **state)
{
	kernels_options o;
	kernels_system s;
	kernels_kernel *k = NULL;
	char *text;
	(void)state;

	options(&o, &s);
	assert_int_equal(kernels_project_lock(P.dir, &o), 0);
	text = test_read_file(P.lock, NULL);
	assert_non_null(text);
	assert_non_null(strstr(text, W.commit[0])); /* major version 1 is branch v1 */
	assert_null(strstr(text, W.commit[1]));
	free(text);

	/* Nothing cached yet: the cache-only load says what to run. */
	assert_int_equal(kernels_load_locked(&k, "acme/pinned", P.lock, &o), KERNELS_EOFFLINE);
	assert_non_null(strstr(kernels_error_last(), "libkernels download"));
	/* ... and what made it offline: the cache-only load, not the environment */
	assert_non_null(strstr(kernels_error_last(), "libkernels load --fetch, or kernels_get_locked)"));
	assert_null(strstr(kernels_error_last(), "HF_HUB_OFFLINE"));

	assert_int_equal(kernels_project_download(P.dir, 0, &o), 0);
	{
		/* A cached variant verifies in place: its links into blobs/ stay in the repo folder. */
		char *dir;
		assert_int_equal(asprintf(&dir, "%s/kernels--acme--pinned/snapshots/%s/build/%s", W.cache, W.commit[0],
					  VARIANTS[0]) > 0, 1);
		assert_int_equal(kernels_verify_variant(NULL, dir, NULL), 0);
		free(dir);
	}
	test_hub_log_clear(W.hub);
	assert_int_equal(kernels_load_locked(&k, "acme/pinned", P.lock, &o), 0);
	assert_int_equal(test_kernel_answer(k), 100);
	assert_string_equal(kernels_kernel_commit(k), W.commit[0]);
	kernels_kernel_close(k);
	{
		char *log = test_hub_log(W.hub);
		assert_string_equal(log, "[]");
		free(log);
	}
	assert_int_equal(kernels_load_locked(&k, "acme/other", P.lock, &o), KERNELS_ENOTFOUND);
	default_lock_search(&o);
}

static void test_get_locked_downloads_and_detects_tampering(void **state)
{
	kernels_options o;
	kernels_system s;
	kernels_kernel *k = NULL;
	(void)state;

	options(&o, &s);
	assert_int_equal(kernels_project_lock(P.dir, &o), 0);
	assert_int_equal(kernels_get_locked(&k, "acme/pinned", P.lock, &o), 0);
	assert_int_equal(test_kernel_answer(k), 100);
	kernels_kernel_close(k);

	/* Overwrite the blob behind metadata's neighbour: the native module. */
	assert_int_equal(test_system("for f in '%s'/kernels--acme--pinned/snapshots/*/build/%s/_pinned_100.abi3.so; do "
				     "b=$(readlink -f \"$f\"); chmod u+w \"$b\"; printf 'tampered' >> \"$b\"; done",
				     W.cache, VARIANTS[0]), 0);
	/* The handle is gone, so this loads anew: verification must refuse it. */
	assert_int_equal(kernels_load_locked(&k, "acme/pinned", P.lock, &o), KERNELS_EINTEGRITY);
	assert_non_null(strstr(kernels_error_last(), "_pinned_100.abi3.so"));
	assert_null(k);
	/* Online, the blob (of another size now) is fetched again. */
	assert_int_equal(kernels_get_locked(&k, "acme/pinned", P.lock, &o), 0);
	kernels_kernel_close(k);
	/* So is one damaged in place (same size: the fetch reuses a blob by
	 * its size), once verification has failed. */
	assert_int_equal(test_system("for f in '%s'/kernels--acme--pinned/snapshots/*/build/%s/_pinned_100.abi3.so; do "
				     "b=$(readlink -f \"$f\"); chmod u+w \"$b\"; printf 'X' | dd of=\"$b\" bs=1 seek=100 "
				     "conv=notrunc 2>/dev/null; done", W.cache, VARIANTS[0]), 0);
	if (kernels_get_locked(&k, "acme/pinned", P.lock, &o) < 0)
		fail_msg("kernels_get_locked: %s", kernels_error_last());
	assert_int_equal(test_kernel_answer(k), 100);
	kernels_kernel_close(k);
}

/* A listing that plants a file in the locked variant (the Hub's listing
 * and one more file, served with the bytes it names) is refused; the
 * listing is not kept to plant it again once the folder is deleted. */
static void test_planted_file_does_not_outlive_its_listing(void **state)
{
	kernels_options o;
	kernels_system s;
	kernels_kernel *k = NULL;
	(void)state;

	options(&o, &s);
	assert_int_equal(kernels_project_lock(P.dir, &o), 0);
	assert_int_equal(test_system("rm -rf '%s'/* '%s'/.locks", W.cache, W.cache), 0);
	assert_int_equal(test_world_plant_file(&W, "acme/pinned", W.commit[0], VARIANTS[0]), 0);
	assert_int_equal(kernels_get_locked(&k, "acme/pinned", P.lock, &o), KERNELS_EINTEGRITY);
	assert_null(k);
	test_hub_faults_clear(W.hub);
	assert_int_equal(test_system("rm -r '%s/kernels--acme--pinned/snapshots/%s/build/%s'", W.cache, W.commit[0],
				     VARIANTS[0]), 0);
	if (kernels_get_locked(&k, "acme/pinned", P.lock, &o) < 0)
		fail_msg("the variant's folder deleted, the honest Hub's locked get: %s", kernels_error_last());
	assert_int_equal(test_kernel_answer(k), 100);
	kernels_kernel_close(k);
}

/* A seed-era lock carries variant hashes: a hash that differs is refused
 * before anything is loaded. */
static void test_variant_hash_lock(void **state)
{
	kernels_options o;
	kernels_system s;
	kernels_kernel *k = NULL;
	kernels_lock *lock;
	char *path;
	(void)state;

	options(&o, &s);
	assert_int_equal(asprintf(&path, "%s/seed.lock", W.tmp) > 0, 1);
	assert_int_equal(kernels_lock_new(&lock, KERNELS_LOCK_FORMAT_VARIANTS), 0);
	assert_int_equal(kernels_lock_add_entry(lock, "acme/pinned", W.commit[1]), 0);
	assert_int_equal(kernels_lock_add_variant(lock, "acme/pinned", VARIANTS[0],
						  "sha256-0000000000000000000000000000000000000000000000000000000000000000"),
			 0);
	assert_int_equal(kernels_lock_save(lock, path), 0);
	kernels_lock_free(lock);
	assert_int_equal(kernels_get_locked(&k, "acme/pinned", path, &o), KERNELS_EINTEGRITY);
	assert_non_null(strstr(kernels_error_last(), "does not match the lock file"));
	assert_null(k);

	/* With the hash the files really have, it loads. */
	{
		char hash[KERNELS_LOCK_HASH_SIZE], *dir;
		assert_int_equal(asprintf(&dir, "%s/kernels--acme--pinned/snapshots/%s/build/%s", W.cache, W.commit[1],
					  VARIANTS[0]) > 0, 1);
		assert_int_equal(kernels_lock_variant_hash_dir(hash, dir, NULL), 0);
		assert_int_equal(kernels_lock_new(&lock, KERNELS_LOCK_FORMAT_VARIANTS), 0);
		assert_int_equal(kernels_lock_add_entry(lock, "acme/pinned", W.commit[1]), 0);
		assert_int_equal(kernels_lock_add_variant(lock, "acme/pinned", VARIANTS[0], hash), 0);
		assert_int_equal(kernels_lock_save(lock, path), 0);
		kernels_lock_free(lock);
		free(dir);
	}
	assert_int_equal(kernels_get_locked(&k, "acme/pinned", path, &o), 0);
	assert_int_equal(test_kernel_answer(k), 200);
	kernels_kernel_close(k);
	free(path);
}

/* A specifier manifest is locked the seed-era way: commit plus one
 * git_lfs_concat hash per torch variant; a pinned load then checks them. */
static void test_specifier_manifest_locks_variant_hashes(void **state)
{
	kernels_options o;
	kernels_system s;
	kernels_kernel *k = NULL;
	test_app app;
	char *text;
	const char *spec = "[tool.kernels.dependencies]\n\"acme/pinned\" = \">=1,<2\"\n";
	const char *mixed = "[tool.kernels.dependencies]\n\"acme/pinned\" = \">=1,<2\"\n\"acme/other\" = 1\n";
	(void)state;

	options(&o, &s);
	assert_int_equal(test_app_make(&app, W.tmp, "seed-app", spec), 0);
	assert_int_equal(kernels_project_lock(app.dir, &o), 0);
	text = test_read_file(app.lock, NULL);
	assert_non_null(strstr(text, W.commit[0]));
	assert_non_null(strstr(text, "\"torch211-cxx11-cpu-x86_64-linux\": {"));
	assert_non_null(strstr(text, "\"torch29-cxx11-cpu-x86_64-linux\": {"));
	assert_non_null(strstr(text, "git_lfs_concat"));
	free(text);
	assert_int_equal(kernels_get_locked(&k, "acme/pinned", app.lock, &o), 0);
	assert_int_equal(test_kernel_answer(k), 100);
	kernels_kernel_close(k);

	assert_int_equal(test_write_file(app.manifest, mixed, strlen(mixed)), 0);
	assert_int_equal(kernels_project_lock(app.dir, &o), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "mixes"));
	test_app_free(&app);
}

static void test_malformed_lock_is_refused(void **state)
{
	kernels_options o;
	kernels_system s;
	kernels_kernel *k = NULL;
	char *path;
	(void)state;

	options(&o, &s);
	assert_int_equal(asprintf(&path, "%s/broken.lock", W.tmp) > 0, 1);
	{
		const char *cut = "[{\"repo_id\": \"acme/pinned\", \"sha\": \"12";
		assert_int_equal(test_write_file(path, cut, strlen(cut)), 0);
	}
	assert_int_equal(kernels_get_locked(&k, "acme/pinned", path, &o), KERNELS_EPARSE);
	assert_null(k);
	assert_int_equal(test_system("test -z \"$(ls -A '%s')\"", W.cache), 0);
	free(path);
}

/* A repo that moved (kernel-status.toml redirects) but keeps its builds:
 * the lock pins the repo named, as kernels 0.17.2 does (it never reads
 * that file), with a warning naming the destination; the locked load
 * loads that pinned commit, offline with no request. */
static void test_moved_repo_locks_and_loads(void **state)
{
	kernels_options o;
	kernels_system s;
	kernels_kernel *k = NULL;
	char *src = make_tree(500), *text;
	test_app app;
	const char *manifest = "[project]\nname = \"app\"\n\n[tool.kernels.dependencies]\n\"acme/moved\" = 1\n";
	(void)state;

	assert_int_equal(test_world_publish(&W, 2, "--repo acme/moved --dir '%s' --text 'kernel-status.toml=kind = "
					    "\"redirect\"\ndestination = \"acme/pinned\"\nrevision = \"v2\"\n' "
					    "--branch main --branch v1 --trusted", src), 0);
	assert_int_equal(test_app_make(&app, W.tmp, "moved-app", manifest), 0);
	options(&o, &s);
	o.log_cb = test_log_warnings;
	test_logged_clear();
	assert_int_equal(kernels_project_lock(app.dir, &o), 0);
	assert_non_null(strstr(test_logged, "'acme/moved' has moved to 'acme/pinned'"));
	assert_non_null(text = test_read_file(app.lock, NULL));
	assert_non_null(strstr(text, W.commit[2]));
	assert_null(strstr(text, W.commit[1])); /* not the destination's v2 */
	free(text);

	assert_int_equal(kernels_project_download(app.dir, 0, &o), 0);
	test_hub_log_clear(W.hub);
	assert_int_equal(kernels_load_locked(&k, "acme/moved", app.lock, &o), 0);
	assert_int_equal(test_kernel_answer(k), 500);
	assert_string_equal(kernels_kernel_repo(k), "acme/moved");
	assert_string_equal(kernels_kernel_commit(k), W.commit[2]);
	kernels_kernel_close(k);
	assert_int_equal(test_hub_log_count(W.hub, NULL, NULL), 0);
	free(src);
	test_app_free(&app);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_lock_download_and_load_offline, test_world_fresh),
		cmocka_unit_test_setup(test_get_locked_downloads_and_detects_tampering, test_world_fresh),
		cmocka_unit_test_setup(test_planted_file_does_not_outlive_its_listing, test_world_fresh),
		cmocka_unit_test_setup(test_variant_hash_lock, test_world_fresh),
		cmocka_unit_test_setup(test_specifier_manifest_locks_variant_hashes, test_world_fresh),
		cmocka_unit_test_setup(test_malformed_lock_is_refused, test_world_fresh),
		cmocka_unit_test_setup(test_moved_repo_locks_and_loads, test_world_fresh),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
