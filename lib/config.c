#include "config.h"
#include "error.h"
#include "hub.h"
#include "layout.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* ---- the default policy ------------------------------------------------- */

static const char *const default_signers[] = {
	"https://github.com/huggingface/kernels-community/.github/workflows/build.yaml@refs/heads/main",
	"https://github.com/huggingface/kernels-community/.github/workflows/build-mac.yaml@refs/heads/main",
	"https://github.com/huggingface/kernels-community/.github/workflows/build-windows.yaml@refs/heads/main",
	/* Signed the builds made before signing existed (torch 2.10-2.12). */
	"https://github.com/huggingface/kernels-community/.github/workflows/sign-old-builds.yaml@refs/heads/main",
};

static const kernels_signature_policy default_policy = {
	.version = KERNELS_SIGNATURE_POLICY_VERSION,
	.issuer = "https://token.actions.githubusercontent.com",
	.repository = "https://github.com/huggingface/kernels-community",
	.signer_uris = default_signers,
	.signer_uri_count = sizeof(default_signers) / sizeof(default_signers[0]),
};

/* ---- the environment the stages read ---------------------------------- */

static const char *const env_names[KERNELS__ENV_VARS] = {
	"KERNELS_BACKEND", "KERNELS_BACKEND_VERSION", "KERNELS_CUDA_VERSION", "KERNELS_GPU_ARCHS",
	"KERNELS_TORCH_VERSION", "KERNELS_TVM_FFI_VERSION", "KERNELS_CXX11_ABI", "KERNELS_CPU", "KERNELS_OS",
	"CUDA_VISIBLE_DEVICES", "VIRTUAL_ENV", "PATH", "HOME", "PYTHONUSERBASE", "PYTHONNOUSERSITE", "PYENV_VERSION",
	"LD_LIBRARY_PATH",
};

static int env_capture(kernels__config *cfg)
{
	size_t i;

	for (i = 0; i < KERNELS__ENV_VARS; i++) {
		const char *v = getenv(env_names[i]);
		if (v && *v && !(cfg->env[i] = kernels__strdup(v)))
			return KERNELS_ENOMEM;
	}
	return 0;
}

const char *kernels__config_env(const kernels__config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < KERNELS__ENV_VARS; i++)
		if (!strcmp(env_names[i], name))
			return cfg->env[i];
	return NULL;
}

/* ---- signature options ------------------------------------------------------ */

/* An array of the caller's policies is as wide as its first element's
 * version says: each element is read at that stride, no further. */
static const size_t policy_sizes[] = { 0, KERNELS__END(kernels_signature_policy, signer_uri_count) };
static const kernels__layout policy_layout = { "kernels_signature_policy", "KERNELS_SIGNATURE_POLICY_VERSION",
					       policy_sizes, KERNELS_SIGNATURE_POLICY_VERSION };
_Static_assert(sizeof(policy_sizes) / sizeof(policy_sizes[0]) == KERNELS_SIGNATURE_POLICY_VERSION + 1,
	       "a new kernels_signature_policy version needs its size in policy_sizes");

int kernels__signature_policies_read(kernels_signature_policy **out, const kernels_signature_policy *policies,
				     size_t count)
{
	const char *at = (const char *)policies;
	size_t i, stride;
	int rc;

	*out = NULL;
	if (!count)
		return 0;
	if (!policies)
		return kernels__error(KERNELS_EINVAL, "%zu signature policies given as NULL", count);
	if (!(stride = kernels__layout_size(&policy_layout, policies->version)))
		return KERNELS_EINVAL;
	if (!(*out = calloc(count, sizeof(**out))))
		return kernels__error_oom();
	for (i = 0; i < count; i++, at += stride) {
		const kernels_signature_policy *p = (const kernels_signature_policy *)at;

		if (p->version != policies->version) {
			rc = kernels__error(KERNELS_EINVAL, "signature policy %zu has version %u, policy 0 has %u: "
					    "every element of one array has the same version", i, p->version,
					    policies->version);
		} else {
			rc = kernels__layout_read(&policy_layout, &(*out)[i], p);
		}
		if (rc == 0)
			rc = kernels__signature_policy_check(&(*out)[i], i);
		if (rc < 0) {
			free(*out);
			*out = NULL;
			return rc;
		}
	}
	return 0;
}


int kernels__signature_policy_check(const kernels_signature_policy *p, size_t i)
{
	size_t k;

	if (!p->issuer || !*p->issuer)
		return kernels__error(KERNELS_EINVAL, "signature policy %zu has no issuer; name the OIDC issuer "
				      "(e.g. https://token.actions.githubusercontent.com)", i);
	if (!p->identity && !p->signer_uri_count)
		return kernels__error(KERNELS_EINVAL, "signature policy %zu names neither an identity nor signer URIs; "
				      "it would accept anyone with a sigstore certificate", i);
	if (p->signer_uri_count && !p->signer_uris)
		return kernels__error(KERNELS_EINVAL,
				      "signature policy %zu: signer_uri_count is %zu but signer_uris is "
				      "NULL", i, p->signer_uri_count);
	for (k = 0; k < p->signer_uri_count; k++)
		if (!p->signer_uris[k])
			return kernels__error(KERNELS_EINVAL, "signature policy %zu: signer URI %zu is NULL", i, k);
	return 0;
}

static char *dup_opt(const char *s)
{
	return s ? kernels__strdup(s) : NULL;
}

static int policy_copy(kernels_signature_policy *to, const kernels_signature_policy *from)
{
	char **uris = NULL;
	size_t k;

	memset(to, 0, sizeof(*to));
	if (from->signer_uri_count && !(uris = calloc(from->signer_uri_count, sizeof(*uris))))
		return kernels__error_oom();
	to->signer_uris = (const char *const *)uris;
	to->signer_uri_count = from->signer_uri_count;
	for (k = 0; k < from->signer_uri_count; k++)
		if (!(uris[k] = kernels__strdup(from->signer_uris[k])))
			return KERNELS_ENOMEM;
	to->issuer = dup_opt(from->issuer);
	to->identity = dup_opt(from->identity);
	to->repository = dup_opt(from->repository);
	if (!to->issuer || (from->identity && !to->identity) || (from->repository && !to->repository))
		return KERNELS_ENOMEM;
	return 0;
}

static void policy_free(kernels_signature_policy *p)
{
	size_t k;
	for (k = 0; k < p->signer_uri_count && p->signer_uris; k++)
		free((char *)p->signer_uris[k]);
	free((char **)p->signer_uris);
	free((char *)p->issuer);
	free((char *)p->identity);
	free((char *)p->repository);
}

static void sigconf_free(struct kernels__sigconf *c)
{
	size_t i;

	if (!c)
		return;
	free(c->root_path);
	/* policies[0] is the static default */
	for (i = 1; i < c->npolicies; i++)
		policy_free(&c->policies[i]);
	free(c->policies);
	free(c);
}

static int mode_from_env(int *mode)
{
	const char *v = getenv("KERNELS_SIGNATURE");

	if (!v || !*v || !strcasecmp(v, "if-present"))
		*mode = KERNELS_SIGNATURE_IF_PRESENT;
	else if (!strcasecmp(v, "off"))
		*mode = KERNELS_SIGNATURE_OFF;
	else if (!strcasecmp(v, "require"))
		*mode = KERNELS_SIGNATURE_REQUIRE;
	else
		return kernels__error(KERNELS_EINVAL, "KERNELS_SIGNATURE is '%.32s'; use off, if-present or require",
				      v);
	return 0;
}

static int sigconf_load(struct kernels__sigconf **out, const kernels_options *opts)
{
	kernels_signature_policy *given = NULL;
	struct kernels__sigconf *c;
	const char *env = getenv("KERNELS_SIGSTORE_TRUSTED_ROOT");
	size_t i;
	int rc = 0;

	*out = NULL;
	if (opts->signature_policy_count && !opts->signature_policies)
		return kernels__error(KERNELS_EINVAL, "kernels_options.signature_policy_count is %zu but "
				      "signature_policies is NULL", opts->signature_policy_count);
	if ((rc = kernels__signature_policies_read(&given, opts->signature_policies, opts->signature_policy_count)) < 0)
		return rc;
	if (!(c = calloc(1, sizeof(*c))) ||
	    !(c->policies = calloc(opts->signature_policy_count + 1, sizeof(*c->policies)))) {
		free(c);
		free(given);
		return kernels__error_oom();
	}
	c->policies[0] = default_policy;
	c->npolicies = 1;
	switch (opts->signature) {
	case KERNELS_SIGNATURE_DEFAULT:
		rc = mode_from_env(&c->mode);
		break;
	case KERNELS_SIGNATURE_OFF:
	case KERNELS_SIGNATURE_IF_PRESENT:
	case KERNELS_SIGNATURE_REQUIRE:
		c->mode = opts->signature;
		break;
	default:
		rc = kernels__error(KERNELS_EINVAL, "kernels_options.signature is %d; use a kernels_signature_mode",
				    opts->signature);
	}
	if (rc == 0 && opts->sigstore_trusted_root && *opts->sigstore_trusted_root) {
		c->root_path = kernels__strdup(opts->sigstore_trusted_root);
		c->root_source = "kernels_options.sigstore_trusted_root";
	} else if (rc == 0 && env && *env) {
		c->root_path = kernels__strdup(env);
		c->root_source = "KERNELS_SIGSTORE_TRUSTED_ROOT";
	}
	if (rc == 0 && c->root_source && !c->root_path)
		rc = KERNELS_ENOMEM;
	for (i = 0; rc == 0 && i < opts->signature_policy_count; i++, c->npolicies++)
		rc = policy_copy(&c->policies[c->npolicies], &given[i]);
	free(given);
	if (rc < 0) {
		if (rc == KERNELS_ENOMEM)
			kernels__error_oom();
		sigconf_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

#define DEFAULT_ENDPOINT "https://huggingface.co"
/* huggingface_hub's staging mode (HUGGINGFACE_CO_STAGING): its CI Hub, and
 * a token file of its own, so that its tests never use the production
 * token. It moves the cache only by a name read after the cache (the
 * legacy one), so the cache stays where it was. */
#define STAGING_ENDPOINT "https://hub-ci.huggingface.co"
#define STAGING_TOKEN_PATH "~/.cache/huggingface_staging/token"
/* huggingface_hub's DEFAULT_ETAG_TIMEOUT and DEFAULT_DOWNLOAD_TIMEOUT. */
#define DEFAULT_TIMEOUT_S (KERNELS_DEFAULT_TIMEOUT_MS / 1000)
#define TIMEOUT_S_MAX (24 * 3600)
#define TOKEN_LINE_MAX 4095 /* bytes of the token file read: far more than a token */
#define DEFAULT_DEADLINE_MS ((long)KERNELS_DEFAULT_DEADLINE_MS)
#define DEFAULT_STALL_BUDGET_MS 30000L
#define ENDPOINTS_MAX 16

/* Where each version of kernels_options ends: version 1 is the layout of
 * 1.0 (and of the headers before it, tests/abi/v0). A field added at the
 * end bumps KERNELS_OPTIONS_VERSION and adds its version's end here. */
static const size_t options_sizes[] = { 0, KERNELS__END(kernels_options, user_agent),
					 KERNELS__END(kernels_options, stall_budget_ms) };
static const kernels__layout options_layout = { "kernels_options", "KERNELS_OPTIONS_VERSION", options_sizes,
						KERNELS_OPTIONS_VERSION };
_Static_assert(sizeof(options_sizes) / sizeof(options_sizes[0]) == KERNELS_OPTIONS_VERSION + 1,
	       "a new kernels_options version needs its size in options_sizes");

/* kernels_system: version 1 ended at torch_source; 2 (1.0) added the arch
 * names and the current device. An override left 0 is read as 2. */
static const size_t system_sizes[] = { 0, KERNELS__END(kernels_system, torch_source),
				       KERNELS__END(kernels_system, current_device) };
static const kernels__layout system_layout = { "kernels_system", "KERNELS_SYSTEM_VERSION", system_sizes,
					       KERNELS_SYSTEM_VERSION };
_Static_assert(sizeof(system_sizes) / sizeof(system_sizes[0]) == KERNELS_SYSTEM_VERSION + 1,
	       "a new kernels_system version needs its size in system_sizes");
#define SYSTEM_UNVERSIONED 2

int kernels_options_init(kernels_options *opts, unsigned int version)
{
	kernels_options defaults = KERNELS_OPTIONS_INIT;
	size_t size;

	if (!opts)
		return kernels__error(KERNELS_EINVAL, "kernels_options_init: opts is NULL");
	if (!(size = kernels__layout_size(&options_layout, version)))
		return KERNELS_EINVAL;
	/* Only the fields the caller's version has: its struct may end there. */
	memcpy(opts, &defaults, size);
	opts->version = version;
	return 0;
}

/* The caller's system override, read no further than its version. */
static int system_read(kernels_system *dst, const kernels_system *ov)
{
	kernels_system copy;

	memset(dst, 0, sizeof(*dst));
	if (ov->version != 0)
		return kernels__layout_read(&system_layout, dst, ov);
	memset(&copy, 0, sizeof(copy));
	memcpy(&copy, ov, system_sizes[SYSTEM_UNVERSIONED]);
	copy.version = SYSTEM_UNVERSIONED;
	return kernels__layout_read(&system_layout, dst, &copy);
}

int kernels__options_full(kernels_options *full, kernels_system *system, const kernels_options *opts)
{
	kernels_options defaults = KERNELS_OPTIONS_INIT;
	int rc;

	*full = defaults;
	if (!opts)
		return 0;
	if ((rc = kernels__layout_read(&options_layout, full, opts)) < 0)
		return rc;
	if (full->system) {
		if ((rc = system_read(system, full->system)) < 0)
			return rc;
		full->system = system;
	}
	return 0;
}

int kernels__device_parse(const char *s, const char *what)
{
	const char *colon = strchr(s, ':');
	char *end;
	long v;

	if (colon)
		s = colon + 1;
	v = strtol(s, &end, 10);
	if (!*s || *end || v < 0 || v >= KERNELS_MAX_GPUS)
		return kernels__error(KERNELS_EINVAL, "%s: '%s' is not a device; give a GPU index such as 0 or "
				      "cuda:1 (0..%d)", what, s, KERNELS_MAX_GPUS - 1);
	return (int)v;
}

static int log_level_parse(const char *s);
#define LOG_NONE (KERNELS_LOG_WARNING + 1) /* above KERNELS_LOG_WARNING: the default sink prints nothing */

/* A warning about a setting, before the configuration (and its log sink
 * and threshold) exists: to the caller's log callback, else stderr unless
 * options.log_level, else KERNELS_LOG, says "error" (nothing). */
static void warn_setting(const kernels_options *opts, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn_setting(const kernels_options *opts, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if ((!opts || !opts->log_cb) &&
	    log_level_parse(opts && opts->log_level ? opts->log_level : getenv("KERNELS_LOG")) == LOG_NONE)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (opts && opts->log_cb)
		opts->log_cb(KERNELS_LOG_WARNING, msg, opts->log_payload);
	else
		fprintf(stderr, "libkernels: warning: %s\n", msg);
}

/* 1, 0, or -1 when `v` is none of huggingface_hub's true words and no
 * usual false word either. */
static int bool_word(const char *v)
{
	static const char *const yes[] = { "1", "on", "yes", "true" }, *const no[] = { "0", "off", "no", "false" };
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(v, yes[i]))
			return 1;
		if (!strcasecmp(v, no[i]))
			return 0;
	}
	return -1;
}

int kernels__env_true(const char *name)
{
	const char *v = getenv(name);
	return v && bool_word(v) == 1;
}

/* A yes/no variable as huggingface_hub reads it (anything but a true word
 * is off), with a warning for a value that is neither. */
static int env_bool(const kernels_options *opts, const char *name)
{
	const char *v = getenv(name);
	int b = v && *v ? bool_word(v) : 0;

	if (b < 0)
		warn_setting(opts, "%s='%.40s' is not 1/0, true/false, yes/no or on/off; read as off", name, v);
	return b == 1;
}

static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

/* The home folder of "~" (`user` NULL) or of "~user", as Python's
 * os.path.expanduser finds it: $HOME, even empty, for "~", else the
 * password database (`buf` holds its entry); NULL when there is none. */
static const char *home_of(const char *user, char *buf, size_t n)
{
	struct passwd pw, *found = NULL;

	if (!user && getenv("HOME"))
		return getenv("HOME");
	if (user)
		getpwnam_r(user, &pw, buf, n, &found);
	else
		getpwuid_r(getuid(), &pw, buf, n, &found);
	return found ? found->pw_dir : NULL;
}

/* `path` with a leading "~" or "~user" made that home, as Python's
 * os.path.expanduser: an unknown user stays as written. */
static int expand_user(kernels__buf *b, const char *path)
{
	char user[256], entry[4096];
	size_t len = strcspn(path + 1, "/"), hl;
	const char *home = NULL;

	if (*path == '~' && len < sizeof(user)) {
		memcpy(user, path + 1, len);
		user[len] = '\0';
		home = home_of(len ? user : NULL, entry, sizeof(entry));
	}
	if (!home)
		return kernels__buf_puts(b, path);
	for (hl = strlen(home); hl && home[hl - 1] == '/'; hl--)
		;
	path += 1 + len;
	if (!hl && !*path)
		return kernels__buf_puts(b, "/");
	return kernels__buf_put(b, home, hl) < 0 ? KERNELS_ENOMEM : kernels__buf_puts(b, path);
}

/* The length of the $NAME or ${NAME} at `d` (a '$'), with the name in
 * `name` (empty when too long to be set); 0 when there is none there. */
static size_t var_at(const char *d, char *name, size_t n)
{
	size_t len = 0, whole;

	if (d[1] == '{') {
		len = strcspn(d + 2, "}");
		if (d[2 + len] != '}')
			return 0;
		whole = len + 3;
		d++;
	} else {
		while (isalnum((unsigned char)d[1 + len]) || d[1 + len] == '_')
			len++;
		if (!len)
			return 0;
		whole = len + 1;
	}
	snprintf(name, n, "%.*s", len < n ? (int)len : 0, d + 1);
	return whole;
}

/* `path` read as huggingface_hub reads its folders,
 * os.path.expandvars(os.path.expanduser(path)): "~" as above, then each
 * $NAME or ${NAME} of a set variable its value (an unset one stays as
 * written), so that both use one cache and one token. NULL: out of
 * memory. */
static char *expand_path(const char *path)
{
	kernels__buf user = { 0 }, b = { 0 };
	const char *p, *d, *v;
	char name[256];
	size_t len;

	if (expand_user(&user, path) < 0 || kernels__buf_puts(&b, "") < 0)
		goto oom;
	for (p = user.ptr; (d = strchr(p, '$')); p = d + len) {
		if (!(len = var_at(d, name, sizeof(name))))
			len = 1;
		v = len > 1 && *name ? getenv(name) : NULL;
		if (kernels__buf_put(&b, p, (size_t)(d - p)) < 0 ||
		    (v ? kernels__buf_puts(&b, v) : kernels__buf_put(&b, d, len)) < 0)
			goto oom;
	}
	if (kernels__buf_puts(&b, p) < 0)
		goto oom;
	kernels__buf_free(&user);
	return kernels__buf_detach(&b);
oom:
	kernels__buf_free(&user);
	kernels__buf_free(&b);
	return NULL;
}

/* os.path.join(dir, name): no second slash after one, and an empty
 * `dir` is the working folder (never the root: "" + "/hub"). */
static char *path_join(const char *dir, const char *name)
{
	size_t n = strlen(dir);

	return kernels__sprintf("%s%s%s", dir, n && dir[n - 1] != '/' ? "/" : "", name);
}

/* huggingface_hub's HF_HOME: $HF_HOME, else $XDG_CACHE_HOME/huggingface,
 * else ~/.cache/huggingface, expanded. */
static char *hf_home(void)
{
	const char *home = env_nonempty("HF_HOME");
	const char *xdg = env_nonempty("XDG_CACHE_HOME");
	char *joined, *dir;

	if (home)
		return expand_path(home);
	if (!(joined = path_join(xdg ? xdg : "~/.cache", "huggingface")))
		return NULL;
	dir = expand_path(joined);
	free(joined);
	return dir;
}

/* A file or folder under huggingface_hub's HF_HOME. */
static char *hf_home_path(const char *name)
{
	char *home = hf_home(), *path;

	if (!home)
		return NULL;
	path = path_join(home, name);
	free(home);
	return path;
}

/* KERNELS_CACHE as written (kernels 0.17 hands it to huggingface_hub
 * so), else huggingface_hub's HF_HUB_CACHE; one that expands to nothing
 * is the working folder, as there. */
static char *default_cache_dir(void)
{
	const char *v;
	char *dir;

	if ((v = env_nonempty("KERNELS_CACHE")))
		return kernels__strdup(v);
	if (!(v = env_nonempty("HF_HUB_CACHE")) &&
	    !(v = env_nonempty("HUGGINGFACE_HUB_CACHE"))) /* the legacy name huggingface_hub still reads */
		return hf_home_path("hub");
	if ((dir = expand_path(v)) && !*dir) {
		free(dir);
		return kernels__strdup(".");
	}
	return dir;
}

/* *dst = a copy of `v`, or NULL for NULL or "". Out of memory is an error,
 * never a setting silently left out: a lost LOCAL_KERNELS would send the
 * call to the Hub, a lost token would make it anonymous. */
static int set_str(char **dst, const char *v)
{
	*dst = NULL;
	if (!v || !*v)
		return 0;
	return (*dst = kernels__strdup(v)) ? 0 : KERNELS_ENOMEM;
}

/* *dst = `v` cleaned as huggingface_hub cleans a token: every CR and LF
 * taken out, blanks around stripped; NULL when nothing is left (the next
 * source is then read). A line break would end the header it goes in. */
static int token_clean(char **dst, const char *v)
{
	char *s, *d, *e;

	*dst = NULL;
	if (!v || !(s = kernels__strdup(v)))
		return v ? KERNELS_ENOMEM : 0;
	for (d = e = s; *e; e++)
		if (*e != '\r' && *e != '\n')
			*d++ = *e;
	while (d > s && isspace((unsigned char)d[-1]))
		d--;
	*d = '\0';
	for (e = s; isspace((unsigned char)*e); e++)
		;
	memmove(s, e, strlen(e) + 1);
	if (*s)
		*dst = s;
	else
		free(s);
	return 0;
}

/* Reads the token file, cleaned (token_clean). A missing file simply
 * means no token; so does one that is no regular file (a FIFO would be
 * waited on forever, by every call) or cannot be read, with a warning. */
static int token_from_file(const kernels_options *opts, char **out)
{
	/* The warnings name what chose the file: staging's is fixed. */
	int staging = kernels__env_true("HUGGINGFACE_CO_STAGING");
	const char *named = staging ? "HUGGINGFACE_CO_STAGING" : "HF_TOKEN_PATH";
	char *path, *text = NULL;
	size_t len = 0;
	int rc = 0;

	*out = NULL;
	if (staging)
		path = expand_path(STAGING_TOKEN_PATH);
	else
		path = env_nonempty("HF_TOKEN_PATH") ? expand_path(getenv("HF_TOKEN_PATH")) : hf_home_path("token");
	if (!path)
		return KERNELS_ENOMEM;
	if (kernels__read_file(path, TOKEN_LINE_MAX, KERNELS__READ_PREFIX, &text, &len, NULL) < 0) {
		if (errno == ENOMEM)
			rc = kernels__error_oom();
		else if (errno == EISDIR || errno == EINVAL)
			warn_setting(opts, "the token file %.300s is not a regular file; no token is sent (fix "
				     "it or %s, or set HF_TOKEN)", path, named);
		else if (errno != ENOENT) /* huggingface_hub raises: not silently anonymous */
			warn_setting(opts, "cannot read the token file %.300s (%s); no token is sent (fix it or "
				     "%s, or set HF_TOKEN)", path, strerror(errno), named);
		free(path);
		return rc;
	}
	free(path);
	rc = token_clean(out, text);
	free(text);
	return rc;
}

/* options.token ("": none, whatever the environment says), else $HF_TOKEN
 * (else the legacy name huggingface_hub still reads), else the token file:
 * huggingface_hub's order, an environment token left empty by cleaning
 * passing on to the file as there. HF_HUB_DISABLE_IMPLICIT_TOKEN leaves
 * only the caller's, as there: who set it sends no token unless asked. */
static int token_load(kernels__config *cfg, const kernels_options *opts)
{
	const char *v;
	int rc;

	if (opts->token && strpbrk(opts->token, "\r\n"))
		return kernels__error(KERNELS_EINVAL, "kernels_options.token holds a line break; pass the token alone "
				      "(read from a file: without its line end)");
	if (opts->token)
		return set_str(&cfg->token, opts->token);
	if (env_bool(opts, "HF_HUB_DISABLE_IMPLICIT_TOKEN"))
		return 0;
	if ((v = env_nonempty("HF_TOKEN")) || (v = env_nonempty("HUGGING_FACE_HUB_TOKEN")))
		if ((rc = token_clean(&cfg->token, v)) < 0 || cfg->token)
			return rc;
	return token_from_file(opts, &cfg->token);
}

void kernels__config_deadline_restart(kernels__config *cfg)
{
	long long now = kernels__now_ms();

	if (cfg->deadline_ms < 0)
		cfg->deadline_at = 0;
	else if (cfg->deadline_ms > LLONG_MAX - now) /* too far off to add to the clock: never runs out */
		cfg->deadline_at = LLONG_MAX;
	else if (!(cfg->deadline_at = now + cfg->deadline_ms))
		cfg->deadline_at = 1;
}

long kernels__deadline_left_ms(const kernels__config *cfg)
{
	long long left = LLONG_MAX, now = 0;

	if (cfg->deadline_at)
		left = cfg->deadline_at - (now = kernels__now_ms());
	if (cfg->attempt && !cfg->attempt->answered) {
		long long first = cfg->attempt->first_byte_at - (now ? now : kernels__now_ms());
		if (first < left)
			left = first;
	}
	if (left == LLONG_MAX)
		return LONG_MAX;
	return left > 0 ? (left < LONG_MAX ? (long)left : LONG_MAX) : 0;
}

void kernels__endpoint_try_begin(const kernels__config *cfg, size_t i, kernels__config *at, kernels__endpoint_try *t)
{
	long left = cfg->deadline_at ? kernels__deadline_left_ms(cfg) : cfg->timeout_ms * (long)(cfg->n_endpoints - i + 1);
	long share = left / (long)(cfg->n_endpoints - i + 1);

	kernels__config_at_endpoint(cfg, i, at);
	at->endpoint_pinned = 1;
	at->attempt = NULL;
	if (i + 1 >= cfg->n_endpoints || cfg->offline)
		return;
	memset(t, 0, sizeof(*t));
	t->budget_ms = share > KERNELS__FIRST_BYTE_MIN_MS ? share : KERNELS__FIRST_BYTE_MIN_MS;
	t->first_byte_at = kernels__now_ms() + t->budget_ms;
	t->after = cfg->n_endpoints - i - 1;
	at->attempt = t;
}

void kernels__endpoint_answered(const kernels__config *cfg)
{
	if (cfg->attempt)
		cfg->attempt->answered = 1;
}

const char *kernels__deadline_what(const kernels__config *cfg, char *buf, size_t n)
{
	/* Which bound ends first, not which one the clock has passed when this
	 * is written: a timeout set to what was left can fire a millisecond
	 * before either, and the message must not depend on that. */
	const kernels__endpoint_try *t = cfg->attempt;

	if (t && !t->answered && t->after > 0 && (!cfg->deadline_at || t->first_byte_at < cfg->deadline_at))
		snprintf(buf, n, "its first-byte budget of %ld ms (its share of the call's deadline, leaving the "
			 "rest to the %zu endpoint%s after it)", cfg->attempt->budget_ms, cfg->attempt->after,
			 cfg->attempt->after == 1 ? "" : "s");
	else
		snprintf(buf, n, "the call's deadline of %ld ms", cfg->deadline_ms);
	return buf;
}

void kernels__endpoint_failed(kernels__endpoint_failures *f, const char *endpoint, const char *msg)
{
	size_t len = strlen(f->text);

	f->n++;
	/* At most a fifth of the whole for one endpoint: the others stay readable. */
	snprintf(f->text + len, sizeof(f->text) - len, "%s(%zu) %s: %.700s", len ? "; " : "", f->n, endpoint, msg);
}

int kernels__endpoint_failures_raise(const kernels__endpoint_failures *f, int rc)
{
	long unserved = kernels__error_unserved();   /* the last endpoint's: rc is its */

	if (f->n < 2)
		return rc;
	kernels__error(rc, "each endpoint failed, in the order tried: %s", f->text);
	kernels__error_mark_unserved(unserved);
	return rc;
}

/* `v` as a whole number into *out, with blanks around it as Python's int()
 * takes them (an env file's line end); 0 when it is one. */
static int whole_number(const char *v, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(v, &end, 10);
	while (end > v && isspace((unsigned char)*end))
		end++;
	return errno || end == v || *end ? -1 : 0;
}

/* A whole number of seconds from the environment, as huggingface_hub reads
 * HF_HUB_ETAG_TIMEOUT: unset, empty or 0 gives the default; garbage too,
 * with a warning (Python would raise). */
static long env_seconds(const kernels_options *opts, const char *name, long dflt)
{
	const char *v = getenv(name);
	long s;

	if (!v || !*v)
		return dflt;
	if (whole_number(v, &s) < 0 || s < 0 || s > TIMEOUT_S_MAX) {
		warn_setting(opts, "%s='%.40s' is not a number of seconds (0 to %d; 0: the default); using %ld",
			     name, v, TIMEOUT_S_MAX, dflt);
		return dflt;
	}
	return s ? s : dflt;
}

/* The timeout option, at most the day the variables allow: budgets are
 * made of several timeouts (four requests' worth, the shares of the
 * endpoints), which must fit in a long. */
static long timeout_option(long ms)
{
	return ms < 1000L * TIMEOUT_S_MAX ? ms : 1000L * TIMEOUT_S_MAX;
}

/* A budget in ms: the option, else the variable, else `dflt`; negative:
 * none (-1). A variable that is no whole number is warned about. */
static long ms_from(const kernels_options *opts, long option, const char *name, long dflt)
{
	const char *v;
	long ms;

	if (option)
		return option < 0 ? -1 : option;
	v = getenv(name);
	if (!v || !*v)
		return dflt;
	if (whole_number(v, &ms) < 0) {
		warn_setting(opts, "%s='%.40s' is not a whole number of milliseconds (0: the default, negative: none); "
			     "using %ld", name, v, dflt);
		return dflt;
	}
	return ms < 0 ? -1 : ms ? ms : dflt;
}

static long deadline_from(const kernels_options *opts)
{
	return ms_from(opts, opts->deadline_ms, "KERNELS_DEADLINE_MS", DEFAULT_DEADLINE_MS);
}

static void endpoints_free(char **v)
{
	size_t i;

	for (i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static char *strip_slash(char *s);

/* What is wrong with the endpoint `url`, or NULL: curl refuses each such
 * URL, which would read as a Hub that cannot be reached. */
static const char *url_flaw(const char *url)
{
	const char *p;

	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
		return "is not an http:// or https:// URL";
	for (p = url; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return "has a blank or control character";
	p = strstr(url, "://") + 3;
	if (!*p || strchr("/?#", *p))
		return "names no host";
	return NULL;
}

/* Splits "a, b c" into a NULL-terminated list of URLs without trailing
 * slashes. An empty list is an error: the caller asked for endpoints. */
static int endpoints_parse(const char *text, const char *source, char ***out, size_t *count)
{
	char **v = calloc(ENDPOINTS_MAX + 1, sizeof(*v));
	size_t n = 0;
	const char *p = text;

	*out = NULL;
	*count = 0;
	if (!v)
		return kernels__error_oom();
	while (*p) {
		size_t len;
		while (*p == ',' || *p == ' ' || *p == '\t' || *p == '\n')
			p++;
		len = strcspn(p, ", \t\n");
		if (!len)
			break;
		if (n == ENDPOINTS_MAX) {
			endpoints_free(v);
			return kernels__error(KERNELS_EINVAL,
					      "%s lists more than %d endpoints; name a few mirrors and the Hub",
					      source, ENDPOINTS_MAX);
		}
		if (!(v[n] = strip_slash(strndup(p, len)))) {
			endpoints_free(v);
			return kernels__error_oom();
		}
		if (url_flaw(v[n])) {
			int rc = kernels__error(KERNELS_EINVAL,
						"endpoint '%s' in %s %s; "
						"fix the list (comma-separated URLs, a mirror first and the Hub last)",
						v[n], source, url_flaw(v[n]));
			endpoints_free(v);
			return rc;
		}
		n++;
		p += len;
	}
	if (!n) {
		endpoints_free(v);
		return kernels__error(KERNELS_EINVAL, "%s is set but names no endpoint; list http(s) URLs separated by "
				      "commas, or unset it", source);
	}
	*out = v;
	*count = n;
	return 0;
}

static char *strip_slash(char *s)
{
	size_t n = s ? strlen(s) : 0;
	while (n > 0 && s[n - 1] == '/')
		s[--n] = '\0';
	return s;
}


struct kernels__log_seen {
	pthread_mutex_t lock; /* download workers log too */
	char **msgs;
	size_t n, cap;
};

/* "error", "warn", "info", "debug" (any case) -> the default sink's
 * threshold; -1 for anything else. */
static int log_level_parse(const char *s)
{
	static const struct {
		const char *name;
		int level;
	} names[] = { { "error", LOG_NONE }, { "warn", KERNELS_LOG_WARNING }, { "warning", KERNELS_LOG_WARNING },
		      { "info", KERNELS_LOG_INFO }, { "debug", KERNELS_LOG_DEBUG } };
	size_t i;

	for (i = 0; s && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(s, names[i].name))
			return names[i].level;
	return -1;
}

static int log_setup(kernels__config *cfg, const kernels_options *opts)
{
	const char *env = getenv("KERNELS_LOG");

	if (opts->log_level) {
		if ((cfg->log_level = log_level_parse(opts->log_level)) < 0)
			return kernels__error(KERNELS_EINVAL,
					      "kernels_options.log_level is '%s'; use \"error\", \"warn\", "
					      "\"info\" or \"debug\" (or NULL for $KERNELS_LOG)", opts->log_level);
	} else if ((cfg->log_level = log_level_parse(env)) < 0) {
		cfg->log_level = KERNELS_LOG_WARNING;
		/* KERNELS_LOG sets the default sink only: a caller with its own
		 * (the CLI) reads it, and warns, itself. */
		if (env && *env && !opts->log_cb)
			warn_setting(opts, "KERNELS_LOG='%.40s' is not error, warn, info or debug; showing warnings", env);
	}
	if (!(cfg->log_seen = calloc(1, sizeof(*cfg->log_seen))))
		return kernels__error_oom();
	pthread_mutex_init(&cfg->log_seen->lock, NULL);
	return 0;
}

static void log_seen_free(struct kernels__log_seen *seen)
{
	size_t i;

	if (!seen)
		return;
	for (i = 0; i < seen->n; i++)
		free(seen->msgs[i]);
	free(seen->msgs);
	pthread_mutex_destroy(&seen->lock);
	free(seen);
}

/* 1 when `msg` was already given in this call; else records it. */
static int log_seen_before(struct kernels__log_seen *seen, const char *msg)
{
	size_t i;
	int found = 0;

	if (!seen)
		return 0;
	pthread_mutex_lock(&seen->lock);
	for (i = 0; i < seen->n && !found; i++)
		found = !strcmp(seen->msgs[i], msg);
	/* Out of memory: the warning is given again, never lost. */
	if (!found && KERNELS__ARRAY_GROW(seen->msgs, seen->cap, seen->n) == 0 &&
	    (seen->msgs[seen->n] = kernels__strdup(msg)))
		seen->n++;
	pthread_mutex_unlock(&seen->lock);
	return found;
}

/* HF_HUB_USER_AGENT_ORIGIN, which huggingface_hub ends its User-Agent
 * with; one that cannot be a header's value (a control character would
 * end the header, or add one) is left out, said so. */
static int ua_origin_load(kernels__config *cfg, const kernels_options *opts)
{
	const char *v = env_nonempty("HF_HUB_USER_AGENT_ORIGIN"), *p;

	for (p = v; p && *p; p++)
		if ((unsigned char)*p < ' ' || *p == 0x7f) {
			warn_setting(opts, "HF_HUB_USER_AGENT_ORIGIN holds a control character; it is left out of the "
				     "User-Agent (set it to one line of text)");
			return 0;
		}
	return set_str(&cfg->ua_origin, v);
}

/* The option, else huggingface_hub's: its staging Hub in staging mode
 * (over HF_ENDPOINT, as there), else HF_ENDPOINT; NULL: the default. */
static const char *endpoint_setting(const kernels_options *opts)
{
	if (opts->endpoint)
		return opts->endpoint;
	return kernels__env_true("HUGGINGFACE_CO_STAGING") ? STAGING_ENDPOINT : env_nonempty("HF_ENDPOINT");
}

/* The configuration's strings, each copy checked (set_str). */
static int strings_load(kernels__config *cfg, const kernels_options *opts)
{
	const char *endpoint = endpoint_setting(opts);
	int rc;

	if (!(cfg->endpoint = strip_slash(kernels__strdup(endpoint ? endpoint : DEFAULT_ENDPOINT))) ||
	    !(cfg->cache_dir = opts->cache_dir ? kernels__strdup(opts->cache_dir) : default_cache_dir()))
		return KERNELS_ENOMEM;
	if (!(cfg->ua_system = calloc(1, KERNELS__UA_SYSTEM_MAX)))
		return kernels__error_oom();
	if ((rc = token_load(cfg, opts)) < 0 || (rc = set_str(&cfg->user_agent, opts->user_agent)) < 0 ||
	    (rc = ua_origin_load(cfg, opts)) < 0 ||
	    (rc = set_str(&cfg->trusted_orgs, opts->trusted_orgs)) < 0 ||
	    (rc = set_str(&cfg->local_kernels, getenv("LOCAL_KERNELS"))) < 0)
		return rc;
	if (opts->torch_dir && *opts->torch_dir) {
		cfg->torch_dir_source = "option";
		return set_str(&cfg->torch_dir, opts->torch_dir);
	}
	if (env_nonempty("KERNELS_TORCH_DIR")) {
		cfg->torch_dir_source = "environment";
		return set_str(&cfg->torch_dir, getenv("KERNELS_TORCH_DIR"));
	}
	return 0;
}

static int device_load(kernels__config *cfg, const kernels_options *opts)
{
	const char *dev = opts->device ? opts->device : env_nonempty("KERNELS_DEVICE");

	cfg->device = -1;
	if (dev && (cfg->device = kernels__device_parse(dev, opts->device ? "kernels_options.device"
									   : "KERNELS_DEVICE")) < 0)
		return cfg->device;
	return 0;
}

/* options.endpoints, else $KERNELS_ENDPOINTS, else the one endpoint. */
static int endpoints_load(kernels__config *cfg, const kernels_options *opts)
{
	const char *list = opts->endpoints && *opts->endpoints ? opts->endpoints : env_nonempty("KERNELS_ENDPOINTS");
	int rc;

	if (!list) {
		if (!(cfg->endpoints = calloc(2, sizeof(*cfg->endpoints))) ||
		    !(cfg->endpoints[0] = kernels__strdup(cfg->endpoint)))
			return kernels__error_oom();
		cfg->n_endpoints = 1;
		return 0;
	}
	if ((rc = endpoints_parse(list, list == opts->endpoints ? "kernels_options.endpoints" : "KERNELS_ENDPOINTS",
				  &cfg->endpoints, &cfg->n_endpoints)) < 0)
		return rc;
	/* The first one is "the endpoint" until it fails. */
	free(cfg->endpoint);
	return (cfg->endpoint = kernels__strdup(cfg->endpoints[0])) ? 0 : KERNELS_ENOMEM;
}

static int settings_check(const kernels__config *cfg)
{
	/* "" would put the cache at the root: "/" + "kernels--org--name" */
	if (!*cfg->cache_dir)
		return kernels__error(KERNELS_EINVAL, "kernels_options.cache_dir (--cache-dir) is empty; name a folder, or pass "
				      "NULL for the default ($KERNELS_CACHE, $HF_HUB_CACHE, $HF_HOME/hub)");
	if (url_flaw(cfg->endpoint))
		return kernels__error(KERNELS_EINVAL, "Hub endpoint '%s' %s; fix HF_ENDPOINT or options.endpoint",
				      cfg->endpoint, url_flaw(cfg->endpoint));
	return 0;
}

/* The option, else the environment, as huggingface_hub reads it:
 * TRANSFORMERS_OFFLINE when HF_HUB_OFFLINE is unset or empty. What decided
 * is kept, for messages that say how to go online. */
static void offline_load(kernels__config *cfg, const kernels_options *opts)
{
	int hub = env_nonempty("HF_HUB_OFFLINE") != NULL;

	cfg->offline = opts->offline != KERNELS_FROM_ENV
			       ? !!opts->offline
			       : env_bool(opts, hub ? "HF_HUB_OFFLINE" : "TRANSFORMERS_OFFLINE");
	if (cfg->offline)
		cfg->offline_by = opts->offline != KERNELS_FROM_ENV ? KERNELS__OFFLINE_OPTION
				  : hub ? KERNELS__OFFLINE_HF_HUB_OFFLINE : KERNELS__OFFLINE_TRANSFORMERS_OFFLINE;
}

/* What made a call offline, by kernels__offline_by: as said in a
 * message, and how to undo it. */
static const struct {
	const char *said, *hint;
} offline_sources[] = {
	[KERNELS__OFFLINE_NONE] = { "offline", "go online" },
	[KERNELS__OFFLINE_HF_HUB_OFFLINE] = { "offline (HF_HUB_OFFLINE)", "unset HF_HUB_OFFLINE" },
	[KERNELS__OFFLINE_TRANSFORMERS_OFFLINE] = { "offline (TRANSFORMERS_OFFLINE)", "unset TRANSFORMERS_OFFLINE" },
	[KERNELS__OFFLINE_OPTION] = { "offline (kernels_options.offline)",
				      "leave out --offline: kernels_options.offline = 0" },
	[KERNELS__OFFLINE_LOAD_LOCKED] = { "offline (kernels_load_locked reads only the cache)",
					   "libkernels load --fetch, or kernels_get_locked" },
};

const char *kernels__config_online_hint(const kernels__config *cfg)
{
	return cfg->offline_why ? "wait until the Hub answers" : offline_sources[cfg->offline_by].hint;
}

const char *kernels__config_offline_said(const kernels__config *cfg)
{
	return offline_sources[cfg->offline_by].said;
}

int kernels__config_load(kernels__config *cfg, const kernels_options *opts)
{
	kernels_options full;
	kernels_system system;
	int rc, no_telemetry;

	memset(cfg, 0, sizeof(*cfg));
	if ((rc = kernels__options_full(&full, &system, opts)) < 0)
		return rc;
	opts = &full;
	if (opts->system)
		cfg->system_override = *opts->system;

	offline_load(cfg, opts);
	/* as huggingface_hub: any of the three turns telemetry off (each read,
	 * so each bad value is warned about) */
	no_telemetry = env_bool(opts, "HF_HUB_DISABLE_TELEMETRY");
	no_telemetry += env_bool(opts, "DISABLE_TELEMETRY");
	no_telemetry += env_bool(opts, "DO_NOT_TRACK");
	cfg->telemetry = !no_telemetry;
	cfg->skip_arch_check = opts->skip_arch_check ? 1 : env_bool(opts, "KERNELS_SKIP_ARCH_CHECK");
	cfg->no_symlinks = env_bool(opts, "HF_HUB_DISABLE_SYMLINKS");
	cfg->timeout_ms = opts->timeout_ms > 0 ? timeout_option(opts->timeout_ms)
			  : 1000 * env_seconds(opts, "HF_HUB_ETAG_TIMEOUT", DEFAULT_TIMEOUT_S);
	cfg->download_timeout_ms = opts->timeout_ms > 0 ? timeout_option(opts->timeout_ms)
				   : 1000 * env_seconds(opts, "HF_HUB_DOWNLOAD_TIMEOUT", DEFAULT_TIMEOUT_S);
	cfg->deadline_ms = deadline_from(opts);
	cfg->stall_budget_ms = ms_from(opts, opts->stall_budget_ms, "KERNELS_STALL_BUDGET_MS", DEFAULT_STALL_BUDGET_MS);
	kernels__config_deadline_restart(cfg);
	cfg->max_retries = opts->max_retries >= 0 ? opts->max_retries : KERNELS_DEFAULT_MAX_RETRIES;
	cfg->max_parallel = opts->max_parallel > 0 ? opts->max_parallel : KERNELS_DEFAULT_MAX_PARALLEL;
	cfg->trust_remote_code = opts->trust_remote_code;
	cfg->find_torch = opts->find_torch == KERNELS_FROM_ENV ? env_bool(opts, "KERNELS_FIND_TORCH") :
			  !!opts->find_torch;
	cfg->log_cb = opts->log_cb;
	cfg->log_payload = opts->log_payload;
	cfg->progress_cb = opts->progress_cb;
	cfg->progress_payload = opts->progress_payload;

	if ((rc = device_load(cfg, opts)) < 0 || (rc = strings_load(cfg, opts)) < 0 ||
	    (rc = log_setup(cfg, opts)) < 0 || (rc = endpoints_load(cfg, opts)) < 0 ||
	    (rc = sigconf_load(&cfg->sig, opts)) < 0 || (rc = env_capture(cfg)) < 0 || (rc = settings_check(cfg)) < 0 ||
	    (!(cfg->conn = kernels__hub_conn_new()) && (rc = KERNELS_ENOMEM))) {
		kernels__config_free(cfg);
		return rc;
	}
	return 0;
}

/* What the call's connections carried, for whoever debugs a slow call:
 * a request that opened no connection reused one. */
static void conn_close(kernels__config *cfg)
{
	unsigned long requests, connects;
	const char *failure;
	char origin[300];
	long status;

	if (!cfg->conn)
		return;
	/* A warm-up fails nothing: its end is only told. */
	while (kernels__hub_conn_warm_over(cfg->conn, origin, sizeof(origin), &status, &failure)) {
		if (!failure)
			kernels__log(cfg, KERNELS_LOG_DEBUG, "the early connection to the CDN at %s: its warm-up "
				     "answered %ld", origin, status);
		else
			kernels__log(cfg, KERNELS_LOG_INFO, "opening the connection to the CDN at %s early failed "
				     "(%s); the call went on without it", origin, failure);
	}
	kernels__hub_conn_counts(cfg->conn, &requests, &connects);
	if (requests)
		kernels__log(cfg, KERNELS_LOG_DEBUG, "%lu request%s over %lu new connection%s", requests,
			     requests == 1 ? "" : "s", connects, connects == 1 ? "" : "s");
	kernels__hub_conn_free(cfg->conn);
}

void kernels__config_free(kernels__config *cfg)
{
	size_t i;

	conn_close(cfg);
	free(cfg->endpoint);
	free(cfg->cache_dir);
	free(cfg->token);
	free(cfg->trusted_orgs);
	free(cfg->local_kernels);
	free(cfg->torch_dir);
	free(cfg->user_agent);
	free(cfg->ua_origin);
	free(cfg->ua_system);
	endpoints_free(cfg->endpoints);
	sigconf_free(cfg->sig);
	log_seen_free(cfg->log_seen);
	for (i = 0; i < KERNELS__ENV_VARS; i++)
		free(cfg->env[i]);
	memset(cfg, 0, sizeof(*cfg));
}

void kernels__config_at_endpoint(const kernels__config *cfg, size_t i, kernels__config *out)
{
	*out = *cfg;
	if (i < cfg->n_endpoints)
		out->endpoint = cfg->endpoints[i];
}

int kernels__endpoint_failover(int rc)
{
	return rc == KERNELS_ENETWORK || rc == KERNELS_EHTTP || rc == KERNELS_ENOTFOUND;
}

int kernels__endpoint_next(const kernels__config *cfg, size_t i, const kernels__config *at, int rc,
			   kernels__endpoint_failures *failed)
{
	if (rc < 0 && !cfg->offline)
		kernels__endpoint_failed(failed, at->endpoint, kernels_error_last());
	if (rc == 0 || cfg->offline || !kernels__endpoint_failover(rc) || i + 1 == cfg->n_endpoints)
		return 0;
	kernels__log(cfg, KERNELS_LOG_INFO, "%s failed (%s); trying %s", at->endpoint, kernels_error_last(),
		     cfg->endpoints[i + 1]);
	return 1;
}

void kernels__log(const kernels__config *cfg, kernels_log_level level, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* One call may notice the same thing in several stages (a newer major
	 * version while resolving and again while selecting): say it once. */
	if (level >= KERNELS_LOG_WARNING && cfg && log_seen_before(cfg->log_seen, msg))
		return;
	if (cfg && cfg->log_cb)
		cfg->log_cb(level, msg, cfg->log_payload);
	else if ((int)level >= (cfg ? cfg->log_level : KERNELS_LOG_WARNING))
		fprintf(stderr, "libkernels: %s: %s\n",
			level >= KERNELS_LOG_WARNING ? "warning" : level == KERNELS_LOG_INFO ? "info" : "debug", msg);
}
