/* libkernels verify-signature: the sigstore signature of a kernel's
 * variants, checked offline against the trusted root (built in, or
 * $KERNELS_SIGSTORE_TRUSTED_ROOT), as Python kernels 0.17's
 * `kernels verify-signature` reports it: one line per variant, the same
 * words, exit status 1 when any variant fails. And --require-signature for
 * download: each downloaded variant must be validly signed. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

const cli_opt cli_verify_signature_opts[] = {
	{ "revision", 0, "REV", "branch, tag, commit, major version N or PEP 440 spec (required)" },
	{ "all-variants", 0, NULL, "every build variant, not only the one for this system" },
	{ "filter-unsigned", 0, NULL, "skip variants that have no signature" },
	{ "filter-no-digest", 0, NULL, "skip variants whose metadata has no digest" },
	{ NULL, 0, NULL, NULL }
};

static const char *status_name(kernels_signature_status st)
{
	switch (st) {
	case KERNELS_SIGNATURE_VALID: return "valid";
	case KERNELS_SIGNATURE_BUNDLE_MISSING: return "signature_missing";
	case KERNELS_SIGNATURE_BUNDLE_INVALID: return "bundle_invalid";
	case KERNELS_SIGNATURE_METADATA_MISSING: return "metadata_missing";
	case KERNELS_SIGNATURE_FAILED: return "signature_invalid";
	case KERNELS_SIGNATURE_METADATA_INVALID: return "metadata_invalid";
	case KERNELS_SIGNATURE_DIGEST_MISSING: return "digest_missing";
	case KERNELS_SIGNATURE_DIGEST_MISMATCH: return "digest_mismatch";
	}
	return "unknown";
}

/* The digest violations of a KERNELS_EINTEGRITY message: its lines after
 * the first ("  hash mismatch: ..."), as 0.17 prints one per line. */
static void print_violations(const char *msg)
{
	const char *nl = strchr(msg, '\n');
	if (!nl)
		printf("%s\n", msg);
	else
		for (msg = nl + 1; *msg; msg = nl ? nl + 1 : msg + strlen(msg)) {
			nl = strchr(msg, '\n');
			printf("%.*s\n", nl ? (int)(nl - msg) : (int)strlen(msg), msg);
			if (!nl)
				break;
		}
}

/* One variant, printed as 0.17 prints it. 1 when it counts as a failure. */
static int report(const cli_ctx *ctx, const char *variant, kernels_signature_status st, const char *why,
		  int filter_unsigned, int filter_no_digest, json_t *out)
{
	int failed = st != KERNELS_SIGNATURE_VALID, shown = 1;

	if ((st == KERNELS_SIGNATURE_BUNDLE_MISSING && filter_unsigned) ||
	    ((st == KERNELS_SIGNATURE_METADATA_MISSING || st == KERNELS_SIGNATURE_DIGEST_MISSING) && filter_no_digest))
		failed = shown = 0;
	if (ctx->json) {
		if (shown)
			json_array_append_new(out, json_pack("{s:o,s:s,s:b,s:o}", "variant", cli_jstr(variant), "status",
							     status_name(st), "ok", !failed, "reason",
							     failed ? cli_jstr(why) : json_null()));
		return failed;
	}
	if (!shown)
		return 0;
	switch (st) {
	case KERNELS_SIGNATURE_VALID:
		printf("\u2705 %s: kernel metadata is correctly signed\n", variant);
		break;
	case KERNELS_SIGNATURE_BUNDLE_MISSING:
		printf("\u274c %s: cannot verify kernel integrity, signature not found\n", variant);
		break;
	case KERNELS_SIGNATURE_BUNDLE_INVALID:
		printf("\u274c %s: cannot verify kernel integrity, invalid signature bundle:\n%s\n", variant, why);
		break;
	case KERNELS_SIGNATURE_METADATA_INVALID:
		printf("\u274c %s: cannot verify kernel integrity, invalid metadata:\n%s\n", variant, why);
		break;
	case KERNELS_SIGNATURE_METADATA_MISSING:
	case KERNELS_SIGNATURE_DIGEST_MISSING:
		printf("\u274c %s: cannot verify kernel integrity, metadata does not have a digest\n", variant);
		break;
	case KERNELS_SIGNATURE_DIGEST_MISMATCH:
		printf("\u274c %s: kernel integrity check failed\n", variant);
		print_violations(why);
		break;
	case KERNELS_SIGNATURE_FAILED:
		printf("\u274c %s: metadata signature verification failed:\n%s\n", variant, why);
		break;
	}
	return failed;
}

/* The variants to check: all of the commit's (the library's array:
 * kernels_free), or the one this system resolves to (ours:
 * cli_strings_free); `*from_lib` says which. */
static int pick_variants(cli_ctx *ctx, const char *repo, const char *commit, int all, char ***names, size_t *n,
			 int *from_lib)
{
	kernels_variant_trace *t = NULL;
	int rc;

	*from_lib = all;
	if (all)
		return kernels_variants_list(names, n, repo, commit, &ctx->opts)
			       ? cli_fail(ctx, kernels_error_last_code(), repo) : CLI_OK;
	if ((rc = kernels_get_variants(&t, repo, commit, &ctx->opts)))
		return cli_fail(ctx, rc, repo);
	if (!kernels_variant_trace_chosen(t)) {
		kernels_variant_trace_free(t);
		return cli_error(ctx, KERNELS_ENOMATCH, "%s: no build variant fits this system (see '" CLI_NAME
				 " variants %s --revision %s'; --all-variants checks every one)", repo, repo, commit);
	}
	*names = calloc(1, sizeof(**names));
	if (*names && ((*names)[0] = strdup(kernels_variant_trace_chosen(t))))
		*n = 1;
	kernels_variant_trace_free(t);
	return *n ? CLI_OK : cli_error(ctx, KERNELS_ENOMEM, "out of memory");
}

int cmd_verify_signature(cli_ctx *ctx, const cli_command *cmd)
{
	const char *repo = ctx->pos[0], *rev = cli_value(ctx, cmd, "revision");
	int all = cli_value(ctx, cmd, "all-variants") != NULL;
	int filter_unsigned = cli_value(ctx, cmd, "filter-unsigned") != NULL;
	int filter_no_digest = cli_value(ctx, cmd, "filter-no-digest") != NULL;
	kernels_revision *r = NULL;
	kernels_snapshot *snap = NULL;
	char **names = NULL;
	size_t n = 0, i;
	int rc, failed = 0, from_lib = 0;
	json_t *out = json_array();

	if (!rev)
		return cli_usage_error(cmd, "--revision is required");
	if ((rc = kernels_revision_resolve(&r, repo, rev, &ctx->opts))) {
		rc = cli_fail(ctx, rc, repo);
		goto done;
	}
	if ((rc = pick_variants(ctx, repo, kernels_revision_commit(r), all, &names, &n, &from_lib)) != CLI_OK)
		goto done;
	cli_progress_begin(ctx, "downloading");
	rc = kernels_download(&snap, repo, kernels_revision_commit(r), (const char *const *)names, n, &ctx->opts);
	cli_progress_end(ctx);
	if (rc) {
		rc = cli_fail(ctx, rc, repo);
		goto done;
	}
	for (i = 0; i < n; i++) {
		char *dir = cli_sprintf("%s/build/%s", kernels_snapshot_path(snap), names[i]);
		kernels_signature_status st = KERNELS_SIGNATURE_FAILED;
		int vrc = kernels_signature_verify_variant(&st, dir, &ctx->opts);

		if (vrc && vrc != KERNELS_ESIGNATURE && vrc != KERNELS_EINTEGRITY) {
			/* Not a verdict on the variant: the check itself failed. */
			free(dir);
			rc = cli_fail(ctx, vrc, names[i]);
			goto done;
		}
		failed |= report(ctx, names[i], vrc ? st : KERNELS_SIGNATURE_VALID, vrc ? kernels_error_last() : "",
				 filter_unsigned, filter_no_digest, out);
		free(dir);
	}
	if (ctx->json) {
		cli_json_print(json_pack("{s:s,s:s,s:o,s:b}", "repo_id", repo, "commit", kernels_revision_commit(r),
					 "variants", out, "ok", !failed));
		out = NULL;
	}
	rc = failed ? CLI_ERROR : CLI_OK;
done:
	json_decref(out);
	if (from_lib)
		kernels_free(names);
	else
		cli_strings_free(names, n);
	kernels_snapshot_free(snap);
	kernels_revision_free(r);
	return rc;
}

int cli_require_signed(cli_ctx *ctx, const char *snapshot_dir, char *const *variants, size_t n)
{
	size_t i;

	if (ctx->opts.signature != KERNELS_SIGNATURE_REQUIRE || !snapshot_dir)
		return CLI_OK;
	for (i = 0; i < n; i++) {
		char *dir = cli_sprintf("%s/build/%s", snapshot_dir, variants[i]);
		int rc = kernels_signature_verify_variant(NULL, dir, &ctx->opts);
		free(dir);
		if (rc)
			return cli_fail(ctx, rc, variants[i]);
	}
	return CLI_OK;
}
