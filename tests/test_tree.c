/* A tree listing as data (lib/tree.c): path safety, a JSON page read into
 * entries, the listing's checks, lookups in the sorted result. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "kernels.h"
#include "tree.h"

static void test_path_check(void **state)
{
	static const char *ok[] = { "build/v/a.so", "build/v/x/y/__init__.py", "a", "build/v/..hidden", "b/ü.txt" };
	static const char *bad[] = { "", "/etc/passwd", "build/../x", "..", "build/v/..", "a//b", "a/./b", "a/",
				     "a\\b", "a\nb", "a\x01", "a\x7f" };
	size_t i;
	(void)state;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		assert_int_equal(kernels__repo_path_check(ok[i]), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(kernels__repo_path_check(bad[i]), KERNELS_EUNSAFE);
	assert_non_null(strstr(kernels_error_last(), "refusing"));
}

#define OID "0123456789abcdef0123456789abcdef01234567"
#define OID2 "1123456789abcdef0123456789abcdef01234567"
#define SHA "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* Reads `json` (one page) under `prefix` into a fresh tree and checks it. */
static int read_page(const char *json, const char *prefix, kernels__tree *t)
{
	json_t *page = json_loads(json, 0, NULL);
	int rc;

	assert_non_null(page);
	memset(t, 0, sizeof(*t));
	rc = kernels__tree_append_json(page, prefix, "test", 100, t);
	if (rc == 0)
		rc = kernels__tree_check(t, "test");
	json_decref(page);
	return rc;
}

static void test_page_sorted_and_found(void **state)
{
	kernels__tree t;
	size_t first, count;
	(void)state;
	assert_int_equal(read_page("[{\"type\":\"file\",\"path\":\"build/v/b.so\",\"oid\":\"" OID "\",\"size\":3,"
				   "\"lfs\":{\"oid\":\"" SHA "\",\"size\":3}},"
				   "{\"type\":\"directory\",\"path\":\"build/v\",\"oid\":\"" OID "\"},"
				   "{\"type\":\"file\",\"path\":\"build/v/a.py\",\"oid\":\"" OID "\",\"size\":1}]",
				   "build", &t), 0);
	assert_int_equal(t.n, 3);
	assert_string_equal(t.entries[0].path, "build/v");
	assert_string_equal(t.entries[1].path, "build/v/a.py");
	assert_string_equal(kernels__tree_find(&t, "build/v/b.so")->lfs_sha256, SHA);
	assert_null(kernels__tree_find(&t, "build/v/c"));
	kernels__tree_range(&t, "build/v", &first, &count);
	assert_int_equal(first, 1);
	assert_int_equal(count, 2);
	kernels__tree_free(&t);
}

/* A hostile or malformed page is refused as a whole, with a message. */
static void test_page_refused(void **state)
{
	static const struct {
		const char *json;
		int rc;
	} bad[] = {
		{ "[{\"type\":\"file\",\"path\":\"other/a\",\"oid\":\"" OID "\",\"size\":1}]", KERNELS_EUNSAFE },
		{ "[{\"type\":\"file\",\"path\":\"build/a\",\"oid\":\"" OID "\",\"size\":1},"
		  "{\"type\":\"file\",\"path\":\"build/a\",\"oid\":\"" OID "\",\"size\":1}]", KERNELS_EPARSE },
		{ "[{\"type\":\"file\",\"path\":\"build/a\",\"oid\":\"" OID "\",\"size\":1},"
		  "{\"type\":\"file\",\"path\":\"build/a/b\",\"oid\":\"" OID "\",\"size\":1}]", KERNELS_EUNSAFE },
		{ "[{\"type\":\"file\",\"path\":\"build/a\",\"oid\":\"xyz\",\"size\":1}]", KERNELS_EPARSE },
		/* one blob, two sizes: by the git oid, and by the LFS hash */
		{ "[{\"type\":\"file\",\"path\":\"build/a\",\"oid\":\"" OID "\",\"size\":1},"
		  "{\"type\":\"file\",\"path\":\"build/b\",\"oid\":\"" OID "\",\"size\":2}]", KERNELS_EPARSE },
		{ "[{\"type\":\"file\",\"path\":\"build/a\",\"oid\":\"" OID "\",\"size\":1,"
		  "\"lfs\":{\"oid\":\"" SHA "\",\"size\":1}},"
		  "{\"type\":\"file\",\"path\":\"build/b\",\"oid\":\"" OID2 "\",\"size\":2,"
		  "\"lfs\":{\"oid\":\"" SHA "\",\"size\":2}}]", KERNELS_EPARSE },
		{ "[{\"type\":\"link\",\"path\":\"build/a\"}]", KERNELS_EUNSAFE },
		{ "{}", KERNELS_EPARSE },
	};
	kernels__tree t;
	size_t i;
	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(read_page(bad[i].json, "build", &t), bad[i].rc);
		assert_non_null(strstr(kernels_error_last(), "test"));
		kernels__tree_free(&t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_check),
		cmocka_unit_test(test_page_sorted_and_found),
		cmocka_unit_test(test_page_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
