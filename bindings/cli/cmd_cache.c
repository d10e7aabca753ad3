/* libkernels CLI: looking into and cleaning the cache (cache ls, cache rm).
 *
 * Removal never leaves the cache root and never follows a link: folders are
 * opened with O_NOFOLLOW relative to their parent's descriptor and links
 * are unlinked as links. */

#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const prefixes[] = { "kernels--", "models--" };

/* "kernels--org--name" -> "org/name" (malloc'ed), NULL for other names. */
static char *repo_from_folder(const char *folder, int *is_model)
{
	size_t i;
	for (i = 0; i < 2; i++) {
		size_t n = strlen(prefixes[i]);
		const char *sep;
		if (strncmp(folder, prefixes[i], n))
			continue;
		if (!(sep = strstr(folder + n, "--")) || sep == folder + n || !sep[2])
			return NULL;
		*is_model = (int)i;
		return cli_sprintf("%.*s/%s", (int)(sep - folder - n), folder + n, sep + 2);
	}
	return NULL;
}

/* refs/ names (nested for names with '/') and the commit each holds. */
static void read_refs(const char *dir, const char *prefix, json_t *out, int depth)
{
	size_t n = 0, i;
	char **v = cli_list_dir(dir, 0, &n);

	for (i = 0; i < n && depth < 16; i++) {
		char *p = cli_sprintf("%s/%s", dir, v[i]);
		char *name = prefix ? cli_sprintf("%s/%s", prefix, v[i]) : cli_sprintf("%s", v[i]);
		struct stat st;
		if (!lstat(p, &st) && S_ISDIR(st.st_mode)) {
			read_refs(p, name, out, depth + 1);
		} else if (S_ISREG(st.st_mode) && st.st_size <= 128) {
			char buf[129] = { 0 };
			FILE *f = fopen(p, "r");
			if (f) {
				size_t got = fread(buf, 1, 128, f);
				fclose(f);
				buf[got] = '\0';
				buf[strcspn(buf, "\r\n")] = '\0';
				json_object_set_new(out, name, json_string(buf));
			}
		}
		free(p);
		free(name);
	}
	cli_strings_free(v, n);
}

static json_t *repo_json(const char *root, const char *folder, const char *repo_id, int is_model)
{
	char *path = cli_sprintf("%s/%s", root, folder), *sub;
	json_t *refs = json_object(), *snaps = json_array();
	size_t n = 0, i, j, blobs_files = 0;
	char **commits;
	unsigned long long blob_bytes;

	sub = cli_sprintf("%s/refs", path);
	read_refs(sub, NULL, refs, 0);
	free(sub);
	sub = cli_sprintf("%s/blobs", path);
	blob_bytes = cli_tree_size(sub, &blobs_files, 0);
	free(sub);
	sub = cli_sprintf("%s/snapshots", path);
	commits = cli_list_dir(sub, 1, &n);
	for (i = 0; i < n; i++) {
		char *build = cli_sprintf("%s/%s/build", sub, commits[i]);
		size_t nv = 0;
		char **vs = cli_list_dir(build, 1, &nv);
		json_t *variants = json_array(), *names = json_array();
		const char *key;
		json_t *val;

		for (j = 0; j < nv; j++) {
			char *vd = cli_sprintf("%s/%s", build, vs[j]);
			size_t files = 0;
			unsigned long long size = cli_tree_size(vd, &files, 1);
			json_array_append_new(variants, json_pack("{s:s,s:I,s:I}", "name", vs[j], "files", (json_int_t)files,
								  "size", (json_int_t)size));
			free(vd);
		}
		json_object_foreach(refs, key, val)
			if (!strcmp(json_string_value(val), commits[i]))
				json_array_append_new(names, json_string(key));
		json_array_append_new(snaps, json_pack("{s:s,s:o,s:o}", "commit", commits[i], "refs", names, "variants",
						       variants));
		cli_strings_free(vs, nv);
		free(build);
	}
	cli_strings_free(commits, n);
	free(sub);
	{
		json_t *r = json_pack("{s:s,s:s,s:s,s:I,s:I,s:o,s:o}", "repo_id", repo_id, "type",
				      is_model ? "model" : "kernel", "path", path, "size", (json_int_t)blob_bytes, "blobs",
				      (json_int_t)blobs_files, "refs", refs, "snapshots", snaps);
		free(path);
		return r;
	}
}

static int has_build(const json_t *repo)
{
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(repo, "snapshots"), i, s)
		if (json_array_size(json_object_get(s, "variants")))
			return 1;
	return 0;
}

int cmd_cache_ls(cli_ctx *ctx, const cli_command *cmd)
{
	char *root = cli_cache_root(ctx);
	const char *only = ctx->npos ? ctx->pos[0] : NULL;
	size_t n = 0, i, j;
	char **folders;
	json_t *repos;

	if (!root)
		return cli_fail(ctx, kernels_error_last_code(), "the cache");
	folders = cli_list_dir(root, 1, &n);
	repos = json_array();
	unsigned long long total = 0;

	(void)cmd;
	if (only && !strchr(only, '/')) {
		free(root);
		cli_strings_free(folders, n);
		json_decref(repos);
		return cli_usage_error(cmd, "REPO must be 'org/name', not '%s'", only);
	}
	for (i = 0; i < n; i++) {
		int is_model = 0;
		char *id = repo_from_folder(folders[i], &is_model);
		json_t *r;
		if (!id || (only && strcmp(only, id))) {
			free(id);
			continue;
		}
		r = repo_json(root, folders[i], id, is_model);
		if (is_model && !has_build(r))
			json_decref(r); /* an ordinary model, not a kernel */
		else
			json_array_append_new(repos, r);
		free(id);
	}
	cli_strings_free(folders, n);
	for (i = 0; i < json_array_size(repos); i++)
		total += (unsigned long long)json_integer_value(json_object_get(json_array_get(repos, i), "size"));
	if (ctx->json) {
		int rc = cli_json_print(json_pack("{s:s,s:I,s:o}", "cache_dir", root, "size", (json_int_t)total, "repos",
						  repos));
		free(root);
		return rc;
	}
	printf("cache: %s\n", root);
	for (i = 0; i < json_array_size(repos); i++) {
		json_t *r = json_array_get(repos, i), *s;
		long long blobs = json_integer_value(json_object_get(r, "blobs"));
		char size[32];
		size_t k;
		printf("\n%s (%s)  %s in %lld blob%s\n", json_string_value(json_object_get(r, "repo_id")),
		       json_string_value(json_object_get(r, "type")),
		       cli_size(ctx, (unsigned long long)json_integer_value(json_object_get(r, "size")), size, sizeof(size)),
		       blobs, blobs == 1 ? "" : "s");
		json_array_foreach(json_object_get(r, "snapshots"), k, s) {
			json_t *names = json_object_get(s, "refs"), *v;
			printf("  %s", json_string_value(json_object_get(s, "commit")));
			for (j = 0; j < json_array_size(names); j++)
				printf("%s%s", j ? ", " : "  [", json_string_value(json_array_get(names, j)));
			printf("%s\n", json_array_size(names) ? "]" : "");
			json_array_foreach(json_object_get(s, "variants"), j, v) {
				long long files = json_integer_value(json_object_get(v, "files"));
				printf("    %-44s %6lld file%s %14s\n", json_string_value(json_object_get(v, "name")), files,
				       files == 1 ? " " : "s",
				       cli_size(ctx, (unsigned long long)json_integer_value(json_object_get(v, "size")), size,
						sizeof(size)));
			}
		}
	}
	if (!json_array_size(repos))
		printf("(no kernels%s%s)\n", only ? " for " : "", only ? only : "");
	{
		char size[32];
		printf("\ntotal: %s\n", cli_size(ctx, total, size, sizeof(size)));
	}
	json_decref(repos);
	free(root);
	return CLI_OK;
}

/* ---- removal ------------------------------------------------------------------ */

typedef struct {
	int dry_run;
	json_t *removed;
	unsigned long long freed;
	int failed;
} rm_state;

/* Removes `name` inside the open folder `pfd` (path `shown` for messages),
 * a link or file as itself, a folder with everything under it. */
static void remove_at(rm_state *s, int pfd, const char *name, const char *shown, int depth)
{
	struct stat st;

	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
		if (errno != ENOENT)
			s->failed = 1;
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		DIR *d;
		struct dirent *de;
		if (fd < 0 || depth > 64 || !(d = fdopendir(fd))) {
			if (fd >= 0)
				close(fd);
			fprintf(stderr, CLI_NAME ": cannot open %s: %s\n", shown, strerror(errno));
			s->failed = 1;
			return;
		}
		while ((de = readdir(d))) {
			char *sub;
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			sub = cli_sprintf("%s/%s", shown, de->d_name);
			remove_at(s, dirfd(d), de->d_name, sub, depth + 1);
			free(sub);
		}
		closedir(d);
		if (!s->dry_run && unlinkat(pfd, name, AT_REMOVEDIR)) {
			fprintf(stderr, CLI_NAME ": cannot remove %s: %s\n", shown, strerror(errno));
			s->failed = 1;
		}
		return;
	}
	if (S_ISREG(st.st_mode))
		s->freed += (unsigned long long)st.st_size;
	if (!s->dry_run && unlinkat(pfd, name, 0)) {
		fprintf(stderr, CLI_NAME ": cannot remove %s: %s\n", shown, strerror(errno));
		s->failed = 1;
	}
}

/* Removes `name` in `pfd` and records `shown` as removed. */
static void remove_top(rm_state *s, int pfd, const char *name, const char *shown)
{
	struct stat st;
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return;
	remove_at(s, pfd, name, shown, 0);
	json_array_append_new(s->removed, json_string(shown));
}

static int is_hex(const char *s)
{
	return *s && strspn(s, "0123456789abcdef") == strlen(s);
}

/* A repo id as the Hub spells them: org/name, no "--", "..", or odd characters. */
static int valid_repo(const char *r)
{
	const char *slash = strchr(r, '/');
	return slash && slash != r && slash[1] && !strchr(slash + 1, '/') && !strstr(r, "--") && !strstr(r, "..") &&
	       strspn(r, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/") == strlen(r) &&
	       strlen(r) <= 96;
}

/* Reads the small file `name` in `pfd` (no links) into buf. */
static int read_small(int pfd, const char *name, char *buf, size_t size)
{
	int fd = openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n;
	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	return 0;
}

/* Blob names the links under `pfd` point at, appended to `set`. */
static void linked_blobs(int pfd, json_t *set, int depth)
{
	DIR *d;
	struct dirent *de;
	int fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || depth > 64 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t n = readlinkat(dirfd(d), de->d_name, target, sizeof(target) - 1);
			if (n > 0) {
				const char *base;
				target[n] = '\0';
				base = strrchr(target, '/');
				json_object_set_new(set, base ? base + 1 : target, json_true());
			}
		} else if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0) {
				linked_blobs(sub, set, depth + 1);
				close(sub);
			}
		}
	}
	closedir(d);
}

/* refs/ files (nested) whose commit is `commit`, removed. */
static void remove_refs(rm_state *s, int pfd, const char *shown, const char *commit, int depth)
{
	DIR *d;
	struct dirent *de;
	int fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || depth > 16 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;
		char buf[160], *sub;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		sub = cli_sprintf("%s/%s", shown, de->d_name);
		if (S_ISDIR(st.st_mode)) {
			int sfd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sfd >= 0) {
				remove_refs(s, sfd, sub, commit, depth + 1);
				close(sfd);
			}
		} else if (S_ISREG(st.st_mode) && !read_small(dirfd(d), de->d_name, buf, sizeof(buf)) &&
			   !strcmp(buf, commit)) {
			remove_top(s, dirfd(d), de->d_name, sub);
		}
		free(sub);
	}
	closedir(d);
}

/* The snapshot `rev` names: a commit (prefix of 4+ hex digits) or a refs/ name. */
static char *find_commit(int repofd, const char *rev, int *ambiguous)
{
	int snapfd = openat(repofd, "snapshots", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char *found = NULL, buf[160];
	struct stat st;
	DIR *d;
	struct dirent *de;

	*ambiguous = 0;
	if (snapfd < 0)
		return NULL;
	if (strlen(rev) >= 4 && is_hex(rev) && (d = fdopendir(snapfd))) {
		while ((de = readdir(d)))
			if (!strncmp(de->d_name, rev, strlen(rev)) && strlen(de->d_name) >= 40) {
				if (found) {
					*ambiguous = 1;
					free(found);
					closedir(d);
					return NULL;
				}
				found = cli_sprintf("%s", de->d_name);
			}
		snapfd = openat(repofd, "snapshots", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		closedir(d);
		if (found) {
			close(snapfd);
			return found;
		}
	}
	if (!strstr(rev, "..") && rev[0] != '/') {
		char *ref = cli_sprintf("refs/%s", rev);
		/* No link may appear on the way: every component is checked by O_NOFOLLOW opens. */
		int ok = !fstatat(repofd, ref, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode) &&
			 !read_small(repofd, ref, buf, sizeof(buf)) && is_hex(buf) &&
			 !fstatat(snapfd, buf, &st, AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode);
		free(ref);
		if (ok)
			found = cli_sprintf("%s", buf);
	}
	close(snapfd);
	return found;
}

static int gc_blobs(rm_state *s, int repofd, const char *repo_path, const char *gone)
{
	int snapfd = openat(repofd, "snapshots", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int blobfd = openat(repofd, "blobs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	json_t *used = json_object();
	int left = 0;
	DIR *d;
	struct dirent *de;

	if (snapfd >= 0 && (d = fdopendir(snapfd))) {
		while ((de = readdir(d))) {
			int fd;
			if (de->d_name[0] == '.' || !strcmp(de->d_name, gone))
				continue;
			left++;
			if ((fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
				linked_blobs(fd, used, 0);
				close(fd);
			}
		}
		closedir(d);
	} else if (snapfd >= 0) {
		close(snapfd);
	}
	if (blobfd >= 0 && (d = fdopendir(blobfd))) {
		while ((de = readdir(d))) {
			size_t n = strlen(de->d_name);
			char *shown;
			if (de->d_name[0] == '.' || json_object_get(used, de->d_name) ||
			    (n > 11 && !strcmp(de->d_name + n - 11, ".incomplete")))
				continue;
			shown = cli_sprintf("%s/blobs/%s", repo_path, de->d_name);
			remove_top(s, dirfd(d), de->d_name, shown);
			free(shown);
		}
		closedir(d);
	} else if (blobfd >= 0) {
		close(blobfd);
	}
	json_decref(used);
	return left;
}

int cmd_cache_rm(cli_ctx *ctx, const cli_command *cmd)
{
	const char *repo = ctx->pos[0], *rev = cli_value(ctx, cmd, "revision");
	rm_state s = { cli_value(ctx, cmd, "dry-run") != NULL, json_array(), 0, 0 };
	char *root = cli_cache_root(ctx), *commit = NULL;
	const char *slash = strchr(repo, '/');
	int rootfd, found = 0, rc = CLI_OK;
	size_t i;

	if (!valid_repo(repo)) {
		json_decref(s.removed);
		free(root);
		return cli_usage_error(cmd, "'%s' is not a repo id (org/name)", repo);
	}
	if (rev && !*rev) {
		json_decref(s.removed);
		free(root);
		return cli_usage_error(cmd, "--revision must not be empty");
	}
	if (!root) {
		json_decref(s.removed);
		return cli_fail(ctx, kernels_error_last_code(), "the cache");
	}
	if ((rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		cli_error(ctx, KERNELS_ENOTFOUND, "no cache at %s: %s", root, strerror(errno));
		json_decref(s.removed);
		free(root);
		return CLI_ERROR;
	}
	for (i = 0; i < 2 && rc == CLI_OK; i++) {
		char *folder = cli_sprintf("%s%.*s--%s", prefixes[i], (int)(slash - repo), repo, slash + 1);
		char *shown = cli_sprintf("%s/%s", root, folder);
		struct stat st;
		int repofd = -1, ambiguous = 0;

		if (fstatat(rootfd, folder, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode))
			goto next;
		found = 1;
		if (rev) {
			if ((repofd = openat(rootfd, folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
				goto next;
			if (!(commit = find_commit(repofd, rev, &ambiguous))) {
				cli_error(ctx, ambiguous ? KERNELS_EAMBIGUOUS : KERNELS_ENOTFOUND,
					  "%s has no cached snapshot %s '%s'%s", repo,
					ambiguous ? "matching more than once:" : "for", rev,
					ambiguous ? "; give more digits" : "; see '" CLI_NAME " cache ls'");
				rc = CLI_ERROR;
				goto next;
			}
			{
				int snapfd = openat(repofd, "snapshots", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				int refsfd = openat(repofd, "refs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				char *p = cli_sprintf("%s/snapshots/%s", shown, commit), *r = cli_sprintf("%s/refs", shown);
				if (snapfd >= 0) {
					remove_top(&s, snapfd, commit, p);
					close(snapfd);
				}
				if (refsfd >= 0) {
					remove_refs(&s, refsfd, r, commit, 0);
					close(refsfd);
				}
				free(p);
				free(r);
			}
			if (gc_blobs(&s, repofd, shown, commit) > 0)
				goto next;
		}
		/* The whole repo (or its last snapshot): the folder and its locks. */
		remove_top(&s, rootfd, folder, shown);
		{
			int locks = openat(rootfd, ".locks", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (locks >= 0) {
				char *l = cli_sprintf("%s/.locks/%s", root, folder);
				remove_top(&s, locks, folder, l);
				free(l);
				close(locks);
			}
		}
next:
		if (repofd >= 0)
			close(repofd);
		free(folder);
		free(shown);
		if (rev && found)
			break;
	}
	close(rootfd);
	if (!found && rc == CLI_OK) {
		rc = cli_error(ctx, KERNELS_ENOTFOUND, "%s is not in the cache %s; see '" CLI_NAME " cache ls'", repo, root);
	}
	if (s.failed)
		rc = CLI_ERROR;
	if (rc == CLI_OK || json_array_size(s.removed)) {
		if (ctx->json) {
			cli_json_print(json_pack("{s:s,s:o,s:o,s:b,s:O,s:I}", "repo_id", repo, "revision", cli_jstr(rev),
						 "commit", cli_jstr(commit), "dry_run", s.dry_run, "removed", s.removed,
						 "freed_bytes", (json_int_t)s.freed));
		} else {
			for (i = 0; i < json_array_size(s.removed); i++)
				printf("%s %s\n", s.dry_run ? "would remove" : "removed",
				       json_string_value(json_array_get(s.removed, i)));
			char size[32];
			cli_note(ctx, "%s %s", s.dry_run ? "would free" : "freed", cli_size(ctx, s.freed, size, sizeof(size)));
		}
	}
	json_decref(s.removed);
	free(commit);
	free(root);
	return rc;
}
