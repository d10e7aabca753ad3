/* libkernels: the command-line tool. A binding of the public API only. */

#include "cli.h"

#include <stdlib.h>
#include <string.h>

static int cmd_version(cli_ctx *ctx, const cli_command *cmd)
{
	(void)cmd;
	if (ctx->json)
		return cli_json_print(json_pack("{s:s,s:i}", "version", kernels_version(), "version_number",
						kernels_version_number()));
	printf(CLI_NAME " %s\n", kernels_version());
	return CLI_OK;
}

static const cli_opt download_opts[] = {
	{ "all-variants", 0, NULL, "every build variant, not only the one for this system" },
	{ NULL, 0, NULL, NULL }
};
static const cli_opt variants_opts[] = {
	{ "revision", 0, "REV", "branch, tag, commit, major version N or PEP 440 spec (required)" },
	{ NULL, 0, NULL, NULL }
};
static const cli_opt load_opts[] = {
	{ "fetch", 0, NULL, "download the locked variant when it is not cached (default: cache only, no network)" },
	{ NULL, 0, NULL, NULL }
};
static const cli_opt wheel_opts[] = {
	{ "out", 'o', "DIR", "folder for the wheels (default: the current folder; created if missing)" },
	{ "python-version", 0, "X.Y", "minimum Python the kernel was built for (default 3.9)" },
	{ "manylinux-version", 0, "X.Y", "manylinux (glibc) version the kernel was built for (default 2.28)" },
	{ "variant", 0, "NAME...", "only these variants (repeatable, or comma-separated)" },
	{ NULL, 0, NULL, NULL }
};
static const cli_opt rm_opts[] = {
	{ "revision", 0, "REV", "remove only this snapshot: a commit id (or a prefix) or a name under refs/" },
	{ "dry-run", 'n', NULL, "only list what would be removed" },
	{ NULL, 0, NULL, NULL }
};

static const cli_command commands[] = {
	{ "lock", "[DIR]", "Resolve [tool.kernels.dependencies] of DIR/pyproject.toml and write DIR/kernels.lock.",
	  "DIR defaults to the current folder. Each dependency (a major version N or a PEP 440 specifier) is "
	  "resolved on the Hub to one commit. The lock file is byte-identical to what the Python `kernels lock` "
	  "writes; on failure the old one is kept.",
	  NULL, 0, 1, cmd_lock, CLI_NAME " lock myproject" },
	{ "download", "[DIR]", "Download the kernels DIR/kernels.lock pins into the cache.",
	  "DIR defaults to the current folder. By default only the variant that fits this system; each variant "
	  "is checked against its lock hash.",
	  download_opts, 0, 1, cmd_download, CLI_NAME " download myproject --all-variants" },
	{ "info", "KERNEL", "Describe a kernel (a Hub repo id or a local kernel folder): its metadata and backends.",
	  "As Python kernels 0.17's `kernels info`: the name, version, minimum kernels version, license, upstream, "
	  "source and Python dependencies of one variant's metadata.json, and the backends of all the variants. "
	  "Without --revision or --version, a Hub repo is described at its highest vN branch (else main). Only "
	  "metadata.json is downloaded; nothing is loaded.",
	  cli_info_opts, 1, 1, cmd_info, CLI_NAME " info kernels-community/activation --version 1" },
	{ "versions", "REPO", "List the versions (vN branches and vX.Y.Z tags) of a kernel repo.", NULL, NULL, 1, 1,
	  cmd_versions, CLI_NAME " versions kernels-community/activation" },
	{ "variants", "REPO", "Show how the build variants of REPO at --revision are resolved on this system.",
	  "Every variant is listed as accepted or rejected with the reason; the chosen one is marked. Exit status "
	  "1 when no variant fits.",
	  variants_opts, 1, 1, cmd_variants, CLI_NAME " variants kernels-community/activation --revision 1" },
	{ "get", "REPO REVISION", "Fetch and load a kernel, and print what was chosen and where the time went.",
	  "REVISION is a branch, tag, commit, major version N or PEP 440 specifier (\">=1.1,<2\"). What is cached is "
	  "not downloaded again.",
	  NULL, 2, 2, cmd_get, CLI_NAME " get kernels-community/activation 1" },
	{ "load", "REPO [DIR]", "Load REPO at the commit DIR/kernels.lock pins (DIR: a project folder or a lock file).",
	  "DIR defaults to the current folder. From the cache only, never a network call; with --fetch the variant "
	  "is downloaded when missing. The variant's files are checked against the lock hash and its metadata "
	  "digest before loading.",
	  load_opts, 1, 2, cmd_load, CLI_NAME " load kernels-community/activation myproject" },
	{ "verify", "[DIR]",
	  "Check the cached kernels that DIR/kernels.lock pins.",
	  "DIR defaults to the current folder. Each cached variant of each locked commit is checked against its "
	  "metadata.json digest and, when the lock records one, its git_lfs_concat lock hash. Exit status 1 when "
	  "anything fails or a locked kernel is not cached.",
	  NULL, 0, 1, cmd_verify, CLI_NAME " verify myproject" },
	{ "verify-signature", "REPO", "Verify the sigstore signature of a kernel's variants at --revision.",
	  "Offline, against sigstore's public-good trusted root ($KERNELS_SIGSTORE_TRUSTED_ROOT names another) and "
	  "the signers Python kernels 0.17 accepts; then each file against the signed digest. Prints one line per "
	  "variant as `kernels verify-signature` does. Exit status 1 when any variant fails.",
	  cli_verify_signature_opts, 1, 1, cmd_verify_signature,
	  CLI_NAME " verify-signature kernels-community/activation --revision 1 --all-variants" },
	{ "to-wheel", "REPO VERSION", "Build one Python wheel per build variant of REPO at version VERSION.",
	  "VERSION is a tag's version (0.1.0 for the tag v0.1.0) or a major version N (branch vN). Arch variants "
	  "give {name}-{version}+torch{Mm}cu{xyz}cxx{11|98}-cp39-abi3-manylinux_2_28_{cpu}.whl (cpu: cucpu, as the "
	  "Python client), noarch variants {name}-{version}-py39-none-any.whl.",
	  wheel_opts, 2, 2, cmd_to_wheel, CLI_NAME " to-wheel kernels-community/activation 0.1.0 --out dist" },
	{ "cache ls", "[REPO]", "List the kernels in the cache: repos, snapshots (commits), refs, variants and sizes.",
	  "Sizes are shown in KiB/MiB/GiB; --bytes prints byte counts.", NULL, 0, 1, cmd_cache_ls,
	  CLI_NAME " cache ls kernels-community/activation" },
	{ "cache rm", "REPO", "Remove a kernel repo (or one snapshot with --revision) from the cache.",
	  "Only paths inside the cache root are removed; links are removed, never followed. Blobs no snapshot "
	  "uses any more are removed too. While the repo is being downloaded (by any process) nothing is removed "
	  "and the command fails: run it again when the download is done.",
	  rm_opts, 1, 1, cmd_cache_rm, CLI_NAME " cache rm kernels-community/activation --revision v1 --dry-run" },
	{ "bundle", "[DIR]", "Write one verified file (-o FILE) holding every kernel DIR/kernels.lock pins.",
	  "DIR defaults to the current folder. A tar archive (zstd when libarchive has it) with a manifest of every "
	  "file's size and sha256, the lock, the refs naming the locked commits, and every variant (or those given "
	  "with --variant). Files come from the cache; missing ones are downloaded into it first.",
	  cli_bundle_opts, 0, 1, cmd_bundle, CLI_NAME " bundle myproject -o kernels.bundle" },
	{ "bundle import", "FILE", "Import a bundle into the cache, verified before anything is published.",
	  "No network call. Every entry is checked against the manifest, every variant against its metadata digest "
	  "(and the signature mode); a hostile archive is refused whole. Importing twice is a no-op.",
	  NULL, 1, 1, cmd_bundle_import, CLI_NAME " bundle import kernels.bundle --cache-dir /srv/kernels" },
	{ "bundle ls", "FILE", "List what a bundle holds (variants, sizes, refs) without importing it.", NULL, NULL,
	  1, 1, cmd_bundle_ls, CLI_NAME " bundle ls kernels.bundle" },
	{ "trust", "[REPO]", "Record the Hub's publisher verdict for the cached kernels (or REPO), for offline loads.",
	  "Online: asks the Hub whether each cached repo's org is a trusted kernel publisher, as a load does, and "
	  "records the answer in the cache. Python kernels keeps no such record, so what it fetched is refused "
	  "offline until this has run once (a record stands for 30 days). Exit status 1 when a repo is not from a "
	  "trusted publisher (recorded as such) or the Hub cannot be asked.",
	  NULL, 0, 1, cmd_trust, CLI_NAME " trust kernels-community/activation" },
	{ "version", NULL, "Print the version of the tool and library (also -V, --version).", NULL, NULL, 0, 0,
	  cmd_version, NULL },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static int usage(FILE *out)
{
	size_t i;

	fputs("usage: " CLI_NAME " [global options] <command> [arguments] [options]\n\n"
	      "Fetch, lock, verify and package compute kernels from the Hugging Face Kernel Hub.\n\ncommands:\n",
	      out);
	for (i = 0; i < NCOMMANDS; i++) {
		char left[64];
		snprintf(left, sizeof(left), "%s%s%s", commands[i].name, commands[i].args ? " " : "",
			 commands[i].args ? commands[i].args : "");
		fprintf(out, "  %-24s %s\n", left, commands[i].summary);
	}
	fputs("\nglobal options (accepted before or after the command):\n", out);
	cli_global_help(out);
	fputs("  -V, --version                print the version and exit\n"
	      "  -h, --help                   show this help\n"
	      "\nRun '" CLI_NAME " <command> --help' for a command's options. The environment variables read\n"
	      "(HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE, KERNELS_CACHE, ...): ENVIRONMENT in 'man " CLI_NAME "'.\n"
	      "Exit status: 0 success, 1 failure (the library's message is on stderr; with --json also an\n"
	      "{\"error\": {code, name, message}} object on stdout), 2 bad command line.\n",
	      out);
	return out == stdout ? CLI_OK : CLI_USAGE;
}

/* `cache --help`: both subcommands in full. */
static int cache_usage(FILE *out)
{
	size_t i;

	fputs("usage: " CLI_NAME " cache ls [REPO] [options]\n"
	      "       " CLI_NAME " cache rm REPO [--revision REV] [--dry-run] [options]\n\n"
	      "Look into and prune the kernel cache (the one Python's huggingface_hub shares).\n",
	      out);
	for (i = 0; i < NCOMMANDS; i++)
		if (!strncmp(commands[i].name, "cache ", 6))
			cli_command_section(out, &commands[i]);
	fputs("\nglobal options:\n", out);
	cli_global_help(out);
	fputs("\nexit status: 0 success, 1 failure (the message is on stderr), 2 bad command line\n", out);
	return out == stdout ? CLI_OK : CLI_USAGE;
}

static const char *level_name(kernels_log_level level)
{
	switch (level) {
	case KERNELS_LOG_DEBUG:
		return "debug";
	case KERNELS_LOG_INFO:
		return "info";
	case KERNELS_LOG_WARNING:
		return "warning";
	default:
		return "error";
	}
}

/* The library's messages at or above the chosen level, each warning once
 * per invocation (one command may make several library calls that each
 * notice the same thing, e.g. a newer major version). */
static void on_log(kernels_log_level level, const char *message, void *payload)
{
	static char **seen;
	static size_t nseen;
	const cli_ctx *ctx = payload;
	size_t i;

	if ((int)level < ctx->log_level)
		return;
	if (level >= KERNELS_LOG_WARNING) {
		char **v;
		for (i = 0; i < nseen; i++)
			if (!strcmp(seen[i], message))
				return;
		if ((v = realloc(seen, (nseen + 1) * sizeof(*v))) && (v[nseen] = strdup(message))) {
			seen = v;
			nseen++;
		} else if (v) {
			seen = v;
		}
	}
	cli_progress_clear_line();
	fprintf(stderr, CLI_NAME ": %s: %s\n", level_name(level), message);
}

/* Whether `opts` has the option `arg` ("--name" or "-x") with a value. */
static int opts_take_value(const cli_opt *opts, const char *arg)
{
	int i;

	for (i = 0; opts && opts[i].name; i++)
		if (arg[1] == '-' ? !strcmp(arg + 2, opts[i].name) : arg[1] == opts[i].short_name && !arg[2])
			return opts[i].arg != NULL;
	return 0;
}

/* Whether option `arg`, before the command, takes the next argv entry: a
 * global option with a value, or a command's (which command's, cli_parse
 * judges once the command is known), so that the value is not taken for
 * the command. */
static int early_takes_value(const char *arg)
{
	size_t k;

	if (arg[0] != '-' || !arg[1] || strchr(arg, '='))
		return 0;
	if (opts_take_value(cli_global_opts, arg))
		return 1;
	for (k = 0; k < NCOMMANDS; k++)
		if (opts_take_value(commands[k].opts, arg))
			return 1;
	return 0;
}

/* The subcommand of `cache` at argv[*at2], or a usage answer (help: 0). */
static int find_cache_command(int argc, char **argv, int at, int *at2, const cli_command **cmd)
{
	size_t k;
	int i;

	for (i = at + 1; i < argc; i++) {
		if (argv[i][0] == '-') {
			if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
				return cache_usage(stdout);
			i += early_takes_value(argv[i]);
			continue;
		}
		*at2 = i;
		break;
	}
	if (*at2 < 0) {
		fputs(CLI_NAME ": 'cache' needs a subcommand: ls or rm\n", stderr);
		return cache_usage(stderr);
	}
	for (k = 0; k < NCOMMANDS; k++)
		if (!strncmp(commands[k].name, "cache ", 6) && !strcmp(commands[k].name + 6, argv[*at2]))
			*cmd = &commands[k];
	if (!*cmd) {
		fprintf(stderr, CLI_NAME ": unknown command 'cache %s'; the cache commands are 'cache ls' and 'cache "
			"rm'\n", argv[*at2]);
		return CLI_USAGE;
	}
	return -1;
}

/* `bundle import FILE` and `bundle ls FILE`: the first argument after
 * `bundle` that is neither an option nor an option's value names them;
 * anything else is `bundle [DIR]`. */
static int bundle_subcommand(int argc, char **argv, int at, int *at2)
{
	int i;

	for (i = at + 1; i < argc; i++) {
		if (argv[i][0] == '-') {
			i += early_takes_value(argv[i]);
			continue;
		}
		if (strcmp(argv[i], "import") && strcmp(argv[i], "ls"))
			return 0;
		*at2 = i;
		return 1;
	}
	return 0;
}

/* An unknown command, with the nearest one when there is one. */
static int unknown_command(const char *name)
{
	const char *names[NCOMMANDS + 3];
	const char *near;
	size_t k, n = 0;

	for (k = 0; k < NCOMMANDS; k++)
		if (!strchr(commands[k].name, ' '))
			names[n++] = commands[k].name;
	names[n++] = "cache";
	names[n] = NULL;
	if ((near = cli_nearest(name, strlen(name), names, NULL)))
		fprintf(stderr, CLI_NAME ": unknown command '%s': did you mean '%s'? run '" CLI_NAME " --help'\n", name,
			near);
	else
		fprintf(stderr, CLI_NAME ": unknown command '%s'; run '" CLI_NAME " --help'\n", name);
	return CLI_USAGE;
}

/* An option before the command that no command knows (a misspelled
 * global one would swallow the command): named, with the nearest option. */
static int unknown_early_option(const char *arg)
{
	size_t len = strcspn(arg + 2, "="), k;
	const char *near;
	int idx;

	if (strncmp(arg, "--", 2) || !arg[2])
		return -1;
	for (idx = 0; cli_global_opts[idx].name; idx++)
		if (strlen(cli_global_opts[idx].name) == len && !strncmp(cli_global_opts[idx].name, arg + 2, len))
			return -1;
	for (k = 0; k < NCOMMANDS; k++)
		for (idx = 0; commands[k].opts && commands[k].opts[idx].name; idx++)
			if (strlen(commands[k].opts[idx].name) == len && !strncmp(commands[k].opts[idx].name, arg + 2, len))
				return -1;
	if ((near = cli_nearest(arg + 2, len, NULL, cli_global_opts)))
		return cli_usage_error(NULL, "unknown option '%.*s': did you mean --%s?", (int)len + 2, arg, near);
	return cli_usage_error(NULL, "unknown option '%.*s'", (int)len + 2, arg);
}

int main(int argc, char **argv)
{
	static cli_ctx ctx;
	const cli_command *cmd = NULL;
	char **rest;
	int i, nrest = 0, rc, at = -1, at2 = -1;
	size_t k;

	/* The command is the first argument that is neither an option nor an option's value. */
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h") || !strcmp(argv[i], "help"))
			return usage(stdout);
		if (!strcmp(argv[i], "--version") || !strcmp(argv[i], "-V"))
			argv[i] = "version";
		if (argv[i][0] == '-') {
			if ((rc = unknown_early_option(argv[i])) >= 0)
				return rc;
			i += early_takes_value(argv[i]);
			continue;
		}
		at = i;
		break;
	}
	if (at < 0)
		return usage(stderr);
	if (!strcmp(argv[at], "bundle") && bundle_subcommand(argc, argv, at, &at2)) {
		for (k = 0; k < NCOMMANDS; k++)
			if (!strncmp(commands[k].name, "bundle ", 7) && !strcmp(commands[k].name + 7, argv[at2]))
				cmd = &commands[k];
	} else if (!strcmp(argv[at], "cache")) {
		if ((rc = find_cache_command(argc, argv, at, &at2, &cmd)) >= 0)
			return rc;
	} else {
		for (k = 0; k < NCOMMANDS; k++)
			if (!strcmp(commands[k].name, argv[at]))
				cmd = &commands[k];
		if (!cmd)
			return unknown_command(argv[at]);
	}

	if (!(rest = calloc((size_t)argc, sizeof(*rest))))
		return CLI_ERROR;
	for (i = 1; i < argc; i++)
		if (i != at && i != at2)
			rest[nrest++] = argv[i];

	kernels_options_init(&ctx.opts, KERNELS_OPTIONS_VERSION);
	/* A command line has no torch loaded: resolve for (and load) the one
	 * python3 would import, unless --no-find-torch. */
	ctx.opts.find_torch = 1;
	ctx.progress = -1;
	ctx.opts.log_cb = on_log;
	ctx.opts.log_payload = &ctx;
	rc = cli_parse(&ctx, cmd, nrest, rest);
	if (rc < 0)
		rc = cmd->run(&ctx, cmd);
	kernels_system_free(ctx.system);
	free(rest);
	return rc;
}
