/* The cache's refs/ files: names, atomic writes, reads, listing, and
 * refusal to follow symlinks out of the refs folder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels.h"
#include "cache.h"
#include "refs.h"
#include "hex.h"
#include "testutil.h"

#define C1 "0123456789abcdef0123456789abcdef01234567"
#define C2 "fedcba9876543210fedcba9876543210fedcba98"

static char *path_join(const char *a, const char *b)
{
	char *p;
	assert_true(asprintf(&p, "%s/%s", a, b) > 0);
	return p;
}

static void test_name_check(void **state)
{
	static const char *ok[] = { "main", "v1", "v1.1.2", "feature/x", "refs/pr/1", "a-b_c.d", "v2.1.0rc1",
				    "deadbeef", "x/y/z" };
	static const char *bad[] = { "", "../x", "a/../b", "..", "a//b", "/a", "a/", ".hidden", "a/.b", "x.lock",
				     "a/b.lock", "a b", "a\nb", "a\tb", "a~1", "a^b", "a:b", "a?b", "a*b", "a[b",
				     "a\\b", "a@{1}", "caf\xc3\xa9", "\x7f" };
	char longname[300];
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		assert_int_equal(kernels__ref_name_check(ok[i]), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(kernels__ref_name_check(bad[i]), KERNELS_EINVAL);
		assert_non_null(strstr(kernels_error_last(), "ref name"));
	}
	assert_int_equal(kernels__ref_name_check(NULL), KERNELS_EINVAL);
	memset(longname, 'a', sizeof(longname));
	longname[KERNELS__REF_NAME_MAX] = '\0';
	assert_int_equal(kernels__ref_name_check(longname), 0);
	longname[KERNELS__REF_NAME_MAX] = 'a';
	longname[KERNELS__REF_NAME_MAX + 1] = '\0';
	assert_int_equal(kernels__ref_name_check(longname), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "longer than"));
}

static void test_full_commit(void **state)
{
	(void)state;
	assert_true(kernels__is_commit(C1, KERNELS__HEX_ANY_CASE));
	assert_true(kernels__is_commit("0123456789ABCDEF0123456789ABCDEF01234567", KERNELS__HEX_ANY_CASE));
	assert_false(kernels__is_commit("0123456789abcdef0123456789abcdef0123456", KERNELS__HEX_ANY_CASE));
	assert_false(kernels__is_commit(C1 "0", KERNELS__HEX_ANY_CASE));
	assert_false(kernels__is_commit("g123456789abcdef0123456789abcdef01234567", KERNELS__HEX_ANY_CASE));
	assert_false(kernels__is_commit(NULL, KERNELS__HEX_ANY_CASE));
}

static void test_repo_dir(void **state)
{
	kernels__config cfg = { .cache_dir = "/c" };
	char *a = kernels__cache_repo_dir(&cfg, KERNELS__REPO_KERNEL, "org/name");
	char *b = kernels__cache_repo_dir(&cfg, KERNELS__REPO_MODEL, "org/name");
	(void)state;
	assert_string_equal(a, "/c/kernels--org--name");
	assert_string_equal(b, "/c/models--org--name");
	free(a);
	free(b);
}

static void test_write_read(void **state)
{
	char *dir = test_mkdtemp("refs"), *repo = path_join(dir, "kernels--org--k"), *file, *text, commit[41];
	size_t len;
	(void)state;

	assert_int_equal(kernels__refs_read(repo, "main", commit), KERNELS_ENOTFOUND);
	assert_int_equal(kernels__refs_write(repo, "main", C1), 0);
	assert_int_equal(kernels__refs_read(repo, "main", commit), 0);
	assert_string_equal(commit, C1);

	/* huggingface_hub's format: the bare id, no newline. */
	file = path_join(repo, "refs/main");
	text = test_read_file(file, &len);
	assert_int_equal(len, 40);
	assert_memory_equal(text, C1, 40);
	free(text);
	free(file);

	/* Overwrite; upper case is stored lower case; nested names nest. */
	assert_int_equal(kernels__refs_write(repo, "main", "FEDCBA9876543210FEDCBA9876543210FEDCBA98"), 0);
	assert_int_equal(kernels__refs_read(repo, "main", commit), 0);
	assert_string_equal(commit, C2);
	assert_int_equal(kernels__refs_write(repo, "refs/pr/1", C1), 0);
	file = path_join(repo, "refs/refs/pr/1");
	assert_true(test_exists(file));
	free(file);
	assert_int_equal(kernels__refs_read(repo, "refs/pr/1", commit), 0);
	assert_string_equal(commit, C1);
	assert_int_equal(kernels__refs_read(repo, "refs/pr/2", commit), KERNELS_ENOTFOUND);
	assert_int_equal(kernels__refs_read(repo, "nothere/x", commit), KERNELS_ENOTFOUND);

	/* A file written by hand (or another tool) with a newline still reads. */
	file = path_join(repo, "refs/v1");
	assert_int_equal(test_write_file(file, C1 "\n", 41), 0);
	assert_int_equal(kernels__refs_read(repo, "v1", commit), 0);
	assert_string_equal(commit, C1);
	assert_int_equal(test_write_file(file, "not a commit", 12), 0);
	assert_int_equal(kernels__refs_read(repo, "v1", commit), KERNELS_EPARSE);
	assert_non_null(strstr(kernels_error_last(), "40-hex"));
	free(file);

	/* Bad input is refused before touching the disk. */
	assert_int_equal(kernels__refs_write(repo, "../escape", C1), KERNELS_EINVAL);
	assert_int_equal(kernels__refs_write(repo, "ok", "abc"), KERNELS_EINVAL);
	assert_int_equal(kernels__refs_write(repo, "ok", NULL), KERNELS_EINVAL);
	assert_int_equal(kernels__refs_read(repo, "a/../main", commit), KERNELS_EINVAL);
	file = path_join(dir, "escape");
	assert_false(test_exists(file));
	free(file);
	file = path_join(repo, "refs/ok");
	assert_false(test_exists(file));
	free(file);

	test_rmtree(dir);
	free(repo);
	free(dir);
}

static int count_dotfiles(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void test_symlinks_refused(void **state)
{
	char *dir = test_mkdtemp("refs"), *repo = path_join(dir, "kernels--org--k"), *outside = path_join(dir, "outside"),
	     *p, *q, commit[41];
	(void)state;

	assert_int_equal(test_system("mkdir -p '%s/refs' '%s'", repo, outside), 0);
	/* A folder below refs/ that is a symlink out of it. */
	p = path_join(repo, "refs/evil");
	assert_int_equal(symlink(outside, p), 0);
	assert_int_equal(kernels__refs_write(repo, "evil/x", C1), KERNELS_EUNSAFE);
	assert_non_null(strstr(kernels_error_last(), "symlink"));
	q = path_join(outside, "x");
	assert_false(test_exists(q));
	assert_int_equal(test_write_file(q, C1, 40), 0);
	assert_int_equal(kernels__refs_read(repo, "evil/x", commit), KERNELS_EUNSAFE);
	free(p);
	free(q);

	/* A leaf symlink: never read through, and a write replaces the link
	 * itself, leaving its target alone. */
	p = path_join(repo, "refs/link");
	q = path_join(outside, "target");
	assert_int_equal(test_write_file(q, C2, 40), 0);
	assert_int_equal(symlink(q, p), 0);
	assert_int_not_equal(kernels__refs_read(repo, "link", commit), 0);
	assert_int_equal(kernels__refs_write(repo, "link", C1), 0);
	assert_int_equal(kernels__refs_read(repo, "link", commit), 0);
	assert_string_equal(commit, C1);
	{
		char *t = test_read_file(q, NULL);
		assert_memory_equal(t, C2, 40);
		free(t);
	}
	free(p);
	free(q);

	/* A folder, or a FIFO, where a ref file should be: in the way, said so,
	 * for a read and for a write (not a matter of permissions). */
	assert_int_equal(test_system("mkdir -p '%s/refs/dir/x' && mkfifo '%s/refs/fifo'", repo, repo), 0);
	assert_int_equal(kernels__refs_read(repo, "dir", commit), KERNELS_EUNSAFE);
	assert_non_null(strstr(kernels_error_last(), "is in the way"));
	assert_int_equal(kernels__refs_write(repo, "dir", C1), KERNELS_EUNSAFE);
	assert_non_null(strstr(kernels_error_last(), "is in the way"));
	assert_int_equal(kernels__refs_read(repo, "fifo", commit), KERNELS_EUNSAFE);
	assert_non_null(strstr(kernels_error_last(), "remove it from the cache"));

	/* refs/ itself a symlink. */
	free(repo);
	repo = path_join(dir, "kernels--org--other");
	assert_int_equal(test_system("mkdir -p '%s'", repo), 0);
	p = path_join(repo, "refs");
	assert_int_equal(symlink(outside, p), 0);
	assert_int_equal(kernels__refs_write(repo, "main", C1), KERNELS_EUNSAFE);
	q = path_join(outside, "main");
	assert_false(test_exists(q));
	free(p);
	free(q);

	test_rmtree(dir);
	free(outside);
	free(repo);
	free(dir);
}

static void test_list(void **state)
{
	char *dir = test_mkdtemp("refs"), *repo = path_join(dir, "models--org--m"), *p;
	kernels__ref *refs;
	size_t n;
	(void)state;

	assert_int_equal(kernels__refs_list(repo, &refs, &n), 0);
	assert_int_equal(n, 0);
	assert_null(refs);

	assert_int_equal(kernels__refs_write(repo, "v1.1.2", C1), 0);
	assert_int_equal(kernels__refs_write(repo, "main", C2), 0);
	assert_int_equal(kernels__refs_write(repo, "feature/deep/x", C1), 0);
	/* Junk the listing must skip: a temp file, bad content, a symlink. */
	p = path_join(repo, "refs/.main.123.0.tmp");
	assert_int_equal(test_write_file(p, C1, 40), 0);
	free(p);
	p = path_join(repo, "refs/garbage");
	assert_int_equal(test_write_file(p, "xyz", 3), 0);
	free(p);
	p = path_join(repo, "refs/linked");
	assert_int_equal(symlink("main", p), 0);
	free(p);

	kernels_error_clear();
	assert_int_equal(kernels__refs_list(repo, &refs, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(refs[0].name, "feature/deep/x");
	assert_string_equal(refs[0].commit, C1);
	assert_string_equal(refs[1].name, "main");
	assert_string_equal(refs[1].commit, C2);
	assert_string_equal(refs[2].name, "v1.1.2");
	kernels__refs_free(refs, n);
	assert_string_equal(kernels_error_last(), "no error");

	test_rmtree(dir);
	free(repo);
	free(dir);
}

typedef struct {
	const char *repo;
	int writer;
	int bad;
} race_arg;

static void *race(void *p)
{
	race_arg *a = p;
	char commit[41];
	int i;

	for (i = 0; i < 300; i++) {
		if (a->writer) {
			if (kernels__refs_write(a->repo, "nested/main", (i + a->writer) % 2 ? C1 : C2) != 0)
				a->bad++;
		} else if (kernels__refs_read(a->repo, "nested/main", commit) != 0 ||
			   (strcmp(commit, C1) && strcmp(commit, C2))) {
			a->bad++;
		}
	}
	return NULL;
}

/* Readers racing writers only ever see a whole commit id. */
static void test_atomic(void **state)
{
	char *dir = test_mkdtemp("refs"), *repo = path_join(dir, "kernels--org--k"), *p;
	race_arg args[6];
	pthread_t t[6];
	int i;
	(void)state;

	assert_int_equal(kernels__refs_write(repo, "nested/main", C1), 0);
	for (i = 0; i < 6; i++) {
		args[i].repo = repo;
		args[i].writer = i < 3 ? i + 1 : 0;
		args[i].bad = 0;
		assert_int_equal(pthread_create(&t[i], NULL, race, &args[i]), 0);
	}
	for (i = 0; i < 6; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(args[i].bad, 0);
	}
	p = path_join(repo, "refs/nested");
	assert_int_equal(count_dotfiles(p), 0);   /* no temp file left behind */
	free(p);
	test_rmtree(dir);
	free(repo);
	free(dir);
}

/* A cache that cannot be written (here: a file where a folder should be,
 * which stops root too) is an I/O error naming the path. */
static void test_unwritable(void **state)
{
	char *dir = test_mkdtemp("refs"), *file = path_join(dir, "file"), *repo = path_join(file, "kernels--org--k");
	(void)state;

	assert_int_equal(test_write_file(file, "x", 1), 0);
	assert_int_equal(kernels__refs_write(repo, "main", C1), KERNELS_EIO);
	assert_non_null(strstr(kernels_error_last(), repo));
	test_rmtree(dir);
	free(repo);
	free(file);
	free(dir);
}

/* refs/ files are written without a flush (as huggingface_hub writes
 * them), so a crash can leave one empty or cut short. Offline such a ref
 * is named as the damaged file it is, with what to do, never as a name the
 * cache lacks, and resolves to nothing; rewriting it (what an online
 * resolve does) mends it. */
static void test_damaged_ref_offline(void **state)
{
	static const struct {
		const char *text;
		const char *said;
	} damage[] = {
		{ "", "is empty" },
		{ "garbage", "holds 7 bytes" },
		{ "0123456", "holds 7 bytes" },
		{ "0123456789abcdef0123456789abcdef0123456", "holds 39 bytes" },
	};
	char *dir = test_mkdtemp("refs"), *repo = path_join(dir, "kernels--acme--k"), *file = path_join(repo, "refs/main");
	kernels_options o = KERNELS_OPTIONS_INIT;
	kernels_revision *r = NULL;
	size_t i;
	(void)state;

	o.cache_dir = dir;
	o.offline = 1;
	assert_int_equal(kernels__refs_write(repo, "v1.0.0", C2), 0);
	for (i = 0; i < sizeof(damage) / sizeof(damage[0]); i++) {
		assert_int_equal(test_write_file(file, damage[i].text, strlen(damage[i].text)), 0);
		assert_int_equal(kernels_revision_resolve(&r, "acme/k", "main", &o), KERNELS_EOFFLINE);
		assert_null(r);
		assert_non_null(strstr(kernels_error_last(), file));
		assert_non_null(strstr(kernels_error_last(), damage[i].said));
		assert_non_null(strstr(kernels_error_last(), "online"));
		assert_null(strstr(kernels_error_last(), "not found"));
	}
	/* The listing leaves it out; the damaged listing has it alone. */
	{
		kernels__ref *refs = NULL;
		size_t n = 0;

		assert_int_equal(kernels__refs_list_damaged(repo, &refs, &n), 0);
		assert_int_equal(n, 1);
		assert_string_equal(refs[0].name, "main");
		assert_string_equal(refs[0].commit, "");
		kernels__refs_free(refs, n);
		assert_int_equal(kernels__refs_list(repo, &refs, &n), 0);
		assert_int_equal(n, 1);
		assert_string_equal(refs[0].name, "v1.0.0");
		kernels__refs_free(refs, n);
	}
	/* A name the cache never saw still says so. */
	assert_int_equal(kernels_revision_resolve(&r, "acme/k", "dev", &o), KERNELS_EOFFLINE);
	assert_non_null(strstr(kernels_error_last(), "not found"));
	/* Rewritten, as an online resolve does, it answers again. */
	assert_int_equal(kernels__refs_write(repo, "main", C1), 0);
	assert_int_equal(kernels_revision_resolve(&r, "acme/k", "main", &o), 0);
	assert_string_equal(kernels_revision_commit(r), C1);
	kernels_revision_free(r);
	{
		kernels__ref *refs = NULL;
		size_t n = 1;

		assert_int_equal(kernels__refs_list_damaged(repo, &refs, &n), 0);
		assert_int_equal(n, 0);
		kernels__refs_free(refs, n);
	}
	test_rmtree(dir);
	free(file);
	free(repo);
	free(dir);
}

/* A version asked for offline is matched against the tags the cache
 * recorded: one whose file a crash left empty is out of the match, so
 * the answer may be an older version than the cache last saw. It still
 * answers (the older version is cached and matches), with a warning that
 * names the file; with the file mended the newest answers again. */
static void test_damaged_tag_warns_a_version_match(void **state)
{
	static const char *asked[] = { ">=1", "~=1.0" };
	char *dir = test_mkdtemp("refs"), *repo = path_join(dir, "kernels--acme--k"), *file = path_join(repo, "refs/v1.1.0");
	char *branch = path_join(repo, "refs/v1");
	kernels_options o = KERNELS_OPTIONS_INIT;
	kernels_revision *r = NULL;
	size_t i;
	(void)state;

	o.cache_dir = dir;
	o.offline = 1;
	o.log_cb = test_log_warnings;
	test_logged_clear();
	assert_int_equal(kernels__refs_write(repo, "v1.0.0", C1), 0);
	assert_int_equal(test_write_file(file, "", 0), 0);
	for (i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
		test_logged_clear();
		if (kernels_revision_resolve(&r, "acme/k", asked[i], &o) < 0)
			fail_msg("offline '%s': %s", asked[i], kernels_error_last());
		assert_string_equal(kernels_revision_commit(r), C1);
		kernels_revision_free(r);
		if (!strstr(test_logged, file) || !strstr(test_logged, asked[i]))
			fail_msg("offline '%s': no warning naming %s: '%s'", asked[i], file, test_logged);
	}
	/* A bare major version is its branch vN: that file damaged is named. */
	assert_int_equal(test_write_file(branch, "", 0), 0);
	assert_int_equal(kernels_revision_resolve(&r, "acme/k", "1", &o), KERNELS_EOFFLINE);
	if (!strstr(kernels_error_last(), branch) || !strstr(kernels_error_last(), "is empty"))
		fail_msg("offline '1': no word of %s: %s", branch, kernels_error_last());
	assert_int_equal(kernels__refs_write(repo, "v1.1.0", C2), 0);
	test_logged_clear();
	assert_int_equal(kernels_revision_resolve(&r, "acme/k", ">=1", &o), 0);
	assert_string_equal(kernels_revision_commit(r), C2);
	assert_string_equal(test_logged, "");
	kernels_revision_free(r);
	test_rmtree(dir);
	free(branch);
	free(file);
	free(repo);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name_check),
		cmocka_unit_test(test_full_commit),
		cmocka_unit_test(test_repo_dir),
		cmocka_unit_test(test_write_read),
		cmocka_unit_test(test_symlinks_refused),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_atomic),
		cmocka_unit_test(test_unwritable),
		cmocka_unit_test(test_damaged_ref_offline),
		cmocka_unit_test(test_damaged_tag_warns_a_version_match),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
