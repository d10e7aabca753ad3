/* libkernels CLI: the locked project workflow: lock, download, verify. */

#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static json_t *entry_json(const kernels_lock_entry *e)
{
	json_t *o = json_pack("{s:s,s:s}", "repo_id", e->repo_id, "commit", e->commit);
	size_t i;

	if (e->request == KERNELS_LOCK_REQUEST_VERSION)
		json_object_set_new(o, "version", json_integer((json_int_t)e->version));
	else if (e->request == KERNELS_LOCK_REQUEST_REVISION)
		json_object_set_new(o, "revision", json_string(e->revision));
	if (e->variant_count) {
		json_t *v = json_object();
		for (i = 0; i < e->variant_count; i++)
			json_object_set_new(v, e->variants[i].name, json_string(e->variants[i].hash));
		json_object_set_new(o, "variants", v);
	}
	return o;
}

static const char *format_name(const kernels_lock *lock)
{
	return kernels_lock_format(lock) == KERNELS_LOCK_FORMAT_VARIANTS ? "variants" : "dependency";
}

int cmd_lock(cli_ctx *ctx, const cli_command *cmd)
{
	const char *dir = ctx->npos ? ctx->pos[0] : ".";
	char *path = cli_sprintf("%s/kernels.lock", dir);
	kernels_lock *lock = NULL;
	size_t i;
	int rc;

	(void)cmd;
	if ((rc = kernels_project_lock(dir, &ctx->opts)) || (rc = kernels_lock_load(&lock, path))) {
		free(path);
		return cli_fail(ctx, rc, dir);
	}
	if (ctx->json) {
		json_t *arr = json_array();
		for (i = 0; i < kernels_lock_entry_count(lock); i++)
			json_array_append_new(arr, entry_json(kernels_lock_entry_at(lock, i)));
		rc = cli_json_print(json_pack("{s:o,s:s,s:o}", "lock_file", cli_jstr(path), "format", format_name(lock),
					      "kernels", arr));
	} else {
		for (i = 0; i < kernels_lock_entry_count(lock); i++) {
			const kernels_lock_entry *e = kernels_lock_entry_at(lock, i);
			if (e->request == KERNELS_LOCK_REQUEST_VERSION)
				printf("%s %s (version %llu)\n", e->repo_id, e->commit, e->version);
			else if (e->request == KERNELS_LOCK_REQUEST_REVISION)
				printf("%s %s (revision %s)\n", e->repo_id, e->commit, e->revision);
			else
				printf("%s %s (%zu variants)\n", e->repo_id, e->commit, e->variant_count);
		}
		cli_note(ctx, "wrote %s", path);
		rc = CLI_OK;
	}
	kernels_lock_free(lock);
	free(path);
	return rc;
}

/* {cache}/{kernels|models}--org--name/snapshots/{commit}, or NULL when not cached. */
static char *snapshot_dir(const cli_ctx *ctx, const char *repo_id, const char *commit)
{
	char *repo = cli_repo_cache_dir(ctx, repo_id), *dir;
	struct stat st;

	if (!repo)
		return NULL;
	dir = cli_sprintf("%s/snapshots/%s", repo, commit);
	free(repo);
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		free(dir);
		return NULL;
	}
	return dir;
}

/* 1 when `dir` holds nothing but metadata.json: what a lock (reading every
 * variant's kernel-depends, as Python kernels does) or the arch check
 * leaves of a variant it did not download. */
static int metadata_only(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int others = 0;

	while (d && !others && (e = readdir(d)))
		others = strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "metadata.json");
	if (d)
		closedir(d);
	return !others;
}

/* The variant folders under {snapshot}/build/ that were downloaded. */
static char **cached_variants(const char *snap, size_t *n)
{
	char *build = cli_sprintf("%s/build", snap);
	char **v = cli_list_dir(build, 1, n);
	size_t i, kept = 0;

	for (i = 0; v && i < *n; i++) {
		char *vdir = cli_sprintf("%s/%s", build, v[i]);
		if (metadata_only(vdir))
			free(v[i]);
		else
			v[kept++] = v[i];
		free(vdir);
	}
	*n = kept;
	free(build);
	return v;
}

int cmd_download(cli_ctx *ctx, const cli_command *cmd)
{
	const char *dir = ctx->npos ? ctx->pos[0] : ".";
	int all = cli_value(ctx, cmd, "all-variants") != NULL;
	char *path = cli_sprintf("%s/kernels.lock", dir);
	kernels_lock *lock = NULL;
	json_t *arr;
	size_t i, j;
	int rc;

	cli_progress_begin(ctx, "downloading");
	rc = kernels_project_download(dir, all, &ctx->opts);
	cli_progress_end(ctx);
	if (rc || (rc = kernels_lock_load(&lock, path))) {
		free(path);
		return cli_fail(ctx, rc, dir);
	}
	arr = json_array();
	for (i = 0; i < kernels_lock_entry_count(lock); i++) {
		const kernels_lock_entry *e = kernels_lock_entry_at(lock, i);
		char *snap = snapshot_dir(ctx, e->repo_id, e->commit);
		size_t n = 0;
		char **v = snap ? cached_variants(snap, &n) : NULL;
		json_t *jv = json_array();

		if (cli_require_signed(ctx, snap, v, n) != CLI_OK) {
			rc = CLI_ERROR;
			cli_strings_free(v, n);
			free(snap);
			json_decref(jv);
			break;
		}
		for (j = 0; j < n; j++)
			json_array_append_new(jv, cli_jstr(v[j]));
		if (!ctx->json)
			for (j = 0; j < n; j++)
				printf("%s %s %s\n", e->repo_id, e->commit, v[j]);
		json_array_append_new(arr, json_pack("{s:s,s:s,s:o,s:o}", "repo_id", e->repo_id, "commit", e->commit,
						     "snapshot", cli_jstr(snap), "variants", jv));
		cli_strings_free(v, n);
		free(snap);
	}
	if (rc == CLI_ERROR) { /* --require-signature refused a variant */
		json_decref(arr);
		kernels_lock_free(lock);
		free(path);
		return rc;
	}
	if (ctx->json) {
		rc = cli_json_print(json_pack("{s:o,s:o,s:b,s:o}", "project", cli_jstr(dir), "lock_file",
					      cli_jstr(path), "all_variants", all, "kernels", arr));
	} else {
		json_decref(arr);
		cli_note(ctx, "downloaded %zu locked kernel%s of %s", kernels_lock_entry_count(lock),
			 kernels_lock_entry_count(lock) == 1 ? "" : "s", path);
		rc = CLI_OK;
	}
	kernels_lock_free(lock);
	free(path);
	return rc;
}

/* ---- verify ----------------------------------------------------------------- */

/* Verifies the cached variant `vdir` in place (the library follows its
 * links into the repo's blobs/); on failure `*msg` is the library's message. */
static int verify_cached(cli_ctx *ctx, const char *vdir, char **msg)
{
	int rc = kernels_verify_variant(NULL, vdir, &ctx->opts);

	*msg = rc ? cli_sprintf("%s", kernels_error_last()) : NULL;
	return rc;
}

/* Checks one cached variant folder; fills `o` and returns 1 when it passes. */
static int verify_variant(cli_ctx *ctx, const kernels_lock_entry *e, const char *snap, const char *name, json_t *o)
{
	char *vdir = cli_sprintf("%s/build/%s", snap, name);
	const char *want = kernels_lock_entry_variant_hash(e, name);
	char got[KERNELS_LOCK_HASH_SIZE];
	int rc, ok = 1;

	char *msg = NULL;

	rc = verify_cached(ctx, vdir, &msg);
	json_object_set_new(o, "name", cli_jstr(name));
	json_object_set_new(o, "path", cli_jstr(vdir));
	json_object_set_new(o, "digest_ok", json_boolean(rc == 0));
	json_object_set_new(o, "digest_error", rc ? cli_jstr(msg) : json_null());
	if (rc) {
		ok = 0;
		if (!ctx->json)
			printf("FAIL %s %s %s: digest: %s\n", e->repo_id, e->commit, name, msg);
	}
	free(msg);
	rc = kernels_lock_variant_hash_dir(got, vdir, NULL);
	json_object_set_new(o, "hash", rc ? json_null() : json_string(got));
	json_object_set_new(o, "lock_hash", cli_jstr(want));
	if (rc) {
		ok = 0;
		json_object_set_new(o, "hash_ok", json_false());
		json_object_set_new(o, "hash_error", cli_jstr(kernels_error_last()));
		if (!ctx->json)
			printf("FAIL %s %s %s: lock hash: %s\n", e->repo_id, e->commit, name, kernels_error_last());
	} else if (want) {
		json_object_set_new(o, "hash_ok", json_boolean(!strcmp(want, got)));
		if (strcmp(want, got)) {
			ok = 0;
			if (!ctx->json)
				printf("FAIL %s %s %s: lock hash %s, cached files hash to %s\n", e->repo_id, e->commit,
				       name, want, got);
		}
	} else {
		json_object_set_new(o, "hash_ok", e->variant_count ? json_false() : json_null());
		if (e->variant_count) {
			ok = 0;
			if (!ctx->json)
				printf("FAIL %s %s %s: not in the lock file (cached files hash to %s)\n", e->repo_id,
				       e->commit, name, got);
		}
	}
	json_object_set_new(o, "ok", json_boolean(ok));
	if (ok && !ctx->json)
		printf("ok   %s %s %s%s\n", e->repo_id, e->commit, name, want ? " (digest, lock hash)" : " (digest)");
	free(vdir);
	return ok;
}

int cmd_verify(cli_ctx *ctx, const cli_command *cmd)
{
	const char *dir = ctx->npos ? ctx->pos[0] : ".";
	char *path = cli_sprintf("%s/kernels.lock", dir), *root;
	kernels_lock *lock = NULL;
	json_t *arr;
	size_t i, j, checked = 0;
	int rc, all_ok = 1;

	(void)cmd;
	/* Options that name no cache are refused as such, not taken for a
	 * cache that lacks every kernel. */
	if (!(root = cli_cache_root(ctx)) || (rc = kernels_lock_load(&lock, path))) {
		rc = cli_fail(ctx, kernels_error_last_code(), dir);
		free(root);
		free(path);
		return rc;
	}
	free(root);
	arr = json_array();
	for (i = 0; i < kernels_lock_entry_count(lock); i++) {
		const kernels_lock_entry *e = kernels_lock_entry_at(lock, i);
		char *snap = snapshot_dir(ctx, e->repo_id, e->commit);
		size_t n = 0;
		char **v = snap ? cached_variants(snap, &n) : NULL;
		json_t *jv = json_array();

		for (j = 0; j < n; j++) {
			json_t *o = json_object();
			all_ok &= verify_variant(ctx, e, snap, v[j], o);
			json_array_append_new(jv, o);
			checked++;
		}
		if (!n) {
			all_ok = 0;
			if (!ctx->json)
				printf("FAIL %s %s: not in the cache; run '" CLI_NAME " download %s'\n", e->repo_id,
				       e->commit, dir);
		}
		json_array_append_new(arr, json_pack("{s:s,s:s,s:o,s:b,s:o}", "repo_id", e->repo_id, "commit",
						     e->commit, "snapshot", cli_jstr(snap), "cached", n > 0,
						     "variants", jv));
		cli_strings_free(v, n);
		free(snap);
	}
	if (ctx->json)
		cli_json_print(json_pack("{s:o,s:s,s:b,s:o}", "lock_file", cli_jstr(path), "format",
					 format_name(lock), "ok", all_ok, "kernels", arr));
	else
		json_decref(arr);
	if (!all_ok) /* an error: shown with -q too */
		fprintf(stderr, CLI_NAME ": error: verification of %s failed\n", path);
	else
		cli_note(ctx, "%zu cached variant%s of %zu locked kernel%s verified", checked, checked == 1 ? "" : "s",
			 kernels_lock_entry_count(lock), kernels_lock_entry_count(lock) == 1 ? "" : "s");
	kernels_lock_free(lock);
	free(path);
	return all_ok ? CLI_OK : CLI_ERROR;
}
