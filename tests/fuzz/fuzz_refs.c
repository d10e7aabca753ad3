/*
 * libFuzzer target over the cache's refs/ files (lib/refs.c): the name
 * check, kernels__refs_read, kernels__refs_list and kernels__refs_write,
 * on a refs/ folder the input lays out in a scratch folder of this process.
 *
 * Input: records separated by the byte 0x01; a record is a name, a
 * newline, then the file's content. A name starting with '!' plants a
 * symbolic link there instead (to a folder outside refs/ when the content
 * is "d", else to a file there). Names that could leave the scratch folder
 * (absolute, "..", empty parts) are not laid out, only checked.
 *
 * Invariants besides memory errors, leaks and undefined behaviour:
 *  - a name that passes the check cannot leave refs/: relative, no "." or
 *    ".." part, no empty part, 1..255 bytes of printable ASCII;
 *  - kernels__refs_read finds a commit exactly for a regular file whose
 *    content (blanks around it aside) is 40 hex digits, reached without a
 *    link; a link is EUNSAFE, a missing file ENOTFOUND, other content
 *    EPARSE; the commit comes back lower-case;
 *  - kernels__refs_list gives valid names sorted, each one read back to the
 *    same commit, and every file that reads is listed;
 *  - kernels__refs_write records what kernels__refs_read then gives, and
 *    never writes through a link: the folder outside refs/ stays as it was.
 */
#include <ctype.h>
#include <dirent.h>

#include "fuzz_common.h"
#include "refs.h"

#define MAX_RECORDS 12

typedef struct {
	char name[512];
	const uint8_t *content;
	size_t content_len;
	int link, laid;   /* planted as a link / written to disk */
} record;

static char repo_dir[4200], refs_dir[4300], outside[4300];

/* The content as huggingface_hub writes it: a 40-hex id, maybe with
 * blanks around (a hand-edited file). */
static int holds_commit(const uint8_t *s, size_t n, char commit[41])
{
	size_t i = 0, k;

	while (i < n && isspace(s[i]))
		i++;
	while (n > i && isspace(s[n - 1]))
		n--;
	if (n - i != 40)
		return 0;
	for (k = 0; k < 40; k++) {
		if (!isxdigit(s[i + k]))
			return 0;
		commit[k] = (char)tolower(s[i + k]);
	}
	commit[40] = '\0';
	return 1;
}

/* What kernels__refs_read judges of a file: the whole of it (a file
 * longer than a commit line or holding a NUL holds no commit). 0 models
 * an older lib/refs.c that judged its first 127 bytes up to a NUL. */
#ifndef REFS_WHOLE_FILE
#define REFS_WHOLE_FILE 1
#endif
static size_t reader_view(const uint8_t *buf, size_t len)
{
	const uint8_t *nul;

	if (REFS_WHOLE_FILE)
		return len;
	if (len > 127)
		len = 127;
	nul = memchr(buf, 0, len);
	return nul ? (size_t)(nul - buf) : len;
}

/* Whether `name` stays inside refs/ as a path: relative, without empty,
 * "." or ".." parts. With `small`, also short and shallow enough to lay
 * out. */
static int path_safe(const char *name, int small)
{
	const char *p = name, *slash;
	size_t depth = 0;

	if (!*name || *name == '/' || (small && strlen(name) > 400))
		return 0;
	for (;; p = slash + 1) {
		size_t n;
		slash = strchr(p, '/');
		n = slash ? (size_t)(slash - p) : strlen(p);
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return 0;
		if (small && (n > 200 || ++depth > 6))
			return 0;
		if (!slash)
			return 1;
	}
}

/* mkdir -p of the folders of `rel` under refs/; 0 when all are real folders. */
static int make_parents(const char *rel)
{
	char path[8192];
	const char *p = rel, *slash;
	struct stat st;

	while ((slash = strchr(p, '/'))) {
		snprintf(path, sizeof(path), "%s/%.*s", refs_dir, (int)(slash - rel), rel);
		if (mkdir(path, 0755) < 0 && (errno != EEXIST || lstat(path, &st) < 0 || !S_ISDIR(st.st_mode)))
			return -1;
		p = slash + 1;
	}
	return 0;
}

static void lay_out(record *r)
{
	char path[8192], target[8192];

	if (!path_safe(r->name, 1) || make_parents(r->name) < 0)
		return;
	snprintf(path, sizeof(path), "%s/%s", refs_dir, r->name);
	if (r->link) {
		snprintf(target, sizeof(target), "%s%s", outside,
			 r->content_len == 1 && r->content[0] == 'd' ? "" : "/file");
		r->laid = symlink(target, path) == 0;
	} else {
		r->laid = fuzz_write_file(path, r->content, r->content_len) == 0;
	}
}

/* The file behind `name`, reached without links: 1 and its bytes, or 0. */
static int plain_file(const char *name, uint8_t *buf, size_t cap, size_t *len)
{
	char path[8192];
	const char *p = name;
	struct stat st;
	ssize_t n;
	int fd;

	for (;;) {
		const char *slash = strchr(p, '/');
		snprintf(path, sizeof(path), "%s/%.*s", refs_dir, (int)(slash ? (size_t)(slash - name) : strlen(name)),
			 name);
		if (lstat(path, &st) < 0 || S_ISLNK(st.st_mode))
			return 0;
		if (!slash)
			break;
		if (!S_ISDIR(st.st_mode))
			return 0;
		p = slash + 1;
	}
	if (!S_ISREG(st.st_mode) || (fd = open(path, O_RDONLY | O_NOFOLLOW)) < 0)
		return 0;
	n = read(fd, buf, cap);
	close(fd);
	if (n < 0)
		return 0;
	*len = (size_t)n;
	return 1;
}

static void check_name(const char *name)
{
	const char *p;

	if (kernels__ref_name_check(name) < 0) {
		fuzz_check_failure(KERNELS_EINVAL);
		kernels_error_clear();
		return;
	}
	CHECK(strlen(name) >= 1 && strlen(name) <= KERNELS__REF_NAME_MAX);
	CHECK(path_safe(name, 0));
	for (p = name; *p; p++)
		CHECK(*p > 0x20 && *p < 0x7f);
	CHECK(strstr(name, "/.") == NULL && name[0] != '.');
}

static void check_read(const record *r, const kernels__ref *list, size_t count)
{
	char commit[41], want[41];
	uint8_t buf[4096];
	size_t len = 0, i;
	int rc, plain;

	if (kernels__ref_name_check(r->name) < 0) {
		kernels_error_clear();
		CHECK(kernels__refs_read(repo_dir, r->name, commit) == KERNELS_EINVAL);
		return;
	}
	rc = kernels__refs_read(repo_dir, r->name, commit);
	plain = plain_file(r->name, buf, sizeof(buf), &len);
	len = reader_view(buf, len);
	if (rc == 0) {
		CHECK(plain);
		CHECK(fuzz_is_lower_hex(commit, 40));
		CHECK(holds_commit(buf, len, want) && !strcmp(commit, want));
		for (i = 0; i < count && strcmp(list[i].name, r->name); i++)
			;
		CHECK(i < count && !strcmp(list[i].commit, commit));
		return;
	}
	fuzz_check_failure(rc);
	CHECK(rc == KERNELS_ENOTFOUND || rc == KERNELS_EPARSE || rc == KERNELS_EUNSAFE || rc == KERNELS_EIO);
	if (plain)
		CHECK(rc == KERNELS_EPARSE && !holds_commit(buf, len, want));
	if (rc == KERNELS_EPARSE)
		CHECK(plain);
	kernels_error_clear();
}

static void check_list(const kernels__ref *list, size_t count)
{
	char commit[41];
	size_t i;

	for (i = 0; i < count; i++) {
		CHECK(list[i].name && kernels__ref_name_check(list[i].name) == 0);
		CHECK(fuzz_is_lower_hex(list[i].commit, 40));
		CHECK(i == 0 || strcmp(list[i - 1].name, list[i].name) < 0);
		CHECK(kernels__refs_read(repo_dir, list[i].name, commit) == 0 && !strcmp(commit, list[i].commit));
	}
}

/* The folder outside refs/ the links point at: still one file, unchanged. */
static void check_outside(void)
{
	char path[8192];
	uint8_t buf[64];
	struct dirent *e;
	size_t entries = 0;
	ssize_t n;
	DIR *d;
	int fd;

	snprintf(path, sizeof(path), "%s/file", outside);
	CHECK((fd = open(path, O_RDONLY)) >= 0);
	n = read(fd, buf, sizeof(buf));
	close(fd);
	CHECK(n == 4 && !memcmp(buf, "keep", 4));
	CHECK((d = opendir(outside)) != NULL);
	while ((e = readdir(d)))
		entries += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	CHECK(entries == 1);
}

static void write_and_read(const record *r, const char *commit_text)
{
	char commit[41], want[41];
	int rc = kernels__refs_write(repo_dir, r->name, commit_text);

	if (rc < 0) {
		fuzz_check_failure(rc);
		CHECK(rc == KERNELS_EINVAL || rc == KERNELS_EUNSAFE || rc == KERNELS_EIO);
		kernels_error_clear();
		return;
	}
	CHECK(kernels__ref_name_check(r->name) == 0);
	CHECK(holds_commit((const uint8_t *)commit_text, strlen(commit_text), want));
	CHECK(kernels__refs_read(repo_dir, r->name, commit) == 0 && !strcmp(commit, want));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	record rec[MAX_RECORDS];
	kernels__ref *list = NULL;
	size_t n = 0, count = 0, i, pos = 0;
	char path[8192];
	int rc;

	if (size > 8192)
		return 0;
	/* a fresh repo folder and the outside folder the links aim at */
	fuzz_scratch_clear();
	snprintf(repo_dir, sizeof(repo_dir), "%s/kernels--org--name", fuzz_scratch());
	snprintf(refs_dir, sizeof(refs_dir), "%s/refs", repo_dir);
	snprintf(outside, sizeof(outside), "%s/outside", fuzz_scratch());
	CHECK(mkdir(repo_dir, 0755) == 0 && mkdir(refs_dir, 0755) == 0 && mkdir(outside, 0755) == 0);
	snprintf(path, sizeof(path), "%s/file", outside);
	CHECK(fuzz_write_file(path, "keep", 4) == 0);

	while (pos < size && n < MAX_RECORDS) {
		const uint8_t *end = memchr(data + pos, 0x01, size - pos), *nl;
		size_t rlen = end ? (size_t)(end - (data + pos)) : size - pos, nlen;
		record *r = &rec[n++];
		memset(r, 0, sizeof(*r));
		nl = memchr(data + pos, '\n', rlen);
		nlen = nl ? (size_t)(nl - (data + pos)) : rlen;
		r->link = nlen > 0 && data[pos] == '!';
		if (r->link) {
			pos++;
			nlen--;
			rlen--;
		}
		if (nlen >= sizeof(r->name))
			nlen = sizeof(r->name) - 1;
		memcpy(r->name, data + pos, nlen);
		r->name[nlen] = '\0'; /* stops at a NUL of its own too */
		r->content = nl ? nl + 1 : data + pos + rlen;
		r->content_len = nl ? rlen - (size_t)(nl + 1 - (data + pos)) : 0;
		pos += rlen + 1;
		check_name(r->name);
		lay_out(r);
	}

	rc = kernels__refs_list(repo_dir, &list, &count);
	if (rc < 0) {
		fuzz_check_failure(rc);
		CHECK(rc == KERNELS_EIO || rc == KERNELS_ENOMEM);
	} else {
		check_list(list, count);
	}
	for (i = 0; i < n; i++)
		check_read(&rec[i], list, count);
	kernels__refs_free(list, count);

	/* writes: the record's own content as the commit (upper-case hex
	 * passes, stored lower-case), then a fixed id over whatever is there */
	for (i = 0; i < n && i < 4; i++) {
		char text[128];
		size_t k = rec[i].content_len < sizeof(text) - 1 ? rec[i].content_len : sizeof(text) - 1;
		memcpy(text, rec[i].content, k);
		text[k] = '\0';
		write_and_read(&rec[i], text);
		write_and_read(&rec[i], "0123456789ABCDEFabcdef0123456789abcdef01");
	}
	check_outside();
	rc = kernels__refs_list(repo_dir, &list, &count);
	CHECK(rc == 0 || rc == KERNELS_EIO);
	if (rc == 0)
		check_list(list, count);
	kernels__refs_free(list, count);
	kernels_error_clear();
	return 0;
}
