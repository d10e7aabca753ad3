/* The project manifest ([tool.kernels.dependencies]) and kernel-status.toml. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernels.h"
#include "kernels/manifest.h"
#include "manifest.h"
#include "testutil.h"

#define DATA KERNELS_SOURCE_DIR "/tests/data/pyproject"

static kernels_manifest *load_ok(const char *text)
{
	kernels_manifest *m = NULL;
	if (kernels_manifest_load_string(&m, text, strlen(text), "pyproject.toml") != 0)
		fail_msg("refused: %s\n--\n%s", kernels_error_last(), text);
	return m;
}

static void load_bad(const char *text, int code, const char *what)
{
	kernels_manifest *m = NULL;
	int rc = kernels_manifest_load_string(&m, text, strlen(text), "pyproject.toml");
	if (rc != code)
		fail_msg("wanted %d, got %d (%s) for:\n%s", code, rc, kernels_error_last(), text);
	assert_null(m);
	if (!strstr(kernels_error_last(), what))
		fail_msg("wanted '%s' in: %s", what, kernels_error_last());
}

static void test_real_project_file(void **state)
{
	kernels_manifest *m = NULL;
	const kernels_dependency *d;
	(void)state;
	assert_int_equal(kernels_manifest_load(&m, DATA "/valid/kernels-user-project.toml"), 0);
	assert_int_equal(kernels_manifest_dependency_count(m), 3);
	d = kernels_manifest_dependency_at(m, 0);
	assert_string_equal(d->repo_id, "kernels-community/activation");
	assert_int_equal(d->kind, KERNELS_DEPENDENCY_VERSION);
	assert_int_equal(d->version, 1);
	assert_null(d->specifier);
	assert_int_equal(d->line, 16);
	assert_int_equal(d->col, 1);
	d = kernels_manifest_dependency_at(m, 1);
	assert_string_equal(d->repo_id, "kernels-community/flash-attn");
	assert_int_equal(d->version, 2);
	d = kernels_manifest_dependency_at(m, 2);
	assert_string_equal(d->repo_id, "drbh/img2gray");
	assert_int_equal(d->kind, KERNELS_DEPENDENCY_SPECIFIER);
	assert_string_equal(d->specifier, ">=0.1.2,<0.2.0");
	assert_null(kernels_manifest_dependency_at(m, 3));
	assert_string_equal(kernels_manifest_path(m), DATA "/valid/kernels-user-project.toml");
	kernels_manifest_free(m);
	/* CRLF file with a dependency */
	assert_int_equal(kernels_manifest_load(&m, DATA "/valid/crlf-line-endings.toml"), 0);
	assert_int_equal(kernels_manifest_dependency_count(m), 1);
	assert_string_equal(kernels_manifest_dependency_at(m, 0)->repo_id, "kernels-community/relu");
	kernels_manifest_free(m);
}

static void test_project_folder(void **state)
{
	char *dir = test_mkdtemp("manifest"), path[1024];
	const char *toml = "[project]\nname = \"p\"\n[tool.kernels.dependencies]\n\"a/b\" = 0\n";
	kernels_manifest *m = NULL;
	(void)state;
	assert_int_equal(kernels_manifest_load(&m, dir), KERNELS_ENOTFOUND);
	assert_non_null(strstr(kernels_error_last(), "no pyproject.toml"));
	snprintf(path, sizeof(path), "%s/pyproject.toml", dir);
	assert_int_equal(test_write_file(path, toml, strlen(toml)), 0);
	assert_int_equal(kernels_manifest_load(&m, dir), 0);
	assert_int_equal(kernels_manifest_dependency_count(m), 1);
	assert_int_equal(kernels_manifest_dependency_at(m, 0)->version, 0);
	assert_string_equal(kernels_manifest_path(m), path);
	kernels_manifest_free(m);
	test_rmtree(dir);
	free(dir);
}

static void test_forms(void **state)
{
	kernels_manifest *m;
	(void)state;
	/* dotted keys and inline tables reach the same table */
	m = load_ok("tool.kernels.dependencies.\"a/b\" = 3\n");
	assert_int_equal(kernels_manifest_dependency_count(m), 1);
	assert_int_equal(kernels_manifest_dependency_at(m, 0)->version, 3);
	kernels_manifest_free(m);
	m = load_ok("[tool.kernels]\ndependencies = { \"a/b\" = \"~=1.1\", 'c/d' = 0x10 }\n");
	assert_int_equal(kernels_manifest_dependency_count(m), 2);
	assert_string_equal(kernels_manifest_dependency_at(m, 0)->specifier, "~=1.1");
	assert_int_equal(kernels_manifest_dependency_at(m, 1)->version, 16);
	kernels_manifest_free(m);
	m = load_ok("[tool.kernels.dependencies]\n");
	assert_int_equal(kernels_manifest_dependency_count(m), 0);
	kernels_manifest_free(m);
}

static void test_refused(void **state)
{
	(void)state;
	load_bad("[project]\nname = \"x\"\n", KERNELS_ENOTFOUND, "no [tool.kernels.dependencies]");
	load_bad("[tool.kernels]\nother = 1\n", KERNELS_ENOTFOUND, "no [tool.kernels.dependencies]");
	load_bad("[tool.kernels.dependencies]\n\"a/b\" = 1.0\n", KERNELS_EPARSE,
		 "pyproject.toml:2:9: the version of 'a/b' is a float; expected an integer major version");
	load_bad("[tool.kernels.dependencies]\n\"a/b\" = true\n", KERNELS_EPARSE, "2:9: the version of 'a/b' is a boolean");
	load_bad("[tool.kernels.dependencies]\n\"a/b\" = [1]\n", KERNELS_EPARSE, "2:9: the version of 'a/b' is an array");
	load_bad("[tool.kernels.dependencies]\n\"a/b\" = { version = 1 }\n", KERNELS_EPARSE, "is an inline table");
	load_bad("[tool.kernels.dependencies]\n\"a/b\" = 2024-01-01\n", KERNELS_EPARSE, "is a date/time");
	load_bad("[tool.kernels.dependencies]\n\"a/b\" = -1\n", KERNELS_EPARSE, "2:9: the version of 'a/b' is -1");
	load_bad("[tool.kernels.dependencies.\"a/b\"]\nversion = 1\n", KERNELS_EPARSE, "is a table");
	load_bad("[tool.kernels.dependencies]\nnoslash = 1\n", KERNELS_EPARSE,
		 "2:1: [tool.kernels.dependencies] key 'noslash' is not a valid repo id");
	load_bad("[tool.kernels.dependencies]\n\"a/../b\" = 1\n", KERNELS_EPARSE, "not a valid repo id");
	load_bad("[tool.kernels.dependencies]\n\"a/b\\u0000c\" = 1\n", KERNELS_EPARSE, "NUL");
	load_bad("tool = 1\n", KERNELS_EPARSE, "1:8: 'tool' is an integer; expected a table");
	load_bad("[tool]\nkernels = \"x\"\n", KERNELS_EPARSE, "'tool.kernels' is a string; expected a table");
	load_bad("[tool.kernels]\ndependencies = []\n", KERNELS_EPARSE, "'tool.kernels.dependencies' is an array");
	load_bad("[tool.kernels.dependencies]\n\"a/b\" = 1\n\"a/b\" = 2\n", KERNELS_EPARSE, "3:1: duplicate key");
	load_bad("[tool.kernels.dependencies\n", KERNELS_EPARSE, "pyproject.toml:1:27:");
}

static void status_ok(const char *text, const char *dest, const char *rev)
{
	kernels__kernel_status s;
	if (kernels__kernel_status_parse(text, strlen(text), "kernel-status.toml", &s) != 0)
		fail_msg("refused: %s", kernels_error_last());
	assert_int_equal(s.kind, KERNELS__STATUS_REDIRECT);
	assert_string_equal(s.destination, dest);
	assert_string_equal(s.revision, rev);
	kernels__kernel_status_clear(&s);
}

static void status_bad(const char *text, const char *what)
{
	kernels__kernel_status s;
	int rc = kernels__kernel_status_parse(text, strlen(text), "kernel-status.toml of org/x", &s);
	assert_int_equal(rc, KERNELS_EPARSE);
	assert_null(s.destination);
	if (!strstr(kernels_error_last(), what))
		fail_msg("wanted '%s' in: %s", what, kernels_error_last());
}

static void test_kernel_status(void **state)
{
	char *text;
	size_t len;
	kernels__kernel_status s;
	(void)state;
	status_ok("kind = \"redirect\"\ndestination = \"org/other\"\nrevision = \"v1\"\n", "org/other", "v1");
	status_ok("kind = 'redirect'\ndestination = 'org/other'\n", "org/other", "main");
	status_ok("# moved\nkind = \"redirect\"\ndestination = \"org/other\"\nreason = \"renamed\"\n[extra]\nx = 1\n",
		  "org/other", "main");
	text = test_read_file(DATA "/valid/kernel-status-redirect.toml", &len);
	assert_non_null(text);
	assert_int_equal(kernels__kernel_status_parse(text, len, NULL, &s), 0);
	assert_string_equal(s.destination, "kernels-community/activation");
	assert_string_equal(s.revision, "v1");
	kernels__kernel_status_clear(&s);
	free(text);

	status_bad("destination = \"org/other\"\n", "has no 'kind'");
	status_bad("kind = \"\"\ndestination = \"org/other\"\n", "has no 'kind'");
	status_bad("kind = \"deprecated\"\n", "1:8: unknown kernel status kind \"deprecated\"");
	status_bad("kind = 1\n", "unknown kernel status kind an integer");
	status_bad("kind = \"redirect\"\n", "needs a non-empty 'destination'");
	status_bad("kind = \"redirect\"\ndestination = \"\"\n", "needs a non-empty 'destination'");
	status_bad("kind = \"redirect\"\ndestination = 5\n", "2:15: 'destination' is an integer; expected a string");
	status_bad("kind = \"redirect\"\ndestination = \"org/x\"\nrevision = [\"v1\"]\n", "'revision' is an array");
	status_bad("kind = \"redirect\"\ndestination = \"org/x\"\nrevision = \"\"\n", "3:12: the redirect 'revision' is empty");
	status_bad("kind = \"redirect\"\ndestination = \"../../etc\"\n", "2:15: the redirect destination '../../etc' is not a valid repo id");
	status_bad("kind = \"redirect\"\nkind = \"redirect\"\n", "kernel-status.toml of org/x:2:1: duplicate key");
	status_bad("kind = redirect\n", "1:8: expected a value");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_project_file),
		cmocka_unit_test(test_project_folder),
		cmocka_unit_test(test_forms),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_kernel_status),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
