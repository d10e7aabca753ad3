/* metadata.json parsing and digest verification of variant folders. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "kernels.h"
#include "verify.h"
#include "../tests/data/variants/fixture.h"


/* A folder with a few plain files, and its metadata. */
static char *plain_variant(const char *name, const char *meta_args)
{
	char *dir;

	assert_true(asprintf(&dir, "%s/%s", test_tmp, name) > 0);
	test_system("mkdir -p '%s/pkg/__pycache__'", dir);
	test_system("printf 'one' > '%s/a.txt'; printf 'two' > '%s/pkg/b.py'; printf 'x' > '%s/pkg/__pycache__/b.cpython-311.pyc'; "
		    "printf 'y' > '%s/c.pyc'; printf 's' > '%s/metadata.json.sigstore'",
		    dir, dir, dir, dir, dir);
	assert_int_equal(fx_metadata(dir, "--name %s --backend cuda --archs 8.0,9.0+PTX %s", name, meta_args ? meta_args : ""), 0);
	return dir;
}

static void test_good(void **state)
{
	char *dir = plain_variant("good", "--license MIT --version 3");
	kernels_metadata *m;
	(void)state;

	assert_int_equal(kernels_verify_variant(&m, dir, NULL), 0);
	assert_string_equal(kernels_metadata_id(m), "_good_cuda_0000000");
	assert_string_equal(kernels_metadata_name(m), "good");
	assert_int_equal(kernels_metadata_version(m), 3);
	assert_string_equal(kernels_metadata_license(m), "MIT");
	assert_string_equal(kernels_metadata_backend(m), "cuda");
	assert_int_equal(kernels_metadata_arch_count(m), 2);
	assert_string_equal(kernels_metadata_arch_at(m, 1), "9.0+PTX");
	assert_null(kernels_metadata_arch_at(m, 2));
	assert_string_equal(kernels_metadata_archs(m)[0], "8.0");
	assert_null(kernels_metadata_archs(m)[2]);
	assert_int_equal(kernels_metadata_dirty(m), 0);
	/* the files verified: no metadata, no pyc, no __pycache__ */
	assert_int_equal(kernels__metadata_file_count(m), 2);
	assert_string_equal(kernels__metadata_file(m, 0), "a.txt");
	assert_string_equal(kernels__metadata_file(m, 1), "pkg/b.py");
	kernels_metadata_free(m);
	assert_int_equal(kernels_verify_variant(NULL, dir, NULL), 0);

	/* sha512 digests are accepted too */
	assert_int_equal(fx_metadata(dir, "--name good --algorithm sha512"), 0);
	assert_int_equal(kernels_verify_variant(NULL, dir, NULL), 0);
	free(dir);
}

static void test_violations_listed(void **state)
{
	char *dir = plain_variant("bad", NULL);
	const char *msg;
	(void)state;

	test_system("rm '%s/a.txt'; printf 'extra' > '%s/extra.so'; printf 'changed' > '%s/pkg/b.py'", dir, dir, dir);
	assert_int_equal(kernels_verify_variant(NULL, dir, NULL), KERNELS_EINTEGRITY);
	msg = kernels_error_last();
	assert_non_null(strstr(msg, "3 files do not match"));
	assert_non_null(strstr(msg, "missing file: a.txt"));
	assert_non_null(strstr(msg, "unknown file: extra.so"));
	assert_non_null(strstr(msg, "hash mismatch: pkg/b.py"));
	assert_non_null(strstr(msg, "fetch it again"));
	free(dir);
}

static void test_links(void **state)
{
	char *repo, *dir, *outside;
	(void)state;

	/* The cache layout: snapshot files are relative links into blobs/. */
	assert_true(asprintf(&repo, "%s/kernels--org--k", test_tmp) > 0);
	assert_true(asprintf(&dir, "%s/snapshots/c0ffee/build/torch-cpu", repo) > 0);
	test_system("mkdir -p '%s/blobs' '%s' && printf 'blob' > '%s/blobs/e1' && ln -s ../../../../blobs/e1 '%s/f.py'",
		    repo, dir, repo, dir);
	assert_int_equal(fx_metadata(dir, "--name kk"), 0);
	/* Inside the repo folder: fine, and the public call sees the cache
	 * layout itself. Outside a cache layout, a link leaving the variant
	 * folder is refused. */
	assert_int_equal(kernels__verify_variant(NULL, dir, repo, NULL, NULL), 0);
	assert_int_equal(kernels_verify_variant(NULL, dir, NULL), 0);
	{
		char *plain;
		assert_true(asprintf(&plain, "%s/plain/build/torch-cpu", test_tmp) > 0);
		test_system("mkdir -p '%s' && printf 'blob' > '%s/../../e1' && ln -s ../../e1 '%s/f.py'", plain, plain,
			    plain);
		assert_int_equal(fx_metadata(plain, "--name kk"), 0);
		assert_int_equal(kernels_verify_variant(NULL, plain, NULL), KERNELS_EUNSAFE);
		assert_non_null(strstr(kernels_error_last(), "outside"));
		free(plain);
	}

	/* A link escaping the repo folder is refused even with the repo as root. */
	assert_true(asprintf(&outside, "%s/secret", test_tmp) > 0);
	test_write_file(outside, "s", 1);
	test_system("ln -s '%s' '%s/g.py'", outside, dir);
	assert_int_equal(fx_metadata(dir, "--name kk"), 0);
	assert_int_equal(kernels__verify_variant(NULL, dir, repo, "org/k@c0ffee variant torch-cpu", NULL),
			 KERNELS_EUNSAFE);
	assert_non_null(strstr(kernels_error_last(), "g.py"));

	/* A link inside the variant folder itself is fine. */
	test_system("rm '%s/g.py' && printf 'x' > '%s/h.py' && ln -s h.py '%s/i.py'", dir, dir, dir);
	assert_int_equal(fx_metadata(dir, "--name kk"), 0);
	assert_int_equal(kernels__verify_variant(NULL, dir, repo, NULL, NULL), 0);

	/* A dangling link is an integrity failure, not a crash. */
	test_system("ln -s nowhere '%s/j.py'", dir);
	assert_int_equal(kernels__verify_variant(NULL, dir, repo, NULL, NULL), KERNELS_EINTEGRITY);
	free(outside);
	free(repo);
	free(dir);
}

static void test_metadata_keys(void **state)
{
	static const struct { const char *args, *key; } cases[] = {
		{ "--omit id", "'id' is missing" },
		{ "--omit name", "'name' is missing" },
		{ "--omit version", "'version' is missing" },
		{ "--set version='\"1\"'", "'version' must be" },
		{ "--set version=-2", "'version' must be" },
		{ "--omit license", "'license' is missing" },
		{ "--set license=7", "'license' must be" },
		{ "--omit backend", "'backend' is missing" },
		{ "--set backend='\"cuda\"'", "'backend' must be" },
		{ "--omit backend.type", "'backend.type' is missing" },
		{ "--set backend.type='\"quantum\"'", "'backend.type' is not one of" },
		{ "--set backend.archs='\"8.0\"'", "'backend.archs' must be" },
		{ "--set backend.archs='[8.0]'", "'backend.archs' must be" },
		{ "--omit digest.files", "'digest.files' is missing" },
		{ "--set digest.algorithm='\"md5\"'", "'digest.algorithm' must be" },
		{ "--set digest.files='{\"a.txt\": 1}'", "'digest.files' must map" },
	};
	char *dir = plain_variant("keys", NULL);
	kernels_metadata *m = (kernels_metadata *)1;
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(fx_metadata(dir, "--name keys %s", cases[i].args), 0);
		assert_int_equal(kernels_verify_variant(&m, dir, NULL), KERNELS_EPARSE);
		assert_null(m);
		if (!strstr(kernels_error_last(), cases[i].key))
			fail_msg("%s: message '%s' lacks \"%s\"", cases[i].args, kernels_error_last(), cases[i].key);
		assert_non_null(strstr(kernels_error_last(), "metadata.json"));
	}
	/* A metadata.json over 1 MiB is refused before it is parsed. */
	{
		char *p;
		assert_true(asprintf(&p, "%s/metadata.json", dir) > 0);
		assert_int_equal(test_system("printf '{\"id\": \"' > '%s' && head -c 1100000 /dev/zero | tr '\\0' x >> '%s' && "
					     "printf '\"}' >> '%s'", p, p, p), 0);
		assert_int_equal(kernels_verify_variant(&m, dir, NULL), KERNELS_EPARSE);
		assert_non_null(strstr(kernels_error_last(), "more than the 1048576"));
		free(p);
	}
	/* A build from before digests: a local folder loads unverified (a
	 * warning says so), as the Python client loads it. */
	assert_int_equal(fx_metadata(dir, "--name keys --omit digest"), 0);
	assert_int_equal(kernels_verify_variant(&m, dir, NULL), 0);
	assert_int_equal(kernels_metadata_version(m), 1);
	kernels_metadata_free(m);
	/* archs may be absent (unknown) */
	assert_int_equal(fx_metadata(dir, "--name keys --omit backend.archs"), 0);
	assert_int_equal(kernels_metadata_read(&m, dir), 0);
	assert_int_equal(kernels_metadata_arch_count(m), 0);
	assert_null(kernels_metadata_archs(m));
	kernels_metadata_free(m);

	{
		char *p;
		assert_true(asprintf(&p, "%s/metadata.json", dir) > 0);
		test_write_file(p, "{\"id\": ", 7);
		assert_int_equal(kernels_metadata_read(&m, dir), KERNELS_EPARSE);
		assert_non_null(strstr(kernels_error_last(), "not valid JSON"));
		test_write_file(p, "[1]", 3);
		assert_int_equal(kernels_metadata_read(&m, dir), KERNELS_EPARSE);
		remove(p);
		assert_int_equal(kernels_verify_variant(NULL, dir, NULL), KERNELS_ENOTFOUND);
		assert_non_null(strstr(kernels_error_last(), "metadata.json"));
		free(p);
	}
	assert_int_equal(kernels_verify_variant(NULL, "/nonexistent/variant", NULL), KERNELS_ENOTFOUND);
	free(dir);
}

static int dirty_warnings;
static char dirty_msg[1024];
static void on_log(kernels_log_level level, const char *msg, void *payload)
{
	(void)payload;
	if (level == KERNELS_LOG_WARNING && strstr(msg, "dirty")) {
		dirty_warnings++;
		snprintf(dirty_msg, sizeof(dirty_msg), "%s", msg);
	}
}

static void test_dirty_warning(void **state)
{
	char *dir = plain_variant("dirty", "--dirty");
	kernels_options opts;
	kernels_metadata *m;
	(void)state;

	kernels_options_init(&opts, KERNELS_OPTIONS_VERSION);
	opts.log_cb = on_log;
	dirty_warnings = 0;
	assert_int_equal(kernels_verify_variant(&m, dir, &opts), 0);
	assert_int_equal(kernels_metadata_dirty(m), 1);
	assert_int_equal(dirty_warnings, 1);
	assert_non_null(strstr(dirty_msg, "kernel-builder"));
	assert_non_null(strstr(dirty_msg, "'dirty'"));
	kernels_metadata_free(m);
	free(dir);

	dir = plain_variant("clean", NULL);
	assert_int_equal(kernels_verify_variant(NULL, dir, &opts), 0);
	assert_int_equal(dirty_warnings, 1);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_violations_listed),
		cmocka_unit_test(test_links),
		cmocka_unit_test(test_metadata_keys),
		cmocka_unit_test(test_dirty_warning),
	};
	return cmocka_run_group_tests(tests, test_tmp_setup, test_tmp_teardown);
}
