/* A commit's build/ listing, recorded in the cache: see listing.h.
 *
 * The record, {repo}/.libkernels/trees/{commit}/build.tsv:
 *
 *   libkernels-tree 1 build
 *   f <40-hex oid> <size> <64-hex LFS sha256 or -> <path>
 *   d <40-hex oid or -> 0 - <path>
 *   ...
 *   end <number of entries>
 *
 * Paths come last on their line: they may hold blanks, never a control
 * character (kernels__repo_path_check), so a line break ends them. */
#include "listing.h"
#include "cache.h"
#include "error.h"
#include "hub.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER "libkernels-tree 1 build\n"
#define RECORD_BYTES_MAX (64u << 20) /* KERNELS__LISTING_MAX entries of kernel repos stay far below */

static char *record_path(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			 const char *commit)
{
	char *dir = kernels__cache_repo_dir(cfg, type, repo_id), *path;

	if (!dir)
		return NULL;
	path = kernels__sprintf("%s/.libkernels/trees/%s/build.tsv", dir, commit);
	free(dir);
	return path;
}

/* One entry line (without its '\n') into a new entry of `t`. 0, or
 * KERNELS_EPARSE without a message (the caller says what is wrong). */
static int parse_line(char *line, kernels__tree *t)
{
	kernels__tree_entry *e;
	char *f[4], *p = line, *end;
	long long size;
	int i;

	for (i = 0; i < 4; i++) {
		f[i] = p;
		if (!(p = strchr(p, ' ')))
			return KERNELS_EPARSE;
		*p++ = '\0';
	}
	if (strcmp(f[0], "f") && strcmp(f[0], "d"))
		return KERNELS_EPARSE;
	errno = 0;
	size = strtoll(f[2], &end, 10);
	if (errno || *end || end == f[2])
		return KERNELS_EPARSE;
	if (!(e = kernels__tree_push(t)))
		return KERNELS_ENOMEM;
	e->is_dir = f[0][0] == 'd';
	e->size = size;
	if (strcmp(f[1], "-")) {
		if (strlen(f[1]) != 40)
			return KERNELS_EPARSE;
		memcpy(e->oid, f[1], 41);
	}
	if (strcmp(f[3], "-") && !(e->lfs_sha256 = kernels__tree_strdup(t, f[3], strlen(f[3]))))
		return KERNELS_ENOMEM;
	if (!(e->path = kernels__tree_strdup(t, p, strlen(p))))
		return KERNELS_ENOMEM;
	return 0;
}

static int parse_record(char *buf, size_t len, const char *where, kernels__tree *t)
{
	char *line = buf + strlen(HEADER), *nl, *end;
	unsigned long long count = 0;
	size_t i;
	int rc;

	if (len < strlen(HEADER) || strncmp(buf, HEADER, strlen(HEADER)) || buf[len - 1] != '\n' ||
	    memchr(buf, '\0', len))
		return KERNELS_EPARSE;
	for (;; line = nl + 1) {
		if (!(nl = strchr(line, '\n')))
			return KERNELS_EPARSE;
		*nl = '\0';
		if (!strncmp(line, "end ", 4)) {
			count = strtoull(line + 4, &end, 10);
			if (*end || nl + 1 != buf + len || count != t->n)
				return KERNELS_EPARSE;
			break;
		}
		if (t->n >= KERNELS__LISTING_MAX)
			return KERNELS_EPARSE;
		if ((rc = parse_line(line, t)) < 0)
			return rc;
	}
	for (i = 0; i < t->n; i++)
		if ((rc = kernels__tree_entry_check(&t->entries[i], "build", where)) < 0)
			return rc;
	return kernels__tree_check(t, where);
}

int kernels__listing_read(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			  const char *commit, kernels__tree *out)
{
	char *dir = kernels__cache_repo_dir(cfg, type, repo_id);
	int rc = dir ? kernels__listing_read_at(cfg, dir, commit, out) : KERNELS_ENOMEM;

	free(dir);
	return rc;
}

int kernels__listing_read_at(const kernels__config *cfg, const char *repo_dir, const char *commit,
			     kernels__tree *out)
{
	char *path = kernels__sprintf("%s/.libkernels/trees/%s/build.tsv", repo_dir, commit), *buf = NULL;
	size_t len = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!path)
		return KERNELS_ENOMEM;
	/* Absent, not a regular file, empty or too large: no record. */
	if (kernels__read_file(path, RECORD_BYTES_MAX, KERNELS__READ_NOFOLLOW, &buf, &len, NULL) < 0 || !len) {
		free(buf);
		free(path);
		return 0;
	}
	kernels_error_clear();
	rc = parse_record(buf, len, path, out);
	if (rc < 0) {
		kernels__tree_free(out);
		if (rc == KERNELS_ENOMEM) {
			free(buf);
			free(path);
			return rc;
		}
		/* Not sound (cut short, edited): the Hub is asked again. */
		kernels__log(cfg, KERNELS_LOG_DEBUG, "ignoring the listing record %s (%s)", path,
			     kernels_error_last_code() ? kernels_error_last() : "malformed");
		kernels_error_clear();
		rc = 0;
	} else {
		rc = 1;
	}
	free(buf);
	free(path);
	return rc;
}

/* Writes the record next to the snapshot: a temporary file renamed over
 * it, so a reader sees a whole record or none. A cache we cannot write
 * only costs the listing request next time. */
static void record(const kernels__config *cfg, kernels__repo_type type, const char *repo_id, const char *commit,
		   const kernels__tree *t)
{
	char *path = NULL, *dir = NULL;
	kernels__buf b = { 0 };
	size_t i;
	int ok = 0;

	if (t->n > KERNELS__LISTING_MAX || kernels__cache_guard(cfg, type, repo_id) < 0 ||
	    !(path = record_path(cfg, type, repo_id, commit)))
		goto out;
	kernels__buf_printf(&b, "%s", HEADER);
	for (i = 0; i < t->n; i++) {
		const kernels__tree_entry *e = &t->entries[i];
		kernels__buf_printf(&b, "%c %s %lld %s %s\n", e->is_dir ? 'd' : 'f', e->oid[0] ? e->oid : "-", e->size,
				    e->lfs_sha256 ? e->lfs_sha256 : "-", e->path);
	}
	if (kernels__buf_printf(&b, "end %zu\n", t->n) < 0 || b.len > RECORD_BYTES_MAX)
		goto out;
	ok = (dir = kernels__cache_repo_dir(cfg, type, repo_id)) && kernels__cache_write(dir, path, b.ptr, b.len, 0) == 0;
out:
	if (!ok)
		kernels__log(cfg, KERNELS_LOG_DEBUG, "the listing of %s at %.12s was not recorded in the cache%s%s",
			     repo_id, commit, kernels_error_last_code() ? ": " : "",
			     kernels_error_last_code() ? kernels_error_last() : "");
	kernels_error_clear();
	kernels__buf_free(&b);
	free(path);
	free(dir);
}

/* The absences under build/ a listing claimed (.no_exist/{commit}/build/,
 * written from a listing the Hub gave) go with it when it is dropped or
 * replaced: a file a wrong listing left out must not stay absent once the
 * Hub is asked again. Walked from the cache root without following links. */
static void forget_absences(const char *dir, const char *commit)
{
	char *sub = kernels__sprintf(".no_exist/%s", commit);
	int fd = sub ? kernels__cache_repo_dir_open(dir, sub, 0) : -1;

	if (fd >= 0) {
		kernels__remove_tree_at(fd, "build");
		close(fd);
	}
	free(sub);
}

void kernels__listing_forget(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			     const char *commit)
{
	char *dir = kernels__cache_repo_dir(cfg, type, repo_id), *sub = kernels__sprintf(".libkernels/trees/%s", commit);
	char saved[4096];
	int code = kernels_error_last_code(), fd;

	snprintf(saved, sizeof(saved), "%s", kernels_error_last());
	/* Walked from the cache root without following links, as it was written. */
	if (dir && sub && (fd = kernels__cache_repo_dir_open(dir, sub, 0)) >= 0) {
		if (unlinkat(fd, "build.tsv", 0) == 0)
			kernels__log(cfg, KERNELS_LOG_DEBUG, "forgot the listing record of %s at %.12s: the Hub's "
				     "answers for its files contradict it", repo_id, commit);
		close(fd);
	}
	if (dir)
		forget_absences(dir, commit);
	free(dir);
	free(sub);
	kernels__error(code, "%s", saved); /* the caller's error stands */
}

int kernels__listing_recorded(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			      const char *commit)
{
	char *path = record_path(cfg, type, repo_id, commit);
	int found = path && access(path, F_OK) == 0;

	free(path);
	kernels_error_clear();
	return found;
}

int kernels__listing_get(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			 const char *commit, int ask, kernels__tree *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (!ask && (rc = kernels__listing_read(cfg, type, repo_id, commit, out)) != 0)
		return rc;
	if (ask)
		kernels__listing_forget(cfg, type, repo_id, commit);
	if ((rc = kernels__hub_tree_list_max(cfg, type, repo_id, commit, "build", 1, KERNELS__LISTING_MAX, out)) < 0)
		return rc;
	record(cfg, type, repo_id, commit, out);
	return 0;
}

int kernels__listing_build(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			   const char *commit, kernels__tree *out)
{
	int rc = kernels__listing_get(cfg, type, repo_id, commit, 0, out);

	return rc < 0 ? rc : 0;
}
