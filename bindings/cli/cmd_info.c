/* libkernels CLI: `info KERNEL`, Python kernels 0.17's `kernels info`: a Hub
 * repo or a local kernel folder described by its metadata and variants. */

#include "cli.h"

#include <stdlib.h>
#include <string.h>

const cli_opt cli_info_opts[] = {
	{ "revision", 0, "REV", "the revision (branch, tag or commit); not with --version" },
	{ "version", 0, "N", "the kernel version N (the branch vN); not with --revision" },
	{ NULL, 0, NULL, NULL }
};

static json_t *info_json(const kernels_info *info)
{
	const kernels_metadata *m = kernels_info_metadata(info);
	json_t *o = json_object(), *b = json_array();
	size_t i;

	/* the keys and their order are 0.17's */
	if (kernels_info_repo_id(info)) {
		json_object_set_new(o, "repo_id", json_string(kernels_info_repo_id(info)));
		json_object_set_new(o, "revision", cli_jstr(kernels_info_revision(info)));
	} else {
		json_object_set_new(o, "path", cli_jstr(kernels_info_path(info)));
	}
	if (m) {
		json_t *py = json_array();
		for (i = 0; i < kernels_metadata_python_depend_count(m); i++)
			json_array_append_new(py, json_string(kernels_metadata_python_depend_at(m, i)));
		json_object_set_new(o, "name", json_string(kernels_metadata_name(m)));
		json_object_set_new(o, "version", json_integer(kernels_metadata_version(m)));
		json_object_set_new(o, "kernels_minver", cli_jstr(kernels_metadata_kernels_minver(m)));
		json_object_set_new(o, "license", json_string(kernels_metadata_license(m)));
		json_object_set_new(o, "upstream", cli_jstr(kernels_metadata_upstream(m)));
		json_object_set_new(o, "source", cli_jstr(kernels_metadata_source(m)));
		json_object_set_new(o, "python_depends", py);
	}
	for (i = 0; i < kernels_info_backend_count(info); i++)
		json_array_append_new(b, json_string(kernels_info_backend_at(info, i)));
	json_object_set_new(o, "backends", b);
	return o;
}

static const char *dash(const char *s)
{
	return s ? s : "-";
}

static void print_human(const kernels_info *info)
{
	const kernels_metadata *m = kernels_info_metadata(info);
	size_t i, n;

	if (kernels_info_repo_id(info)) {
		printf("Repository: %s\n", kernels_info_repo_id(info));
		printf("Revision: %s\n", kernels_info_revision(info));
	} else {
		printf("Path: %s\n", kernels_info_path(info));
	}
	printf("Name: %s\n", m ? kernels_metadata_name(m) : "-");
	if (m)
		printf("Version: %d\n", kernels_metadata_version(m));
	else
		printf("Version: -\n");
	printf("Minimum kernels version: %s\n", m ? dash(kernels_metadata_kernels_minver(m)) : "-");
	printf("License: %s\n", m ? kernels_metadata_license(m) : "-");
	printf("Upstream: %s\n", m ? dash(kernels_metadata_upstream(m)) : "-");
	printf("Source: %s\n", m ? dash(kernels_metadata_source(m)) : "-");
	n = m ? kernels_metadata_python_depend_count(m) : 0;
	printf("Python dependencies: ");
	for (i = 0; i < n; i++)
		printf("%s%s", i ? ", " : "", kernels_metadata_python_depend_at(m, i));
	printf("%s\n", n ? "" : "-");
	printf("Backends: ");
	for (i = 0; i < kernels_info_backend_count(info); i++)
		printf("%s%s", i ? ", " : "", kernels_info_backend_at(info, i));
	printf("\n");
}

int cmd_info(cli_ctx *ctx, const cli_command *cmd)
{
	const char *kernel = ctx->pos[0], *revision = cli_value(ctx, cmd, "revision");
	const char *version = cli_value(ctx, cmd, "version");
	kernels_info *info = NULL;
	char major[32];
	int rc;

	if (revision && version)
		return cli_usage_error(cmd, "Only one of --revision or --version can be specified");
	if (version) {
		char *end;
		long n = strtol(version, &end, 10);
		if (!*version || *end || n < 0)
			return cli_usage_error(cmd, "--version wants a major version N, not '%s'", version);
		snprintf(major, sizeof(major), "v%ld", n); /* 0.17 shows the branch's name */
		revision = major;
	}
	if ((rc = kernels_info_get(&info, kernel, revision, &ctx->opts)))
		return cli_fail(ctx, rc, kernel);
	if (ctx->json)
		rc = cli_json_print(info_json(info));
	else
		print_human(info);
	kernels_info_free(info);
	return ctx->json ? rc : CLI_OK;
}
