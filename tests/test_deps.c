/* Kernel-to-kernel dependencies (metadata.json `kernel-depends`, lib/deps.c)
 * against the local Hub: a kernel with one dependency and a diamond are
 * resolved and loaded dependencies first; a dependent that calls into a
 * dependency without naming it (DT_NEEDED) gets it in the global scope, one
 * that links it by SONAME leaves it local; two commits of one repo and a
 * cycle are refused; LOCAL_KERNELS serves dependencies; `lock` records the
 * transitive set and a locked load offline loads all of it with no
 * request. Modules stay mapped for the process, so each case has its own
 * repos and symbol names. (The same against Python kernels 0.17.2:
 * tests/python/test_deps_kernels.py.) */
#include <dlfcn.h>
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
#include "../tests/data/variants/fixture.h"

#define VARIANT "torch211-cxx11-cpu-x86_64-linux"

static test_world W;
/* {W.tmp}/load.log, where the kernels' constructors write; owned here. */
static char *load_log_path;

/* {tmp}/src-{name}/build/VARIANT with _{name}_1.so: `code` compiled with a
 * constructor appending "{name}\n" to load_log_path, `flags` added to the
 * compiler line; metadata.json with `deps` as kernel-depends (JSON, NULL:
 * none). */
static char *make_kernel(const char *name, const char *code, const char *flags, const char *deps)
{
	char *src, *dir, *so, *c, *text;

	assert_true(asprintf(&src, "%s/src-%s", W.tmp, name) > 0);
	assert_true(asprintf(&dir, "%s/build/" VARIANT, src) > 0);
	assert_true(asprintf(&so, "%s/_%s_1.so", dir, name) > 0);
	assert_true(asprintf(&c, "%s/%s.c", W.tmp, name) > 0);
	assert_true(asprintf(&text,
			     "#include <stdio.h>\n%s\n"
			     "__attribute__((constructor)) static void loaded(void) {\n"
			     "  FILE *f = fopen(\"%s\", \"a\"); if (f) { fputs(\"%s\\n\", f); fclose(f); }\n}\n",
			     code, load_log_path, name) > 0);
	assert_int_equal(test_system("mkdir -p '%s'", dir), 0);
	assert_int_equal(test_write_file(c, text, strlen(text)), 0);
	assert_int_equal(test_system("cc -shared -fPIC -o '%s' '%s' %s", so, c, flags ? flags : ""), 0);
	assert_int_equal(fx_metadata(dir, "--name %s --id _%s_1 --backend cpu%s%s%s", name, name,
				     deps ? " --set 'kernel-depends=" : "", deps ? deps : "", deps ? "'" : ""),
			 0);
	free(text);
	free(c);
	free(so);
	free(dir);
	return src;
}

static void publish(const char *repo, const char *src, const char *refs)
{
	assert_int_equal(test_hub_publish(W.hub, "--repo %s --dir '%s' %s --trusted", repo, src, refs), 0);
}

static void kernel(const char *repo, const char *code, const char *flags, const char *deps)
{
	const char *name = strchr(repo, '/') + 1;
	char *src = make_kernel(name, code, flags, deps);

	publish(repo, src, "--branch main --branch v1 --tag v1.0.0");
	free(src);
}

static void options(kernels_options *o, kernels_system *s)
{
	memset(s, 0, sizeof(*s));
	s->torch_version = 211;
	s->torch_cxx11_abi = 1;
	s->backend = "cpu";
	s->cpu = "x86_64";
	s->os = "linux";
	s->gpu_count = -1;
	s->tvm_ffi_version = -1;
	test_world_options(&W, o, s);
}

static char *load_log(void)
{
	char *s = test_read_file(load_log_path, NULL);
	remove(load_log_path);
	return s ? s : strdup("");
}

static int (*fn(const kernels_kernel *k, const char *name))(void)
{
	void *p = kernels_symbol(k, name);
	assert_non_null(p);
	return (int (*)(void))(uintptr_t)p;
}

static int setup(void **state)
{
	(void)state;
	unsetenv("LOCAL_KERNELS");
	assert_int_equal(test_world_start(&W, "deps"), 0);
	test_world_fresh_cache(&W);
	assert_true(asprintf(&load_log_path, "%s/load.log", W.tmp) > 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	test_world_stop(&W);
	free(load_log_path);
	return 0;
}

#define DEP(repo, v) "{\"repo-id\": \"" repo "\", \"version\": " #v "}"

/* top calls base_value() with no DT_NEEDED on base: only base in the global
 * scope lets it bind (dlopen RTLD_NOW would fail otherwise). */
static void test_one_dependency_made_global(void **state)
{
	kernels_options o;
	kernels_system s;
	kernels_kernel *k = NULL;
	const kernels_kernel *dep;
	char *log;
	(void)state;

	kernel("acme/base", "int base_value(void) { return 7; }", NULL, NULL);
	kernel("acme/top", "extern int base_value(void); int top_value(void) { return base_value() * 6; }", NULL,
	       "[" DEP("acme/base", 1) "]");
	options(&o, &s);
	assert_null(dlsym(RTLD_DEFAULT, "base_value"));
	assert_int_equal(kernels_get(&k, "acme/top", "1", &o), 0);
	assert_int_equal(fn(k, "top_value")(), 42);
	log = load_log();
	assert_string_equal(log, "base\ntop\n"); /* the dependency first */
	free(log);
	assert_int_equal(kernels_kernel_dependency_count(k), 1);
	dep = kernels_kernel_dependency_at(k, 0);
	assert_string_equal(kernels_kernel_repo(dep), "acme/base");
	assert_null(kernels_kernel_dependency_at(k, 1));
	/* the one visibility: base is global now */
	assert_non_null(dlsym(RTLD_DEFAULT, "base_value"));
	/* the metadata says what it needs */
	{
		kernels_kernel_dependency d;
		const kernels_metadata *m = kernels_kernel_metadata(k);
		assert_int_equal(kernels_metadata_kernel_depend_count(m), 1);
		assert_int_equal(kernels_metadata_kernel_depend_at(&d, m, 0), 0);
		assert_string_equal(d.repo_id, "acme/base");
		assert_int_equal(d.version, 1);
		assert_null(d.revision);
		assert_int_equal(kernels_metadata_kernel_depend_at(&d, m, 1), KERNELS_EINVAL);
	}
	/* the dependent holds its dependency: closing it releases both */
	assert_int_equal(kernels_kernel_refcount(dep), 1);
	kernels_kernel_close(k);
}

/* The other visibility: lbase carries a SONAME and ltop names it in
 * DT_NEEDED, so the dynamic linker finds it mapped; nothing goes global. */
static void test_linked_dependency_stays_local(void **state)
{
	kernels_options o;
	kernels_system s;
	kernels_kernel *k = NULL;
	char *src, *flags, *log;
	(void)state;

	src = make_kernel("lbase", "int lbase_value(void) { return 5; }", "-Wl,-soname,_lbase_1.so", NULL);
	publish("acme/lbase", src, "--branch main --branch v1 --tag v1.0.0");
	assert_true(asprintf(&flags, "-L'%s/build/" VARIANT "' -l:_lbase_1.so", src) > 0);
	kernel("acme/ltop", "extern int lbase_value(void); int ltop_value(void) { return lbase_value() + 1; }", flags,
	       "[" DEP("acme/lbase", 1) "]");
	options(&o, &s);
	assert_int_equal(kernels_get(&k, "acme/ltop", "1", &o), 0);
	assert_int_equal(fn(k, "ltop_value")(), 6);
	log = load_log();
	assert_string_equal(log, "lbase\nltop\n");
	assert_null(dlsym(RTLD_DEFAULT, "lbase_value"));
	assert_null(dlsym(RTLD_DEFAULT, "ltop_value"));
	kernels_kernel_close(k);
	free(log);
	free(flags);
	free(src);
}

static void diamond(const char *p)
{
	char code[512], deps[512], repo[64];

	snprintf(repo, sizeof(repo), "acme/%sbase", p);
	snprintf(code, sizeof(code), "int %sbase_value(void) { return 10; }", p);
	kernel(repo, code, NULL, NULL);
	snprintf(deps, sizeof(deps), "[{\"repo-id\": \"acme/%sbase\", \"version\": 1}]", p);
	snprintf(repo, sizeof(repo), "acme/%sleft", p);
	snprintf(code, sizeof(code), "extern int %sbase_value(void); int %sleft_value(void) { return %sbase_value() + 1; }",
		 p, p, p);
	kernel(repo, code, NULL, deps);
	snprintf(repo, sizeof(repo), "acme/%sright", p);
	snprintf(code, sizeof(code), "extern int %sbase_value(void); int %sright_value(void) { return %sbase_value() + 2; }",
		 p, p, p);
	kernel(repo, code, NULL, deps);
	snprintf(deps, sizeof(deps), "[{\"repo-id\": \"acme/%sleft\", \"version\": 1}, {\"repo-id\": \"acme/%sright\", "
		 "\"version\": 1}]", p, p);
	snprintf(repo, sizeof(repo), "acme/%stop", p);
	snprintf(code, sizeof(code), "extern int %sleft_value(void); extern int %sright_value(void);\n"
		 "int %stop_value(void) { return %sleft_value() * 100 + %sright_value(); }", p, p, p, p, p);
	kernel(repo, code, NULL, deps);
}

static void test_diamond(void **state)
{
	kernels_options o;
	kernels_system s;
	kernels_kernel *k = NULL;
	const kernels_kernel *left, *right;
	char *log;
	(void)state;

	diamond("d");
	options(&o, &s);
	assert_int_equal(kernels_get(&k, "acme/dtop", "1", &o), 0);
	assert_int_equal(fn(k, "dtop_value")(), 1112);
	log = load_log();
	assert_string_equal(log, "dbase\ndleft\ndright\ndtop\n"); /* base once, before both */
	free(log);
	assert_int_equal(kernels_kernel_dependency_count(k), 2);
	left = kernels_kernel_dependency_at(k, 0);
	right = kernels_kernel_dependency_at(k, 1);
	assert_string_equal(kernels_kernel_repo(left), "acme/dleft");
	assert_string_equal(kernels_kernel_repo(right), "acme/dright");
	/* one base, shared: the same handle under both */
	assert_ptr_equal(kernels_kernel_dependency_at(left, 0), kernels_kernel_dependency_at(right, 0));
	assert_int_equal(kernels_kernel_refcount(kernels_kernel_dependency_at(left, 0)), 2);
	kernels_kernel_close(k);
}

static void test_conflict_and_cycle(void **state)
{
	kernels_options o;
	kernels_system s;
	kernels_kernel *k = NULL;
	char *src, *log;
	(void)state;

	/* cbase v1 and v2; cleft needs v1, cright v2; ctop needs both. */
	kernel("acme/cbase", "int cbase_value(void) { return 1; }", NULL, NULL);
	src = make_kernel("cbase", "int cbase_value(void) { return 2; }", NULL, NULL);
	publish("acme/cbase", src, "--branch v2 --tag v2.0.0 --parent v1");
	free(src);
	kernel("acme/cleft", "int cleft_value(void) { return 1; }", NULL, "[" DEP("acme/cbase", 1) "]");
	kernel("acme/cright", "int cright_value(void) { return 1; }", NULL, "[" DEP("acme/cbase", 2) "]");
	kernel("acme/ctop", "int ctop_value(void) { return 1; }", NULL,
	       "[" DEP("acme/cleft", 1) ", " DEP("acme/cright", 1) "]");
	options(&o, &s);
	assert_int_equal(kernels_get(&k, "acme/ctop", "1", &o), KERNELS_ENOMATCH);
	assert_null(k);
	assert_non_null(strstr(kernels_error_last(), "dependency conflict"));
	assert_non_null(strstr(kernels_error_last(), "acme/cbase"));
	assert_non_null(strstr(kernels_error_last(), "acme/cleft"));
	assert_non_null(strstr(kernels_error_last(), "acme/cright"));
	/* across calls: cleft loaded cbase v1 in this process ... */
	assert_int_equal(kernels_get(&k, "acme/cleft", "1", &o), 0);
	kernels_kernel_close(k);
	/* ... so cright (cbase v2) is refused */
	assert_int_equal(kernels_get(&k, "acme/cright", "1", &o), KERNELS_ENOMATCH);
	assert_non_null(strstr(kernels_error_last(), "already loaded in this process"));
	log = load_log();
	assert_null(strstr(log, "ctop"));
	assert_null(strstr(log, "cright"));
	free(log);

	/* cyca -> cycb -> cyca */
	kernel("acme/cyca", "int cyca_value(void) { return 1; }", NULL, "[" DEP("acme/cycb", 1) "]");
	kernel("acme/cycb", "int cycb_value(void) { return 1; }", NULL, "[" DEP("acme/cyca", 1) "]");
	assert_int_equal(kernels_get(&k, "acme/cyca", "1", &o), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "cyclic kernel dependency: acme/cyca -> acme/cycb -> acme/cyca"));
	log = load_log();
	assert_string_equal(log, ""); /* nothing of the cycle ran */
	free(log);
}

static void test_local_kernels_serve_dependencies(void **state)
{
	kernels_options o;
	kernels_system s;
	kernels_kernel *k = NULL;
	kernels_variant_trace *t = NULL;
	char *src, *env, *log;
	(void)state;

	/* xbase is not on the Hub at all: LOCAL_KERNELS serves it */
	src = make_kernel("xbase", "int xbase_value(void) { return 3; }", NULL, NULL);
	kernel("acme/xtop", "extern int xbase_value(void); int xtop_value(void) { return xbase_value() + 1; }", NULL,
	       "[" DEP("acme/xbase", 1) "]");
	assert_true(asprintf(&env, "acme/other=/nowhere:acme/xbase=%s", src) > 0);
	setenv("LOCAL_KERNELS", env, 1);
	options(&o, &s);
	assert_int_equal(kernels_has_kernel("acme/xbase", "1", &o), 1);
	assert_int_equal(kernels_get_variants(&t, "acme/xbase", "1", &o), 0);
	assert_string_equal(kernels_variant_trace_chosen(t), VARIANT);
	kernels_variant_trace_free(t);
	assert_int_equal(kernels_get(&k, "acme/xtop", "1", &o), 0);
	assert_int_equal(fn(k, "xtop_value")(), 4);
	assert_string_equal(kernels_kernel_repo(kernels_kernel_dependency_at(k, 0)), "acme/xbase");
	assert_null(kernels_kernel_commit(kernels_kernel_dependency_at(k, 0)));
	kernels_kernel_close(k);
	log = load_log();
	assert_string_equal(log, "xbase\nxtop\n");
	free(log);

	/* a malformed entry is an error, as in Python kernels 0.17 */
	setenv("LOCAL_KERNELS", "acme/xbase", 1);
	assert_int_equal(kernels_get(&k, "acme/xtop", "1", &o), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "invalid LOCAL_KERNELS entry 'acme/xbase'"));
	assert_int_equal(kernels_has_kernel("acme/anything", "1", &o), KERNELS_EINVAL);
	assert_int_equal(kernels_get_variants(&t, "acme/anything", "1", &o), KERNELS_EINVAL);
	unsetenv("LOCAL_KERNELS");
	free(env);
	free(src);
}

/* kernels lock records the transitive set; download then a locked load
 * offline loads all of it without one request. */
static void test_lock_and_offline_locked_load(void **state)
{
	kernels_options o;
	kernels_system s;
	kernels_kernel *k = NULL;
	kernels_lock *lock = NULL;
	test_app app;
	char *log;
	size_t i;
	(void)state;

	diamond("k");
	assert_int_equal(test_app_make(&app, W.tmp, "project", "[tool.kernels.dependencies]\n\"acme/ktop\" = 1\n"), 0);
	options(&o, &s);
	assert_int_equal(kernels_project_lock(app.dir, &o), 0);
	assert_int_equal(kernels_lock_load(&lock, app.lock), 0);
	assert_int_equal(kernels_lock_entry_count(lock), 4);
	{
		static const char *const want[] = { "acme/kbase", "acme/kleft", "acme/kright", "acme/ktop" };
		for (i = 0; i < 4; i++) {
			const kernels_lock_entry *e = kernels_lock_entry_at(lock, i);
			assert_string_equal(e->repo_id, want[i]);
			assert_int_equal(e->request, KERNELS_LOCK_REQUEST_VERSION);
			assert_int_equal(e->version, 1);
		}
	}
	kernels_lock_free(lock);
	assert_int_equal(kernels_project_download(app.dir, 0, &o), 0);
	log = load_log();
	assert_string_equal(log, ""); /* downloaded, nothing loaded */
	free(log);

	test_hub_log_clear(W.hub);
	o.offline = 1;
	assert_int_equal(kernels_load_locked(&k, "acme/ktop", app.lock, &o), 0);
	assert_int_equal(test_hub_log_count(W.hub, NULL, NULL), 0);
	assert_int_equal(fn(k, "ktop_value")(), 1112);
	log = load_log();
	assert_string_equal(log, "kbase\nkleft\nkright\nktop\n");
	free(log);
	kernels_kernel_close(k);
	test_app_free(&app);
}

static void test_locked_dependency_missing(void **state)
{
	kernels_options o;
	kernels_system s;
	kernels_kernel *k = NULL;
	test_app app;
	(void)state;

	diamond("m");
	assert_int_equal(test_app_make(&app, W.tmp, "project-m", "[tool.kernels.dependencies]\n\"acme/mtop\" = 1\n"), 0);
	options(&o, &s);
	assert_int_equal(kernels_project_lock(app.dir, &o), 0);
	assert_int_equal(test_system("python3 -c \"import json,sys; p=sys.argv[1]; l=json.load(open(p)); "
				     "json.dump([e for e in l if e['dependency']['repo-id']!='acme/mright'], "
				     "open(p,'w'), indent=2)\" '%s'", app.lock), 0);
	assert_int_equal(kernels_get_locked(&k, "acme/mtop", app.lock, &o), KERNELS_ENOTFOUND);
	assert_non_null(strstr(kernels_error_last(), "acme/mright (version 1) of acme/mtop is not in the lock file"));
	assert_non_null(strstr(kernels_error_last(), "libkernels lock"));
	free(load_log());
	test_app_free(&app);
}

static char warned[1024];

static void on_warning(kernels_log_level level, const char *msg, void *payload)
{
	(void)payload;
	if (level == KERNELS_LOG_WARNING && strstr(msg, "revision '1'"))
		snprintf(warned, sizeof(warned), "%s", msg);
}

/* revision "1": the ref named 1 when there is one (as Python kernels reads
 * it), with a warning; else the branch v1. */
static void test_revision_one(void **state)
{
	kernels_options o;
	kernels_system s;
	kernels_revision *r = NULL;
	char v1[41], one[41];
	(void)state;

	assert_int_equal(test_hub_publish(W.hub, "--repo acme/rone --text a.txt=1 --branch main --branch v1 --trusted"), 0);
	snprintf(v1, sizeof(v1), "%s", test_hub_last_commit(W.hub));
	options(&o, &s);
	o.log_cb = on_warning;
	warned[0] = '\0';
	assert_int_equal(kernels_revision_resolve(&r, "acme/rone", "1", &o), 0);
	assert_string_equal(kernels_revision_commit(r), v1);
	assert_string_equal(warned, "");
	kernels_revision_free(r);

	assert_int_equal(test_hub_publish(W.hub, "--repo acme/rone --text a.txt=2 --branch 1 --parent v1"), 0);
	snprintf(one, sizeof(one), "%s", test_hub_last_commit(W.hub));
	assert_int_equal(kernels_revision_resolve(&r, "acme/rone", "1", &o), 0);
	assert_string_equal(kernels_revision_commit(r), one);
	assert_non_null(strstr(warned, "revision '1' is the branch of that name"));
	assert_non_null(strstr(warned, "pass \"v1\" for the branch"));
	kernels_revision_free(r);
}

/* No variant of v1 fits, v2 has one: 0.17's hint says so. */
static void test_no_match_hint(void **state)
{
	kernels_options o;
	kernels_system s;
	kernels_kernel *k = NULL;
	char *src;
	(void)state;

	src = make_kernel("hint", "int hint_value(void) { return 1; }", NULL, NULL);
	assert_int_equal(test_system("mv '%s/build/" VARIANT "' '%s/build/torch27-cxx11-cu118-x86_64-linux'", src, src), 0);
	publish("acme/hint", src, "--branch main --branch v1 --tag v1.0.0");
	free(src);
	src = make_kernel("hint2", "int hint_value(void) { return 2; }", NULL, NULL);
	publish("acme/hint", src, "--branch v2 --tag v2.0.0 --parent v1");
	free(src);
	options(&o, &s);
	assert_int_equal(kernels_get(&k, "acme/hint", "1", &o), KERNELS_ENOMATCH);
	assert_non_null(strstr(kernels_error_last(), "torch27-cxx11-cu118-x86_64-linux:")); /* the trace stays */
	assert_non_null(strstr(kernels_error_last(), "However, version v2 of 'acme/hint' has a build compatible with "
				"your system (" VARIANT ")"));
	free(load_log());
}

/* has_kernel as 0.17's: the dependencies must have a variant too. */
static void test_has_kernel_checks_dependencies(void **state)
{
	kernels_options o;
	kernels_system s;
	(void)state;

	options(&o, &s);
	assert_int_equal(kernels_has_kernel("acme/dtop", "1", &o), 1); /* the diamond: all four fit */
	/* needs acme/hint v1, which has only a CUDA 11.8 variant */
	kernel("acme/hneeds", "int hneeds_value(void) { return 1; }", NULL, "[" DEP("acme/hint", 1) "]");
	assert_int_equal(kernels_has_kernel("acme/hneeds", "1", &o), 0);
	/* needs a repo that does not exist */
	kernel("acme/hghost", "int hghost_value(void) { return 1; }", NULL, "[" DEP("acme/nowhere", 1) "]");
	assert_int_equal(kernels_has_kernel("acme/hghost", "1", &o), 0);
	free(load_log());
}

/* A chain of kernel-depends as long as its publisher likes would take a
 * whole resolution per level on the thread's stack: 16 levels load, 17
 * are refused by load and has_kernel alike, naming the chain, with
 * nothing loaded. Noarch kernels (no module), so the chain is cheap. */
static void test_dependency_chain_depth(void **state)
{
	kernels_options o;
	kernels_system s;
	kernels_kernel *k = NULL;
	test_app app;
	char dep[128], *src, *dir, *py;
	int i;
	(void)state;

	for (i = 0; i <= 17; i++) {
		assert_true(asprintf(&src, "%s/src-deep%d", W.tmp, i) > 0);
		assert_true(asprintf(&dir, "%s/build/torch-universal", src) > 0);
		assert_true(asprintf(&py, "%s/__init__.py", dir) > 0);
		assert_int_equal(test_system("mkdir -p '%s'", dir), 0);
		assert_int_equal(test_write_file(py, "", 0), 0);
		snprintf(dep, sizeof(dep), "[{\"repo-id\": \"acme/deep%d\", \"version\": 1}]", i + 1);
		assert_int_equal(fx_metadata(dir, "--name deep%d --id _deep%d --backend cpu%s%s%s", i, i,
					     i < 17 ? " --set 'kernel-depends=" : "", i < 17 ? dep : "",
					     i < 17 ? "'" : ""), 0);
		assert_int_equal(test_hub_publish(W.hub, "--repo acme/deep%d --dir '%s' --branch main --branch v1 "
						  "--tag v1.0.0 --trusted", i, src), 0);
		free(py);
		free(dir);
		free(src);
	}
	options(&o, &s);
	assert_int_equal(kernels_get(&k, "acme/deep0", "1", &o), KERNELS_EINVAL);
	assert_null(k);
	if (!strstr(kernels_error_last(), "deeper than 16") || !strstr(kernels_error_last(), "acme/deep16"))
		fail_msg("the refusal does not say why, or where: %s", kernels_error_last());
	assert_int_equal(kernels_has_kernel("acme/deep0", "1", &o), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "deeper than 16"));
	assert_int_equal(test_app_make(&app, W.tmp, "deep", "[tool.kernels.dependencies]\n\"acme/deep0\" = 1\n"), 0);
	assert_int_equal(kernels_project_lock(app.dir, &o), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "deeper than 16"));
	assert_false(test_exists(app.lock));
	test_app_free(&app);
	assert_int_equal(kernels_has_kernel("acme/deep1", "1", &o), 1);
	assert_int_equal(kernels_get(&k, "acme/deep1", "1", &o), 0);
	assert_int_equal(kernels_kernel_dependency_count(k), 1);
	kernels_kernel_close(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_dependency_made_global),
		cmocka_unit_test(test_linked_dependency_stays_local),
		cmocka_unit_test(test_diamond),
		cmocka_unit_test(test_conflict_and_cycle),
		cmocka_unit_test(test_local_kernels_serve_dependencies),
		cmocka_unit_test(test_lock_and_offline_locked_load),
		cmocka_unit_test(test_locked_dependency_missing),
		cmocka_unit_test(test_revision_one),
		cmocka_unit_test(test_no_match_hint),
		cmocka_unit_test(test_has_kernel_checks_dependencies),
		cmocka_unit_test(test_dependency_chain_depth),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
