/* The cache's refs/ files. Paths below refs/ are walked one component at a
 * time with openat(O_NOFOLLOW) so a planted symlink cannot redirect a read
 * or a write outside the folder. */
#include "refs.h"
#include "cache.h"
#include "error.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REFS_LIST_MAX 100000   /* refs kept from one folder: a sane cap */
#define REFS_DEPTH_MAX 32

static int part_bad(const char *p, size_t n)
{
	return n == 0 || p[0] == '.' || (n >= 5 && !memcmp(p + n - 5, ".lock", 5));
}

enum { NAME_OK, NAME_EMPTY, NAME_LONG, NAME_CHAR, NAME_SEQ, NAME_PART };

/* Classifies `name` without touching the error slot (listing a cache with
 * odd files must not leave a stale message); *bad is the offending offset. */
static int name_problem(const char *name, size_t *bad)
{
	const char *p, *part;

	if (!name || !*name)
		return NAME_EMPTY;
	if (strlen(name) > KERNELS__REF_NAME_MAX)
		return NAME_LONG;
	for (p = name; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c <= 0x20 || c >= 0x7f || strchr("\\~^:?*[", c)) {
			*bad = (size_t)(p - name);
			return NAME_CHAR;
		}
	}
	if (strstr(name, "..") || strstr(name, "@{"))
		return NAME_SEQ;
	for (part = name;; part = p + 1) {
		p = strchr(part, '/');
		if (part_bad(part, p ? (size_t)(p - part) : strlen(part)))
			return NAME_PART;
		if (!p)
			return NAME_OK;
	}
}

int kernels__ref_name_check(const char *name)
{
	size_t bad = 0;

	switch (name_problem(name, &bad)) {
	case NAME_OK:
		return 0;
	case NAME_EMPTY:
		return kernels__error(KERNELS_EINVAL, "ref name is empty; name a branch or tag such as \"main\"");
	case NAME_LONG:
		return kernels__error(KERNELS_EINVAL,
				      "ref name '%.60s...' is longer than %d bytes; use a shorter branch or tag", name,
				      KERNELS__REF_NAME_MAX);
	case NAME_CHAR:
		return kernels__error(KERNELS_EINVAL,
				      "ref name '%.*s' has a forbidden character at offset %zu (0x%02x); "
				      "branch and tag names are printable ASCII without space or \\~^:?*[",
				      200, name, bad, (unsigned char)name[bad]);
	case NAME_SEQ:
		return kernels__error(KERNELS_EINVAL, "ref name '%s' contains '..' or '@{', which git names never do",
				      name);
	default:
		return kernels__error(KERNELS_EINVAL,
				      "ref name '%s' has an empty part, a part starting with '.' or ending "
				      "with '.lock'; use the branch or tag name as git shows it", name);
	}
}

static int io_error(const char *what, const char *path, const char *name)
{
	int e = errno;

	/* EISDIR: a folder, or any other file that is no regular one (read_small) */
	if (e == ELOOP || e == ENOTDIR || e == EISDIR)
		return kernels__error(KERNELS_EUNSAFE,
				      "%s ref '%s' under '%s/refs': a symlink, folder or other file is in the way "
				      "(%s); remove it from the cache", what, name, path, strerror(e));
	return kernels__error(KERNELS_EIO, "%s ref '%s' under '%s/refs': %s; %s", what, name, path, strerror(e),
			      kernels__write_advice(e, 1, "check the cache folder's permissions"));
}

/* Opens the folder holding the last part of `name`, creating the folders
 * when `create`. Returns the fd (>= 0) and points *leaf at the last part,
 * or a negative KERNELS_E* code (ENOTFOUND when a folder is missing). */
static int open_parent(const char *repo_dir, const char *name, int create, const char **leaf)
{
	char *refs = kernels__sprintf("%s/refs", repo_dir), part[KERNELS__REF_NAME_MAX + 1];
	const char *p, *slash;
	int fd, next;

	if (!refs)
		return KERNELS_ENOMEM;
	/* Written: every folder from the cache root down walked without
	 * following links, so a planted repo folder or refs/ link is refused
	 * before anything is made through it. */
	if (create) {
		free(refs);
		if ((fd = kernels__cache_repo_dir_open(repo_dir, "refs", 1)) < 0)
			return fd;
	} else {
		fd = open(refs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		free(refs);
	}
	if (fd < 0)
		return errno == ENOENT ? kernels__error(KERNELS_ENOTFOUND, "no refs folder in '%s'", repo_dir)
				       : io_error(create ? "writing" : "reading", repo_dir, name);
	for (p = name; (slash = strchr(p, '/')); p = slash + 1) {
		memcpy(part, p, (size_t)(slash - p));
		part[slash - p] = '\0';
		if (create && mkdirat(fd, part, 0777) < 0 && errno != EEXIST) {
			close(fd);
			return io_error("writing", repo_dir, name);
		}
		next = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			int missing = errno == ENOENT;
			int rc = missing ? kernels__error(KERNELS_ENOTFOUND, "no ref '%s' in '%s/refs'", name, repo_dir)
					 : io_error(create ? "writing" : "reading", repo_dir, name);
			close(fd);
			return rc;
		}
		close(fd);
		fd = next;
	}
	*leaf = p;
	return fd;
}

/* Accepts a commit id with surrounding blanks (a hand-edited file) and
 * stores it lower-cased. */
static int parse_commit(const char *text, char commit[41])
{
	char tmp[41];
	size_t i = 0, n;

	while (isspace((unsigned char)text[i]))
		i++;
	n = strlen(text + i);
	while (n > 0 && isspace((unsigned char)text[i + n - 1]))
		n--;
	if (n != 40)
		return -1;
	memcpy(tmp, text + i, 40);
	tmp[40] = '\0';
	if (!kernels__is_commit(tmp, KERNELS__HEX_ANY_CASE))
		return -1;
	kernels__hex_lower(tmp, 40, commit);
	return 0;
}

/* Reads a regular file of at most cap - 1 bytes at dirfd/leaf (no
 * symlink); a longer one, or one with a NUL, reads as empty. *size (may
 * be NULL): the file's length, whatever was read. */
static int read_small(int dirfd, const char *leaf, char *buf, size_t cap, off_t *size)
{
	int fd = openat(dirfd, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	ssize_t n;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EISDIR;
		return -1;
	}
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -1;
	if (size)
		*size = st.st_size;
	buf[n] = '\0';
	/* A file longer than the buffer, or with a NUL inside, holds no
	 * commit id: leave nothing for the parser to judge by its prefix. */
	if (st.st_size >= (off_t)cap || strlen(buf) != (size_t)n)
		buf[0] = '\0';
	return 0;
}

/* A ref file that holds no commit id. refs/ files are written without a
 * flush, as huggingface_hub writes them, so a crash can leave one empty or
 * cut short: the message names the file, and an online resolve rewrites
 * it (revision.c's record). */
static int damaged(const char *repo_dir, const char *name, off_t size)
{
	char what[64];

	if (size == 0)
		snprintf(what, sizeof(what), "is empty");
	else
		snprintf(what, sizeof(what), "holds %lld bytes", (long long)size);
	return kernels__error(KERNELS_EPARSE,
			      "ref file '%s/refs/%s' %s, not the 40-hex commit id of '%s' (a crash while it was "
			      "written can leave it so); resolve '%s' online once to rewrite it, or delete the file",
			      repo_dir, name, what, name, name);
}

int kernels__refs_read(const char *repo_dir, const char *name, char commit[41])
{
	const char *leaf;
	char buf[128];
	off_t size = 0;
	int fd, rc;

	if ((rc = kernels__ref_name_check(name)) < 0)
		return rc;
	if ((fd = open_parent(repo_dir, name, 0, &leaf)) < 0)
		return fd;
	rc = read_small(fd, leaf, buf, sizeof(buf), &size);
	if (rc < 0)
		rc = errno == ENOENT ? kernels__error(KERNELS_ENOTFOUND, "no ref '%s' in '%s/refs'", name, repo_dir)
				     : io_error("reading", repo_dir, name);
	else if (parse_commit(buf, commit) < 0)
		rc = damaged(repo_dir, name, size);
	close(fd);
	return rc;
}

int kernels__refs_write(const char *repo_dir, const char *name, const char *commit)
{
	static atomic_uint counter; /* unique temp names only; nothing a call reads */
	char tmp[KERNELS__REF_NAME_MAX + 64], lower[41];
	const char *leaf = NULL; /* open_parent sets it; gcc cannot always see that */
	int fd, out, rc = 0;

	if ((rc = kernels__ref_name_check(name)) < 0)
		return rc;
	if (parse_commit(commit ? commit : "", lower) < 0)
		return kernels__error(KERNELS_EINVAL, "refusing to record ref '%s': '%.80s' is not a 40-hex commit id",
				      name, commit ? commit : "(null)");
	if ((fd = open_parent(repo_dir, name, 1, &leaf)) < 0)
		return fd;
	/* A leading dot keeps the temp file out of every valid ref name. */
	snprintf(tmp, sizeof(tmp), ".%s.%ld.%u.tmp", leaf, (long)getpid(), atomic_fetch_add(&counter, 1));
	out = openat(fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (out < 0) {
		rc = io_error("writing", repo_dir, name);
	} else {
		/* No newline: huggingface_hub writes the bare id. */
		int ok = write(out, lower, 40) == 40;
		ok = (close(out) == 0) && ok;
		if (!ok || renameat(fd, tmp, fd, leaf) < 0) {
			rc = io_error("writing", repo_dir, name);
			unlinkat(fd, tmp, 0);
		}
	}
	close(fd);
	return rc;
}

typedef struct {
	kernels__ref *items;
	size_t count, cap;
	int damaged; /* list the files of valid names that hold no commit id instead */
} ref_list;

static int list_add(ref_list *l, const char *name, const char *commit)
{
	if (KERNELS__ARRAY_GROW(l->items, l->cap, l->count) < 0)
		return KERNELS_ENOMEM;
	if (!(l->items[l->count].name = kernels__strdup(name)))
		return KERNELS_ENOMEM;
	snprintf(l->items[l->count].commit, sizeof(l->items[l->count].commit), "%s", commit); /* "" when damaged */
	l->count++;
	return 0;
}

/* Walks dirfd (owned: closed here) adding every ref below `prefix`. */
static int walk(int dirfd, kernels__buf *prefix, int depth, ref_list *l)
{
	DIR *d = fdopendir(dirfd);
	struct dirent *e;
	int rc = 0;

	if (!d) {
		close(dirfd);
		return 0;
	}
	while (rc == 0 && l->count < REFS_LIST_MAX && (e = readdir(d))) {
		size_t keep = prefix->len;
		char buf[128], commit[41];
		struct stat st;
		size_t bad;

		if (e->d_name[0] == '.' || fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if ((rc = kernels__buf_printf(prefix, "%s%s", keep ? "/" : "", e->d_name)) < 0)
			break;
		if (S_ISDIR(st.st_mode) && depth < REFS_DEPTH_MAX) {
			int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				rc = walk(sub, prefix, depth + 1, l);
		} else if (S_ISREG(st.st_mode) && name_problem(prefix->ptr, &bad) == NAME_OK &&
			   read_small(dirfd, e->d_name, buf, sizeof(buf), NULL) == 0) {
			int valid = parse_commit(buf, commit) == 0;
			if (valid != l->damaged)
				rc = list_add(l, prefix->ptr, valid ? commit : "");
		}
		prefix->len = keep;
		prefix->ptr[keep] = '\0';
	}
	closedir(d);
	return rc;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const kernels__ref *)a)->name, ((const kernels__ref *)b)->name);
}

static int list(const char *repo_dir, int damaged, kernels__ref **refs, size_t *count)
{
	char *path = kernels__sprintf("%s/refs", repo_dir);
	kernels__buf prefix = { 0 };
	ref_list l = { .damaged = damaged };
	int fd, rc;

	*refs = NULL;
	*count = 0;
	if (!path)
		return KERNELS_ENOMEM;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		rc = errno == ENOENT ? 0 : kernels__error(KERNELS_EIO, "cannot read '%s': %s; check the cache folder",
							  path, strerror(errno));
		free(path);
		return rc;
	}
	free(path);
	if ((rc = kernels__buf_puts(&prefix, "")) == 0)
		rc = walk(fd, &prefix, 0, &l);
	kernels__buf_free(&prefix);
	if (rc < 0) {
		kernels__refs_free(l.items, l.count);
		return rc;
	}
	if (l.count)
		qsort(l.items, l.count, sizeof(*l.items), by_name);
	*refs = l.items;
	*count = l.count;
	return 0;
}

int kernels__refs_list(const char *repo_dir, kernels__ref **refs, size_t *count)
{
	return list(repo_dir, 0, refs, count);
}

int kernels__refs_list_damaged(const char *repo_dir, kernels__ref **refs, size_t *count)
{
	return list(repo_dir, 1, refs, count);
}

void kernels__refs_free(kernels__ref *refs, size_t count)
{
	size_t i;

	for (i = 0; i < count && refs; i++)
		free(refs[i].name);
	free(refs);
}
