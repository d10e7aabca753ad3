/* libkernels command-line tool: what the subcommand files share. The tool
 * is a binding of the public API only (kernels.h); nothing from lib/ is
 * used. */
#ifndef KERNELS_CLI_H
#define KERNELS_CLI_H

/* The command's name: not "kernels", which is the Python package's command
 * (both are often installed on one machine). */
#define CLI_NAME "libkernels"
/* A number macro as a string literal, for help texts that show the library's defaults. */
#define CLI_STR_(x) #x
#define CLI_STR(x) CLI_STR_(x)

#include <stdio.h>
#include <jansson.h>
#include <kernels.h>

/* Exit codes (documented in libkernels.1 and `libkernels --help`). */
#define CLI_OK 0
#define CLI_ERROR 1 /* the library (or a check) failed: message on stderr */
#define CLI_USAGE 2 /* bad command line */

/* One option of a subcommand. `arg` is the value's name, NULL for a flag. */
typedef struct {
	const char *name;
	char short_name;
	const char *arg;
	const char *help;
} cli_opt;

struct cli_ctx;

/* One subcommand. */
typedef struct cli_command {
	const char *name;
	const char *args;      /* "REPO REVISION" */
	const char *summary;
	const char *details;   /* extra help paragraph or NULL */
	const cli_opt *opts;   /* terminated by a zero entry; may be NULL */
	int min_pos, max_pos;
	int (*run)(struct cli_ctx *, const struct cli_command *);
	const char *example;   /* one command line that works, or NULL */
} cli_command;

#define CLI_MAX_POS 8
#define CLI_MAX_OPTS 16

/* Only errors: the level above KERNELS_LOG_WARNING (-q, KERNELS_LOG=error). */
#define CLI_LOG_ERROR (KERNELS_LOG_WARNING + 1)

/* --torch, --tvm-ffi, --cxx11-abi, --gpu-archs, --backend, --device. */
#define CLI_SYSTEM_FLAGS 6

typedef struct cli_ctx {
	kernels_options opts;
	kernels_system sys;             /* opts.system once --backend is given */
	const char *system_flag[CLI_SYSTEM_FLAGS]; /* each system flag's value, NULL when not given (util.c) */
	kernels_system *system;         /* the command's one detection (cli_system), owned; NULL until then */
	const char *backend_version;    /* --backend-version, applied after parsing */
	int json, quiet, verbose, progress; /* verbose: how many -v; progress: -1 auto, 0 off, 1 on */
	int bytes;                      /* --bytes: sizes as byte counts, not KiB/MiB/GiB */
	int log_level;                  /* the library's messages shown: this kernels_log_level and up */
	const char *pos[CLI_MAX_POS];
	int npos;
	const char *val[CLI_MAX_OPTS]; /* per command option: its value, "1" for a set flag, NULL unset */
} cli_ctx;

/* Parses argv after the command name into ctx (global options included).
 * Returns -1 when parsing succeeded, else the exit code (0 after --help). */
int cli_parse(cli_ctx *ctx, const cli_command *cmd, int argc, char **argv);
void cli_command_help(FILE *out, const cli_command *cmd);
/* A command's summary, details, options and example (part of its help). */
void cli_command_section(FILE *out, const cli_command *cmd);
void cli_global_help(FILE *out);
extern const cli_opt cli_global_opts[];
/* Index of option `name` in cmd->opts: ctx->val[cli_opt_index(...)]. */
const char *cli_value(const cli_ctx *ctx, const cli_command *cmd, const char *name);
/* The name of `names` (NULL-terminated) or of `opts` nearest to s[0..len):
 * equal but for case, or at most 2 edits away; NULL when none is near. */
const char *cli_nearest(const char *s, size_t len, const char *const *names, const cli_opt *opts);
int cli_usage_error(const cli_command *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The system as the library describes it for this command's options,
 * detected once and kept in ctx (freed at exit); NULL when the library
 * refuses (kernels_error_last() says why; a later call asks again). */
const kernels_system *cli_system(cli_ctx *ctx);

/* A library failure: the message to stderr (and a JSON error object on
 * stdout with --json). Returns CLI_ERROR. */
int cli_fail(const cli_ctx *ctx, int code, const char *context);
/* A failure found by the tool itself: like cli_fail() with this message. */
int cli_error(const cli_ctx *ctx, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prints `obj` (stolen) as indented JSON on stdout. */
int cli_json_print(json_t *obj);
/* json_string() that accepts NULL (-> null) and bytes that are not UTF-8
 * (each -> U+FFFD): for paths and messages, which are bytes. */
json_t *cli_jstr(const char *s);

/* Progress reporting around one library call: a bar with rate and ETA on
 * a terminal (or with --progress), else one line per downloaded file. */
void cli_progress_begin(cli_ctx *ctx, const char *what);
void cli_progress_end(cli_ctx *ctx);
/* Erases a drawn progress bar so a message can take its line (the next
 * progress report draws it again). */
void cli_progress_clear_line(void);
/* `n` bytes for people ("3.0 MiB", "512 B"), or "3136531 bytes" with --bytes. */
const char *cli_size(const cli_ctx *ctx, unsigned long long n, char *buf, size_t size);
/* A status line on stderr (suppressed by --quiet). */
void cli_note(const cli_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Before loading a variant of `repo` at `revision` (a commit for locked
 * loads): when the variant this system resolves to is a torch one and the
 * torch was found outside the process (kernels_system.torch_source is not
 * "process"), loads libc10, libtorch_cpu and libtorch from torch_path
 * (RTLD_GLOBAL), so the variant's libtorch references bind. Returns
 * CLI_OK, or CLI_ERROR after reporting a torch that fails to load; a
 * resolution that fails is left for the load itself to report. */
int cli_prepare_torch(cli_ctx *ctx, const char *repo, const char *revision);

/* The cache root as the library resolves it (options, then environment).
 * malloc'ed. */
char *cli_cache_root(const cli_ctx *ctx);
/* "{root}/kernels--org--name" when it exists, else the models-- one when
 * that exists, else NULL. malloc'ed. */
char *cli_repo_cache_dir(const cli_ctx *ctx, const char *repo_id);
char *cli_sprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Sorted names of the subfolders (or entries when dirs_only is 0) of dir. */
char **cli_list_dir(const char *dir, int dirs_only, size_t *count);
void cli_strings_free(char **v, size_t n);

/* cmd_signature.c: `verify-signature`, and --require-signature for download
 * (every variant of `variants` under {snapshot_dir}/build/ must be validly
 * signed; CLI_OK when the option is not given). */
extern const cli_opt cli_verify_signature_opts[];
int cmd_verify_signature(cli_ctx *, const cli_command *);
int cli_require_signed(cli_ctx *ctx, const char *snapshot_dir, char *const *variants, size_t n);

/* cmd_info.c: `info`, Python kernels 0.17's `kernels info`. */
extern const cli_opt cli_info_opts[];
int cmd_info(cli_ctx *, const cli_command *);

int cmd_lock(cli_ctx *, const cli_command *);
int cmd_download(cli_ctx *, const cli_command *);
int cmd_verify(cli_ctx *, const cli_command *);
int cmd_versions(cli_ctx *, const cli_command *);
int cmd_variants(cli_ctx *, const cli_command *);
int cmd_get(cli_ctx *, const cli_command *);
int cmd_load(cli_ctx *, const cli_command *);
int cmd_to_wheel(cli_ctx *, const cli_command *);
int cmd_cache(cli_ctx *, const cli_command *);
int cmd_cache_ls(cli_ctx *, const cli_command *);
int cmd_cache_rm(cli_ctx *, const cli_command *);
int cmd_trust(cli_ctx *, const cli_command *);

/* cmd_bundle.c: `bundle`, `bundle import`, `bundle ls`. */
extern const cli_opt cli_bundle_opts[];
int cmd_bundle(cli_ctx *, const cli_command *);
int cmd_bundle_import(cli_ctx *, const cli_command *);
int cmd_bundle_ls(cli_ctx *, const cli_command *);

#endif
