/* Git URLs of metadata.json normalised as Python kernels 0.17.2 does
 * (lib/giturl.c); the whole corpus against 0.17.2 itself:
 * tests/python/test_metadata_parity.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "giturl.h"

static void same(const char *in, const char *want)
{
	const char *why = NULL;
	char *out = NULL;

	if (kernels__git_url_normalize(in, &out, &why) != 0)
		fail_msg("'%s' refused: %s", in, why);
	if (strcmp(out, want))
		fail_msg("'%s' -> '%s', expected '%s'", in, out, want);
	free(out);
}

static void refused(const char *in)
{
	const char *why = NULL;
	char *out = NULL;

	assert_int_equal(kernels__git_url_normalize(in, &out, &why), -1);
	assert_null(out);
	assert_non_null(why);
}

static void test_normalised(void **state)
{
	(void)state;
	same("https://github.com/org/repo", "https://github.com/org/repo");
	same("HTTPS://GitHub.COM", "https://github.com/");
	same("https://github.com:443/a/../b", "https://github.com/b");
	same("http://X.org:0080/", "http://x.org/");
	same("git@github.com:org/repo.git", "ssh://git@github.com/org/repo.git");
	same("@h:x", "ssh://h/x");
	same("a b@h:x", "ssh://a%20b@h/x");
	same("SSH://Git@GitHub.com/Foo/./Bar/../Baz", "ssh://Git@GitHub.com/Foo/Baz");
	same("ssh://H:0022/a", "ssh://H:22/a");
	same("ssh://host", "ssh://host");
	same("git:foo", "git:foo");
	same("  https://x.org/a\tb?c d#e f\n", "https://x.org/ab?c%20d#e%20f");
	same("https://x.org/a/%2e%2E/b", "https://x.org/b");
	same("https://x.org/a/b/../../..", "https://x.org/");
	same("https://x.org\\a\\b", "https://x.org/a/b");
	same("https://x.org/\xc3\xa4\"<>`{}", "https://x.org/%C3%A4%22%3C%3E%60%7B%7D");
	same("https://ex%41mple.org/", "https://example.org/");
}

static void test_refused(void **state)
{
	(void)state;
	refused("");
	refused("host:path");        /* a scheme git does not speak */
	refused("file:///x");
	refused("github.com/org/repo");
	refused("git@github.com:/abs");
	refused("git@h:");
	refused("git@:x");
	refused("https://");
	refused("https://user@/x");
	refused("https://x.org:65536/");
	refused("https://x.org:x/");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normalised),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
