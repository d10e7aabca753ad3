/* Options + environment resolution: precedence of cache roots, endpoint,
 * token sources, offline and telemetry switches. */
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "kernels.h"
#include "config.h"
#include "testutil.h"
#include "alloc_fail.h"

static const char *const vars[] = { "KERNELS_CACHE", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME",
				    "XDG_CACHE_HOME", "HF_ENDPOINT", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH",
				    "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY",
				    "HF_HUB_DISABLE_IMPLICIT_TOKEN", "LOCAL_KERNELS", "KERNELS_TORCH_DIR", "KERNELS_ENDPOINTS",
				    "HUGGINGFACE_CO_STAGING", "HF_HUB_USER_AGENT_ORIGIN" };

static int clean_env(void **state)
{
	size_t i;
	(void)state;
	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	setenv("HOME", "/home/someone", 1);
	return 0;
}

/* Loads the configuration with `opts` (NULL: none), checks that its
 * string `field` is `want`, and frees it. A macro, so that a failure names
 * the line of the check. */
#define expect_config_string(opts, field, want)                                                      \
	do {                                                                                         \
		kernels__config c_;                                                                  \
		assert_int_equal(kernels__config_load(&c_, (opts)), 0);                              \
		assert_string_equal(c_.field, (want));                                               \
		kernels__config_free(&c_);                                                           \
	} while (0)

static void test_cache_dir_precedence(void **state)
{
	(void)state;

	expect_config_string(NULL, cache_dir, "/home/someone/.cache/huggingface/hub");

	setenv("XDG_CACHE_HOME", "/xdg", 1);
	expect_config_string(NULL, cache_dir, "/xdg/huggingface/hub");

	setenv("HF_HOME", "/hf", 1);
	expect_config_string(NULL, cache_dir, "/hf/hub");

	setenv("HF_HUB_CACHE", "/hubcache", 1);
	expect_config_string(NULL, cache_dir, "/hubcache");

	setenv("KERNELS_CACHE", "/kc", 1);
	expect_config_string(NULL, cache_dir, "/kc");

	{
		kernels_options opts;
		kernels_options_init(&opts, KERNELS_OPTIONS_VERSION);
		opts.cache_dir = "/explicit";
		expect_config_string(&opts, cache_dir, "/explicit");
	}
}

/* With HOME unset, the home is the password database's, as Python's
 * os.path.expanduser("~") finds it: never a folder anyone may create
 * (/tmp/.cache), whose kernels this process would load. An empty HOME is
 * "/", as in Python. */
static void test_home_without_HOME(void **state)
{
	struct passwd *pw = getpwuid(getuid());
	char *want;
	(void)state;

	assert_non_null(pw);
	unsetenv("HOME");
	assert_int_equal(asprintf(&want, "%s/.cache/huggingface/hub",
				  strcmp(pw->pw_dir, "/") ? pw->pw_dir : "") > 0, 1);
	expect_config_string(NULL, cache_dir, want);
	free(want);
	setenv("HOME", "", 1);
	expect_config_string(NULL, cache_dir, "/.cache/huggingface/hub");
}

/* HF_HOME, HF_HUB_CACHE (and its legacy name), XDG_CACHE_HOME and
 * HF_TOKEN_PATH are read as huggingface_hub reads them: "~" and "~user"
 * at the start and $VAR / ${VAR} anywhere are expanded (an unknown user
 * or variable stays as written), so both use one cache and one token.
 * KERNELS_CACHE is not: kernels 0.17 hands it to huggingface_hub as
 * written. */
static void test_paths_expanded(void **state)
{
	struct passwd *pw = getpwuid(0);
	char *dir = test_mkdtemp("config-expand"), *want, *file;
	(void)state;

	setenv("HF_HOME", "~/hf", 1);
	expect_config_string(NULL, cache_dir, "/home/someone/hf/hub");
	unsetenv("HF_HOME");
	setenv("XDG_CACHE_HOME", "~/xdg/", 1);
	expect_config_string(NULL, cache_dir, "/home/someone/xdg/huggingface/hub");
	setenv("HUGGINGFACE_HUB_CACHE", "$HOME/legacy", 1);
	expect_config_string(NULL, cache_dir, "/home/someone/legacy");
	setenv("KERNELS_TEST_A", "1", 1);
	setenv("HF_HUB_CACHE", "/$KERNELS_TEST_A/${KERNELS_TEST_A}/$KERNELS_TEST_NOPE/${}/$/${KERNELS_TEST_A/x"
	       "$KERNELS_TEST_A_/~", 1);
	expect_config_string(NULL, cache_dir, "/1/1/$KERNELS_TEST_NOPE/${}/$/${KERNELS_TEST_A/x$KERNELS_TEST_A_/~");
	unsetenv("KERNELS_TEST_A");
	setenv("HF_HUB_CACHE", "~kernels-no-such-user/x", 1);
	expect_config_string(NULL, cache_dir, "~kernels-no-such-user/x");
	if (pw) {
		assert_int_equal(asprintf(&want, "%s/x", strcmp(pw->pw_dir, "/") ? pw->pw_dir : "") > 0, 1);
		assert_int_equal(asprintf(&file, "~%s/x", pw->pw_name) > 0, 1);
		setenv("HF_HUB_CACHE", file, 1);
		expect_config_string(NULL, cache_dir, want);
		free(want);
		free(file);
	}
	/* Joined as os.path.join joins: no doubled slash, and an empty home
	 * or cache is the working folder, never the filesystem's root
	 * ("" + "/hub"). An empty cache_dir option is refused. */
	unsetenv("HF_HUB_CACHE");
	unsetenv("HUGGINGFACE_HUB_CACHE");
	setenv("HF_HOME", "/hf/", 1);
	expect_config_string(NULL, cache_dir, "/hf/hub");
	setenv("KERNELS_TEST_EMPTY", "", 1);
	setenv("HF_HOME", "$KERNELS_TEST_EMPTY", 1);
	expect_config_string(NULL, cache_dir, "hub");
	unsetenv("HF_HOME");
	setenv("HF_HUB_CACHE", "${KERNELS_TEST_EMPTY}", 1);
	expect_config_string(NULL, cache_dir, ".");
	unsetenv("KERNELS_TEST_EMPTY");
	{
		kernels__config cfg;
		kernels_options opts = KERNELS_OPTIONS_INIT;

		opts.cache_dir = "";
		assert_int_equal(kernels__config_load(&cfg, &opts), KERNELS_EINVAL);
		assert_non_null(strstr(kernels_error_last(), "kernels_options.cache_dir (--cache-dir) is empty"));
	}

	setenv("HOME", "/home/someone/", 1);
	setenv("HF_HUB_CACHE", "~", 1);
	expect_config_string(NULL, cache_dir, "/home/someone");
	setenv("KERNELS_CACHE", "~/kc", 1);
	expect_config_string(NULL, cache_dir, "~/kc");
	unsetenv("KERNELS_CACHE");

	setenv("HOME", dir, 1);
	assert_int_equal(asprintf(&file, "%s/tok", dir) > 0, 1);
	assert_int_equal(test_write_file(file, "hf_tilde\n", 9), 0);
	setenv("HF_TOKEN_PATH", "~/tok", 1);
	expect_config_string(NULL, token, "hf_tilde");
	unsetenv("HF_TOKEN_PATH");
	free(file);
	test_rmtree(dir);
	free(dir);
}

static void test_endpoint(void **state)
{
	kernels__config cfg;
	kernels_options opts;
	(void)state;

	expect_config_string(NULL, endpoint, "https://huggingface.co");

	setenv("HF_ENDPOINT", "http://127.0.0.1:8080//", 1);
	expect_config_string(NULL, endpoint, "http://127.0.0.1:8080");

	setenv("HF_ENDPOINT", "ftp://example", 1);
	assert_int_equal(kernels__config_load(&cfg, NULL), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "HF_ENDPOINT"));

	/* A blank or control character, or no host, is refused as the setting
	 * it is, with what to fix: curl would refuse each URL, which read as
	 * a Hub that cannot be reached (and the cache was used instead). */
	setenv("HF_ENDPOINT", "https://hub.example/ ", 1);
	assert_int_equal(kernels__config_load(&cfg, NULL), KERNELS_EINVAL);
	assert_string_equal(kernels_error_last(), "Hub endpoint 'https://hub.example/ ' has a blank or control "
			    "character; fix HF_ENDPOINT or options.endpoint");
	setenv("HF_ENDPOINT", "https://hub.example\r", 1);
	assert_int_equal(kernels__config_load(&cfg, NULL), KERNELS_EINVAL);
	setenv("HF_ENDPOINT", "https:///api", 1);
	assert_int_equal(kernels__config_load(&cfg, NULL), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "names no host"));
	unsetenv("HF_ENDPOINT");
	setenv("KERNELS_ENDPOINTS", "https://mirror.example,http:///hub", 1);
	assert_int_equal(kernels__config_load(&cfg, NULL), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "endpoint 'http:///hub' in KERNELS_ENDPOINTS names no host"));
	unsetenv("KERNELS_ENDPOINTS");
	setenv("HF_ENDPOINT", "ftp://example", 1);

	kernels_options_init(&opts, KERNELS_OPTIONS_VERSION);
	opts.endpoint = "https://mirror.example";
	expect_config_string(&opts, endpoint, "https://mirror.example");
}

/* huggingface_hub's staging mode (HUGGINGFACE_CO_STAGING, true as it
 * reads it): its CI Hub over HF_ENDPOINT, and its own token file over
 * HF_TOKEN_PATH, as constants.py sets them; the caller's endpoint and
 * KERNELS_ENDPOINTS still win, HF_TOKEN too, and the cache stays. */
static void test_staging(void **state)
{
	kernels_options opts;
	char *dir = test_mkdtemp("config-staging"), *file, *cache = NULL;
	(void)state;

	assert_non_null(dir);
	setenv("HOME", dir, 1);
	assert_int_equal(asprintf(&file, "%s/.cache/huggingface_staging", dir) > 0, 1);
	assert_int_equal(test_system("mkdir -p '%s'", file), 0);
	free(file);
	assert_int_equal(asprintf(&file, "%s/.cache/huggingface_staging/token", dir) > 0, 1);
	assert_int_equal(test_write_file(file, "hf_staging\n", 11), 0);
	free(file);
	assert_int_equal(asprintf(&file, "%s/prod", dir) > 0, 1);
	assert_int_equal(test_write_file(file, "hf_prod\n", 8), 0);
	setenv("HF_TOKEN_PATH", file, 1);
	setenv("HF_ENDPOINT", "http://127.0.0.1:8080", 1);
	setenv("HUGGINGFACE_CO_STAGING", "0", 1);
	expect_config_string(NULL, endpoint, "http://127.0.0.1:8080");
	expect_config_string(NULL, token, "hf_prod");

	setenv("HUGGINGFACE_CO_STAGING", "Yes", 1);
	expect_config_string(NULL, endpoint, "https://hub-ci.huggingface.co");
	expect_config_string(NULL, token, "hf_staging");
	assert_int_equal(asprintf(&cache, "%s/.cache/huggingface/hub", dir) > 0, 1);
	expect_config_string(NULL, cache_dir, cache);
	setenv("HF_TOKEN", "hf_env", 1);
	expect_config_string(NULL, token, "hf_env");
	unsetenv("HF_TOKEN");
	kernels_options_init(&opts, KERNELS_OPTIONS_VERSION);
	opts.endpoint = "https://mirror.example";
	expect_config_string(&opts, endpoint, "https://mirror.example");
	setenv("KERNELS_ENDPOINTS", "https://mirror.example,https://huggingface.co", 1);
	expect_config_string(NULL, endpoint, "https://mirror.example");
	unsetenv("KERNELS_ENDPOINTS");
	test_rmtree(dir);
	free(file);
	free(cache);
	free(dir);
}

static char seen[2048];

static void keep_warnings(kernels_log_level level, const char *msg, void *payload)
{
	(void)payload;
	if (level == KERNELS_LOG_WARNING && strlen(seen) + strlen(msg) + 2 < sizeof(seen)) {
		strcat(seen, msg);
		strcat(seen, "\n");
	}
}

static void test_token_sources(void **state)
{
	kernels__config cfg;
	char *dir = test_mkdtemp("config"), *file;
	(void)state;

	assert_non_null(dir);
	setenv("HF_HOME", dir, 1);
	assert_int_equal(kernels__config_load(&cfg, NULL), 0);
	assert_null(cfg.token);
	kernels__config_free(&cfg);

	assert_int_equal(asprintf(&file, "%s/token", dir) > 0, 1);
	assert_int_equal(test_write_file(file, "  hf_fromfile \n", 15), 0);
	expect_config_string(NULL, token, "hf_fromfile");
	free(file);

	assert_int_equal(asprintf(&file, "%s/other", dir) > 0, 1);
	assert_int_equal(test_write_file(file, "hf_path\n", 8), 0);
	setenv("HF_TOKEN_PATH", file, 1);
	expect_config_string(NULL, token, "hf_path");
	free(file);

	setenv("HF_TOKEN", "hf_env", 1);
	expect_config_string(NULL, token, "hf_env");

	/* Cleaned as huggingface_hub cleans each source: every CR and LF out,
	 * blanks around stripped; one left empty is no token, and the next
	 * source is read (here the file): never a header with a line break,
	 * nor "Bearer " and blanks. */
	setenv("HF_TOKEN", " hf_env\r\n", 1);
	expect_config_string(NULL, token, "hf_env");
	setenv("HF_TOKEN", " \r\n\t", 1);
	setenv("HUGGING_FACE_HUB_TOKEN", "hf_legacy", 1);
	expect_config_string(NULL, token, "hf_path");
	unsetenv("HF_TOKEN");
	expect_config_string(NULL, token, "hf_legacy");
	unsetenv("HUGGING_FACE_HUB_TOKEN");
	assert_int_equal(asprintf(&file, "%s/lines", dir) > 0, 1);
	assert_int_equal(test_write_file(file, "\r\n hf_first\r\nhalf \n", 19), 0);
	setenv("HF_TOKEN_PATH", file, 1);
	expect_config_string(NULL, token, "hf_firsthalf");
	assert_int_equal(test_write_file(file, " \n\n", 3), 0);
	assert_int_equal(kernels__config_load(&cfg, NULL), 0);
	assert_null(cfg.token);
	kernels__config_free(&cfg);
	free(file);

	/* HF_HUB_DISABLE_IMPLICIT_TOKEN: as huggingface_hub, no token is sent
	 * unless the caller gives one (options.token): not HF_TOKEN's, not the
	 * file's. A mirror one points HF_ENDPOINT at must not get it. */
	setenv("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1", 1);
	setenv("HF_TOKEN", "hf_env", 1);
	assert_int_equal(kernels__config_load(&cfg, NULL), 0);
	assert_null(cfg.token);
	kernels__config_free(&cfg);
	unsetenv("HF_TOKEN");
	unsetenv("HF_TOKEN_PATH");
	assert_int_equal(kernels__config_load(&cfg, NULL), 0);
	assert_null(cfg.token);
	kernels__config_free(&cfg);
	{
		kernels_options opts = KERNELS_OPTIONS_INIT;
		opts.token = "hf_given";
		expect_config_string(&opts, token, "hf_given");
	}
	{
		/* The caller's token is sent as given, as huggingface_hub sends
		 * an explicit one; a line break in it would end the header (httpx
		 * refuses such a header): refused, saying so. */
		kernels_options opts = KERNELS_OPTIONS_INIT;
		opts.token = "hf_given\n";
		assert_int_equal(kernels__config_load(&cfg, &opts), KERNELS_EINVAL);
		assert_string_equal(kernels_error_last(), "kernels_options.token holds a line break; pass the token "
				    "alone (read from a file: without its line end)");
	}
	setenv("HF_HUB_DISABLE_IMPLICIT_TOKEN", "0", 1);
	expect_config_string(NULL, token, "hf_fromfile");
	unsetenv("HF_HUB_DISABLE_IMPLICIT_TOKEN");

	/* A token path that is no regular file (a FIFO no one writes, planted
	 * or left over) is no token, with a warning: every call reads it, and
	 * opening a FIFO waits for a writer forever. The child's alarm is only
	 * a hang guard. */
	assert_int_equal(asprintf(&file, "%s/fifo", dir) > 0, 1);
	assert_int_equal(mkfifo(file, 0600), 0);
	setenv("HF_TOKEN_PATH", file, 1);
	{
		kernels_options opts;
		pid_t pid = fork();
		int status = 0;

		assert_true(pid >= 0);
		if (pid == 0) {
			alarm(60);
			seen[0] = '\0';
			kernels_options_init(&opts, KERNELS_OPTIONS_VERSION);
			opts.log_cb = keep_warnings;
			_exit(kernels__config_load(&cfg, &opts) == 0 && !cfg.token &&
			      strstr(seen, "is not a regular file") ? 0 : 1);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	unsetenv("HF_TOKEN_PATH");
	free(file);

	/* A token file that is there but cannot be read (here: a path through
	 * a regular file; permissions alike) is no token, with a warning:
	 * huggingface_hub raises, and a silent anonymous call would fail on a
	 * private repo asking for a token the user did set up. */
	assert_int_equal(asprintf(&file, "%s/token/inside", dir) > 0, 1);
	setenv("HF_TOKEN_PATH", file, 1);
	{
		kernels_options opts = KERNELS_OPTIONS_INIT;

		seen[0] = '\0';
		opts.log_cb = keep_warnings;
		assert_int_equal(kernels__config_load(&cfg, &opts), 0);
		assert_null(cfg.token);
		kernels__config_free(&cfg);
		assert_non_null(strstr(seen, "cannot read the token file"));
		assert_non_null(strstr(seen, "Not a directory"));
		assert_non_null(strstr(seen, "HF_TOKEN_PATH"));
	}
	unsetenv("HF_TOKEN_PATH");
	free(file);

	/* In staging mode the file is staging's own: the warning says what
	 * chose it, not HF_TOKEN_PATH, which is not read then. */
	{
		kernels_options opts = KERNELS_OPTIONS_INIT;
		char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;

		assert_int_equal(asprintf(&file, "%s/.cache/huggingface_staging/token", dir) > 0, 1);
		assert_int_equal(test_system("mkdir -p '%s'", file), 0); /* a folder where the file should be */
		setenv("HOME", dir, 1);
		setenv("HUGGINGFACE_CO_STAGING", "1", 1);
		seen[0] = '\0';
		opts.log_cb = keep_warnings;
		assert_int_equal(kernels__config_load(&cfg, &opts), 0);
		assert_null(cfg.token);
		kernels__config_free(&cfg);
		assert_non_null(strstr(seen, "is not a regular file"));
		assert_non_null(strstr(seen, "HUGGINGFACE_CO_STAGING"));
		assert_null(strstr(seen, "HF_TOKEN_PATH"));
		unsetenv("HUGGINGFACE_CO_STAGING");
		if (home)
			setenv("HOME", home, 1);
		else
			unsetenv("HOME");
		free(home);
		free(file);
	}

	test_rmtree(dir);
	free(dir);
}

static void test_switches(void **state)
{
	kernels__config cfg;
	kernels_options opts;
	(void)state;

	assert_int_equal(kernels__config_load(&cfg, NULL), 0);
	assert_int_equal(cfg.offline, 0);
	assert_int_equal(cfg.telemetry, 1);
	kernels__config_free(&cfg);

	setenv("HF_HUB_OFFLINE", "True", 1);
	setenv("HF_HUB_DISABLE_TELEMETRY", "1", 1);
	assert_int_equal(kernels__config_load(&cfg, NULL), 0);
	assert_int_equal(cfg.offline, 1);
	assert_int_equal(cfg.telemetry, 0);
	kernels__config_free(&cfg);

	kernels_options_init(&opts, KERNELS_OPTIONS_VERSION);
	opts.offline = 0;
	assert_int_equal(kernels__config_load(&cfg, &opts), 0);
	assert_int_equal(cfg.offline, 0);
	kernels__config_free(&cfg);

	/* TRANSFORMERS_OFFLINE, read as huggingface_hub reads it: when
	 * HF_HUB_OFFLINE is unset or empty, not when it says 0. */
	setenv("TRANSFORMERS_OFFLINE", "1", 1);
	setenv("HF_HUB_OFFLINE", "0", 1);
	assert_int_equal(kernels__config_load(&cfg, NULL), 0);
	assert_int_equal(cfg.offline, 0);
	kernels__config_free(&cfg);
	setenv("HF_HUB_OFFLINE", "", 1);
	assert_int_equal(kernels__config_load(&cfg, NULL), 0);
	assert_int_equal(cfg.offline, 1);
	kernels__config_free(&cfg);
	unsetenv("HF_HUB_OFFLINE");
	assert_int_equal(kernels__config_load(&cfg, NULL), 0);
	assert_int_equal(cfg.offline, 1);
	kernels__config_free(&cfg);
	unsetenv("TRANSFORMERS_OFFLINE");
}

/* A value that does not parse is named with what is accepted, and the
 * default it falls back to; an unknown backend is an error. */
static void test_bad_values_named(void **state)
{
	kernels__config cfg;
	kernels_options opts;
	kernels_system *sys = NULL;
	(void)state;

	kernels_options_init(&opts, KERNELS_OPTIONS_VERSION);
	opts.log_cb = keep_warnings;
	seen[0] = '\0';
	setenv("KERNELS_DEADLINE_MS", "abc", 1);
	setenv("HF_HUB_OFFLINE", "ture", 1);
	setenv("HF_HUB_ETAG_TIMEOUT", "ten", 1);
	assert_int_equal(kernels__config_load(&cfg, &opts), 0);
	assert_int_equal(cfg.deadline_ms, KERNELS_DEFAULT_DEADLINE_MS);
	assert_int_equal(cfg.timeout_ms, KERNELS_DEFAULT_TIMEOUT_MS);
	assert_int_equal(cfg.offline, 0);
	kernels__config_free(&cfg);
	assert_non_null(strstr(seen, "KERNELS_DEADLINE_MS='abc' is not a whole number of milliseconds (0: the default, "
				     "negative: none); using 10000"));
	assert_non_null(strstr(seen, "HF_HUB_OFFLINE='ture' is not 1/0, true/false, yes/no or on/off; read as off"));
	assert_non_null(strstr(seen, "HF_HUB_ETAG_TIMEOUT='ten' is not a number of seconds"));
	unsetenv("KERNELS_DEADLINE_MS");
	unsetenv("HF_HUB_ETAG_TIMEOUT");
	/* blanks around a number are read as Python's int() reads them (an
	 * env file's line end), without a warning */
	seen[0] = '\0';
	unsetenv("HF_HUB_OFFLINE");
	setenv("HF_HUB_ETAG_TIMEOUT", " 5\n", 1);
	setenv("HF_HUB_DOWNLOAD_TIMEOUT", "\t+7 ", 1);
	setenv("KERNELS_DEADLINE_MS", "2500\r\n", 1);
	assert_int_equal(kernels__config_load(&cfg, &opts), 0);
	assert_int_equal(cfg.timeout_ms, 5000);
	assert_int_equal(cfg.download_timeout_ms, 7000);
	assert_int_equal(cfg.deadline_ms, 2500);
	kernels__config_free(&cfg);
	assert_string_equal(seen, "");
	unsetenv("HF_HUB_ETAG_TIMEOUT");
	unsetenv("HF_HUB_DOWNLOAD_TIMEOUT");
	unsetenv("KERNELS_DEADLINE_MS");
	/* the usual false words are not warned about */
	seen[0] = '\0';
	setenv("HF_HUB_OFFLINE", "no", 1);
	assert_int_equal(kernels__config_load(&cfg, &opts), 0);
	kernels__config_free(&cfg);
	assert_string_equal(seen, "");
	unsetenv("HF_HUB_OFFLINE");

	setenv("KERNELS_BACKEND", "cup", 1);
	assert_int_equal(kernels_system_detect(&sys, &opts), KERNELS_EINVAL);
	assert_null(sys);
	assert_string_equal(kernels_error_last(), "KERNELS_BACKEND is 'cup', not a backend: did you mean 'cpu'? "
			    "(backends: cuda, rocm, xpu, cann, cpu, metal, neuron, tpu); fix or unset it");
	setenv("KERNELS_BACKEND", "CUDA", 1);
	assert_int_equal(kernels_system_detect(&sys, &opts), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "did you mean 'cuda'?"));
	setenv("KERNELS_BACKEND", "mps", 1);
	assert_int_equal(kernels_system_detect(&sys, &opts), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "not a backend; use one of: cuda, rocm"));
	unsetenv("KERNELS_BACKEND");
	{
		kernels_system ov = { 0 };
		ov.backend = "foo";
		opts.system = &ov;
		assert_int_equal(kernels_system_detect(&sys, &opts), KERNELS_EINVAL);
		assert_non_null(strstr(kernels_error_last(), "kernels_options.system->backend is 'foo', not a backend"));
	}
}

/* What kernels__config_load(opts) printed on stderr (the default sink). */
static char *stderr_of_load(const kernels_options *opts)
{
	char *dir = test_mkdtemp("config-stderr"), *file, *text;
	kernels__config cfg;
	int fd, saved = dup(2);

	assert_int_equal(asprintf(&file, "%s/err", dir) > 0, 1);
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0 && saved >= 0);
	fflush(stderr);
	dup2(fd, 2);
	close(fd);
	assert_int_equal(kernels__config_load(&cfg, opts), 0);
	kernels__config_free(&cfg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	text = test_read_file(file, NULL);
	assert_non_null(text);
	test_rmtree(dir);
	free(file);
	free(dir);
	return text;
}

/* KERNELS_LOG=error (or options.log_level "error") has the default sink
 * print nothing: the warnings about the settings themselves too. */
static void test_setting_warnings_follow_the_log_level(void **state)
{
	kernels_options opts = KERNELS_OPTIONS_INIT;
	char *text;
	(void)state;

	setenv("HF_HUB_OFFLINE", "ture", 1);
	text = stderr_of_load(NULL);
	assert_non_null(strstr(text, "HF_HUB_OFFLINE='ture'"));
	free(text);
	setenv("KERNELS_LOG", "error", 1);
	text = stderr_of_load(NULL);
	assert_string_equal(text, "");
	free(text);
	unsetenv("KERNELS_LOG");
	opts.log_level = "error";
	text = stderr_of_load(&opts);
	assert_string_equal(text, "");
	free(text);
	unsetenv("HF_HUB_OFFLINE");
}

/* A deadline too far off to add to the clock (KERNELS_DEADLINE_MS or the
 * option at LONG_MAX) is as good as none: the call has all the time there
 * is, never none at all, and the sum does not overflow. */
static void test_deadline_beyond_the_clock(void **state)
{
	kernels__config cfg;
	kernels_options opts;
	char far[32];
	(void)state;

	snprintf(far, sizeof(far), "%ld", LONG_MAX);
	setenv("KERNELS_DEADLINE_MS", far, 1);
	assert_int_equal(kernels__config_load(&cfg, NULL), 0);
	assert_int_equal(cfg.deadline_ms, LONG_MAX);
	assert_true(cfg.deadline_at == LLONG_MAX); /* never runs out: no clock read to compare */
	kernels__config_free(&cfg);
	unsetenv("KERNELS_DEADLINE_MS");
	kernels_options_init(&opts, KERNELS_OPTIONS_VERSION);
	opts.deadline_ms = LONG_MAX - 1;
	assert_int_equal(kernels__config_load(&cfg, &opts), 0);
	assert_true(cfg.deadline_at == LLONG_MAX); /* never runs out: no clock read to compare */
	kernels__config_free(&cfg);
}

/* A per-request timeout of LONG_MAX (the option; the variables stop at a
 * day) is as long as a day, the most they allow: the budgets made from it
 * (an endpoint's share of several, four requests' worth) do not overflow. */
static void test_timeout_beyond_a_day(void **state)
{
	kernels__config cfg, at;
	kernels__endpoint_try t;
	kernels_options opts;
	(void)state;

	setenv("KERNELS_ENDPOINTS", "https://mirror.example,https://huggingface.co", 1);
	kernels_options_init(&opts, KERNELS_OPTIONS_VERSION);
	opts.timeout_ms = LONG_MAX;
	opts.deadline_ms = -1;
	assert_int_equal(kernels__config_load(&cfg, &opts), 0);
	assert_int_equal(cfg.n_endpoints, 2);
	kernels__endpoint_try_begin(&cfg, 0, &at, &t);
	assert_int_equal(t.budget_ms, 24L * 3600 * 1000);
	assert_int_equal(cfg.timeout_ms, 24L * 3600 * 1000);
	kernels__config_free(&cfg);
}

static void test_public_cache_path(void **state)
{
	char *dir = test_mkdtemp("cachepath"), *p = NULL, *model;
	(void)state;

	setenv("KERNELS_CACHE", dir, 1);
	assert_int_equal(kernels_cache_path(&p, NULL, NULL), 0);
	assert_string_equal(p, dir);
	kernels_free(p);

	assert_int_equal(kernels_cache_path(&p, "org/x", NULL), 0);
	assert_non_null(strstr(p, "/kernels--org--x"));
	kernels_free(p);

	/* Only the model-type folder holds the repo (snapshots/): that one is the repo's. */
	assert_int_equal(asprintf(&model, "%s/models--org--x", dir) > 0, 1);
	assert_int_equal(test_system("mkdir -p '%s/snapshots'", model), 0);
	assert_int_equal(kernels_cache_path(&p, "org/x", NULL), 0);
	assert_string_equal(p, model);
	kernels_free(p);

	assert_int_equal(kernels_cache_path(&p, "../x", NULL), KERNELS_EINVAL);
	assert_null(p);
	assert_int_equal(kernels_cache_path(NULL, NULL, NULL), KERNELS_EINVAL);
	test_rmtree(dir);
	free(model);
	free(dir);
}

static void test_options_version_checked(void **state)
{
	kernels_options opts;
	kernels__config cfg;
	(void)state;

	assert_int_equal(kernels_options_init(&opts, 99), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "kernels_options.version is 99"));
	assert_int_equal(kernels_options_init(&opts, 0), KERNELS_EINVAL);
	assert_int_equal(kernels_options_init(NULL, KERNELS_OPTIONS_VERSION), KERNELS_EINVAL);
	kernels_options_init(&opts, KERNELS_OPTIONS_VERSION);
	opts.version = KERNELS_OPTIONS_VERSION + 1;
	assert_int_equal(kernels__config_load(&cfg, &opts), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "KERNELS_OPTIONS_VERSION"));
	opts.version = 0;
	assert_int_equal(kernels__config_load(&cfg, &opts), KERNELS_EINVAL);
}

/* KERNELS_OPTIONS_INIT is what kernels_options_init() writes, and every
 * version from 1 to the current one is accepted (docs/api-stability.md). */
static void test_options_static_initialiser_and_every_version(void **state)
{
	kernels_options a = KERNELS_OPTIONS_INIT, b;
	kernels__config cfg;
	unsigned int v;
	(void)state;

	memset(&b, 0x5a, sizeof(b));
	assert_int_equal(kernels_options_init(&b, KERNELS_OPTIONS_VERSION), 0);
	assert_memory_equal(&a, &b, sizeof(a));
	for (v = 1; v <= KERNELS_OPTIONS_VERSION; v++) {
		assert_int_equal(kernels_options_init(&b, v), 0);
		assert_int_equal(b.version, v);
		assert_int_equal(kernels__config_load(&cfg, &b), 0);
		kernels__config_free(&cfg);
	}
}

/* A system override is read by its version: version 1 ended at
 * torch_source, so whatever follows it in the caller's memory (here: a
 * GPU arch name and a device no version-1 caller could have set) is not
 * read; version 0 is the 1.0 layout; an unknown version is refused. */
static void test_system_override_read_by_version(void **state)
{
	kernels_options opts = KERNELS_OPTIONS_INIT;
	kernels_system s;
	kernels__config cfg;
	(void)state;

	memset(&s, 0, sizeof(s));
	s.gpu_arch_names[0] = "gfx-not-read";
	s.current_device = 3;
	opts.system = &s;
	s.version = 1;
	assert_int_equal(kernels__config_load(&cfg, &opts), 0);
	assert_null(cfg.system_override.gpu_arch_names[0]);
	assert_int_equal(cfg.system_override.current_device, 0);
	kernels__config_free(&cfg);
	s.version = 0;
	assert_int_equal(kernels__config_load(&cfg, &opts), 0);
	assert_string_equal(cfg.system_override.gpu_arch_names[0], "gfx-not-read");
	assert_int_equal(cfg.system_override.current_device, 3);
	kernels__config_free(&cfg);
	s.version = KERNELS_SYSTEM_VERSION + 1;
	assert_int_equal(kernels__config_load(&cfg, &opts), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "kernels_system.version"));
}

/* Every allocation of the configuration, made to fail in turn: each time
 * the call either reports KERNELS_ENOMEM or holds the whole configuration,
 * never one with a setting silently left out (a lost LOCAL_KERNELS would
 * send the call to the Hub; a lost token would make it anonymous). */
static void test_allocation_failures_are_reported(void **state)
{
	kernels_options opts;
	kernels__config cfg;
	char *dir = test_mkdtemp("config-oom"), *file;
	long n, failed = 0;
	(void)state;

	assert_int_equal(asprintf(&file, "%s/token", dir) > 0, 1);
	assert_int_equal(test_write_file(file, "hf_fromfile\n", 12), 0);
	setenv("HF_TOKEN_PATH", file, 1);
	setenv("LOCAL_KERNELS", "acme/relu=/src/relu", 1);
	setenv("KERNELS_TORCH_DIR", "/opt/torch", 1);
	kernels_options_init(&opts, KERNELS_OPTIONS_VERSION);
	opts.user_agent = "app/1";
	opts.trusted_orgs = "acme";
	opts.endpoints = "http://mirror:8090,https://hub.example";
	for (n = 1;; n++) {
		int rc, fired;

		kernels_error_clear();
		alloc_fail_nth(n);
		rc = kernels__config_load(&cfg, &opts);
		fired = alloc_fail_fired();
		alloc_fail_nth(0);
		if (rc < 0) {
			assert_true(fired);
			assert_int_equal(rc, KERNELS_ENOMEM);
			assert_int_equal(kernels_error_last_code(), KERNELS_ENOMEM);
			failed++;
			continue;
		}
		assert_int_equal(rc, 0);
		assert_non_null(cfg.local_kernels);
		assert_string_equal(cfg.local_kernels, "acme/relu=/src/relu");
		assert_string_equal(cfg.token, "hf_fromfile");
		assert_string_equal(cfg.user_agent, "app/1");
		assert_string_equal(cfg.trusted_orgs, "acme");
		assert_string_equal(cfg.torch_dir, "/opt/torch");
		assert_string_equal(cfg.endpoint, "http://mirror:8090");
		assert_int_equal(cfg.n_endpoints, 2);
		assert_string_equal(cfg.endpoints[1], "https://hub.example");
		assert_string_equal(cfg.cache_dir, "/home/someone/.cache/huggingface/hub");
		assert_non_null(cfg.ua_system);
		kernels__config_free(&cfg);
		if (!fired)
			break; /* past the last allocation */
	}
	/* every copy above is an allocation that was made to fail */
	assert_true(failed >= 10);
	assert_int_equal(failed, n - 1);
	test_rmtree(dir);
	free(file);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_cache_dir_precedence, clean_env),
		cmocka_unit_test_setup(test_home_without_HOME, clean_env),
		cmocka_unit_test_setup(test_paths_expanded, clean_env),
		cmocka_unit_test_setup(test_endpoint, clean_env),
		cmocka_unit_test_setup(test_staging, clean_env),
		cmocka_unit_test_setup(test_token_sources, clean_env),
		cmocka_unit_test_setup(test_switches, clean_env),
		cmocka_unit_test_setup(test_bad_values_named, clean_env),
		cmocka_unit_test_setup(test_setting_warnings_follow_the_log_level, clean_env),
		cmocka_unit_test_setup(test_deadline_beyond_the_clock, clean_env),
		cmocka_unit_test_setup(test_timeout_beyond_a_day, clean_env),
		cmocka_unit_test_setup(test_public_cache_path, clean_env),
		cmocka_unit_test_setup(test_options_version_checked, clean_env),
		cmocka_unit_test_setup(test_options_static_initialiser_and_every_version, clean_env),
		cmocka_unit_test_setup(test_system_override_read_by_version, clean_env),
		cmocka_unit_test_setup(test_allocation_failures_are_reported, clean_env),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
