/* libkernels CLI: option parsing, output, progress, cache paths. */

#include "cli.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- options ---------------------------------------------------------------- */

const cli_opt cli_global_opts[] = {
	{ "endpoint", 0, "URL", "Hub URL (default: $HF_ENDPOINT, else https://huggingface.co; see HUGGINGFACE_CO_STAGING)" },
	{ "cache-dir", 0, "DIR", "cache folder (default: $KERNELS_CACHE, $HF_HUB_CACHE, $HF_HOME/hub)" },
	{ "offline", 0, NULL, "make no network call: use only the cache (like HF_HUB_OFFLINE=1)" },
	{ "trust-remote-code", 0, NULL, "load kernels whose publisher the Hub does not mark as trusted" },
	{ "trusted-orgs", 0, "ORGS", "comma-separated organisations or repo ids to trust without asking the Hub" },
	{ "require-signature", 0, NULL, "get, load, download: refuse variants without a valid sigstore signature" },
	{ "timeout", 0, "MS", "per-request connect/stall timeout in ms (default: $HF_HUB_*_TIMEOUT s, else "
	  CLI_STR(KERNELS_DEFAULT_TIMEOUT_MS) ")" },
	{ "retries", 0, "N", "retries on connection errors, 5xx and 429 (default " CLI_STR(KERNELS_DEFAULT_MAX_RETRIES) ")" },
	{ "max-parallel", 0, "N", "concurrent transfers (default " CLI_STR(KERNELS_DEFAULT_MAX_PARALLEL) ")" },
	{ "backend", 0, "NAME", "resolve variants for this backend: cpu, cuda, rocm, xpu, metal, ..." },
	{ "backend-version", 0, "X.Y", "the backend's version, e.g. 12.8 for CUDA" },
	{ "torch", 0, "VERSION", "resolve for this torch version (\"2.11\"), or \"none\"" },
	{ "torch-dir", 0, "DIR", "the installed torch to resolve for and load (site-packages/torch or its lib/)" },
	{ "no-find-torch", 0, NULL, "do not look for the torch of $VIRTUAL_ENV or of python3 on PATH" },
	{ "cxx11-abi", 0, "0|1", "the torch C++ ABI to resolve for" },
	{ "tvm-ffi", 0, "VERSION", "resolve for this tvm-ffi version (\"0.1\"), or \"none\"" },
	{ "gpu-archs", 0, "LIST", "GPU archs: compute capabilities (\"9.0,8.6\"), ROCm gfx names, or \"none\"" },
	{ "device", 0, "N", "the GPU the kernel will run on, for the arch check (default: the current one)" },
	{ "skip-arch-check", 0, NULL, "do not compare a build's archs with the device (check_arch=False)" },
	{ "json", 0, NULL, "print the result as JSON on stdout (for scripts)" },
	{ "quiet", 'q', NULL, "no progress, notes or warnings on stderr: errors only" },
	{ "verbose", 'v', NULL, "also the library's info messages (retries, ...); twice (-vv): debug too" },
	{ "bytes", 0, NULL, "sizes as byte counts, not KiB/MiB/GiB (for scripts)" },
	{ "progress", 0, NULL, "draw a progress bar even when stderr is not a terminal" },
	{ "no-progress", 0, NULL, "never draw a progress bar (plain lines only)" },
	{ NULL, 0, NULL, NULL }
};

/* The flags that describe the system. Their values are judged by the
 * library, not here: the one detection after parsing (cli_system) refuses
 * a bad one with a message that starts with the setting it came through,
 * and the CLI words that refusal as its flag. `setting`: a KERNELS_*
 * variable the flag is passed through (the library parses it, as it
 * documents in system.h), else the options field. The backend goes
 * through the options, so that the library says it came from them.
 * `wants`: what the flag takes, for that usage error; NULL: the library's
 * own list follows (a backend's nearest name and the backends). The order
 * is that of cli_ctx.system_flag. */
static const struct {
	const char *flag, *setting, *wants;
} system_flags[CLI_SYSTEM_FLAGS] = {
	{ "torch", "KERNELS_TORCH_VERSION", "is not a version like 2.11, or none" },
	{ "tvm-ffi", "KERNELS_TVM_FFI_VERSION", "is not a version like 0.1, or none" },
	{ "cxx11-abi", "KERNELS_CXX11_ABI", "must be 0 or 1" },
	{ "gpu-archs", "KERNELS_GPU_ARCHS", "is not a list like 9.0,8.6 or gfx90a,gfx942 (at most "
	  CLI_STR(KERNELS_MAX_GPUS) ", not mixed), or none" },
	{ "backend", "kernels_options.system->backend", NULL },
	{ "device", "kernels_options.device", "is not a GPU index such as 0 or cuda:1" },
};

/* Edit distance of a and b, a swap of two neighbours counting as one edit
 * ("cup" is one from "cpu"), capped at 9 (all a suggestion needs). */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j, d[32][32];

	if (la > 30 || lb > 30)
		return 9;
	for (i = 0; i <= la; i++)
		d[i][0] = i;
	for (j = 0; j <= lb; j++)
		d[0][j] = j;
	for (i = 1; i <= la; i++)
		for (j = 1; j <= lb; j++) {
			size_t v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[la][lb] > 9 ? 9 : d[la][lb];
}

/* The name of `names` (or of the options `opts`) nearest to `s`
 * (case-insensitively equal, or at most 2 edits and fewer than half its
 * length); NULL when none is near. */
const char *cli_nearest(const char *s, size_t len, const char *const *names, const cli_opt *opts)
{
	const char *best = NULL;
	size_t bd = 3, i;
	char buf[64];

	snprintf(buf, sizeof(buf), "%.*s", (int)(len < 63 ? len : 63), s);
	for (i = 0; names ? names[i] != NULL : opts && opts[i].name != NULL; i++) {
		const char *n = names ? names[i] : opts[i].name;
		size_t d = !strcasecmp(n, buf) ? 0 : distance(buf, n);
		if (d < bd && 2 * d < strlen(n)) {
			bd = d;
			best = n;
		}
	}
	return best;
}

/* A system flag given: passed on as the library reads it, and recorded
 * so that a refusal of its value is named as the flag. An empty variable
 * reads as unset and an empty backend as detect, so an empty value is
 * refused here. Returns -1, or the usage error's exit code. */
static int system_flag(cli_ctx *ctx, const cli_command *cmd, size_t i, const char *value)
{
	const char *name = system_flags[i].flag;

	if (!*value && strcmp(name, "device"))
		return cli_usage_error(cmd, "--%s wants a %s", name,
				       strcmp(name, "backend") ? "value" : "name (cpu, cuda, rocm, ...)");
	ctx->system_flag[i] = value;
	if (!strncmp(system_flags[i].setting, "KERNELS_", 8))
		setenv(system_flags[i].setting, value, 1);
	else if (!strcmp(name, "backend")) {
		ctx->sys.backend = value;
		ctx->opts.system = &ctx->sys;
	} else
		ctx->opts.device = value;
	return -1;
}

static int parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* 1 when `url` is no endpoint: the library's test (it refuses such an
 * endpoint, as curl would), made here so that a bad --endpoint is a bad
 * command line, exit 2, as a bad --timeout is. */
static int url_flaw(const char *url)
{
	const char *host = !strncmp(url, "https://", 8) ? url + 8 : !strncmp(url, "http://", 7) ? url + 7 : NULL;

	if (!host || !*host || strchr("/?#", *host))
		return 1;
	for (; *url; url++)
		if ((unsigned char)*url <= ' ' || *url == 0x7f)
			return 1;
	return 0;
}

static int apply_global(cli_ctx *ctx, const cli_command *cmd, const char *name, const char *value)
{
	long n;
	size_t i;

	if (!strcmp(name, "endpoint")) {
		if (url_flaw(value))
			return cli_usage_error(cmd, "--endpoint wants an http:// or https:// URL with a host (https://"
					       "huggingface.co, a mirror's), not '%s'", value);
		ctx->opts.endpoint = value;
	}
	else if (!strcmp(name, "cache-dir"))
		ctx->opts.cache_dir = value;
	else if (!strcmp(name, "offline"))
		ctx->opts.offline = 1;
	else if (!strcmp(name, "require-signature"))
		ctx->opts.signature = KERNELS_SIGNATURE_REQUIRE;
	else if (!strcmp(name, "trust-remote-code"))
		ctx->opts.trust_remote_code = 1;
	else if (!strcmp(name, "trusted-orgs"))
		ctx->opts.trusted_orgs = value;
	else if (!strcmp(name, "torch-dir"))
		ctx->opts.torch_dir = value;
	else if (!strcmp(name, "no-find-torch"))
		ctx->opts.find_torch = 0;
	else if (!strcmp(name, "skip-arch-check"))
		ctx->opts.skip_arch_check = 1;
	else if (!strcmp(name, "backend-version"))
		ctx->backend_version = value;
	else if (!strcmp(name, "timeout")) {
		if (parse_long(value, 1, 86400000, &n))
			return cli_usage_error(cmd, "--timeout wants milliseconds (1 to 86400000), not '%s'", value);
		ctx->opts.timeout_ms = n;
	} else if (!strcmp(name, "retries")) {
		if (parse_long(value, 0, 100, &n))
			return cli_usage_error(cmd, "--retries wants a number from 0 to 100, not '%s'", value);
		ctx->opts.max_retries = (int)n;
	} else if (!strcmp(name, "max-parallel")) {
		if (parse_long(value, 1, 256, &n))
			return cli_usage_error(cmd, "--max-parallel wants a number from 1 to 256, not '%s'", value);
		ctx->opts.max_parallel = (int)n;
	} else if (!strcmp(name, "json"))
		ctx->json = 1;
	else if (!strcmp(name, "quiet"))
		ctx->quiet = 1;
	else if (!strcmp(name, "verbose"))
		ctx->verbose++;
	else if (!strcmp(name, "bytes"))
		ctx->bytes = 1;
	else if (!strcmp(name, "progress"))
		ctx->progress = 1;
	else if (!strcmp(name, "no-progress"))
		ctx->progress = 0;
	else {
		for (i = 0; i < CLI_SYSTEM_FLAGS; i++)
			if (!strcmp(name, system_flags[i].flag))
				return system_flag(ctx, cmd, i, value);
	}
	return -1;
}

static const cli_opt *find_opt(const cli_opt *opts, const char *name, size_t len, char short_name, int *index)
{
	int i;

	for (i = 0; opts && opts[i].name; i++) {
		if (short_name ? opts[i].short_name == short_name
			       : strlen(opts[i].name) == len && !strncmp(opts[i].name, name, len)) {
			*index = i;
			return &opts[i];
		}
	}
	return NULL;
}

int cli_usage_error(const cli_command *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs(CLI_NAME ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (cmd)
		fprintf(stderr, "\nusage: " CLI_NAME " %s%s%s [options]\nrun '" CLI_NAME " %s --help' for the "
			"options\n", cmd->name, cmd->args ? " " : "", cmd->args ? cmd->args : "", cmd->name);
	else
		fputs("\nrun '" CLI_NAME " --help' for the commands\n", stderr);
	return CLI_USAGE;
}

static void opt_lines(FILE *out, const cli_opt *opts)
{
	int i;
	for (i = 0; opts && opts[i].name; i++) {
		char left[64];
		if (opts[i].short_name)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", opts[i].short_name, opts[i].name,
				 opts[i].arg ? " " : "", opts[i].arg ? opts[i].arg : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", opts[i].name, opts[i].arg ? " " : "",
				 opts[i].arg ? opts[i].arg : "");
		fprintf(out, "  %-28s %s\n", left, opts[i].help);
	}
}

void cli_global_help(FILE *out)
{
	opt_lines(out, cli_global_opts);
}

/* `text` on lines of at most 78 columns, each indented by `indent`. */
static void wrap(FILE *out, const char *text, int indent)
{
	const char *p = text;

	while (*p) {
		const char *end = p, *brk = NULL;
		while (*end && *end != '\n' && (end - p < 78 - indent || !brk)) {
			if (*end == ' ')
				brk = end;
			end++;
		}
		if (*end && *end != '\n' && brk)
			end = brk;
		fprintf(out, "%*s%.*s\n", indent, "", (int)(end - p), p);
		p = *end ? end + 1 : end;
	}
}

void cli_command_section(FILE *out, const cli_command *cmd)
{
	fprintf(out, "\n" CLI_NAME " %s%s%s\n", cmd->name, cmd->args ? " " : "", cmd->args ? cmd->args : "");
	wrap(out, cmd->summary, 2);
	if (cmd->details)
		wrap(out, cmd->details, 2);
	if (cmd->opts && cmd->opts[0].name) {
		fputs("  options:\n", out);
		opt_lines(out, cmd->opts);
	}
	if (cmd->example)
		fprintf(out, "  example: %s\n", cmd->example);
}

void cli_command_help(FILE *out, const cli_command *cmd)
{
	fprintf(out, "usage: " CLI_NAME " %s%s%s [options]\n\n", cmd->name, cmd->args ? " " : "",
		cmd->args ? cmd->args : "");
	wrap(out, cmd->summary, 0);
	if (cmd->details) {
		fputc('\n', out);
		wrap(out, cmd->details, 0);
	}
	if (cmd->opts && cmd->opts[0].name) {
		fputs("\noptions:\n", out);
		opt_lines(out, cmd->opts);
	}
	fputs("  -h, --help                   show this help\n\nglobal options:\n", out);
	opt_lines(out, cli_global_opts);
	if (cmd->example)
		fprintf(out, "\nexample:\n  %s\n", cmd->example);
	fputs("\nexit status: 0 success, 1 failure (the message is on stderr), 2 bad command line\n", out);
}

/* "12.8" (or "13") -> 1208; -1 when it is not a version. A patch level, a
 * local tag or a pre-release may follow ("12.8.1"), as the library reads
 * KERNELS_BACKEND_VERSION. */
static int parse_version(const char *s)
{
	long major, minor = 0;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -1;
	major = strtol(s, &end, 10);
	if (*end == '.') {
		if (end[1] < '0' || end[1] > '9')
			return -1;
		minor = strtol(end + 1, &end, 10);
	}
	if (*end && *end != '.' && *end != '+' && *end != '-' && !isalpha((unsigned char)*end))
		return -1;
	return major > 100000 || minor > 99 ? -1 : (int)(major * 100 + minor);
}

/* --backend-version once every option is read: with --backend it is part
 * of the options' backend (and so is a version only the environment gives:
 * the options describe the backend wholesale); alone, the environment's,
 * judged here as the library judges the variable: it would ignore a bad
 * one on a cpu machine, or refuse it by the variable's name. */
static int apply_backend_version(cli_ctx *ctx, const cli_command *cmd)
{
	const char *v = ctx->backend_version, *from = "--backend-version";

	if (!ctx->sys.backend) {
		if (v && strcasecmp(v, "none") && parse_version(v) <= 0)
			return cli_usage_error(cmd, "%s wants a version like 12.8 (or none), not '%s'", from, v);
		if (v)
			setenv("KERNELS_BACKEND_VERSION", v, 1);
		return -1;
	}
	if (!v && (v = getenv("KERNELS_BACKEND_VERSION")) && *v)
		from = "KERNELS_BACKEND_VERSION";
	else if (!v && !strcmp(ctx->sys.backend, "cuda") && (v = getenv("KERNELS_CUDA_VERSION")) && *v)
		from = "KERNELS_CUDA_VERSION";
	if (!v || !*v)
		return -1;
	if ((ctx->sys.backend_version = parse_version(v)) < 0)
		return cli_usage_error(cmd, "%s wants a version like 12.8, not '%s'", from, v);
	return -1;
}

/* The library's messages shown: -q errors only, -v info, -vv debug; else
 * $KERNELS_LOG (error, warn, info, debug), else warnings. */
static void set_log_level(cli_ctx *ctx)
{
	static const struct {
		const char *name;
		int level;
	} names[] = { { "error", CLI_LOG_ERROR }, { "warn", KERNELS_LOG_WARNING }, { "warning", KERNELS_LOG_WARNING },
		      { "info", KERNELS_LOG_INFO }, { "debug", KERNELS_LOG_DEBUG } };
	const char *env = getenv("KERNELS_LOG");
	size_t i;

	ctx->log_level = KERNELS_LOG_WARNING;
	if (env && *env) {
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (!strcasecmp(env, names[i].name))
				break;
		if (i < sizeof(names) / sizeof(names[0]))
			ctx->log_level = names[i].level;
		else if (!ctx->quiet)
			fprintf(stderr, CLI_NAME ": warning: KERNELS_LOG=%s is not error, warn, info or debug; showing "
					"warnings\n", env);
	}
	if (ctx->quiet)
		ctx->log_level = CLI_LOG_ERROR;
	else if (ctx->verbose)
		ctx->log_level = ctx->verbose > 1 ? KERNELS_LOG_DEBUG : KERNELS_LOG_INFO;
}

const kernels_system *cli_system(cli_ctx *ctx)
{
	if (!ctx->system && kernels_system_detect(&ctx->system, &ctx->opts))
		ctx->system = NULL;
	return ctx->system;
}

/* The flag given whose setting the library's refusal `msg` starts with
 * (its messages name what failed first); -1 when none: the refusal is of
 * something else (the environment, say), for the command to report. */
static int refused_flag(const cli_ctx *ctx, const char *msg)
{
	size_t i, n;

	for (i = 0; i < CLI_SYSTEM_FLAGS; i++) {
		n = strlen(system_flags[i].setting);
		if (ctx->system_flag[i] && !strncmp(msg, system_flags[i].setting, n) && strchr("=: ", msg[n]))
			return (int)i;
	}
	return -1;
}

/* The library's refusal of a flag's value, as a usage error naming the
 * flag (not the variable or field it went through). */
static int flag_refused(const cli_ctx *ctx, const cli_command *cmd, size_t i, const char *msg)
{
	const char *tail = strstr(msg, "not a backend");

	if (!system_flags[i].wants && tail) /* the library's nearest name and list of backends */
		return cli_usage_error(cmd, "--%s '%s' is %s", system_flags[i].flag, ctx->system_flag[i], tail);
	return cli_usage_error(cmd, "--%s '%s' %s", system_flags[i].flag, ctx->system_flag[i],
			       system_flags[i].wants ? system_flags[i].wants : msg);
}

/* --device names a GPU of the machine the library describes (the library
 * itself would only reject the builds it checks archs for, and choose
 * another). Its syntax the library has checked. */
static int check_device(cli_ctx *ctx, const cli_command *cmd, const kernels_system *s)
{
	const char *v = ctx->opts.device;
	long dev;

	if (!v)
		return -1;
	dev = strtol(strchr(v, ':') ? strchr(v, ':') + 1 : v, NULL, 10);
	if (s->gpu_count > 0 && dev >= s->gpu_count)
		return cli_usage_error(cmd, "--device %s: this machine has %d GPU%s; give an index from 0 to %d", v,
				       s->gpu_count, s->gpu_count == 1 ? "" : "s", s->gpu_count - 1);
	if (s->gpu_count <= 0 && s->backend && strcmp(s->backend, "cpu"))
		return cli_usage_error(cmd, "--device %s: this machine has no %s GPU; leave --device out (or use "
				       "--backend cpu)", v, s->backend);
	return -1;
}

/* The system flags given are judged by the one detection of the command
 * (cli_system): a refused value is a usage error, a device the machine
 * lacks too. A refusal of anything else is left for the command. */
static int check_system(cli_ctx *ctx, const cli_command *cmd)
{
	const kernels_system *s;
	size_t i;
	int flag;

	for (i = 0; i < CLI_SYSTEM_FLAGS && !ctx->system_flag[i]; i++)
		;
	if (i == CLI_SYSTEM_FLAGS)
		return -1;
	if ((s = cli_system(ctx)))
		return check_device(ctx, cmd, s);
	if ((flag = refused_flag(ctx, kernels_error_last())) >= 0)
		return flag_refused(ctx, cmd, (size_t)flag, kernels_error_last());
	kernels_error_clear();
	return -1;
}

/* The option `a` names, in the command's options, then the global ones
 * (*global), or NULL; a long option's "=value" goes to *value. */
static const cli_opt *lookup(const cli_command *cmd, const char *a, int *idx, int *global, const char **value)
{
	const char *name = a + 2, *eq = a[1] == '-' ? strchr(name, '=') : NULL;
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	const cli_opt *o;

	*value = eq ? eq + 1 : NULL;
	o = a[1] == '-' ? find_opt(cmd->opts, name, len, 0, idx) : find_opt(cmd->opts, NULL, 0, a[1], idx);
	if ((*global = !o))
		o = a[1] == '-' ? find_opt(cli_global_opts, name, len, 0, idx)
				: find_opt(cli_global_opts, NULL, 0, a[1], idx);
	return o;
}

/* `a` is no option of the command's: the usage error, with the nearest
 * long option when there is one. */
static int unknown_option(const cli_command *cmd, const char *a)
{
	const char *name = a + 2, *eq = strchr(name, '='), *near = NULL;
	size_t len = eq ? (size_t)(eq - name) : strlen(name);

	if (a[1] == '-' && !(near = cli_nearest(name, len, NULL, cmd->opts)))
		near = cli_nearest(name, len, NULL, cli_global_opts);
	if (near)
		return cli_usage_error(cmd, "unknown option '%.*s': did you mean --%s?", (int)(len + 2), a, near);
	return cli_usage_error(cmd, "unknown option '%s'", a);
}

/* The option's value kept (a repeatable one's values joined by commas),
 * or a global option applied: -1 to go on, else the exit code. */
static int take_value(cli_ctx *ctx, const cli_command *cmd, const cli_opt *o, int idx, int global, const char *value)
{
	int rc;

	if (global) {
		if ((rc = apply_global(ctx, cmd, o->name, value ? value : "1")) >= 0)
			return rc;
	} else if (value && ctx->val[idx] && strstr(o->arg, "...")) {
		/* a repeatable option ("NAME..."): lives as long as the process */
		ctx->val[idx] = cli_sprintf("%s,%s", ctx->val[idx], value);
	} else {
		ctx->val[idx] = value ? value : "1";
	}
	return -1;
}

int cli_parse(cli_ctx *ctx, const cli_command *cmd, int argc, char **argv)
{
	int i, rc, only_pos = 0;

	for (i = 0; i < argc; i++) {
		const char *a = argv[i], *value;
		const cli_opt *o;
		int idx, global;

		if (only_pos || a[0] != '-' || !a[1]) {
			if (ctx->npos >= cmd->max_pos || ctx->npos >= CLI_MAX_POS)
				return cli_usage_error(cmd, "unexpected argument '%s'", a);
			ctx->pos[ctx->npos++] = a;
			continue;
		}
		if (!strcmp(a, "--")) {
			only_pos = 1;
			continue;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			cli_command_help(stdout, cmd);
			return CLI_OK;
		}
		if (a[1] == 'v' && strspn(a + 1, "v") == strlen(a + 1)) {
			ctx->verbose += (int)strlen(a + 1); /* -vv */
			continue;
		}
		if (a[1] != '-' && a[2])
			return cli_usage_error(cmd, "unknown option '%s' (short options stand alone)", a);
		if (!(o = lookup(cmd, a, &idx, &global, &value)))
			return unknown_option(cmd, a);
		if (o->arg && !value) {
			if (i + 1 >= argc)
				return cli_usage_error(cmd, "option --%s needs a value (%s)", o->name, o->arg);
			value = argv[++i];
		} else if (!o->arg && value) {
			return cli_usage_error(cmd, "option --%s takes no value", o->name);
		}
		if ((rc = take_value(ctx, cmd, o, idx, global, value)) >= 0)
			return rc;
	}
	if (ctx->npos < cmd->min_pos)
		return cli_usage_error(cmd, "missing argument%s: %s", cmd->min_pos - ctx->npos > 1 ? "s" : "",
				       cmd->args);
	set_log_level(ctx);
	if ((rc = apply_backend_version(ctx, cmd)) >= 0)
		return rc;
	return check_system(ctx, cmd);
}

const char *cli_value(const cli_ctx *ctx, const cli_command *cmd, const char *name)
{
	int idx;
	if (!find_opt(cmd->opts, name, strlen(name), 0, &idx))
		return NULL;
	return ctx->val[idx];
}

/* ---- output ----------------------------------------------------------------- */

/* The length of the UTF-8 sequence `p` starts with; 0 when it is none
 * (a stray byte, an overlong form, a surrogate). Reads no further than a
 * NUL. */
static size_t utf8_seq(const unsigned char *p)
{
	unsigned char lo = 0x80, hi = 0xBF;
	size_t n, i;

	if (p[0] < 0x80)
		return 1;
	if (p[0] < 0xC2 || p[0] > 0xF4)
		return 0;
	n = p[0] < 0xE0 ? 2 : p[0] < 0xF0 ? 3 : 4;
	if (p[0] == 0xE0)
		lo = 0xA0;
	else if (p[0] == 0xED)
		hi = 0x9F;
	else if (p[0] == 0xF0)
		lo = 0x90;
	else if (p[0] == 0xF4)
		hi = 0x8F;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if ((p[i] & 0xC0) != 0x80)
			return 0;
	return n;
}

/* A path is bytes, JSON text is UTF-8: jansson refuses a string that is
 * not, and the whole object it was to go in is lost. Each stray byte
 * becomes U+FFFD instead. */
json_t *cli_jstr(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	json_t *j;
	char *fixed, *o;
	size_t n;

	if (!s)
		return json_null();
	if ((j = json_string(s)) || !(o = fixed = malloc(3 * strlen(s) + 1)))
		return j;
	while (*p) {
		if ((n = utf8_seq(p))) {
			memcpy(o, p, n);
			o += n;
			p += n;
		} else {
			memcpy(o, "\xEF\xBF\xBD", 3); /* U+FFFD */
			o += 3;
			p++;
		}
	}
	*o = '\0';
	j = json_string(fixed);
	free(fixed);
	return j;
}

int cli_json_print(json_t *obj)
{
	int rc;

	if (!obj) { /* a json_pack() that failed */
		fputs(CLI_NAME ": error: the result could not be made JSON (out of memory, or a string that is not "
		      "UTF-8)\n", stderr);
		return CLI_ERROR;
	}
	rc = json_dumpf(obj, stdout, JSON_INDENT(2) | JSON_ENSURE_ASCII);
	json_decref(obj);
	fputc('\n', stdout);
	fflush(stdout);
	return rc ? CLI_ERROR : CLI_OK;
}

int cli_fail(const cli_ctx *ctx, int code, const char *context)
{
	const char *msg = kernels_error_last();

	fprintf(stderr, CLI_NAME ": error: %s%s%s\n", context ? context : "", context ? ": " : "", msg);
	if (code == KERNELS_EUNTRUSTED)
		fputs(CLI_NAME ": on the command line: --trust-remote-code, or --trusted-orgs ORG\n", stderr);
	if (ctx && ctx->json) {
		json_t *o = json_pack("{s:{s:i,s:s,s:o}}", "error", "code", code, "name", kernels_strerror(code),
				      "message", cli_jstr(msg));
		cli_json_print(o);
	}
	return CLI_ERROR;
}

int cli_error(const cli_ctx *ctx, int code, const char *fmt, ...)
{
	char *msg;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n < 0)
		return CLI_ERROR;
	fprintf(stderr, CLI_NAME ": error: %s\n", msg);
	if (ctx && ctx->json)
		cli_json_print(json_pack("{s:{s:i,s:s,s:o}}", "error", "code", code, "name", kernels_strerror(code),
					 "message", cli_jstr(msg)));
	free(msg);
	return CLI_ERROR;
}

void cli_note(const cli_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	if (ctx->quiet)
		return;
	fputs(CLI_NAME ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

char *cli_sprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0) {
		fputs(CLI_NAME ": error: out of memory\n", stderr);
		exit(CLI_ERROR);
	}
	return s;
}

/* ---- progress ------------------------------------------------------------- */

static struct {
	pthread_mutex_t lock;
	int bar;            /* 1: redraw a bar on stderr; 0: plain lines */
	int drawn;
	int bytes;          /* --bytes */
	double start, last_draw;
	size_t first_done;  /* bytes already there at the first report (resumed, cached) */
	int started;
	double rate;        /* bytes per second, smoothed */
	char **done;        /* plain mode: paths already reported */
	size_t ndone;
	const char *what;
} progress = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0, 0, 0, 0, NULL, 0, NULL };

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void human(unsigned long long n, char *out, size_t size)
{
	if (n >= 1024ULL * 1024 * 1024)
		snprintf(out, size, "%.1f GiB", (double)n / (1024.0 * 1024 * 1024));
	else if (n >= 1024 * 1024)
		snprintf(out, size, "%.1f MiB", (double)n / (1024.0 * 1024));
	else if (n >= 1024)
		snprintf(out, size, "%.1f KiB", (double)n / 1024.0);
	else
		snprintf(out, size, "%llu B", n);
}

const char *cli_size(const cli_ctx *ctx, unsigned long long n, char *buf, size_t size)
{
	if (ctx && ctx->bytes)
		snprintf(buf, size, "%llu bytes", n);
	else
		human(n, buf, size);
	return buf;
}

/* "1:05" or "1:02:03"; "--:--" when not known yet. */
static void eta_text(double seconds, char *out, size_t size)
{
	long s;

	if (seconds < 0 || seconds > 359999) {
		snprintf(out, size, "--:--");
		return;
	}
	s = (long)(seconds + 0.5);
	if (s >= 3600)
		snprintf(out, size, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
	else
		snprintf(out, size, "%ld:%02ld", s / 60, s % 60);
}

/* One redraw: what, bar, percent, done / total, rate, ETA, current file. */
static void draw_bar(const char *path, size_t all_done, size_t all_total, double t)
{
	char a[32], b[32], r[32], eta[32], bar[25];
	int pct = all_total ? (int)((double)all_done * 100.0 / (double)all_total) : 100, i;
	const char *base = path ? strrchr(path, '/') : NULL;
	double elapsed = t - progress.start;

	if ((elapsed >= 0.2 || (all_done == all_total && elapsed > 0)) && all_done > progress.first_done) {
		double rate = (double)(all_done - progress.first_done) / elapsed;
		/* Mostly the average so far, so one burst does not swing the ETA. */
		progress.rate = progress.rate > 0 ? 0.7 * progress.rate + 0.3 * rate : rate;
	} else if (all_done == all_total && all_done > 0 && progress.rate <= 0) {
		/* Done within the first report (a fast local fetch): the run's own
		 * average, its time at least a millisecond. */
		progress.rate = (double)all_done / (elapsed > 1e-3 ? elapsed : 1e-3);
	}
	for (i = 0; i < 24; i++)
		bar[i] = i < pct * 24 / 100 ? '#' : '.';
	bar[24] = '\0';
	human(all_done, a, sizeof(a));
	human(all_total, b, sizeof(b));
	if (progress.rate > 0) {
		human((unsigned long long)progress.rate, r, sizeof(r));
		strcat(r, "/s");
		eta_text(all_done >= all_total ? 0 : (double)(all_total - all_done) / progress.rate, eta, sizeof(eta));
	} else {
		snprintf(r, sizeof(r), "-- B/s");
		eta_text(-1, eta, sizeof(eta));
	}
	fprintf(stderr, "\r\033[K%s [%s] %3d%% %s / %s  %s  ETA %s  %.32s",
		progress.what ? progress.what : "downloading", bar, pct, a, b, r, eta,
		base ? base + 1 : path ? path : "");
	fflush(stderr);
	progress.drawn = 1;
	progress.last_draw = t;
}

static int on_progress(const char *path, size_t file_done, size_t file_total, size_t all_done, size_t all_total,
		       void *payload)
{
	(void)payload;
	pthread_mutex_lock(&progress.lock);
	if (!progress.started) {
		progress.started = 1;
		progress.first_done = all_done;
		progress.start = now_s();
	}
	if (progress.bar) {
		double t = now_s();
		if (t - progress.last_draw >= 0.1 || all_done == all_total)
			draw_bar(path, all_done, all_total, t);
	} else if (path && file_done == file_total) {
		size_t i;
		for (i = 0; i < progress.ndone; i++)
			if (!strcmp(progress.done[i], path))
				break;
		if (i == progress.ndone) {
			char **v = realloc(progress.done, (progress.ndone + 1) * sizeof(*v));
			char size[32];
			if (v) {
				progress.done = v;
				if ((v[progress.ndone] = strdup(path)))
					progress.ndone++;
			}
			if (progress.bytes)
				snprintf(size, sizeof(size), "%zu bytes", file_total);
			else
				human(file_total, size, sizeof(size));
			fprintf(stderr, CLI_NAME ": downloaded %s (%s)\n", path, size);
		}
	}
	pthread_mutex_unlock(&progress.lock);
	return 0;
}

void cli_progress_clear_line(void)
{
	pthread_mutex_lock(&progress.lock);
	if (progress.drawn) {
		fputs("\r\033[K", stderr);
		progress.drawn = 0;
		progress.last_draw = 0; /* redrawn at the next report */
	}
	pthread_mutex_unlock(&progress.lock);
}

void cli_progress_begin(cli_ctx *ctx, const char *what)
{
	ctx->opts.progress_cb = NULL;
	if (ctx->quiet)
		return;
	progress.bar = ctx->progress == 1 || (ctx->progress == -1 && isatty(STDERR_FILENO));
	progress.bytes = ctx->bytes;
	progress.drawn = 0;
	progress.last_draw = 0;
	progress.started = 0;
	progress.rate = 0;
	progress.what = what;
	ctx->opts.progress_cb = on_progress;
	ctx->opts.progress_payload = NULL;
}

void cli_progress_end(cli_ctx *ctx)
{
	size_t i;

	pthread_mutex_lock(&progress.lock);
	if (progress.drawn)
		fputs("\n", stderr);
	progress.drawn = 0;
	for (i = 0; i < progress.ndone; i++)
		free(progress.done[i]);
	free(progress.done);
	progress.done = NULL;
	progress.ndone = 0;
	pthread_mutex_unlock(&progress.lock);
	ctx->opts.progress_cb = NULL;
}

/* ---- the cache ---------------------------------------------------------------- */

/* The cache folder the library uses for these options. */
char *cli_cache_root(const cli_ctx *ctx)
{
	char *path = NULL, *copy;

	if (kernels_cache_path(&path, NULL, &ctx->opts) < 0)
		return NULL;
	copy = cli_sprintf("%s", path);
	kernels_free(path);
	return copy;
}

/* The repo's folder in the cache, or NULL when it has none. */
char *cli_repo_cache_dir(const cli_ctx *ctx, const char *repo_id)
{
	char *path = NULL, *copy = NULL;
	struct stat st;

	if (kernels_cache_path(&path, repo_id, &ctx->opts) < 0)
		return NULL;
	if (!lstat(path, &st) && S_ISDIR(st.st_mode))
		copy = cli_sprintf("%s", path);
	kernels_free(path);
	return copy;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char **cli_list_dir(const char *dir, int dirs_only, size_t *count)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **v = NULL;
	size_t n = 0;

	*count = 0;
	if (!d)
		return NULL;
	while ((de = readdir(d))) {
		struct stat st;
		char *p;
		if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		p = cli_sprintf("%s/%s", dir, de->d_name);
		if (dirs_only && (lstat(p, &st) || !S_ISDIR(st.st_mode))) {
			free(p);
			continue;
		}
		free(p);
		char **nv = realloc(v, (n + 1) * sizeof(*v));
		if (!nv)
			break;
		v = nv;
		v[n++] = strdup(de->d_name);
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cmp_str);
	*count = n;
	return v;
}

void cli_strings_free(char **v, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

