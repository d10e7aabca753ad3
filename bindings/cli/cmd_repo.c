/* libkernels CLI: commands about one Hub repo: versions, variants, get, to-wheel. */

#include "cli.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int cmd_versions(cli_ctx *ctx, const cli_command *cmd)
{
	const char *repo = ctx->pos[0];
	char **v = NULL;
	size_t n = 0, i;
	int rc;

	(void)cmd;
	if ((rc = kernels_versions_list(&v, &n, repo, &ctx->opts)))
		return cli_fail(ctx, rc, repo);
	if (ctx->json) {
		json_t *arr = json_array();
		for (i = 0; i < n; i++)
			json_array_append_new(arr, json_string(v[i]));
		kernels_free(v);
		return cli_json_print(json_pack("{s:s,s:o}", "repo_id", repo, "versions", arr));
	}
	for (i = 0; i < n; i++)
		printf("%s\n", v[i]);
	if (!n)
		cli_note(ctx, "%s has no versions (no vN branches or vX.Y.Z tags)", repo);
	kernels_free(v);
	return CLI_OK;
}

/* The command's system (cli_system) as one line, malloc'ed; NULL when the
 * library refuses to describe it. */
static char *system_line(cli_ctx *ctx, const kernels_system **sys)
{
	char *line;
	size_t n;

	if (!(*sys = cli_system(ctx)))
		return NULL;
	n = kernels_system_format(NULL, 0, *sys);
	if ((line = malloc(n + 1)))
		kernels_system_format(line, n + 1, *sys);
	return line;
}

/* Where the torch resolved for was found, for people and for --json. */
static void print_torch(const kernels_system *sys)
{
	if (sys->torch_version <= 0)
		printf("torch:    none\n");
	else if (!sys->torch_source)
		printf("torch:    %d.%d (given, not found)\n", sys->torch_version / 100, sys->torch_version % 100);
	else
		printf("torch:    %s, found by %s at %s\n",
		       sys->torch_version_string ? sys->torch_version_string : "(unknown version)", sys->torch_source,
		       sys->torch_path);
}

static json_t *torch_json(const kernels_system *sys)
{
	if (sys->torch_version <= 0)
		return json_null();
	return json_pack("{s:o,s:o,s:o,s:o}", "version", json_sprintf("%d.%d", sys->torch_version / 100,
									   sys->torch_version % 100),
			 "version_string", cli_jstr(sys->torch_version_string), "path", cli_jstr(sys->torch_path),
			 "source", cli_jstr(sys->torch_source));
}

/* Variants whose native module links libtorch. */
static int needs_libtorch(const char *variant)
{
	kernels_variant_info info;

	return variant && !kernels_variant_parse(&info, variant) &&
	       (info.kind == KERNELS_VARIANT_TORCH || info.kind == KERNELS_VARIANT_TORCH_STABLE_ABI);
}

static int load_torch(cli_ctx *ctx, const kernels_system *sys, const char *variant)
{
	static const char *const libs[] = { "libc10.so", "libtorch_cpu.so", "libtorch.so" };
	size_t i;

	for (i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		char *path = cli_sprintf("%s/%s", sys->torch_path, libs[i]);
		/* Kept for the life of the process, like the variant needing it. */
		if (!dlopen(path, RTLD_NOW | RTLD_GLOBAL)) {
			const char *err = dlerror();
			int rc = cli_error(ctx, KERNELS_ELOAD,
					   "cannot load %s, the torch (found by %s) that %s needs: %s; point "
					   "--torch-dir at a working torch or install one for python3",
					   path, sys->torch_source, variant, err ? err : "dlopen failed");
			free(path);
			return rc;
		}
		free(path);
	}
	if (ctx->verbose)
		cli_note(ctx, "loaded torch %s from %s (found by %s) for %s",
			 sys->torch_version_string ? sys->torch_version_string : "", sys->torch_path, sys->torch_source,
			 variant);
	return CLI_OK;
}

static void silent(kernels_log_level level, const char *message, void *payload)
{
	(void)level;
	(void)message;
	(void)payload;
}

int cli_prepare_torch(cli_ctx *ctx, const char *repo, const char *revision)
{
	const kernels_system *sys = cli_system(ctx);
	kernels_variant_trace *t = NULL;
	kernels_log_cb log_cb = ctx->opts.log_cb;
	int rc = CLI_OK;

	if (sys && sys->torch_source && sys->torch_path &&
	    strcmp(sys->torch_source, "process")) {
		/* The load that follows says whatever this resolution would. */
		ctx->opts.log_cb = silent;
		if (kernels_get_variants(&t, repo, revision, &ctx->opts) == 0 &&
		    needs_libtorch(kernels_variant_trace_chosen(t)))
			rc = load_torch(ctx, sys, kernels_variant_trace_chosen(t));
		ctx->opts.log_cb = log_cb;
	}
	kernels_variant_trace_free(t);
	return rc;
}

/* The trace's candidates as a JSON array, in rank order. */
static json_t *variants_json(const kernels_variant_trace *t)
{
	const char *chosen = kernels_variant_trace_chosen(t);
	size_t i, n = kernels_variant_trace_count(t);
	json_t *arr = json_array();

	for (i = 0; i < n; i++) {
		int acc = kernels_variant_trace_accepted_at(t, i) == 1, rank = kernels_variant_trace_rank_at(t, i);
		int is_chosen = chosen && !strcmp(chosen, kernels_variant_trace_name_at(t, i));
		json_array_append_new(arr, json_pack("{s:o,s:b,s:b,s:o,s:o,s:b}", "name",
						     cli_jstr(kernels_variant_trace_name_at(t, i)), "accepted", acc,
						     "valid", kernels_variant_trace_valid_at(t, i) == 1, "rank",
						     rank >= 0 ? json_integer(rank) : json_null(), "reason",
						     cli_jstr(kernels_variant_trace_reason_at(t, i)), "chosen", is_chosen));
	}
	return arr;
}

/* The trace's candidates, a line each: accepted with its rank, or why not. */
static void print_variants(const kernels_variant_trace *t)
{
	const char *chosen = kernels_variant_trace_chosen(t);
	size_t i, n = kernels_variant_trace_count(t);

	for (i = 0; i < n; i++) {
		const char *name = kernels_variant_trace_name_at(t, i);
		int is_chosen = chosen && !strcmp(chosen, name);
		if (kernels_variant_trace_accepted_at(t, i) == 1)
			printf("%s %-44s accepted%s (rank %d)\n", is_chosen ? "*" : " ", name,
			       is_chosen ? ", chosen" : "", kernels_variant_trace_rank_at(t, i));
		else
			printf("  %-44s rejected: %s\n", name, kernels_variant_trace_reason_at(t, i));
	}
	printf("\nchosen:   %s\n", chosen ? chosen : "(none: no variant fits this system)");
}

int cmd_variants(cli_ctx *ctx, const cli_command *cmd)
{
	const char *repo = ctx->pos[0], *rev = cli_value(ctx, cmd, "revision");
	kernels_revision *r = NULL;
	kernels_variant_trace *t = NULL;
	const kernels_system *detected = NULL;
	const char *chosen, *hint;
	char *sys;
	int rc = CLI_OK;

	if (!rev || !*rev)
		return cli_usage_error(cmd, "--revision is required (a branch, tag, commit, major version or spec)");
	if (!(sys = system_line(ctx, &detected)))
		return cli_fail(ctx, kernels_error_last_code(), "describing this system");
	if ((rc = kernels_revision_resolve(&r, repo, rev, &ctx->opts)) ||
	    (rc = kernels_get_variants(&t, repo, rev, &ctx->opts))) {
		free(sys);
		kernels_revision_free(r);
		return cli_fail(ctx, rc, repo);
	}
	chosen = kernels_variant_trace_chosen(t);
	hint = kernels_variant_trace_hint(t);
	if (ctx->json) {
		rc = cli_json_print(json_pack("{s:s,s:s,s:s,s:o,s:s,s:o,s:o,s:o,s:o}", "repo_id", repo, "revision", rev,
					      "commit", kernels_revision_commit(r), "ref",
					      cli_jstr(kernels_revision_ref(r)), "system", sys, "torch",
					      torch_json(detected), "chosen", cli_jstr(chosen), "hint", cli_jstr(hint),
					      "variants", variants_json(t)));
	} else {
		printf("repo:     %s\nrevision: %s (commit %s)\nsystem:   %s\n", repo, rev, kernels_revision_commit(r),
		       sys);
		print_torch(detected);
		printf("\n");
		print_variants(t);
	}
	if (!chosen && rc == CLI_OK) { /* an error: shown with -q too */
		fprintf(stderr, CLI_NAME ": error: no variant of %s at %s fits this system (%s)%s%s\n", repo, rev,
			sys, hint ? ". To make one fit:" : "", hint ? hint : "");
		rc = CLI_ERROR;
	}
	free(sys);
	kernels_variant_trace_free(t);
	kernels_revision_free(r);
	return rc;
}

/* Prints what was loaded; `st` is NULL for locked loads (no timings). */
static int print_kernel(cli_ctx *ctx, kernels_kernel *k, const kernels_get_stats *st, const char *repo,
			const char *rev, const char *lock_file)
{
	const kernels_metadata *m = kernels_kernel_metadata(k);
	const char *loaded = st && st->repo_id[0] ? st->repo_id
				 : kernels_kernel_repo(k) ? kernels_kernel_repo(k) : repo;

	if (ctx->json) {
		json_t *meta = m ? json_pack("{s:s,s:s,s:i,s:s,s:s}", "id", kernels_metadata_id(m), "name",
					     kernels_metadata_name(m), "version", kernels_metadata_version(m),
					     "license", kernels_metadata_license(m), "backend",
					     kernels_metadata_backend(m))
				 : json_null();
		json_t *o = json_pack("{s:s,s:s,s:o,s:o,s:s,s:o,s:o,s:o}", "repo_id", loaded, "requested_repo_id", repo,
				      "revision", cli_jstr(rev), "commit", cli_jstr(kernels_kernel_commit(k)),
				      "variant", kernels_kernel_variant(k), "path", cli_jstr(kernels_kernel_path(k)),
				      "library", cli_jstr(kernels_kernel_library(k)), "metadata", meta);
		if (lock_file)
			json_object_set_new(o, "lock_file", cli_jstr(lock_file));
		if (st) {
			json_object_set_new(o, "from_cache", json_boolean(st->from_cache));
			json_object_set_new(o, "local", json_boolean(st->local));
			json_object_set_new(o, "timings_ms",
					    json_pack("{s:f,s:f,s:f,s:f}", "resolve", st->resolve_ms, "select",
						      st->select_ms, "download", st->download_ms, "load", st->load_ms));
			json_object_set_new(o, "download",
					    json_pack("{s:I,s:I,s:I,s:I,s:I}", "files", (json_int_t)st->download.files,
						      "files_cached", (json_int_t)st->download.files_cached,
						      "blobs_downloaded", (json_int_t)st->download.blobs_downloaded,
						      "bytes_downloaded", (json_int_t)st->download.bytes_downloaded,
						      "bytes_total", (json_int_t)st->download.bytes_total));
		}
		return cli_json_print(o);
	}
	printf("repo:      %s\n", loaded);
	if (strcmp(loaded, repo))
		printf("requested: %s (redirected)\n", repo);
	if (rev)
		printf("revision:  %s\n", rev);
	if (lock_file)
		printf("lock:      %s\n", lock_file);
	printf("commit:    %s\nvariant:   %s\npath:      %s\nlibrary:   %s\n",
	       kernels_kernel_commit(k) ? kernels_kernel_commit(k) : "(local)", kernels_kernel_variant(k),
	       kernels_kernel_path(k), kernels_kernel_library(k) ? kernels_kernel_library(k) : "(noarch)");
	if (m)
		printf("id:        %s\nname:      %s\nversion:   %d\nbackend:   %s\nlicense:   %s\n",
		       kernels_metadata_id(m), kernels_metadata_name(m), kernels_metadata_version(m),
		       kernels_metadata_backend(m), kernels_metadata_license(m));
	if (st) {
		char got[32], all[32];
		if (st->local)
			printf("cache:     local tree (nothing downloaded)\n");
		else if (st->from_cache)
			printf("cache:     hit (nothing downloaded)\n");
		else
			printf("cache:     downloaded %zu of %zu files, %s of %s\n", st->download.blobs_downloaded,
			       st->download.files, cli_size(ctx, st->download.bytes_downloaded, got, sizeof(got)),
			       cli_size(ctx, st->download.bytes_total, all, sizeof(all)));
		printf("timings:   resolve %.1f ms, select %.1f ms, download %.1f ms, load %.1f ms\n", st->resolve_ms,
		       st->select_ms, st->download_ms, st->load_ms);
	}
	return CLI_OK;
}

int cmd_get(cli_ctx *ctx, const cli_command *cmd)
{
	const char *repo = ctx->pos[0], *rev = ctx->pos[1];
	kernels_get_stats st = KERNELS_GET_STATS_INIT;
	kernels_kernel *k = NULL;
	int rc;

	(void)cmd;
	if (cli_prepare_torch(ctx, repo, rev) != CLI_OK)
		return CLI_ERROR;
	cli_progress_begin(ctx, "fetching");
	rc = kernels_get_ext(&k, &st, repo, rev, &ctx->opts);
	cli_progress_end(ctx);
	if (rc)
		return cli_fail(ctx, rc, repo);
	rc = print_kernel(ctx, k, &st, repo, rev, NULL);
	kernels_kernel_close(k);
	return rc;
}

/* cli_prepare_torch() for the commit `lock` pins; from the cache only
 * unless `fetch`. */
static int prepare_locked_torch(cli_ctx *ctx, const char *repo, const char *lock_path, int fetch)
{
	const kernels_lock_entry *e;
	kernels_lock *lock = NULL;
	int rc = CLI_OK, offline = ctx->opts.offline;

	if (kernels_lock_load(&lock, lock_path) == 0 && (e = kernels_lock_find(lock, repo))) {
		if (!fetch)
			ctx->opts.offline = 1;
		rc = cli_prepare_torch(ctx, repo, e->commit);
		ctx->opts.offline = offline;
	}
	kernels_lock_free(lock);
	return rc;
}

int cmd_load(cli_ctx *ctx, const cli_command *cmd)
{
	const char *repo = ctx->pos[0], *where = ctx->npos > 1 ? ctx->pos[1] : ".";
	int fetch = cli_value(ctx, cmd, "fetch") != NULL;
	struct stat sb;
	kernels_kernel *k = NULL;
	char *lock;
	int rc;

	/* DIR (holding kernels.lock) or the lock file itself. */
	lock = !stat(where, &sb) && S_ISDIR(sb.st_mode) ? cli_sprintf("%s/kernels.lock", where)
							: cli_sprintf("%s", where);
	if (prepare_locked_torch(ctx, repo, lock, fetch) != CLI_OK) {
		free(lock);
		return CLI_ERROR;
	}
	if (fetch) {
		cli_progress_begin(ctx, "fetching");
		rc = kernels_get_locked(&k, repo, lock, &ctx->opts);
		cli_progress_end(ctx);
	} else {
		rc = kernels_load_locked(&k, repo, lock, &ctx->opts);
	}
	if (rc) {
		free(lock);
		return cli_fail(ctx, rc, repo);
	}
	rc = print_kernel(ctx, k, NULL, repo, NULL, lock);
	kernels_kernel_close(k);
	free(lock);
	return rc;
}

/* ---- to-wheel --------------------------------------------------------------- */

static int in_list(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p = list;

	while (p && *p) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		if (len == n && !strncmp(p, name, n))
			return 1;
		p = c ? c + 1 : NULL;
	}
	return 0;
}

/* The first name of the comma-separated `list` that is none of `names`
 * (its length in *len), or NULL when each is one of them. */
static const char *unmatched(const char *list, char *const *names, size_t n, size_t *len)
{
	const char *p = list;
	size_t i;

	while (p && *p) {
		const char *c = strchr(p, ',');
		*len = c ? (size_t)(c - p) : strlen(p);
		for (i = 0; i < n && (strlen(names[i]) != *len || strncmp(names[i], p, *len)); i++)
			;
		if (*len && i == n)
			return p;
		p = c ? c + 1 : NULL;
	}
	return NULL;
}

/* One wheel per downloaded variant of `snap` into `out`, each listed in
 * `wheels` (and printed, without --json): CLI_OK or the failure, told. */
static int write_wheels(cli_ctx *ctx, const kernels_snapshot *snap, const char *repo, const char *bare,
			char *const *picked, size_t np, const char *out, const kernels_wheel_options *wo,
			json_t *wheels)
{
	size_t i;
	int rc;

	for (i = 0; i < np; i++) {
		char *dir = cli_sprintf("%s/build/%s", kernels_snapshot_path(snap), picked[i]), *path = NULL;
		rc = kernels_wheel_write(&path, dir, repo, bare, picked[i], out, wo);
		free(dir);
		if (rc) {
			char *what = cli_sprintf("%s variant %s", repo, picked[i]);
			rc = cli_fail(ctx, rc, what);
			free(what);
			return rc;
		}
		if (!ctx->json)
			printf("%s\n", path);
		json_array_append_new(wheels, json_pack("{s:o,s:o,s:o}", "variant", cli_jstr(picked[i]), "path",
							cli_jstr(path), "filename",
							cli_jstr(strrchr(path, '/') ? strrchr(path, '/') + 1 : path)));
		kernels_free(path);
	}
	return CLI_OK;
}

int cmd_to_wheel(cli_ctx *ctx, const cli_command *cmd)
{
	const char *repo = ctx->pos[0], *version = ctx->pos[1];
	const char *out = cli_value(ctx, cmd, "out"), *only = cli_value(ctx, cmd, "variant");
	kernels_wheel_options wo = { KERNELS_WHEEL_OPTIONS_VERSION, cli_value(ctx, cmd, "python-version"),
				     cli_value(ctx, cmd, "manylinux-version") };
	const char *bare = version[0] == 'v' ? version + 1 : version;
	kernels_revision *r = NULL;
	kernels_snapshot *snap = NULL;
	char **names = NULL, **picked = NULL, *rev = NULL, *probe = NULL;
	const char *bad;
	size_t n = 0, np = 0, i, len;
	json_t *wheels = NULL;
	int rc;

	if (!out)
		out = ".";
	/* Check the names before any network call: a bad VERSION is a usage error. */
	if (kernels_wheel_filename(&probe, repo, bare, "torch-universal", &wo))
		return cli_usage_error(cmd, "%s", kernels_error_last());
	kernels_free(probe);
	if (mkdir(out, 0777) && errno != EEXIST)
		return cli_error(ctx, KERNELS_EIO, "cannot create %s: %s", out, strerror(errno));
	rev = cli_sprintf("v%s", bare);
	if ((rc = kernels_revision_resolve(&r, repo, rev, &ctx->opts)) ||
	    (rc = kernels_variants_list(&names, &n, repo, kernels_revision_commit(r), &ctx->opts)))
		goto fail;
	picked = calloc(n ? n : 1, sizeof(*picked));
	for (i = 0; picked && i < n; i++)
		if (!only || in_list(only, names[i]))
			picked[np++] = names[i];
	if (only && (bad = unmatched(only, names, n, &len))) { /* a typo would leave a wheel out unsaid */
		rc = cli_error(ctx, KERNELS_ENOTFOUND, "%s at %s has no variant named %.*s", repo, rev, (int)len, bad);
		goto done;
	}
	if (!np) {
		rc = cli_error(ctx, KERNELS_ENOTFOUND, "%s at %s has no variant%s%s", repo, rev, only ? " named " : "",
			       only ? only : "");
		goto done;
	}
	cli_progress_begin(ctx, "downloading");
	rc = kernels_download(&snap, repo, kernels_revision_commit(r), (const char *const *)picked, np, &ctx->opts);
	cli_progress_end(ctx);
	if (rc)
		goto fail;
	wheels = json_array();
	if ((rc = write_wheels(ctx, snap, repo, bare, picked, np, out, &wo, wheels)) != CLI_OK)
		goto done;
	if (ctx->json)
		rc = cli_json_print(json_pack("{s:s,s:s,s:s,s:O}", "repo_id", repo, "version", bare, "commit",
					      kernels_revision_commit(r), "wheels", wheels));
	else
		cli_note(ctx, "wrote %zu wheel%s for %s %s", np, np == 1 ? "" : "s", repo, bare);
	goto done;
fail:
	rc = cli_fail(ctx, rc, repo);
done:
	if (rc < 0)
		rc = CLI_ERROR;
	json_decref(wheels);
	free(picked);
	free(rev);
	kernels_free(names);
	kernels_snapshot_free(snap);
	kernels_revision_free(r);
	return rc;
}
