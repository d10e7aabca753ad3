/* A Hub tree listing as data: its entries, the chunks their strings live
 * in, and the checks every entry and every listing passes, whether it came
 * from the Hub's JSON (hub.c), from the cache's record of it (listing.c) or
 * was built by hand (bundles, lock hashes). Knows no HTTP: the Hub client
 * asks for the pages and hands each one here. */
#include "tree.h"
#include "error.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define PATH_MAX_BYTES 4096
#define FILE_SIZE_CAP (64LL << 30) /* no kernel file is anywhere near 64 GiB */
#define TREE_CHUNK (64u << 10)

#define BAD(...) (kernels__error(KERNELS_EPARSE, __VA_ARGS__), KERNELS_EPARSE)

int kernels__repo_path_check(const char *path)
{
	const char *p, *comp;
	size_t n;

	if (!path || !*path)
		return kernels__error(KERNELS_EUNSAFE, "the Hub listed an empty path; refusing the listing");
	n = strlen(path);
	if (n > PATH_MAX_BYTES)
		return kernels__error(KERNELS_EUNSAFE, "the Hub listed a path of %zu bytes (more than %d); refusing it",
				      n, PATH_MAX_BYTES);
	if (path[0] == '/')
		return kernels__error(KERNELS_EUNSAFE, "the Hub listed the absolute path '%.300s'; refusing it", path);
	if (kernels__utf8_valid_prefix(path, n) != n)
		return kernels__error(KERNELS_EUNSAFE, "the Hub listed a path that is not valid UTF-8 (byte %zu); "
				      "refusing it", kernels__utf8_valid_prefix(path, n));
	for (p = path; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '\\' || c < 0x20 || c == 0x7f)
			return kernels__error(KERNELS_EUNSAFE,
					      "the Hub listed the path '%.300s' with a backslash or control character; "
					      "refusing it", path);
	}
	for (comp = path;; comp = p + 1) {
		p = strchr(comp, '/');
		n = p ? (size_t)(p - comp) : strlen(comp);
		if (n == 0 || (n == 1 && comp[0] == '.') || (n == 2 && comp[0] == '.' && comp[1] == '.'))
			return kernels__error(KERNELS_EUNSAFE,
					      "the Hub listed the path '%.300s' with an empty, '.' or '..' component; "
					      "refusing it", path);
		if (n > 255)
			return kernels__error(KERNELS_EUNSAFE,
					      "the Hub listed the path '%.300s' with a name over 255 bytes; "
					      "refusing it", path);
		if (!p)
			break;
	}
	return 0;
}

/* A listing's strings (paths, LFS hashes) live in chunks the tree owns:
 * one allocation per 64 KiB rather than one per string, which matters
 * for the million entries a listing may have. */
struct kernels__tree_chunk {
	struct kernels__tree_chunk *next;
	size_t used, size;
	char data[];
};

void kernels__tree_free(kernels__tree *t)
{
	struct kernels__tree_chunk *c, *next;

	if (!t)
		return;
	for (c = t->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	free(t->entries);
	memset(t, 0, sizeof(*t));
}

char *kernels__tree_strdup(kernels__tree *t, const char *s, size_t n)
{
	struct kernels__tree_chunk *c = t->chunks;
	char *p;

	if (!c || c->size - c->used < n + 1) {
		size_t size = n + 1 > TREE_CHUNK ? n + 1 : TREE_CHUNK;
		if (!(c = malloc(sizeof(*c) + size))) {
			kernels__error_oom();
			return NULL;
		}
		c->next = t->chunks;
		c->used = 0;
		c->size = size;
		t->chunks = c;
	}
	p = c->data + c->used;
	memcpy(p, s, n);
	p[n] = '\0';
	c->used += n + 1;
	return p;
}

kernels__tree_entry *kernels__tree_push(kernels__tree *t)
{
	kernels__tree_entry *e;

	if (KERNELS__ARRAY_GROW(t->entries, t->cap, t->n) < 0)
		return NULL;
	e = &t->entries[t->n++];
	memset(e, 0, sizeof(*e));
	return e;
}

int kernels__tree_entry_check(const kernels__tree_entry *e, const char *prefix, const char *where)
{
	const char *p = e->path;
	size_t plen = strlen(prefix);

	if (!p)
		return BAD("%s: a tree entry has no path; refusing the listing", where);
	if (kernels__repo_path_check(p) < 0)
		return kernels__error_prefix("%s", where);
	if (plen && (strncmp(p, prefix, plen) || p[plen] != '/'))
		return kernels__error(KERNELS_EUNSAFE, "%s: entry '%.300s' lies outside the requested folder '%s'; "
				      "refusing the listing", where, p, prefix);
	if (!e->is_dir && !kernels__is_hex(e->oid, 40, KERNELS__HEX_LOWER))
		return BAD("%s: file '%.300s' has no 40-hex \"oid\"; refusing the listing", where, p);
	if (e->is_dir && e->oid[0] && !kernels__is_hex(e->oid, 40, KERNELS__HEX_LOWER))
		return BAD("%s: folder '%.300s' has a malformed \"oid\"; refusing the listing", where, p);
	if (e->size < 0)
		return BAD("%s: file '%.300s' has no non-negative integer \"size\"; refusing the listing", where, p);
	if (e->lfs_sha256 && (e->is_dir || !kernels__is_hex(e->lfs_sha256, 64, KERNELS__HEX_LOWER)))
		return BAD("%s: LFS file '%.300s' has no 64-hex \"lfs.oid\"; refusing the listing", where, p);
	if (e->size > FILE_SIZE_CAP)
		return kernels__error(KERNELS_EUNSAFE,
				      "%s: file '%.300s' declares %lld bytes, more than the %lld GiB a "
				      "kernel file may have; refusing the listing", where, p, e->size,
				      FILE_SIZE_CAP >> 30);
	return 0;
}

/* Converts one JSON item of a listing into a new entry of `t`, checking
 * every field. */
static int parse_entry(json_t *item, const char *prefix, const char *where, kernels__tree *t)
{
	json_t *type = json_object_get(item, "type"), *path = json_object_get(item, "path");
	json_t *oid = json_object_get(item, "oid"), *size = json_object_get(item, "size");
	json_t *lfs = json_object_get(item, "lfs");
	kernels__tree_entry *e;
	const char *p, *ty;

	if (!json_is_object(item))
		return BAD("%s: a tree entry is not a JSON object; refusing the listing", where);
	if (!json_is_string(path))
		return BAD("%s: a tree entry has no string \"path\"; refusing the listing", where);
	p = json_string_value(path);
	if (strlen(p) != json_string_length(path))
		return kernels__error(KERNELS_EUNSAFE,
				      "%s: a tree entry's path contains a NUL byte; refusing the listing", where);
	if (kernels__repo_path_check(p) < 0)
		return kernels__error_prefix("%s", where);
	if (!json_is_string(type))
		return BAD("%s: entry '%.300s' has no string \"type\"; refusing the listing", where, p);
	ty = json_string_value(type);
	if (strcmp(ty, "directory") && strcmp(ty, "file"))
		return kernels__error(KERNELS_EUNSAFE,
				      "%s: entry '%.300s' has type '%.40s' (only files and folders are "
				      "accepted); refusing the listing", where, p, ty);
	if (!(e = kernels__tree_push(t)))
		return KERNELS_ENOMEM;
	e->is_dir = !strcmp(ty, "directory");
	if (!e->is_dir) {
		if (!json_is_string(oid) || !kernels__is_hex(json_string_value(oid), 40, KERNELS__HEX_ANY_CASE))
			return BAD("%s: file '%.300s' has no 40-hex \"oid\"; refusing the listing", where, p);
		if (!json_is_integer(size) || json_integer_value(size) < 0)
			return BAD("%s: file '%.300s' has no non-negative integer \"size\"; refusing the listing",
				   where, p);
		e->size = json_integer_value(size);
	}
	if (json_is_string(oid) && kernels__is_hex(json_string_value(oid), 40, KERNELS__HEX_ANY_CASE)) {
		memcpy(e->oid, json_string_value(oid), 41);
		kernels__hex_lower(e->oid, 40, e->oid);
	}
	if (lfs && !json_is_null(lfs) && !e->is_dir) {
		json_t *lo = json_object_get(lfs, "oid"), *ls = json_object_get(lfs, "size");
		if (!json_is_object(lfs) || !json_is_string(lo) ||
		    !kernels__is_hex(json_string_value(lo), 64, KERNELS__HEX_ANY_CASE))
			return BAD("%s: LFS file '%.300s' has no 64-hex \"lfs.oid\"; refusing the listing", where, p);
		if (ls && (!json_is_integer(ls) || json_integer_value(ls) != e->size))
			return BAD("%s: LFS file '%.300s' declares two different sizes; refusing the listing", where,
				   p);
		if (!(e->lfs_sha256 = kernels__tree_strdup(t, json_string_value(lo), 64)))
			return KERNELS_ENOMEM;
		kernels__hex_lower(e->lfs_sha256, 64, e->lfs_sha256);
	}
	if (!(e->path = kernels__tree_strdup(t, p, strlen(p))))
		return KERNELS_ENOMEM;
	return kernels__tree_entry_check(e, prefix, where);
}

const char *kernels__tree_entry_blob(const kernels__tree_entry *e)
{
	return e->lfs_sha256 ? e->lfs_sha256 : e->oid;
}

static int blob_cmp(const void *a, const void *b)
{
	return strcmp(kernels__tree_entry_blob(*(const kernels__tree_entry *const *)a),
		      kernels__tree_entry_blob(*(const kernels__tree_entry *const *)b));
}

/* Files naming one blob are fetched once, as one: a listing giving them
 * different sizes lies about one of them. */
static int check_blob_sizes(const kernels__tree *t, const char *where)
{
	const kernels__tree_entry **by;
	size_t i, n = 0;
	int rc = 0;

	if (t->n < 2)
		return 0;
	if (!(by = malloc(t->n * sizeof(*by))))
		return kernels__error_oom();
	for (i = 0; i < t->n; i++)
		if (!t->entries[i].is_dir)
			by[n++] = &t->entries[i];
	qsort(by, n, sizeof(*by), blob_cmp);
	for (i = 0; i + 1 < n && !rc; i++)
		if (by[i]->size != by[i + 1]->size &&
		    !strcmp(kernels__tree_entry_blob(by[i]), kernels__tree_entry_blob(by[i + 1])))
			rc = BAD("%s: '%.300s' and '%.300s' have the same hash but different sizes; refusing the "
				 "listing", where, by[i]->path, by[i + 1]->path);
	free(by);
	return rc;
}

static int path_cmp(const void *a, const void *b)
{
	return strcmp((*(const kernels__tree_entry *const *)a)->path, (*(const kernels__tree_entry *const *)b)->path);
}

/* Sorts the entries by path: pointers are sorted (8 bytes each, not the
 * entries), then the entries are moved into that order in place. */
static int sort_entries(kernels__tree *t)
{
	const kernels__tree_entry **order;
	size_t i, j, k, *at;
	kernels__tree_entry tmp;

	for (i = 1; i < t->n && strcmp(t->entries[i - 1].path, t->entries[i].path) <= 0; i++)
		;
	if (i >= t->n)
		return 0; /* already in order, as most listings are */
	if (!(order = malloc(t->n * sizeof(*order))))
		return kernels__error_oom();
	for (i = 0; i < t->n; i++)
		order[i] = &t->entries[i];
	qsort(order, t->n, sizeof(*order), path_cmp);
	/* order[i] -> the index it came from, in the same memory. */
	at = (size_t *)order;
	for (i = 0; i < t->n; i++)
		at[i] = (size_t)(order[i] - t->entries);
	for (i = 0; i < t->n; i++) {
		if (at[i] == i)
			continue;
		tmp = t->entries[i];
		for (j = i; at[j] != i; j = k) {
			k = at[j];
			t->entries[j] = t->entries[k];
			at[j] = j;
		}
		t->entries[j] = tmp;
		at[j] = j;
	}
	free(order);
	return 0;
}

/* The entry with exactly this path, by binary search (t sorted). */
static const kernels__tree_entry *find_path(const kernels__tree *t, const char *path, size_t len)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *p = t->entries[mid].path;
		int c = strncmp(p, path, len);
		if (c == 0 && p[len])
			c = 1;
		if (c == 0)
			return &t->entries[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const kernels__tree_entry *kernels__tree_find(const kernels__tree *t, const char *path)
{
	return find_path(t, path, strlen(path));
}

int kernels__tree_check(kernels__tree *t, const char *where)
{
	const char *last = NULL;
	size_t i, last_len = 0;
	int rc;

	if ((rc = sort_entries(t)) < 0)
		return rc;
	for (i = 0; i + 1 < t->n; i++)
		if (!strcmp(t->entries[i].path, t->entries[i + 1].path))
			return BAD("%s: the path '%.300s' is listed twice; refusing the listing", where,
				   t->entries[i].path);
	/* No folder of any entry may be listed as a file. Entries of one folder
	 * sit together, so each folder is looked up once, not once per entry. */
	for (i = 0; i < t->n; i++) {
		const char *p = t->entries[i].path, *slash = strrchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : 0, n;
		const kernels__tree_entry *f;

		if (!len || (last && len == last_len && !memcmp(p, last, len)))
			continue;
		for (n = len;;) {
			if ((f = find_path(t, p, n)) && !f->is_dir)
				return kernels__error(KERNELS_EUNSAFE,
						      "%s: '%.300s' is listed as a file and as a folder; "
						      "refusing the listing", where, f->path);
			while (n > 0 && p[n - 1] != '/')
				n--;
			if (n-- <= 1)
				break;
		}
		last = p;
		last_len = len;
	}
	return check_blob_sizes(t, where);
}

void kernels__tree_range(const kernels__tree *t, const char *folder, size_t *first, size_t *count)
{
	size_t n = strlen(folder), lo = 0, hi = t->n, start;

	/* first entry >= "folder/" */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *p = t->entries[mid].path;
		int c = strncmp(p, folder, n);
		if (c < 0 || (c == 0 && (unsigned char)p[n] < '/'))
			lo = mid + 1;
		else
			hi = mid;
	}
	start = lo;
	for (hi = t->n; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;
		const char *p = t->entries[mid].path;
		if (!strncmp(p, folder, n) && p[n] == '/')
			lo = mid + 1;
		else
			hi = mid;
	}
	*first = start;
	*count = lo - start;
}

int kernels__tree_append_json(json_t *list, const char *prefix, const char *where, size_t max_entries, kernels__tree *t)
{
	size_t i, n;
	int rc;

	if (!json_is_array(list))
		return BAD("%s: the tree listing is not a JSON array; check HF_ENDPOINT", where);
	n = json_array_size(list);
	if (t->n + n > max_entries)
		return BAD("%s: the tree listing has more than %zu entries; refusing it", where, max_entries);
	for (i = 0; i < n; i++)
		if ((rc = parse_entry(json_array_get(list, i), prefix, where, t)) < 0)
			return rc;
	return 0;
}
