#include "config.h"
#include "error.h"
#include "util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_ENDPOINT "https://huggingface.co"

int kernels_options_init(kernels_options *opts, unsigned int version)
{
	if (!opts)
		return kernels__error(KERNELS_EINVAL, "kernels_options_init: opts is NULL");
	if (version != KERNELS_OPTIONS_VERSION)
		return kernels__error(KERNELS_EINVAL,
				      "kernels_options_init: version %u is not %u; rebuild against this kernels.h",
				      version, KERNELS_OPTIONS_VERSION);
	memset(opts, 0, sizeof(*opts));
	opts->version = version;
	opts->offline = KERNELS_FROM_ENV;
	opts->max_retries = -1;
	opts->find_torch = KERNELS_FROM_ENV;
	return 0;
}

int kernels__env_true(const char *name)
{
	const char *v = getenv(name);
	static const char *const yes[] = { "1", "on", "yes", "true" };
	size_t i;

	if (!v)
		return 0;
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!strcasecmp(v, yes[i]))
			return 1;
	return 0;
}

static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

static char *hf_home(void)
{
	const char *home = env_nonempty("HF_HOME");
	const char *xdg = env_nonempty("XDG_CACHE_HOME");

	if (home)
		return kernels__strdup(home);
	if (xdg)
		return kernels__sprintf("%s/huggingface", xdg);
	return kernels__sprintf("%s/.cache/huggingface", env_nonempty("HOME") ? getenv("HOME") : "/tmp");
}

static char *default_cache_dir(void)
{
	const char *v;
	char *home, *dir;

	if ((v = env_nonempty("KERNELS_CACHE")) || (v = env_nonempty("HF_HUB_CACHE")))
		return kernels__strdup(v);
	if (!(home = hf_home()))
		return NULL;
	dir = kernels__sprintf("%s/hub", home);
	free(home);
	return dir;
}

/* Reads the token file, keeping only its first line without surrounding
 * blanks, as huggingface_hub does. A missing file simply means no token. */
static char *token_from_file(void)
{
	char *path = NULL, *home, line[4096], *s, *e;
	FILE *f;

	if (env_nonempty("HF_TOKEN_PATH"))
		path = kernels__strdup(getenv("HF_TOKEN_PATH"));
	else if ((home = hf_home())) {
		path = kernels__sprintf("%s/token", home);
		free(home);
	}
	if (!path || !(f = fopen(path, "r"))) {
		free(path);
		return NULL;
	}
	free(path);
	s = fgets(line, sizeof(line), f);
	fclose(f);
	if (!s)
		return NULL;
	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return *s ? kernels__strdup(s) : NULL;
}

static char *strip_slash(char *s)
{
	size_t n = s ? strlen(s) : 0;
	while (n > 0 && s[n - 1] == '/')
		s[--n] = '\0';
	return s;
}

static char *dup_or_null(const char *s)
{
	return s && *s ? kernels__strdup(s) : NULL;
}

int kernels__config_load(kernels__config *cfg, const kernels_options *opts)
{
	kernels_options defaults;

	memset(cfg, 0, sizeof(*cfg));
	if (!opts) {
		kernels_options_init(&defaults, KERNELS_OPTIONS_VERSION);
		opts = &defaults;
	} else if (opts->version != KERNELS_OPTIONS_VERSION) {
		return kernels__error(KERNELS_EINVAL,
				      "kernels_options.version is %u, expected %u; call kernels_options_init()",
				      opts->version, KERNELS_OPTIONS_VERSION);
	}

	cfg->endpoint = strip_slash(kernels__strdup(opts->endpoint ? opts->endpoint :
				    env_nonempty("HF_ENDPOINT") ? getenv("HF_ENDPOINT") : DEFAULT_ENDPOINT));
	cfg->cache_dir = opts->cache_dir ? kernels__strdup(opts->cache_dir) : default_cache_dir();
	cfg->token = opts->token ? dup_or_null(opts->token) :
		     env_nonempty("HF_TOKEN") ? kernels__strdup(getenv("HF_TOKEN")) : token_from_file();
	cfg->offline = opts->offline == KERNELS_FROM_ENV ? kernels__env_true("HF_HUB_OFFLINE") : !!opts->offline;
	cfg->telemetry = !kernels__env_true("HF_HUB_DISABLE_TELEMETRY");
	cfg->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : 30000;
	cfg->max_retries = opts->max_retries >= 0 ? opts->max_retries : 5;
	cfg->max_parallel = opts->max_parallel > 0 ? opts->max_parallel : 8;
	cfg->trust_remote_code = opts->trust_remote_code;
	cfg->trusted_orgs = dup_or_null(opts->trusted_orgs);
	cfg->local_kernels = dup_or_null(getenv("LOCAL_KERNELS"));
	if (opts->system)
		cfg->system_override = *opts->system;
	if (opts->torch_dir && *opts->torch_dir) {
		cfg->torch_dir = kernels__strdup(opts->torch_dir);
		cfg->torch_dir_source = "option";
	} else if (env_nonempty("KERNELS_TORCH_DIR")) {
		cfg->torch_dir = kernels__strdup(getenv("KERNELS_TORCH_DIR"));
		cfg->torch_dir_source = "environment";
	}
	cfg->find_torch = opts->find_torch == KERNELS_FROM_ENV ? kernels__env_true("KERNELS_FIND_TORCH") :
			  !!opts->find_torch;
	cfg->log_cb = opts->log_cb;
	cfg->log_payload = opts->log_payload;
	cfg->progress_cb = opts->progress_cb;
	cfg->progress_payload = opts->progress_payload;

	if (!cfg->endpoint || !cfg->cache_dir || (cfg->torch_dir_source && !cfg->torch_dir)) {
		kernels__config_free(cfg);
		return KERNELS_ENOMEM;
	}
	if (strncmp(cfg->endpoint, "http://", 7) && strncmp(cfg->endpoint, "https://", 8)) {
		int rc = kernels__error(KERNELS_EINVAL,
					"Hub endpoint '%s' is not an http:// or https:// URL; fix HF_ENDPOINT or options.endpoint",
					cfg->endpoint);
		kernels__config_free(cfg);
		return rc;
	}
	return 0;
}

void kernels__config_free(kernels__config *cfg)
{
	free(cfg->endpoint);
	free(cfg->cache_dir);
	free(cfg->token);
	free(cfg->trusted_orgs);
	free(cfg->local_kernels);
	free(cfg->torch_dir);
	memset(cfg, 0, sizeof(*cfg));
}

void kernels__log(const kernels__config *cfg, kernels_log_level level, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (cfg && cfg->log_cb)
		cfg->log_cb(level, msg, cfg->log_payload);
	else if (level >= KERNELS_LOG_WARNING)
		fprintf(stderr, "libkernels: warning: %s\n", msg);
}
