/* Repo id validation and naming. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernels.h"
#include "repo.h"

static void test_valid_ids(void **state)
{
	static const char *ok[] = { "kernels-community/activation", "drbh/img2gray", "a/b", "Org_1/n.a-m_e" };
	size_t i;
	(void)state;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		assert_int_equal(kernels__repo_id_check(ok[i]), 0);
}

static void test_invalid_ids(void **state)
{
	static const char *bad[] = { "", "noslash", "a/b/c", "../x", "a/..", "a/.hidden", "a/b-", "a--b/c",
				     "a/b c", "a/b\n", "a/b%2f", "/a", "a/", "a\\b/c",
				     "a/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" };
	size_t i;
	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(kernels__repo_id_check(bad[i]), KERNELS_EINVAL);
		assert_non_null(strstr(kernels_error_last(), "org/name"));
	}
	assert_int_equal(kernels__repo_id_check(NULL), KERNELS_EINVAL);
	/* A git URL habit: refused, naming the id to use. */
	assert_int_equal(kernels__repo_id_check("org/name.git"), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "use \"org/name\""));
	assert_int_equal(kernels__repo_id_check("org/Name.GIT"), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "use \"org/Name\""));
	assert_int_equal(kernels__repo_id_check("org/name.gitx"), 0);
}

static void test_cache_names(void **state)
{
	char *a = kernels__repo_cache_name(KERNELS__REPO_KERNEL, "org/name");
	char *b = kernels__repo_cache_name(KERNELS__REPO_MODEL, "org/name");
	(void)state;
	assert_string_equal(a, "kernels--org--name");
	assert_string_equal(b, "models--org--name");
	assert_string_equal(kernels__repo_url_prefix(KERNELS__REPO_KERNEL), "kernels/");
	assert_string_equal(kernels__repo_url_prefix(KERNELS__REPO_MODEL), "");
	free(a);
	free(b);
}

/* The value a public call makes of the id at its door. */
static void test_parse(void **state)
{
	kernels__repo r;
	(void)state;
	assert_int_equal(kernels__repo_parse(&r, "kernels-community/relu.v2"), 0);
	assert_string_equal(r.id, "kernels-community/relu.v2");
	assert_string_equal(r.org, "kernels-community");
	assert_string_equal(r.name, "relu.v2");
	assert_int_equal(r.type, KERNELS__REPO_KERNEL);
	assert_string_equal(r.cache_name, "kernels--kernels-community--relu.v2");
	kernels__repo_set_type(&r, KERNELS__REPO_MODEL);
	assert_string_equal(r.cache_name, "models--kernels-community--relu.v2");
	assert_int_equal(kernels__repo_parse(&r, "org/name.git"), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "'.git'"));
	assert_int_equal(kernels__repo_parse(&r, NULL), KERNELS_EINVAL);
	assert_string_equal(r.id, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_ids),
		cmocka_unit_test(test_invalid_ids),
		cmocka_unit_test(test_cache_names),
		cmocka_unit_test(test_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
