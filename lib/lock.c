/* kernels.lock in both formats the Python package has written (see
 * kernels/lock.h): the lock object, and its text. The variant hashes it
 * records are lock_hash.c's.
 *
 * Byte-identity with Python: the DEPENDENCY format is what kernels 0.17's
 * Rust core writes with serde_json::to_string_pretty (two-space indent,
 * ": " after keys, control characters escaped as \u00xx, everything else
 * raw UTF-8, entries in the order of its sorted map); the VARIANTS format
 * is what kernels 0.9 writes with json.dump(indent=2) of its dataclasses
 * (field order, ensure_ascii escapes, \ud83d\ude00 surrogate pairs). Neither
 * ends with a newline. */
#include "lock.h"
#include "error.h"
#include "repo.h"
#include "util.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define HASH_TYPE "git_lfs_concat"
#define LOCK_FILE_MAX (64u << 20)

typedef struct {
	kernels_lock_entry pub;  /* first: kernels_lock_entry_at hands out &entry.pub */
	size_t variant_cap;
} entry;

struct kernels_lock {
	kernels_lock_format_t format;
	entry *entries;
	size_t count, cap;
};

/* ---- small checks ---- */

static char *lower_dup(const char *s)
{
	char *d = kernels__strdup(s), *p;

	for (p = d; p && *p; p++)
		if (*p >= 'A' && *p <= 'F')
			*p = (char)(*p - 'A' + 'a');
	return d;
}

/* Well-formed UTF-8 without control characters other than those JSON
 * escapes; revisions and variant names end up in files and messages. */
static int utf8_ok(const char *s)
{
	size_t n = strlen(s);
	return kernels__utf8_valid_prefix(s, n) == n;
}

/* Variant names are folder names under build/. */
static int variant_name_ok(const char *s)
{
	const unsigned char *p;

	if (!s || !*s || strcmp(s, ".") == 0 || strcmp(s, "..") == 0 || strlen(s) > 255 || !utf8_ok(s))
		return 0;
	for (p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f || *p == '/' || *p == '\\')
			return 0;
	return 1;
}

/* ---- the lock object ---- */

static void entry_clear(entry *e)
{
	size_t i;

	free((char *)e->pub.repo_id);
	free((char *)e->pub.commit);
	free((char *)e->pub.revision);
	for (i = 0; i < e->pub.variant_count; i++) {
		free((char *)e->pub.variants[i].name);
		free((char *)e->pub.variants[i].hash);
		free((char *)e->pub.variants[i].hash_type);
	}
	free((void *)e->pub.variants);
}

void kernels_lock_free(kernels_lock *lock)
{
	size_t i;

	if (!lock)
		return;
	for (i = 0; i < lock->count; i++)
		entry_clear(&lock->entries[i]);
	free(lock->entries);
	free(lock);
}

int kernels_lock_new(kernels_lock **out, kernels_lock_format_t format)
{
	if (!out)
		return kernels__error(KERNELS_EINVAL, "kernels_lock_new: `out` is NULL");
	*out = NULL;
	if (format != KERNELS_LOCK_FORMAT_DEPENDENCY && format != KERNELS_LOCK_FORMAT_VARIANTS)
		return kernels__error(KERNELS_EINVAL, "unknown lock format %d; use KERNELS_LOCK_FORMAT_DEPENDENCY or "
				      "KERNELS_LOCK_FORMAT_VARIANTS", (int)format);
	if (!(*out = calloc(1, sizeof(**out))))
		return kernels__error_oom();
	(*out)->format = format;
	return 0;
}

kernels_lock_format_t kernels_lock_format(const kernels_lock *lock)
{
	return lock ? lock->format : KERNELS_LOCK_FORMAT_DEPENDENCY;
}

size_t kernels_lock_entry_count(const kernels_lock *lock)
{
	return lock ? lock->count : 0;
}

const kernels_lock_entry *kernels_lock_entry_at(const kernels_lock *lock, size_t i)
{
	return lock && i < lock->count ? &lock->entries[i].pub : NULL;
}

const kernels_lock_entry *kernels_lock_find(const kernels_lock *lock, const char *repo_id)
{
	size_t i;

	if (!lock || !repo_id)
		return NULL;
	for (i = 0; i < lock->count; i++)
		if (strcmp(lock->entries[i].pub.repo_id, repo_id) == 0)
			return &lock->entries[i].pub;
	return NULL;
}

const char *kernels_lock_entry_variant_hash(const kernels_lock_entry *e, const char *variant)
{
	size_t i;

	if (!e || !variant)
		return NULL;
	for (i = 0; i < e->variant_count; i++)
		if (strcmp(e->variants[i].name, variant) == 0)
			return e->variants[i].hash;
	return NULL;
}

/* Order of kernels 0.17's map: repo id bytewise, then Version(n) before
 * Revision(s), versions numerically, revisions bytewise. */
static int dep_cmp(const kernels_lock_entry *a, const kernels_lock_entry *b)
{
	int c = strcmp(a->repo_id, b->repo_id);

	if (c)
		return c;
	if (a->request != b->request)
		return a->request == KERNELS_LOCK_REQUEST_VERSION ? -1 : 1;
	if (a->request == KERNELS_LOCK_REQUEST_VERSION)
		return a->version < b->version ? -1 : a->version > b->version;
	return strcmp(a->revision, b->revision);
}

/* Makes room for one entry at `at`, shifting the rest. */
static entry *insert_slot(kernels_lock *lock, size_t at)
{
	if (KERNELS__ARRAY_GROW(lock->entries, lock->cap, lock->count) < 0)
		return NULL;
	memmove(&lock->entries[at + 1], &lock->entries[at], (lock->count - at) * sizeof(entry));
	lock->count++;
	memset(&lock->entries[at], 0, sizeof(entry));
	return &lock->entries[at];
}

static int check_repo_commit(const char *repo_id, const char *commit, int allow64)
{
	if (kernels__repo_id_check(repo_id) < 0)
		return KERNELS_EINVAL;
	if (!kernels__is_hex(commit, 40, KERNELS__HEX_ANY_CASE) &&
	    !(allow64 && kernels__is_hex(commit, 64, KERNELS__HEX_ANY_CASE)))
		return kernels__error(KERNELS_EINVAL,
				      "commit '%s' of %s is not a full commit id; expected %s hex digits",
				      commit ? commit : "(null)", repo_id, allow64 ? "40 (or 64)" : "40");
	return 0;
}

static int add_dependency(kernels_lock *lock, const char *repo_id, kernels_lock_request req,
			  unsigned long long version, const char *revision, const char *commit)
{
	kernels_lock_entry key = { .repo_id = repo_id, .request = req, .version = version, .revision = revision };
	size_t lo = 0, hi;
	entry *e;
	int rc;

	if (!lock)
		return kernels__error(KERNELS_EINVAL, "no lock given");
	if (lock->format != KERNELS_LOCK_FORMAT_DEPENDENCY)
		return kernels__error(KERNELS_EINVAL, "this lock is in the seed-era (variants) format; use "
				      "kernels_lock_add_entry, or create a KERNELS_LOCK_FORMAT_DEPENDENCY lock");
	if ((rc = check_repo_commit(repo_id, commit, 1)) < 0)
		return rc;
	if (req == KERNELS_LOCK_REQUEST_REVISION && (!revision || !*revision || !utf8_ok(revision)))
		return kernels__error(KERNELS_EINVAL, "the revision of %s must be a non-empty UTF-8 string", repo_id);
	for (hi = lock->count; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;
		int c = dep_cmp(&lock->entries[mid].pub, &key);
		if (c == 0 && req == KERNELS_LOCK_REQUEST_VERSION)
			return kernels__error(KERNELS_EINVAL, "%s version %llu is locked twice; keep one entry per "
					      "dependency", repo_id, version);
		if (c == 0)
			return kernels__error(KERNELS_EINVAL, "%s revision '%s' is locked twice; keep one entry per "
					      "dependency", repo_id, revision);
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!(e = insert_slot(lock, lo)))
		return KERNELS_ENOMEM;
	e->pub.request = req;
	e->pub.version = req == KERNELS_LOCK_REQUEST_VERSION ? version : 0;
	if (!(e->pub.repo_id = kernels__strdup(repo_id)) || !(e->pub.commit = lower_dup(commit)) ||
	    (req == KERNELS_LOCK_REQUEST_REVISION && !(e->pub.revision = kernels__strdup(revision)))) {
		entry_clear(e);
		memmove(&lock->entries[lo], &lock->entries[lo + 1], (lock->count - lo - 1) * sizeof(entry));
		lock->count--;
		return KERNELS_ENOMEM;
	}
	return 0;
}

int kernels_lock_add_version(kernels_lock *lock, const char *repo_id, unsigned long long version, const char *commit)
{
	return add_dependency(lock, repo_id, KERNELS_LOCK_REQUEST_VERSION, version, NULL, commit);
}

int kernels_lock_add_revision(kernels_lock *lock, const char *repo_id, const char *revision, const char *commit)
{
	return add_dependency(lock, repo_id, KERNELS_LOCK_REQUEST_REVISION, 0, revision, commit);
}

int kernels_lock_add_entry(kernels_lock *lock, const char *repo_id, const char *commit)
{
	entry *e;
	int rc;

	if (!lock)
		return kernels__error(KERNELS_EINVAL, "no lock given");
	if (lock->format != KERNELS_LOCK_FORMAT_VARIANTS)
		return kernels__error(KERNELS_EINVAL, "this lock is in the dependency format; use "
				      "kernels_lock_add_version/_revision, or create a KERNELS_LOCK_FORMAT_VARIANTS "
				      "lock");
	if ((rc = check_repo_commit(repo_id, commit, 0)) < 0)
		return rc;
	if (kernels_lock_find(lock, repo_id))
		return kernels__error(KERNELS_EINVAL, "%s is locked twice; keep one entry per repo", repo_id);
	if (!(e = insert_slot(lock, lock->count)))
		return KERNELS_ENOMEM;
	if (!(e->pub.repo_id = kernels__strdup(repo_id)) || !(e->pub.commit = lower_dup(commit))) {
		entry_clear(e);
		lock->count--;
		return KERNELS_ENOMEM;
	}
	return 0;
}

static int hash_ok(const char *hash)
{
	return hash && strncmp(hash, "sha256-", 7) == 0 && kernels__is_hex(hash + 7, 64, KERNELS__HEX_LOWER);
}

int kernels_lock_add_variant(kernels_lock *lock, const char *repo_id, const char *name, const char *hash)
{
	entry *e = (entry *)kernels_lock_find(lock, repo_id);
	kernels_lock_variant *v;

	if (!e || lock->format != KERNELS_LOCK_FORMAT_VARIANTS)
		return kernels__error(KERNELS_EINVAL, "%s has no variants-format entry in this lock; add it first with "
				      "kernels_lock_add_entry", repo_id ? repo_id : "(null)");
	if (!variant_name_ok(name))
		return kernels__error(KERNELS_EINVAL, "'%s' is not a variant name (a folder name under build/)",
				      name ? name : "(null)");
	if (!hash_ok(hash))
		return kernels__error(KERNELS_EINVAL, "variant hash '%s' of %s is malformed; expected \"sha256-\" and "
				      "64 lower-case hex digits", hash ? hash : "(null)", repo_id);
	if (kernels_lock_entry_variant_hash(&e->pub, name))
		return kernels__error(KERNELS_EINVAL, "variant %s of %s is locked twice", name, repo_id);
	if (KERNELS__ARRAY_GROW(e->pub.variants, e->variant_cap, e->pub.variant_count) < 0)
		return KERNELS_ENOMEM;
	v = (kernels_lock_variant *)&e->pub.variants[e->pub.variant_count];
	memset(v, 0, sizeof(*v));
	if (!(v->name = kernels__strdup(name)) || !(v->hash = kernels__strdup(hash)) ||
	    !(v->hash_type = kernels__strdup(HASH_TYPE))) {
		free((char *)v->name);
		free((char *)v->hash);
		return KERNELS_ENOMEM;
	}
	e->pub.variant_count++;
	return 0;
}

/* ---- writing ---- */

/* A JSON string as serde_json (ascii = 0) or Python's json with
 * ensure_ascii (ascii = 1) writes it. `s` is valid UTF-8. */
static int put_json_string(kernels__buf *b, const char *s, int ascii)
{
	const unsigned char *p = (const unsigned char *)s;
	int rc = kernels__buf_put(b, "\"", 1);

	while (rc == 0 && *p) {
		unsigned char c = *p;
		const char *esc = NULL;
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		default: break;
		}
		if (esc) {
			rc = kernels__buf_puts(b, esc);
			p++;
		} else if (c < 0x20 || (ascii && c == 0x7f)) {
			rc = kernels__buf_printf(b, "\\u%04x", c);
			p++;
		} else if (c < 0x80 || !ascii) {
			rc = kernels__buf_put(b, p, 1);
			p++;
		} else {
			uint32_t cp;
			size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2, k;
			cp = c & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
			for (k = 1; k < n; k++)
				cp = (cp << 6) | (p[k] & 0x3F);
			p += n;
			if (cp >= 0x10000) {
				cp -= 0x10000;
				rc = kernels__buf_printf(b, "\\u%04x\\u%04x", 0xD800 + (cp >> 10),
							 0xDC00 + (cp & 0x3FF));
			} else {
				rc = kernels__buf_printf(b, "\\u%04x", cp);
			}
		}
	}
	return rc ? rc : kernels__buf_put(b, "\"", 1);
}

static int write_dependency(const kernels_lock *lock, kernels__buf *b)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < lock->count && rc == 0; i++) {
		const kernels_lock_entry *e = &lock->entries[i].pub;
		rc = kernels__buf_puts(b, i ? ",\n  {\n    \"dependency\": {\n      \"repo-id\": "
					    : "\n  {\n    \"dependency\": {\n      \"repo-id\": ");
		if (!rc)
			rc = put_json_string(b, e->repo_id, 0);
		if (!rc && e->request == KERNELS_LOCK_REQUEST_VERSION)
			rc = kernels__buf_printf(b, ",\n      \"version\": %llu", e->version);
		if (!rc && e->request == KERNELS_LOCK_REQUEST_REVISION) {
			rc = kernels__buf_puts(b, ",\n      \"revision\": ");
			if (!rc)
				rc = put_json_string(b, e->revision, 0);
		}
		if (!rc)
			rc = kernels__buf_printf(b, "\n    },\n    \"lock\": {\n      \"commit\": \"%s\"\n    }\n  }",
						 e->commit);
	}
	return rc;
}

static int write_variants(const kernels_lock *lock, kernels__buf *b)
{
	size_t i, j;
	int rc = 0;

	for (i = 0; i < lock->count && rc == 0; i++) {
		const kernels_lock_entry *e = &lock->entries[i].pub;
		rc = kernels__buf_puts(b, i ? ",\n  {\n    \"repo_id\": " : "\n  {\n    \"repo_id\": ");
		if (!rc)
			rc = put_json_string(b, e->repo_id, 1);
		if (!rc)
			rc = kernels__buf_printf(b, ",\n    \"sha\": \"%s\",\n    \"variants\": %s", e->commit,
						 e->variant_count ? "{" : "{}");
		for (j = 0; j < e->variant_count && rc == 0; j++) {
			rc = kernels__buf_puts(b, j ? ",\n      " : "\n      ");
			if (!rc)
				rc = put_json_string(b, e->variants[j].name, 1);
			if (!rc)
				rc = kernels__buf_puts(b, ": {\n        \"hash\": ");
			if (!rc)
				rc = put_json_string(b, e->variants[j].hash, 1);
			if (!rc)
				rc = kernels__buf_puts(b, ",\n        \"hash_type\": ");
			if (!rc)
				rc = put_json_string(b, e->variants[j].hash_type, 1);
			if (!rc)
				rc = kernels__buf_puts(b, "\n      }");
		}
		if (!rc && e->variant_count)
			rc = kernels__buf_puts(b, "\n    }");
		if (!rc)
			rc = kernels__buf_puts(b, "\n  }");
	}
	return rc;
}

int kernels_lock_to_string(char **out, const kernels_lock *lock)
{
	kernels__buf b = { 0 };
	int rc;

	if (!lock || !out)
		return kernels__error(KERNELS_EINVAL, "kernels_lock_to_string: `lock` and `out` are required");
	*out = NULL;
	rc = kernels__buf_puts(&b, "[");
	if (!rc && lock->count)
		rc = lock->format == KERNELS_LOCK_FORMAT_DEPENDENCY ? write_dependency(lock, &b) : write_variants(lock,
														  &b);
	if (!rc)
		rc = kernels__buf_puts(&b, lock->count ? "\n]" : "]");
	if (rc) {
		kernels__buf_free(&b);
		return rc;
	}
	*out = kernels__buf_detach(&b);
	return *out ? 0 : KERNELS_ENOMEM;
}

int kernels_lock_save(const kernels_lock *lock, const char *path)
{
	char *text = NULL;
	struct stat st;
	int rc;

	if (!path)
		return kernels__error(KERNELS_EINVAL, "kernels_lock_save: `path` is NULL");
	if ((rc = kernels_lock_to_string(&text, lock)) < 0)
		return rc;
	/* A lock file that exists keeps its mode; a new one is 0644. */
	rc = kernels__write_atomic(path, text, strlen(text), stat(path, &st) == 0 ? (int)(st.st_mode & 07777) : 0644,
				   KERNELS__WRITE_DURABLE);
	free(text);
	return rc;
}

/* ---- reading ---- */

typedef struct {
	const char *name;
	size_t index;         /* 1-based entry number, for messages */
	const char *repo_id;  /* when known */
} where;

static int bad(const where *w, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(const where *w, const char *key, const char *fmt, ...)
{
	char what[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return kernels__error(KERNELS_EPARSE, "%s: entry %zu%s%s%s%s%s%s: %s; fix or regenerate the lock file "
			      "(libkernels lock)", w->name, w->index, w->repo_id ? " (" : "",
			      w->repo_id ? w->repo_id : "", w->repo_id ? ")" : "", key ? ", key '" : "",
			      key ? key : "", key ? "'" : "", what);
}

static const char *json_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "a value";
}

/* Only `allowed` keys (NULL-terminated) may appear. */
static int only_keys(const where *w, const char *ctx, json_t *obj, const char *const *allowed)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v) {
		const char *const *a;
		for (a = allowed; *a; a++)
			if (strcmp(*a, key) == 0)
				break;
		if (!*a) {
			char list[256] = "";
			for (a = allowed; *a; a++) {
				strncat(list, a == allowed ? "'" : ", '", sizeof(list) - strlen(list) - 1);
				strncat(list, *a, sizeof(list) - strlen(list) - 1);
				strncat(list, "'", sizeof(list) - strlen(list) - 1);
			}
			return bad(w, key, "unknown key in %s; expected only %s", ctx, list);
		}
	}
	return 0;
}

static int get_string(const where *w, json_t *obj, const char *key, int required, const char **out)
{
	json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (!v || (!required && json_is_null(v))) {
		if (required)
			return bad(w, key, "missing");
		return 0;
	}
	if (!json_is_string(v))
		return bad(w, key, "is %s; expected a string", json_kind(v));
	*out = json_string_value(v);
	if (strlen(*out) != json_string_length(v))
		return bad(w, key, "contains a NUL character");
	return 0;
}

static int read_dependency(kernels_lock *lock, json_t *item, where *w)
{
	static const char *const top[] = { "dependency", "lock", NULL };
	static const char *const dep_keys[] = { "repo-id", "version", "revision", NULL };
	static const char *const lock_keys[] = { "commit", NULL };
	json_t *dep, *lk, *ver;
	const char *repo, *rev, *commit;
	int rc;

	if ((rc = only_keys(w, "an entry", item, top)) < 0)
		return rc;
	dep = json_object_get(item, "dependency");
	lk = json_object_get(item, "lock");
	if (!dep)
		return bad(w, "dependency", "missing");
	if (!json_is_object(dep))
		return bad(w, "dependency", "is %s; expected an object with 'repo-id' and 'version' or 'revision'",
			   json_kind(dep));
	if ((rc = only_keys(w, "'dependency'", dep, dep_keys)) < 0 ||
	    (rc = get_string(w, dep, "repo-id", 1, &repo)) < 0)
		return rc;
	if (kernels__repo_id_check(repo) < 0) {
		char why[1024];
		snprintf(why, sizeof(why), "%s", kernels_error_last());
		return bad(w, "repo-id", "'%s' is not a valid repo id: %s", repo, why);
	}
	w->repo_id = repo;
	ver = json_object_get(dep, "version");
	if (ver && json_is_null(ver))
		ver = NULL;
	if ((rc = get_string(w, dep, "revision", 0, &rev)) < 0)
		return rc;
	if (ver && rev)
		return bad(w, "dependency", "has both 'version' and 'revision'; they are mutually exclusive");
	if (!ver && !rev)
		return bad(w, "dependency", "needs 'version' (a major version) or 'revision'");
	if (ver && (!json_is_integer(ver) || json_integer_value(ver) < 0))
		return bad(w, "version", "is %s; expected an integer >= 0",
			   json_is_integer(ver) ? "negative" : json_kind(ver));
	if (rev && !*rev)
		return bad(w, "revision", "is empty; expected a branch, tag or commit");
	if (!lk)
		return bad(w, "lock", "missing");
	if (!json_is_object(lk))
		return bad(w, "lock", "is %s; expected an object with 'commit'", json_kind(lk));
	if ((rc = only_keys(w, "'lock'", lk, lock_keys)) < 0 || (rc = get_string(w, lk, "commit", 1, &commit)) < 0)
		return rc;
	if (!kernels__is_hex(commit, 40, KERNELS__HEX_ANY_CASE) && !kernels__is_hex(commit, 64, KERNELS__HEX_ANY_CASE))
		return bad(w, "commit", "'%s' is not a commit id; expected 40 or 64 hex digits", commit);
	if (ver)
		rc = kernels_lock_add_version(lock, repo, (unsigned long long)json_integer_value(ver), commit);
	else
		rc = kernels_lock_add_revision(lock, repo, rev, commit);
	if (rc == KERNELS_EINVAL) {
		char why[1024];
		snprintf(why, sizeof(why), "%s", kernels_error_last());
		return bad(w, NULL, "%s", why);
	}
	return rc;
}

static int read_variants(kernels_lock *lock, json_t *item, where *w)
{
	static const char *const top[] = { "repo_id", "sha", "variants", NULL };
	static const char *const var_keys[] = { "hash", "hash_type", NULL };
	const char *repo, *sha, *name;
	json_t *vars, *v;
	int rc;

	if ((rc = only_keys(w, "an entry", item, top)) < 0 || (rc = get_string(w, item, "repo_id", 1, &repo)) < 0)
		return rc;
	if (kernels__repo_id_check(repo) < 0) {
		char why[1024];
		snprintf(why, sizeof(why), "%s", kernels_error_last());
		return bad(w, "repo_id", "'%s' is not a valid repo id: %s", repo, why);
	}
	w->repo_id = repo;
	if ((rc = get_string(w, item, "sha", 1, &sha)) < 0)
		return rc;
	if (!kernels__is_hex(sha, 40, KERNELS__HEX_ANY_CASE))
		return bad(w, "sha", "'%s' is not a commit id; expected 40 hex digits", sha);
	vars = json_object_get(item, "variants");
	if (!vars)
		return bad(w, "variants", "missing");
	if (!json_is_object(vars))
		return bad(w, "variants", "is %s; expected an object mapping variant names to hashes", json_kind(vars));
	if (kernels_lock_find(lock, repo))
		return bad(w, "repo_id", "%s is locked twice; keep one entry per repo", repo);
	if ((rc = kernels_lock_add_entry(lock, repo, sha)) < 0)
		return rc;
	json_object_foreach(vars, name, v) {
		const char *hash, *type;
		char key[512];
		snprintf(key, sizeof(key), "variants.%s", name);
		if (!json_is_object(v))
			return bad(w, key, "is %s; expected {\"hash\": ..., \"hash_type\": \"git_lfs_concat\"}",
				   json_kind(v));
		if (!variant_name_ok(name))
			return bad(w, key, "is not a variant name (a folder name under build/)");
		if ((rc = only_keys(w, key, v, var_keys)) < 0)
			return rc;
		snprintf(key, sizeof(key), "variants.%s.hash", name);
		if ((rc = get_string(w, v, "hash", 1, &hash)) < 0)
			return rc == KERNELS_EPARSE ? bad(w, key, "missing or not a string") : rc;
		if (!hash_ok(hash))
			return bad(w, key, "'%s' is malformed; expected \"sha256-\" and 64 lower-case hex digits",
				   hash);
		snprintf(key, sizeof(key), "variants.%s.hash_type", name);
		if (json_object_get(v, "hash_type") && !json_is_string(json_object_get(v, "hash_type")))
			return bad(w, key, "is %s; expected \"git_lfs_concat\"",
				   json_kind(json_object_get(v, "hash_type")));
		type = json_string_value(json_object_get(v, "hash_type"));
		if (type && strcmp(type, HASH_TYPE) != 0)
			return bad(w, key, "unknown hash type '%s'; this libkernels knows only \"git_lfs_concat\"",
				   type);
		if ((rc = kernels_lock_add_variant(lock, repo, name, hash)) < 0)
			return rc;
	}
	return 0;
}

int kernels_lock_load_string(kernels_lock **out, const char *json, size_t len, const char *name)
{
	json_error_t jerr;
	json_t *root;
	kernels_lock *lock = NULL;
	size_t i;
	int rc = 0;

	if (!out)
		return kernels__error(KERNELS_EINVAL, "kernels_lock_load_string: `out` is NULL");
	*out = NULL;
	if (!name)
		name = "kernels.lock";
	if (!json && len)
		return kernels__error(KERNELS_EINVAL, "%s: no data", name);
	root = json_loadb(json ? json : "", len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return kernels__error(KERNELS_EPARSE, "%s:%d:%d: not valid JSON: %s; the lock file is damaged or "
				      "truncated: regenerate it (libkernels lock)", name, jerr.line, jerr.column,
				      jerr.text);
	if (!json_is_array(root)) {
		rc = kernels__error(KERNELS_EPARSE, "%s: the top level is %s; expected an array of locked kernels",
				    name, json_kind(root));
		goto out;
	}
	{
		json_t *first = json_array_get(root, 0);
		kernels_lock_format_t fmt = KERNELS_LOCK_FORMAT_DEPENDENCY;
		if (first && json_is_object(first) && !json_object_get(first, "dependency") &&
		    !json_object_get(first, "lock") &&
		    (json_object_get(first, "repo_id") || json_object_get(first, "sha") ||
							json_object_get(first, "variants")))
			fmt = KERNELS_LOCK_FORMAT_VARIANTS;
		if ((rc = kernels_lock_new(&lock, fmt)) < 0)
			goto out;
	}
	for (i = 0; i < json_array_size(root); i++) {
		json_t *item = json_array_get(root, i);
		where w = { .name = name, .index = i + 1 };
		if (!json_is_object(item)) {
			rc = bad(&w, NULL, "is %s; expected an object", json_kind(item));
			goto out;
		}
		rc = lock->format == KERNELS_LOCK_FORMAT_DEPENDENCY ? read_dependency(lock, item, &w)
								    : read_variants(lock, item, &w);
		if (rc < 0)
			goto out;
	}
out:
	json_decref(root);
	if (rc < 0) {
		kernels_lock_free(lock);
		return rc;
	}
	*out = lock;
	return 0;
}

int kernels_lock_load(kernels_lock **out, const char *path)
{
	char *text;
	size_t len;
	int rc;

	if (!out || !path)
		return kernels__error(KERNELS_EINVAL, "kernels_lock_load: `out` and `path` are required");
	*out = NULL;
	if (kernels__read_file(path, LOCK_FILE_MAX, 0, &text, &len, NULL) < 0) {
		if (errno == ENOENT)
			return kernels__error(KERNELS_ENOTFOUND,
					      "no lock file at '%s'; create it with `libkernels lock "
					      "<project folder>`", path);
		if (errno == ENOMEM)
			return kernels__error_oom();
		if (errno == EFBIG)
			return kernels__error(KERNELS_EINVAL, "'%s' is over 64 MiB; is it a lock file?", path);
		if (errno == EISDIR || errno == EINVAL) /* kernels__read_file: no regular file */
			return kernels__error(KERNELS_EINVAL, "'%s' is %s, not a lock file; pass the path of a "
					      "kernels.lock file", path, errno == EISDIR ? "a folder" : "not a regular file");
		return kernels__error(KERNELS_EIO, "cannot read '%s': %s", path, strerror(errno));
	}
	rc = kernels_lock_load_string(out, text, len, path);
	free(text);
	return rc;
}
