/*
 * libFuzzer target over the revision matcher (lib/revision.c): how the ref
 * names a repo lists are classified (branch, "v" + version tag, vN major
 * branch) and matched against what the caller asked for, reached offline
 * through the cache's refs/ folder (kernels__revision_resolve and
 * kernels__versions_list with cfg.offline), plus the pure helpers
 * (kernels__revision_check, kernels__edit_distance).
 *
 * Input: the first line is the revision asked for. Each further line is a
 * ref, "NAME [HEX]", recorded as refs/NAME holding HEX padded with '0' to
 * 40 digits (a commit made of the ref's number when HEX is absent); a line
 * "@snap HEX" makes a snapshots/ folder of that commit instead (offline,
 * short ids match snapshots too).
 *
 * Invariants besides memory errors, leaks and undefined behaviour, by the
 * resolution order of include/kernels/revision.h:
 *  - a revision the check refuses is EINVAL; a full commit id is itself;
 *  - a name refs/ holds resolves to its commit, as a tag exactly when it is
 *    "v" + a dotted version, else as a branch;
 *  - else N (1-6 digits) is branch vN; a short hex id is the one commit
 *    (refs or snapshots) with that prefix, EAMBIGUOUS for several; a
 *    specifier set picks a "v" tag it accepts that no accepted tag exceeds;
 *    a miss is EOFFLINE; a set that does not parse EPARSE;
 *  - the versions list holds vN branches and version tags of refs/ only,
 *    sorted by version, each once;
 *  - the edit distance is a metric within its bounds.
 */
#include <ctype.h>

#include "fuzz_common.h"
#include "cache.h"
#include "config.h"
#include "refs.h"
#include "revision.h"
#include "specifier.h"
#include "util.h"

#define MAX_REFS 16
#define MAX_SNAPS 4
#define REPO "org/name"

typedef struct {
	char name[300];
	char commit[41];
	int tag;
} model_ref;

static model_ref refs[MAX_REFS];
static size_t nrefs;
static char snaps[MAX_SNAPS][41];
static size_t nsnaps;
static char repo_dir[4300];

static void quiet(kernels_log_level level, const char *message, void *payload)
{
	(void)level;
	(void)message;
	(void)payload;
}

/* HEX chars of `field`, lower-cased and padded with '0' to 40; or a
 * commit made of `fallback` when the field has none. */
static void commit_from(const char *field, size_t i, char out[41])
{
	size_t n = 0;

	for (; field && *field && n < 40; field++)
		if (isxdigit((unsigned char)*field))
			out[n++] = (char)tolower((unsigned char)*field);
	if (n == 0)
		memset(out, "123456789abcdef0"[i % 16], 40);
	else
		memset(out + n, '0', 40 - n);
	out[40] = '\0';
}

static int is_tag_name(const char *name)
{
	kernels__version *v;

	if (name[0] != 'v' || !strchr(name, '.') || !(v = kernels__version_try_parse(name + 1)))
		return 0;
	kernels__version_free(v);
	return 1;
}

static model_ref *find(const char *name)
{
	size_t i;

	for (i = 0; i < nrefs; i++)
		if (!strcmp(refs[i].name, name))
			return &refs[i];
	return NULL;
}

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

static int all_hex(const char *s)
{
	for (; *s; s++)
		if (!isxdigit((unsigned char)*s))
			return 0;
	return 1;
}

/* Lays out refs/NAME (a ref the name check accepts and the folders allow). */
static void add_ref(const char *name, const char *field)
{
	char path[8192], commit[41];
	const char *p;
	model_ref *r;

	if (nrefs == MAX_REFS || strlen(name) >= sizeof(refs[0].name) || kernels__ref_name_check(name) < 0) {
		kernels_error_clear();
		return;
	}
	commit_from(field, nrefs, commit);
	for (p = name; (p = strchr(p, '/')); p++) {
		struct stat st;
		snprintf(path, sizeof(path), "%s/refs/%.*s", repo_dir, (int)(p - name), name);
		if (mkdir(path, 0755) < 0 && (errno != EEXIST || lstat(path, &st) < 0 || !S_ISDIR(st.st_mode)))
			return;
	}
	snprintf(path, sizeof(path), "%s/refs/%s", repo_dir, name);
	/* upper-case hex in the file when the field is: read back lower-case */
	if (field && strpbrk(field, "ABCDEF")) {
		char upper[41];
		size_t k;
		for (k = 0; k <= 40; k++)
			upper[k] = (char)toupper((unsigned char)commit[k]);
		if (fuzz_write_file(path, upper, 40) < 0)
			return;
	} else if (fuzz_write_file(path, commit, 40) < 0) {
		return;
	}
	if (!(r = find(name)))
		r = &refs[nrefs++];
	snprintf(r->name, sizeof(r->name), "%s", name);
	memcpy(r->commit, commit, 41);
	r->tag = is_tag_name(name);
}

static void add_snapshot(const char *field)
{
	char path[8192];

	if (nsnaps == MAX_SNAPS)
		return;
	commit_from(field, 7, snaps[nsnaps]);
	snprintf(path, sizeof(path), "%s/snapshots/%s", repo_dir, snaps[nsnaps]);
	if (mkdir(path, 0755) == 0)
		nsnaps++;
}

/* Distinct commits of refs and snapshots starting with `prefix`. */
static size_t prefix_matches(const char *prefix, char *first)
{
	char seen[MAX_REFS + MAX_SNAPS][41];
	size_t i, k, n = 0, len = strlen(prefix);

	for (i = 0; i < nrefs + nsnaps; i++) {
		const char *c = i < nrefs ? refs[i].commit : snaps[i - nrefs];
		if (strncmp(c, prefix, len))
			continue;
		for (k = 0; k < n && strcmp(seen[k], c); k++)
			;
		if (k == n)
			memcpy(seen[n++], c, 41);
	}
	if (n)
		memcpy(first, seen[0], 41);
	return n;
}

static void check_spec(const char *rev, int rc, const kernels_revision *r)
{
	kernels__specifier_set *s = NULL;
	const char *texts[MAX_REFS];
	size_t idx[MAX_REFS], matches[MAX_REFS], n = 0, count = 0, i;
	kernels__version *chosen;

	if (kernels__specifier_parse(rev, &s) < 0) {
		kernels_error_clear();
		CHECK(rc == KERNELS_EPARSE);
		return;
	}
	for (i = 0; i < nrefs; i++)
		if (refs[i].tag) {
			idx[n] = i;
			texts[n++] = refs[i].name + 1;
		}
	CHECK(kernels__specifier_filter(s, texts, n, -1, matches, &count) == 0);
	if (count == 0) {
		CHECK(rc == KERNELS_EOFFLINE);
	} else {
		const model_ref *m;
		CHECK(rc == 0 && r->kind == KERNELS_REVISION_VERSION_SPEC);
		CHECK(r->ref && (m = find(r->ref)) != NULL && m->tag && !strcmp(m->commit, r->commit));
		CHECK((chosen = kernels__version_try_parse(r->ref + 1)) != NULL);
		CHECK(kernels__specifier_contains(s, chosen, 1));
		for (i = 0; i < count; i++) {
			kernels__version *v = kernels__version_try_parse(texts[matches[i]]);
			CHECK(v && kernels__version_compare(v, chosen) <= 0);
			kernels__version_free(v);
		}
		kernels__version_free(chosen);
	}
	(void)idx;
	kernels__specifier_set_free(s);
}

static void check_resolve(const kernels__config *cfg, const char *rev)
{
	kernels_revision *r = NULL;
	const model_ref *exact;
	char lower[256], first[41];
	size_t len = strlen(rev), i;
	int rc = kernels__revision_resolve(cfg, REPO, rev, &r);

	if (rc < 0) {
		fuzz_check_failure(rc);
		CHECK(r == NULL);
	} else {
		CHECK(r != NULL && fuzz_is_lower_hex(r->commit, 40));
		CHECK(!strcmp(kernels_revision_repo_id(r), REPO));
		CHECK(r->from_cache == (r->kind != KERNELS_REVISION_COMMIT));
	}
	if (kernels__revision_check(rev) < 0) {
		kernels_error_clear();
		CHECK(rc == KERNELS_EINVAL);
		goto out;
	}
	CHECK(rc != KERNELS_EINVAL);
	if (kernels__is_commit(rev, KERNELS__HEX_ANY_CASE)) {
		CHECK(rc == 0 && r->kind == KERNELS_REVISION_COMMIT && !strncasecmp(r->commit, rev, 40));
		CHECK(kernels_revision_ref(r) == NULL);
		goto out;
	}
	if ((exact = find(rev))) {
		CHECK(rc == 0 && !strcmp(r->commit, exact->commit));
		CHECK(r->kind == (exact->tag ? KERNELS_REVISION_TAG : KERNELS_REVISION_BRANCH));
		CHECK(kernels_revision_ref(r) && !strcmp(kernels_revision_ref(r), rev));
		goto out;
	}
	if (all_digits(rev) && len <= 6) {
		char name[32];
		snprintf(name, sizeof(name), "v%lu", strtoul(rev, NULL, 10));
		exact = find(name);
		if (!exact) {
			CHECK(rc == KERNELS_EOFFLINE);
		} else {
			CHECK(rc == 0 && r->kind == KERNELS_REVISION_MAJOR && !strcmp(r->commit, exact->commit));
			CHECK(!strcmp(kernels_revision_ref(r), name));
		}
		goto out;
	}
	if (len >= 7 && len < 40 && all_hex(rev)) {
		size_t n;
		for (i = 0; i <= len; i++)
			lower[i] = (char)tolower((unsigned char)rev[i]);
		n = prefix_matches(lower, first);
		if (n == 0)
			CHECK(rc == KERNELS_EOFFLINE);
		else if (n > 1)
			CHECK(rc == KERNELS_EAMBIGUOUS);
		else
			CHECK(rc == 0 && r->kind == KERNELS_REVISION_SHORT_COMMIT && !strcmp(r->commit, first));
		goto out;
	}
	if (kernels__specifier_looks_like(rev)) {
		check_spec(rev, rc, r);
		goto out;
	}
	CHECK(rc == KERNELS_EOFFLINE);
out:
	kernels_revision_free(r);
	kernels_error_clear();
}

static void check_versions(const kernels__config *cfg)
{
	char **names = NULL;
	size_t n = 0, i;
	kernels__version *prev = NULL;
	int rc = kernels__versions_list(cfg, REPO, &names, &n);

	CHECK(rc == 0 || rc == KERNELS_ENOMEM);
	for (i = 0; i < n; i++) {
		const model_ref *m = find(names[i]);
		kernels__version *v;
		CHECK(m != NULL && names[i][0] == 'v');
		CHECK(m->tag || all_digits(names[i] + 1));
		CHECK((v = kernels__version_try_parse(names[i] + 1)) != NULL);
		if (prev) {
			int c = kernels__version_compare(prev, v);
			CHECK(c < 0 || (c == 0 && strcmp(names[i - 1], names[i]) < 0));
		}
		kernels__version_free(prev);
		prev = v;
	}
	kernels__version_free(prev);
	/* every vN branch and version tag is listed */
	for (i = 0; rc == 0 && i < nrefs; i++) {
		size_t k;
		int listed = refs[i].tag || (refs[i].name[0] == 'v' && all_digits(refs[i].name + 1));
		kernels__version *v = listed ? kernels__version_try_parse(refs[i].name + 1) : NULL;
		if (!v)
			continue;
		kernels__version_free(v);
		for (k = 0; k < n && strcmp(names[k], refs[i].name); k++)
			;
		CHECK(k < n);
	}
	kernels__strings_free(names, n);
	kernels_error_clear();
}

static void check_distance(const char *a, const char *b, const char *c)
{
	size_t la = strlen(a), lb = strlen(b), ab, ba, bc, ac;

	if (la > 256 || lb > 256 || strlen(c) > 256)
		return;
	ab = kernels__edit_distance(a, b, (size_t)-1);
	ba = kernels__edit_distance(b, a, (size_t)-1);
	bc = kernels__edit_distance(b, c, (size_t)-1);
	ac = kernels__edit_distance(a, c, (size_t)-1);
	CHECK(ab == ba);
	CHECK((ab == 0) == !strcmp(a, b));
	CHECK(ab <= (la > lb ? la : lb) && ab >= (la > lb ? la - lb : lb - la));
	CHECK(ac <= ab + bc);
	CHECK(kernels__edit_distance(a, b, 2) == (ab < 2 ? ab : 2));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	kernels__config cfg;
	char *buf, *line, *next, *rev, cache[4200], path[8192];
	char *endpoints[2] = { "http://127.0.0.1:9", NULL };

	if (size > 4096)
		return 0;
	buf = fuzz_strndup(data, size);
	fuzz_scratch_clear();
	snprintf(cache, sizeof(cache), "%s/cache", fuzz_scratch());
	snprintf(repo_dir, sizeof(repo_dir), "%s/kernels--org--name", cache);
	CHECK(mkdir(cache, 0755) == 0 && mkdir(repo_dir, 0755) == 0);
	snprintf(path, sizeof(path), "%s/refs", repo_dir);
	CHECK(mkdir(path, 0755) == 0);
	snprintf(path, sizeof(path), "%s/snapshots", repo_dir);
	CHECK(mkdir(path, 0755) == 0);
	nrefs = nsnaps = 0;

	rev = buf;
	line = strchr(buf, '\n');
	if (line)
		*line++ = '\0';
	for (; line; line = next) {
		char *field;
		if ((next = strchr(line, '\n')))
			*next++ = '\0';
		if ((field = strchr(line, ' ')))
			*field++ = '\0';
		if (!strcmp(line, "@snap"))
			add_snapshot(field);
		else
			add_ref(line, field);
	}

	memset(&cfg, 0, sizeof(cfg));
	cfg.cache_dir = cache;
	cfg.endpoint = endpoints[0];
	cfg.endpoints = endpoints;
	cfg.n_endpoints = 1;
	cfg.offline = 1;
	cfg.deadline_ms = -1;
	cfg.log_cb = quiet;

	check_resolve(&cfg, rev);
	check_versions(&cfg);
	check_distance(rev, nrefs ? refs[0].name : "", nrefs > 1 ? refs[1].name : "main");
	free(buf);
	return 0;
}
