/* libkernels CLI: bundles, a project's locked kernels in one verified file
 * for machines that never see the Hub: bundle, bundle import, bundle ls. */

#include "cli.h"

#include <stdlib.h>
#include <string.h>

const cli_opt cli_bundle_opts[] = {
	{ "out", 'o', "FILE", "the bundle to write (required; replaced whole when it exists)" },
	{ "variant", 0, "NAME...", "only this variant (repeatable, or comma-separated); default: every variant" },
	{ "system", 0, NULL, "only the variant each kernel resolves to here, or on what --backend, --torch, ... describe" },
	{ NULL, 0, NULL, NULL }
};

/* "a,b,c" into a NULL-terminated array of pointers into `s` (modified). */
static const char **split(char *s, size_t *n)
{
	const char **v = calloc(strlen(s) + 2, sizeof(*v));
	char *save = NULL, *tok;

	*n = 0;
	for (tok = v ? strtok_r(s, ",", &save) : NULL; tok; tok = strtok_r(NULL, ",", &save))
		v[(*n)++] = tok;
	return v;
}

/* The variant `e` resolves to on the system of the options, appended to
 * *list (comma-separated); 0, or the failure reported. */
static int add_chosen(cli_ctx *ctx, const kernels_lock_entry *e, char **list)
{
	kernels_variant_trace *t = NULL;
	char *next;
	int rc = kernels_get_variants(&t, e->repo_id, e->commit, &ctx->opts);

	if (rc)
		rc = cli_fail(ctx, rc, e->repo_id);
	else if (!kernels_variant_trace_chosen(t))
		rc = cli_error(ctx, KERNELS_ENOTFOUND, "%s@%.7s has no variant for this system; '" CLI_NAME " variants "
			       "%s --revision %s' says why", e->repo_id, e->commit, e->repo_id, e->commit);
	else if ((next = cli_sprintf("%s%s%s", *list, **list ? "," : "", kernels_variant_trace_chosen(t)))) {
		free(*list);
		*list = next;
	}
	kernels_variant_trace_free(t);
	return rc;
}

/* --system: the variants the locked kernels resolve to, as `variants`
 * resolves them (malloc'ed, comma-separated); NULL after reporting why. */
static char *system_variants(cli_ctx *ctx, const char *dir)
{
	char *path = cli_sprintf("%s/kernels.lock", dir), *list = cli_sprintf("%s", "");
	kernels_lock *lock = NULL;
	size_t i;
	int rc = kernels_lock_load(&lock, path);

	if (rc)
		rc = cli_fail(ctx, rc, path);
	for (i = 0; rc == 0 && i < kernels_lock_entry_count(lock); i++)
		rc = add_chosen(ctx, kernels_lock_entry_at(lock, i), &list);
	kernels_lock_free(lock);
	free(path);
	if (rc) {
		free(list);
		return NULL;
	}
	return list;
}

int cmd_bundle(cli_ctx *ctx, const cli_command *cmd)
{
	const char *dir = ctx->npos ? ctx->pos[0] : ".", *out = cli_value(ctx, cmd, "out");
	const char *variants = cli_value(ctx, cmd, "variant");
	kernels_bundle_options bo;
	kernels_bundle *b = NULL;
	char *list = NULL;
	int rc;

	if (!out)
		return cli_usage_error(cmd, "give the bundle to write: -o FILE");
	if (variants && cli_value(ctx, cmd, "system"))
		return cli_usage_error(cmd, "--variant and --system both choose the variants: give one");
	memset(&bo, 0, sizeof(bo));
	bo.version = KERNELS_BUNDLE_OPTIONS_VERSION;
	if (cli_value(ctx, cmd, "system") && !(list = system_variants(ctx, dir)))
		return CLI_ERROR;
	if (!list && variants && !(list = cli_sprintf("%s", variants)))
		return cli_error(ctx, KERNELS_ENOMEM, "out of memory");
	if (list && !(bo.variants = split(list, &bo.n_variants)))
		return cli_error(ctx, KERNELS_ENOMEM, "out of memory");
	cli_progress_begin(ctx, "bundle");
	rc = kernels_bundle_write(out, dir, &bo, &ctx->opts);
	cli_progress_end(ctx);
	free((void *)bo.variants);
	free(list);
	if (rc || (rc = kernels_bundle_open(&b, out)))
		return cli_fail(ctx, rc, dir);
	if (ctx->json)
		rc = cli_json_print(json_pack("{s:o,s:I}", "bundle", cli_jstr(out), "files",
					      (json_int_t)kernels_bundle_file_count(b)));
	else
		printf("%s: %zu files\n", out, kernels_bundle_file_count(b));
	kernels_bundle_free(b);
	return rc;
}

int cmd_bundle_import(cli_ctx *ctx, const cli_command *cmd)
{
	kernels_bundle_import_stats st = KERNELS_BUNDLE_IMPORT_STATS_INIT;
	int rc;

	(void)cmd;
	rc = kernels_bundle_import(&st, ctx->pos[0], &ctx->opts);
	if (rc)
		return cli_fail(ctx, rc, ctx->pos[0]);
	if (ctx->json)
		return cli_json_print(json_pack("{s:o,s:I,s:I,s:I,s:I,s:I,s:I}", "bundle", cli_jstr(ctx->pos[0]),
						"files", (json_int_t)st.files, "variants", (json_int_t)st.variants,
						"variants_added", (json_int_t)st.variants_added, "blobs_added",
						(json_int_t)st.blobs_added, "refs_written", (json_int_t)st.refs_written,
						"bytes", (json_int_t)st.bytes));
	printf("%s: %zu of %zu variants added (%zu new blobs, %zu refs written); %llu bytes verified\n",
	       ctx->pos[0], st.variants_added, st.variants, st.blobs_added, st.refs_written, st.bytes);
	return CLI_OK;
}

/* One line per variant: repo@commit variant, its files and bytes. */
static void ls_text(const cli_ctx *ctx, const kernels_bundle *b)
{
	size_t i, files = 0;
	unsigned long long bytes = 0;
	char sz[64];

	for (i = 0; i < kernels_bundle_file_count(b); i++) {
		const kernels_bundle_file *f = kernels_bundle_file_at(b, i), *next = kernels_bundle_file_at(b, i + 1);
		files++;
		bytes += f->size;
		if (next && !strcmp(next->repo_id, f->repo_id) && !strcmp(next->commit, f->commit) &&
		    !strcmp(next->variant, f->variant))
			continue;
		printf("%s@%s %s %zu files %s\n", f->repo_id, f->commit, f->variant, files,
		       cli_size(ctx, bytes, sz, sizeof(sz)));
		files = 0;
		bytes = 0;
	}
	for (i = 0; i < kernels_bundle_ref_count(b); i++) {
		const kernels_bundle_ref *r = kernels_bundle_ref_at(b, i);
		printf("%s ref %s -> %s\n", r->repo_id, r->name, r->commit);
	}
}

static json_t *ls_json(const kernels_bundle *b)
{
	json_t *files = json_array(), *refs = json_array();
	size_t i;

	for (i = 0; i < kernels_bundle_file_count(b); i++) {
		const kernels_bundle_file *f = kernels_bundle_file_at(b, i);
		json_array_append_new(files, json_pack("{s:s,s:s,s:s,s:o,s:I,s:s,s:s}", "repo_id", f->repo_id,
						       "commit", f->commit, "variant", f->variant, "path",
						       cli_jstr(f->path), "size", (json_int_t)f->size, "sha256",
						       f->sha256, "etag", f->etag));
	}
	for (i = 0; i < kernels_bundle_ref_count(b); i++) {
		const kernels_bundle_ref *r = kernels_bundle_ref_at(b, i);
		json_array_append_new(refs, json_pack("{s:s,s:s,s:s}", "repo_id", r->repo_id, "name", r->name,
						      "commit", r->commit));
	}
	return json_pack("{s:o,s:o}", "files", files, "refs", refs);
}

int cmd_bundle_ls(cli_ctx *ctx, const cli_command *cmd)
{
	kernels_bundle *b = NULL;
	int rc;

	(void)cmd;
	if ((rc = kernels_bundle_open(&b, ctx->pos[0])))
		return cli_fail(ctx, rc, ctx->pos[0]);
	if (ctx->json)
		rc = cli_json_print(ls_json(b));
	else
		ls_text(ctx, b);
	kernels_bundle_free(b);
	return rc;
}
