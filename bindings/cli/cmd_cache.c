/* libkernels CLI: looking into and cleaning the cache (cache ls, cache rm).
 * The library scans and removes (kernels/cache.h); this prints. */

#include "cli.h"

#include <stdlib.h>
#include <string.h>

static json_t *strings_json(const char *const *v, size_t n)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < n; i++)
		json_array_append_new(a, cli_jstr(v[i]));
	return a;
}

/* The names come from the cache's folders and files: bytes, each through
 * cli_jstr(), so that one that is not UTF-8 is not left out. */
static json_t *repo_json(const kernels_cache_repo *r)
{
	json_t *refs = json_object(), *snaps = json_array(), *name;
	size_t i, j;

	for (i = 0; i < r->refs_count; i++) {
		name = cli_jstr(r->ref_names[i]);
		json_object_set_new(refs, json_string_value(name), cli_jstr(r->ref_commits[i]));
		json_decref(name);
	}
	for (i = 0; i < r->revisions_count; i++) {
		const kernels_cache_revision *s = &r->revisions[i];
		json_t *variants = json_array();
		for (j = 0; j < s->variants_count; j++)
			json_array_append_new(variants, json_pack("{s:o,s:I,s:I}", "name", cli_jstr(s->variants[j].name),
								  "files", (json_int_t)s->variants[j].files, "size",
								  (json_int_t)s->variants[j].size));
		json_array_append_new(snaps, json_pack("{s:o,s:o,s:o}", "commit", cli_jstr(s->commit), "refs",
						       strings_json(s->refs, s->refs_count), "variants", variants));
	}
	return json_pack("{s:o,s:s,s:o,s:I,s:I,s:o,s:o}", "repo_id", cli_jstr(r->repo_id), "type",
			 r->is_model ? "model" : "kernel", "path", cli_jstr(r->path), "size", (json_int_t)r->size,
			 "blobs", (json_int_t)r->blobs, "refs", refs, "snapshots", snaps);
}

static void repo_print(const cli_ctx *ctx, const kernels_cache_repo *r)
{
	char size[32];
	size_t i, j;

	printf("\n%s (%s)  %s in %zu blob%s\n", r->repo_id, r->is_model ? "model" : "kernel",
	       cli_size(ctx, r->size, size, sizeof(size)), r->blobs, r->blobs == 1 ? "" : "s");
	for (i = 0; i < r->revisions_count; i++) {
		const kernels_cache_revision *s = &r->revisions[i];
		printf("  %s", s->commit);
		for (j = 0; j < s->refs_count; j++)
			printf("%s%s", j ? ", " : "  [", s->refs[j]);
		printf("%s\n", s->refs_count ? "]" : "");
		for (j = 0; j < s->variants_count; j++) {
			const kernels_cache_variant *v = &s->variants[j];
			printf("    %-44s %6zu file%s %14s\n", v->name, v->files, v->files == 1 ? " " : "s",
			       cli_size(ctx, v->size, size, sizeof(size)));
		}
	}
}

int cmd_cache_ls(cli_ctx *ctx, const cli_command *cmd)
{
	const char *only = ctx->npos ? ctx->pos[0] : NULL;
	kernels_cache_info *info = NULL;
	char size[32];
	size_t i;
	int rc;

	if (only && !strchr(only, '/'))
		return cli_usage_error(cmd, "REPO must be 'org/name', not '%s'", only);
	if ((rc = kernels_cache_scan(&info, only, &ctx->opts)) < 0)
		return rc == KERNELS_EINVAL ? cli_usage_error(cmd, "%s", kernels_error_last())
					    : cli_fail(ctx, rc, "the cache");
	if (ctx->json) {
		json_t *repos = json_array();
		for (i = 0; i < info->repos_count; i++)
			json_array_append_new(repos, repo_json(&info->repos[i]));
		rc = cli_json_print(json_pack("{s:o,s:I,s:o}", "cache_dir", cli_jstr(info->cache_dir), "size",
					      (json_int_t)info->size, "repos", repos));
		kernels_cache_info_free(info);
		return rc;
	}
	printf("cache: %s\n", info->cache_dir);
	for (i = 0; i < info->repos_count; i++)
		repo_print(ctx, &info->repos[i]);
	if (!info->repos_count)
		printf("(no kernels%s%s)\n", only ? " for " : "", only ? only : "");
	printf("\ntotal: %s\n", cli_size(ctx, info->size, size, sizeof(size)));
	kernels_cache_info_free(info);
	return CLI_OK;
}

int cmd_cache_rm(cli_ctx *ctx, const cli_command *cmd)
{
	const char *repo = ctx->pos[0], *rev = cli_value(ctx, cmd, "revision");
	unsigned int flags = cli_value(ctx, cmd, "dry-run") ? KERNELS_CACHE_DRY_RUN : 0;
	kernels_cache_removal *r = NULL;
	char size[32];
	size_t i;
	int rc = kernels_cache_remove(&r, repo, rev, flags, &ctx->opts);

	/* A malformed repo id or an empty revision is the command line's fault. */
	if (rc == KERNELS_EINVAL)
		return cli_usage_error(cmd, "%s", kernels_error_last());
	if (r && ctx->json && rc == 0) {
		cli_json_print(json_pack("{s:s,s:o,s:o,s:b,s:o,s:I}", "repo_id", r->repo_id, "revision", cli_jstr(rev),
					 "commit", cli_jstr(r->commit), "dry_run", r->dry_run, "removed",
					 strings_json(r->removed, r->removed_count), "freed_bytes",
					 (json_int_t)r->freed));
	} else if (r && !ctx->json) {
		for (i = 0; i < r->removed_count; i++)
			printf("%s %s\n", r->dry_run ? "would remove" : "removed", r->removed[i]);
		cli_note(ctx, "%s %s", r->dry_run ? "would free" : "freed",
			 cli_size(ctx, r->freed, size, sizeof(size)));
	}
	kernels_cache_removal_free(r);
	return rc < 0 ? cli_fail(ctx, rc, NULL) : CLI_OK;
}

/* A verdict as --json names it: "unverified" when no endpoint gave one
 * (nothing recorded; ask through the Hub), apart from the Hub's
 * "untrusted" (recorded). */
static const char *verdict_name(kernels_trust_verdict verdict)
{
	return verdict == KERNELS_TRUST_TRUSTED ? "trusted" : verdict == KERNELS_TRUST_UNTRUSTED ? "untrusted"
												  : "unverified";
}

/* `trust [REPO]`: the Hub's publisher verdict for each cached repo (or
 * REPO), recorded in the cache, so offline loads of what Python kernels
 * fetched need no opt-in. One line (or JSON row) per repo; exit status 1
 * when one is not from a trusted publisher or the Hub cannot be asked. */
int cmd_trust(cli_ctx *ctx, const cli_command *cmd)
{
	const char *only = ctx->npos ? ctx->pos[0] : NULL;
	kernels_cache_info *info = NULL;
	json_t *rows;
	size_t i, untrusted = 0;
	int rc = kernels_cache_scan(&info, only, &ctx->opts);

	if (rc == KERNELS_EINVAL)
		return cli_usage_error(cmd, "%s", kernels_error_last());
	if (rc == 0 && only && !info->repos_count)
		rc = kernels_cache_trust(only, &ctx->opts); /* says it is not in the cache */
	if (rc < 0) {
		kernels_cache_info_free(info);
		return cli_fail(ctx, rc, "recording trust");
	}
	rows = json_array();
	for (i = 0; i < info->repos_count; i++) {
		const char *repo = info->repos[i].repo_id;
		kernels_trust_verdict verdict;
		int one = kernels_cache_trust_verdict(&verdict, repo, &ctx->opts);

		if (one < 0 && one != KERNELS_EUNTRUSTED) {
			rc = cli_fail(ctx, one, repo); /* before the free: `repo` is info's */
			json_decref(rows);
			kernels_cache_info_free(info);
			return rc;
		}
		untrusted += one != 0;
		json_array_append_new(rows, json_pack("{s:s,s:s}", "repo_id", repo, "verdict", verdict_name(verdict)));
		if (!ctx->json) /* not trusted: the library says whether its verdict was recorded */
			printf("%s: %s\n", repo, one == 0 ? "trusted publisher, recorded" : kernels_error_last());
	}
	if (!ctx->json && !info->repos_count)
		printf("(no kernels in the cache)\n");
	kernels_cache_info_free(info);
	if (ctx->json)
		cli_json_print(json_pack("{s:o}", "repos", rows));
	else
		json_decref(rows);
	return untrusted ? CLI_ERROR : CLI_OK;
}
