/* Verification receipts (lib/receipt.c): a cached variant verified once is
 * not hashed again while every file keeps its identity; a touched,
 * replaced or rewritten file (or metadata.json) means a full re-hash, and a
 * changed byte is then refused. The library's debug log says which.
 *
 * Python-free copies (lib/pyfree.c): a module referencing the Python C API,
 * loaded in this process without libpython, is mapped through a copy under
 * {repo}/.libkernels/patched/ written by the first process and reused by
 * the next; a touched or replaced copy is written again, and a cache where
 * it cannot be written falls back to an in-memory copy; one that cannot be
 * named (on the call's helper) stays mapped unnamed. Each such load runs
 * in a forked child (a process maps a module once).
 *
 * Download receipts: a large LFS module hashed at download is not hashed
 * again at its first load; metadata.json giving another digest is still
 * refused, and a touched blob is hashed. */
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernels.h"
#include "test_world.h"
#include "testutil.h"
#include "fsync_log.h"
#include "thread_fail.h"
#include "../tests/data/variants/fixture.h"

#define VARIANT "torch211-cxx11-cpu-x86_64-linux"

/* commit[]: acme/rc v1.0.0, acme/py v1.0.0, acme/py v2.0.0, acme/big v1.0.0.
 * One cache for the whole group: each test starts from what the one
 * before left (the first get's receipt, the copy it wrote). */
static test_world W;
static char *module, *patched, *big_root;
static int receipt_used, download_used;
static const kernels_system sys_cpu = TEST_SYS_CPU;

static void on_log(kernels_log_level level, const char *msg, void *payload)
{
	(void)payload;
	if (level == KERNELS_LOG_DEBUG && strstr(msg, "unchanged since (receipt)"))
		receipt_used++;
	if (level == KERNELS_LOG_DEBUG && strstr(msg, "hashed at download, unchanged since (receipt)"))
		download_used++;
}

/* Options aimed at the world's Hub and cache, for the CPU system; the
 * library's messages to `log` (NULL: stderr). */
static void options(kernels_options *o, int offline, kernels_log_cb log)
{
	test_world_options(&W, o, &sys_cpu);
	o->offline = offline;
	o->log_cb = log;
}

static int setup(void **state)
{
	kernels_options o;
	kernels_kernel *k = NULL;
	char *so;
	(void)state;

	if (test_world_start(&W, "receipt"))
		return -1;
	test_world_fresh_cache(&W);
	assert_int_equal(fx_publish_answer(W.hub, W.tmp, "acme/rc", "rc", 3, NULL, "--trusted"), 0);
	assert_int_equal(test_world_keep_last(&W, 0), 0);
	assert_true(asprintf(&module, "%s/kernels--acme--rc/snapshots/%s/build/" VARIANT "/_rc_3.abi3.so", W.cache,
			     W.commit[0]) > 0);
	options(&o, 0, NULL);
	assert_int_equal(kernels_get(&k, "acme/rc", "v1.0.0", &o), 0);
	kernels_kernel_close(k);
	/* A module as kernel-builder links one: PyInit_ needs PyModule_Create2, bound now. */
	assert_true(asprintf(&patched, "%s/src-py/build/" VARIANT, W.tmp) > 0);
	assert_int_equal(test_system("mkdir -p '%s'", patched), 0);
	assert_true(asprintf(&so, "%s/_py_5.abi3.so", patched) > 0);
	assert_int_equal(fx_build_so(so, 5, NULL,
				     "typedef struct _object PyObject; extern PyObject *PyModule_Create2(void *, int);"
				     "PyObject *PyInit__py_5(void) { static char d[128]; return PyModule_Create2(d, 3); }",
				     "-Wl,-z,now"), 0);
	free(so);
	assert_int_equal(fx_metadata(patched, "--name py --id _py_5 --backend cpu"), 0);
	free(patched);
	assert_int_equal(test_world_publish(&W, 1, "--repo acme/py --dir '%s/src-py' --branch main --tag v1.0.0 "
					    "--trusted", W.tmp), 0);
	assert_true(asprintf(&patched, "%s/kernels--acme--py/.libkernels/patched", W.cache) > 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	test_world_stop(&W);
	free(module);
	free(patched);
	free(big_root);
	return 0;
}

/* An offline load: KERNELS_* code; *used says whether the receipt spared the hashing. */
static int load(int *used)
{
	kernels_options o;
	kernels_kernel *k = NULL;
	int rc;

	options(&o, 1, on_log);
	receipt_used = 0;
	rc = kernels_get(&k, "acme/rc", "v1.0.0", &o);
	kernels_kernel_close(k);
	*used = receipt_used;
	return rc;
}

static void test_receipt_spares_the_hash(void **state)
{
	int used;
	(void)state;

	assert_int_equal(load(&used), 0);
	assert_int_equal(used, 1); /* the first get wrote it */
	assert_int_equal(load(&used), 0);
	assert_int_equal(used, 1);
}

/* Receipts are flushed before they take their name, so no crash leaves a
 * receipt whose bytes never reached the disk; their folder is not flushed
 * after the rename (a receipt lost in a crash costs one hashing, not a
 * journal commit on every first load). One cut short, or left empty, is
 * no receipt: the files are hashed again and it is written anew. */
static void test_receipt_flushed_before_its_name(void **state)
{
	char *receipts;
	int used;
	(void)state;

	assert_true(asprintf(&receipts, "%s/kernels--acme--rc/.libkernels/receipts/", W.cache) > 0);
	test_rmtree(receipts);
	fsync_log_clear();
	assert_int_equal(load(&used), 0);
	assert_int_equal(used, 0); /* none: hashed, then written */
	assert_true(fsync_log_count(receipts, ".json.tmp-") >= 1);
	assert_int_equal(fsync_log_count(receipts, NULL), fsync_log_count(receipts, ".json.tmp-"));
	assert_int_equal(load(&used), 0);
	assert_int_equal(used, 1);

	assert_int_equal(test_system("find '%s' -name '*.json' | grep -q .", receipts), 0);
	assert_int_equal(test_system("for f in $(find '%s' -name '*.json'); do truncate -s 20 \"$f\"; done",
				     receipts), 0);
	assert_int_equal(load(&used), 0);
	assert_int_equal(used, 0);
	assert_int_equal(test_system("for f in $(find '%s' -name '*.json'); do : > \"$f\"; done", receipts), 0);
	assert_int_equal(load(&used), 0);
	assert_int_equal(used, 0);
	assert_int_equal(load(&used), 0);
	assert_int_equal(used, 1); /* written anew */
	free(receipts);
}

static void test_touched_file_is_hashed_again(void **state)
{
	int used;
	(void)state;

	assert_int_equal(test_system("touch -d '2001-01-01' \"$(readlink -f '%s')\"", module), 0);
	assert_int_equal(load(&used), 0);
	assert_int_equal(used, 0);
	assert_int_equal(load(&used), 0); /* a new receipt for the new identity */
	assert_int_equal(used, 1);
}

static void test_replaced_file_is_hashed_again(void **state)
{
	int used;
	(void)state;

	/* Same bytes, new inode. */
	assert_int_equal(test_system("b=$(readlink -f '%s') && cp -p \"$b\" \"$b.new\" && mv -f \"$b.new\" \"$b\"", module), 0);
	assert_int_equal(load(&used), 0);
	assert_int_equal(used, 0);
	/* metadata.json touched: hashed again too. */
	assert_int_equal(test_system("touch \"$(readlink -f \"$(dirname '%s')/metadata.json\")\"", module), 0);
	assert_int_equal(load(&used), 0);
	assert_int_equal(used, 0);
}

/* A byte rewritten in place with the times put back: the change time still
 * moves, so the file is hashed and refused. */
static void test_rewritten_file_is_refused(void **state)
{
	int used;
	(void)state;

	assert_int_equal(load(&used), 0);
	assert_int_equal(used, 1);
	assert_int_equal(test_system("b=$(readlink -f '%s') && t=$(stat -c %%y \"$b\") && chmod u+w \"$b\" && "
				     "printf 'Z' | dd of=\"$b\" bs=1 seek=200 conv=notrunc 2>/dev/null && "
				     "chmod u-w \"$b\" && touch -d \"$t\" \"$b\"", module), 0);
	assert_int_equal(load(&used), KERNELS_EINTEGRITY);
	assert_int_equal(used, 0);
}

/* ---- Python-free copies ---------------------------------------------------------- */

enum { LOADED = 1, WROTE = 2, REUSED = 4, MAPPED_COPY = 8, IN_MEMORY = 16, NOT_NAMED = 32, NO_HELPER = 64 };
static int copy_events;

static void on_copy_log(kernels_log_level level, const char *msg, void *payload)
{
	(void)level;
	(void)payload;
	if (strstr(msg, "wrote its Python-free copy"))
		copy_events |= WROTE;
	if (strstr(msg, "mapping its Python-free copy") && strstr(msg, "(receipt)"))
		copy_events |= REUSED;
	if (strstr(msg, "mapping an in-memory copy"))
		copy_events |= IN_MEMORY;
	if (strstr(msg, "naming the Python-free copy"))
		copy_events |= NOT_NAMED;
}

/* Whether this process maps a file under the patched folder. */
static int maps_copy(void)
{
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	while (f && fgets(line, sizeof(line), f))
		found |= strstr(line, "/.libkernels/patched/") != NULL;
	if (f)
		fclose(f);
	return found;
}

/* A get of acme/py at `rev` in a fresh child (its module answers
 * `answer`), with no helper thread to be had there if `refuse`: what
 * happened, as the flags above (NO_HELPER: threads were asked for and
 * refused). */
static int load_py_in_child(int offline, const char *rev, int answer, int refuse)
{
	pid_t pid = fork();
	int status = 0;

	assert_true(pid >= 0);
	if (pid == 0) {
		kernels_options o;
		kernels_kernel *k = NULL;
		int (*fn)(void);

		alarm(120); /* a hang guard only */
		options(&o, offline, on_copy_log);
		copy_events = 0;
		thread_fail_refuse(refuse);
		if (kernels_get(&k, "acme/py", rev, &o) == 0 && (*(void **)&fn = kernels_symbol(k, "kernel_answer")) &&
		    fn() == answer)
			copy_events |= LOADED;
		if (maps_copy())
			copy_events |= MAPPED_COPY;
		if (thread_fail_refused())
			copy_events |= NO_HELPER;
		_exit(copy_events);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static int load_py_at(int offline, const char *rev, int answer)
{
	return load_py_in_child(offline, rev, answer, 0);
}

static int load_py(int offline)
{
	return load_py_at(offline, "v1.0.0", 5);
}

static void test_copy_written_once_then_reused(void **state)
{
	(void)state;
	assert_null(dlsym(RTLD_DEFAULT, "PyModule_Create2")); /* no libpython in this process */
	assert_int_equal(load_py(0), LOADED | WROTE | MAPPED_COPY);
	assert_int_equal(load_py(1), LOADED | REUSED | MAPPED_COPY);
	assert_int_equal(load_py(1), LOADED | REUSED | MAPPED_COPY);
	assert_int_equal(test_system("test -f '%s'/*.so && test -f '%s'/*.json", patched, patched), 0);
}

/* A touched copy, one replaced by the same bytes (a new inode), one
 * replaced by another module: each is written again from the verified
 * blob, and the stranger's code never runs. */
static void test_changed_copy_is_redone(void **state)
{
	char *evil, *marker;
	(void)state;

	assert_int_equal(test_system("touch '%s'/*.so", patched), 0);
	assert_int_equal(load_py(1), LOADED | WROTE | MAPPED_COPY);
	assert_int_equal(load_py(1), LOADED | REUSED | MAPPED_COPY);
	assert_int_equal(test_system("c=$(ls '%s'/*.so) && cp -p \"$c\" \"$c.new\" && mv -f \"$c.new\" \"$c\"", patched), 0);
	assert_int_equal(load_py(1), LOADED | WROTE | MAPPED_COPY);
	assert_true(asprintf(&evil, "%s/evil.so", W.tmp) > 0);
	assert_true(asprintf(&marker, "%s/evil.ran", W.tmp) > 0);
	assert_int_equal(fx_build_so(evil, 666, marker, NULL, NULL), 0);
	assert_int_equal(test_system("c=$(ls '%s'/*.so) && cp '%s' \"$c.new\" && mv -f \"$c.new\" \"$c\"", patched, evil), 0);
	assert_int_equal(load_py(1), LOADED | WROTE | MAPPED_COPY);
	assert_int_not_equal(access(marker, F_OK), 0);
	assert_int_equal(load_py(1), LOADED | REUSED | MAPPED_COPY);
	/* A FIFO in the copy's place (opened for reading, it would wait for a
	 * writer forever): written again. */
	assert_int_equal(test_system("c=$(ls '%s'/*.so) && rm -f \"$c\" && mkfifo \"$c\"", patched), 0);
	assert_int_equal(load_py(1), LOADED | WROTE | MAPPED_COPY);
	assert_int_equal(load_py(1), LOADED | REUSED | MAPPED_COPY);
	free(evil);
	free(marker);
}

/* Where the copy cannot be written (here: its folder's name taken by a
 * file; a read-only cache fails the same way), the module still loads,
 * through an in-memory copy, and the next process tries again. */
static void test_unwritable_cache_still_loads(void **state)
{
	(void)state;
	assert_int_equal(test_system("rm -rf '%s' && touch '%s'", patched, patched), 0);
	assert_int_equal(load_py(1), LOADED | IN_MEMORY);
	assert_int_equal(load_py(1), LOADED | IN_MEMORY);
	assert_int_equal(test_system("rm -f '%s'", patched), 0);
	assert_int_equal(load_py(1), LOADED | WROTE | MAPPED_COPY);
}

/* The copy's name taken by a folder (renameat then fails: EISDIR). */
static void take_the_copys_name(void)
{
	assert_int_equal(test_system("c=$(ls '%s'/*.so) && rm -f \"$c\" \"${c%%.so}.json\" && mkdir -p \"$c/x\" && "
				     "echo \"$c\" > '%s/taken'", patched, W.tmp), 0);
}

/* The folder still there, no receipt and no temporary name beside it;
 * then the name freed again. */
static void check_left_unnamed_then_free(void)
{
	assert_int_equal(test_system("c=$(cat '%s/taken') && test -d \"$c/x\" && ! test -e \"${c%%.so}.json\" && "
				     "! ls -A '%s' | grep -q tmp- && rm -rf \"$c\"", W.tmp, patched), 0);
}

/* A copy whose name is taken by a folder (renameat: EISDIR) is written,
 * then cannot be named: the call says so, removes its temporary name,
 * writes no receipt for it, and the module still runs, mapped from the
 * unnamed file. Once the name is free again the next process writes it. */
static void test_copy_that_cannot_be_named(void **state)
{
	(void)state;
	take_the_copys_name();
	assert_int_equal(load_py(1), LOADED | WROTE | MAPPED_COPY | NOT_NAMED);
	check_left_unnamed_then_free();
	assert_int_equal(load_py(1), LOADED | WROTE | MAPPED_COPY);
	assert_int_equal(load_py(1), LOADED | REUSED | MAPPED_COPY);
}

/* Where no helper thread can be had (a pids limit: EAGAIN), what a helper
 * would do is done in line, with the same outcome. A cold get downloads,
 * flushes, writes the copy, names it and writes its receipt before it
 * returns: the next process reuses it. A copy that cannot be named stays
 * mapped unnamed, leaves no temporary name and no receipt, as on a helper. */
static void test_copy_named_without_a_helper(void **state)
{
	(void)state;
	assert_int_equal(test_system("rm -rf '%s/kernels--acme--py'", W.cache), 0);
	assert_int_equal(load_py_in_child(0, "v1.0.0", 5, 1), LOADED | WROTE | MAPPED_COPY | NO_HELPER);
	assert_int_equal(load_py(1), LOADED | REUSED | MAPPED_COPY);
	take_the_copys_name();
	assert_int_equal(load_py_in_child(1, "v1.0.0", 5, 1), LOADED | WROTE | MAPPED_COPY | NOT_NAMED | NO_HELPER);
	check_left_unnamed_then_free();
	assert_int_equal(load_py(1), LOADED | WROTE | MAPPED_COPY);
	assert_int_equal(load_py(1), LOADED | REUSED | MAPPED_COPY);
}

/* libkernels cache rm of a revision removes the blobs only it used, and
 * with them their Python-free copies and receipts, and the revision's own
 * records (its variants' receipts, its file listing); the other
 * revision's stay. */
static void test_copy_goes_with_its_blob(void **state)
{
	kernels_options o;
	kernels_cache_removal *rm = NULL;
	char *dir, *so;
	(void)state;

	assert_true(asprintf(&dir, "%s/src-py2/build/" VARIANT, W.tmp) > 0);
	assert_int_equal(test_system("mkdir -p '%s'", dir), 0);
	assert_true(asprintf(&so, "%s/_py_6.abi3.so", dir) > 0);
	assert_int_equal(fx_build_so(so, 6, NULL,
				     "typedef struct _object PyObject; extern PyObject *PyModule_Create2(void *, int);"
				     "PyObject *PyInit__py_6(void) { static char d[128]; return PyModule_Create2(d, 3); }",
				     "-Wl,-z,now"), 0);
	assert_int_equal(fx_metadata(dir, "--name py --id _py_6 --backend cpu"), 0);
	assert_int_equal(test_world_publish(&W, 2, "--repo acme/py --dir '%s/src-py2' --branch main --tag v2.0.0 "
					    "--trusted", W.tmp), 0);
	assert_int_equal(load_py_at(0, "v2.0.0", 6), LOADED | WROTE | MAPPED_COPY);
	assert_int_equal(test_system("test $(ls '%s'/*.so | wc -l) = 2 && test $(ls '%s'/*.json | wc -l) = 2", patched,
				     patched), 0);

	assert_int_equal(test_system("cd '%s/..' && test -d receipts/%s && test -d trees/%s && test -d receipts/%s && "
				     "test -d trees/%s", patched, W.commit[1], W.commit[1], W.commit[2], W.commit[2]), 0);
	options(&o, 0, NULL);
	assert_int_equal(kernels_cache_remove(&rm, "acme/py", "v1.0.0", 0, &o), 0);
	kernels_cache_removal_free(rm);
	assert_int_equal(test_system("test $(ls '%s'/*.so | wc -l) = 1 && test $(ls '%s'/*.json | wc -l) = 1", patched,
				     patched), 0);
	assert_int_equal(test_system("cd '%s/..' && test ! -e receipts/%s && test ! -e trees/%s && test -d receipts/%s "
				     "&& test -d trees/%s", patched, W.commit[1], W.commit[1], W.commit[2], W.commit[2]),
			 0);
	assert_int_equal(load_py_at(1, "v2.0.0", 6), LOADED | REUSED | MAPPED_COPY);
	free(dir);
	free(so);
}

/* ---- download receipts ----------------------------------------------------------- */

static int answer_of(const kernels_kernel *k)
{
	int (*fn)(void);

	*(void **)&fn = kernels_symbol(k, "kernel_answer");
	assert_non_null(fn);
	return fn();
}

/* A get of acme/big: KERNELS_* code; the download receipts used in *used. */
static int load_big(int offline, int *used)
{
	kernels_options o;
	kernels_kernel *k = NULL;
	int rc;

	options(&o, offline, on_log);
	download_used = 0;
	rc = kernels_get(&k, "acme/big", "v1.0.0", &o);
	if (rc == 0)
		assert_int_equal(answer_of(k), 6);
	kernels_kernel_close(k);
	*used = download_used;
	return rc;
}

static void test_download_hash_spares_the_first_load(void **state)
{
	char *dir, *so;
	int used;
	(void)state;

	/* A module of 300 KiB (zeros past its ELF image), published through LFS. */
	assert_true(asprintf(&dir, "%s/src-big/build/" VARIANT, W.tmp) > 0);
	assert_true(asprintf(&so, "%s/_big_6.abi3.so", dir) > 0);
	assert_int_equal(test_system("mkdir -p '%s'", dir), 0);
	assert_int_equal(fx_build_so(so, 6, NULL, NULL, NULL), 0);
	assert_int_equal(test_system("truncate -s 300K '%s'", so), 0);
	assert_int_equal(fx_metadata(dir, "--name big --id _big_6 --backend cpu"), 0);
	assert_int_equal(test_world_publish(&W, 3, "--repo acme/big --dir '%s/src-big' --branch main --tag v1.0.0 "
					    "--trusted --lfs-threshold 65536", W.tmp), 0);
	assert_true(asprintf(&big_root, "%s/kernels--acme--big", W.cache) > 0);

	assert_int_equal(load_big(0, &used), 0);
	assert_int_equal(used, 1); /* the module; the small files are hashed */
	assert_int_equal(test_system("test $(ls '%s/.libkernels/blobs' | wc -l) = 1", big_root), 0);
	free(dir);
	free(so);
}

static void test_download_receipt_does_not_beat_metadata(void **state)
{
	const char *py = "import json, os, sys\n"
			 "p = os.path.realpath(sys.argv[1]); m = json.load(open(p))\n"
			 "m['digest']['files']['_big_6.abi3.so'] = 'A' * 43 + '='\n"
			 "os.chmod(p, 0o644); open(p + '.orig', 'w').write(open(p).read())\n"
			 "open(p, 'w').write(json.dumps(m))\n";
	char *script;
	int used;
	(void)state;

	/* metadata.json now gives the module another sha256: refused, receipt or not. */
	assert_true(asprintf(&script, "%s/redigest.py", W.tmp) > 0);
	assert_int_equal(test_write_file(script, py, strlen(py)), 0);
	assert_int_equal(test_system("rm -rf '%s/.libkernels/receipts' && %s '%s' %s/snapshots/*/build/" VARIANT
				     "/metadata.json", big_root, KERNELS_PYTHON, script, big_root), 0);
	assert_int_equal(load_big(1, &used), KERNELS_EINTEGRITY);
	assert_int_equal(used, 1);
	assert_non_null(strstr(kernels_error_last(), "hash mismatch: _big_6.abi3.so"));

	/* Put back; the module's blob touched: hashed again, and loads. */
	assert_int_equal(test_system("m=$(readlink -f %s/snapshots/*/build/" VARIANT "/metadata.json) && "
				     "cat \"$m.orig\" > \"$m\" && rm \"$m.orig\" && "
				     "touch \"$(readlink -f %s/snapshots/*/build/" VARIANT "/_big_6.abi3.so)\"",
				     big_root, big_root), 0);
	assert_int_equal(load_big(1, &used), 0);
	assert_int_equal(used, 0);
	free(script);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_receipt_spares_the_hash),
		cmocka_unit_test(test_receipt_flushed_before_its_name),
		cmocka_unit_test(test_touched_file_is_hashed_again),
		cmocka_unit_test(test_replaced_file_is_hashed_again),
		cmocka_unit_test(test_rewritten_file_is_refused),
		cmocka_unit_test(test_copy_written_once_then_reused),
		cmocka_unit_test(test_changed_copy_is_redone),
		cmocka_unit_test(test_unwritable_cache_still_loads),
		cmocka_unit_test(test_copy_that_cannot_be_named),
		cmocka_unit_test(test_copy_named_without_a_helper),
		cmocka_unit_test(test_copy_goes_with_its_blob),
		cmocka_unit_test(test_download_hash_spares_the_first_load),
		cmocka_unit_test(test_download_receipt_does_not_beat_metadata),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
