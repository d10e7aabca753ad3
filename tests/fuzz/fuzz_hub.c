/*
 * libFuzzer target over what the Hub client reads from the Hub that is
 * reachable without a request (lib/hub.c, lib/lock.c):
 *  - the response headers (kernels__hub_header_cb: ETag, X-Repo-Commit,
 *    Link rel="next", Retry-After, sizes, error code), fed line by line
 *    as libcurl feeds them;
 *  - the path check every tree-listing entry passes
 *    (kernels__repo_path_check) and the URL escaping of paths;
 *  - a tree listing turned into a seed-era lock entry
 *    (kernels__lock_add_tree_variants), as `kernels lock` does.
 * The tree-listing and refs JSON parsers themselves sit behind a request
 * (static in lib/hub.c and lib/revision.c).
 *
 * Input: header lines up to a line "--", then tree entries, one a line:
 * "PATH OID [LFS-SHA256]" (the line as the path when it has no blank).
 *
 * Invariants besides memory errors, leaks and undefined behaviour:
 *  - header fields hold what the last header of their name said: ETags
 *    without W/ and one pair of quotes, the rel="next" URL from between
 *    '<' and '>', Retry-After >= -1; a status line starts over;
 *  - an accepted path is relative, within the length limits, with no
 *    empty, "." or ".." part, no backslash or control character, and valid
 *    UTF-8; escaping it keeps only unreserved bytes and '%XX', and
 *    unescapes to the path;
 *  - the lock entry has one variant per build/torch* folder of the listing,
 *    each hashed (kernels_lock_variant_hash) over exactly that folder's
 *    files, and the lock writes and reads back.
 */
#include <ctype.h>

#include "fuzz_common.h"
#include "hub.h"
#include "lock.h"
#include "repo.h"

#define MAX_ENTRIES 24
#define COMMIT "0123456789abcdef0123456789abcdef01234567"

/* What libcurl hands the callback: a header line that is not
 * NUL-terminated, exactly `size` bytes (0 feeds a NUL after it, as an
 * older lib/hub.c needed). */
#ifndef HEADERS_UNTERMINATED
#define HEADERS_UNTERMINATED 1
#endif

/* lib/hub.h promises that accepted paths are valid UTF-8. */
#ifndef PATH_UTF8
#define PATH_UTF8 1
#endif

static int utf8_ok(const unsigned char *s)
{
	while (*s) {
		unsigned c = *s, need, cp, k;
		if (c < 0x80) {
			s++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			need = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			need = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			need = 3, cp = c & 0x07;
		else
			return 0;
		for (k = 1; k <= need; k++) {
			if ((s[k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[k] & 0x3f);
		}
		if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		s += need + 1;
	}
	return 1;
}

/* ---- headers ---- */

typedef struct {
	char name[64];
	char value[8192];
	int set;
} last_header;

static char *expect_etag(const char *v)
{
	size_t n;
	char *s;

	if (!strncmp(v, "W/", 2))
		v += 2;
	n = strlen(v);
	s = strdup(v);
	if (s && n >= 2 && v[0] == '"' && v[n - 1] == '"') {
		memmove(s, s + 1, n - 2);
		s[n - 2] = '\0';
	}
	return s;
}

static void feed_header(kernels__hub_headers *h, const char *line, size_t n)
{
	char *copy = malloc(n + !HEADERS_UNTERMINATED + (n == 0));
	size_t took;

	CHECK(copy != NULL);
	memcpy(copy, line, n);
	if (!HEADERS_UNTERMINATED || n == 0)
		copy[n] = '\0';
	took = kernels__hub_header_cb(copy, 1, n, h);
	CHECK(took == n);
	free(copy);
}

/* The header's value as the callback trims it (NULs end it). */
static int header_value(const char *line, size_t n, const char *name, char *out, size_t cap)
{
	size_t k = n < 8191 ? n : 8191, nl = strlen(name), i;
	char buf[8192], *v, *e;

	memcpy(buf, line, k);
	buf[k] = '\0';
	if (strlen(buf) <= nl || strncasecmp(buf, name, nl) || buf[nl] != ':')
		return 0;
	for (v = buf + nl + 1; *v == ' ' || *v == '\t'; v++)
		;
	for (e = v + strlen(v); e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t');)
		*--e = '\0';
	for (i = 0; v[i] && i + 1 < cap; i++)
		out[i] = v[i];
	out[i] = '\0';
	return 1;
}

static void check_headers(const char *text, size_t len)
{
	kernels__hub_headers h;
	char etag[8192], commit[8192], link[8192];
	int have_etag = 0, have_commit = 0, have_link = 0;
	size_t pos = 0;

	memset(&h, 0, sizeof(h));
	kernels__hub_headers_clear(&h);
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) + 1 : len - pos;
		const char *line = text + pos;
		pos += n;
		feed_header(&h, line, n);
		if (n >= 5 && !strncmp(line, "HTTP/", 5)) {
			have_etag = have_commit = have_link = 0;
			CHECK(h.etag == NULL && h.repo_commit == NULL && h.link_next == NULL);
			continue;
		}
		if (n <= 2 && (line[0] == '\r' || line[0] == '\n')) {
			CHECK(h.complete == 1);
			continue;
		}
		if (header_value(line, n, "etag", etag, sizeof(etag)))
			have_etag = 1;
		if (header_value(line, n, "x-repo-commit", commit, sizeof(commit)))
			have_commit = 1;
		if (header_value(line, n, "link", link, sizeof(link)))
			have_link = 1;
	}
	if (have_etag) {
		char *want = expect_etag(etag);
		CHECK(h.etag && want && !strcmp(h.etag, want));
		free(want);
	} else {
		CHECK(h.etag == NULL);
	}
	CHECK(have_commit ? h.repo_commit && !strcmp(h.repo_commit, commit) : h.repo_commit == NULL);
	if (h.link_next) {
		CHECK(have_link);
		CHECK(strstr(link, h.link_next) != NULL && !strchr(h.link_next, '>'));
	}
	CHECK(h.retry_after >= -1);
	CHECK(h.complete == 0 || h.complete == 1);
	kernels__hub_headers_clear(&h);
}

/* ---- paths ---- */

static int unhex(int c)
{
	return isdigit(c) ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static void check_escape(const char *s, int keep_slash)
{
	char *e = kernels__url_escape(s, keep_slash), *back, *p, *q;

	CHECK(e != NULL);
	CHECK((back = malloc(strlen(e) + 1)) != NULL);
	for (p = e, q = back; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '%') {
			CHECK(unhex(p[1]) >= 0 && unhex(p[2]) >= 0);
			*q++ = (char)(unhex(p[1]) * 16 + unhex(p[2]));
			p += 2;
			continue;
		}
		CHECK(isalnum(c) || strchr("-._~", c) || (keep_slash && c == '/'));
		*q++ = (char)c;
	}
	*q = '\0';
	CHECK(!strcmp(back, s));
	free(back);
	free(e);
}

static int check_path(const char *path)
{
	const char *p, *part;

	check_escape(path, 1);
	check_escape(path, 0);
	if (kernels__repo_path_check(path) < 0) {
		fuzz_check_failure(KERNELS_EUNSAFE);
		kernels_error_clear();
		return 0;
	}
	CHECK(path[0] && path[0] != '/' && strlen(path) <= 4096);
	for (p = path; *p; p++)
		CHECK((unsigned char)*p >= 0x20 && *p != 0x7f && *p != '\\');
	if (PATH_UTF8)
		CHECK(utf8_ok((const unsigned char *)path));
	for (part = path;; part = p + 1) {
		size_t n;
		p = strchr(part, '/');
		n = p ? (size_t)(p - part) : strlen(part);
		CHECK(n > 0 && n <= 255 && strncmp(part, ".", n) && strncmp(part, "..", n));
		if (!p)
			break;
	}
	return 1;
}

/* ---- a listing into a lock entry ---- */

static void check_tree(kernels__tree *t)
{
	kernels_lock *lock = NULL, *again = NULL;
	const kernels_lock_entry *e;
	char *text = NULL;
	size_t i, k;
	int rc;

	CHECK(kernels_lock_new(&lock, KERNELS_LOCK_FORMAT_VARIANTS) == 0);
	CHECK(kernels_lock_add_entry(lock, "org/name", COMMIT) == 0);
	rc = kernels__lock_add_tree_variants(lock, "org/name", t);
	if (rc < 0) {
		fuzz_check_failure(rc);
		CHECK(rc == KERNELS_EINVAL || rc == KERNELS_ENOMEM);
		goto out;
	}
	CHECK((e = kernels_lock_find(lock, "org/name")) != NULL);
	/* one variant per build/torch* folder holding a file, hashed over it */
	for (i = 0; i < t->n; i++) {
		const char *p = t->entries[i].path, *slash;
		char name[300];
		if (t->entries[i].is_dir || strncmp(p, "build/torch", 11) || !(slash = strchr(p + 6, '/')) ||
		    (size_t)(slash - (p + 6)) >= sizeof(name))
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(slash - (p + 6)), p + 6);
		CHECK(kernels_lock_entry_variant_hash(e, name) != NULL);
	}
	for (k = 0; k < e->variant_count; k++) {
		kernels_lock_file files[MAX_ENTRIES];
		char hash[KERNELS_LOCK_HASH_SIZE];
		const char *name = e->variants[k].name;
		size_t n = 0, vlen = strlen(name);
		CHECK(!strncmp(name, "torch", 5));
		for (i = 0; i < t->n; i++) {
			const kernels__tree_entry *te = &t->entries[i];
			if (te->is_dir || strncmp(te->path, "build/", 6) || strncmp(te->path + 6, name, vlen) ||
			    te->path[6 + vlen] != '/' || !te->path[7 + vlen])
				continue;
			files[n].path = te->path + 7 + vlen;
			files[n].is_lfs = te->lfs_sha256 != NULL;
			files[n].hash = te->lfs_sha256 ? te->lfs_sha256 : te->oid;
			n++;
		}
		CHECK(n > 0);
		CHECK(kernels_lock_variant_hash(hash, files, n) == 0);
		CHECK(!strcmp(hash, e->variants[k].hash));
	}
	CHECK(kernels_lock_to_string(&text, lock) == 0);
	CHECK(kernels_lock_load_string(&again, text, strlen(text), "tree.lock") == 0);
	CHECK(kernels_lock_entry_count(again) == 1 && kernels_lock_entry_at(again, 0)->variant_count == e->variant_count);
out:
	kernels_free(text);
	kernels_lock_free(lock);
	kernels_lock_free(again);
	kernels_error_clear();
}

/* "PATH OID [LFS]" into an entry (a folder when OID is "dir"). */
static int parse_entry(char *line, kernels__tree_entry *e)
{
	char *oid, *lfs = NULL;
	size_t i;

	memset(e, 0, sizeof(*e));
	if ((oid = strchr(line, ' '))) {
		*oid++ = '\0';
		if ((lfs = strchr(oid, ' ')))
			*lfs++ = '\0';
	}
	if (!check_path(line))
		return 0;
	if (oid && !strcmp(oid, "dir")) {
		e->is_dir = 1;
	} else {
		/* the real parser keeps only 40-hex oids and 64-hex LFS ids,
		 * lower-cased; anything else here is made so */
		for (i = 0; i < 40; i++)
			e->oid[i] = oid && i < strlen(oid) && isxdigit((unsigned char)oid[i])
					    ? (char)tolower((unsigned char)oid[i]) : "0123456789abcdef"[i % 16];
		e->oid[40] = '\0';
		if (lfs) {
			CHECK((e->lfs_sha256 = malloc(65)) != NULL);
			for (i = 0; i < 64; i++)
				e->lfs_sha256[i] = i < strlen(lfs) && isxdigit((unsigned char)lfs[i])
							   ? (char)tolower((unsigned char)lfs[i]) : "fedcba9876543210"[i % 16];
			e->lfs_sha256[64] = '\0';
		}
	}
	CHECK((e->path = strdup(line)) != NULL);
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	kernels__tree_entry entries[MAX_ENTRIES];
	kernels__tree t = { .entries = entries };
	char *buf, *sep, *line, *next;
	size_t head_len, i;

	if (size > 16384)
		return 0;
	buf = fuzz_strndup(data, size);
	sep = memmem(buf, size, "\n--\n", 4);
	head_len = sep ? (size_t)(sep - buf) + 1 : size;
	check_headers(buf, head_len);
	(void)kernels__hub_parse_retry_after(buf);

	for (line = sep ? sep + 4 : NULL; line && *line; line = next) {
		if ((next = strchr(line, '\n')))
			*next++ = '\0';
		if (t.n < MAX_ENTRIES && parse_entry(line, &entries[t.n]))
			t.n++;
	}
	/* duplicates: the real listing refuses them (check_consistent) */
	for (i = 1; i < t.n; i++) {
		size_t k;
		for (k = 0; k < i && strcmp(entries[k].path, entries[i].path); k++)
			;
		if (k < i) {
			free(entries[i].path);
			free(entries[i].lfs_sha256);
			entries[i--] = entries[--t.n];
		}
	}
	check_tree(&t);
	for (i = 0; i < t.n; i++) {
		free(entries[i].path);
		free(entries[i].lfs_sha256);
	}
	free(buf);
	return 0;
}
