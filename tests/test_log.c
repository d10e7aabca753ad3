/* Logging: the default stderr sink prints the level KERNELS_LOG or
 * kernels_options.log_level asks for (warnings by default), a log_cb gets
 * every level instead, and each warning is given once per call. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "kernels.h"
#include "config.h"
#include "testutil.h"

static int clean_env(void **state)
{
	(void)state;
	unsetenv("KERNELS_LOG");
	return 0;
}

/* One message of each level, the warning twice, through a config made
 * from `opts`; returns what reached stderr (malloc'ed). */
static char *sink_output(const kernels_options *opts)
{
	kernels__config cfg;
	char path[] = "/tmp/kernels-test-log-XXXXXX", *text;
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);
	FILE *f;
	long n;

	assert_true(fd >= 0 && saved >= 0);
	fflush(stderr);
	dup2(fd, STDERR_FILENO); /* what loading the configuration says too */
	assert_int_equal(kernels__config_load(&cfg, opts), 0);
	kernels__log(&cfg, KERNELS_LOG_DEBUG, "a debug %d", 1);
	kernels__log(&cfg, KERNELS_LOG_INFO, "an info %d", 2);
	kernels__log(&cfg, KERNELS_LOG_WARNING, "a warning %d", 3);
	kernels__log(&cfg, KERNELS_LOG_WARNING, "a warning %d", 3);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	kernels__config_free(&cfg);
	assert_non_null(f = fdopen(fd, "r"));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	assert_non_null(text = calloc(1, (size_t)n + 1));
	assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	unlink(path);
	return text;
}

static const char *const ALL = "libkernels: debug: a debug 1\nlibkernels: info: an info 2\n"
			       "libkernels: warning: a warning 3\n";

static void expect(const kernels_options *opts, const char *want)
{
	char *got = sink_output(opts);
	assert_string_equal(got, want);
	free(got);
}

static void test_default_sink_levels(void **state)
{
	kernels_options o;
	(void)state;

	expect(NULL, "libkernels: warning: a warning 3\n");
	setenv("KERNELS_LOG", "debug", 1);
	expect(NULL, ALL);
	setenv("KERNELS_LOG", "INFO", 1);
	expect(NULL, strchr(ALL, '\n') + 1);
	setenv("KERNELS_LOG", "error", 1);
	expect(NULL, "");
	/* Not a level: the default, never a failure, and said once. */
	setenv("KERNELS_LOG", "loud", 1);
	expect(NULL, "libkernels: warning: KERNELS_LOG='loud' is not error, warn, info or debug; showing warnings\n"
		     "libkernels: warning: a warning 3\n");

	/* The option wins over the environment. */
	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	o.log_level = "debug";
	setenv("KERNELS_LOG", "error", 1);
	expect(&o, ALL);
	o.log_level = "warn";
	expect(&o, "libkernels: warning: a warning 3\n");
}

static void test_bad_option_refused(void **state)
{
	kernels__config cfg;
	kernels_options o;
	(void)state;

	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	o.log_level = "verbose";
	assert_int_equal(kernels__config_load(&cfg, &o), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "log_level is 'verbose'"));
	/* The public entry points say so too, before any work. */
	assert_int_equal(kernels_has_kernel("org/k", "main", &o), KERNELS_EINVAL);
}

typedef struct {
	int count[3];
	char last[256];
} seen;

static void on_log(kernels_log_level level, const char *message, void *payload)
{
	seen *s = payload;
	s->count[level]++;
	snprintf(s->last, sizeof(s->last), "%s", message);
}

static void test_callback_gets_every_level_and_each_warning_once(void **state)
{
	kernels__config cfg, copy;
	kernels_options o;
	seen s;
	char *out;
	(void)state;

	memset(&s, 0, sizeof(s));
	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	o.log_cb = on_log;
	o.log_payload = &s;
	setenv("KERNELS_LOG", "error", 1); /* the default sink's level; the callback filters for itself */
	assert_int_equal(kernels__config_load(&cfg, &o), 0);
	kernels__log(&cfg, KERNELS_LOG_DEBUG, "d");
	kernels__log(&cfg, KERNELS_LOG_DEBUG, "d");
	kernels__log(&cfg, KERNELS_LOG_INFO, "retrying");
	kernels__log(&cfg, KERNELS_LOG_WARNING, "a newer major version v2 exists");
	/* A shallow copy (one endpoint of the call) shares the call's memory. */
	kernels__config_at_endpoint(&cfg, 0, &copy);
	kernels__log(&copy, KERNELS_LOG_WARNING, "a newer major version v2 exists");
	kernels__log(&cfg, KERNELS_LOG_WARNING, "another warning");
	assert_int_equal(s.count[KERNELS_LOG_DEBUG], 2);
	assert_int_equal(s.count[KERNELS_LOG_INFO], 1);
	assert_int_equal(s.count[KERNELS_LOG_WARNING], 2);
	assert_string_equal(s.last, "another warning");
	kernels__config_free(&cfg);

	/* The next call gives it again. */
	assert_int_equal(kernels__config_load(&cfg, &o), 0);
	kernels__log(&cfg, KERNELS_LOG_WARNING, "a newer major version v2 exists");
	assert_int_equal(s.count[KERNELS_LOG_WARNING], 3);
	kernels__config_free(&cfg);

	/* The default sink: once per call as well. */
	unsetenv("KERNELS_LOG");
	out = sink_output(NULL);
	assert_int_equal(strstr(out, "a warning 3") - out, strlen("libkernels: warning: "));
	assert_null(strstr(strstr(out, "a warning 3") + 1, "a warning 3"));
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_default_sink_levels, clean_env),
		cmocka_unit_test_setup(test_bad_option_refused, clean_env),
		cmocka_unit_test_setup(test_callback_gets_every_level_and_each_warning_once, clean_env),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
