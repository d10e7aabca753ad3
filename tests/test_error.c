/* The error model: thread-local messages, codes, strerror, version. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "kernels.h"
#include "error.h"

static void test_last_error_is_thread_local(void **state)
{
	(void)state;
	kernels__error(KERNELS_EPARSE, "spec '%s' is malformed at 3", ">=1,,2");
	assert_int_equal(kernels_error_last_code(), KERNELS_EPARSE);
	assert_string_equal(kernels_error_last(), "spec '>=1,,2' is malformed at 3");
	kernels__error_prefix("resolving %s", "org/x");
	assert_string_equal(kernels_error_last(), "resolving org/x: spec '>=1,,2' is malformed at 3");
	assert_int_equal(kernels_error_last_code(), KERNELS_EPARSE);
	kernels_error_clear();
	assert_int_equal(kernels_error_last_code(), KERNELS_OK);
	assert_string_equal(kernels_error_last(), "no error");
}

/* A stage that fails without raising an error: the prefix still leaves a
 * code and a message, never "no error". */
static void test_prefix_without_error_raises_one(void **state)
{
	int rc;
	(void)state;

	kernels_error_clear();
	rc = kernels__error_prefix("loading %s", "org/x");
	assert_int_equal(rc, KERNELS_ERROR);
	assert_int_equal(kernels_error_last_code(), KERNELS_ERROR);
	assert_string_not_equal(kernels_error_last(), "no error");
	assert_non_null(strstr(kernels_error_last(), "loading org/x: "));
	assert_non_null(strstr(kernels_error_last(), "without a reason"));
	/* and the next prefix keeps that code */
	assert_int_equal(kernels__error_prefix("outer"), KERNELS_ERROR);
	assert_non_null(strstr(kernels_error_last(), "outer: loading org/x: "));
	kernels_error_clear();
}

static void *raise_in_thread(void *arg)
{
	kernels__error(KERNELS_EIO, "thread %s", (const char *)arg);
	return (void *)(kernels_error_last_code() == KERNELS_EIO && !strcmp(kernels_error_last(), "thread B") ? arg : NULL);
}

static void test_new_error_may_quote_the_last(void **state)
{
	(void)state;
	kernels__error(KERNELS_ENETWORK, "connection refused");
	kernels__error(KERNELS_ENETWORK, "outer (%s) tail", kernels_error_last());
	assert_string_equal(kernels_error_last(), "outer (connection refused) tail");
}

/* A path renamed in the message where it is whole, never inside a longer
 * name; the code kept; nothing raised where nothing failed. */
static void test_path_rename(void **state)
{
	(void)state;
	kernels__error(KERNELS_EIO, "cannot link /proc/self/fd/8/a to /proc/self/fd/81/b (/proc/self/fd/8)");
	kernels__error_path_rename("/proc/self/fd/8", "/cache/.libkernels");
	assert_string_equal(kernels_error_last(), "cannot link /cache/.libkernels/a to /proc/self/fd/81/b "
			    "(/cache/.libkernels)");
	assert_int_equal(kernels_error_last_code(), KERNELS_EIO);
	kernels_error_clear();
	kernels__error_path_rename("no", "error");
	assert_int_equal(kernels_error_last_code(), KERNELS_OK);
}

static void test_threads_do_not_share_errors(void **state)
{
	pthread_t t;
	void *ret;
	(void)state;

	kernels__error(KERNELS_EAUTH, "main thread");
	assert_int_equal(pthread_create(&t, NULL, raise_in_thread, "B"), 0);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_non_null(ret);
	assert_string_equal(kernels_error_last(), "main thread");
	assert_int_equal(kernels_error_last_code(), KERNELS_EAUTH);
}

static void test_strerror_covers_every_code(void **state)
{
	int code;
	(void)state;
	for (code = KERNELS_EUNSAFE; code <= KERNELS_OK; code++)
		assert_string_not_equal(kernels_strerror(code), "unknown error");
	assert_string_equal(kernels_strerror(-999), "unknown error");
}

static void test_version(void **state)
{
	(void)state;
	assert_string_equal(kernels_version(), KERNELS_VERSION_STRING);
	assert_int_equal(kernels_version_number(), KERNELS_VERSION_NUMBER);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_last_error_is_thread_local),
		cmocka_unit_test(test_new_error_may_quote_the_last),
		cmocka_unit_test(test_prefix_without_error_raises_one),
		cmocka_unit_test(test_path_rename),
		cmocka_unit_test(test_threads_do_not_share_errors),
		cmocka_unit_test(test_strerror_covers_every_code),
		cmocka_unit_test(test_version),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
