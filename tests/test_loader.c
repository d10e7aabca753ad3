/* The loader: verified variants compiled at test time, dlopen()ed only
 * after verification, shared handles, side-by-side versions, noarch
 * variants, dlopen failures and concurrent loads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>
#include <dlfcn.h>
#include <cmocka.h>

#include "kernels.h"
#include "loader.h"
#include "../tests/data/variants/fixture.h"


/* The loader calls this between verifying a module and opening it to map
 * it (a weak reference in lib/loader.c): armed, it swaps the file there,
 * as another writer of a shared cache could. */
static const char *swap_in, *swap_suffix;
void kernels__test_before_open(const char *path)
{
	size_t n = strlen(path), m = swap_suffix ? strlen(swap_suffix) : 0;
	if (swap_in && (!swap_suffix || (n >= m && !strcmp(path + n - m, swap_suffix)))) {
		assert_int_equal(test_system("cp '%s' '%s.swap' && mv -f '%s.swap' '%s'", swap_in, path, path, path), 0);
		swap_in = NULL;
	}
}

static int answer(const kernels_kernel *k)
{
	int (*fn)(void);
	*(void **)&fn = kernels_symbol(k, "kernel_answer");
	assert_non_null(fn);
	return fn();
}

static void test_load_twice_same_handle(void **state)
{
	char *dir = fx_variant(test_tmp, "one/torch-cpu", "one", 41, NULL), *alias;
	kernels_kernel *a, *b, *c;
	const kernels_metadata *m;
	(void)state;

	assert_non_null(dir);
	assert_int_equal(kernels_load_local(&a, dir, NULL), 0);
	assert_int_equal(answer(a), 41);
	assert_int_equal(kernels_kernel_refcount(a), 1);
	assert_null(kernels_kernel_repo(a));
	assert_null(kernels_kernel_commit(a));
	assert_string_equal(kernels_kernel_variant(a), "torch-cpu");
	assert_non_null(strstr(kernels_kernel_path(a), "/one/torch-cpu"));
	assert_non_null(strstr(kernels_kernel_library(a), "_one_41.abi3.so"));
	m = kernels_kernel_metadata(a);
	assert_string_equal(kernels_metadata_id(m), "_one_41");
	assert_string_equal(kernels_metadata_name(m), "one");
	assert_int_equal(kernels_metadata_version(m), 1);
	assert_string_equal(kernels_metadata_license(m), "Apache-2.0");
	assert_string_equal(kernels_metadata_backend(m), "cpu");

	/* Same folder, spelled differently (a link to it, a /./): same handle. */
	assert_true(asprintf(&alias, "%s/alias", test_tmp) > 0);
	test_system("ln -s '%s' '%s'", dir, alias);
	assert_int_equal(kernels_load_local(&b, dir, NULL), 0);
	assert_ptr_equal(a, b);
	assert_int_equal(kernels_load_local(&c, alias, NULL), 0);
	assert_ptr_equal(a, c);
	assert_int_equal(kernels_kernel_refcount(a), 3);
	kernels_kernel_close(c);
	kernels_kernel_close(b);
	assert_int_equal(kernels_kernel_refcount(a), 1);
	assert_int_equal(answer(a), 41);
	kernels_kernel_close(a);
	kernels_kernel_close(NULL);
	free(alias);
	free(dir);
}

static void test_two_versions_side_by_side(void **state)
{
	char *v1 = fx_variant(test_tmp, "commit1/build/torch-cpu", "twin", 1, NULL);
	char *v2 = fx_variant(test_tmp, "commit2/build/torch-cpu", "twin", 2, NULL);
	kernels__config cfg;
	kernels_kernel *a, *b, **list;
	size_t n, i, seen = 0;
	(void)state;

	assert_int_equal(kernels__config_load(&cfg, NULL), 0);
	assert_int_equal(kernels__loader_open(&cfg, NULL, "org/twin", "1111111111111111111111111111111111111111", NULL, v1,
					      test_tmp, &a), 0);
	assert_int_equal(kernels__loader_open(&cfg, NULL, "org/twin", "2222222222222222222222222222222222222222",
					      "torch-cpu", v2, test_tmp, &b), 0);
	kernels__config_free(&cfg);
	assert_ptr_not_equal(a, b);
	assert_string_equal(kernels_kernel_repo(a), "org/twin");
	assert_string_equal(kernels_kernel_commit(b), "2222222222222222222222222222222222222222");
	assert_int_equal(answer(a), 1);
	assert_int_equal(answer(b), 2);

	assert_int_equal(kernels_kernel_list(&list, &n), 0);
	for (i = 0; i < n; i++) {
		seen += list[i] == a || list[i] == b;
		kernels_kernel_close(list[i]);
	}
	free(list);
	assert_int_equal(seen, 2);

	kernels_kernel_close(a);
	assert_int_equal(answer(b), 2);
	assert_int_equal(kernels_kernel_list(&list, &n), 0);
	for (i = 0; i < n; i++) {
		assert_ptr_not_equal(list[i], a);
		kernels_kernel_close(list[i]);
	}
	free(list);
	kernels_kernel_close(b);
	free(v1);
	free(v2);
}

/* A handle already loaded is found by its folder's real path before `root`
 * is resolved: a root that no longer resolves is only refused by a load. */
static void test_registry_hit_leaves_root_alone(void **state)
{
	char *dir = fx_variant(test_tmp, "hit/build/torch-cpu", "hit", 7, NULL), *root;
	kernels__config cfg;
	kernels_kernel *a, *b, *c;
	(void)state;

	assert_non_null(dir);
	assert_true(asprintf(&root, "%s/hit-root", test_tmp) > 0);
	assert_int_equal(test_system("ln -s '%s/hit' '%s'", test_tmp, root), 0);
	assert_int_equal(kernels__config_load(&cfg, NULL), 0);
	assert_int_equal(kernels__loader_open(&cfg, NULL, "org/hit", NULL, NULL, dir, root, &a), 0);
	assert_int_equal(unlink(root), 0);
	assert_int_equal(kernels__loader_open(&cfg, NULL, "org/hit", NULL, NULL, dir, root, &b), 0);
	assert_ptr_equal(a, b);
	assert_int_equal(kernels_kernel_refcount(a), 2);
	kernels_kernel_close(b);
	kernels_kernel_close(a);
	assert_int_equal(kernels__loader_open(&cfg, NULL, "org/hit", NULL, NULL, dir, root, &c), KERNELS_EIO);
	assert_null(c);
	kernels__config_free(&cfg);
	free(root);
	free(dir);
}

static void test_tampered_never_loaded(void **state)
{
	char *marker, *dir, *so;
	kernels_kernel *k = (kernels_kernel *)1;
	(void)state;

	assert_true(asprintf(&marker, "%s/tampered.marker", test_tmp) > 0);
	dir = fx_variant(test_tmp, "tampered/torch-cpu", "tampered", 7, marker);
	assert_non_null(dir);
	/* Swap the module for another build after the digest was taken. */
	assert_true(asprintf(&so, "%s/_tampered_7.abi3.so", dir) > 0);
	assert_int_equal(fx_build_so(so, 666, marker, NULL, NULL), 0);
	assert_int_equal(kernels_load_local(&k, dir, NULL), KERNELS_EINTEGRITY);
	assert_null(k);
	assert_non_null(strstr(kernels_error_last(), "hash mismatch: _tampered_7.abi3.so"));
	assert_non_null(strstr(kernels_error_last(), "variant 'torch-cpu'"));
	assert_false(test_exists(marker));

	/* An extra native file also blocks loading. */
	assert_int_equal(fx_metadata(dir, "--name tampered --id _tampered_7"), 0);
	test_system("cp '%s' '%s/other.so'", so, dir);
	assert_int_equal(kernels_load_local(&k, dir, NULL), KERNELS_EINTEGRITY);
	assert_non_null(strstr(kernels_error_last(), "unknown file: other.so"));
	assert_false(test_exists(marker));

	/* Once the metadata matches, it loads and the constructor runs. */
	assert_int_equal(fx_metadata(dir, "--name tampered --id _tampered_7"), 0);
	assert_int_equal(kernels_load_local(&k, dir, NULL), 0);
	assert_true(test_exists(marker));
	assert_int_equal(answer(k), 666);
	assert_string_equal(strrchr(kernels_kernel_library(k), '/'), "/_tampered_7.abi3.so");
	kernels_kernel_close(k);
	free(so);
	free(dir);
	free(marker);
}

static void test_noarch(void **state)
{
	char *dir;
	kernels_kernel *k;
	(void)state;

	assert_true(asprintf(&dir, "%s/noarch/torch-universal", test_tmp) > 0);
	test_system("mkdir -p '%s/noarchk' && echo 'x = 1' > '%s/__init__.py' && echo 'y = 2' > '%s/noarchk/__init__.py'",
		    dir, dir, dir);
	assert_int_equal(fx_metadata(dir, "--name noarchk --backend cuda"), 0);
	assert_int_equal(kernels_load_local(&k, dir, NULL), 0);
	assert_null(kernels_kernel_library(k));
	assert_non_null(strstr(kernels_kernel_path(k), "torch-universal"));
	assert_string_equal(kernels_metadata_name(kernels_kernel_metadata(k)), "noarchk");
	assert_null(kernels_symbol(k, "kernel_answer"));
	assert_int_equal(kernels_error_last_code(), KERNELS_ELOAD);
	assert_non_null(strstr(kernels_error_last(), "no native code"));
	assert_non_null(strstr(kernels_error_last(), "kernel_answer"));
	kernels_kernel_close(k);
	free(dir);
}

static void test_module_choice(void **state)
{
	char *dir, *p;
	kernels_kernel *k;
	(void)state;

	/* Two modules at the top: the one named after the id wins. */
	dir = fx_variant(test_tmp, "choice/torch-cpu", "choice", 5, NULL);
	assert_true(asprintf(&p, "%s/helper.so", dir) > 0);
	assert_int_equal(fx_build_so(p, 99, NULL, NULL, NULL), 0);
	assert_int_equal(fx_metadata(dir, "--name choice --id _choice_5"), 0);
	assert_int_equal(kernels_load_local(&k, dir, NULL), 0);
	assert_int_equal(answer(k), 5);
	kernels_kernel_close(k);
	/* ... and with no module named after it, the choice is refused. */
	assert_int_equal(fx_metadata(dir, "--name choice --id _other_id"), 0);
	assert_int_equal(kernels_load_local(&k, dir, NULL), KERNELS_ELOAD);
	assert_non_null(strstr(kernels_error_last(), "several native modules"));
	free(p);
	free(dir);

	/* The module inside the {name}/ package folder. */
	assert_true(asprintf(&dir, "%s/pkgmod/torch-cpu", test_tmp) > 0);
	assert_true(asprintf(&p, "%s/pkg_mod/_pkg_mod_x.abi3.so", dir) > 0);
	test_system("mkdir -p '%s/pkg_mod'", dir);
	assert_int_equal(fx_build_so(p, 12, NULL, NULL, NULL), 0);
	assert_int_equal(fx_metadata(dir, "--name pkg-mod"), 0);
	assert_int_equal(kernels_load_local(&k, dir, NULL), 0);
	assert_int_equal(answer(k), 12);
	assert_null(kernels_symbol(k, "no_such_function"));
	assert_non_null(strstr(kernels_error_last(), "no_such_function"));
	assert_non_null(strstr(kernels_error_last(), "not exported"));
	kernels_kernel_close(k);
	free(p);
	free(dir);
}

static void test_dlopen_failures(void **state)
{
	char *dir, *so, *dep, *flags;
	kernels_kernel *k;
	(void)state;

	/* A module needing a library this process cannot find. */
	assert_true(asprintf(&dir, "%s/needs-lib/torch211-cpu-x86_64-linux", test_tmp) > 0);
	assert_true(asprintf(&so, "%s/_needs_lib_1.abi3.so", dir) > 0);
	assert_true(asprintf(&dep, "%s/deps/libkernelsmissingdep.so", test_tmp) > 0);
	test_system("mkdir -p '%s' '%s/deps'", dir, test_tmp);
	assert_int_equal(fx_build_so(dep, 0, NULL, "int missing_dep_fn(void) { return 3; }", NULL), 0);
	assert_true(asprintf(&flags, "-L'%s/deps' -lkernelsmissingdep", test_tmp) > 0);
	assert_int_equal(fx_build_so(so, 1, NULL, "int missing_dep_fn(void); int use_dep(void) { return missing_dep_fn(); }",
				     flags), 0);
	remove(dep);
	assert_int_equal(fx_metadata(dir, "--name needs-lib --id _needs_lib_1"), 0);
	assert_int_equal(kernels_load_local(&k, dir, NULL), KERNELS_ELOAD);
	assert_null(k);
	assert_non_null(strstr(kernels_error_last(), "libkernelsmissingdep.so"));
	assert_non_null(strstr(kernels_error_last(), "torch211-cpu-x86_64-linux"));
	free(dir);
	free(so);

	/* A module with an unresolved symbol (as with a torch of the wrong ABI). */
	assert_true(asprintf(&dir, "%s/needs-sym/torch211-cxx11-cpu-x86_64-linux", test_tmp) > 0);
	assert_true(asprintf(&so, "%s/_needs_sym_1.abi3.so", dir) > 0);
	test_system("mkdir -p '%s'", dir);
	assert_int_equal(fx_build_so(so, 1, NULL,
				     "int _ZN3c106detail14torchCheckFailEPKcS2_jRKSs(void);"
				     "int use_sym(void) { return _ZN3c106detail14torchCheckFailEPKcS2_jRKSs(); }", NULL), 0);
	assert_int_equal(fx_metadata(dir, "--name needs-sym --id _needs_sym_1"), 0);
	assert_int_equal(kernels_load_local(&k, dir, NULL), KERNELS_ELOAD);
	assert_non_null(strstr(kernels_error_last(), "undefined symbol: _ZN3c106detail14torchCheckFail"));
	assert_non_null(strstr(kernels_error_last(), "torch211-cxx11-cpu-x86_64-linux"));
	free(dir);
	free(so);
	free(dep);
	free(flags);
}

/* kernel-builder's PyInit_<name> calls PyModule_Create2 (strong, linked
 * with -z now): no libpython here, yet the module loads and its other
 * symbols work; the reference stays unbound. */
static void test_python_extension_without_python(void **state)
{
	char *dir, *so, *marker;
	kernels_kernel *k = NULL;
	int (*py_init_present)(void);
	(void)state;

	assert_null(dlsym(RTLD_DEFAULT, "PyModule_Create2")); /* this test process has no Python */
	assert_true(asprintf(&dir, "%s/pyext/torch211-cxx11-cpu-x86_64-linux", test_tmp) > 0);
	assert_true(asprintf(&so, "%s/_pyext_7.abi3.so", dir) > 0);
	assert_true(asprintf(&marker, "%s/pyext.loaded", test_tmp) > 0);
	test_system("mkdir -p '%s'", dir);
	assert_int_equal(fx_build_so(so, 7, marker,
				     "typedef struct PyModuleDef PyModuleDef; typedef struct _object PyObject;"
				     "extern PyObject *PyModule_Create2(PyModuleDef *, int);"
				     "extern PyObject _Py_NoneStruct;"
				     "__attribute__((visibility(\"default\"))) PyObject *PyInit__pyext_7(void) {"
				     "  static char def[128]; (void)&_Py_NoneStruct; return PyModule_Create2((PyModuleDef *)def, 3); }"
				     "int py_init_present(void) { return PyInit__pyext_7 != 0; }",
				     "-Wl,-z,now"), 0);
	/* The module as built refuses a plain dlopen in this process. */
	assert_null(dlopen(so, RTLD_NOW | RTLD_LOCAL));
	assert_non_null(strstr(dlerror(), "undefined symbol"));
	assert_int_equal(fx_metadata(dir, "--name pyext --id _pyext_7"), 0);

	assert_int_equal(kernels_load_local(&k, dir, NULL), 0);
	assert_int_equal(answer(k), 7);
	assert_int_equal(access(marker, F_OK), 0); /* constructors ran */
	*(void **)&py_init_present = kernels_symbol(k, "py_init_present");
	assert_non_null(py_init_present);
	assert_int_equal(py_init_present(), 1);
	assert_string_equal(kernels_kernel_library(k), so);
	kernels_kernel_close(k);

	/* Re-get after close: the same mapping, constructors not run again. */
	remove(marker);
	assert_int_equal(kernels_load_local(&k, dir, NULL), 0);
	assert_int_equal(answer(k), 7);
	assert_int_not_equal(access(marker, F_OK), 0);
	kernels_kernel_close(k);
	free(dir);
	free(so);
	free(marker);
}

/* The same with a missing non-Python symbol: still refused at load, named. */
static void test_python_extension_missing_other_symbol(void **state)
{
	char *dir, *so;
	kernels_kernel *k = NULL;
	(void)state;

	assert_true(asprintf(&dir, "%s/pyext-bad/torch211-cxx11-cpu-x86_64-linux", test_tmp) > 0);
	assert_true(asprintf(&so, "%s/_pyext_bad_8.abi3.so", dir) > 0);
	test_system("mkdir -p '%s'", dir);
	assert_int_equal(fx_build_so(so, 8, NULL,
				     "typedef struct _object PyObject; extern PyObject *PyModule_Create2(void *, int);"
				     "PyObject *PyInit__pyext_bad_8(void) { static char d[128]; return PyModule_Create2(d, 3); }"
				     "int _ZN3c1019UndefinedTensorImpl10_singletonE(void);"
				     "int use(void) { return _ZN3c1019UndefinedTensorImpl10_singletonE(); }",
				     "-Wl,-z,now"), 0);
	assert_int_equal(fx_metadata(dir, "--name pyext-bad --id _pyext_bad_8"), 0);
	assert_int_equal(kernels_load_local(&k, dir, NULL), KERNELS_ELOAD);
	assert_null(k);
	assert_non_null(strstr(kernels_error_last(), "undefined symbol: _ZN3c1019UndefinedTensorImpl10_singletonE"));
	assert_non_null(strstr(kernels_error_last(), so)); /* the module, not the in-memory copy */
	assert_null(strstr(kernels_error_last(), "/proc/self/fd"));
	assert_non_null(strstr(kernels_error_last(), "torch211-cxx11-cpu-x86_64-linux"));
	free(dir);
	free(so);
}

/* A module needing a sibling library through $ORIGIN loads from its own
 * folder even when mapped from memory (no libpython here). */
static void test_origin_dependency(void **state)
{
	char *dir, *so, *dep, *flags;
	kernels_kernel *k = NULL;
	int (*fn)(void);
	(void)state;

	assert_true(asprintf(&dir, "%s/origin/torch211-cxx11-cpu-x86_64-linux", test_tmp) > 0);
	assert_true(asprintf(&so, "%s/_origin_9.abi3.so", dir) > 0);
	assert_true(asprintf(&dep, "%s/libkernelsorigindep.so", dir) > 0);
	test_system("mkdir -p '%s'", dir);
	assert_int_equal(fx_build_so(dep, 0, NULL, "int origin_dep_fn(void) { return 42; }", "-Wl,-soname,libkernelsorigindep.so"), 0);
	assert_true(asprintf(&flags, "-Wl,-z,now -L'%s' -lkernelsorigindep -Wl,-rpath,'$ORIGIN'", dir) > 0);
	assert_int_equal(fx_build_so(so, 9, NULL,
				     "typedef struct _object PyObject; extern PyObject *PyModule_Create2(void *, int);"
				     "PyObject *PyInit__origin_9(void) { static char d[128]; return PyModule_Create2(d, 3); }"
				     "int origin_dep_fn(void); int via_dep(void) { return origin_dep_fn(); }", flags), 0);
	assert_int_equal(fx_metadata(dir, "--name origin --id _origin_9"), 0);
	assert_int_equal(kernels_load_local(&k, dir, NULL), 0);
	*(void **)&fn = kernels_symbol(k, "via_dep");
	assert_non_null(fn);
	assert_int_equal(fn(), 42);
	kernels_kernel_close(k);
	free(dir);
	free(so);
	free(dep);
	free(flags);
}

/* What is hashed is what is loaded: a module replaced between its
 * verification and its mapping is refused, and nothing of the replacement
 * runs (its constructor leaves no marker). */
static void test_swap_between_verify_and_load(void **state)
{
	char *dir, *evil, *marker;
	kernels_kernel *k = NULL;
	(void)state;

	assert_true(asprintf(&marker, "%s/swapped.ran", test_tmp) > 0);
	assert_true(asprintf(&evil, "%s/evil.so", test_tmp) > 0);
	assert_int_equal(fx_build_so(evil, 666, marker, NULL, NULL), 0);
	dir = fx_variant(test_tmp, "swap/torch211-cxx11-cpu-x86_64-linux", "swap", 5, NULL);
	assert_non_null(dir);
	swap_in = evil;
	assert_int_equal(kernels_load_local(&k, dir, NULL), KERNELS_EINTEGRITY);
	assert_null(swap_in); /* the hook ran */
	assert_null(k);
	assert_non_null(strstr(kernels_error_last(), "changed between its verification and its loading"));
	assert_int_not_equal(access(marker, F_OK), 0);
	/* The folder now fails its digest, as it should. */
	assert_int_equal(kernels_load_local(&k, dir, NULL), KERNELS_EINTEGRITY);
	assert_int_not_equal(access(marker, F_OK), 0);
	free(dir);
	free(evil);
	free(marker);
}

/* The same for a library of the variant the module needs through $ORIGIN:
 * mapped through its verified descriptor too, so a swap is refused. */
static void test_swap_of_origin_dependency(void **state)
{
	char *dir, *so, *dep, *evil, *marker, *flags;
	kernels_kernel *k = NULL;
	(void)state;

	assert_true(asprintf(&dir, "%s/origin-swap/torch211-cxx11-cpu-x86_64-linux", test_tmp) > 0);
	assert_true(asprintf(&so, "%s/_oswap_11.abi3.so", dir) > 0);
	assert_true(asprintf(&dep, "%s/libkernelsoswapdep.so", dir) > 0);
	assert_true(asprintf(&evil, "%s/libkernelsoswapdep-evil.so", test_tmp) > 0);
	assert_true(asprintf(&marker, "%s/oswap-evil.ran", test_tmp) > 0);
	test_system("mkdir -p '%s'", dir);
	assert_int_equal(fx_build_so(dep, 0, NULL, "int oswap_fn(void) { return 1; }", "-Wl,-soname,libkernelsoswapdep.so"), 0);
	assert_int_equal(fx_build_so(evil, 0, marker, "int oswap_fn(void) { return 666; }",
				     "-Wl,-soname,libkernelsoswapdep.so"), 0);
	assert_true(asprintf(&flags, "-L'%s' -lkernelsoswapdep -Wl,-rpath,'$ORIGIN'", dir) > 0);
	assert_int_equal(fx_build_so(so, 11, NULL, "int oswap_fn(void); int via(void) { return oswap_fn(); }", flags), 0);
	assert_int_equal(fx_metadata(dir, "--name oswap --id _oswap_11"), 0);
	swap_in = evil;
	swap_suffix = "/libkernelsoswapdep.so";
	assert_int_equal(kernels_load_local(&k, dir, NULL), KERNELS_EINTEGRITY);
	assert_null(swap_in);
	swap_suffix = NULL;
	assert_null(k);
	assert_non_null(strstr(kernels_error_last(), "libkernelsoswapdep.so changed between its verification"));
	assert_int_not_equal(access(marker, F_OK), 0);
	free(dir);
	free(so);
	free(dep);
	free(evil);
	free(marker);
	free(flags);
}

#define THREADS 16
static char *concurrent_dirs[2];
static kernels_kernel *concurrent_got[THREADS];
static int concurrent_answer[THREADS];

static void *load_thread(void *arg)
{
	long i = (long)arg;
	int (*fn)(void);

	if (kernels_load_local(&concurrent_got[i], concurrent_dirs[i % 2], NULL) != 0)
		return NULL;
	*(void **)&fn = kernels_symbol(concurrent_got[i], "kernel_answer");
	concurrent_answer[i] = fn ? fn() : -1;
	return NULL;
}

static void test_concurrent_loads(void **state)
{
	pthread_t t[THREADS];
	long i;
	(void)state;

	concurrent_dirs[0] = fx_variant(test_tmp, "conc/a/torch-cpu", "conc", 100, NULL);
	concurrent_dirs[1] = fx_variant(test_tmp, "conc/b/torch-cpu", "conc", 200, NULL);
	for (i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, load_thread, (void *)i), 0);
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < THREADS; i++) {
		assert_non_null(concurrent_got[i]);
		assert_ptr_equal(concurrent_got[i], concurrent_got[i % 2]);
		assert_int_equal(concurrent_answer[i], i % 2 ? 200 : 100);
	}
	assert_int_equal(kernels_kernel_refcount(concurrent_got[0]), THREADS / 2);
	assert_int_equal(kernels_kernel_refcount(concurrent_got[1]), THREADS / 2);
	for (i = 0; i < THREADS; i++)
		kernels_kernel_close(concurrent_got[i]);
	free(concurrent_dirs[0]);
	free(concurrent_dirs[1]);
}

static void test_build_tree(void **state)
{
	char *repo, *v, *p;
	kernels_options opts;
	kernels_system sys = { 0 };
	kernels_kernel *k;
	(void)state;

	assert_true(asprintf(&repo, "%s/tree", test_tmp) > 0);
	assert_true(asprintf(&p, "%s/build", repo) > 0);
	free(fx_variant(p, "torch-cpu", "tree", 1, NULL));
	free(fx_variant(p, "torch211-cu130-x86_64-linux", "tree", 2, NULL));
	free(fx_variant(p, "torch211-cu128-x86_64-linux", "tree", 3, NULL));
	free(fx_variant(p, "torch-cuda", "tree", 4, NULL));
	test_system("mkdir -p '%s/not-a-variant' && touch '%s/README.md'", p, repo);
	/* cu130 supports only sm_100: skipped on an sm_90 machine */
	assert_true(asprintf(&v, "%s/torch211-cu130-x86_64-linux", p) > 0);
	assert_int_equal(fx_metadata(v, "--name tree --id _tree_2 --backend cuda --archs 10.0"), 0);

	kernels_options_init(&opts, KERNELS_OPTIONS_VERSION);
	opts.system = &sys;
	sys.backend = "cpu";
	assert_int_equal(kernels_load_local(&k, repo, &opts), 0);
	assert_string_equal(kernels_kernel_variant(k), "torch-cpu");
	assert_int_equal(answer(k), 1);
	kernels_kernel_close(k);

	sys.backend = "cuda";
	sys.backend_version = 1300;
	sys.torch_version = 211;
	sys.torch_cxx11_abi = 1;
	sys.gpu_count = 1;
	sys.gpu_archs[0] = 100;
	assert_int_equal(kernels_load_local(&k, p, &opts), 0); /* the build/ folder itself */
	assert_string_equal(kernels_kernel_variant(k), "torch211-cu130-x86_64-linux");
	assert_int_equal(answer(k), 2);
	kernels_kernel_close(k);

	sys.gpu_archs[0] = 90;
	assert_int_equal(kernels_load_local(&k, repo, &opts), 0);
	assert_string_equal(kernels_kernel_variant(k), "torch-cuda");
	assert_int_equal(answer(k), 4);
	kernels_kernel_close(k);

	sys.backend_version = 1208;
	assert_int_equal(kernels_load_local(&k, repo, &opts), 0);
	assert_string_equal(kernels_kernel_variant(k), "torch211-cu128-x86_64-linux");
	assert_int_equal(answer(k), 3);
	kernels_kernel_close(k);

	sys.backend = "rocm";
	sys.backend_version = 603;
	assert_int_equal(kernels_load_local(&k, repo, &opts), KERNELS_ENOMATCH);
	assert_null(k);
	assert_non_null(strstr(kernels_error_last(), "no build variant of"));
	assert_non_null(strstr(kernels_error_last(),
			       "torch211-cu128-x86_64-linux: backend (cu128) does not match selected backend (rocm63)"));
	assert_non_null(strstr(kernels_error_last(), "torch-cuda: backend (cuda) does not match system backend (rocm)"));
	assert_non_null(strstr(kernels_error_last(), "not-a-variant: invalid build variant"));
	free(v);
	free(p);
	free(repo);
}

static void test_bad_arguments(void **state)
{
	kernels_kernel *k;
	(void)state;
	assert_int_equal(kernels_load_local(NULL, test_tmp, NULL), KERNELS_EINVAL);
	assert_int_equal(kernels_load_local(&k, NULL, NULL), KERNELS_EINVAL);
	assert_int_equal(kernels_load_local(&k, "/nonexistent/variant", NULL), KERNELS_ENOTFOUND);
	assert_null(kernels_symbol(NULL, "x"));
	assert_int_equal(kernels_kernel_list(NULL, NULL), KERNELS_EINVAL);
}

/* A module's tvm-ffi functions, as kernels_tvm_ffi_function lists them when
 * a name is missing (read from its dynamic symbol table by elffile.c):
 * defined global or weak functions named __tvm_ffi_<name>, not tvm-ffi's own
 * __tvm_ffi__* entries, not hidden ones, not references to another module. */
static void test_tvm_ffi_exports_listed(void **state)
{
	char *dir, *so;
	kernels_kernel *k;
	void *fn;
	const char *m;
	(void)state;

	dir = fx_variant(test_tmp, "tvmx/tvm-ffi01-cpu-x86_64-linux", "tvmx", 3, NULL);
	assert_non_null(dir);
	assert_true(asprintf(&so, "%s/_tvmx_3.abi3.so", dir) > 0);
	assert_int_equal(fx_build_so(so, 3, NULL,
				     "int __tvm_ffi_add(void) { return 1; }\n"
				     "__attribute__((weak)) int __tvm_ffi_weakly(void) { return 2; }\n"
				     "int __tvm_ffi__library_ctx(void) { return 0; }\n"
				     "__attribute__((visibility(\"hidden\"))) int __tvm_ffi_hidden(void) { return 0; }\n"
				     "__attribute__((weak)) int __tvm_ffi_elsewhere(void);\n"
				     "int __tvm_ffi_data = 4;\n"
				     "void *use_elsewhere(void) { return (void *)__tvm_ffi_elsewhere; }\n",
				     NULL), 0);
	assert_int_equal(fx_metadata(dir, "--name tvmx --id _tvmx_3 --backend cpu"), 0);
	assert_int_equal(kernels_load_local(&k, dir, NULL), 0);
	assert_int_equal(kernels_tvm_ffi_function(&fn, k, "add"), 0);
	assert_non_null(fn);
	assert_int_equal(kernels_tvm_ffi_function(&fn, k, "sub"), KERNELS_ENOTFOUND);
	assert_null(fn);
	m = kernels_error_last();
	assert_non_null(strstr(m, "no tvm-ffi function 'sub'"));
	assert_non_null(strstr(m, "its functions are: "));
	assert_non_null(strstr(m, "add"));
	assert_non_null(strstr(m, "weakly"));
	assert_null(strstr(m, "library_ctx"));
	assert_null(strstr(m, "hidden"));
	assert_null(strstr(m, "elsewhere"));
	assert_null(strstr(m, "data"));
	kernels_kernel_close(k);
	free(so);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_twice_same_handle),
		cmocka_unit_test(test_two_versions_side_by_side),
		cmocka_unit_test(test_registry_hit_leaves_root_alone),
		cmocka_unit_test(test_tampered_never_loaded),
		cmocka_unit_test(test_noarch),
		cmocka_unit_test(test_module_choice),
		cmocka_unit_test(test_dlopen_failures),
		cmocka_unit_test(test_python_extension_without_python),
		cmocka_unit_test(test_python_extension_missing_other_symbol),
		cmocka_unit_test(test_origin_dependency),
		cmocka_unit_test(test_swap_between_verify_and_load),
		cmocka_unit_test(test_swap_of_origin_dependency),
		cmocka_unit_test(test_concurrent_loads),
		cmocka_unit_test(test_build_tree),
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_tvm_ffi_exports_listed),
	};
	return cmocka_run_group_tests(tests, test_tmp_setup, test_tmp_teardown);
}
