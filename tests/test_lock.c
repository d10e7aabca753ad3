/* kernels.lock reading/writing and git_lfs_concat hashes.
 *
 * Besides the cmocka cases, the program has modes used by
 * tests/python/test_lock_format.py to compare with the Python package:
 *   --build INPUT.json         build a lock through the API, print it
 *   --roundtrip LOCK           load a lock file, print what we would write
 *   --check LOCK               load only (exit 2 + message when refused)
 *   --lock-project DIR MAP     manifest DIR/pyproject.toml + what the Hub
 *                              would say ({repo: {commit, variants}}) ->
 *                              DIR/kernels.lock (kernels_lock_save)
 *   --hash FILES.json          kernels_lock_variant_hash of [{path,hash,is_lfs}]
 *   --hash-dir DIR [LFS...]    kernels_lock_variant_hash_dir
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "kernels.h"
#include "lock.h"
#include "testutil.h"

#define DATA KERNELS_SOURCE_DIR "/tests/data/lock"
#define C1 "1111111111111111111111111111111111111111"
#define C2 "2222222222222222222222222222222222222222"
#define C3 "ABCDEF2222222222222222222222222222222222"
#define C3L "abcdef2222222222222222222222222222222222"
#define H1 "sha256-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

/* ---- modes for the Python cross-check ---- */

static int print_lock(const kernels_lock *lock)
{
	char *s;
	if (kernels_lock_to_string(&s, lock) < 0) {
		fprintf(stderr, "%s\n", kernels_error_last());
		return 2;
	}
	fputs(s, stdout);
	kernels_free(s);
	return 0;
}

static int mode_build(const char *spec_path)
{
	json_t *spec = json_load_file(spec_path, 0, NULL), *entries, *e;
	kernels_lock *lock = NULL;
	size_t i;
	int rc = 0;

	if (!spec)
		return 3;
	if (kernels_lock_new(&lock, strcmp(json_string_value(json_object_get(spec, "format")), "variants") == 0
					    ? KERNELS_LOCK_FORMAT_VARIANTS
					    : KERNELS_LOCK_FORMAT_DEPENDENCY) < 0)
		return 3;
	entries = json_object_get(spec, "entries");
	json_array_foreach(entries, i, e) {
		const char *repo = json_string_value(json_object_get(e, "repo_id"));
		const char *commit = json_string_value(json_object_get(e, "commit"));
		json_t *vars = json_object_get(e, "variants"), *v;
		size_t j;
		if (json_object_get(e, "version"))
			rc = kernels_lock_add_version(lock, repo, (unsigned long long)json_integer_value(json_object_get(e, "version")),
						      commit);
		else if (json_object_get(e, "revision"))
			rc = kernels_lock_add_revision(lock, repo, json_string_value(json_object_get(e, "revision")), commit);
		else
			rc = kernels_lock_add_entry(lock, repo, commit);
		json_array_foreach(vars, j, v) {
			if (rc == 0)
				rc = kernels_lock_add_variant(lock, repo, json_string_value(json_array_get(v, 0)),
							      json_string_value(json_array_get(v, 1)));
		}
		if (rc < 0)
			break;
	}
	if (rc == 0)
		rc = print_lock(lock);
	else
		fprintf(stderr, "%s\n", kernels_error_last()), rc = 2;
	kernels_lock_free(lock);
	json_decref(spec);
	return rc;
}

static int mode_load(const char *path, int print)
{
	kernels_lock *lock;
	int rc;

	if (kernels_lock_load(&lock, path) < 0) {
		fprintf(stderr, "%s\n", kernels_error_last());
		return 2;
	}
	rc = print ? print_lock(lock) : 0;
	kernels_lock_free(lock);
	return rc;
}

static int mode_lock_project(const char *dir, const char *map_path)
{
	kernels_manifest *m;
	kernels_lock *lock = NULL;
	json_t *map = json_load_file(map_path, 0, NULL);
	char path[4096];
	size_t i;
	int rc = 0, variants = 0;

	if (!map || kernels_manifest_load(&m, dir) < 0) {
		fprintf(stderr, "%s\n", kernels_error_last());
		return 2;
	}
	/* a manifest of specifiers is a seed-era project */
	for (i = 0; i < kernels_manifest_dependency_count(m); i++)
		variants |= kernels_manifest_dependency_at(m, i)->kind == KERNELS_DEPENDENCY_SPECIFIER;
	kernels_lock_new(&lock, variants ? KERNELS_LOCK_FORMAT_VARIANTS : KERNELS_LOCK_FORMAT_DEPENDENCY);
	for (i = 0; i < kernels_manifest_dependency_count(m) && rc == 0; i++) {
		const kernels_dependency *d = kernels_manifest_dependency_at(m, i);
		json_t *info = json_object_get(map, d->repo_id);
		const char *commit = json_string_value(json_object_get(info, "commit"));
		if (!variants) {
			rc = kernels_lock_add_version(lock, d->repo_id, d->version, commit);
		} else {
			/* "variants": [[name, [{path, hash, is_lfs}, ...]], ...] in listing order */
			json_t *v, *f;
			size_t j, k;
			rc = kernels_lock_add_entry(lock, d->repo_id, commit);
			json_array_foreach(json_object_get(info, "variants"), j, v) {
				json_t *fl = json_array_get(v, 1);
				kernels_lock_file *files = calloc(json_array_size(fl) + 1, sizeof(*files));
				char hash[KERNELS_LOCK_HASH_SIZE];
				json_array_foreach(fl, k, f) {
					files[k].path = json_string_value(json_object_get(f, "path"));
					files[k].hash = json_string_value(json_object_get(f, "hash"));
					files[k].is_lfs = json_is_true(json_object_get(f, "is_lfs"));
				}
				if (rc == 0)
					rc = kernels_lock_variant_hash(hash, files, json_array_size(fl));
				if (rc == 0)
					rc = kernels_lock_add_variant(lock, d->repo_id, json_string_value(json_array_get(v, 0)),
								      hash);
				free(files);
			}
		}
	}
	snprintf(path, sizeof(path), "%s/kernels.lock", dir);
	if (rc == 0)
		rc = kernels_lock_save(lock, path);
	if (rc < 0)
		fprintf(stderr, "%s\n", kernels_error_last());
	kernels_lock_free(lock);
	kernels_manifest_free(m);
	json_decref(map);
	return rc < 0 ? 2 : 0;
}

static int mode_hash(const char *files_path)
{
	json_t *files = json_load_file(files_path, 0, NULL), *f;
	kernels_lock_file *list;
	char out[KERNELS_LOCK_HASH_SIZE];
	size_t i;
	int rc;

	if (!files)
		return 3;
	list = calloc(json_array_size(files) + 1, sizeof(*list));
	json_array_foreach(files, i, f) {
		list[i].path = json_string_value(json_object_get(f, "path"));
		list[i].hash = json_string_value(json_object_get(f, "hash"));
		list[i].is_lfs = json_is_true(json_object_get(f, "is_lfs"));
	}
	rc = kernels_lock_variant_hash(out, list, json_array_size(files));
	if (rc == 0)
		printf("%s\n", out);
	else
		fprintf(stderr, "%s\n", kernels_error_last());
	free(list);
	json_decref(files);
	return rc < 0 ? 2 : 0;
}

static int mode_hash_dir(int argc, char **argv)
{
	char out[KERNELS_LOCK_HASH_SIZE];
	const char **lfs = NULL;
	int rc, i;

	if (argc > 3 && strcmp(argv[3], "--lfs") == 0) {
		lfs = calloc((size_t)argc, sizeof(*lfs));
		for (i = 4; i < argc; i++)
			lfs[i - 4] = argv[i];
	}
	rc = kernels_lock_variant_hash_dir(out, argv[2], lfs);
	free(lfs);
	if (rc < 0) {
		fprintf(stderr, "%s\n", kernels_error_last());
		return 2;
	}
	printf("%s\n", out);
	return 0;
}

/* ---- unit cases ---- */

static char *to_string(const kernels_lock *lock)
{
	char *s = NULL;
	assert_int_equal(kernels_lock_to_string(&s, lock), 0);
	return s;
}

static void test_build_dependency_format(void **state)
{
	kernels_lock *lock;
	const kernels_lock_entry *e;
	char *s;
	(void)state;
	assert_int_equal(kernels_lock_new(&lock, KERNELS_LOCK_FORMAT_DEPENDENCY), 0);
	s = to_string(lock);
	assert_string_equal(s, "[]");
	kernels_free(s);
	assert_int_equal(kernels_lock_add_revision(lock, "b/x", "main", C1), 0);
	assert_int_equal(kernels_lock_add_version(lock, "b/x", 10, C2), 0);
	assert_int_equal(kernels_lock_add_version(lock, "b/x", 2, C3), 0);
	assert_int_equal(kernels_lock_add_version(lock, "a/y", 1, C1), 0);
	assert_int_equal(kernels_lock_add_version(lock, "b/x", 2, C1), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "locked twice"));
	assert_int_equal(kernels_lock_add_revision(lock, "b/x", "main", C1), KERNELS_EINVAL);
	assert_int_equal(kernels_lock_add_version(lock, "bad id", 1, C1), KERNELS_EINVAL);
	assert_int_equal(kernels_lock_add_version(lock, "a/b", 1, "1234"), KERNELS_EINVAL);
	assert_int_equal(kernels_lock_add_revision(lock, "a/b", "", C1), KERNELS_EINVAL);
	assert_int_equal(kernels_lock_add_entry(lock, "a/b", C1), KERNELS_EINVAL);
	assert_int_equal(kernels_lock_entry_count(lock), 4);
	/* sorted: repo id, then versions numerically, then revisions */
	assert_string_equal(kernels_lock_entry_at(lock, 0)->repo_id, "a/y");
	assert_int_equal(kernels_lock_entry_at(lock, 1)->version, 2);
	assert_string_equal(kernels_lock_entry_at(lock, 1)->commit, C3L);
	assert_int_equal(kernels_lock_entry_at(lock, 2)->version, 10);
	assert_string_equal(kernels_lock_entry_at(lock, 3)->revision, "main");
	assert_null(kernels_lock_entry_at(lock, 4));
	e = kernels_lock_find(lock, "b/x");
	assert_int_equal(e->request, KERNELS_LOCK_REQUEST_VERSION);
	assert_int_equal(e->version, 2);
	assert_null(kernels_lock_find(lock, "c/z"));
	s = to_string(lock);
	assert_string_equal(s, "[\n"
			       "  {\n    \"dependency\": {\n      \"repo-id\": \"a/y\",\n      \"version\": 1\n    },\n"
			       "    \"lock\": {\n      \"commit\": \"" C1 "\"\n    }\n  },\n"
			       "  {\n    \"dependency\": {\n      \"repo-id\": \"b/x\",\n      \"version\": 2\n    },\n"
			       "    \"lock\": {\n      \"commit\": \"" C3L "\"\n    }\n  },\n"
			       "  {\n    \"dependency\": {\n      \"repo-id\": \"b/x\",\n      \"version\": 10\n    },\n"
			       "    \"lock\": {\n      \"commit\": \"" C2 "\"\n    }\n  },\n"
			       "  {\n    \"dependency\": {\n      \"repo-id\": \"b/x\",\n      \"revision\": \"main\"\n    },\n"
			       "    \"lock\": {\n      \"commit\": \"" C1 "\"\n    }\n  }\n]");
	kernels_free(s);
	kernels_lock_free(lock);
}

static void test_build_variants_format(void **state)
{
	kernels_lock *lock;
	char *s;
	(void)state;
	assert_int_equal(kernels_lock_new(&lock, KERNELS_LOCK_FORMAT_VARIANTS), 0);
	assert_int_equal(kernels_lock_add_entry(lock, "z/last", C1), 0);
	assert_int_equal(kernels_lock_add_entry(lock, "a/first", C2), 0);
	assert_int_equal(kernels_lock_add_entry(lock, "a/first", C2), KERNELS_EINVAL);
	assert_int_equal(kernels_lock_add_version(lock, "a/b", 1, C1), KERNELS_EINVAL);
	assert_int_equal(kernels_lock_add_entry(lock, "a/c", C1 "11"), KERNELS_EINVAL); /* 42 hex */
	assert_int_equal(kernels_lock_add_variant(lock, "z/last", "torch27-cxx11-cu126-x86_64-linux", H1), 0);
	assert_int_equal(kernels_lock_add_variant(lock, "z/last", "torch-universal", H1), 0);
	assert_int_equal(kernels_lock_add_variant(lock, "z/last", "torch-universal", H1), KERNELS_EINVAL);
	assert_int_equal(kernels_lock_add_variant(lock, "z/last", "../x", H1), KERNELS_EINVAL);
	assert_int_equal(kernels_lock_add_variant(lock, "z/last", "v", "sha256-abc"), KERNELS_EINVAL);
	assert_int_equal(kernels_lock_add_variant(lock, "z/last", "v", "sha1-" C1), KERNELS_EINVAL);
	assert_int_equal(kernels_lock_add_variant(lock, "q/none", "v", H1), KERNELS_EINVAL);
	assert_string_equal(kernels_lock_entry_variant_hash(kernels_lock_find(lock, "z/last"), "torch-universal"), H1);
	assert_null(kernels_lock_entry_variant_hash(kernels_lock_find(lock, "z/last"), "torch-cpu"));
	assert_int_equal(kernels_lock_entry_at(lock, 0)->request, KERNELS_LOCK_REQUEST_NONE);
	s = to_string(lock);
	/* insertion order kept, as kernels 0.9 writes the manifest's order */
	assert_string_equal(s, "[\n  {\n    \"repo_id\": \"z/last\",\n    \"sha\": \"" C1 "\",\n    \"variants\": {\n"
			       "      \"torch27-cxx11-cu126-x86_64-linux\": {\n        \"hash\": \"" H1 "\",\n"
			       "        \"hash_type\": \"git_lfs_concat\"\n      },\n"
			       "      \"torch-universal\": {\n        \"hash\": \"" H1 "\",\n"
			       "        \"hash_type\": \"git_lfs_concat\"\n      }\n    }\n  },\n"
			       "  {\n    \"repo_id\": \"a/first\",\n    \"sha\": \"" C2 "\",\n    \"variants\": {}\n  }\n]");
	kernels_free(s);
	kernels_lock_free(lock);
}

/* Every file under tests/data/lock/valid/ loads and is written back
 * byte for byte. */
static void test_valid_files_roundtrip(void **state)
{
	static const char *names[] = { "dependency.lock", "variants.lock", "empty.lock", "dependency-64hex.lock",
				       "variants-unicode.lock" };
	size_t i;
	(void)state;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char path[1024], *text, *out;
		kernels_lock *lock;
		size_t len;
		snprintf(path, sizeof(path), DATA "/valid/%s", names[i]);
		text = test_read_file(path, &len);
		assert_non_null(text);
		if (kernels_lock_load(&lock, path) != 0)
			fail_msg("%s: %s", names[i], kernels_error_last());
		out = to_string(lock);
		if (strcmp(out, text) != 0)
			fail_msg("%s does not round-trip:\n%s\n--- vs ---\n%s", names[i], out, text);
		kernels_free(out);
		kernels_lock_free(lock);
		free(text);
	}
}

/* One line of invalid/expected.txt: "<file> <what the message says>". */
static void check_invalid_file(char *line, void *payload)
{
	char name[256], path[1024], *what;
	kernels_lock *lock = (kernels_lock *)1;
	(void)payload;

	assert_int_equal(sscanf(line, "%255s", name), 1);
	what = line + strlen(name);
	while (*what == ' ')
		what++;
	snprintf(path, sizeof(path), DATA "/invalid/%s", name);
	if (kernels_lock_load(&lock, path) != KERNELS_EPARSE)
		fail_msg("%s: not refused as malformed (%s)", name, kernels_error_last());
	assert_null(lock);
	if (strncmp(kernels_error_last(), path, strlen(path)) != 0 || !strstr(kernels_error_last(), what))
		fail_msg("%s: wanted '%s', got: %s", name, what, kernels_error_last());
}

static void test_invalid_files(void **state)
{
	(void)state;
	assert_true(test_each_entry(DATA "/invalid/expected.txt", check_invalid_file, NULL) >= 25);
}

static void test_load_errors(void **state)
{
	kernels_lock *lock;
	(void)state;
	assert_int_equal(kernels_lock_load(&lock, DATA "/nonexistent.lock"), KERNELS_ENOTFOUND);
	assert_non_null(strstr(kernels_error_last(), "libkernels lock"));
	/* a folder, or a FIFO (read without waiting for a writer), is no lock file: said so */
	assert_int_equal(kernels_lock_load(&lock, DATA), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "is a folder, not a lock file; pass the path of a kernels.lock"));
	{
		char *dir = test_mkdtemp("lockfifo"), fifo[1024];
		snprintf(fifo, sizeof(fifo), "%s/kernels.lock", dir);
		assert_int_equal(mkfifo(fifo, 0600), 0);
		assert_int_equal(kernels_lock_load(&lock, fifo), KERNELS_EINVAL);
		assert_non_null(strstr(kernels_error_last(), "is not a regular file, not a lock file; pass the path of "
					     "a kernels.lock"));
		test_rmtree(dir);
		free(dir);
	}
	assert_int_equal(kernels_lock_load_string(&lock, "[", 1, "x.lock"), KERNELS_EPARSE);
	assert_non_null(strstr(kernels_error_last(), "x.lock:1:"));
	/* every truncation of a valid lock is refused, never crashes */
	{
		const char *doc = "[{\"repo_id\": \"a/b\", \"sha\": \"" C1 "\", \"variants\": {\"v\": {\"hash\": \"" H1
				  "\", \"hash_type\": \"git_lfs_concat\"}}}]";
		size_t n = strlen(doc), i;
		for (i = 0; i < n; i++)
			assert_int_equal(kernels_lock_load_string(&lock, doc, i, "t.lock"), KERNELS_EPARSE);
		assert_int_equal(kernels_lock_load_string(&lock, doc, n, "t.lock"), 0);
		kernels_lock_free(lock);
	}
}

static void test_save_atomic(void **state)
{
	char *dir = test_mkdtemp("lock"), path[1024], *text;
	kernels_lock *lock, *back;
	struct stat st;
	size_t len;
	(void)state;
	snprintf(path, sizeof(path), "%s/kernels.lock", dir);
	assert_int_equal(kernels_lock_new(&lock, KERNELS_LOCK_FORMAT_DEPENDENCY), 0);
	assert_int_equal(kernels_lock_add_version(lock, "org/k", 1, C1), 0);
	assert_int_equal(kernels_lock_save(lock, path), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	chmod(path, 0600);
	assert_int_equal(kernels_lock_add_revision(lock, "org/k", "v1.2.3", C2), 0);
	assert_int_equal(kernels_lock_save(lock, path), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	text = test_read_file(path, &len);
	assert_non_null(text);
	assert_int_not_equal(text[len - 1], '\n');
	assert_int_equal(kernels_lock_load(&back, path), 0);
	assert_int_equal(kernels_lock_entry_count(back), 2);
	assert_string_equal(kernels_lock_entry_at(back, 1)->revision, "v1.2.3");
	kernels_lock_free(back);
	free(text);
	/* no temporary files left behind */
	assert_int_equal(test_system("test $(ls -A '%s' | wc -l) -eq 1", dir), 0);
	/* unwritable target folder: error names the path, nothing left */
	snprintf(path, sizeof(path), "%s/missing/kernels.lock", dir);
	assert_int_equal(kernels_lock_save(lock, path), KERNELS_EIO);
	assert_non_null(strstr(kernels_error_last(), path));
	kernels_lock_free(lock);
	test_rmtree(dir);
	free(dir);
}

static void test_variant_hash(void **state)
{
	/* sha256("a.txt" || 20 bytes of blob sha1 || "b/c.so" || 32 bytes),
	 * the expectation computed independently with Python's hashlib */
	kernels_lock_file files[] = {
		{ "b/c.so", "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", 1 },
		{ "__pycache__/x.cpython-311.pyc", C1, 0 },
		{ "a.txt", "da39a3ee5e6b4b0d3255bfef95601890afd80709", 0 },
		{ "sub/__pycache__/y.txt", C2, 0 },
		{ "m.pyc", C2, 0 },
	};
	char out[KERNELS_LOCK_HASH_SIZE], expect[KERNELS_LOCK_HASH_SIZE] = "sha256-", cmd[2048];
	FILE *p;
	(void)state;
	assert_int_equal(kernels_lock_variant_hash(out, files, 5), 0);
	snprintf(cmd, sizeof(cmd),
		 "%s -c \"import hashlib; print(hashlib.sha256(b'a.txt' + bytes.fromhex('%s') + b'b/c.so' + "
		 "bytes.fromhex('%s')).hexdigest())\"", KERNELS_PYTHON, "da39a3ee5e6b4b0d3255bfef95601890afd80709",
		 "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff");
	p = popen(cmd, "r");
	assert_non_null(p);
	{
		char line[256] = "";
		assert_non_null(fgets(line, sizeof(line), p));
		assert_int_equal(pclose(p), 0);
		line[strcspn(line, "\n")] = '\0';
		assert_int_equal(strlen(line), 64);
		memcpy(expect + 7, line, 65);
	}
	assert_string_equal(out, expect);
	/* order of input does not matter; a changed hash does */
	{
		kernels_lock_file rev[] = { files[2], files[0] };
		char out2[KERNELS_LOCK_HASH_SIZE];
		assert_int_equal(kernels_lock_variant_hash(out2, rev, 2), 0);
		assert_string_equal(out, out2);
		rev[0].hash = "da39a3ee5e6b4b0d3255bfef95601890afd80708";
		assert_int_equal(kernels_lock_variant_hash(out2, rev, 2), 0);
		assert_string_not_equal(out, out2);
	}
	/* empty variant: sha256 of nothing */
	assert_int_equal(kernels_lock_variant_hash(out, NULL, 0), 0);
	assert_string_equal(out, "sha256-e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	{
		kernels_lock_file bad1[] = { { "x", C1, 1 } }, bad2[] = { { "x", "zz", 0 } }, bad3[] = { { "", C1, 0 } },
				  dup[] = { { "x", C1, 0 }, { "x", C2, 0 } };
		assert_int_equal(kernels_lock_variant_hash(out, bad1, 1), KERNELS_EINVAL);
		assert_int_equal(kernels_lock_variant_hash(out, bad2, 1), KERNELS_EINVAL);
		assert_int_equal(kernels_lock_variant_hash(out, bad3, 1), KERNELS_EINVAL);
		assert_int_equal(kernels_lock_variant_hash(out, dup, 2), KERNELS_EINVAL);
	}
}


/* A cache snapshot: links into blobs/ whose names say sha1 or sha256. */
static void test_variant_hash_dir(void **state)
{
	char *dir = test_mkdtemp("hashdir"), path[1024], target[1024], out[KERNELS_LOCK_HASH_SIZE],
	     out2[KERNELS_LOCK_HASH_SIZE], var[1024];
	/* git hash-object of "hello\n" (git's well-known value) */
	const char *sha1 = "ce013625030ba8dba906f756967f9e9ca394464a";
	kernels_lock_file files[2];
	const char *lfs[] = { "lib/x.so", NULL };
	FILE *p;
	char cmd[1024], real256[128] = "";
	(void)state;
	/* the real sha256 of "lfs\n", computed by Python */
	snprintf(cmd, sizeof(cmd), "%s -c \"import hashlib; print(hashlib.sha256(b'lfs\\n').hexdigest())\"",
		 KERNELS_PYTHON);
	p = popen(cmd, "r");
	assert_non_null(fgets(real256, sizeof(real256), p));
	pclose(p);
	real256[strcspn(real256, "\n")] = '\0';
	snprintf(var, sizeof(var), "%s/snapshots/c0ffee/build/torch-cpu", dir);
	snprintf(path, sizeof(path), "%s/blobs/%s", dir, sha1);
	assert_int_equal(test_write_file(path, "hello\n", 6), 0);
	snprintf(path, sizeof(path), "%s/blobs/%s", dir, real256);
	assert_int_equal(test_write_file(path, "lfs\n", 4), 0);
	assert_int_equal(test_system("mkdir -p '%s/lib' '%s/__pycache__' && ln -s ../../../../blobs/%s '%s/a.py' && "
				     "ln -s ../../../../../blobs/%s '%s/lib/x.so' && echo junk > '%s/__pycache__/a.pyc' && "
				     "echo stray > '%s/stray.txt'", var, var, sha1, var, real256, var, var, var), 0);
	assert_int_equal(kernels_lock_variant_hash_dir(out, var, NULL), 0);
	files[0] = (kernels_lock_file){ "a.py", sha1, 0 };
	files[1] = (kernels_lock_file){ "lib/x.so", real256, 1 };
	assert_int_equal(kernels_lock_variant_hash(out2, files, 2), 0);
	assert_string_equal(out, out2); /* stray plain files and byte-code are not part of it */
	/* the same folder as plain files, LFS named explicitly: the stray file now counts */
	assert_int_equal(kernels_lock_variant_hash_dir(out2, var, lfs), 0);
	assert_string_not_equal(out, out2);
	assert_int_equal(test_system("rm '%s/stray.txt'", var), 0);
	assert_int_equal(kernels_lock_variant_hash_dir(out2, var, lfs), 0);
	assert_string_equal(out, out2);
	/* tampering with a blob changes the hash */
	snprintf(path, sizeof(path), "%s/blobs/%s", dir, sha1);
	assert_int_equal(test_write_file(path, "hellO\n", 6), 0);
	assert_int_equal(kernels_lock_variant_hash_dir(out2, var, NULL), 0);
	assert_string_not_equal(out, out2);
	/* a link to a blob with a strange name, a dangling link, a missing folder */
	snprintf(target, sizeof(target), "%s/blobs/notahash", dir);
	assert_int_equal(test_write_file(target, "x", 1), 0);
	assert_int_equal(test_system("ln -s ../../../../blobs/notahash '%s/odd'", var), 0);
	assert_int_equal(kernels_lock_variant_hash_dir(out2, var, NULL), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "notahash"));
	assert_int_equal(test_system("rm '%s/odd' && ln -s ../../../../blobs/%s '%s/gone'", var, sha1 + 1, var), 0);
	assert_int_equal(kernels_lock_variant_hash_dir(out2, var, NULL), KERNELS_EIO);
	snprintf(path, sizeof(path), "%s/nope", dir);
	assert_int_equal(kernels_lock_variant_hash_dir(out2, path, NULL), KERNELS_ENOTFOUND);
	test_rmtree(dir);
	free(dir);
}

/* A seed-era entry from a Hub tree listing: only build/torch* files, one
 * hash per variant from LFS sha256 or blob sha1, listing order kept. */
static void test_tree_variants(void **state)
{
	kernels__tree_entry e[] = {
		{ "README.md", 0, "1111111111111111111111111111111111111111", 10, NULL },
		{ "build", 1, "", 0, NULL },
		{ "build/torch27-cxx11-cu126-x86_64-linux", 1, "", 0, NULL },
		{ "build/torch27-cxx11-cu126-x86_64-linux/_ops.py", 0, "2222222222222222222222222222222222222222", 5, NULL },
		{ "build/torch-universal/__init__.py", 0, "3333333333333333333333333333333333333333", 5, NULL },
		{ "build/torch27-cxx11-cu126-x86_64-linux/_x.abi3.so", 0, "4444444444444444444444444444444444444444", 9,
		  "5555555555555555555555555555555555555555555555555555555555555555" },
		{ "build/tvm-ffi01-cu126-x86_64-linux/lib.so", 0, "6666666666666666666666666666666666666666", 5, NULL },
		{ "build/torch27-cxx11-cu126-x86_64-linux/__pycache__/_ops.cpython-311.pyc", 0,
		  "7777777777777777777777777777777777777777", 5, NULL },
	};
	kernels__tree tree = { .entries = e, .n = sizeof(e) / sizeof(e[0]) };
	kernels_lock_file cu[] = { { "_ops.py", "2222222222222222222222222222222222222222", 0 },
				   { "_x.abi3.so", "5555555555555555555555555555555555555555555555555555555555555555", 1 } };
	kernels_lock_file uni[] = { { "__init__.py", "3333333333333333333333333333333333333333", 0 } };
	char h_cu[KERNELS_LOCK_HASH_SIZE], h_uni[KERNELS_LOCK_HASH_SIZE];
	const kernels_lock_entry *entry;
	kernels_lock *lock;
	(void)state;
	assert_int_equal(kernels_lock_variant_hash(h_cu, cu, 2), 0);
	assert_int_equal(kernels_lock_variant_hash(h_uni, uni, 1), 0);
	assert_int_equal(kernels_lock_new(&lock, KERNELS_LOCK_FORMAT_VARIANTS), 0);
	assert_int_equal(kernels__lock_add_tree_variants(lock, "org/k", &tree), KERNELS_EINVAL); /* no entry yet */
	assert_int_equal(kernels_lock_add_entry(lock, "org/k", C1), 0);
	assert_int_equal(kernels__lock_add_tree_variants(lock, "org/k", &tree), 0);
	entry = kernels_lock_find(lock, "org/k");
	assert_int_equal(entry->variant_count, 2);
	assert_string_equal(entry->variants[0].name, "torch27-cxx11-cu126-x86_64-linux");
	assert_string_equal(entry->variants[0].hash, h_cu);
	assert_string_equal(entry->variants[1].name, "torch-universal");
	assert_string_equal(entry->variants[1].hash, h_uni);
	kernels_lock_free(lock);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_dependency_format),
		cmocka_unit_test(test_build_variants_format),
		cmocka_unit_test(test_valid_files_roundtrip),
		cmocka_unit_test(test_invalid_files),
		cmocka_unit_test(test_load_errors),
		cmocka_unit_test(test_save_atomic),
		cmocka_unit_test(test_variant_hash),
		cmocka_unit_test(test_variant_hash_dir),
		cmocka_unit_test(test_tree_variants),
	};
	if (argc == 3 && strcmp(argv[1], "--build") == 0)
		return mode_build(argv[2]);
	if (argc == 3 && strcmp(argv[1], "--roundtrip") == 0)
		return mode_load(argv[2], 1);
	if (argc == 3 && strcmp(argv[1], "--check") == 0)
		return mode_load(argv[2], 0);
	if (argc == 4 && strcmp(argv[1], "--lock-project") == 0)
		return mode_lock_project(argv[2], argv[3]);
	if (argc == 3 && strcmp(argv[1], "--hash") == 0)
		return mode_hash(argv[2]);
	if (argc >= 3 && strcmp(argv[1], "--hash-dir") == 0)
		return mode_hash_dir(argc, argv);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
