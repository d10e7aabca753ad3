/* The metadata.json keys of Python kernels 0.17 beyond the build
 * (lib/metadata.c): accessors for upstream, source, kernels-minver,
 * python-depends, kernel-depends and provenance; a variant needing a newer
 * kernels than KERNELS_COMPAT_KERNELS_VERSION is refused before dlopen,
 * naming both versions. (Agreement with 0.17.2's own parser over a corpus:
 * tests/python/test_metadata_parity.py.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernels.h"
#include "testutil.h"
#include "../tests/data/variants/fixture.h"


static char *variant(const char *tag, int answer, const char *marker, const char *meta_args)
{
	char *dir, *so;

	assert_true(asprintf(&dir, "%s/%s/torch-cpu", test_tmp, tag) > 0);
	assert_true(asprintf(&so, "%s/_meta%s_%d.so", dir, tag, answer) > 0);
	assert_int_equal(test_system("mkdir -p '%s'", dir), 0);
	assert_int_equal(fx_build_so(so, answer, marker, NULL, NULL), 0);
	assert_int_equal(fx_metadata(dir, "--name meta%s --id _meta%s_%d %s", tag, tag, answer, meta_args), 0);
	free(so);
	return dir;
}

static void test_accessors(void **state)
{
	kernels_metadata *m = NULL;
	kernels_provenance p = KERNELS_PROVENANCE_INIT;
	kernels_kernel_dependency d;
	char *dir;
	(void)state;

	dir = variant("a", 1, NULL,
		      "--set 'upstream=\"git@github.com:org/repo.git\"' --set 'source=\"https://github.com/org/src\"' "
		      "--set 'kernels-minver=\" 0.16.02 \"' --set 'python-depends=[\"einops\", \"tvm-ffi\"]' "
		      "--set 'kernel-depends=[{\"repo-id\": \"org/base\", \"version\": 2}, "
		      "{\"repo-id\": \"org/other\", \"revision\": \"main\"}]' "
		      "--set 'provenance={\"kernel-builder\": {\"version\": \"0.17.0\", \"sha\": \"" 
		      "ABCDEFABCDEFABCDEFABCDEFABCDEFABCDEFABCD\", \"dirty\": false}, \"kernel\": {\"commit\": \""
		      "1111111111111111111111111111111111111111\", \"dirty\": true}}'");
	assert_int_equal(kernels_metadata_read(&m, dir), 0);
	assert_string_equal(kernels_metadata_upstream(m), "ssh://git@github.com/org/repo.git"); /* as 0.17.2 */
	assert_string_equal(kernels_metadata_source(m), "https://github.com/org/src");
	assert_string_equal(kernels_metadata_kernels_minver(m), "0.16.2");
	assert_int_equal(kernels_metadata_python_depend_count(m), 2);
	assert_string_equal(kernels_metadata_python_depend_at(m, 1), "tvm-ffi");
	assert_null(kernels_metadata_python_depend_at(m, 2));
	assert_int_equal(kernels_metadata_kernel_depend_count(m), 2);
	assert_int_equal(kernels_metadata_kernel_depend_at(&d, m, 0), 0);
	assert_string_equal(d.repo_id, "org/base");
	assert_int_equal(d.version, 2);
	assert_null(d.revision);
	assert_int_equal(kernels_metadata_kernel_depend_at(&d, m, 1), 0);
	assert_int_equal(d.version, -1);
	assert_string_equal(d.revision, "main");
	assert_int_equal(kernels_metadata_provenance(&p, m), 1);
	assert_string_equal(p.builder_version, "0.17.0");
	assert_string_equal(p.builder_commit, "abcdefabcdefabcdefabcdefabcdefabcdefabcd"); /* "sha", lower-cased */
	assert_int_equal(p.builder_dirty, 0);
	assert_string_equal(p.kernel_commit, "1111111111111111111111111111111111111111");
	assert_int_equal(p.kernel_dirty, 1);
	assert_int_equal(kernels_metadata_dirty(m), 1);
	kernels_metadata_free(m);
	free(dir);

	/* absent keys */
	dir = variant("b", 1, NULL, "");
	assert_int_equal(kernels_metadata_read(&m, dir), 0);
	assert_null(kernels_metadata_upstream(m));
	assert_null(kernels_metadata_source(m));
	assert_null(kernels_metadata_kernels_minver(m));
	assert_int_equal(kernels_metadata_python_depend_count(m), 0);
	assert_int_equal(kernels_metadata_kernel_depend_count(m), 0);
	assert_int_equal(kernels_metadata_provenance(&p, m), 0);
	assert_null(p.builder_version);
	assert_int_equal(p.builder_dirty, -1);
	assert_int_equal(kernels_metadata_provenance(NULL, m), KERNELS_EINVAL);
	kernels_metadata_free(m);
	/* NULL metadata */
	assert_null(kernels_metadata_upstream(NULL));
	assert_int_equal(kernels_metadata_kernel_depend_count(NULL), 0);
	free(dir);
}

static void test_refusals(void **state)
{
	static const struct {
		const char *args, *says;
	} bad[] = {
		{ "--omit python-depends", "'python-depends' is missing" },
		{ "--set 'name=\"Bad_Name\"'", "invalid kernel name 'Bad_Name'" },
		{ "--set 'kernels-minver=\"0.17\"'", "'kernels-minver' must be a version of three numbers" },
		{ "--set 'kernel-depends=[{\"repo-id\": \"a/b\"}]'", "neither version nor revision" },
		{ "--set 'upstream=\"ftp://x/y\"'", "'upstream' is not a git URL" },
	};
	kernels_metadata *m = NULL;
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char tag[16], *dir;
		snprintf(tag, sizeof(tag), "bad%zu", i);
		dir = variant(tag, 1, NULL, bad[i].args);
		assert_int_equal(kernels_metadata_read(&m, dir), KERNELS_EPARSE);
		assert_null(m);
		assert_non_null(strstr(kernels_error_last(), bad[i].says));
		assert_non_null(strstr(kernels_error_last(), "metadata.json"));
		free(dir);
	}
}

static void test_minver(void **state)
{
	kernels_kernel *k = NULL;
	char *dir, *marker;
	(void)state;

	/* as new as libkernels declares: loads */
	dir = variant("ok", 2, NULL, "--set 'kernels-minver=\"" KERNELS_COMPAT_KERNELS_VERSION "\"'");
	assert_int_equal(kernels_load_local(&k, dir, NULL), 0);
	kernels_kernel_close(k);
	free(dir);

	/* newer: refused, and its module never ran */
	assert_true(asprintf(&marker, "%s/minver.ran", test_tmp) > 0);
	dir = variant("new", 3, marker, "--set 'kernels-minver=\"0.18.0\"'");
	assert_int_equal(kernels_load_local(&k, dir, NULL), KERNELS_ELOAD);
	assert_null(k);
	assert_non_null(strstr(kernels_error_last(), "requires kernels>=0.18.0"));
	assert_non_null(strstr(kernels_error_last(), "compatible with kernels " KERNELS_COMPAT_KERNELS_VERSION));
	assert_false(test_exists(marker));
	free(marker);
	free(dir);
}

static char logged[2048];

static void capture(kernels_log_level level, const char *msg, void *payload)
{
	(void)payload;
	if (level == KERNELS_LOG_INFO && strstr(msg, "python-depends"))
		snprintf(logged, sizeof(logged), "%s", msg);
}

/* A C host cannot check python-depends; it says what they are. */
static void test_python_depends_reported(void **state)
{
	kernels_options o;
	kernels_kernel *k = NULL;
	char *dir;
	(void)state;

	dir = variant("py", 4, NULL, "--set 'python-depends=[\"einops\", \"tvm-ffi\"]'");
	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	o.log_cb = capture;
	logged[0] = '\0';
	assert_int_equal(kernels_load_local(&k, dir, &o), 0);
	assert_non_null(strstr(logged, "declares python-depends einops, tvm-ffi"));
	assert_non_null(strstr(logged, "not checked for a C host"));
	kernels_kernel_close(k);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accessors),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_minver),
		cmocka_unit_test(test_python_depends_reported),
	};
	return cmocka_run_group_tests(tests, test_tmp_setup, test_tmp_teardown);
}
